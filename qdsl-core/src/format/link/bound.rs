//! A-priori round-trip error bounds of the link compressions, per link.
//!
//! Notation: V ∈ SU(3) is the reference link (times its sign); `e(m)` bounds the error of
//! a stored real part of magnitude ≤ m (storage rounding, the rounding of the reference
//! into T, its distance from SU(3)); δz = √2·e(|z|) bounds the error of a complex element
//! z; u is the unit roundoff of the compute type T. All bounds are on complex moduli,
//! hence on every real component, and keep second-order terms; the rounding of the decode
//! arithmetic in T enters with generous constant factors.

use crate::math::ColourMatrix;
use num_complex::Complex;
use std::f64::consts::SQRT_2;

/// Error bound of a stored real part of magnitude ≤ m.
pub(super) type PartError<'a> = &'a dyn Fn(f64) -> f64;

/// Π(m_k + d_k) − Π m_k: error bound of a product of factors of modulus m_k known to d_k.
fn product_error(m: &[f64], d: &[f64]) -> f64 {
    let exact: f64 = m.iter().product();
    let worst: f64 = m.iter().zip(d).map(|(m, d)| m + d).product();
    worst - exact
}

/// Error of √p̂ for |p̂ − p| ≤ d, p ≥ 0: min(d/√p, √d) (the square root is Hölder-½ at 0).
fn sqrt_error(p: f64, d: f64) -> f64 {
    if p > 0.0 {
        (d / p.sqrt()).min(d.sqrt())
    } else {
        d.sqrt()
    }
}

/// Largest e(|x|) over the real parts of `z`.
fn parts_error(e: PartError, z: &[Complex<f64>]) -> f64 {
    z.iter()
        .fold(0.0, |m, z| m.max(e(z.re.abs())).max(e(z.im.abs())))
}

/// Recon 18: the largest e(|x|) over the 18 reals.
pub(super) fn full(v: &ColourMatrix<f64>, e: PartError) -> f64 {
    parts_error(e, v.0.as_flattened())
}

/// Recon 12: rows 0 and 1 carry their own e(|x|); element k of row 2 = conj(a × b)
/// carries Σ over its two products of [(|a_i| + δa_i)(|b_j| + δb_j) − |a_i||b_j|], plus
/// 3.0001u·(|a_i||b_j| + |a_j||b_i|) for the arithmetic in T (each real part is
/// fl(X − Y) with X, Y differences of two rounded products, and |a_r b_r| + |a_i b_i| ≤
/// |a||b|), plus 2·dev for a reference that is SU(3) only to `dev`.
pub(super) fn recon12(v: &ColourMatrix<f64>, e: PartError, u: f64, dev: f64) -> f64 {
    let [a, b, _] = &v.0;
    let dz = |z: Complex<f64>| SQRT_2 * e(z.norm());
    let stored = parts_error(e, a).max(parts_error(e, b));
    [(1, 2), (2, 0), (0, 1)]
        .iter()
        .fold(stored, |worst, &(i, j)| {
            let product = |i: usize, j: usize| {
                product_error(&[a[i].norm(), b[j].norm()], &[dz(a[i]), dz(b[j])])
            };
            let size = a[i].norm() * b[j].norm() + a[j].norm() * b[i].norm();
            worst.max(product(i, j) + product(j, i) + 3.0001 * u * size + 2.0 * dev)
        })
}

