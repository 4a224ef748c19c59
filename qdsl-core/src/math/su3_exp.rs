//! The exponential map su(3) → SU(3) in closed form (Cayley–Hamilton).

use super::ColourMatrix;
use crate::Real;
use num_complex::Complex;

/// Below this value of c₁ = tr Q²/2 the coefficients f_j come from the power series
/// (|eigenvalue of Q| ≤ √(4c₁/3) ≈ 0.16), above it from the closed form.
const SERIES_BELOW_C1: f64 = 0.02;

/// Below this |w| the closed form uses the series of ξ₀(w) = sin w / w (Morningstar and
/// Peardon's choice; the truncation error w⁸/9! is below 1e−16).
const XI0_SERIES_BELOW: f64 = 0.05;

impl<T: Real> ColourMatrix<T> {
    /// The matrix exponential of an element X of su(3) (anti-hermitian, traceless), an
    /// element of SU(3).
    ///
    /// Only the traceless anti-hermitian part of `self` is used (see
    /// [`ColourMatrix::traceless_antihermitian_part`]), so for X ∈ su(3) this is e^X and
    /// for any other input it is e^{TA(X)}; the result is always in SU(3).
    ///
    /// Method (Morningstar and Peardon, Phys. Rev. D 69 (2004) 054501, eqs. 23–34): with
    /// the hermitian traceless Q = −iX, Cayley–Hamilton (Q³ = c₁Q + c₀) reduces the series
    /// to
    ///
    /// e^{iQ} = f₀ 1 + f₁ Q + f₂ Q²,  c₀ = det Q = tr Q³/3,  c₁ = tr Q²/2.
    ///
    /// With c₀ᵐᵃˣ = 2(c₁/3)^{3/2}, θ = arccos(c₀/c₀ᵐᵃˣ), u = √(c₁/3) cos(θ/3),
    /// w = √c₁ sin(θ/3) and ξ₀(w) = sin w / w:
    ///
    /// * h₀ = (u² − w²) e^{2iu} + e^{−iu} [8u² cos w + 2iu(3u² + w²) ξ₀(w)],
    /// * h₁ = 2u e^{2iu} − e^{−iu} [2u cos w − i(3u² − w²) ξ₀(w)],
    /// * h₂ = e^{2iu} − e^{−iu} [cos w + 3iu ξ₀(w)],
    /// * f_j = h_j / (9u² − w²).
    ///
    /// For c₀ < 0 the symmetry f_j(−c₀) = (−1)ʲ f_j(c₀)* is used, so that θ ∈ [0, π/2]
    /// and 9u² − w² ≥ 2c₁ stays away from zero. For small arguments (c₁ < 0.02) the f_j
    /// are summed from the power series Σ (iQ)ⁿ/n! reduced by the same Cayley–Hamilton
    /// relation, Qⁿ = aₙ + bₙQ + cₙQ², Qⁿ⁺¹ = cₙc₀ + (aₙ + cₙc₁)Q + bₙQ², which is exact
    /// in the limit X → 0 (e^0 = 1) where the closed form is 0/0.
    ///
    /// Reproducibility: the series branch is pure IEEE arithmetic (+ − × ÷ √), so its
    /// result is bit-identical on every machine; the closed form calls the platform's
    /// `acos`, `sin` and `cos`, whose last bit may differ between platforms.
    ///
    /// Accuracy in f64: |e^X − exact| ≲ 1e−15 per element for ‖X‖ up to O(10) (tests
    /// compare with a 60-term Taylor series and with U e^D U† for diagonal D).
    pub fn exp(&self) -> Self {
        let minus_i = Complex::new(T::zero(), -T::one());
        let q = self.traceless_antihermitian_part().scale_complex(minus_i);
        let c1 = q.norm_sqr() * T::from_f64(0.5);
        let c0 = q.determinant().re;
        let f = if c1 < T::from_f64(SERIES_BELOW_C1) {
            series_coefficients(c0, c1)
        } else {
            closed_form_coefficients(c0, c1)
        };
        let mut e = q.scale_complex(f[1]) + (q * q).scale_complex(f[2]);
        for i in 0..3 {
            e.0[i][i] += f[0];
        }
        e
    }
}

