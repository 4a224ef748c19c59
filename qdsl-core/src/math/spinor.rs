//! Spin-colour vectors at one site: Dirac spinors (4 spins × 3 colours) and half spinors
//! (2 spins × 3 colours), both instances of one generic type.

use super::{ColourMatrix, ColourVector, NC};
use crate::Real;
use num_complex::Complex;
use std::ops::{Add, AddAssign, Index, IndexMut, Mul, Neg, Sub, SubAssign};

/// A vector ψ_{s a} with `NS` spin components s, each a [`ColourVector`] (colour a = 0..3).
///
/// Use the aliases [`Spinor`] (NS = 4) and [`HalfSpinor`] (NS = 2). Colour matrices act on
/// every spin component alike: (U ψ)_s = U ψ_s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinColourVector<T: Real, const NS: usize>(pub [ColourVector<T>; NS]);

/// A Dirac spinor at one site: 4 spins × 3 colours (24 reals).
pub type Spinor<T> = SpinColourVector<T, 4>;

/// A half spinor: the 2 × 3 components that survive a spin projection (1 ± γ_μ)
/// (12 reals); see [`super::projector`].
pub type HalfSpinor<T> = SpinColourVector<T, 2>;

impl<T: Real, const NS: usize> Default for SpinColourVector<T, NS> {
    fn default() -> Self {
        Self::zero()
    }
}

impl<T: Real, const NS: usize> SpinColourVector<T, NS> {
    /// Number of spin components.
    pub const SPINS: usize = NS;
    /// Number of real numbers stored: 2 · NS · 3.
    pub const REALS: usize = 2 * NS * NC;

    /// The zero vector.
    pub fn zero() -> Self {
        Self([ColourVector::zero(); NS])
    }

    /// Builds the vector from `f(spin, colour)`.
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> Complex<T>) -> Self {
        Self(std::array::from_fn(|s| ColourVector::from_fn(|a| f(s, a))))
    }

    /// Hermitian inner product ⟨self, b⟩ = Σ_{s,a} conj(self_{sa}) b_{sa}.
    pub fn dot(&self, b: &Self) -> Complex<T> {
        self.0
            .iter()
            .zip(&b.0)
            .fold(Complex::new(T::zero(), T::zero()), |acc, (x, y)| {
                acc + x.dot(y)
            })
    }

    /// Squared norm ‖ψ‖² = Σ_{s,a} |ψ_{sa}|².
    pub fn norm_sqr(&self) -> T {
        self.0.iter().map(ColourVector::norm_sqr).sum()
    }

    /// Norm ‖ψ‖ = √(Σ_{s,a} |ψ_{sa}|²).
    pub fn norm(&self) -> T {
        self.norm_sqr().sqrt()
    }

    /// Multiplies by the real `s`.
    pub fn scale(&self, s: T) -> Self {
        self.map(|v| v.scale(s))
    }

    /// Multiplies by the complex `c`.
    pub fn scale_complex(&self, c: Complex<T>) -> Self {
        self.map(|v| v.scale_complex(c))
    }

    /// a·x + self (BLAS axpy with a complex `a`).
    pub fn axpy(&self, a: Complex<T>, x: &Self) -> Self {
        Self(std::array::from_fn(|s| self.0[s] + x.0[s].scale_complex(a)))
    }

    /// Colour multiplication of every spin component: (U ψ)_s = U ψ_s.
    pub fn colour_mul(&self, u: &ColourMatrix<T>) -> Self {
        self.map(|v| *u * v)
    }

    /// Colour multiplication by the adjoint: (U† ψ)_s = U† ψ_s, without forming U†.
    pub fn colour_adjoint_mul(&self, u: &ColourMatrix<T>) -> Self {
        self.map(|v| u.adjoint_mul_vector(&v))
    }

    /// Largest |Re| or |Im| of any component.
    pub fn max_abs_component(&self) -> T {
        self.0
            .iter()
            .flat_map(|v| v.0.iter())
            .fold(T::zero(), |m, c| m.max(c.re.abs()).max(c.im.abs()))
    }

    /// True if every component is finite (no NaN or infinity).
    pub fn is_finite(&self) -> bool {
        self.0
            .iter()
            .flat_map(|v| v.0.iter())
            .all(|c| c.re.is_finite() && c.im.is_finite())
    }

    /// Applies `f` to every spin component.
    pub fn map(&self, f: impl Fn(ColourVector<T>) -> ColourVector<T>) -> Self {
        Self(self.0.map(f))
    }
}

impl<T: Real, const NS: usize> Index<usize> for SpinColourVector<T, NS> {
    type Output = ColourVector<T>;
    fn index(&self, s: usize) -> &ColourVector<T> {
        &self.0[s]
    }
}

impl<T: Real, const NS: usize> IndexMut<usize> for SpinColourVector<T, NS> {
    fn index_mut(&mut self, s: usize) -> &mut ColourVector<T> {
        &mut self.0[s]
    }
}

impl<T: Real, const NS: usize> Add for SpinColourVector<T, NS> {
    type Output = Self;
    fn add(self, b: Self) -> Self {
        Self(std::array::from_fn(|s| self.0[s] + b.0[s]))
    }
}

