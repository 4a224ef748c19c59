//! Colour vectors: three complex components, one per colour.

use super::{ColourMatrix, NC};
use crate::Real;
use num_complex::Complex;
use std::ops::{Add, AddAssign, Index, IndexMut, Mul, Neg, Sub, SubAssign};

/// A colour vector v_a, a = 0..3 (a staggered fermion at one site, or one spin
/// component of a Dirac spinor).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ColourVector<T: Real>(pub [Complex<T>; NC]);

impl<T: Real> ColourVector<T> {
    /// The zero vector.
    pub fn zero() -> Self {
        Self([Complex::new(T::zero(), T::zero()); NC])
    }

    /// Builds a vector from `f(colour)`.
    pub fn from_fn(f: impl FnMut(usize) -> Complex<T>) -> Self {
        Self(std::array::from_fn(f))
    }

    /// Hermitian inner product ⟨self, b⟩ = Σ_a conj(self_a) b_a.
    pub fn dot(&self, b: &Self) -> Complex<T> {
        let mut s = Complex::new(T::zero(), T::zero());
        for a in 0..NC {
            s += self.0[a].conj() * b.0[a];
        }
        s
    }

    /// Squared norm Σ_a |v_a|².
    pub fn norm_sqr(&self) -> T {
        self.0.iter().map(|c| c.norm_sqr()).sum()
    }

    /// Multiplies by the real `s`.
    pub fn scale(&self, s: T) -> Self {
        Self::from_fn(|a| self.0[a] * s)
    }

    /// Multiplies by the complex `c`.
    pub fn scale_complex(&self, c: Complex<T>) -> Self {
        Self::from_fn(|a| self.0[a] * c)
    }

    /// Element-wise complex conjugate.
    pub fn conj(&self) -> Self {
        Self::from_fn(|a| self.0[a].conj())
    }

    /// Colour cross product (a × b)_i = ε_ijk a_j b_k (no conjugation).
    pub fn cross(&self, b: &Self) -> Self {
        let (a, b) = (&self.0, &b.0);
        Self([
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ])
    }
}

impl<T: Real> Index<usize> for ColourVector<T> {
    type Output = Complex<T>;
    fn index(&self, a: usize) -> &Complex<T> {
        &self.0[a]
    }
}

impl<T: Real> IndexMut<usize> for ColourVector<T> {
    fn index_mut(&mut self, a: usize) -> &mut Complex<T> {
        &mut self.0[a]
    }
}

/// U v.
impl<T: Real> Mul<ColourVector<T>> for ColourMatrix<T> {
    type Output = ColourVector<T>;
    fn mul(self, v: ColourVector<T>) -> ColourVector<T> {
        ColourVector::from_fn(|i| {
            let mut s = Complex::new(T::zero(), T::zero());
            for k in 0..NC {
                s += self.0[i][k] * v.0[k];
            }
            s
        })
    }
}

impl<T: Real> ColourMatrix<T> {
    /// U† v without forming U†.
    pub fn adjoint_mul_vector(&self, v: &ColourVector<T>) -> ColourVector<T> {
        ColourVector::from_fn(|i| {
            let mut s = Complex::new(T::zero(), T::zero());
            for k in 0..NC {
                s += self.0[k][i].conj() * v.0[k];
            }
            s
        })
    }
}

impl<T: Real> Add for ColourVector<T> {
    type Output = Self;
    fn add(self, b: Self) -> Self {
        Self::from_fn(|a| self.0[a] + b.0[a])
    }
}

impl<T: Real> AddAssign for ColourVector<T> {
    fn add_assign(&mut self, b: Self) {
        *self = *self + b;
    }
}

impl<T: Real> Sub for ColourVector<T> {
    type Output = Self;
    fn sub(self, b: Self) -> Self {
        Self::from_fn(|a| self.0[a] - b.0[a])
    }
}

impl<T: Real> SubAssign for ColourVector<T> {
    fn sub_assign(&mut self, b: Self) {
        *self = *self - b;
    }
}

impl<T: Real> Neg for ColourVector<T> {
    type Output = Self;
    fn neg(self) -> Self {
        Self::from_fn(|a| -self.0[a])
    }
}

impl<T: Real> Mul<T> for ColourVector<T> {
    type Output = Self;
    fn mul(self, s: T) -> Self {
        self.scale(s)
    }
}
