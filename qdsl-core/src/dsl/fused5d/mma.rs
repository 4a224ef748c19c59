//! How a chain applies M5⁻¹ to the hop's result ([`M5invMode`], a knob of the variant),
//! and the tensor-core application on the host: the CPU path of
//! [`crate::dsl::kernel_ir::ChiralMma`], rounding what the tensor core rounds.
//!
//! For real b5, c5 (and real m_f) the matrices A± of M5⁻¹ are real, and per chirality
//! χ the block's data is a real Ls × N matrix B_χ: column n is one real component (the
//! real or imaginary part of one of the chirality's 6 complex components) of one 4D
//! site, over s. Then
//!
//! Y_χ = A_χ B_χ
//!
//! is a real matrix product, run as HMMA m16n8k16 (Ls padded to 16 with zeros; Ls ≤
//! [`MMA_MAX_LS`]) with the scaling of Tu, Clark, Jung and Mawhinney (§3.1.4): the
//! maximum |value| is found first, the values are scaled by a power of two into the
//! 16-bit format's range, rounded, multiplied with f32 accumulation, and the result
//! scaled back. Here every column of B has its own scale (the finest "tile": column
//! scaling commutes with the product from the left, A (B D) D⁻¹ = A B for diagonal D,
//! so it is exact in exact arithmetic) and each chirality's A its own:
//!
//! s_A = [`block_scale`](crate::dsl::mma::cpu::block_scale)(max |A_χ|),
//! s_n = block_scale(max_s |B_χ(s, n)|),
//! Y(s, n) = fl32(Σ_s' rn(s_A A(s, s')) rn(s_n B(s', n))) / (s_A s_n),
//!
//! rn the rounding to f16 or bf16 (nearest even). The scales depend on a column's own
//! values only, so the result does not depend on the launch's block shape, and the
//! host computes the same roundings (only the order of the f32 sums differs).

use super::ChiralMatrices;
use crate::dsl::mma::cpu::{block_scale, round};
use crate::dsl::mma::Operand;
use crate::dsl::DslError;
use crate::field::ColourSpinorField;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// The largest Ls the tensor-core M5⁻¹ supports: one m16n8k16 tile in s (M = K = 16).
pub const MMA_MAX_LS: usize = 16;

/// How a chain applies M5⁻¹ (M5⁻†) to the hop's result: a knob of the variant
/// ([`super::FusedVariant::m5inv`]), listed by the spec's header
/// (`m5inv = [sweep, dense, mma_f16, mma_bf16]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum M5invMode {
    /// The O(Ls) cyclic bidiagonal solve of M5 in place
    /// ([`crate::dsl::kernel_ir::ChiralSolve`]).
    #[default]
    Sweep,
    /// The dense inverse's rows, O(Ls²) per site and component
    /// ([`crate::dsl::kernel_ir::ChiralRow`]).
    Dense,
    /// The dense inverse on the tensor cores, f16 operands ([`apply_chiral_mma`]).
    MmaF16,
    /// The same with bf16 operands.
    MmaBf16,
}

impl M5invMode {
    /// Every mode.
    pub const ALL: [M5invMode; 4] = [
        M5invMode::Sweep,
        M5invMode::Dense,
        M5invMode::MmaF16,
        M5invMode::MmaBf16,
    ];

    /// The modes of plain arithmetic (a chain's default).
    pub const SIMT: [M5invMode; 2] = [M5invMode::Sweep, M5invMode::Dense];

    /// The spec's word.
    pub fn name(self) -> &'static str {
        match self {
            M5invMode::Sweep => "sweep",
            M5invMode::Dense => "dense",
            M5invMode::MmaF16 => "mma_f16",
            M5invMode::MmaBf16 => "mma_bf16",
        }
    }

    /// Parses a spec word.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The tensor core's operand type, `None` for the SIMT modes.
    pub fn operand(self) -> Option<Operand> {
        match self {
            M5invMode::MmaF16 => Some(Operand::F16),
            M5invMode::MmaBf16 => Some(Operand::Bf16),
            M5invMode::Sweep | M5invMode::Dense => None,
        }
    }
}

/// Complex components per 4D site of a Wilson field, and per chirality.
const SITE: usize = 12;
const HALF: usize = 6;

/// The real matrices A₊, A₋ of `m` (row-major, f32) for the tensor cores: an error
/// naming the first entry with a nonzero imaginary part (zMöbius) or an Ls beyond
/// [`MMA_MAX_LS`].
pub fn real_matrices(kernel: &str, m: &ChiralMatrices) -> Result<[Vec<f32>; 2], DslError> {
    let unsupported = |reason: String| DslError::UnsupportedVariant {
        kernel: kernel.into(),
        knob: "m5inv",
        reason,
    };
    if m.ls > MMA_MAX_LS {
        return Err(unsupported(format!(
            "the tensor-core M5inv supports Ls up to {MMA_MAX_LS}, the matrices have Ls = {}",
            m.ls
        )));
    }
    let ls = m.ls;
    let mut out = [Vec::new(), Vec::new()];
    for (chi, a) in [&m.plus, &m.minus].into_iter().enumerate() {
        if let Some(k) = a.iter().position(|z| z.im != 0.0) {
            return Err(unsupported(format!(
                "the tensor-core M5inv multiplies real matrices, but A{}({}, {}) = {} is complex \
                 (zMöbius coefficients): use the sweep or the dense rows",
                if chi == 0 { "+" } else { "-" },
                k / ls,
                k % ls,
                a[k]
            )));
        }
        out[chi] = a.iter().map(|z| z.re as f32).collect();
    }
    Ok(out)
}

