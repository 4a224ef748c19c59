//! The walking thread map ([`Slices::Walk`]) on the GPU: the Wilson hop on N slices of a
//! 5D field equals N one-source launches to rounding (the same terms in the same order;
//! the compiler contracts multiply-adds of the walking kernel's code differently: 32 ulp
//! of the largest component at most, where any misplaced source or link is O(1)), for
//! both tile heights, f32 recon 12 and f64 recon 18, both parities, dagger and the
//! antiperiodic boundary, and tuned; launches the tiles do not fit are refused with the
//! reason.

use super::*;
use crate::tune;
use qdsl_core::dsl::kernel_ir::walk::BLOCK_ROWS;
use qdsl_core::dsl::variant::{Recon, Slices, TimeBoundary};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Parity;
use qdsl_kernels::WilsonHop;

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn walking_hops_equal_single_source_hops() {
    let (gpu, dir) = crate::testing::gpu();
    let lat = Lattice::new([8, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(lat, 61);
    // An odd number of slices: the last one is computed from the second stage.
    let n = 5;
    let n4 = lat.half_volume();
    let layout = |ls, p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3).unwrap();
    let cases = [
        (
            StorageFormat::F32,
            Recon::R12,
            Parity::Even,
            false,
            TimeBoundary::Periodic,
        ),
        (
            StorageFormat::F32,
            Recon::R12,
            Parity::Odd,
            true,
            TimeBoundary::Antiperiodic,
        ),
        (
            StorageFormat::F64,
            Recon::R18,
            Parity::Odd,
            false,
            TimeBoundary::Antiperiodic,
        ),
    ];
    for (format, recon, out_parity, dagger, boundary) in cases {
        let single = Variant {
            sites: OutputSites::Parity(out_parity),
            dagger,
            spinor: format,
            gauge: format,
            recon,
            boundary,
            ..Variant::default()
        };
        let walking = Variant {
            slices: Slices::Walk,
            ..single
        };
        let what =
            format!("{format:?} recon {recon:?} {out_parity:?} dagger {dagger} {boundary:?}");
        let in_parity = out_parity.opposite();
        let psi = ColourSpinorField::<f64>::gaussian(layout(n, in_parity), 63);
        let lf = LinkFormat::new(format.link_storage(), recon.compression());
        let d_u = DeviceField::from_gauge(&gpu, &u, lf).unwrap();
        let (hop_1, hop_n) = (
            DeviceStencil::of::<WilsonHop>(&gpu, &single).unwrap(),
            DeviceStencil::of::<WilsonHop>(&gpu, &walking).unwrap(),
        );
        let per = layout(1, in_parity).len();
        let mut want = Vec::new();
        for k in 0..n {
            let psi_k = ColourSpinorField::from_data(
                layout(1, in_parity),
                psi.data()[k * per..(k + 1) * per].to_vec(),
            )
            .unwrap();
            let d_psi = DeviceField::from_spinor(&gpu, &psi_k, format.fermion_format()).unwrap();
            let mut d_out = device_spinor(&gpu, format, 24, n4).unwrap();
            hop_1
                .launch(
                    &gpu,
                    &lat,
                    StencilLaunch::default_build(tune::LaunchConfig::default_for(n4)),
                    StencilArgs::new(&mut d_out, &[&d_psi, &d_u]),
                )
                .unwrap();
            let got = d_out.to_spinor::<f64>(&gpu, layout(1, out_parity)).unwrap();
            want.extend_from_slice(got.data());
        }
        let d_psi = DeviceField::from_spinor(&gpu, &psi, format.fermion_format()).unwrap();
        let geometry = hop_n.geometry();
        let work = [lat.dims()[0] / 2, n4 / (lat.dims()[0] / 2), 1];
        let walk = |rows: u32| {
            let mut d_out = device_spinor(&gpu, format, 24, n * n4).unwrap();
            let cfg = tune::LaunchConfig::of(&geometry, work, [4, rows, 1], None, 0);
            hop_n
                .launch(
                    &gpu,
                    &lat,
                    StencilLaunch::default_build(cfg),
                    StencilArgs::new(&mut d_out, &[&d_psi, &d_u]),
                )
                .map(|()| d_out.to_spinor::<f64>(&gpu, layout(n, out_parity)).unwrap())
        };
        let ulp = match format {
            StorageFormat::F32 => f64::from(f32::EPSILON),
            _ => f64::EPSILON,
        };
        let largest = want.iter().map(|z| z.norm()).fold(0.0, f64::max);
        let agrees = |got: &ColourSpinorField<f64>, label: &str| {
            let diff = got
                .data()
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            assert!(
                diff <= 32.0 * ulp * largest,
                "{what}, {label}: max |walk − one-source| {diff:e} against {largest:e}"
            );
        };
        for rows in BLOCK_ROWS {
            agrees(&walk(rows).unwrap(), &format!("{rows} rows"));
        }
        // 4 rows is no tile of the walk.
        let e = walk(4).unwrap_err();
        assert!(e.to_string().contains("slices=walk"), "{e}");
        // The tuned launch matches too.
        let tuner = crate::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_default_policy(crate::tune::TunePolicy::Full)
            .with_progress(false);
        let mut d_out = device_spinor(&gpu, format, 24, n * n4).unwrap();
        hop_n
            .run(
                &gpu,
                &tuner,
                &lat,
                StencilArgs::new(&mut d_out, &[&d_psi, &d_u]),
            )
            .unwrap();
        agrees(
            &d_out.to_spinor::<f64>(&gpu, layout(n, out_parity)).unwrap(),
            "tuned",
        );
    }
    // A lattice whose t extent the tile (4 in t) does not divide is refused.
    let odd = Lattice::new([8, 4, 4, 6]).unwrap();
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        slices: Slices::Walk,
        ..Variant::default()
    };
    let hop = DeviceStencil::of::<WilsonHop>(&gpu, &v).unwrap();
    let u6 = GaugeField::<f64>::random(odd, 62);
    let lf = LinkFormat::new(StorageFormat::F32.link_storage(), Recon::R12.compression());
    let d_u = DeviceField::from_gauge(&gpu, &u6, lf).unwrap();
    let l = SpinorLayout::new(odd, 2, SiteSubset::Single(Parity::Odd), 4, 3).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(l, 64);
    let d_psi = DeviceField::from_spinor(&gpu, &psi, StorageFormat::F32.fermion_format()).unwrap();
    let mut d_out = device_spinor(&gpu, StorageFormat::F32, 24, 2 * odd.half_volume()).unwrap();
    let work = [4, odd.half_volume() / 4, 1];
    let cfg = tune::LaunchConfig::of(&hop.geometry(), work, [4, 8, 1], None, 0);
    let e = hop
        .launch(
            &gpu,
            &odd,
            StencilLaunch::default_build(cfg),
            StencilArgs::new(&mut d_out, &[&d_psi, &d_u]),
        )
        .unwrap_err();
    assert!(e.to_string().contains("dividing L1, L2, L3"), "{e}");
}
