//! The pull-backs against central finite differences of the functions they differentiate.

use super::*;
use crate::dsl::paths::spec::PathSpec;
use crate::dsl::paths::test_specs::spec;
use crate::gauge::generate::Hmc;
use crate::math::MatrixError;
use num_complex::Complex;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 4]).unwrap()
}

/// The asqtad fat-link shape (one-link, 3-, 5-, 7-staples, Lepage) with arbitrary
/// coefficients, and a Naik-like three-hop spec with a bent path.
fn specs() -> Vec<PathSpec> {
    vec![
        spec(
            "fat",
            &[
                (0.6, "+mu"),
                (-0.07, "+nu +mu -nu"),
                (0.02, "+nu +rho +mu -rho -nu"),
                (-0.003, "+nu +rho +sigma +mu -sigma -rho -nu"),
                (-0.05, "+nu +nu +mu -nu -nu"),
            ],
        ),
        spec(
            "long",
            &[(-0.04, "+mu +mu +mu"), (0.01, "+nu +mu +mu +mu -nu")],
        ),
    ]
}

/// A general complex field (no unitarity): the sum of two random SU(3) fields, one
/// times i/2.
fn general_field(seed: u64) -> GaugeField<f64> {
    let a = GaugeField::<f64>::random(lattice(), seed);
    let b = GaugeField::<f64>::random(lattice(), seed + 1);
    let mut out = a.clone();
    for (o, m) in out.links_mut().iter_mut().zip(b.links()) {
        *o += m.scale_complex(Complex::new(0.0, 0.5));
    }
    out
}

/// Σ Re tr[G† F].
fn pairing(g: &GaugeField<f64>, f: &GaugeField<f64>) -> f64 {
    g.links()
        .iter()
        .zip(f.links())
        .map(|(g, f)| g.adjoint_mul(f).trace().re)
        .sum()
}

/// U_μ(x) → e^{tX_μ(x)} U_μ(x).
fn moved(u: &GaugeField<f64>, x: &GaugeField<f64>, t: f64) -> GaugeField<f64> {
    let mut out = u.clone();
    for (o, m) in out.links_mut().iter_mut().zip(x.links()) {
        *o = m.scale(t).exp() * *o;
    }
    out
}

/// Σ tr[X F] (real for anti-hermitian X, F).
fn along(x: &GaugeField<f64>, f: &GaugeField<f64>) -> f64 {
    x.links()
        .iter()
        .zip(f.links())
        .map(|(x, f)| (*x * *f).trace().re)
        .sum()
}

/// f'(0) by the fourth-order central difference
/// [8(f(h) − f(−h)) − (f(2h) − f(−2h))]/12h, h = 1e−3 (truncation h⁴ f⁽⁵⁾/30).
pub(crate) fn derivative(f: impl Fn(f64) -> f64) -> f64 {
    let h = 1e-3;
    (8.0 * (f(h) - f(-h)) - (f(2.0 * h) - f(-2.0 * h))) / (12.0 * h)
}

/// For L(U) = Σ Re tr[G† F(U)] with F a smearing: the force of the pulled-back
/// gradient along random su(3) directions X equals (L(e^{εX}U) − L(e^{−εX}U))/2ε to
/// 1e−8 relative ([`derivative`]), for a spec with every staple shape
/// and for a three-hop spec, at u0 ≠ 1.
#[test]
fn pullback_matches_finite_differences() {
    let u = GaugeField::<f64>::random(lattice(), 3);
    let g = general_field(5);
    for s in specs() {
        let plan = PathPlan::new(&s).unwrap();
        let u0 = 0.9;
        let f = force_from_gradient(&u, &pullback(&plan, &u, u0, &g).unwrap());
        for seed in 0..2 {
            let x = Hmc::momenta(lattice(), 11, seed);
            let l = |t: f64| {
                pairing(
                    &g,
                    &super::super::cpu::smear(&plan, &moved(&u, &x, t), u0).unwrap(),
                )
            };
            let fd = derivative(l);
            let exact = along(&x, &f);
            assert!(
                (fd - exact).abs() < 1e-8 * exact.abs().max(1.0),
                "{}: finite difference {fd}, force {exact}",
                s.name
            );
        }
    }
}

