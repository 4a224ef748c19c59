//! Projection of a general 3×3 matrix to SU(3) by maximising Re tr(W†V).

use super::{ColourMatrix, MatrixError};
use crate::Real;
use num_complex::Complex;

/// The three SU(2) subgroups (index pairs) of one Cabibbo–Marinari sweep.
const SUBGROUPS: [(usize, usize); 3] = [(0, 1), (1, 2), (0, 2)];

/// Upper limit on Cabibbo–Marinari sweeps.
const MAX_SWEEPS: usize = 200;

/// A sweep whose SU(2) rotations all have |sin(angle)| below this many ε ends the
/// iteration.
const CONVERGED_ANGLE_EPS: f64 = 16.0;

impl<T: Real> ColourMatrix<T> {
    /// The SU(3) matrix W that maximises Re tr(W†V) for V = `self` (the projection used
    /// by cooling, gauge fixing and smearing codes; HISQ uses [`ColourMatrix::polar_u3`]
    /// instead).
    ///
    /// # Method
    ///
    /// 1. Start from the U(3) maximiser, the polar factor W₀ = V(V†V)^{−1/2}, divided by
    ///    the cube root of its determinant phase, det W₀ = e^{iφ}: W = W₀ e^{−i(φ+2πk)/3},
    ///    with k ∈ {0, 1, 2} chosen to maximise Re tr(W†V). (If V is singular, start
    ///    from 1.)
    /// 2. Cabibbo–Marinari sweeps: for each SU(2) subgroup (p, q) ∈ {(0,1), (1,2), (0,2)}
    ///    maximise exactly over h in that subgroup. With A = W†V and M its (p, q) block,
    ///    Re tr(h†A) = a·m + const for h = a₀ + i(a₁σ₁ + a₂σ₂ + a₃σ₃), |a| = 1, where
    ///    m = (Re(M₀₀ + M₁₁), Im(M₀₁ + M₁₀), Re(M₀₁ − M₁₀), Im(M₀₀ − M₁₁)); so
    ///    a = m/|m| and W ← W h, A ← h†A. Re tr(W†V) never decreases.
    /// 3. Stop when a whole sweep rotates by less than 16ε (|a₁,₂,₃| < 16ε), or after 200
    ///    sweeps; finally [`ColourMatrix::reunitarize`] removes the rounding drift. Near
    ///    SU(3) this takes 0–15 sweeps; general matrices take ≈ 10–25 in f64 (the
    ///    coordinate ascent converges linearly; rare ill-conditioned ones reach the cap,
    ///    still at a maximum to the accuracy below).
    ///
    /// # Accuracy
    ///
    /// The result is in SU(3) to a few ε and is a stationary point of Re tr(W†V) on
    /// SU(3), i.e. the traceless anti-hermitian part of W†V vanishes (to ≈ 100ε·‖V‖ in
    /// tests); the coordinate ascent reaches a local maximum, which the polar start puts
    /// in the basin of the global one for every V tested (and provably for V near
    /// SU(3)·ℝ₊). An SU(3) matrix is returned unchanged (to rounding), and so is a
    /// positive multiple of one.
    ///
    /// # Errors
    ///
    /// [`MatrixError::NonFinite`] if V has a NaN or infinite element.
    pub fn project_su3(&self) -> Result<Self, MatrixError> {
        if !self.is_finite() {
            return Err(MatrixError::NonFinite);
        }
        let mut w = match self.polar_u3() {
            Ok(w0) => remove_determinant_phase(&w0, self),
            Err(_) => Self::identity(),
        };
        let mut a = w.adjoint_mul(self);
        let converged = T::from_f64(CONVERGED_ANGLE_EPS) * T::epsilon();
        for _ in 0..MAX_SWEEPS {
            let mut largest_angle = T::zero();
            for &(p, q) in &SUBGROUPS {
                if let Some((h, angle)) = best_su2(&a, p, q) {
                    apply_su2(&mut w, &mut a, p, q, &h);
                    largest_angle = largest_angle.max(angle);
                }
            }
            if largest_angle < converged {
                break;
            }
        }
        Ok(w.reunitarize())
    }
}

