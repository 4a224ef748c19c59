//! The multigrid set-up's tensor-core tiles (`mma_tile!`): the coarse links
//! Y_c = V†UV as batched complex inner products, one product per coarse site and link,
//! c_ij = Σ_x conj(V_i(x)) UV_j(x) summed over the block's face (x the face sites and
//! their N_f fine components), for 2N_c = 48 or 64 (N_c = 24 or 32 vectors per
//! chirality), in f64 DMMA (the exact mode) and 3×BF16 (16-bit fixed-point accuracy).
//! `qdsl_runtime::multigrid::coarsen::tiles` lays the operands out and checks the tiles
//! against the reference construction; `qdsl_runtime::multigrid::device` runs them on
//! the GPU (the coarse links, X and X⁻¹Y).

use qdsl_macros::mma_tile;

mma_tile! {
    /// The multigrid set-up's Y = V†UV as batched products in f64 DMMA: per coarse site
    /// and link, c_ij = Σ_x conj(V_i(x)) UV_j(x) over the block's face, 2N_c = 48 or 64.
    pub coarse_vuv_f64 {
        problem: batched_complex_inner,
        mma: m8n8k4(f64 -> f64),
        staging: cp_async,
        m: [48, 64],
        n: [48, 64],
        input: [f64],
        tile_k: [16, 32],
        warps: [4, 8, 12],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Y = V†UV as batched products in 3×BF16 (16-bit fixed-point accuracy), 2N_c = 48
    /// or 64.
    pub coarse_vuv_bf16x3 {
        problem: batched_complex_inner,
        mma: m16n8k16(bf16 -> f32),
        split: 3,
        staging: cp_async,
        fragments: ldmatrix,
        m: [48, 64],
        n: [48, 64],
        input: [f32],
        tile_k: [32, 64],
        warps: [4, 6, 8, 12],
        stages: [2, 3],
    }
}
