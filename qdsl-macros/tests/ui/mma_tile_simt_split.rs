use qdsl_macros::mma_tile;

mma_tile! {
    /// ⟨a_i, b_j⟩ on the CUDA cores: f32 operands are not split.
    pub t {
        problem: complex_inner,
        mma: simt(f32 -> f32),
        split: 3,
        m: [16],
        n: [16],
        input: [f32],
        tile_k: [32],
        warps: [2],
        stages: [2],
    }
}

fn main() {}