/// Recon 8, following the reconstruction step by step (`d_theta` bounds the error of a
/// decoded angle; a = |v00|, g = |v20|, h = |v10|, r² = |v01|² + |v02|²):
///
/// ```text
/// D   = 2(|v01|δv01 + |v02|δv02) + δv01² + δv02² (+ 4.0001u of rounding)   error of r̂²
/// δ00 = min(D'/a, √D')(1 + 3u) + a(Δθ + 3u),  D' = D + u(a² + D)
/// δ20 = min(D₂/g, √D₂)(1 + 3u) + g(Δθ + 3u),  D₂ = D + 2hδv10 + δv10² + 3.0001u(r² + h²)
/// δN_ij = product errors of ỹ_i x̃_j and conj(v00) y_i x_j
/// δW_ij = (δN_ij + |W_ij|·D + 16u(|ỹ_i||x̃_j| + a|y_i||x_j|)) / (r² − D) · (1 + 3u) + 3u|W_ij|
/// ```
///
/// The bound is the largest of the stored parts' errors, δ00, δ20 and the δW_ij. It is
/// infinite when D ≥ r²: near |v00| = 1 (links close to diagonal, including links close
/// to the identity) the first row and column no longer determine the rest, and before
/// that the error grows like δ/r, where δ is the absolute error of the small elements
/// v01, v02 — about e·r for float storage (relative rounding, harmless) but the constant
/// 1/(2Q) for fixed point. The magnitudes a and g come from square roots, whose error
/// grows like √D when they are small (a or g ≲ √D).
pub(super) fn recon8(v: &ColourMatrix<f64>, e: PartError, d_theta: f64, u: f64) -> f64 {
    let m = |i: usize, j: usize| v.0[i][j].norm();
    let dz = |i: usize, j: usize| SQRT_2 * e(m(i, j));
    let (a, h, g) = (m(0, 0), m(1, 0), m(2, 0));
    let (x1, x2) = (m(0, 1), m(0, 2));
    let (d01, d02, d10) = (dz(0, 1), dz(0, 2), dz(1, 0));
    let r2 = x1 * x1 + x2 * x2;
    let d_stored = 2.0 * (x1 * d01 + x2 * d02) + d01 * d01 + d02 * d02;
    let d = d_stored + 4.0001 * u * (r2 + d_stored);
    if d >= r2 {
        return f64::INFINITY;
    }
    let d00 = sqrt_error(a * a, d + u * (a * a + d)) * (1.0 + 3.0 * u) + a * (d_theta + 3.0 * u);
    let d2 = d + 2.0 * h * d10 + d10 * d10 + 3.0001 * u * (r2 + h * h);
    let d20 = sqrt_error(g * g, d2) * (1.0 + 3.0 * u) + g * (d_theta + 3.0 * u);
    // ỹ = (−conj v20, conj v10), x̃ = (conj v02, −conj v01), y = (v10, v20), x = (v01, v02).
    let (yt, dyt) = ([g, h], [d20, d10]);
    let (xt, dxt) = ([x2, x1], [d02, d01]);
    let (y, dy) = ([h, g], [d10, d20]);
    let (x, dx) = ([x1, x2], [d01, d02]);
    let stored = parts_error(e, &[v.0[0][1], v.0[0][2], v.0[1][0]]);
    let mut worst = stored.max(d00).max(d20);
    for i in 0..2 {
        for j in 0..2 {
            let terms = yt[i] * xt[j] + a * y[i] * x[j];
            let dn = product_error(&[yt[i], xt[j]], &[dyt[i], dxt[j]])
                + product_error(&[a, y[i], x[j]], &[d00, dy[i], dx[j]]);
            let w = m(i + 1, j + 1);
            let dw = (dn + w * d + 16.0 * u * terms) / (r2 - d);
            worst = worst.max(dw * (1.0 + 3.0 * u) + 3.0 * u * w);
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_bounds_are_exact_worst_cases() {
        // (2 + 0.1)(3 + 0.2) − 6 = 0.72.
        assert!((product_error(&[2.0, 3.0], &[0.1, 0.2]) - 0.72).abs() < 1e-12);
        // √(p ± d) − √p: linear away from 0, √d at 0.
        assert_eq!(sqrt_error(0.0, 1e-6), 1e-3);
        assert!((sqrt_error(1.0, 1e-6) - 1e-6).abs() < 1e-18);
        assert!((2.0f64.sqrt() - 1.0f64.sqrt()) <= sqrt_error(1.0, 1.0));
    }
}
