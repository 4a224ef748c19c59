//! The registry's rows: names, host emulation and device markers, each checked against
//! values worked out by hand, so that a row whose dispatch reaches the wrong format (or
//! a new row without an expectation here) fails.

use super::*;
use qdsl_core::field::{SiteSubset, SpinorLayout};
use qdsl_core::lattice::Lattice;
use qdsl_core::Complex;

#[test]
fn every_name_round_trips_and_names_are_unique() {
    for p in Precision::ALL {
        assert_eq!(p.name().parse::<Precision>(), Ok(p));
        assert_eq!(p.name().to_ascii_uppercase().parse::<Precision>(), Ok(p));
        assert_eq!(p.to_string(), p.name());
        let same = Precision::ALL.iter().filter(|q| q.name() == p.name());
        assert_eq!(same.count(), 1, "{p:?}");
    }
    let e = "f8".parse::<Precision>().unwrap_err();
    assert!(e.contains("\"f8\"") && e.contains("posit32"), "{e}");
}

#[test]
fn descriptions_name_the_reliable_updates_of_mixed_precisions() {
    assert_eq!(Precision::F64.describe(), "f64");
    assert!(!Precision::F64.is_mixed());
    for p in Precision::ALL.into_iter().filter(|p| p.is_mixed()) {
        assert_eq!(
            p.describe(),
            format!("f64–{} (reliable updates)", p.name()),
            "{p:?}"
        );
    }
    assert_eq!(
        Precision::Fixed8.describe(),
        "f64–fixed8 (reliable updates)"
    );
}

/// The value the iteration vectors of the precision named `name` hold for 1/3 in a site
/// whose largest component is 1, worked out by hand: a binary format with quantum 2^−m
/// at 1/3 (floats and posits: 1/3 ∈ [2⁻², 2⁻¹), so m = 2 + the fraction bits there;
/// packed: the group scale 2^k with k the smallest integer where Q·2^k ≥ 1) holds
/// round(2^m/3)/2^m; fixed point with Q = 2^(b−1) − 1 and norm 1 holds round(Q/3)/Q.
fn expected_third(name: &str) -> f64 {
    let binary = |m: i32| (2f64.powi(m) / 3.0).round() / 2f64.powi(m);
    let fixed = |q: f64| (q / 3.0).round() / q;
    match name {
        "f64" => 1.0 / 3.0,
        "f32" => binary(2 + 23),
        "tf32" | "f16" => binary(2 + 10),
        "bf16" => binary(2 + 7),
        "fixed16" => fixed(32767.0),
        "fixed8" => fixed(127.0),
        // Q·2^k ≥ 1: k = −18 for Q = 2¹⁹ − 1, k = −28 for Q = 2²⁹ − 1.
        "packed20" => binary(18),
        "packed30" => binary(28),
        // Sign, regime, exponent bits, the rest fraction: posit8 (es 0) 1 + 3 (k = −2)
        // + 0, 4 fraction bits; posit16 (es 1) 1 + 2 (k = −1) + 1, 12; posit32 (es 2)
        // 1 + 2 (k = −1, 1/3 = 16⁻¹ · 2² · 4/3) + 2, 27 fraction bits.
        "posit8" => binary(2 + 4),
        "posit16" => binary(2 + 12),
        "posit32" => binary(2 + 27),
        other => panic!("{other}: no hand-worked rounding of 1/3 in this test; add it"),
    }
}

/// A Wilson field whose every site holds (1, `v`) in its first component, zeros beside.
fn sites_of(v: f64) -> F64 {
    let layout = SpinorLayout::wilson(Lattice::new([2; 4]).unwrap(), SiteSubset::Full);
    let data = (0..layout.len())
        .map(|i| {
            if i % layout.site_len() == 0 {
                Complex::new(1.0, v)
            } else {
                Complex::new(0.0, 0.0)
            }
        })
        .collect();
    ColourSpinorField::from_data(layout, data).unwrap()
}

/// Each row's host iteration stores 1/3 as its format does (the vectors of its solve
/// and GCR: [`Precision::round_trip`]), and its rounding is the same as the vectors'.
#[test]
fn every_host_dispatch_reaches_its_format() {
    let x = sites_of(1.0 / 3.0);
    // The formats' values of 1/3 differ by at least 1e-9 (packed30 from f64): 1e-15
    // tells them apart and allows the fixed-point decode's fl(q · (norm · 1/Q)).
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-15;
    for p in Precision::ALL {
        let want = expected_third(p.name());
        let got = p.round_trip(&x);
        for site in got.data().chunks(x.layout().site_len()) {
            assert!(
                close(site[0].im, want),
                "{p}: {} against {want}",
                site[0].im
            );
            assert!(close(site[0].re, 1.0), "{p}: 1 stored as {}", site[0].re);
        }
        assert_eq!(
            p.is_emulated(),
            !matches!(p, Precision::F64 | Precision::F32)
        );
        if let Some(round) = p.rounding() {
            let mut y = x.clone();
            round(&mut y);
            assert_eq!(y.data(), got.data(), "{p}");
        }
    }
    // tf32 and f16 round 1/3 alike (10 fraction bits); tf32 has f32's exponent range,
    // f16's smallest subnormal is 2⁻²⁴: 2⁻³⁰ is kept by tf32 and flushed to 0 by f16.
    let tiny = sites_of(2f64.powi(-30));
    assert_eq!(
        Precision::Tf32.round_trip(&tiny).data()[0].im,
        2f64.powi(-30)
    );
    assert_eq!(Precision::F16.round_trip(&tiny).data()[0].im, 0.0);
}

/// Reports the format of the device vectors a precision dispatches to.
struct DeviceFormat;

impl DeviceIteration for DeviceFormat {
    type Output = &'static str;
    fn pure(self) -> &'static str {
        qdsl_runtime::solver::device::Double::FORMAT.name()
    }
    fn mixed<P: DevicePrecision>(self) -> &'static str {
        P::FORMAT.name()
    }
}

/// Every precision GPUs iterate in dispatches to the device format of its own name, and
/// those are exactly the precisions of `qdsl solve --precision`.
#[test]
fn every_device_dispatch_reaches_the_format_of_its_name() {
    let mut device = Vec::new();
    for p in Precision::ALL {
        if let Some(format) = p.on_device(DeviceFormat) {
            assert_eq!(format, p.name(), "{p:?}");
            device.push(p.name());
        }
        assert_eq!(p.has_device(), p.on_device(DeviceFormat).is_some());
    }
    assert_eq!(
        device,
        ["f64", "f32", "f16", "fixed16", "fixed8", "packed20", "packed30"]
    );
    for name in device {
        assert_eq!(Precision::parse_device(name).unwrap().name(), name);
    }
    assert_eq!(Precision::parse_device("FIXED16"), Ok(Precision::Fixed16));
    let e = Precision::parse_device("bf16").unwrap_err();
    assert_eq!(
        e,
        "unknown precision \"bf16\": expected f64 (pure), or f32, f16, fixed16, fixed8, \
         packed20 or packed30 (mixed with f64)"
    );
}
