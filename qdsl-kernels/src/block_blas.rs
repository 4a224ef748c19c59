//! Block BLAS on tensor cores and CUDA cores (`mma_tile!`): block inner products
//! c_ij = ⟨a_i, b_j⟩ = Σ_x conj(a_i(x)) b_j(x) of sets of m and n complex vectors (16, 32
//! or 64 each; e.g. the 12 · V components of a spinor field), for the solvers'
//! orthogonalisation, in five modes ([`BlockBlasMode`]):
//!
//! | mode | instruction | |ĉ − c| ≤ ε Σ|a b| (f32 input, tile_k 64, K ≫ 1) |
//! |---|---|---|
//! | f64 DMMA | m8n8k4 f64 → f64 | 2 u₃₂ (f32 input), γ_K u₆₄ (f64 input) |
//! | 3×TF32 | m16n8k8 tf32 → f32, three per product | ≈ 1.2e-5: f32's accumulation bound |
//! | f32 SIMT | `fmaf` f32 → f32 on the CUDA cores | ≈ 2.0e-6 at its tile_k 32: 2u₃₂ + γ₃₂ u₃₂ (below) |
//! | bf16 | m16n8k16 bf16 → f32 | ≈ 7.8e-3 (2u + u², u = 2⁻⁸) |
//! | 3×BF16 | m16n8k16 bf16 → f32, three per product | ≈ 5.8e-5: 16-bit fixed point's |
//!
//! (ε is [`qdsl_core::dsl::mma::cpu::error_bound`]; the tests check each against a plain
//! f64 product.) A complex inner product is four real ones: the kernels multiply the
//! rows of A by the rows of B and by their rotations (im, −re), formed in shared memory.
//!
//! f32 SIMT (`mma: simt(f32 -> f32)`, [`qdsl_core::dsl::mma::simt`]): each thread owns a
//! register tile (4 × 8, 8 × 4 or 4 × 4) of the m × 2n real product, reads its operands
//! as float4s from an f32 k-major copy of the staged k-tile and sums L = tile_k / groups
//! values of each k-tile in an `fmaf` chain from zero (groups: threads splitting a
//! k-tile when the output has fewer tiles than the block threads), then adds the chain to
//! f64 totals; the groups' and blocks' totals are added in f64. With â = a(1 + α),
//! b̂ = b(1 + β), |α|, |β| ≤ u₃₂ (each operand rounded to f32 once) and one rounding per
//! fma step (at most L factors (1 + δ) on any term of the chain):
//!
//! ```text
//! |ĉ − c| ≤ [ 2u₃₂ + u₃₂² + γ_L(u₃₂) (1 + 2u₃₂ + u₃₂²) + γ_{K+1}(u₆₄) ] Σ|a b|,
//! γ_L(u) = L u / (1 − L u),   L ≤ tile_k   (ε ≈ (tile_k + 2) u₃₂: 2.0e-6 at tile_k 32)
//! ```
//!
//! independent of K but for the f64 term, as the tensor-core modes' bounds are.
//!
//! Block axpy y_j += Σ_i x_i A_ij (`block_axpy_<mode>`, the `complex_axpy` problem) in
//! the same modes: per component, the row (Re x_0, Im x_0, …) times the real 2m × 2n
//! matrix of A, bounded by [`BlockBlasMode::axpy_error_bound`] (f32 SIMT: one `fmaf`
//! chain of K = 2m terms per output, ε = 2u₃₂ + u₃₂² + γ_{2m}(u₃₂)(1 + 2u₃₂ + u₃₂²) + …,
//! then the add to y in the vectors' precision).

use qdsl_core::dsl::mma::{Input, MmaSpec, MmaTile, MmaVariant};
use qdsl_core::dsl::{DslError, KernelProgram};
use qdsl_core::Complex;
use qdsl_macros::mma_tile;