/// The gradient of W = V(V†V)^{−1/2} in closed form: for random V, G_W and a general
/// direction E, Re tr[G_V† E] = d/dt Re tr[G_W† W(V + tE)] ([`derivative`]) to 1e−8,
/// and G_V equals the textbook Lyapunov form to 1e−12 relative.
#[test]
fn polar_pullback_matches_finite_differences_and_the_lyapunov_form() {
    let vs = general_field(7);
    let gs = general_field(9);
    let es = general_field(13);
    for k in 0..20 {
        let (v, g, e) = (vs.links()[k], gs.links()[k], es.links()[k]);
        let gv = pullback_polar_u3(&v, &g).unwrap();
        let l = |t: f64| {
            g.adjoint_mul(&(v + e.scale(t)).polar_u3().unwrap())
                .trace()
                .re
        };
        let fd = derivative(l);
        let exact = gv.adjoint_mul(&e).trace().re;
        assert!(
            (fd - exact).abs() < 1e-8 * exact.abs().max(1.0),
            "{k}: {fd} {exact}"
        );
        let reference = lyapunov_pullback(&v, &v.polar_u3().unwrap(), &g).unwrap();
        let dev = (gv - reference).max_abs_component() / reference.max_abs_component();
        assert!(dev < 1e-12, "{k}: closed form against Lyapunov {dev:e}");
    }
}

/// Degenerate eigenvalues of V†V, where a derivative through the eigenvectors would
/// divide by zero: V a multiple of an SU(3) matrix (all equal), of 1, and
/// diag(1, 1, 2) U (two equal); the closed form equals the Lyapunov form and the
/// finite difference, and the scale of V divides G_V (W does not depend on it).
#[test]
fn polar_pullback_at_degenerate_eigenvalues() {
    let su3 = GaugeField::<f64>::random(lattice(), 23).links()[3];
    let g = general_field(29).links()[5];
    let e = general_field(31).links()[7];
    let mut diag = ColourMatrix::<f64>::identity();
    diag.0[2][2] = Complex::new(2.0, 0.0);
    for (what, v) in [
        ("2.5 U", su3.scale(2.5)),
        ("1", ColourMatrix::identity()),
        ("diag(1, 1, 2) U", diag * su3),
    ] {
        let gv = pullback_polar_u3(&v, &g).unwrap();
        let reference = lyapunov_pullback(&v, &v.polar_u3().unwrap(), &g).unwrap();
        let dev = (gv - reference).max_abs_component() / reference.max_abs_component();
        assert!(dev < 1e-12, "{what}: closed form against Lyapunov {dev:e}");
        let fd = derivative(|t| {
            g.adjoint_mul(&(v + e.scale(t)).polar_u3().unwrap())
                .trace()
                .re
        });
        let exact = gv.adjoint_mul(&e).trace().re;
        assert!((fd - exact).abs() < 1e-8, "{what}: {fd} {exact}");
        let scaled = pullback_polar_u3(&v.scale(1e3), &g).unwrap();
        let dev = (scaled.scale(1e3) - gv).max_abs_component() / gv.max_abs_component();
        assert!(dev < 1e-12, "{what}: scale {dev:e}");
    }
}

/// A singular or non-finite V is an error, as for the projection itself.
#[test]
fn polar_pullback_refuses_singular_links() {
    let g = ColourMatrix::<f64>::identity();
    let mut rank2 = ColourMatrix::<f64>::identity();
    rank2.0[2][2] = Complex::new(0.0, 0.0);
    assert!(matches!(
        pullback_polar_u3(&rank2, &g),
        Err(MatrixError::Singular { .. })
    ));
    assert!(pullback_polar_u3(&ColourMatrix::<f64>::zero(), &g).is_err());
    let mut nan = ColourMatrix::<f64>::identity();
    nan.0[0][1] = Complex::new(f64::NAN, 0.0);
    assert!(matches!(
        pullback_polar_u3(&nan, &g),
        Err(MatrixError::NonFinite)
    ));
}

/// A hand-solved Lyapunov equation and the cofactor inverse.
#[test]
fn lyapunov_and_inverse() {
    let vs = general_field(17);
    let v = vs.links()[0];
    let s = v.adjoint_mul(&v);
    let b = hermitian_part(&vs.links()[1]);
    let y = solve_lyapunov(&s, &b).unwrap();
    assert!((y * s + s * y - b).max_abs_component() < 1e-13);
    let inv = inverse(&v).unwrap();
    assert!((inv * v - ColourMatrix::identity()).max_abs_component() < 1e-13);
    assert!(inverse(&ColourMatrix::<f64>::zero()).is_err());
}

