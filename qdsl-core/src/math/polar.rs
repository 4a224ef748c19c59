//! Polar projection to U(3), W = V (V†V)^{−1/2}, in the closed form HISQ codes use.

use super::{ColourMatrix, ColourVector, MatrixError, NC};
use crate::Real;
use num_complex::Complex;

/// V is rejected as singular when λ_min/λ_max of V†V is at or below this many √ε.
const SINGULAR_RATIO_SQRT_EPS: f64 = 4.0;

/// The accepted ‖W†W − 1‖_F of the result, in units of the machine epsilon.
const UNITARITY_TOLERANCE_EPS: f64 = 64.0;

impl<T: Real> ColourMatrix<T> {
    /// The unitary factor of the polar decomposition V = W H (W ∈ U(3), H hermitian
    /// positive definite), the U(3) projection of the HISQ link recipe:
    ///
    /// W = V (V†V)^{−1/2}.
    ///
    /// W is the element of U(3) that maximises Re tr(W†V), and H = W†V = (V†V)^{1/2}.
    ///
    /// # Method
    ///
    /// As MILC's and QUDA's HISQ unitarisation: with Q = V†V (after scaling V by 1/‖V‖_F,
    /// which leaves W unchanged), the eigenvalues g₀ ≥ g₁ ≥ g₂ > 0 of Q come from the
    /// trigonometric solution of its characteristic cubic,
    ///
    /// g_k = m + 2√p cos(φ + 2πk/3), m = tr Q/3, p = tr (Q − m)²/6,
    /// φ = arccos(det(Q − m) / (2p^{3/2}))/3,
    ///
    /// (the smallest one, which the cubic gives only to an absolute accuracy ε·g₀, is
    /// replaced by g₂ = |det V|²/(g₀g₁), since det Q = |det V|²); then, with s_k = √g_k,
    /// u = s₀ + s₁ + s₂, v = s₀s₁ + s₀s₂ + s₁s₂, w = s₀s₁s₂, Cayley–Hamilton gives
    ///
    /// (V†V)^{−1/2} = f₀ + f₁Q + f₂Q²,
    /// f₀ = [uv² − w(u² + v)]/d, f₁ = [2uv − u³ − w]/d, f₂ = u/d, d = w(uv − w).
    ///
    /// Forming V†V costs accuracy: the closed-form W₀ deviates from unitarity by
    /// δ ≈ 10ε·g₀/g₂. One Newton step of the polar iteration,
    ///
    /// W = (W₀ + W₀^{−†})/2,
    ///
    /// keeps the polar factor of W₀ and squares the deviation (W₀ = W'(1 + E) with E
    /// hermitian gives W = W'(1 + E²/2 + …)), so ‖W†W − 1‖_F is a few ε for every
    /// accepted V. The distance to the exact polar factor is not improved by that step:
    /// max |W − W_exact|_ij ≲ 10ε·g₀/g₂ (measured; forming V†V squares the condition
    /// number κ(V) = √(g₀/g₂), and feeding the exact eigenvalues does not help), i.e. up
    /// to ≈ 2.5√ε at the singularity limit below. The same holds for MILC's and QUDA's
    /// closed form, which this one follows (QUDA falls back to an SVD where it fails).
    ///
    /// # Errors
    ///
    /// * [`MatrixError::NonFinite`] if V has a NaN or infinite element;
    /// * [`MatrixError::Singular`] if g₂/g₀ ≤ 4√ε (6e−8 in f64, 1.4e−3 in f32; the
    ///   condition number of V is √(g₀/g₂)), including V = 0: the polar factor is then
    ///   not unique or not accurately computable by this method;
    /// * [`MatrixError::NotUnitary`] if the result has ‖W†W − 1‖_F > 64ε (a guard that
    ///   accepted matrices do not reach).
    pub fn polar_u3(&self) -> Result<Self, MatrixError> {
        let PolarCore {
            v,
            q,
            eigenvalues: [g0, g1, g2],
            ..
        } = self.polar_core()?;
        let [f0, f1, f2] = inverse_sqrt_coefficients([g0, g1, g2]);
        let mut inv_sqrt = q.scale(f1) + (q * q).scale(f2);
        for i in 0..NC {
            inv_sqrt.0[i][i] += Complex::new(f0, T::zero());
        }
        let w = newton_polar_step(&(v * inv_sqrt));
        let deviation = w.unitarity_deviation();
        let tolerance = T::from_f64(UNITARITY_TOLERANCE_EPS) * T::epsilon();
        if deviation.is_nan() || deviation > tolerance {
            return Err(MatrixError::NotUnitary {
                deviation: deviation.to_f64(),
                tolerance: tolerance.to_f64(),
            });
        }
        Ok(w)
    }
}

