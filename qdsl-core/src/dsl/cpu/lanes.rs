//! Lane arithmetic: [`LANES`] output sites computed together, structure of arrays (one
//! real per site in a [`Lane`]), so that every operation of the generated code is a loop
//! over the lanes that LLVM turns into SIMD instructions (SSE2 on the baseline target,
//! AVX2 where the engine detects it).
//!
//! A [`CLane`] is a complex number per lane, a [`VLane`] a colour vector
//! (3 complex), an [`MLane`] a colour matrix; a site's rows ψ_σ (σ = 0..NS) are
//! `[VLane; NS]`.

use crate::dsl::spin::Phase;
use crate::Real;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// Sites per batch (8: one AVX2 register of f32, two of f64).
pub const LANES: usize = 8;

/// One real per lane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lane<T>(pub [T; LANES]);

impl<T: Real> Lane<T> {
    /// Every lane x.
    #[inline(always)]
    pub fn splat(x: T) -> Self {
        Lane([x; LANES])
    }
}

/// Lane-wise binary operators, written as plain loops over the lanes (LLVM vectorises
/// them; closures such as `array::from_fn`'s are not always inlined in large bodies).
macro_rules! lane_op {
    ($trait:ident, $method:ident, $assign:tt) => {
        impl<T: Real> $trait for Lane<T> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, b: Self) -> Self {
                let mut out = self.0;
                for (o, y) in out.iter_mut().zip(b.0) {
                    *o $assign y;
                }
                Lane(out)
            }
        }
    };
}

lane_op!(Add, add, +=);
lane_op!(Sub, sub, -=);
lane_op!(Mul, mul, *=);

impl<T: Real> Neg for Lane<T> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        let mut out = self.0;
        for o in &mut out {
            *o = -*o;
        }
        Lane(out)
    }
}

/// A complex number per lane: re_l + i im_l.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CLane<T> {
    /// Real parts.
    pub re: Lane<T>,
    /// Imaginary parts.
    pub im: Lane<T>,
}

impl<T: Real> CLane<T> {
    /// Zero in every lane.
    #[inline(always)]
    pub fn zero() -> Self {
        CLane {
            re: Lane::splat(T::zero()),
            im: Lane::splat(T::zero()),
        }
    }

    /// The conjugate re − i im.
    #[inline(always)]
    pub fn conj(self) -> Self {
        CLane {
            re: self.re,
            im: -self.im,
        }
    }

    /// z · self for a phase z ∈ {±1, ±i}, exact (no multiplications).
    #[inline(always)]
    pub fn phase(self, p: Phase) -> Self {
        let (re, im) = match (p.re, p.im) {
            (1, 0) => (self.re, self.im),
            (-1, 0) => (-self.re, -self.im),
            (0, 1) => (-self.im, self.re),
            _ => (self.im, -self.re),
        };
        CLane { re, im }
    }

    /// c · self for a real c per lane.
    #[inline(always)]
    pub fn scale(self, c: Lane<T>) -> Self {
        CLane {
            re: self.re * c,
            im: self.im * c,
        }
    }
}

impl<T: Real> Add for CLane<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        CLane {
            re: self.re + b.re,
            im: self.im + b.im,
        }
    }
}

impl<T: Real> AddAssign for CLane<T> {
    #[inline(always)]
    fn add_assign(&mut self, b: Self) {
        *self = *self + b;
    }
}

/// (a + ib)(c + id) = (ac − bd) + i(ad + bc), lane-wise.
impl<T: Real> Mul for CLane<T> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, b: Self) -> Self {
        CLane {
            re: self.re * b.re - self.im * b.im,
            im: self.re * b.im + self.im * b.re,
        }
    }
}

/// A colour vector per lane.
pub type VLane<T> = [CLane<T>; 3];

/// A colour matrix per lane, row-major.
pub type MLane<T> = [[CLane<T>; 3]; 3];

/// M v: (M v)_i = Σ_k M_ik v_k.
#[inline(always)]
pub fn mat_vec<T: Real>(m: &MLane<T>, v: &VLane<T>) -> VLane<T> {
    [dot(&m[0], v), dot(&m[1], v), dot(&m[2], v)]
}

