//! Gauge actions and forces of `link_paths!` `action` specs against independent facts:
//! the action of unit links is 0; the plaquette and rectangle of the loop spec equal
//! `qdsl_core::gauge::plaquette`/`rectangle` (and MILC's recorded plaquette) on real
//! configurations, so the Wilson and Symanzik actions equal their textbook formulas in P
//! and R; the derived staples are the textbook ones; the force is the derivative of the
//! action along a random su(3) direction (central difference, O(t²) at two t), for the
//! Wilson, Symanzik and a non-planar (chair) action; the force is gauge covariant.

mod common;

use common::data;
use qdsl::core::dsl::paths::spec::ConcreteStep;
use qdsl::core::dsl::paths::GaugeAction;
use qdsl::core::field::GaugeField;
use qdsl::core::gauge::{plaquette, rectangle, GaugeTransform};
use qdsl::core::io::{read_gauge, ReadOptions};
use qdsl::core::lattice::Lattice;
use qdsl::core::math::ColourMatrix;
use qdsl::kernels::{SymanzikGauge, WilsonGauge};
use qdsl::macros::link_paths;
use std::collections::BTreeMap;

link_paths! {
    /// A non-planar loop: the chair (two plaquettes in the μν and ρν planes sharing
    /// their ν links), to derive the force of a three-direction loop.
    action chair_gauge(u: Gauge) {
        chair: 1 * [+mu, +nu, -mu, +rho, -nu, -rho];
    }
}

const BETA: f64 = 5.7;

fn read(rel: &str) -> GaugeField<f64> {
    read_gauge(data(rel), &ReadOptions::default())
        .unwrap()
        .field
}

#[test]
fn action_and_force_of_unit_links_vanish() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let unit = GaugeField::<f64>::unit(lat);
    assert_eq!(WilsonGauge::action_cpu(&unit, BETA).unwrap(), 0.0);
    assert!(SymanzikGauge::action_cpu(&unit, BETA).unwrap().abs() < 1e-9);
    let unit32 = GaugeField::<f32>::unit(lat);
    assert!(SymanzikGauge::action_cpu(&unit32, BETA).unwrap().abs() < 1e-9);
    for f in [
        WilsonGauge::force_cpu(&unit, BETA).unwrap(),
        SymanzikGauge::force_cpu(&unit, BETA).unwrap(),
    ] {
        let worst = f
            .links()
            .iter()
            .map(|m| m.max_abs_component())
            .fold(0.0, f64::max);
        assert!(worst < 1e-14, "{worst}");
    }
}

#[test]
fn loop_spec_plaquette_and_rectangle_match_the_gauge_module_on_real_configs() {
    let milc_l8 = 2.620_397_871_071_474 + 2.621_447_375_408_018;
    for rel in [
        "milc/lat.sample.l8",
        "milc/lat.sample.l4444",
        "chroma/t_nersc.cfg",
    ] {
        let u = read(rel);
        let spec = SymanzikGauge::spec();
        let (p, r) = (
            spec.loop_average(&u, 0).unwrap(),
            spec.loop_average(&u, 1).unwrap(),
        );
        let (p_ref, r_ref) = (plaquette(&u).average, rectangle(&u));
        assert!((p - p_ref).abs() < 1e-13, "{rel}: {p} vs {p_ref}");
        assert!((r - r_ref).abs() < 1e-13, "{rel}: {r} vs {r_ref}");
        if rel == "milc/lat.sample.l8" {
            assert!((p - milc_l8 / 6.0).abs() < 1e-12, "{p} vs MILC");
        }
        // Textbook formulas: S_W = β 6V (1 − P), S_LW = β V [c₀ 6 (1 − P) + c₁ 12 (1 − R)].
        let v = u.lattice().volume() as f64;
        let wilson = WilsonGauge::action_cpu(&u, BETA).unwrap();
        let expected = BETA * 6.0 * v * (1.0 - p_ref);
        assert!((wilson - expected).abs() < 1e-9 * expected, "{rel}");
        let symanzik = SymanzikGauge::action_cpu(&u, BETA).unwrap();
        let expected =
            BETA * v * (5.0 / 3.0 * 6.0 * (1.0 - p_ref) - 1.0 / 12.0 * 12.0 * (1.0 - r_ref));
        assert!((symanzik - expected).abs() < 1e-9 * expected.abs(), "{rel}");
    }
}

/// The staples of link direction μ as concrete paths x → x + μ̂ with summed coefficients.
fn concrete_staples(paths: Vec<(f64, Vec<ConcreteStep>)>) -> BTreeMap<Vec<ConcreteStep>, f64> {
    let mut out = BTreeMap::new();
    for (c, p) in paths {
        *out.entry(p).or_insert(0.0) += c;
    }
    out
}

/// The textbook staples (Lüscher–Weisz; MILC's `imp_gauge_force`): per ν ≠ μ and each
/// orientation s = ±1 of ν, c₀ times the 3-staple and c₁ times the three rectangle staples
/// through the link (long side along μ ahead of or behind the link, long side along ν).
fn textbook_staples(mu: usize, c0: f64, c1: f64) -> BTreeMap<Vec<ConcreteStep>, f64> {
    let mut paths = Vec::new();
    for nu in (0..4).filter(|&nu| nu != mu) {
        for s in [1, -1] {
            paths.push((c0, vec![(nu, s), (mu, 1), (nu, -s)]));
            if c1 != 0.0 {
                paths.push((c1, vec![(nu, s), (mu, 1), (mu, 1), (nu, -s), (mu, -1)]));
                paths.push((c1, vec![(mu, -1), (nu, s), (mu, 1), (mu, 1), (nu, -s)]));
                paths.push((c1, vec![(nu, s), (nu, s), (mu, 1), (nu, -s), (nu, -s)]));
            }
        }
    }
    concrete_staples(paths)
}

