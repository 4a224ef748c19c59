use qdsl_macros::fused5d;

fused5d! {
    pub mma_zmobius(Dw = WilsonHop, coeffs = complex, m5inv = [sweep, dense, mma_bf16]) = M5pre * M5inv * Dw;
}

fn main() {}
