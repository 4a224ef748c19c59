//! The `link_paths!` catalog (asqtad fat and long links, fat7, HISQ) against independent
//! facts: the hand-written path walks of `reference_links` (to 1e-13 in f64), MILC's own
//! fat and long links of its 8⁴ sample configuration (to f32 rounding), the analytic
//! unit-link values (asqtad 5/8 + 3/(8u0²) + 1/(8u0⁶) and −1/(24u0²), fat7 1, HISQ
//! 9/8 + ε/8 and −(1 + ε)/24), and gauge covariance of every smeared link.

mod common;
mod reference_links;

use common::data;
use qdsl::core::dsl::paths::LinkPaths;
use qdsl::core::field::GaugeField;
use qdsl::core::io::{read_gauge, ReadOptions};
use qdsl::core::lattice::Lattice;
use qdsl::core::math::ColourMatrix;
use qdsl::kernels::{asqtad_links, hisq_links, AsqtadFat, AsqtadLong, Fat7};

/// max over links of max |a − b| component, and of max |b| component.
fn worst_difference(a: &GaugeField<f64>, b: &GaugeField<f64>) -> (f64, f64) {
    let worst = a
        .links()
        .iter()
        .zip(b.links())
        .map(|(x, y)| (*x - *y).max_abs_component())
        .fold(0.0, f64::max);
    let scale = b
        .links()
        .iter()
        .map(|m| m.max_abs_component())
        .fold(0.0, f64::max);
    (worst, scale)
}

#[test]
fn generated_asqtad_equals_the_hand_written_reference() {
    let thin = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let random = GaugeField::<f64>::random(Lattice::new([4, 4, 4, 6]).unwrap(), 17);
    for (u, u0) in [(&thin.field, 0.502), (&random, 0.83)] {
        let (fat, long) = asqtad_links(u, u0).unwrap();
        let (ref_fat, ref_long) = reference_links::asqtad_links(u, u0);
        for (ours, reference, name) in [(&fat, &ref_fat, "fat"), (&long, &ref_long, "long")] {
            let (worst, scale) = worst_difference(ours, reference);
            assert!(
                worst <= 1e-13 * scale,
                "{name}: max |Δ| = {worst:e}, max |link| = {scale}"
            );
        }
    }
}

#[test]
fn generated_asqtad_reproduces_milcs_fat_and_long_links() {
    let thin = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let milc_fat = read_gauge(data("milc/fat.l8"), &ReadOptions::smeared_links()).unwrap();
    let milc_long = read_gauge(data("milc/long.l8"), &ReadOptions::smeared_links()).unwrap();
    let (fat, long) = asqtad_links(&thin.field, 0.502).unwrap();
    for (ours, milc, name) in [
        (&fat, &milc_fat.field, "fat"),
        (&long, &milc_long.field, "long"),
    ] {
        let (worst, scale) = worst_difference(ours, milc);
        eprintln!("{name}: max abs difference {worst:.3e}, largest element {scale:.4}");
        // MILC computed and stored in f32: agreement to a few ulp of the largest element.
        assert!(
            worst <= 4e-6 * scale,
            "{name}: max |Δ| = {worst:e}, max |link| = {scale}"
        );
        assert!(
            worst > 0.0,
            "{name}: f32 files cannot agree bit for bit with f64 sums"
        );
    }
    // In f32 the generated links agree with MILC (both f32) to a few ulp as well.
    let (fat32, _) = asqtad_links(&thin.field.cast::<f32>(), 0.502).unwrap();
    let (worst, scale) = worst_difference(&fat32.cast::<f64>(), &milc_fat.field);
    assert!(worst <= 2e-5 * scale, "f32 fat: max |Δ| = {worst:e}");
}

/// Checks every link of `field` is `value(c, mu)` times the identity.
fn assert_scalar_links(field: &GaugeField<f64>, value: impl Fn([usize; 4], usize) -> f64) {
    let lat = *field.lattice();
    for cb in 0..lat.volume() {
        let c = lat.coords_of_cb(cb);
        for mu in 0..4 {
            let expected = ColourMatrix::identity().scale(value(c, mu));
            let d = (*field.link(cb, mu) - expected).max_abs_component();
            assert!(d < 1e-13, "site {c:?} mu {mu}: off by {d:e}");
        }
    }
}

#[test]
fn unit_links_give_the_tree_level_values() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let unit = GaugeField::<f64>::unit(lat);
    for u0 in [1.0f64, 0.8] {
        // Without phases every path is 1: the sum of coefficients times path counts
        // (1, 6, 24, 48, 6).
        let plain = 5.0 / 8.0 - 6.0 / (16.0 * u0 * u0) + 24.0 / (64.0 * u0.powi(4))
            - 48.0 / (384.0 * u0.powi(6))
            - 6.0 / (16.0 * u0.powi(4));
        let long_expected = -1.0 / (24.0 * u0 * u0);
        assert_scalar_links(&AsqtadFat::smear_cpu(&unit, u0).unwrap(), |_, _| plain);
        // With phases, η_ν(x)η_μ(x+ν̂) = −η_μ(x)η_ν(x+μ̂) gives each staple the sign
        // (−1)^(distinct transverse directions): the tree-level value of issue 6.
        let fat_expected = 5.0 / 8.0 + 3.0 / (8.0 * u0 * u0) + 1.0 / (8.0 * u0.powi(6));
        assert_scalar_links(&AsqtadLong::smear_cpu(&unit, u0).unwrap(), |_, _| {
            long_expected
        });
        // With MILC's phases: times η_μ(x), and −1 where the path crosses the time edge.
        let (fat, long) = asqtad_links(&unit, u0).unwrap();
        let lt = lat.extent(3);
        let eta = qdsl::kernels::staggered_phase;
        assert_scalar_links(&fat, |c, mu| {
            let edge = if mu == 3 && c[3] == lt - 1 { -1.0 } else { 1.0 };
            edge * eta(c, mu) * fat_expected
        });
        assert_scalar_links(&long, |c, mu| {
            let edge = if mu == 3 && c[3] >= lt - 3 { -1.0 } else { 1.0 };
            edge * eta(c, mu) * long_expected
        });
    }
    // Fat7 with phases: 1/8 + 6/16 + 24/64 + 48/384 = 1, times the phase.
    let fat7 = Fat7::smear_cpu(&qdsl::kernels::fold_staggered_phases(&unit), 1.0).unwrap();
    let lt = lat.extent(3);
    assert_scalar_links(&fat7, |c, mu| {
        let edge = if mu == 3 && c[3] == lt - 1 { -1.0 } else { 1.0 };
        edge * qdsl::kernels::staggered_phase(c, mu)
    });
}