#[test]
fn derived_staples_are_the_textbook_staples() {
    let cases = [
        (WilsonGauge::force_plan().unwrap(), 1.0, 0.0),
        (SymanzikGauge::force_plan().unwrap(), 5.0 / 3.0, -1.0 / 12.0),
    ];
    for (plan, c0, c1) in cases {
        for mu in 0..4 {
            let derived = concrete_staples(plan.staples.spec.concrete_paths(mu, 1.0));
            let expected = textbook_staples(mu, c0, c1);
            assert_eq!(
                derived.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{} μ = {mu}",
                plan.action.name
            );
            for (p, c) in &derived {
                assert!((c - expected[p]).abs() < 1e-15, "{p:?}: {c}");
            }
        }
    }
}

/// A random su(3) element: TA of a random SU(3) matrix plus a second one, scaled.
fn su3_direction(seed: u64) -> ColourMatrix<f64> {
    let g = GaugeTransform::<f64>::random(Lattice::new([2, 2, 2, 2]).unwrap(), seed);
    (*g.at(0) + g.at(3).scale(0.7)).traceless_antihermitian_part()
}

/// Central difference (S(e^{tX}U) − S(e^{−tX}U)) / 2t at one link.
fn central_difference<A: GaugeAction>(
    u: &GaugeField<f64>,
    x: &ColourMatrix<f64>,
    cb: usize,
    mu: usize,
    t: f64,
) -> f64 {
    let at = |s: f64| {
        let mut v = u.clone();
        *v.link_mut(cb, mu) = x.scale(s).exp() * *u.link(cb, mu);
        A::action_cpu(&v, BETA).unwrap()
    };
    (at(t) - at(-t)) / (2.0 * t)
}

fn check_derivative<A: GaugeAction>(u: &GaugeField<f64>, seed: u64) {
    let force = A::force_cpu(u, BETA).unwrap();
    for (k, (cb, mu)) in [(5, 0), (77, 3), (130, 2)].into_iter().enumerate() {
        let x = su3_direction(seed + k as u64);
        // dS/dt = tr(X F): real for X, F ∈ su(3).
        let exact = (x * *force.link(cb, mu)).trace();
        assert!(exact.im.abs() < 1e-12, "{exact}");
        let (t1, t2) = (0.02, 0.01);
        let e1 = (central_difference::<A>(u, &x, cb, mu, t1) - exact.re).abs();
        let e2 = (central_difference::<A>(u, &x, cb, mu, t2) - exact.re).abs();
        assert!(
            exact.re.abs() > 0.1,
            "a derivative too small to test: {exact}"
        );
        assert!(
            e1 < 1e-3 * exact.re.abs(),
            "t = {t1}: error {e1} of {exact}"
        );
        // O(t²): halving t divides the error by 4.
        let ratio = e1 / e2;
        assert!(
            (3.6..4.4).contains(&ratio),
            "error ratio {ratio} ({e1}, {e2})"
        );
    }
}

#[test]
fn force_is_the_derivative_of_the_action() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let hot = GaugeField::<f64>::random(lat, 31);
    let weak = GaugeField::<f64>::weak(lat, 32, 0.3);
    for u in [&hot, &weak] {
        check_derivative::<WilsonGauge>(u, 100);
        check_derivative::<SymanzikGauge>(u, 200);
        check_derivative::<ChairGauge>(u, 300);
    }
}

#[test]
fn force_is_gauge_covariant() {
    let u = read("milc/lat.sample.l4444");
    let g = GaugeTransform::<f64>::random(*u.lattice(), 77);
    let mut v = u.clone();
    g.apply_to_links(&mut v).unwrap();
    let f = SymanzikGauge::force_cpu(&u, BETA).unwrap();
    let fv = SymanzikGauge::force_cpu(&v, BETA).unwrap();
    let mut worst: f64 = 0.0;
    let mut scale: f64 = 0.0;
    for cb in 0..u.lattice().volume() {
        for mu in 0..4 {
            let rotated = (*g.at(cb) * *f.link(cb, mu)).mul_adjoint(g.at(cb));
            worst = worst.max((rotated - *fv.link(cb, mu)).max_abs_component());
            scale = scale.max(f.link(cb, mu).max_abs_component());
        }
    }
    assert!(scale > 0.1, "{scale}");
    assert!(worst < 1e-12 * scale, "{worst} of {scale}");
}

#[test]
fn f32_force_matches_f64() {
    let u = read("milc/lat.sample.l4444");
    let f64_force = SymanzikGauge::force_cpu(&u, BETA).unwrap();
    let f32_force = SymanzikGauge::force_cpu(&u.cast::<f32>(), BETA).unwrap();
    let worst = f64_force
        .links()
        .iter()
        .zip(f32_force.links())
        .map(|(a, b)| (*a - b.cast::<f64>()).max_abs_component())
        .fold(0.0, f64::max);
    assert!(worst < 1e-4, "{worst}");
}
