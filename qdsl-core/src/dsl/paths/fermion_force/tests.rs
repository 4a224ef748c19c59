//! The pull-backs against central finite differences of the functions they differentiate.

use super::*;
use crate::dsl::paths::spec::{Dir, PathSpec, PathTerm, Step};
use crate::gauge::generate::Hmc;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 4]).unwrap()
}

/// A path written as "+nu +mu -nu" (names mu, nu, rho, sigma).
fn path(text: &str) -> Vec<Step> {
    text.split_whitespace()
        .map(|s| {
            let (forward, name) = s.split_at(1);
            let dir = match name {
                "mu" => Dir::Mu,
                "nu" => Dir::Free(0),
                "rho" => Dir::Free(1),
                _ => Dir::Free(2),
            };
            Step {
                dir,
                forward: forward == "+",
            }
        })
        .collect()
}

fn spec(name: &str, terms: &[(f64, &str)]) -> PathSpec {
    PathSpec {
        name: name.into(),
        output: "fat".into(),
        free_names: ["nu", "rho", "sigma"].map(String::from).to_vec(),
        terms: terms
            .iter()
            .enumerate()
            .map(|(i, (c, p))| PathTerm {
                name: format!("t{i}"),
                coeff: *c,
                steps: path(p),
            })
            .collect(),
    }
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

/// The gradient of W = V(V†V)^{−1/2}: for random V, G_W and a general direction E,
/// Re tr[G_V† E] = d/dt Re tr[G_W† W(V + tE)] ([`derivative`]), to 1e−8.
#[test]
fn polar_pullback_matches_finite_differences() {
    let vs = general_field(7);
    let gs = general_field(9);
    let es = general_field(13);
    for k in 0..20 {
        let (v, g, e) = (vs.links()[k], gs.links()[k], es.links()[k]);
        let w = v.polar_u3().unwrap();
        let gv = pullback_polar_u3(&v, &w, &g).unwrap();
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
    }
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