/// A random gauge transformation g(x) (Haar SU(3) per site, from the links of a random
/// field) and the transformed links g(x) U_μ(x) g†(x + μ̂).
fn transform(u: &GaugeField<f64>, seed: u64) -> (Vec<ColourMatrix<f64>>, GaugeField<f64>) {
    let lat = *u.lattice();
    let g_field = GaugeField::<f64>::random(lat, seed);
    let g: Vec<_> = (0..lat.volume()).map(|cb| *g_field.link(cb, 0)).collect();
    let ug = GaugeField::from_fn(lat, |c, mu| {
        let next = lat.shift(c, mu, 1).0;
        (g[lat.cb_index(c)] * *u.link_at(c, mu)).mul_adjoint(&g[lat.cb_index(next)])
    });
    (g, ug)
}

#[test]
fn smeared_links_are_gauge_covariant() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let u = GaugeField::<f64>::random(lat, 5);
    let (g, ug) = transform(&u, 99);
    type Smear = fn(&GaugeField<f64>, f64) -> Result<GaugeField<f64>, qdsl::core::dsl::DslError>;
    let specs: [(&str, Smear, isize); 3] = [
        ("asqtad_fat", AsqtadFat::smear_cpu::<f64>, 1),
        ("asqtad_long", AsqtadLong::smear_cpu::<f64>, 3),
        ("fat7", Fat7::smear_cpu::<f64>, 1),
    ];
    for (name, smear, n) in specs {
        let f = smear(&u, 0.9).unwrap();
        let fg = smear(&ug, 0.9).unwrap();
        let mut worst: f64 = 0.0;
        for cb in 0..lat.volume() {
            let c = lat.coords_of_cb(cb);
            for mu in 0..4 {
                let end = lat.cb_index(lat.shift(c, mu, n).0);
                let expected = (g[cb] * *f.link(cb, mu)).mul_adjoint(&g[end]);
                worst = worst.max((*fg.link(cb, mu) - expected).max_abs_component());
            }
        }
        assert!(worst < 1e-12, "{name}: covariance violated by {worst:e}");
        // A non-covariant smearing (e.g. a wrong end point) would be off by O(1).
        assert!(f.links().iter().any(|m| m.max_abs_component() > 0.01));
    }
}

#[test]
fn hisq_unit_links_give_the_tree_level_values() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let unit = GaugeField::<f64>::unit(lat);
    let lt = lat.extent(3);
    let eta = qdsl::kernels::staggered_phase;
    for eps in [0.0, -0.1] {
        let (fat, long) = hisq_links(&unit, eps).unwrap();
        assert_scalar_links(&fat, |c, mu| {
            let edge = if mu == 3 && c[3] == lt - 1 { -1.0 } else { 1.0 };
            edge * eta(c, mu) * (9.0 / 8.0 + eps / 8.0)
        });
        assert_scalar_links(&long, |c, mu| {
            let edge = if mu == 3 && c[3] >= lt - 3 { -1.0 } else { 1.0 };
            edge * eta(c, mu) * (-(1.0 + eps) / 24.0)
        });
    }
}

#[test]
fn hisq_links_are_gauge_covariant_and_level_one_is_unitary() {
    // A smooth field (links near 1) keeps fat7 far from singular.
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let u = GaugeField::<f64>::weak(lat, 21, 0.3);
    let (g, ug) = transform(&u, 7);
    // Phases are ±1 per link and commute with g, so covariance holds with them folded in
    // (the time boundary flips the last slice's t-links, also a ±1).
    let (fat, long) = hisq_links(&u, -0.05).unwrap();
    let (fat_g, long_g) = hisq_links(&ug, -0.05).unwrap();
    for (f, fg, n, name) in [(&fat, &fat_g, 1, "fat"), (&long, &long_g, 3, "long")] {
        let mut worst: f64 = 0.0;
        for cb in 0..lat.volume() {
            let c = lat.coords_of_cb(cb);
            for mu in 0..4 {
                let end = lat.cb_index(lat.shift(c, mu, n).0);
                let expected = (g[cb] * *f.link(cb, mu)).mul_adjoint(&g[end]);
                worst = worst.max((*fg.link(cb, mu) - expected).max_abs_component());
            }
        }
        assert!(
            worst < 1e-12,
            "hisq {name}: covariance violated by {worst:e}"
        );
    }
    // The long links are (1 + ε)(−1/24) times products of three unitary W's, so
    // L†L = ((1 + ε)/24)² exactly: W is unitary.
    let s = (1.0 - 0.05) / 24.0;
    for l in long.links() {
        let dev = (l.adjoint_mul(l) - ColourMatrix::identity().scale(s * s)).max_abs_component();
        assert!(dev < 1e-14, "L†L deviates by {dev:e}");
    }
}