/// Σ_k a_k b_k (no conjugation).
#[inline(always)]
fn dot<T: Real>(a: &VLane<T>, b: &VLane<T>) -> CLane<T> {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// A B: (A B)_ij = Σ_k A_ik B_kj (the link product along a path).
#[inline(always)]
pub fn mat_mul<T: Real>(a: &MLane<T>, b: &MLane<T>) -> MLane<T> {
    let bt = [
        [b[0][0], b[1][0], b[2][0]],
        [b[0][1], b[1][1], b[2][1]],
        [b[0][2], b[1][2], b[2][2]],
    ];
    [
        mat_vec(&bt, &a[0]),
        mat_vec(&bt, &a[1]),
        mat_vec(&bt, &a[2]),
    ]
}

/// c · v for a real c per lane.
#[inline(always)]
pub fn scale<T: Real>(v: &VLane<T>, c: Lane<T>) -> VLane<T> {
    [v[0].scale(c), v[1].scale(c), v[2].scale(c)]
}

/// z · v for a phase z ∈ {±1, ±i}, exact.
#[inline(always)]
pub fn phase<T: Real>(v: &VLane<T>, p: Phase) -> VLane<T> {
    [v[0].phase(p), v[1].phase(p), v[2].phase(p)]
}

/// acc += b, colour-wise.
#[inline(always)]
pub fn add_assign<T: Real>(acc: &mut VLane<T>, b: &VLane<T>) {
    for (a, z) in acc.iter_mut().zip(b) {
        *a += *z;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex;

    /// Lane l holds (l + 1) + i (2 − l) scaled by `k`.
    fn clane(k: f64) -> CLane<f64> {
        CLane {
            re: Lane(std::array::from_fn(|l| k * (l as f64 + 1.0))),
            im: Lane(std::array::from_fn(|l| k * (2.0 - l as f64))),
        }
    }

    fn lane(z: &CLane<f64>, l: usize) -> Complex<f64> {
        Complex::new(z.re.0[l], z.im.0[l])
    }

    /// Every lane of a product, a phase and a conjugate equals num_complex's result
    /// for that lane's numbers.
    #[test]
    fn complex_lanes_follow_complex_arithmetic_lane_by_lane() {
        let (a, b) = (clane(0.5), clane(-1.25));
        let phases = [(1, 0), (-1, 0), (0, 1), (0, -1)];
        for l in 0..LANES {
            assert_eq!(lane(&(a * b), l), lane(&a, l) * lane(&b, l));
            assert_eq!(lane(&(a + b), l), lane(&a, l) + lane(&b, l));
            assert_eq!(lane(&a.conj(), l), lane(&a, l).conj());
            for (re, im) in phases {
                let z = Complex::new(re as f64, im as f64);
                assert_eq!(lane(&a.phase(Phase { re, im }), l), z * lane(&a, l));
            }
        }
    }

    /// The matrix–vector and matrix–matrix products against the textbook sums on one
    /// lane (integers: exact).
    #[test]
    fn matrix_products_are_the_textbook_sums() {
        let m: MLane<f64> =
            std::array::from_fn(|i| std::array::from_fn(|j| clane((3 * i + j) as f64)));
        let n: MLane<f64> =
            std::array::from_fn(|i| std::array::from_fn(|j| clane(j as f64 - i as f64)));
        let v: VLane<f64> = std::array::from_fn(|i| clane(i as f64 + 2.0));
        let (mv, mn) = (mat_vec(&m, &v), mat_mul(&m, &n));
        for l in 0..LANES {
            for i in 0..3 {
                let want: Complex<f64> = (0..3).map(|k| lane(&m[i][k], l) * lane(&v[k], l)).sum();
                assert_eq!(lane(&mv[i], l), want);
                for j in 0..3 {
                    let want: Complex<f64> =
                        (0..3).map(|k| lane(&m[i][k], l) * lane(&n[k][j], l)).sum();
                    assert_eq!(lane(&mn[i][j], l), want);
                }
            }
        }
    }
}
