//! Random SU(3) matrices drawn from a [`RandomStream`]: Haar-distributed ("hot") and
//! near the identity (weak field).
//!
//! Matrices are built in `f64` whatever precision the field they go into; a field in
//! `f32` is the `f64` field rounded, so the two precisions describe the same
//! configuration.

use super::rng::RandomStream;
use crate::math::{ColourMatrix, ColourVector};
use num_complex::Complex;

/// Smallest accepted squared norm of a Gram–Schmidt remainder, relative to the squared
/// norm of the Gaussian column it came from. Smaller remainders (probability ~10⁻²⁴)
/// are redrawn from the same stream, so the result stays deterministic.
const MIN_RELATIVE_REMAINDER: f64 = 1e-12;

/// A Haar-distributed SU(3) matrix.
///
/// Construction (Mezzadri, "How to generate random matrices from the classical compact
/// groups", Notices AMS 54 (2007) 592):
///
/// 1. Draw two columns z₀, z₁ ∈ ℂ³ of independent complex Gaussians
///    ([`RandomStream::gaussian_complex`], z₀ first, colour index fastest). The matrix
///    Z = (z₀ z₁ z₂) of a third such column has density ∝ exp(−tr Z†Z/2), invariant
///    under Z → VZ for every V ∈ U(3).
/// 2. Gram–Schmidt on the columns, i.e. the QR decomposition Z = QR with the diagonal
///    of R **real and positive**: q₀ = z₀/|z₀|, q₁ = w/|w| with w = z₁ − q₀(q₀†z₁)
///    (projected twice, so q₀†q₁ = 0 to rounding). That normalisation makes the
///    decomposition unique, hence equivariant (VZ = (VQ)R), so Q is Haar-distributed on
///    U(3). This is the "phase fix": a library QR (Householder, LAPACK) returns R with
///    arbitrary phases on its diagonal, and its Q is *not* Haar-distributed until
///    multiplied by diag(r_jj/|r_jj|).
/// 3. Fix the determinant with the third column q₂ = (q₀ × q₁)*, which is the unit
///    vector orthogonal to q₀, q₁ with det(q₀ q₁ q₂) = 1. In terms of the U(3) matrix Q,
///    this is Q' = Q diag(1, 1, (det Q)*). The map Q → Q' commutes with Q → VQ for
///    V ∈ SU(3) (det VQ = det Q), so Q' has a left-SU(3)-invariant distribution on SU(3):
///    the Haar measure, which is unique. (Only two Gaussian columns are drawn, since the
///    third column of Q is fixed by the first two up to the phase that step 3 replaces.)
///
/// Columns with a tiny Gram–Schmidt remainder (probability ~10⁻²⁴) are redrawn.
pub fn haar_su3(stream: &mut RandomStream) -> ColourMatrix<f64> {
    let gaussian_column = |s: &mut RandomStream| ColourVector::from_fn(|_| s.gaussian_complex());
    let q0 = loop {
        let z0 = gaussian_column(stream);
        let n2 = z0.norm_sqr();
        if n2 > MIN_RELATIVE_REMAINDER {
            break z0.scale(n2.sqrt().recip());
        }
    };
    let q1 = loop {
        let z1 = gaussian_column(stream);
        let mut w = z1 - q0.scale_complex(q0.dot(&z1));
        w -= q0.scale_complex(q0.dot(&w));
        let n2 = w.norm_sqr();
        if n2 > MIN_RELATIVE_REMAINDER * z1.norm_sqr() {
            break w.scale(n2.sqrt().recip());
        }
    };
    let q2 = q0.cross(&q1).conj();
    ColourMatrix::from_fn(|i, j| [q0, q1, q2][j].0[i])
}

