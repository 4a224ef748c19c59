use qdsl_macros::fused5d;

fused5d! {
    pub ls_mismatch(Dw = WilsonHop) = M5inv<12> * Dw * Mphi<8>;
}

fn main() {}