mma_tile! {
    /// Block inner products c_ij = Σ_x conj(a_i(x)) b_j(x) in f64 (DMMA, m8n8k4).
    pub block_dot_f64 {
        problem: complex_inner,
        mma: m8n8k4(f64 -> f64),
        staging: cp_async,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f64, f32],
        tile_k: [16, 32],
        warps: [2, 4, 8],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Block inner products c_ij = Σ_x conj(a_i(x)) b_j(x) in 3×TF32 (m16n8k8): f32 accuracy.
    pub block_dot_tf32x3 {
        problem: complex_inner,
        mma: m16n8k8(tf32 -> f32),
        split: 3,
        staging: cp_async,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [32, 64],
        warps: [2, 4, 8],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Block inner products c_ij = Σ_x conj(a_i(x)) b_j(x) in f32 on the CUDA cores (SIMT
    /// `fmaf`, f32 accumulation per k-tile, f64 totals).
    pub block_dot_f32_simt {
        problem: complex_inner,
        mma: simt(f32 -> f32),
        staging: cp_async,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [16, 32],
        warps: [2, 4, 8],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Block inner products c_ij = Σ_x conj(a_i(x)) b_j(x) in bf16 (m16n8k16).
    pub block_dot_bf16 {
        problem: complex_inner,
        mma: m16n8k16(bf16 -> f32),
        staging: cp_async,
        fragments: ldmatrix,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [32, 64],
        warps: [2, 4, 8],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Block inner products c_ij = Σ_x conj(a_i(x)) b_j(x) in 3×BF16 (m16n8k16): 16-bit
    /// fixed-point accuracy.
    pub block_dot_bf16x3 {
        problem: complex_inner,
        mma: m16n8k16(bf16 -> f32),
        split: 3,
        staging: cp_async,
        fragments: ldmatrix,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [32, 64],
        warps: [2, 4, 8],
        stages: [2, 3],
    }
}

mma_tile! {
    /// Block axpy y_j += Σ_i x_i A_ij in f64 (DMMA, m8n8k4).
    pub block_axpy_f64 {
        problem: complex_axpy,
        mma: m8n8k4(f64 -> f64),
        staging: direct,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f64, f32],
        tile_k: [8],
        warps: [4, 8],
        stages: [1],
    }
}

mma_tile! {
    /// Block axpy y_j += Σ_i x_i A_ij in 3×TF32 (m16n8k8): f32 accuracy.
    pub block_axpy_tf32x3 {
        problem: complex_axpy,
        mma: m16n8k8(tf32 -> f32),
        split: 3,
        staging: direct,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [16],
        warps: [4, 8],
        stages: [1],
    }
}

mma_tile! {
    /// Block axpy y_j += Σ_i x_i A_ij in f32 on the CUDA cores (SIMT `fmaf`, f32
    /// accumulation over the 2m terms of a component).
    pub block_axpy_f32_simt {
        problem: complex_axpy,
        mma: simt(f32 -> f32),
        staging: direct,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [8, 16, 32],
        warps: [4, 8],
        stages: [1],
    }
}

mma_tile! {
    /// Block axpy y_j += Σ_i x_i A_ij in bf16 (m16n8k16).
    pub block_axpy_bf16 {
        problem: complex_axpy,
        mma: m16n8k16(bf16 -> f32),
        staging: direct,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [16],
        warps: [4, 8],
        stages: [1],
    }
}

mma_tile! {
    /// Block axpy y_j += Σ_i x_i A_ij in 3×BF16 (m16n8k16): 16-bit fixed-point accuracy.
    pub block_axpy_bf16x3 {
        problem: complex_axpy,
        mma: m16n8k16(bf16 -> f32),
        split: 3,
        staging: direct,
        m: [16, 32, 64],
        n: [16, 32, 64],
        input: [f32, f64],
        tile_k: [16],
        warps: [4, 8],
        stages: [1],
    }
}

/// A block-BLAS precision mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockBlasMode {
    /// f64 DMMA.
    F64,
    /// 3×TF32.
    Tf32x3,
    /// f32 SIMT: `fmaf` on the CUDA cores, f32 operands and accumulation.
    F32Simt,
    /// bf16.
    Bf16,
    /// 3×BF16.
    Bf16x3,
}

impl BlockBlasMode {
    /// Every mode.
    pub const ALL: [BlockBlasMode; 5] = [
        BlockBlasMode::F64,
        BlockBlasMode::Tf32x3,
        BlockBlasMode::F32Simt,
        BlockBlasMode::Bf16,
        BlockBlasMode::Bf16x3,
    ];

    /// The mode's name (`f64`, `tf32x3`, `f32_simt`, `bf16`, `bf16x3`).
    pub fn name(self) -> &'static str {
        match self {
            BlockBlasMode::F64 => "f64",
            BlockBlasMode::Tf32x3 => "tf32x3",
            BlockBlasMode::F32Simt => "f32_simt",
            BlockBlasMode::Bf16 => "bf16",
            BlockBlasMode::Bf16x3 => "bf16x3",
        }
    }

    /// The catalog spec's name (`block_dot_f64`, …).
    pub fn kernel_name(self) -> &'static str {
        match self {
            BlockBlasMode::F64 => "block_dot_f64",
            BlockBlasMode::Tf32x3 => "block_dot_tf32x3",
            BlockBlasMode::F32Simt => "block_dot_f32_simt",
            BlockBlasMode::Bf16 => "block_dot_bf16",
            BlockBlasMode::Bf16x3 => "block_dot_bf16x3",
        }
    }

    /// The mode of a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode's spec.
    pub fn spec(self) -> MmaSpec {
        match self {
            BlockBlasMode::F64 => BlockDotF64::spec(),
            BlockBlasMode::Tf32x3 => BlockDotTf32x3::spec(),
            BlockBlasMode::F32Simt => BlockDotF32Simt::spec(),
            BlockBlasMode::Bf16 => BlockDotBf16::spec(),
            BlockBlasMode::Bf16x3 => BlockDotBf16x3::spec(),
        }
    }

    /// The untuned variant for m × n vectors of `input`: the deepest tile the spec lists
    /// (the largest tile_k), 2-stage pipelines, and the most warps (of 8, 4, 2) that the
    /// instruction tiles divide among.
    pub fn default_variant(self, m: usize, n: usize, input: Input) -> Result<MmaVariant, DslError> {
        let spec = self.spec();
        let tile_k = spec.tile_k.iter().copied().max().unwrap_or(32);
        let mut last = None;
        for warps in [8, 4, 2] {
            let v = MmaVariant {
                m,
                n,
                input,
                tile_k,
                warps,
                stages: 2,
            };
            match qdsl_core::dsl::mma::plan(&spec, &v) {
                Ok(_) => return Ok(v),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("three tries"))
    }

    /// The program of a variant.
    pub fn program(self, v: &MmaVariant) -> Result<KernelProgram, DslError> {
        qdsl_core::dsl::mma::plan(&self.spec(), v).map(|p| qdsl_core::dsl::mma::cuda::program(&p))
    }

    /// The relative error bound ε (|ĉ_ij − c_ij| ≤ ε Σ_x |a_i(x)| |b_j(x)| · √2) of a
    /// variant over vectors of `len` complex components.
    pub fn error_bound(self, v: &MmaVariant, len: usize) -> f64 {
        qdsl_core::dsl::mma::cpu::error_bound(&self.spec(), v.input, v.tile_k, 2 * len)
    }
}

impl BlockBlasMode {
    /// The catalog name of the mode's block axpy (`block_axpy_f64`, …).
    pub fn axpy_kernel_name(self) -> &'static str {
        match self {
            BlockBlasMode::F64 => "block_axpy_f64",
            BlockBlasMode::Tf32x3 => "block_axpy_tf32x3",
            BlockBlasMode::F32Simt => "block_axpy_f32_simt",
            BlockBlasMode::Bf16 => "block_axpy_bf16",
            BlockBlasMode::Bf16x3 => "block_axpy_bf16x3",
        }
    }

    /// The mode's block-axpy spec.
    pub fn axpy_spec(self) -> MmaSpec {
        match self {
            BlockBlasMode::F64 => BlockAxpyF64::spec(),
            BlockBlasMode::Tf32x3 => BlockAxpyTf32x3::spec(),
            BlockBlasMode::F32Simt => BlockAxpyF32Simt::spec(),
            BlockBlasMode::Bf16 => BlockAxpyBf16::spec(),
            BlockBlasMode::Bf16x3 => BlockAxpyBf16x3::spec(),
        }
    }

    /// The untuned block-axpy variant for m vectors x, n vectors y of `input`: the
    /// largest tile_k of the spec's that plans (the tensor-core modes list one; f32 SIMT
    /// the most components whose thread tiles stay within 32 accumulators), 8 warps, one
    /// stage.
    pub fn default_axpy_variant(
        self,
        m: usize,
        n: usize,
        input: Input,
    ) -> Result<MmaVariant, DslError> {
        let spec = self.axpy_spec();
        let mut tile_ks = spec.tile_k.clone();
        tile_ks.sort_unstable_by(|a, b| b.cmp(a));
        let mut last = None;
        for tile_k in tile_ks {
            let v = MmaVariant {
                m,
                n,
                input,
                tile_k,
                warps: 8,
                stages: 1,
            };
            match qdsl_core::dsl::mma::plan(&spec, &v) {
                Ok(_) => return Ok(v),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("a spec lists at least one tile_k"))
    }

    /// The block-axpy program of a variant.
    pub fn axpy_program(self, v: &MmaVariant) -> Result<KernelProgram, DslError> {
        qdsl_core::dsl::mma::plan(&self.axpy_spec(), v)
            .map(|p| qdsl_core::dsl::mma::axpy::program(&p))
    }

    /// (ε, u) of a block axpy of m vectors x in `input`
    /// ([`qdsl_core::dsl::mma::axpy::error_bound_axpy`]).
    pub fn axpy_error_bound(self, input: Input, m: usize) -> (f64, f64) {
        qdsl_core::dsl::mma::axpy::error_bound_axpy(&self.axpy_spec(), input, m)
    }
}

/// y_j += Σ_i x_i A_ij on the CPU as the variant's kernel computes it (rounding
/// emulated): `x` the v.m vectors one after another, `y` the v.n vectors, each `len`
/// complex values; `a` v.m × v.n row-major.
pub fn block_axpy_cpu(
    mode: BlockBlasMode,
    v: &MmaVariant,
    x: &[Complex<f64>],
    a: &[Complex<f64>],
    y: &mut [Complex<f64>],
    len: usize,
) -> Result<(), DslError> {
    let reals = |x: &[Complex<f64>]| -> Vec<f64> { x.iter().flat_map(|z| [z.re, z.im]).collect() };
    let (rx, ra, mut ry) = (reals(x), reals(a), reals(y));
    match mode {
        BlockBlasMode::F64 => BlockAxpyF64::axpy_cpu(v, &rx, &ra, &mut ry, len),
        BlockBlasMode::Tf32x3 => BlockAxpyTf32x3::axpy_cpu(v, &rx, &ra, &mut ry, len),
        BlockBlasMode::F32Simt => BlockAxpyF32Simt::axpy_cpu(v, &rx, &ra, &mut ry, len),
        BlockBlasMode::Bf16 => BlockAxpyBf16::axpy_cpu(v, &rx, &ra, &mut ry, len),
        BlockBlasMode::Bf16x3 => BlockAxpyBf16x3::axpy_cpu(v, &rx, &ra, &mut ry, len),
    }?;
    for (z, re_im) in y.iter_mut().zip(ry.chunks(2)) {
        *z = Complex::new(re_im[0], re_im[1]);
    }
    Ok(())
}

/// c_ij = ⟨a_i, b_j⟩ on the CPU as the variant's kernel computes it (rounding emulated):
/// `a` holds the v.m vectors one after another, `b` the v.n vectors, each `len` complex
/// values; c is v.m × v.n row-major. An error for lengths that do not match, or a `len`
/// the kernel's k-tiles do not divide (2 len a multiple of tile_k).
pub fn block_inner_cpu(
    mode: BlockBlasMode,
    v: &MmaVariant,
    a: &[Complex<f64>],
    b: &[Complex<f64>],
    len: usize,
) -> Result<Vec<Complex<f64>>, DslError> {
    let reals = |x: &[Complex<f64>]| -> Vec<f64> { x.iter().flat_map(|z| [z.re, z.im]).collect() };
    let (ra, rb) = (reals(a), reals(b));
    let c = match mode {
        BlockBlasMode::F64 => BlockDotF64::inner_cpu(v, &ra, &rb, 2 * len),
        BlockBlasMode::Tf32x3 => BlockDotTf32x3::inner_cpu(v, &ra, &rb, 2 * len),
        BlockBlasMode::F32Simt => BlockDotF32Simt::inner_cpu(v, &ra, &rb, 2 * len),
        BlockBlasMode::Bf16 => BlockDotBf16::inner_cpu(v, &ra, &rb, 2 * len),
        BlockBlasMode::Bf16x3 => BlockDotBf16x3::inner_cpu(v, &ra, &rb, 2 * len),
    }?;
    Ok(c.chunks(2).map(|z| Complex::new(z[0], z[1])).collect())
}

/// `count` deterministic pseudo-random complex vectors of `len` components each
/// (xorshift from `seed`), components in (−1, 1): the operands of the block-BLAS tests
/// and `qdsl check` rows.
pub fn random_vectors(count: usize, len: usize, seed: u64) -> Vec<Complex<f64>> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        2.0 * ((x >> 11) as f64 / (1u64 << 53) as f64) - 1.0
    };
    (0..count * len)
        .map(|_| Complex::new(next(), next()))
        .collect()
}
