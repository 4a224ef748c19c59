use qdsl_macros::mma_tile;

mma_tile! {
    /// c = A Bᵀ: the tensor cores take no f32 operands (tf32 is the 19-bit one).
    pub t {
        problem: inner,
        mma: m16n8k8(f32 -> f32),
        m: [16],
        n: [16],
        input: [f32],
        tile_k: [32],
        warps: [2],
        stages: [2],
    }
}

fn main() {}