/// One chirality's matrix as the tensor core multiplies it: the entries scaled by
/// s_A = block_scale(max |A|) and rounded to `op`, and 1/s_A.
pub fn scaled_matrix(op: Operand, a: &[f32]) -> (Vec<f32>, f32) {
    let max = a.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let s = block_scale(max);
    (a.iter().map(|&x| round(op, x * s)).collect(), 1.0 / s)
}

/// y = A b for one column b (Ls reals) as the tensor core computes it (module docs):
/// `a` the chirality's scaled and rounded matrix, `unscale_a` = 1/s_A.
pub fn column_product(op: Operand, a: &[f32], unscale_a: f32, b: &[f32], y: &mut [f32]) {
    let ls = b.len();
    let max = b.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let s = block_scale(max);
    let unscale = 1.0 / s;
    let mut br = [0.0f32; MMA_MAX_LS];
    for (r, &x) in br.iter_mut().zip(b) {
        *r = round(op, x * s);
    }
    for (row, out) in y.iter_mut().enumerate() {
        let mut acc = 0.0f32;
        for (t, &bt) in br[..ls].iter().enumerate() {
            acc += a[row * ls + t] * bt;
        }
        *out = acc * (unscale_a * unscale);
    }
}

/// (O ψ)(x, s) = Σ_s' [A₊(s, s') P₊ + A₋(s, s') P₋] ψ(x, s') on the tensor cores, as
/// [`crate::dsl::kernel_ir::ChiralMma`] computes it (module docs): the values read in
/// f32, each real component's s-column scaled, rounded to `op`, multiplied with f32
/// accumulation and scaled back. Errors: Ls beyond [`MMA_MAX_LS`], complex matrices,
/// a field of another Ls or shape.
pub fn apply_chiral_mma<T: Real>(
    kernel: &str,
    op: Operand,
    m: &ChiralMatrices,
    psi: &ColourSpinorField<T>,
) -> Result<ColourSpinorField<T>, DslError> {
    let layout = *psi.layout();
    super::cpu::check_chiral_field(kernel, m.ls, &layout)?;
    let [plus, minus] = real_matrices(kernel, m)?;
    let scaled = [scaled_matrix(op, &plus), scaled_matrix(op, &minus)];
    let ls = m.ls;
    let sites = layout.sites_per_slice();
    let slice_len = sites * SITE;
    let input = psi.data();
    // One 4D site's results for every slice, then scattered into the slices.
    let per_site: Vec<Vec<Complex<T>>> = (0..sites)
        .into_par_iter()
        .map(|x| {
            let mut out = vec![Complex::new(T::zero(), T::zero()); ls * SITE];
            let (mut b, mut y) = ([0.0f32; MMA_MAX_LS], [0.0f32; MMA_MAX_LS]);
            for c in 0..SITE {
                let (a, unscale_a) = &scaled[c / HALF];
                for part in 0..2 {
                    for (s, bs) in b[..ls].iter_mut().enumerate() {
                        let z = input[s * slice_len + x * SITE + c];
                        *bs = (if part == 0 { z.re } else { z.im }).to_f64() as f32;
                    }
                    column_product(op, a, *unscale_a, &b[..ls], &mut y[..ls]);
                    for (s, &v) in y[..ls].iter().enumerate() {
                        let o = &mut out[s * SITE + c];
                        let v = T::from_f64(f64::from(v));
                        if part == 0 {
                            o.re = v;
                        } else {
                            o.im = v;
                        }
                    }
                }
            }
            out
        })
        .collect();
    let mut out = ColourSpinorField::zeros(layout);
    let data = out.data_mut();
    for (x, values) in per_site.iter().enumerate() {
        for s in 0..ls {
            let at = s * slice_len + x * SITE;
            data[at..at + SITE].copy_from_slice(&values[s * SITE..(s + 1) * SITE]);
        }
    }
    Ok(out)
}

/// The bound of one result of the tensor-core product, against the exact A b of the
/// f32 values: |y(s) − (A b)(s)| ≤ γ Σ_s' |A(s, s')| |b(s')| + η max|A| max|b|, with
/// γ = 2u + u² + 2 Ls u₃₂ (each operand rounded once to the format of unit roundoff u,
/// products exact, Ls f32 additions — twice the sequential bound, the tensor core's
/// adder being allowed to truncate) and η = 2 Ls 2⁻³⁹ (after scaling, the largest
/// |value| lies in [2¹⁴, 2¹⁵): the f16 subnormals' absolute rounding error 2⁻²⁵ is 2⁻³⁹ of
/// it; bf16 has binary32's range). Returns (γ, η).
pub fn error_bound(op: Operand, ls: usize) -> (f64, f64) {
    let u = op.unit_roundoff();
    let u32_ = 2f64.powi(-24);
    let ls = ls as f64;
    (2.0 * u + u * u + 2.0 * ls * u32_, 2.0 * ls * 2f64.powi(-39))
}
