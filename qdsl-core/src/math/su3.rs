//! SU(3) and U(3) group operations on [`ColourMatrix`]: determinant, reunitarisation and
//! the projection onto the Lie algebra su(3).
//!
//! The exponential map is [`ColourMatrix::exp`], the projections to U(3) and SU(3) are
//! [`ColourMatrix::polar_u3`] and [`ColourMatrix::project_su3`].

use super::{ColourMatrix, ColourVector, NC};
use crate::Real;
use num_complex::Complex;

impl<T: Real> ColourMatrix<T> {
    /// Determinant by cofactor expansion along the first row:
    ///
    /// det U = Σ_j U_0j (row1 × row2)_j = row0 · (row1 × row2) (no conjugation),
    ///
    /// where (a × b)_i = ε_ijk a_j b_k.
    pub fn determinant(&self) -> Complex<T> {
        let r1 = ColourVector(self.0[1]);
        let r2 = ColourVector(self.0[2]);
        let c = r1.cross(&r2);
        self.0[0][0] * c.0[0] + self.0[0][1] * c.0[1] + self.0[0][2] * c.0[2]
    }

    /// Reunitarises to SU(3) by Gram–Schmidt on the first two rows:
    ///
    /// u = r₀ / |r₀|,  v = (r₁ − ⟨u, r₁⟩ u) / |r₁ − ⟨u, r₁⟩ u|,  w = (u × v)*,
    ///
    /// with ⟨u, r⟩ = Σ_a u_a* r_a. The result has orthonormal rows and det = u·(v × w) =
    /// (u × v)·(u × v)* = 1, so it lies in SU(3). For a matrix that is already in SU(3) the
    /// result equals the input up to rounding; the third row of the input is ignored (it
    /// is what 12-real gauge compression drops).
    ///
    /// Degenerate input (a zero first row, or rows 0 and 1 parallel) has no Gram–Schmidt
    /// basis: the division then gives non-finite elements, which
    /// [`ColourMatrix::is_finite`] detects. Gauge utilities that must reject such links
    /// check it (unit-length rows are the normal case, so no test is made here, keeping
    /// the hot path branch-free).
    pub fn reunitarize(&self) -> Self {
        let r0 = ColourVector(self.0[0]);
        let r1 = ColourVector(self.0[1]);
        let u = r0.scale(r0.norm_sqr().sqrt().recip());
        let v = r1 - u.scale_complex(u.dot(&r1));
        let v = v.scale(v.norm_sqr().sqrt().recip());
        let w = u.cross(&v).conj();
        Self([u.0, v.0, w.0])
    }

