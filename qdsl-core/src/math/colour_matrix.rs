//! 3×3 complex matrices: gauge links and everything built from them.

use super::NC;
use crate::Real;
use num_complex::Complex;
use std::ops::{Add, AddAssign, Index, IndexMut, Mul, MulAssign, Neg, Sub, SubAssign};

/// A 3×3 complex matrix `m[row][col]`.
///
/// Gauge links are elements of SU(3) (U U† = 1, det U = 1); smeared links are general
/// 3×3 matrices that the HISQ recipe projects to U(3). The type does not enforce either:
/// [`ColourMatrix::unitarity_deviation`] measures how far a matrix is from U(3).
///
/// `repr(transparent)`: a slice of matrices is a slice of 9 row-major `Complex<T>` each
/// (`Complex` is `repr(C)`), which lets bindings view link memory without copying.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[repr(transparent)]
pub struct ColourMatrix<T: Real>(pub [[Complex<T>; NC]; NC]);

impl<T: Real> ColourMatrix<T> {
    /// The zero matrix.
    pub fn zero() -> Self {
        Self([[Complex::new(T::zero(), T::zero()); NC]; NC])
    }

    /// The identity matrix.
    pub fn identity() -> Self {
        Self::scalar(Complex::new(T::one(), T::zero()))
    }

    /// `c` times the identity.
    pub fn scalar(c: Complex<T>) -> Self {
        let mut m = Self::zero();
        for i in 0..NC {
            m.0[i][i] = c;
        }
        m
    }

    /// Builds a matrix from `f(row, col)`.
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> Complex<T>) -> Self {
        let mut m = Self::zero();
        for i in 0..NC {
            for j in 0..NC {
                m.0[i][j] = f(i, j);
            }
        }
        m
    }

    /// Builds a matrix from 18 reals in row-major order `[re, im]` per element (the order
    /// of MILC, NERSC and ILDG files).
    pub fn from_reals(r: &[T; 18]) -> Self {
        Self::from_fn(|i, j| Complex::new(r[2 * (3 * i + j)], r[2 * (3 * i + j) + 1]))
    }

    /// The 18 reals in row-major order `[re, im]` per element.
    pub fn to_reals(&self) -> [T; 18] {
        let mut r = [T::zero(); 18];
        for i in 0..NC {
            for j in 0..NC {
                r[2 * (3 * i + j)] = self.0[i][j].re;
                r[2 * (3 * i + j) + 1] = self.0[i][j].im;
            }
        }
        r
    }

    /// Conjugate transpose U†.
    pub fn adjoint(&self) -> Self {
        Self::from_fn(|i, j| self.0[j][i].conj())
    }

    /// Transpose Uᵀ.
    pub fn transpose(&self) -> Self {
        Self::from_fn(|i, j| self.0[j][i])
    }

    /// Element-wise complex conjugate U*.
    pub fn conj(&self) -> Self {
        Self::from_fn(|i, j| self.0[i][j].conj())
    }

    /// Trace tr U.
    pub fn trace(&self) -> Complex<T> {
        self.0[0][0] + self.0[1][1] + self.0[2][2]
    }

    /// Re tr (A B) without forming the product.
    pub fn re_trace_mul(&self, b: &Self) -> T {
        let mut s = T::zero();
        for i in 0..NC {
            for k in 0..NC {
                let (x, y) = (self.0[i][k], b.0[k][i]);
                s += x.re * y.re - x.im * y.im;
            }
        }
        s
    }

    /// A† B.
    pub fn adjoint_mul(&self, b: &Self) -> Self {
        Self::from_fn(|i, j| {
            let mut s = Complex::new(T::zero(), T::zero());
            for k in 0..NC {
                s += self.0[k][i].conj() * b.0[k][j];
            }
            s
        })
    }

    /// A B†.
    pub fn mul_adjoint(&self, b: &Self) -> Self {
        Self::from_fn(|i, j| {
            let mut s = Complex::new(T::zero(), T::zero());
            for k in 0..NC {
                s += self.0[i][k] * b.0[j][k].conj();
            }
            s
        })
    }

    /// Multiplies every element by the real `s`.
    pub fn scale(&self, s: T) -> Self {
        Self::from_fn(|i, j| self.0[i][j] * s)
    }

    /// Multiplies every element by the complex `c`.
    pub fn scale_complex(&self, c: Complex<T>) -> Self {
        Self::from_fn(|i, j| self.0[i][j] * c)
    }

    /// Squared Frobenius norm Σ|U_ij|².
    pub fn norm_sqr(&self) -> T {
        self.0.iter().flatten().map(|c| c.norm_sqr()).sum()
    }

    /// Largest |Re| or |Im| of any element.
    pub fn max_abs_component(&self) -> T {
        self.0
            .iter()
            .flatten()
            .fold(T::zero(), |m, c| m.max(c.re.abs()).max(c.im.abs()))
    }

    /// Frobenius norm of U†U − 1: zero for a unitary matrix.
    pub fn unitarity_deviation(&self) -> T {
        (self.adjoint_mul(self) - Self::identity())
            .norm_sqr()
            .sqrt()
    }

    /// True if every element is finite (no NaN or infinity).
    pub fn is_finite(&self) -> bool {
        self.0
            .iter()
            .flatten()
            .all(|c| c.re.is_finite() && c.im.is_finite())
    }

    /// Converts the element type (e.g. f64 → f32, rounding to nearest).
    pub fn cast<U: Real>(&self) -> ColourMatrix<U> {
        ColourMatrix::from_fn(|i, j| {
            let c = self.0[i][j];
            Complex::new(U::from_f64(c.re.to_f64()), U::from_f64(c.im.to_f64()))
        })
    }

    /// Row `i` as an array.
    pub fn row(&self, i: usize) -> [Complex<T>; NC] {
        self.0[i]
    }
}

