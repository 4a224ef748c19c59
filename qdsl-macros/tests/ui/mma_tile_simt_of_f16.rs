use qdsl_macros::mma_tile;

mma_tile! {
    /// c = A Bᵀ on the CUDA cores: SIMT multiplies f32 operands only.
    pub t {
        problem: inner,
        mma: simt(f16 -> f32),
        m: [16],
        n: [16],
        input: [f32],
        tile_k: [32],
        warps: [2],
        stages: [2],
    }
}

fn main() {}
