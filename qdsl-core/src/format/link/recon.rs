//! The SU(3) compressions: which reals are stored, and how the matrix is rebuilt from them.
//!
//! Both act on V ∈ SU(3) (the link times its sign). Arithmetic of the reconstructions is
//! in the compute type T, in the order written (complex products expanded as
//! (a.re·b.re − a.im·b.im, a.re·b.im + a.im·b.re), no fused multiply-add), so that a
//! kernel compiled without FMA contraction reproduces it bit for bit — except for the
//! recon-8 sin/cos, which no two math libraries round identically.

use crate::math::ColourMatrix;
use crate::Real;
use num_complex::Complex;

/// The 12 stored reals: rows 0 and 1 of V, row-major, (re, im) per element.
pub(super) fn params_12(v: &ColourMatrix<f64>) -> [f64; 12] {
    let r = v.to_reals();
    let mut p = [0.0; 12];
    p.copy_from_slice(&r[..12]);
    p
}

/// Rebuilds V from rows 0 and 1 as documented on
/// [`Compression::Recon12`](super::Compression::Recon12).
pub(super) fn reconstruct_12<T: Real>(p: &[T]) -> ColourMatrix<T> {
    let a = [0, 1, 2].map(|k| Complex::new(p[2 * k], p[2 * k + 1]));
    let b = [0, 1, 2].map(|k| Complex::new(p[6 + 2 * k], p[6 + 2 * k + 1]));
    let c = [(1, 2), (2, 0), (0, 1)].map(|(i, j)| (a[i] * b[j] - a[j] * b[i]).conj());
    ColourMatrix([a, b, c])
}

/// The 8 stored reals of [`Compression::Recon8`](super::Compression::Recon8).
pub(super) fn params_8(v: &ColourMatrix<f64>) -> [f64; 8] {
    let m = &v.0;
    let arg = |z: Complex<f64>| z.im.atan2(z.re) / std::f64::consts::PI;
    [
        arg(m[0][0]),
        arg(m[2][0]),
        m[0][1].re,
        m[0][1].im,
        m[0][2].re,
        m[0][2].im,
        m[1][0].re,
        m[1][0].im,
    ]
}

/// Rebuilds V from the 8 reals, exactly as documented on
/// [`Compression::Recon8`](super::Compression::Recon8) (the order of operations is the
/// definition).
pub(super) fn reconstruct_8<T: Real>(p: &[T]) -> ColourMatrix<T> {
    let zero = T::zero();
    let one = T::one();
    let v01 = Complex::new(p[2], p[3]);
    let v02 = Complex::new(p[4], p[5]);
    let v10 = Complex::new(p[6], p[7]);
    let r2 = p[2] * p[2] + p[3] * p[3] + p[4] * p[4] + p[5] * p[5];
    let phase = |t: T| {
        let (s, c) = (T::PI() * t).sin_cos();
        Complex::new(c, s)
    };
    let v00 = phase(p[0]) * (one - r2).max(zero).sqrt();
    let v20 = phase(p[1]) * (r2 - (p[6] * p[6] + p[7] * p[7])).max(zero).sqrt();
    let [v11, v12, v21, v22] = if r2 == zero {
        [
            v00.conj(),
            Complex::new(zero, zero),
            Complex::new(zero, zero),
            Complex::new(one, zero),
        ]
    } else {
        let inv = one / r2;
        let a = v00.conj() * v10;
        let b = v00.conj() * v20;
        [
            -(v20.conj() * v02.conj() + a * v01) * inv,
            (v20.conj() * v01.conj() - a * v02) * inv,
            (v10.conj() * v02.conj() - b * v01) * inv,
            -(v10.conj() * v01.conj() + b * v02) * inv,
        ]
    };
    ColourMatrix([[v00, v01, v02], [v10, v11, v12], [v20, v21, v22]])
}
