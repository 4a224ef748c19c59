use qdsl_macros::mma_tile;

mma_tile! {
    /// Block axpy on the CUDA cores: SIMT accumulates in f32.
    pub t {
        problem: complex_axpy,
        mma: simt(f32 -> f64),
        staging: direct,
        m: [16],
        n: [16],
        input: [f32],
        tile_k: [8],
        warps: [4],
        stages: [1],
    }
}

fn main() {}
