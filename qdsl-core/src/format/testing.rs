//! Test support for the format tests: a small deterministic generator and random SU(3)
//! matrices built independently of the library's own generators.

use crate::math::ColourMatrix;
use num_complex::Complex;

/// splitmix64: a tiny, portable, deterministic generator (tests only).
pub(crate) struct TestRng(u64);

impl TestRng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [−1, 1).
    pub(crate) fn symmetric(&mut self) -> f64 {
        2.0 * self.uniform() - 1.0
    }

    /// Standard normal (Box–Muller).
    pub(crate) fn gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// ±10^x with x uniform in [lo, hi) and a random sign.
    pub(crate) fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        let sign = if self.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        sign * 10f64.powf(lo + (hi - lo) * self.uniform())
    }
}

type Row = [Complex<f64>; 3];

/// ⟨a, b⟩ = Σ a_k conj(b_k).
fn inner(a: &Row, b: &Row) -> Complex<f64> {
    (0..3).map(|k| a[k] * b[k].conj()).sum()
}

fn normalised(a: Row) -> Row {
    let n = inner(&a, &a).re.sqrt();
    a.map(|z| z / n)
}

/// SU(3) from two rows by Gram–Schmidt; the third row is conj(r0 × r1), so det = 1.
pub(crate) fn su3_from_rows(g0: Row, g1: Row) -> ColourMatrix<f64> {
    let r0 = normalised(g0);
    let p = inner(&g1, &r0);
    let r1 = normalised([0, 1, 2].map(|k| g1[k] - p * r0[k]));
    let r2 = [(1, 2), (2, 0), (0, 1)].map(|(i, j)| (r0[i] * r1[j] - r0[j] * r1[i]).conj());
    ColourMatrix([r0, r1, r2])
}

/// Haar-random SU(3): Gram–Schmidt of two rows of independent complex Gaussians.
pub(crate) fn haar_su3(rng: &mut TestRng) -> ColourMatrix<f64> {
    let mut row = || [0; 3].map(|_| Complex::new(rng.gaussian(), rng.gaussian()));
    let (g0, g1) = (row(), row());
    su3_from_rows(g0, g1)
}

/// SU(3) within O(ε) of the identity: Gram–Schmidt of e_0 + ε·g and e_1 + ε·g'.
pub(crate) fn near_identity_su3(rng: &mut TestRng, eps: f64) -> ColourMatrix<f64> {
    let mut row = |unit: usize| {
        [0, 1, 2].map(|k| {
            let one = if k == unit { 1.0 } else { 0.0 };
            Complex::new(one + eps * rng.gaussian(), eps * rng.gaussian())
        })
    };
    let (g0, g1) = (row(0), row(1));
    su3_from_rows(g0, g1)
}

/// det of a 3×3 complex matrix (cofactor expansion along row 0).
pub(crate) fn det(m: &ColourMatrix<f64>) -> Complex<f64> {
    let a = &m.0;
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_matrices_are_special_unitary() {
        let mut rng = TestRng::new(7);
        for _ in 0..100 {
            for m in [haar_su3(&mut rng), near_identity_su3(&mut rng, 1e-3)] {
                assert!(m.unitarity_deviation() < 1e-14);
                assert!((det(&m) - Complex::new(1.0, 0.0)).norm() < 1e-14);
            }
        }
        // Haar: E|u_00|² = 1/3 for the Haar measure on SU(3).
        let n = 20000;
        let mean: f64 = (0..n)
            .map(|_| haar_su3(&mut rng).0[0][0].norm_sqr())
            .sum::<f64>()
            / n as f64;
        assert!((mean - 1.0 / 3.0).abs() < 0.01, "{mean}");
    }
}
