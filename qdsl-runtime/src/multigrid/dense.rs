//! Dense complex matrices as row-major slices (entry (r, c) of an m × n matrix at
//! r · n + c): the products and the inversion the coarse construction is made of,
//! written as the plain loops of their definitions, in f64.

use qdsl_core::Complex;

/// A complex number in f64.
pub type C = Complex<f64>;

/// The complex zero.
pub const ZERO: C = C::new(0.0, 0.0);

/// c += a · b for a (m × k), b (k × n), c (m × n): c_rj += Σ_l a_rl b_lj.
pub fn mul_add(c: &mut [C], a: &[C], b: &[C], (m, k, n): (usize, usize, usize)) {
    debug_assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    for r in 0..m {
        let row = &mut c[r * n..(r + 1) * n];
        for (l, &arl) in a[r * k..(r + 1) * k].iter().enumerate() {
            for (crj, blj) in row.iter_mut().zip(&b[l * n..(l + 1) * n]) {
                *crj += arl * blj;
            }
        }
    }
}

/// c += s · a† b for a (k × m), b (k × n), c (m × n): c_rj += s Σ_l conj(a_lr) b_lj.
pub fn adjoint_mul_add(c: &mut [C], a: &[C], b: &[C], (m, k, n): (usize, usize, usize), s: f64) {
    debug_assert!(a.len() == k * m && b.len() == k * n && c.len() == m * n);
    for l in 0..k {
        let brow = &b[l * n..(l + 1) * n];
        for r in 0..m {
            let alr = a[l * m + r].conj() * s;
            for (crj, blj) in c[r * n..(r + 1) * n].iter_mut().zip(brow) {
                *crj += alr * blj;
            }
        }
    }
}

/// The adjoint of an m × n matrix (n × m).
pub fn adjoint(a: &[C], (m, n): (usize, usize)) -> Vec<C> {
    let mut t = vec![ZERO; m * n];
    for r in 0..m {
        for c in 0..n {
            t[c * m + r] = a[r * n + c].conj();
        }
    }
    t
}

/// The inverse of an n × n matrix by Gauss–Jordan elimination with partial pivoting,
/// or `Err(column)`: the first column whose best pivot is below 1e-14 times the
/// largest entry (the matrix is singular to working precision).
pub fn invert(a: &[C], n: usize) -> Result<Vec<C>, usize> {
    let scale = a.iter().map(|z| z.norm()).fold(0.0f64, f64::max);
    let mut m = a.to_vec();
    let mut inv = vec![ZERO; n * n];
    for i in 0..n {
        inv[i * n + i] = C::new(1.0, 0.0);
    }
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| m[p * n + col].norm().total_cmp(&m[q * n + col].norm()))
            .unwrap_or(col);
        if m[pivot * n + col].norm() <= 1e-14 * scale || m[pivot * n + col].is_nan() {
            return Err(col);
        }
        if pivot != col {
            for c in 0..n {
                m.swap(pivot * n + c, col * n + c);
                inv.swap(pivot * n + c, col * n + c);
            }
        }
        let d = C::new(1.0, 0.0) / m[col * n + col];
        for c in 0..n {
            m[col * n + c] *= d;
            inv[col * n + c] *= d;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = m[r * n + col];
            if f == ZERO {
                continue;
            }
            for c in 0..n {
                let (mc, ic) = (m[col * n + c], inv[col * n + c]);
                m[r * n + c] -= f * mc;
                inv[r * n + c] -= f * ic;
            }
        }
    }
    Ok(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed, well-conditioned n × n matrix with complex entries (diagonally
    /// dominant), from a simple recurrence.
    fn sample(n: usize, seed: f64) -> Vec<C> {
        (0..n * n)
            .map(|i| {
                let (r, c) = (i / n, i % n);
                let t = seed + i as f64;
                C::new((0.7 * t).sin(), (1.3 * t).cos())
                    + if r == c { C::new(n as f64, 0.0) } else { ZERO }
            })
            .collect()
    }

    /// A · A⁻¹ = 1 to rounding, for a matrix that needs row swaps (zero leading entry).
    #[test]
    fn inverse_times_matrix_is_the_identity() {
        let n = 7;
        let mut a = sample(n, 0.3);
        a[0] = ZERO;
        let inv = invert(&a, n).unwrap();
        let mut p = vec![ZERO; n * n];
        mul_add(&mut p, &a, &inv, (n, n, n));
        for r in 0..n {
            for c in 0..n {
                let want = if r == c { 1.0 } else { 0.0 };
                assert!(
                    (p[r * n + c] - C::new(want, 0.0)).norm() < 1e-13,
                    "({r},{c}) {}",
                    p[r * n + c]
                );
            }
        }
    }

    /// A rank-deficient matrix (two equal rows) is refused, naming the column.
    #[test]
    fn singular_matrix_is_refused() {
        let n = 4;
        let mut a = sample(n, 1.0);
        for c in 0..n {
            a[n + c] = a[c];
        }
        assert!(invert(&a, n).is_err());
    }

    /// a† b against the explicit adjoint times b.
    #[test]
    fn adjoint_product_equals_the_product_with_the_adjoint() {
        let (m, k, n) = (3, 5, 4);
        let a = sample(k * m, 2.0)[..k * m].to_vec();
        let b = sample(k * n, 3.0)[..k * n].to_vec();
        let mut c1 = vec![ZERO; m * n];
        adjoint_mul_add(&mut c1, &a, &b, (m, k, n), -2.0);
        let mut c2 = vec![ZERO; m * n];
        mul_add(&mut c2, &adjoint(&a, (k, m)), &b, (m, k, n));
        for (x, y) in c1.iter().zip(&c2) {
            assert!((x + y * 2.0).norm() < 1e-13);
        }
    }
}