impl<T: Real, const NS: usize> AddAssign for SpinColourVector<T, NS> {
    fn add_assign(&mut self, b: Self) {
        *self = *self + b;
    }
}

impl<T: Real, const NS: usize> Sub for SpinColourVector<T, NS> {
    type Output = Self;
    fn sub(self, b: Self) -> Self {
        Self(std::array::from_fn(|s| self.0[s] - b.0[s]))
    }
}

impl<T: Real, const NS: usize> SubAssign for SpinColourVector<T, NS> {
    fn sub_assign(&mut self, b: Self) {
        *self = *self - b;
    }
}

impl<T: Real, const NS: usize> Neg for SpinColourVector<T, NS> {
    type Output = Self;
    fn neg(self) -> Self {
        self.map(|v| -v)
    }
}

impl<T: Real, const NS: usize> Mul<T> for SpinColourVector<T, NS> {
    type Output = Self;
    fn mul(self, s: T) -> Self {
        self.scale(s)
    }
}

impl<T: Real, const NS: usize> Mul<Complex<T>> for SpinColourVector<T, NS> {
    type Output = Self;
    fn mul(self, c: Complex<T>) -> Self {
        self.scale_complex(c)
    }
}

/// U ψ: the colour matrix acts on every spin component.
impl<T: Real, const NS: usize> Mul<SpinColourVector<T, NS>> for ColourMatrix<T> {
    type Output = SpinColourVector<T, NS>;
    fn mul(self, psi: SpinColourVector<T, NS>) -> SpinColourVector<T, NS> {
        psi.colour_mul(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{cdiff, eps, Lcg};

    /// Inner product, norm and linearity against sums written out over components.
    fn check_algebra<T: Real>() {
        let mut rng = Lcg::new(11);
        let (x, y) = (rng.spinor::<T>(), rng.spinor::<T>());
        let c = rng.complex::<T>();
        let tol = 64.0 * eps::<T>();

        let mut dot = Complex::new(0.0, 0.0);
        let mut nrm = 0.0;
        for s in 0..4 {
            for a in 0..NC {
                let (p, q) = (x[s][a], y[s][a]);
                let (p, q) = (
                    Complex::new(p.re.to_f64(), p.im.to_f64()),
                    Complex::new(q.re.to_f64(), q.im.to_f64()),
                );
                dot += p.conj() * q;
                nrm += p.norm_sqr();
            }
        }
        let d = x.dot(&y);
        assert!((Complex::new(d.re.to_f64(), d.im.to_f64()) - dot).norm() < tol * 24.0);
        assert!((x.norm_sqr().to_f64() - nrm).abs() < tol * 24.0);
        assert!((x.norm().to_f64() - nrm.sqrt()).abs() < tol * 24.0);
        // ⟨x, y⟩ = conj⟨y, x⟩ and ⟨x, x⟩ = ‖x‖².
        assert!(cdiff(x.dot(&y), y.dot(&x).conj()) < tol);
        assert!(cdiff(x.dot(&x), Complex::new(x.norm_sqr(), T::zero())) < tol * 24.0);
        // ⟨x, c y⟩ = c ⟨x, y⟩ (sesquilinearity).
        assert!(cdiff(x.dot(&y.scale_complex(c)), x.dot(&y) * c) < tol * 24.0);
        // axpy, add, sub, neg, real scaling component by component.
        let z = x.axpy(c, &y);
        let w = (x + y * c) - (-x) - x;
        for s in 0..4 {
            for a in 0..NC {
                assert!(cdiff(z[s][a], x[s][a] + c * y[s][a]) == 0.0);
                assert!(cdiff(w[s][a], z[s][a]) < tol);
                assert_eq!(x.scale(T::from_f64(2.0))[s][a], x[s][a] + x[s][a]);
            }
        }
    }

    #[test]
    fn algebra_f32() {
        check_algebra::<f32>();
    }

    #[test]
    fn algebra_f64() {
        check_algebra::<f64>();
    }

    /// Colour multiplication acts on each spin component; U† ψ undoes U ψ for unitary U and
    /// preserves the norm.
    fn check_colour_mul<T: Real>() {
        let mut rng = Lcg::new(12);
        let u = rng.su3::<T>();
        let psi = rng.spinor::<T>();
        let h = HalfSpinor::<T>::from_fn(|s, a| psi[s + 1][a]);
        let tol = 64.0 * eps::<T>();
        let upsi = u * psi;
        for s in 0..4 {
            assert_eq!(upsi[s], u * psi[s]);
        }
        let uh = h.colour_mul(&u);
        for s in 0..2 {
            assert_eq!(uh[s], u * h[s]);
        }
        let back = upsi.colour_adjoint_mul(&u);
        assert!((back - psi).max_abs_component().to_f64() < tol);
        assert!((upsi.norm() - psi.norm()).abs().to_f64() < tol);
        assert_eq!(Spinor::<T>::REALS, 24);
        assert_eq!(HalfSpinor::<T>::REALS, 12);
    }

    #[test]
    fn colour_mul_f32() {
        check_colour_mul::<f32>();
    }

    #[test]
    fn colour_mul_f64() {
        check_colour_mul::<f64>();
    }
}
