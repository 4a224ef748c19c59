//! `mma_tile!`: matrix-multiply-accumulate computations on tensor cores, written once
//! as a spec, generating the CUDA kernel (inline PTX `mma.sync`) and the CPU path that
//! emulates what the tensor core rounds.
//!
//! A spec ([`MmaSpec`]) names the problem ([`Problem`]: `inner`, c_ij = Σ_k a_ik b_jk over
//! a long k spread across the grid, `complex_inner`, c_ij = ⟨a_i, b_j⟩ of complex
//! vectors: block inner products, and `batched_complex_inner`, many of those in one
//! launch: the multigrid set-up's V†UV), the instruction
//! ([`Instruction`]: m16n8k16 f16/bf16 → f32, m16n8k8 tf32 → f32, m8n8k4 f64 DMMA, or
//! `simt(f32 -> f32)`: f32 FMA on the CUDA cores in register tiles per thread, [`simt`]), the
//! split-precision mode ([`Split`]: 3×BF16, 3×TF32), the scaling into a 16-bit range
//! ([`Scaling`]: the block's max |a| per tile, f16), the staging ([`Staging`]: `cp.async`
//! pipelines or plain copies), the fragment loads ([`Fragments`]: `ldmatrix` or explicit),
//! and the lists a variant draws from: the sizes m, n, the input precision, and the
//! compile knobs tile_k, warps per block and pipeline depth ([`MmaVariant`]).
//!
//! ```text
//! mma_tile! tokens ─qdsl-macros─▶ MmaSpec ─validate─▶ plan(spec, variant) ─▶ MmaPlan
//!     MmaPlan ─cuda::program─▶ KernelProgram (tile kernel + reduce kernel, interfaces)
//!     MmaSpec, MmaVariant ─cpu::inner─▶ the same numbers on the host (rounding emulated)
//! ```
//!
//! Each mode's error bound is [`cpu::error_bound`]; the fragment operations are the
//! kernel IR's [`crate::dsl::kernel_ir::MmaOp`], printed by [`cuda::print_op`].

pub mod axpy;
pub mod cpu;
pub mod cuda;
pub mod plan;
pub mod simt;
pub mod spec;

pub use plan::{plan, MmaPlan, MmaVariant, SimtTile};
pub use spec::{
    Accumulator, Fragments, Input, Instruction, Item, MmaSpec, Operand, Problem, Scaling, Shape,
    SpecError, Split, Staging,
};

use super::DslError;

/// A kernel defined by a `mma_tile!` spec: the macro generates a unit struct implementing
/// it.
pub trait MmaTile {
    /// The spec.
    fn spec() -> MmaSpec;

    /// The plan of a variant.
    fn plan(v: &MmaVariant) -> Result<MmaPlan, DslError> {
        plan::plan(&Self::spec(), v)
    }

    /// The variant's program (source and the two kernels' interfaces; a block axpy's
    /// one kernel).
    fn program(v: &MmaVariant) -> Result<super::KernelProgram, DslError> {
        Self::plan(v).map(|p| {
            if p.spec.problem.is_axpy() {
                axpy::program(&p)
            } else {
                cuda::program(&p)
            }
        })
    }

    /// The CUDA source of a variant.
    fn cuda_source(v: &MmaVariant) -> Result<String, DslError> {
        Self::plan(v).map(|p| {
            if p.spec.problem.is_axpy() {
                axpy::source(&p)
            } else {
                cuda::source(&p)
            }
        })
    }

    /// A `complex_axpy` spec on the CPU ([`axpy::cpu`]): y_j += Σ_i x_i A_ij for the
    /// variant's m vectors x (`len` complex components each, one after another), n
    /// vectors y and the m × n complex A (row-major, interleaved), the kernel's rounding
    /// emulated. An error for another problem or lengths that do not fit.
    fn axpy_cpu(
        v: &MmaVariant,
        x: &[f64],
        a: &[f64],
        y: &mut [f64],
        len: usize,
    ) -> Result<(), DslError> {
        let p = Self::plan(v)?;
        if !p.spec.problem.is_axpy() {
            return Err(DslError::UnsupportedVariant {
                kernel: p.name,
                knob: "problem",
                reason: format!("{} is not a block axpy", p.spec.problem.name()),
            });
        }
        if x.len() != v.m * 2 * len || y.len() != v.n * 2 * len || a.len() != 2 * v.m * v.n {
            return Err(DslError::FieldMismatch {
                kernel: p.name,
                field: "x, a, y".into(),
                expected: format!(
                    "{} x values, {} of A, {} y values (m = {}, n = {}, {len} components)",
                    v.m * 2 * len,
                    2 * v.m * v.n,
                    v.n * 2 * len,
                    v.m,
                    v.n
                ),
                found: format!("{}, {}, {}", x.len(), a.len(), y.len()),
            });
        }
        axpy::cpu(&p.spec, v, x, a, y, len);
        Ok(())
    }

    /// The problem on the CPU as the variant's kernel computes it ([`cpu::inner`]): A is
    /// m rows of k values, B n rows, row-major; c is m × n row-major (m × n interleaved
    /// complex values for `complex_inner`).
    fn inner_cpu(v: &MmaVariant, a: &[f64], b: &[f64], k: usize) -> Result<Vec<f64>, DslError> {
        let p = Self::plan(v)?;
        if p.spec.problem.is_axpy() {
            return Err(DslError::UnsupportedVariant {
                kernel: p.name,
                knob: "problem",
                reason: "a block axpy is run by `axpy_cpu`".into(),
            });
        }
        if a.len() != v.m * k || b.len() != v.n * k || k == 0 || !k.is_multiple_of(v.tile_k) {
            return Err(DslError::FieldMismatch {
                kernel: p.name,
                field: "a, b".into(),
                expected: format!(
                    "{} and {} values (m, n rows of k values, k a positive multiple of tile_k = {})",
                    v.m * k,
                    v.n * k,
                    v.tile_k
                ),
                found: format!("{} and {} values, k = {k}", a.len(), b.len()),
            });
        }
        Ok(cpu::inner(&p.spec, v, a, b, k))
    }

    /// A `batched_complex_inner` spec's products on the CPU ([`cpu::batched_inner`]):
    /// `batches` products, product p's m rows of A at `a[p · m · k ..]`, its n rows of B at
    /// `b[p · n · k ..]`; the results one after another. An error for another problem or
    /// lengths that do not fit.
    fn batched_inner_cpu(
        v: &MmaVariant,
        a: &[f64],
        b: &[f64],
        k: usize,
        batches: usize,
    ) -> Result<Vec<f64>, DslError> {
        let p = Self::plan(v)?;
        if !p.spec.problem.is_batched() {
            return Err(DslError::UnsupportedVariant {
                kernel: p.name,
                knob: "problem",
                reason: format!("{} is not a batched problem", p.spec.problem.name()),
            });
        }
        let fits = k > 0 && k.is_multiple_of(v.tile_k) && batches > 0;
        if !fits || a.len() != batches * v.m * k || b.len() != batches * v.n * k {
            return Err(DslError::FieldMismatch {
                kernel: p.name,
                field: "a, b".into(),
                expected: format!(
                    "{} and {} values ({batches} products of m = {}, n = {} rows of k values, \
                     k a positive multiple of tile_k = {})",
                    batches * v.m * k,
                    batches * v.n * k,
                    v.m,
                    v.n,
                    v.tile_k
                ),
                found: format!("{} and {} values, k = {k}", a.len(), b.len()),
            });
        }
        Ok(cpu::batched_inner(&p.spec, v, a, b, k, batches))
    }
}

#[cfg(test)]
mod tests;
