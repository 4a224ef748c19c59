//! GPU tests of the generic Schur layer on device blocks (ignored without a GPU: see `crate::testing`): source
//! preparation, reconstruction and the full operator — the hop variants compiled on
//! first use — against the same generic code on host blocks, f64.

use super::*;
use crate::device::{DeviceField, Gpu};
use crate::operator::{EvenOddClover, EvenOddStaggered, EvenOddWilson, Schur, StaggeredLinks};
use crate::tune::Tuner;
use qdsl_core::dsl::variant::{Recon, StorageFormat, TimeBoundary};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{Compression, LinkFormat};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::{Lattice, Parity};

type Field = ColourSpinorField<f64>;

fn upload(gpu: &Gpu, f: &Field) -> DeviceField {
    DeviceField::from_spinor(gpu, f, StorageFormat::F64.fermion_format()).unwrap()
}

fn links(gpu: &Gpu, u: &GaugeField<f64>) -> DeviceField {
    let format = LinkFormat::new(StorageFormat::F64.link_storage(), Compression::Full);
    DeviceField::from_gauge(gpu, u, format).unwrap()
}

/// ‖got − want‖/‖want‖ of a downloaded field.
fn rel_err(gpu: &Gpu, got: &DeviceField, want: &Field) -> f64 {
    let got = got.to_spinor::<f64>(gpu, *want.layout()).unwrap();
    let (mut d, mut n) = (0.0, 0.0);
    for (x, y) in got.data().iter().zip(want.data()) {
        d += (x - y).norm_sqr();
        n += y.norm_sqr();
    }
    (d / n).sqrt()
}

/// Gaussian η_p, η_q of `layout` on parities p and its opposite.
fn sources(layout: SpinorLayout, p: Parity) -> (Field, Field) {
    let on = |r| layout.with_subset(SiteSubset::Single(r));
    (
        Field::gaussian(on(p), 3),
        Field::gaussian(on(p.opposite()), 4),
    )
}

/// Wilson (even), twisted clover (odd) and improved staggered (even, the normal form):
/// b̂ and ψ_q of the device Schur equal the host Schur's to 1e-13; the staggered full
/// M† from the device blocks equals the host one.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_prepare_reconstruct_and_full_operator_match_the_host() {
    let (gpu, dir) = crate::testing::gpu();
    let tuner = Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
        .with_enabled(false)
        .with_progress(false);
    let cx = DeviceRun::new(&gpu, &tuner);
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let u = GaugeField::<f64>::random(lat, 5);
    let bc = TimeBoundary::Antiperiodic;
    let formats = Variant {
        spinor: StorageFormat::F64,
        gauge: StorageFormat::F64,
        recon: Recon::R18,
        boundary: bc,
        ..Variant::default()
    };
    let check = |what: &str,
                 host: (Field, Field),
                 prepare: &dyn Fn(&DeviceField, &DeviceField) -> DeviceField,
                 reconstruct: &dyn Fn(&DeviceField, &DeviceField) -> DeviceField,
                 eta: (&Field, &Field)| {
        let (d_p, d_q) = (upload(&gpu, eta.0), upload(&gpu, eta.1));
        let b = prepare(&d_p, &d_q);
        let e = rel_err(&gpu, &b, &host.0);
        assert!(e < 1e-13, "{what} prepare: {e:e}");
        let x_q = reconstruct(&d_p, &d_q);
        let e = rel_err(&gpu, &x_q, &host.1);
        assert!(e < 1e-13, "{what} reconstruct: {e:e}");
    };

    let host = EvenOddWilson::new(u.clone(), 0.12, Parity::Even, bc);
    let device = Schur::wilson(&gpu, links(&gpu, &u), lat, 0.12, Parity::Even, &formats).unwrap();
    let (eta_p, eta_q) = sources(host.layout(), Parity::Even);
    let want = (
        host.prepare_source(&eta_p, &eta_q).unwrap(),
        host.reconstruct(&eta_p, &eta_q).unwrap(),
    );
    check(
        "wilson",
        want,
        &|p, q| device.prepare_source_in(cx, p, q).unwrap(),
        &|p, q| device.reconstruct_in(cx, p, q).unwrap(),
        (&eta_p, &eta_q),
    );

    let a = clover_field(&u, -0.2, 1.1);
    let host = EvenOddClover::from_clover(u.clone(), &a, 0.15, Parity::Odd, bc).unwrap();
    let device = Schur::clover(&gpu, links(&gpu, &u), &a, 0.15, Parity::Odd, &formats).unwrap();
    let (eta_p, eta_q) = sources(host.layout(), Parity::Odd);
    let want = (
        host.prepare_source(&eta_p, &eta_q).unwrap(),
        host.reconstruct(&eta_p, &eta_q).unwrap(),
    );
    check(
        "twisted clover",
        want,
        &|p, q| device.prepare_source_in(cx, p, q).unwrap(),
        &|p, q| device.reconstruct_in(cx, p, q).unwrap(),
        (&eta_p, &eta_q),
    );

    let long = GaugeField::<f64>::random(lat, 6);
    let host_links = StaggeredLinks::Improved {
        fat: u.clone(),
        long: long.clone(),
    };
    let host = EvenOddStaggered::new(host_links, 0.05, Parity::Even);
    let d_links = vec![links(&gpu, &u), links(&gpu, &long)];
    let device = Schur::staggered(&gpu, d_links, lat, 0.05, Parity::Even, &formats).unwrap();
    let (y_e, y_o) = sources(host.layout(), Parity::Even);
    let (mut want_e, mut want_o) = (y_e.clone(), y_o.clone());
    host.apply_full((&mut want_e, &mut want_o), (&y_e, &y_o), true)
        .unwrap();
    let (d_e, d_o) = (upload(&gpu, &y_e), upload(&gpu, &y_o));
    let (mut out_e, mut out_o) = (upload(&gpu, &y_e), upload(&gpu, &y_o));
    device
        .apply_full_in(cx, (&mut out_e, &mut out_o), (&d_e, &d_o), true)
        .unwrap();
    let e = rel_err(&gpu, &out_e, &want_e).max(rel_err(&gpu, &out_o, &want_o));
    assert!(e < 1e-13, "staggered M†: {e:e}");
}
