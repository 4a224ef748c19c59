use qdsl_macros::fused5d;

fused5d! {
    pub two_hops(Dw = WilsonHop) = Dw * M5inv * Dw;
}

fn main() {}
