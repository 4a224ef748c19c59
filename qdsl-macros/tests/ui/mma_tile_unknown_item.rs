use qdsl_macros::mma_tile;

mma_tile! {
    /// c = A Bᵀ.
    pub t {
        problem: inner,
        mma: m16n8k16(bf16 -> f32),
        m: [16],
        n: [16],
        input: [f32],
        tiles_k: [32],
        warps: [2],
        stages: [2],
    }
}

fn main() {}
