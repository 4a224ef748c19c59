use qdsl_macros::fused5d;

fused5d! {
    pub unknown_piece(Dw = WilsonHop) = M5inv * Dw * M6;
}

fn main() {}
