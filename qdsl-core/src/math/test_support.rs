//! Deterministic test inputs for the math tests: a tiny linear congruential generator and
//! matrices and spinors built from it (the seeded field generator lives in `field`; these
//! tests must not depend on it).

use super::{ColourMatrix, ColourVector, Spinor};
use crate::Real;
use num_complex::Complex;

/// Knuth's MMIX linear congruential generator; uniform reals in [−1, 1).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Self(
            seed.wrapping_mul(2862933555777941757)
                .wrapping_add(3037000493),
        )
    }

    /// Uniform in [−1, 1), from the top 53 bits.
    pub fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 52) as f64) - 1.0
    }

    pub fn complex<T: Real>(&mut self) -> Complex<T> {
        let re = self.uniform();
        Complex::new(T::from_f64(re), T::from_f64(self.uniform()))
    }

    /// A general complex matrix with elements uniform in the unit square.
    pub fn matrix<T: Real>(&mut self) -> ColourMatrix<T> {
        ColourMatrix::from_fn(|_, _| self.complex())
    }

    /// An SU(3) matrix (a general matrix made special unitary by Gram–Schmidt).
    pub fn su3<T: Real>(&mut self) -> ColourMatrix<T> {
        self.matrix::<T>().reunitarize()
    }

    /// A traceless anti-hermitian matrix scaled to Frobenius norm `norm`.
    pub fn traceless_antihermitian<T: Real>(&mut self, norm: f64) -> ColourMatrix<T> {
        let x = self.matrix::<T>().traceless_antihermitian_part();
        x.scale(T::from_f64(norm) / x.norm_sqr().sqrt())
    }

    pub fn colour_vector<T: Real>(&mut self) -> ColourVector<T> {
        ColourVector::from_fn(|_| self.complex())
    }

    pub fn spinor<T: Real>(&mut self) -> Spinor<T> {
        Spinor::from_fn(|_, _| self.complex())
    }
}

/// Largest |element| of A − B, in f64.
pub fn max_diff<T: Real>(a: &ColourMatrix<T>, b: &ColourMatrix<T>) -> f64 {
    (*a - *b).max_abs_component().to_f64()
}

/// |z − w| in f64.
pub fn cdiff<T: Real>(z: Complex<T>, w: Complex<T>) -> f64 {
    (z - w).norm().to_f64()
}

/// Machine epsilon of `T` as f64.
pub fn eps<T: Real>() -> f64 {
    T::epsilon().to_f64()
}
