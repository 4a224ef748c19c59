use qdsl_macros::fused5d;

fused5d! {
    pub mode_unknown(m5inv = [sweep, mma_tf32]) = M5inv;
}

fn main() {}
