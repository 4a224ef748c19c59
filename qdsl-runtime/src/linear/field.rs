//! The vector space a solver works in: [`SolverField`] and precision conversion
//! ([`ConvertFrom`]).
//!
//! A solver needs only a handful of operations on its vectors. Reductions (‖x‖², ⟨x, y⟩)
//! return `f64` and must be *accumulated* in `f64` whatever the storage precision, so
//! that the solver's scalars (α, β, ρ, ω) are as accurate as the vectors allow. They are
//! fallible: on a lattice decomposed over ranks a reduction is a collective
//! ([`crate::distributed::DistributedField`]), and a peer that died must end the solve
//! with an error naming it, not a panic or a hang. Every rank of a distributed solve
//! sees the same bits of every reduction, so all ranks take the same branches.
//! Coefficients are passed as `Complex<f64>` and rounded to the storage precision by
//! the implementation.

use super::SolverError;
use qdsl_core::Complex;

/// A vector of the Krylov space: a host or device field in one storage precision.
pub trait SolverField: Sized + Send + Sync {
    /// The unit round-off u of the storage (2⁻⁵³ for f64, 2⁻²⁴ for f32, …): the relative
    /// error of storing one number. Bounds the residual a solve iterating in this
    /// precision can reach.
    const UNIT_ROUNDOFF: f64;

    /// A zero field of the same shape (layout, subset, size) as `self`.
    fn zeros_like(&self) -> Self;

    /// y ← x (y = `self`). An error if the shapes differ.
    fn copy_from(&mut self, x: &Self) -> Result<(), SolverError>;

    /// y ← 0.
    fn set_zero(&mut self);

    /// ‖y‖² = Σ_i |y_i|², accumulated in f64. An error only where the sum is a
    /// collective that failed (a distributed field whose peer timed out).
    fn norm_sqr(&self) -> Result<f64, SolverError>;

    /// ⟨y, x⟩ = Σ_i y_i* x_i (conjugate-linear in `self` = y), accumulated in f64.
    fn dot(&self, x: &Self) -> Result<Complex<f64>, SolverError>;

    /// y ← a x + y.
    fn axpy(&mut self, a: Complex<f64>, x: &Self) -> Result<(), SolverError>;

    /// y ← x + a y.
    fn xpay(&mut self, x: &Self, a: Complex<f64>) -> Result<(), SolverError>;

    /// y ← a y.
    fn scale(&mut self, a: Complex<f64>);
}

/// Conversion between storage precisions: `Self` ← `H` with each number rounded to the
/// precision of `Self` (to nearest). Implemented for every pair of precisions including
/// `H = Self` (a copy), so that one mixed-precision solver also serves pure ones.
pub trait ConvertFrom<H>: Sized {
    /// y ← round(x) (y = `self`). An error if the shapes differ.
    fn convert_from(&mut self, x: &H) -> Result<(), SolverError>;

    /// A new field round(x).
    fn converted(x: &H) -> Self;
}

/// Shorthand for a real coefficient as the complex coefficient the field methods take.
pub(crate) fn real(a: f64) -> Complex<f64> {
    Complex::new(a, 0.0)
}
