//! 4×4 complex matrices in spin space (gamma matrices, σ_μν, projectors).

use super::Spinor;
use crate::Real;
use num_complex::Complex;
use std::ops::{Add, Mul, Neg, Sub};

/// Number of spin components of a Dirac spinor.
const NS: usize = 4;

/// A 4×4 complex matrix `m[row][col]` acting on the spin index of a [`Spinor`]:
/// (Γψ)_s = Σ_t Γ_st ψ_t, the same for every colour.
///
/// The gamma matrices themselves are stored as exact tables
/// ([`super::SignedPermutation`]); this dense type is for products and sums of them
/// (σ_μν, 1 ± γ_μ, clover terms) and for tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinMatrix<T: Real>(pub [[Complex<T>; NS]; NS]);

impl<T: Real> SpinMatrix<T> {
    /// The zero matrix.
    pub fn zero() -> Self {
        Self([[Complex::new(T::zero(), T::zero()); NS]; NS])
    }

    /// The identity matrix.
    pub fn identity() -> Self {
        Self::from_fn(|s, t| Complex::new(if s == t { T::one() } else { T::zero() }, T::zero()))
    }

    /// Builds the matrix from `f(row, col)`.
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> Complex<T>) -> Self {
        Self(std::array::from_fn(|s| std::array::from_fn(|t| f(s, t))))
    }

    /// Conjugate transpose Γ†.
    pub fn adjoint(&self) -> Self {
        Self::from_fn(|s, t| self.0[t][s].conj())
    }

    /// Trace tr Γ = Σ_s Γ_ss.
    pub fn trace(&self) -> Complex<T> {
        (0..NS).map(|s| self.0[s][s]).sum()
    }

    /// Multiplies every element by the complex `c`.
    pub fn scale_complex(&self, c: Complex<T>) -> Self {
        Self::from_fn(|s, t| self.0[s][t] * c)
    }

    /// Commutator [A, B] = AB − BA.
    pub fn commutator(&self, b: &Self) -> Self {
        *self * *b - *b * *self
    }

    /// Anticommutator {A, B} = AB + BA.
    pub fn anticommutator(&self, b: &Self) -> Self {
        *self * *b + *b * *self
    }

    /// Largest |Re| or |Im| of any element.
    pub fn max_abs_component(&self) -> T {
        self.0
            .iter()
            .flatten()
            .fold(T::zero(), |m, c| m.max(c.re.abs()).max(c.im.abs()))
    }
}

impl<T: Real> Mul for SpinMatrix<T> {
    type Output = Self;
    fn mul(self, b: Self) -> Self {
        Self::from_fn(|s, t| (0..NS).map(|k| self.0[s][k] * b.0[k][t]).sum())
    }
}

/// Γψ: (Γψ)_s = Σ_t Γ_st ψ_t, colour by colour.
impl<T: Real> Mul<Spinor<T>> for SpinMatrix<T> {
    type Output = Spinor<T>;
    fn mul(self, psi: Spinor<T>) -> Spinor<T> {
        Spinor::from_fn(|s, a| (0..NS).map(|t| self.0[s][t] * psi[t][a]).sum())
    }
}

impl<T: Real> Add for SpinMatrix<T> {
    type Output = Self;
    fn add(self, b: Self) -> Self {
        Self::from_fn(|s, t| self.0[s][t] + b.0[s][t])
    }
}

impl<T: Real> Sub for SpinMatrix<T> {
    type Output = Self;
    fn sub(self, b: Self) -> Self {
        Self::from_fn(|s, t| self.0[s][t] - b.0[s][t])
    }
}

impl<T: Real> Neg for SpinMatrix<T> {
    type Output = Self;
    fn neg(self) -> Self {
        Self::from_fn(|s, t| -self.0[s][t])
    }
}