/// The textbook gradient of W = V (V†V)^{−1/2} (the reference for [`pullback_polar_u3`]):
/// with H = (V†V)^{1/2} = W†V and R = H⁻¹, G_V = G_W R + 2 V Y where Y solves the
/// Lyapunov equation Y H + H Y = herm(−R V† G_W R), herm(B) = (B + B†)/2 (dH is
/// hermitian and Y ↦ YH + HY is self-adjoint for Re tr[A†B]); `w` the projection of `v`.
fn lyapunov_pullback<T: Real>(
    v: &ColourMatrix<T>,
    w: &ColourMatrix<T>,
    grad_w: &ColourMatrix<T>,
) -> Result<ColourMatrix<T>, MatrixError> {
    let s = hermitian_part(&w.adjoint_mul(v));
    let r = hermitian_part(&inverse(&s)?);
    let b_s = hermitian_part(&(r * v.adjoint_mul(grad_w) * r).scale(T::from_f64(-1.0)));
    let y = solve_lyapunov(&s, &b_s)?;
    Ok(*grad_w * r + (*v * y).scale(T::from_f64(2.0)))
}

/// (B + B†)/2.
fn hermitian_part<T: Real>(b: &ColourMatrix<T>) -> ColourMatrix<T> {
    (*b + b.adjoint()).scale(T::from_f64(0.5))
}

/// M⁻¹ from the cofactors; an error for a singular M.
fn inverse<T: Real>(m: &ColourMatrix<T>) -> Result<ColourMatrix<T>, MatrixError> {
    let det = m.determinant();
    if det.norm().is_nan() || det.norm() <= T::zero() {
        return Err(MatrixError::Singular {
            smallest: 0.0,
            largest: m.max_abs_component().to_f64(),
            threshold: 0.0,
        });
    }
    let a = &m.0;
    let cof = |i: usize, j: usize| {
        let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
        let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
        a[r0][c0] * a[r1][c1] - a[r0][c1] * a[r1][c0]
    };
    let inv_det = det.inv();
    // (M⁻¹)_ij = cof(j, i) / det (cyclic cofactors carry their sign).
    Ok(ColourMatrix::from_fn(|i, j| cof(j, i) * inv_det))
}

/// The solution Y of Y S + S Y = B for hermitian positive-definite S: the 9 × 9 complex
/// system of the vectorised equation, by Gaussian elimination with partial pivoting.
fn solve_lyapunov<T: Real>(
    s: &ColourMatrix<T>,
    b: &ColourMatrix<T>,
) -> Result<ColourMatrix<T>, MatrixError> {
    let zero = Complex::new(T::zero(), T::zero());
    // Unknown index 3i + j for Y_ij: (YS + SY)_ij = Σ_k Y_ik S_kj + S_ik Y_kj.
    let mut a = [[zero; 10]; 9];
    for i in 0..3 {
        for j in 0..3 {
            let row = 3 * i + j;
            for k in 0..3 {
                a[row][3 * i + k] += s.0[k][j];
                a[row][3 * k + j] += s.0[i][k];
            }
            a[row][9] = b.0[i][j];
        }
    }
    for col in 0..9 {
        let pivot = (col..9)
            .max_by(|&p, &q| {
                a[p][col]
                    .norm()
                    .partial_cmp(&a[q][col].norm())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .unwrap_or(col);
        let size = a[pivot][col].norm();
        if size.is_nan() || size <= T::zero() {
            return Err(MatrixError::Singular {
                smallest: 0.0,
                largest: s.max_abs_component().to_f64(),
                threshold: 0.0,
            });
        }
        a.swap(col, pivot);
        let inv = a[col][col].inv();
        let pivot_row = a[col];
        for row in a.iter_mut().skip(col + 1) {
            let f = row[col] * inv;
            for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                *x -= *p * f;
            }
        }
    }
    let mut y = [zero; 9];
    for row in (0..9).rev() {
        let mut acc = a[row][9];
        for (c, yk) in a[row][row + 1..9].iter().zip(&y[row + 1..]) {
            acc -= *c * *yk;
        }
        y[row] = acc / a[row][row];
    }
    Ok(ColourMatrix::from_fn(|i, j| y[3 * i + j]))
}