impl<T: Real> Index<(usize, usize)> for ColourMatrix<T> {
    type Output = Complex<T>;
    fn index(&self, (i, j): (usize, usize)) -> &Complex<T> {
        &self.0[i][j]
    }
}

impl<T: Real> IndexMut<(usize, usize)> for ColourMatrix<T> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut Complex<T> {
        &mut self.0[i][j]
    }
}

impl<T: Real> Mul for ColourMatrix<T> {
    type Output = Self;
    fn mul(self, b: Self) -> Self {
        Self::from_fn(|i, j| {
            let mut s = Complex::new(T::zero(), T::zero());
            for k in 0..NC {
                s += self.0[i][k] * b.0[k][j];
            }
            s
        })
    }
}

impl<T: Real> Mul<&ColourMatrix<T>> for &ColourMatrix<T> {
    type Output = ColourMatrix<T>;
    fn mul(self, b: &ColourMatrix<T>) -> ColourMatrix<T> {
        *self * *b
    }
}

impl<T: Real> MulAssign for ColourMatrix<T> {
    fn mul_assign(&mut self, b: Self) {
        *self = *self * b;
    }
}

impl<T: Real> Mul<T> for ColourMatrix<T> {
    type Output = Self;
    fn mul(self, s: T) -> Self {
        self.scale(s)
    }
}

impl<T: Real> Mul<Complex<T>> for ColourMatrix<T> {
    type Output = Self;
    fn mul(self, c: Complex<T>) -> Self {
        self.scale_complex(c)
    }
}

impl<T: Real> Add for ColourMatrix<T> {
    type Output = Self;
    fn add(self, b: Self) -> Self {
        Self::from_fn(|i, j| self.0[i][j] + b.0[i][j])
    }
}

impl<T: Real> AddAssign for ColourMatrix<T> {
    fn add_assign(&mut self, b: Self) {
        *self = *self + b;
    }
}

impl<T: Real> Sub for ColourMatrix<T> {
    type Output = Self;
    fn sub(self, b: Self) -> Self {
        Self::from_fn(|i, j| self.0[i][j] - b.0[i][j])
    }
}

impl<T: Real> SubAssign for ColourMatrix<T> {
    fn sub_assign(&mut self, b: Self) {
        *self = *self - b;
    }
}

impl<T: Real> Neg for ColourMatrix<T> {
    type Output = Self;
    fn neg(self) -> Self {
        Self::from_fn(|i, j| -self.0[i][j])
    }
}