/// W₀ e^{−i(φ+2πk)/3} for det W₀ = |det| e^{iφ}, with k maximising Re tr(W†V).
fn remove_determinant_phase<T: Real>(w0: &ColourMatrix<T>, v: &ColourMatrix<T>) -> ColourMatrix<T> {
    let phi = w0.determinant().arg().to_f64();
    let t = w0.adjoint_mul(v).trace();
    let mut best = (T::neg_infinity(), Complex::new(T::one(), T::zero()));
    for k in 0..3 {
        let theta = (phi + 2.0 * std::f64::consts::PI * k as f64) / 3.0;
        // Re tr((W₀ e^{−iθ})† V) = Re(e^{iθ} tr(W₀†V)).
        let z = Complex::new(T::from_f64(theta.cos()), T::from_f64(theta.sin()));
        let value = (z * t).re;
        if value > best.0 {
            best = (value, z);
        }
    }
    w0.scale_complex(best.1.conj())
}

/// The SU(2) matrix h in subgroup (p, q) maximising Re tr(h†A), as its 2×2 block
/// [[a₀ + ia₃, a₂ + ia₁], [−a₂ + ia₁, a₀ − ia₃]], and the rotation size |(a₁, a₂, a₃)|;
/// `None` if the block has no SU(2) component (m = 0).
fn best_su2<T: Real>(a: &ColourMatrix<T>, p: usize, q: usize) -> Option<([[Complex<T>; 2]; 2], T)> {
    let (m00, m01, m10, m11) = (a.0[p][p], a.0[p][q], a.0[q][p], a.0[q][q]);
    let m = [
        (m00 + m11).re,
        (m01 + m10).im,
        (m01 - m10).re,
        (m00 - m11).im,
    ];
    let norm = m.iter().map(|x| *x * *x).sum::<T>().sqrt();
    if norm <= T::zero() || !norm.is_finite() {
        return None;
    }
    let [a0, a1, a2, a3] = m.map(|x| x / norm);
    let h = [
        [Complex::new(a0, a3), Complex::new(a2, a1)],
        [Complex::new(-a2, a1), Complex::new(a0, -a3)],
    ];
    Some((h, (a1 * a1 + a2 * a2 + a3 * a3).sqrt()))
}