/// What the closed-form polar decomposition and its derivative
/// (`dsl::paths::fermion_force::pullback_polar_u3`) share: V̂ = V/κ with ‖V̂‖_F = 1,
/// Q = V̂†V̂ and its eigenvalues g₀ ≥ g₁ ≥ g₂ > 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PolarCore<T: Real> {
    /// V̂ = V/κ.
    pub v: ColourMatrix<T>,
    /// κ = ‖V‖_F (W is unchanged by the scaling).
    pub scale: T,
    /// Q = V̂†V̂.
    pub q: ColourMatrix<T>,
    /// The eigenvalues of Q, largest first.
    pub eigenvalues: [T; 3],
}

impl<T: Real> ColourMatrix<T> {
    /// The scaled V, Q and Q's eigenvalues of [`ColourMatrix::polar_u3`], with its
    /// errors for a V that is not finite or is singular.
    pub(crate) fn polar_core(&self) -> Result<PolarCore<T>, MatrixError> {
        if !self.is_finite() {
            return Err(MatrixError::NonFinite);
        }
        let threshold = T::from_f64(SINGULAR_RATIO_SQRT_EPS) * T::epsilon().sqrt();
        let singular = |smallest: T, largest: T| MatrixError::Singular {
            smallest: smallest.to_f64(),
            largest: largest.to_f64(),
            threshold: threshold.to_f64(),
        };
        // Scale to ‖V‖_F = 1 (W is unchanged), dividing first by the largest element so
        // that neither ‖V‖² nor the products below overflow or underflow.
        let big = self.max_abs_component();
        if big == T::zero() {
            return Err(singular(T::zero(), T::zero()));
        }
        let v = ColourMatrix::from_fn(|i, j| self.0[i][j] / big);
        let norm = v.norm_sqr().sqrt();
        let v = v.scale(norm.recip());
        let q = v.adjoint_mul(&v);
        let [g0, g1, g2] = hermitian_eigenvalues(&q, v.determinant().norm_sqr());
        if g2.is_nan() || g2 <= threshold * g0 {
            return Err(singular(g2, g0));
        }
        Ok(PolarCore {
            v,
            scale: big * norm,
            q,
            eigenvalues: [g0, g1, g2],
        })
    }
}

/// Eigenvalues g₀ ≥ g₁ ≥ g₂ of a hermitian positive semi-definite 3×3 matrix Q from the
/// trigonometric solution of its characteristic cubic; `det` is det Q, known more
/// accurately than the cubic gives the smallest eigenvalue, which is set to det/(g₀g₁).
fn hermitian_eigenvalues<T: Real>(q: &ColourMatrix<T>, det: T) -> [T; 3] {
    let three = T::from_f64(3.0);
    let two = T::from_f64(2.0);
    let m = q.trace().re / three;
    let mut shifted = *q;
    for i in 0..NC {
        shifted.0[i][i] -= Complex::new(m, T::zero());
    }
    // p = tr(Q − m)²/6 = ‖Q − m‖²_F/6 for hermitian Q.
    let p = shifted.norm_sqr() / T::from_f64(6.0);
    if p == T::zero() {
        return [m, m, m];
    }
    let sp = p.sqrt();
    let r = (shifted.determinant().re / (two * p * sp))
        .max(-T::one())
        .min(T::one());
    let phi = r.acos() / three;
    let third_turn = T::from_f64(2.0 * std::f64::consts::FRAC_PI_3);
    let g0 = m + two * sp * phi.cos();
    let g2_cubic = m + two * sp * (phi + third_turn).cos();
    let g1 = three * m - g0 - g2_cubic;
    let g2 = if g0 * g1 > T::zero() {
        det / (g0 * g1)
    } else {
        g2_cubic
    };
    [g0, g1, g2]
}

/// The coefficients [f₀, f₁, f₂] of Q^{−1/2} = f₀ + f₁Q + f₂Q² for a hermitian Q with
/// eigenvalues `g` (all positive).
pub(crate) fn inverse_sqrt_coefficients<T: Real>(g: [T; 3]) -> [T; 3] {
    let [s0, s1, s2] = g.map(T::sqrt);
    let u = s0 + s1 + s2;
    let v = s0 * s1 + s0 * s2 + s1 * s2;
    let w = s0 * s1 * s2;
    let d = w * (u * v - w);
    let two = T::from_f64(2.0);
    [
        (u * v * v - w * (u * u + v)) / d,
        (two * u * v - u * u * u - w) / d,
        u / d,
    ]
}

