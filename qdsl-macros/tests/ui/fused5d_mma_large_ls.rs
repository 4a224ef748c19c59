use qdsl_macros::fused5d;

fused5d! {
    pub mma_large_ls(Dw = WilsonHop, m5inv = [sweep, mma_f16]) = M5inv<24> * Dw;
}

fn main() {}