/// The coefficients [f₀, f₁, f₂] of e^{iQ} = f₀ + f₁Q + f₂Q² from the power series, for
/// small c₁ (the series converges like (√(4c₁/3))ⁿ/n!).
fn series_coefficients<T: Real>(c0: T, c1: T) -> [Complex<T>; 3] {
    // Bound on the spectral norm of Q: ‖Q‖₂ ≤ ‖Q‖_F = √(2c₁).
    let r = (c1 + c1).sqrt();
    let (mut a, mut b, mut c) = (T::one(), T::zero(), T::zero());
    let mut term = Complex::new(T::one(), T::zero()); // iⁿ/n!
    let mut f = [
        term,
        Complex::new(T::zero(), T::zero()),
        Complex::new(T::zero(), T::zero()),
    ];
    let i = Complex::new(T::zero(), T::one());
    for n in 1..64 {
        let (a1, b1, c1n) = (c * c0, a + c * c1, b);
        (a, b, c) = (a1, b1, c1n);
        term = term * i / T::from_f64(n as f64);
        f[0] += term * a;
        f[1] += term * b;
        f[2] += term * c;
        // |iⁿ/n!| = |Re| + |Im| (one of them is zero): pure arithmetic, no hypot.
        let size = (term.re.abs() + term.im.abs()) * (a.abs() + b.abs() * r + c.abs() * r * r);
        if size < T::epsilon() * T::from_f64(1e-3) {
            break;
        }
    }
    f
}