    /// The traceless anti-hermitian part (the projection onto the Lie algebra su(3) used
    /// for forces and as the argument of [`ColourMatrix::exp`]):
    ///
    /// TA(A) = (A − A†)/2 − tr[(A − A†)/2]/3 · 1.
    ///
    /// TA is linear, TA(X) = X for X ∈ su(3), and TA(A)† = −TA(A), tr TA(A) = 0.
    pub fn traceless_antihermitian_part(&self) -> Self {
        let half = T::from_f64(0.5);
        let mut x = (*self - self.adjoint()).scale(half);
        let t = x.trace() / T::from_f64(3.0);
        for i in 0..NC {
            x.0[i][i] -= t;
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{cdiff, eps, max_diff, Lcg};

    fn c<T: Real>(re: f64, im: f64) -> Complex<T> {
        Complex::new(T::from_f64(re), T::from_f64(im))
    }

    /// det of hand-computed matrices, and det(UV) = det U det V on random matrices.
    fn check_determinant<T: Real>() {
        let tol = 64.0 * eps::<T>();
        // Upper triangular: the product of the diagonal, (1+i)(2)(−i) = 2 − 2i.
        let a = ColourMatrix::<T>::from_fn(|i, j| match (i, j) {
            (0, 0) => c(1.0, 1.0),
            (1, 1) => c(2.0, 0.0),
            (2, 2) => c(0.0, -1.0),
            (i, j) if i < j => c(3.0 + i as f64, -(j as f64)),
            _ => c(0.0, 0.0),
        });
        assert!(cdiff(a.determinant(), c(2.0, -2.0)) < tol);
        // A permutation matrix of an odd permutation (swap rows 0 and 1): det = −1.
        let p = ColourMatrix::<T>::from_fn(|i, j| {
            let col = [1, 0, 2][i];
            c(if j == col { 1.0 } else { 0.0 }, 0.0)
        });
        assert!(cdiff(p.determinant(), c(-1.0, 0.0)) == 0.0);
        // [[1,2,3],[4,5,6],[7,8,10]] has det = −3 (hand expansion: 1·2 − 2·(−2) + 3·(−3)).
        let m = ColourMatrix::<T>::from_fn(|i, j| {
            c(
                [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]][i][j],
                0.0,
            )
        });
        assert!(cdiff(m.determinant(), c(-3.0, 0.0)) < tol * 10.0);
        // det(c·1) = c³.
        let z = c::<T>(0.5, -1.5);
        assert!(cdiff(ColourMatrix::scalar(z).determinant(), z * z * z) < tol);

        let mut rng = Lcg::new(1);
        for _ in 0..20 {
            let (u, v) = (rng.matrix::<T>(), rng.matrix::<T>());
            let (du, dv) = (u.determinant(), v.determinant());
            assert!(cdiff((u * v).determinant(), du * dv) < 8.0 * tol);
            // det U† = conj(det U), det Uᵀ = det U.
            assert!(cdiff(u.adjoint().determinant(), du.conj()) < tol);
            assert!(cdiff(u.transpose().determinant(), du) < tol);
        }
    }

    #[test]
    fn determinant_f32() {
        check_determinant::<f32>();
    }

    #[test]
    fn determinant_f64() {
        check_determinant::<f64>();
    }

    /// Reunitarisation gives SU(3), keeps the direction of row 0, leaves SU(3) matrices
    /// unchanged and restores a link perturbed away from SU(3).
    fn check_reunitarize<T: Real>(tol: f64) {
        let mut rng = Lcg::new(2);
        for _ in 0..50 {
            let v = rng.matrix::<T>();
            let u = v.reunitarize();
            assert!(u.unitarity_deviation().to_f64() < tol, "{u:?}");
            assert!(cdiff(u.determinant(), Complex::new(T::one(), T::zero())) < tol);
            // Row 0 is row 0 of V normalised; row 1 lies in the span of rows 0, 1 of V,
            // so it is orthogonal to (row0 × row1)* of V.
            let r0 = ColourVector(v.0[0]);
            let n0 = r0.norm_sqr().sqrt();
            for j in 0..3 {
                assert!(cdiff(u.0[0][j], v.0[0][j] / n0) < tol);
            }
            let normal = ColourVector(v.0[0]).cross(&ColourVector(v.0[1])).conj();
            assert!(normal.dot(&ColourVector(u.0[1])).norm().to_f64() < 8.0 * tol);
            // Idempotent on SU(3).
            assert!(max_diff(&u.reunitarize(), &u) < tol);
        }
        // A unitary matrix with det = 1 stays fixed; a scaled and slightly mixed one is
        // restored (only the first two rows matter).
        let u = rng.su3::<T>();
        let mut w = u.scale(T::from_f64(1.7));
        for j in 0..3 {
            w.0[1][j] += u.0[0][j] * T::from_f64(0.3);
            w.0[2][j] = Complex::new(T::from_f64(9.0), T::zero());
        }
        assert!(max_diff(&w.reunitarize(), &u) < tol);
    }

    #[test]
    fn reunitarize_f32() {
        check_reunitarize::<f32>(2e-6);
    }

    #[test]
    fn reunitarize_f64() {
        check_reunitarize::<f64>(1e-14);
    }

    /// TA(A) is anti-hermitian and traceless, is linear, and fixes su(3); a hand example.
    fn check_traceless_antihermitian<T: Real>() {
        let tol = 16.0 * eps::<T>();
        let mut rng = Lcg::new(3);
        let (a, b) = (rng.matrix::<T>(), rng.matrix::<T>());
        let x = a.traceless_antihermitian_part();
        assert!(max_diff(&x.adjoint(), &(-x)) == 0.0);
        assert!(x.trace().norm().to_f64() < tol);
        assert!(max_diff(&x.traceless_antihermitian_part(), &x) < tol);
        let s = T::from_f64(0.75);
        let lin = (a.scale(s) + b).traceless_antihermitian_part();
        assert!(max_diff(&lin, &(x.scale(s) + b.traceless_antihermitian_part())) < 4.0 * tol);
        // Hermitian matrices are annihilated.
        assert!(
            (a + a.adjoint())
                .traceless_antihermitian_part()
                .max_abs_component()
                == T::zero()
        );
        // diag(3i, 0, 0) + E_01: TA = diag(2i, −i, −i) + (E_01 − E_10)/2.
        let mut m = ColourMatrix::<T>::zero();
        m.0[0][0] = c(0.0, 3.0);
        m.0[0][1] = c(1.0, 0.0);
        let mut expect = ColourMatrix::<T>::zero();
        expect.0[0][0] = c(0.0, 2.0);
        expect.0[1][1] = c(0.0, -1.0);
        expect.0[2][2] = c(0.0, -1.0);
        expect.0[0][1] = c(0.5, 0.0);
        expect.0[1][0] = c(-0.5, 0.0);
        assert!(max_diff(&m.traceless_antihermitian_part(), &expect) < tol);
    }

    #[test]
    fn traceless_antihermitian_f32() {
        check_traceless_antihermitian::<f32>();
    }

    #[test]
    fn traceless_antihermitian_f64() {
        check_traceless_antihermitian::<f64>();
    }
}