/// W ← W h and A ← h† A for h in subgroup (p, q) given by its 2×2 block.
fn apply_su2<T: Real>(
    w: &mut ColourMatrix<T>,
    a: &mut ColourMatrix<T>,
    p: usize,
    q: usize,
    h: &[[Complex<T>; 2]; 2],
) {
    for row in w.0.iter_mut() {
        let (x, y) = (row[p], row[q]);
        row[p] = x * h[0][0] + y * h[1][0];
        row[q] = x * h[0][1] + y * h[1][1];
    }
    for j in 0..3 {
        let (x, y) = (a.0[p][j], a.0[q][j]);
        a.0[p][j] = h[0][0].conj() * x + h[1][0].conj() * y;
        a.0[q][j] = h[0][1].conj() * x + h[1][1].conj() * y;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::test_support::{eps, max_diff, Lcg};

    fn is_su3<T: Real>(w: &ColourMatrix<T>) {
        let tol = 16.0 * eps::<T>();
        assert!(w.unitarity_deviation().to_f64() < tol);
        assert!(
            (w.determinant() - Complex::new(T::one(), T::zero()))
                .norm()
                .to_f64()
                < tol
        );
    }

    /// The maximiser is a stationary point, TA(W†V) = 0, and no nearby SU(3) matrix
    /// W e^X (X ∈ su(3), ‖X‖ = 1e−3 … 1e−1) gives a larger Re tr(W†V).
    fn assert_maximum<T: Real>(w: &ColourMatrix<T>, v: &ColourMatrix<T>, rng: &mut Lcg) {
        is_su3(w);
        let scale = v.norm_sqr().sqrt().to_f64();
        let ta = w.adjoint_mul(v).traceless_antihermitian_part();
        assert!(
            ta.max_abs_component().to_f64() < 128.0 * eps::<T>() * scale,
            "{ta:?}"
        );
        let best = w.re_trace_mul(&v.adjoint());
        for k in 0..30 {
            let y = *w
                * rng
                    .traceless_antihermitian::<T>(1e-3 * 10f64.powi(k % 3))
                    .exp();
            assert!(y.re_trace_mul(&v.adjoint()) <= best + T::from_f64(8.0 * eps::<T>() * scale));
        }
    }

    /// SU(3) matrices and their positive multiples are fixed points; so is U for V = e^{iα}U
    /// with |α| < π/3 (the nearest centre element is 1).
    fn check_fixed_points<T: Real>() {
        let mut rng = Lcg::new(31);
        let tol = 32.0 * eps::<T>();
        for _ in 0..10 {
            let u = rng.su3::<T>();
            for &c in &[1.0, 0.3, 7.0] {
                let w = u.scale(T::from_f64(c)).project_su3().unwrap();
                assert!(max_diff(&w, &u) < tol, "c = {c}");
            }
            for &alpha in &[0.1, -0.7, 1.0] {
                let z = Complex::new(T::from_f64(f64::cos(alpha)), T::from_f64(f64::sin(alpha)));
                let w = u.scale_complex(z).project_su3().unwrap();
                assert!(max_diff(&w, &u) < tol, "alpha = {alpha}");
            }
        }
    }

    #[test]
    fn fixed_points_f32() {
        check_fixed_points::<f32>();
    }

    #[test]
    fn fixed_points_f64() {
        check_fixed_points::<f64>();
    }

    /// Hand-solved cases: for a positive diagonal V the maximiser is 1 (|W_ii| ≤ 1 for
    /// unitary W); for V = e^{1.5i}·1 it is the centre element e^{2πi/3}·1 (the cube
    /// root of unity nearest to e^{1.5i}); V = 0 gives 1.
    fn check_hand_solved<T: Real>() {
        let tol = 32.0 * eps::<T>();
        let d = ColourMatrix::<T>::from_fn(|i, j| {
            Complex::new(
                T::from_f64(if i == j { [3.0, 2.0, 0.5][i] } else { 0.0 }),
                T::zero(),
            )
        });
        assert!(max_diff(&d.project_su3().unwrap(), &ColourMatrix::identity()) < tol);
        let v = ColourMatrix::<T>::scalar(Complex::new(
            T::from_f64(1.5f64.cos()),
            T::from_f64(1.5f64.sin()),
        ));
        let third = 2.0 * std::f64::consts::FRAC_PI_3;
        let expect = ColourMatrix::scalar(Complex::new(
            T::from_f64(third.cos()),
            T::from_f64(third.sin()),
        ));
        assert!(max_diff(&v.project_su3().unwrap(), &expect) < tol);
        assert_eq!(
            ColourMatrix::<T>::zero().project_su3().unwrap(),
            ColourMatrix::identity()
        );
    }

    #[test]
    fn hand_solved_f32() {
        check_hand_solved::<f32>();
    }

    #[test]
    fn hand_solved_f64() {
        check_hand_solved::<f64>();
    }

    /// A perturbed SU(3) matrix projects close to the original (distance of the order of
    /// the perturbation), to a maximum; general matrices, and singular ones, project to
    /// a maximum that beats both starting guesses (polar with phase removed, and
    /// Gram–Schmidt); NaN input is an error.
    fn check_perturbed_and_general<T: Real>() {
        let mut rng = Lcg::new(32);
        for &delta in &[1e-6, 1e-3, 0.1] {
            for _ in 0..10 {
                let u = rng.su3::<T>();
                let v = u + rng.matrix::<T>().scale(T::from_f64(delta));
                let w = v.project_su3().unwrap();
                assert!(
                    max_diff(&w, &u) < 4.0 * delta + 32.0 * eps::<T>(),
                    "delta {delta}"
                );
                assert_maximum(&w, &v, &mut rng);
            }
        }
        for k in 0..30 {
            let mut v = rng.matrix::<T>();
            if k % 5 == 0 {
                // Rank 2.
                for j in 0..3 {
                    v.0[2][j] = v.0[0][j] - v.0[1][j];
                }
            }
            let w = v.project_su3().unwrap();
            assert_maximum(&w, &v, &mut rng);
            let f = w.re_trace_mul(&v.adjoint());
            let slack = T::from_f64(16.0 * eps::<T>());
            assert!(f + slack >= v.reunitarize().re_trace_mul(&v.adjoint()));
            if let Ok(w0) = v.polar_u3() {
                let start = remove_determinant_phase(&w0, &v);
                assert!(f + slack >= start.re_trace_mul(&v.adjoint()));
            }
        }
        let mut bad = rng.matrix::<T>();
        bad.0[0][0].re = T::nan();
        assert_eq!(bad.project_su3(), Err(MatrixError::NonFinite));
    }

    #[test]
    fn perturbed_and_general_f32() {
        check_perturbed_and_general::<f32>();
    }

    #[test]
    fn perturbed_and_general_f64() {
        check_perturbed_and_general::<f64>();
    }
}