/// The coefficients [f₀, f₁, f₂] from Morningstar and Peardon's closed form (c₁ > 0).
fn closed_form_coefficients<T: Real>(c0: T, c1: T) -> [Complex<T>; 3] {
    let r = T::from_f64;
    let negative = c0 < T::zero();
    let c0 = c0.abs();
    let c0_max = r(2.0) * (c1 / r(3.0)).powf(r(1.5));
    let theta = (c0 / c0_max).min(T::one()).acos();
    let u = (c1 / r(3.0)).sqrt() * (theta / r(3.0)).cos();
    let w = c1.sqrt() * (theta / r(3.0)).sin();
    let (u2, w2) = (u * u, w * w);
    let xi0 = if w.abs() < r(XI0_SERIES_BELOW) {
        T::one() - w2 / r(6.0) * (T::one() - w2 / r(20.0) * (T::one() - w2 / r(42.0)))
    } else {
        w.sin() / w
    };
    let cos_w = w.cos();
    let e2iu = Complex::new((u + u).cos(), (u + u).sin());
    let emiu = Complex::new(u.cos(), -u.sin());
    let c = |re: T, im: T| Complex::new(re, im);
    let h0 =
        e2iu * (u2 - w2) + emiu * c(r(8.0) * u2 * cos_w, r(2.0) * u * (r(3.0) * u2 + w2) * xi0);
    let h1 = e2iu * (r(2.0) * u) - emiu * c(r(2.0) * u * cos_w, -(r(3.0) * u2 - w2) * xi0);
    let h2 = e2iu - emiu * c(cos_w, r(3.0) * u * xi0);
    let den = r(9.0) * u2 - w2;
    let mut f = [h0 / den, h1 / den, h2 / den];
    if negative {
        f = [f[0].conj(), -f[1].conj(), f[2].conj()];
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{eps, max_diff, Lcg};

    /// e^X by its Taylor series Σ Xⁿ/n! in f64 (60 terms), the independent reference.
    fn taylor(x: &ColourMatrix<f64>) -> ColourMatrix<f64> {
        let mut sum = ColourMatrix::identity();
        let mut term = ColourMatrix::identity();
        for n in 1..60 {
            term = (term * *x).scale(1.0 / n as f64);
            sum += term;
        }
        sum
    }

    fn is_su3<T: Real>(u: &ColourMatrix<T>, tol: f64) {
        assert!(u.unitarity_deviation().to_f64() < tol, "not unitary: {u:?}");
        let d = u.determinant();
        assert!(
            (d - Complex::new(T::one(), T::zero())).norm().to_f64() < tol,
            "det {d:?}"
        );
    }

    /// e^X ∈ SU(3), e^X e^{−X} = 1, and e^X matches the Taylor series, over a range of
    /// norms from 1e−12 to 8 (both closed-form branches c₀ ≷ 0 and the series branch).
    fn check_exp_random<T: Real>(tol: f64) {
        let mut rng = Lcg::new(4);
        for &norm in &[1e-12, 1e-6, 1e-3, 0.05, 0.19, 0.21, 0.5, 1.0, 2.0, 4.0, 8.0] {
            for _ in 0..10 {
                let x64 = rng.traceless_antihermitian::<f64>(norm);
                let x = x64.cast::<T>();
                let e = x.exp();
                is_su3(&e, tol);
                assert!(max_diff(&(e * (-x).exp()), &ColourMatrix::identity()) < tol);
                // Compare with the Taylor series of the rounded input.
                let reference = taylor(&x.cast::<f64>());
                let scale = norm.max(1.0);
                assert!(
                    max_diff(&e.cast::<f64>(), &reference) < tol * scale,
                    "norm {norm}: {:e}",
                    max_diff(&e.cast::<f64>(), &reference)
                );
            }
        }
    }

    #[test]
    fn exp_random_f32() {
        check_exp_random::<f32>(4e-6);
    }

    #[test]
    fn exp_random_f64() {
        check_exp_random::<f64>(1e-14);
    }

    /// exp of i·diag(a, b, −a−b) is diag(e^{ia}, e^{ib}, e^{−i(a+b)}), including
    /// degenerate eigenvalues (θ = 0) and both signs of det Q; and the covariance
    /// e^{V D V†} = V e^D V† for unitary V gives non-diagonal exact references.
    fn check_exp_diagonal<T: Real>(tol: f64) {
        let mut rng = Lcg::new(5);
        let cases = [
            (0.3, -0.7),
            (1.0, 1.0),
            (-1.0, -1.0),
            (0.5, 0.0),
            (2.5, -0.4),
            (3.0, 3.1),
            (1e-9, 2e-9),
            (0.01, -0.02),
            (0.0, 0.0),
        ];
        for &(a, b) in &cases {
            let phases = [a, b, -a - b];
            let d = ColourMatrix::<T>::from_fn(|i, j| {
                let v = if i == j { phases[i] } else { 0.0 };
                Complex::new(T::zero(), T::from_f64(v))
            });
            let expect = ColourMatrix::<T>::from_fn(|i, j| {
                if i == j {
                    Complex::new(T::from_f64(phases[i].cos()), T::from_f64(phases[i].sin()))
                } else {
                    Complex::new(T::zero(), T::zero())
                }
            });
            assert!(
                max_diff(&d.exp(), &expect) < tol,
                "({a}, {b}): {:?}",
                d.exp()
            );
            let v = rng.su3::<T>();
            let rotated = (v * d).mul_adjoint(&v);
            let expect_rotated = (v * expect).mul_adjoint(&v);
            assert!(
                max_diff(&rotated.exp(), &expect_rotated) < 4.0 * tol,
                "({a}, {b})"
            );
        }
        assert_eq!(ColourMatrix::<T>::zero().exp(), ColourMatrix::identity());
    }

    #[test]
    fn exp_diagonal_f32() {
        check_exp_diagonal::<f32>(2e-6);
    }

    #[test]
    fn exp_diagonal_f64() {
        check_exp_diagonal::<f64>(4e-15);
    }

    /// For tiny X, e^X = 1 + X + X²/2 to the last bit of the leading terms.
    fn check_exp_small<T: Real>() {
        let mut rng = Lcg::new(6);
        let x = rng.traceless_antihermitian::<T>(1e-4);
        let mut expect = x + (x * x).scale(T::from_f64(0.5));
        for i in 0..3 {
            expect.0[i][i] += Complex::new(T::one(), T::zero());
        }
        // The next term, X³/6, is ≈ 2e−13.
        assert!(max_diff(&x.exp(), &expect) < 4.0 * eps::<T>() + 1e-12);
    }

    #[test]
    fn exp_small_f32() {
        check_exp_small::<f32>();
    }

    #[test]
    fn exp_small_f64() {
        check_exp_small::<f64>();
    }

    /// The two ways of computing f_j agree where both are accurate (c₁ near the switch).
    #[test]
    fn series_and_closed_form_agree() {
        let mut rng = Lcg::new(7);
        for &c1 in &[1e-6, 0.005, 0.02, 0.1] {
            for _ in 0..10 {
                let x = rng.traceless_antihermitian::<f64>((2.0f64 * c1).sqrt());
                let q = x.scale_complex(Complex::new(0.0, -1.0));
                let c0 = q.determinant().re;
                let c1 = q.norm_sqr() * 0.5;
                let s = series_coefficients(c0, c1);
                let f = closed_form_coefficients(c0, c1);
                // Weighted by the size of the term each coefficient multiplies:
                // ‖Q‖ ~ √c₁, ‖Q²‖ ~ c₁.
                let weights = [1.0, c1.sqrt(), c1];
                for j in 0..3 {
                    let d = (s[j] - f[j]).norm() * weights[j];
                    assert!(d < 2e-15, "c1 {c1} f{j}: {s:?} {f:?}");
                }
            }
        }
    }
}