/// A random traceless hermitian matrix H = Σ_{a=1}^{8} h_a λ_a/2 with λ_a the Gell-Mann
/// matrices and h_a independent standard normal numbers drawn in the order a = 1, …, 8
/// (four Box–Muller pairs). In components:
///
/// ```text
///     ⎛ h₃/2 + h₈/(2√3)   (h₁ − i h₂)/2      (h₄ − i h₅)/2 ⎞
/// H = ⎜ (h₁ + i h₂)/2     −h₃/2 + h₈/(2√3)   (h₆ − i h₇)/2 ⎟
///     ⎝ (h₄ + i h₅)/2     (h₆ + i h₇)/2      −h₈/√3        ⎠
/// ```
///
/// Since tr(λ_a λ_b) = 2δ_ab, ⟨tr H²⟩ = Σ_a ⟨h_a²⟩/2 = 4.
pub fn gaussian_su3_algebra(stream: &mut RandomStream) -> ColourMatrix<f64> {
    let mut h = [0.0; 9];
    for a in (1..9).step_by(2) {
        (h[a], h[a + 1]) = stream.gaussian_pair();
    }
    let c = |re: f64, im: f64| Complex::new(re / 2.0, im / 2.0);
    let r3 = 3f64.sqrt();
    let mut m = ColourMatrix::zero();
    m.0[0][0] = c(h[3] + h[8] / r3, 0.0);
    m.0[1][1] = c(-h[3] + h[8] / r3, 0.0);
    m.0[2][2] = c(-2.0 * h[8] / r3, 0.0);
    m.0[0][1] = c(h[1], -h[2]);
    m.0[0][2] = c(h[4], -h[5]);
    m.0[1][2] = c(h[6], -h[7]);
    for (i, j) in [(0, 1), (0, 2), (1, 2)] {
        m.0[j][i] = m.0[i][j].conj();
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::rng::StreamDomain;

    fn stream(i: u64) -> RandomStream {
        RandomStream::new(2718, StreamDomain::User(1), i)
    }

    #[test]
    fn haar_matrices_are_special_unitary() {
        for i in 0..2000 {
            let u = haar_su3(&mut stream(i));
            assert!(u.unitarity_deviation() < 1e-14, "{i}");
            assert!(
                (u.determinant() - Complex::new(1.0, 0.0)).norm() < 1e-14,
                "{i}"
            );
        }
    }

    /// Moments of the Haar measure on SU(3), from the representation theory of the
    /// group (each integral counts the singlets in a tensor product):
    ///
    /// * ∫ tr U dU = 0, ∫ |tr U|² dU = 1 (3 ⊗ 3̄ holds one singlet);
    /// * ∫ (tr U)³ dU = 1 (3 ⊗ 3 ⊗ 3 holds one singlet, ε_abc); on U(3), and for a
    ///   U(3)-Haar matrix whose determinant is not fixed, it is 0;
    /// * a column of U is uniform on the unit sphere of ℂ³: E|U_00|² = 1/3 and
    ///   E|U_00|⁴ = 2/(N(N+1)) = 1/6.
    ///
    /// A sampler that is not Haar on SU(3) (no determinant fix, or concentrated near the
    /// identity) fails these bounds (each is several standard errors wide, no more).
    #[test]
    fn haar_moments_match_representation_theory() {
        let n = 40_000;
        let (mut tr, mut tr2, mut tr3, mut a2, mut a4) = (
            Complex::new(0.0, 0.0),
            0.0,
            Complex::new(0.0, 0.0),
            0.0,
            0.0,
        );
        for i in 0..n {
            let u = haar_su3(&mut stream(i));
            let t = u.trace();
            tr += t;
            tr2 += t.norm_sqr();
            tr3 += t * t * t;
            let e = u.0[1][2].norm_sqr();
            a2 += e;
            a4 += e * e;
        }
        let n = n as f64;
        // Standard errors: tr ~ 0.005, |tr|² ~ 0.005, (tr)³ ~ 0.013, a2 ~ 0.0012, a4 ~ 0.001.
        assert!((tr / n).norm() < 0.025, "{}", tr / n);
        assert!((tr2 / n - 1.0).abs() < 0.025, "{}", tr2 / n);
        assert!((tr3 / n - 1.0).norm() < 0.07, "{}", tr3 / n);
        assert!((a2 / n - 1.0 / 3.0).abs() < 0.006, "{}", a2 / n);
        assert!((a4 / n - 1.0 / 6.0).abs() < 0.005, "{}", a4 / n);
    }

    /// H is hermitian and traceless, its element H₀₁ is (h₁ − i h₂)/2 with (h₁, h₂) the
    /// stream's first Gaussian pair, and ⟨tr H²⟩ = 4 (standard error 0.014 here).
    #[test]
    fn algebra_elements_are_traceless_hermitian_with_unit_components() {
        let n = 20_000;
        let mut tr_h2 = 0.0;
        for i in 0..n {
            let mut s = stream(i);
            let h = gaussian_su3_algebra(&mut s);
            assert!((h - h.adjoint()).norm_sqr() == 0.0);
            assert!(h.trace().norm() < 1e-15);
            // The same draws by hand: h₁, h₂ first; H₀₁ = (h₁ − i h₂)/2.
            let mut s2 = stream(i);
            let (h1, h2) = s2.gaussian_pair();
            assert_eq!(h.0[0][1], Complex::new(h1 / 2.0, -h2 / 2.0));
            tr_h2 += (h * h).trace().re;
        }
        assert!((tr_h2 / n as f64 - 4.0).abs() < 0.1, "{}", tr_h2 / n as f64);
    }
}