/// One step of Newton's iteration for the unitary polar factor, X ↦ (X + X^{−†})/2, with
/// X^{−†} = conj(cof X)/conj(det X) from the cofactor matrix (rows of cof X: r₁ × r₂,
/// r₂ × r₀, r₀ × r₁).
fn newton_polar_step<T: Real>(x: &ColourMatrix<T>) -> ColourMatrix<T> {
    let rows = x.0.map(ColourVector);
    let cof = [
        rows[1].cross(&rows[2]),
        rows[2].cross(&rows[0]),
        rows[0].cross(&rows[1]),
    ];
    let det = rows[0].0[0] * cof[0].0[0] + rows[0].0[1] * cof[0].0[1] + rows[0].0[2] * cof[0].0[2];
    let inv_det = det.inv();
    let half = T::from_f64(0.5);
    ColourMatrix::from_fn(|i, j| (x.0[i][j] + (cof[i].0[j] * inv_det).conj()) * half)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{eps, max_diff, Lcg};

    fn real<T: Real>(x: f64) -> Complex<T> {
        Complex::new(T::from_f64(x), T::zero())
    }

    /// R diag(h) R† for a unitary R: hermitian with eigenvalues h.
    fn hermitian_with_eigenvalues<T: Real>(r: &ColourMatrix<T>, h: [f64; 3]) -> ColourMatrix<T> {
        let d = ColourMatrix::from_fn(|i, j| real(if i == j { h[i] } else { 0.0 }));
        (*r * d).mul_adjoint(r)
    }

    /// Sylvester's criterion: a hermitian matrix is positive definite iff its leading
    /// principal minors are positive.
    fn is_positive_definite<T: Real>(h: &ColourMatrix<T>) -> bool {
        let m = &h.0;
        let minor2 = (m[0][0] * m[1][1] - m[0][1] * m[1][0]).re;
        m[0][0].re > T::zero() && minor2 > T::zero() && h.determinant().re > T::zero()
    }

    /// V = U H with U ∈ U(3) and H hermitian positive: polar_u3 returns U to the
    /// documented accuracy 16ε·g₀/g₂ (g = eigenvalues of V†V = h²), W†W = 1 to a few ε,
    /// and H = W†V is hermitian positive with H² = V†V, i.e. W (V†V)^{1/2} = V.
    fn check_polar_of_product<T: Real>() {
        let mut rng = Lcg::new(21);
        let spectra: [[f64; 3]; 4] = [
            [1.0, 1.0, 1.0],
            [1.0, 0.5, 0.2],
            [2.0, 0.3, 0.3],
            [2.0, 1.5, 0.2],
        ];
        for (k, &h) in spectra.iter().cycle().take(40).enumerate() {
            let tol = 16.0 * eps::<T>() * (h[0] / h[2]).powi(2);
            let phase = Complex::new(T::from_f64((k as f64).cos()), T::from_f64((k as f64).sin()));
            let u = rng.su3::<T>().scale_complex(phase);
            let hm = hermitian_with_eigenvalues(&rng.su3::<T>(), h);
            let v = u * hm;
            let w = v.polar_u3().expect("well-conditioned V");
            assert!(max_diff(&w, &u) < tol, "{h:?}: {:e}", max_diff(&w, &u));
            assert!(w.unitarity_deviation().to_f64() < 8.0 * eps::<T>());
            let hh = w.adjoint_mul(&v);
            assert!(max_diff(&hh, &hh.adjoint()) < tol * h[0]);
            assert!(is_positive_definite(&hh));
            assert!(max_diff(&(hh * hh), &v.adjoint_mul(&v)) < tol * h[0] * h[0]);
            assert!(max_diff(&(w * hh), &v) < 4.0 * eps::<T>() * h[0]);
        }
    }

    #[test]
    fn polar_of_product_f32() {
        check_polar_of_product::<f32>();
    }

    #[test]
    fn polar_of_product_f64() {
        check_polar_of_product::<f64>();
    }

    /// W maximises Re tr(W†V) over U(3): no nearby Y = W e^{X} e^{iα} does better; U(3)
    /// matrices are fixed; W does not depend on the scale of V, even near the overflow
    /// and underflow limits of the type.
    fn check_polar_properties<T: Real>(tiny: f64, huge: f64) {
        let mut rng = Lcg::new(22);
        let tol = 16.0 * eps::<T>();
        let u = rng
            .su3::<T>()
            .scale_complex(Complex::new(T::from_f64(0.6), T::from_f64(-0.8)));
        assert!(max_diff(&u.polar_u3().unwrap(), &u) < tol);
        for _ in 0..10 {
            let v = rng.matrix::<T>();
            let w = v.polar_u3().unwrap();
            let best = w.adjoint_mul(&v).trace().re;
            for k in 0..20 {
                let alpha = T::from_f64(0.01 * (k as f64 - 10.0));
                let y = w * rng.traceless_antihermitian::<T>(0.02).exp();
                let y = y.scale_complex(Complex::new(alpha.cos(), alpha.sin()));
                assert!(y.adjoint_mul(&v).trace().re <= best);
            }
            for &s in &[tiny, huge] {
                let ws = v.scale(T::from_f64(s)).polar_u3().unwrap();
                assert!(max_diff(&ws, &w) < tol, "scale {s}");
            }
        }
    }

    #[test]
    fn polar_properties_f32() {
        check_polar_properties::<f32>(1e-30, 1e30);
    }

    #[test]
    fn polar_properties_f64() {
        check_polar_properties::<f64>(1e-300, 1e300);
    }

    /// Singular, nearly singular and non-finite inputs give errors, never NaN.
    fn check_polar_errors<T: Real>() {
        let mut rng = Lcg::new(23);
        assert!(matches!(
            ColourMatrix::<T>::zero().polar_u3(),
            Err(MatrixError::Singular { .. })
        ));
        // Rank 2: row 2 = row 0 + i row 1.
        let mut v = rng.matrix::<T>();
        for j in 0..NC {
            v.0[2][j] = v.0[0][j] + v.0[1][j] * Complex::new(T::zero(), T::one());
        }
        assert!(matches!(v.polar_u3(), Err(MatrixError::Singular { .. })));
        // Rank 1, and a rank-2 diagonal matrix.
        let a = rng.colour_vector::<T>();
        let b = rng.colour_vector::<T>();
        let outer = ColourMatrix::from_fn(|i, j| a.0[i] * b.0[j]);
        assert!(matches!(
            outer.polar_u3(),
            Err(MatrixError::Singular { .. })
        ));
        let diag = ColourMatrix::from_fn(|i, j| real::<T>(if i == j && i < 2 { 1.0 } else { 0.0 }));
        match diag.polar_u3() {
            Err(MatrixError::Singular {
                smallest,
                largest,
                threshold,
            }) => {
                assert_eq!(smallest, 0.0);
                assert!(largest > 0.0 && threshold > 0.0);
            }
            other => panic!("expected Singular, found {other:?}"),
        }
        // Condition number just beyond the limit, and just inside it.
        let r = rng.su3::<T>();
        let limit = SINGULAR_RATIO_SQRT_EPS * eps::<T>().sqrt();
        let bad = hermitian_with_eigenvalues(&r, [1.0, 1.0, (0.5 * limit).sqrt()]);
        assert!(matches!(bad.polar_u3(), Err(MatrixError::Singular { .. })));
        let ok = hermitian_with_eigenvalues(&r, [1.0, 1.0, (2.0 * limit).sqrt()]);
        let w = ok.polar_u3().expect("inside the accepted range");
        assert!(w.unitarity_deviation().to_f64() < 8.0 * eps::<T>());
        // NaN and infinity.
        let mut n = rng.matrix::<T>();
        n.0[1][2].im = T::nan();
        assert_eq!(n.polar_u3(), Err(MatrixError::NonFinite));
        n.0[1][2].im = T::infinity();
        assert_eq!(n.polar_u3(), Err(MatrixError::NonFinite));
    }

    #[test]
    fn polar_errors_f32() {
        check_polar_errors::<f32>();
    }

    #[test]
    fn polar_errors_f64() {
        check_polar_errors::<f64>();
    }

    /// The cubic's eigenvalues for known spectra: to a few ε·g₀ when well separated or
    /// exactly degenerate; a close pair of small eigenvalues is resolved only to
    /// ≈ ε·g₀²/gap (here 1e−13), which does not limit polar_u3 (its error comes from
    /// forming V†V).
    #[test]
    fn eigenvalues_of_known_spectra() {
        let mut rng = Lcg::new(24);
        let cases = [
            ([3.0, 2.0, 1.0], 16.0 * f64::EPSILON),
            ([2.0, 2.0, 0.5], 16.0 * f64::EPSILON),
            ([4.0, 1.0, 1.0], 16.0 * f64::EPSILON),
            ([1.5, 1.5, 1.5], 16.0 * f64::EPSILON),
            ([1.0, 1e-3, 1e-6], 1e-13),
        ];
        for (h, tol) in cases {
            let r = rng.su3::<f64>();
            let q = hermitian_with_eigenvalues(&r, h);
            let g = hermitian_eigenvalues(&q, h[0] * h[1] * h[2]);
            for k in 0..3 {
                assert!((g[k] - h[k]).abs() < tol * h[0], "{h:?}: {g:?}");
            }
        }
    }

    /// Q^{−1/2} coefficients for eigenvalues (1, 4, 9), worked by hand: u = 6, v = 11,
    /// w = 6, d = 360, f = (444, −90, 6)/360, so that f₀ + f₁g + f₂g² = 1/√g.
    #[test]
    fn inverse_sqrt_coefficients_by_hand() {
        let f = inverse_sqrt_coefficients([9.0f64, 4.0, 1.0]);
        let expect = [444.0 / 360.0, -90.0 / 360.0, 6.0 / 360.0];
        for k in 0..3 {
            assert!((f[k] - expect[k]).abs() < 1e-15, "{f:?}");
        }
    }
}
