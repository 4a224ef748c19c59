//! Gauge utilities on the real configurations of `tests/data`: the observables other codes
//! recorded survive a random gauge transformation and reunitarisation, and the links are
//! as unitary as their stored precision allows.

mod common;

use common::data;
use qdsl::core::field::GaugeField;
use qdsl::core::gauge::{
    plaquette, polyakov_loop, rectangle, reunitarize, unitarity_report, GaugeTransform,
};
use qdsl::core::io::{read_gauge, Precision, ReadOptions};

/// The thin-link samples, with MILC's recorded (ss, st) where MILC recorded them.
const SAMPLES: [(&str, Option<(f64, f64)>); 5] = [
    ("milc/lat.sample.l4444", Some((1.794675, 1.774426))),
    ("milc/lat.sample.l4444.ildg", Some((1.794675, 1.774426))),
    (
        "milc/lat.sample.l8",
        Some((2.620_397_871_071_474, 2.621_447_375_408_018)),
    ),
    ("tmlqcd/conf.48", None),
    ("chroma/t_nersc.cfg", None),
];

fn read(rel: &str) -> (GaugeField<f64>, Precision) {
    let file = read_gauge(data(rel), &ReadOptions::default()).unwrap();
    (file.field, file.precision)
}

#[test]
fn loops_are_gauge_invariant_on_real_configurations() {
    for (k, (rel, _)) in SAMPLES.iter().enumerate() {
        let (u, _) = read(rel);
        let g = GaugeTransform::random(*u.lattice(), 1000 + k as u64);
        let mut v = u.clone();
        g.apply_to_links(&mut v).unwrap();
        let (p, pv) = (plaquette(&u), plaquette(&v));
        assert!(
            (p.average - pv.average).abs() < 1e-13,
            "{rel}: {p:?} vs {pv:?}"
        );
        assert!((p.spatial - pv.spatial).abs() < 1e-12, "{rel}");
        assert!((rectangle(&u) - rectangle(&v)).abs() < 1e-13, "{rel}");
        assert!(
            (polyakov_loop(&u) - polyakov_loop(&v)).norm() < 1e-13,
            "{rel}"
        );
        // The links themselves are not invariant: the transformation really acted.
        let moved = u
            .links()
            .iter()
            .zip(v.links())
            .filter(|(a, b)| (**a - **b).norm_sqr() > 0.1);
        assert!(moved.count() > u.links().len() / 2, "{rel}: g did nothing");
    }
}

#[test]
fn reunitarisation_moves_the_recorded_plaquette_only_by_rounding() {
    for (rel, recorded) in SAMPLES {
        let (u, precision) = read(rel);
        let before = unitarity_report(&u);
        let mut v = u.clone();
        reunitarize(&mut v).unwrap();
        let after = unitarity_report(&v);
        assert!(after.max_unitarity < 1e-14, "{rel}: {after:?}");
        assert!(after.max_det < 1e-14, "{rel}: {after:?}");
        // The stored links were unitary to the file's precision, no better.
        assert!(
            before.max_unitarity < 100.0 * precision.epsilon(),
            "{rel}: {before:?}"
        );
        let dp = (plaquette(&u).average - plaquette(&v).average).abs();
        assert!(dp < 10.0 * precision.epsilon(), "{rel}: ΔP = {dp:e}");
        if let Some((ss, st)) = recorded {
            let p = plaquette(&v);
            assert!(
                (p.spatial - ss).abs() < 1e-6 && (p.temporal - st).abs() < 1e-6,
                "{rel}"
            );
        }
    }
}
