use qdsl_macros::mma_tile;

mma_tile! {
    /// c = A Bᵀ.
    pub t {
        problem: inner,
        mma: m8n8k4(f64 -> f64),
        split: 3,
        m: [16],
        n: [16],
        input: [f64],
        tile_k: [32],
        warps: [2],
        stages: [2],
    }
}

fn main() {}
