//! The device construction: its kernels compile with NVRTC (registers and spills from
//! ptxas), and on a GPU (ignored elsewhere) Y_c, X_c and X⁻¹Y against the CPU reference
//! within each mode's bound, the fixed-point operator bitwise the CPU path's for two
//! launches, and a coarse operator coarsened again (N_c 24 → 32).

use super::super::tests::{gaussian_vectors, wilson_clover};
use super::super::{coarsen, coarsen_fixed16, Grouping};
use super::*;
use crate::jit::{ptxas, Arch, Jit};
use qdsl_core::lattice::Lattice;

/// Every program the construction uses (N_f 12 → 2N_v 48 and 64; N_f 48 → 64: the
/// second level) compiles for sm_90 with no spills; the registers are printed.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn the_construction_kernels_compile_without_spills() {
    let root = tempfile::tempdir().unwrap();
    let jit = Jit::new(root.path(), None).unwrap_or_else(|e| panic!("NVRTC: {e}"));
    let mut programs = Vec::new();
    for (nf, nc2, threads) in [(12, 48, 256), (12, 48, 128), (12, 64, 256), (48, 64, 256)] {
        programs.push(program(&CoarseSizes { nf, nc2, threads }));
    }
    for (mode, nc2, k) in [
        (TileMode::F64, 48, 1536),
        (TileMode::Bf16x3, 48, 1536),
        (TileMode::F64, 64, 6144),
        (TileMode::Bf16x3, 64, 6144),
        (TileMode::F64, 48, 96),
        (TileMode::Bf16x3, 48, 96),
    ] {
        let (v, _) = Tiles::variant(mode, nc2, k).unwrap();
        let plan = match mode {
            TileMode::F64 => CoarseVuvF64::plan(&v),
            TileMode::Bf16x3 => CoarseVuvBf16x3::plan(&v),
        }
        .unwrap();
        programs.push(mma::cuda::program(&plan));
    }
    for p in programs {
        let ptx = jit
            .compile(
                &p.name,
                &p.source,
                Arch::SM_90,
                &crate::device::codegen::options(),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", p.name))
            .ptx;
        let reports = ptxas::report(&ptx, Arch::SM_90).unwrap();
        for k in &p.kernels {
            let r = reports
                .iter()
                .find(|r| r.function == k.name)
                .unwrap_or_else(|| panic!("no ptxas report for {} in {}", k.name, p.name));
            println!(
                "{} {}: {} registers, {} / {} bytes spilled",
                p.name, r.function, r.registers, r.spill_stores, r.spill_loads
            );
            assert_eq!(
                (r.spill_stores, r.spill_loads),
                (0, 0),
                "{} spills",
                r.function
            );
        }
    }
}

/// Each entry within the mode's bound ([`bounds::worst_ratio`] ≤ 1).
fn assert_within(
    got: &DenseOperator,
    want: &DenseOperator,
    op: &DenseOperator,
    p: &Prolongator,
    dc: &DeviceCoarsen<'_>,
    mode: TileMode,
) {
    let r = bounds::worst_ratio(got, want, op, p, dc, mode);
    assert!(r <= 1.0, "{mode:?}: an entry at {r} of its bound");
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_coarse_operator_agrees_with_the_reference() {
    let (gpu, _dir) = crate::testing::gpu();
    let (_, _, op) = wilson_clover(0.1, 3);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 100), [2, 2, 2, 2]).unwrap();
    let want = coarsen(&op, &p).unwrap();
    let mut dc = DeviceCoarsen::new(&gpu, &op, &p).unwrap();
    let mut first = None;
    for mode in [TileMode::F64, TileMode::Bf16x3] {
        let d = dc.build(mode).unwrap();
        let got = dc.download(&d).unwrap();
        assert_within(&got, &want, &op, &p, &dc, mode);
        first.get_or_insert(got);
    }
    // The tile buffers are kept from target to target and call to call (their zero pads
    // rewritten by the gathers): a second f64 build is the first's bits.
    let rebuilt = dc.build(TileMode::F64).unwrap();
    let again = dc.download(&rebuilt).unwrap();
    let first = first.unwrap();
    for (a, b) in [
        (&again.x, &first.x),
        (&again.yf, &first.yf),
        (&again.yb, &first.yb),
    ] {
        assert!(
            a.data() == b.data(),
            "the second build differs from the first"
        );
    }
}

/// X⁻¹ and X⁻¹Y of the device against [`Preconditioned::new`] of the device's own X, Y
/// (the stage alone): f64 to 1e-11 of the largest entry, 3×BF16 within its bound for
/// K = 2 · 2N_v over ‖rows‖ ‖columns‖ (plus the f64 inversion's 1e-11).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_x_inv_y_agrees_with_the_cpu() {
    let (gpu, _dir) = crate::testing::gpu();
    let (_, _, op) = wilson_clover(0.1, 3);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 100), [2, 2, 2, 2]).unwrap();
    let mut dc = DeviceCoarsen::new(&gpu, &op, &p).unwrap();
    let nc2 = 48;
    for mode in [TileMode::F64, TileMode::Bf16x3] {
        let d = dc.build(mode).unwrap();
        let coarse = dc.download(&d).unwrap();
        let want = Preconditioned::new(&coarse).unwrap();
        let got = dc.preconditioned(&d, mode).unwrap();
        let scale = |f: &DenseLinkField<f64>| f.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
        let dx = got
            .x_inv
            .data()
            .iter()
            .zip(want.x_inv.data())
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(dx <= 1e-11 * scale(&want.x_inv), "{mode:?} X⁻¹: {dx:e}");
        let eps = 2.0 * bounds::epsilon(mode, nc2, 2 * nc2) + 1e-11;
        for (g, w, a, b) in [
            (&got.op.yf, &want.op.yf, &want.x_inv, &coarse.yf),
            (&got.op.yb, &want.op.yb, &coarse.yb, &want.x_inv),
        ] {
            // ‖rows of the first factor‖ ‖columns (or rows) of the second‖ bound the sums.
            let norm = 2.0 * scale(a) * scale(b) * nc2 as f64;
            let d = g
                .data()
                .iter()
                .zip(w.data())
                .map(|(x, y)| (x - y).norm())
                .fold(0.0, f64::max);
            assert!(d <= eps * norm, "{mode:?} links: {d:e} > {:e}", eps * norm);
        }
    }
}

/// The fixed-point operator of the device is the CPU path's bits, for two launches
/// (256 threads, 16 units a block; 128 threads, 5 units).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_fixed16_is_bitwise_the_cpu_path() {
    let (gpu, _dir) = crate::testing::gpu();
    let (_, _, op) = wilson_clover(0.1, 14);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 800), [2, 2, 2, 2]).unwrap();
    let want = coarsen_fixed16(
        &op,
        &p,
        Grouping {
            group: 1,
            reversed: false,
        },
    )
    .unwrap();
    let mut dc = DeviceCoarsen::new(&gpu, &op, &p).unwrap();
    for launch in [
        UnitLaunch::default(),
        UnitLaunch {
            threads: 128,
            group: 5,
        },
    ] {
        let got = dc.fixed16(launch).unwrap();
        assert!(
            got == want,
            "{launch:?}: the device's fixed16 differs from the CPU's"
        );
    }
}

/// A coarse operator coarsened again on the device (N_f = 48, N_v 32: 2N_v = 64), f64
/// and 3×BF16, against the reference; and its fixed16 bitwise the CPU's.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_coarsens_a_coarse_operator() {
    let (gpu, _dir) = crate::testing::gpu();
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let m = DenseOperator::new(
        DenseLinkField::random_of(DenseKind::SiteMatrix, lat, 48, 31).unwrap(),
        DenseLinkField::random(lat, 48, 32).unwrap(),
        DenseLinkField::random(lat, 48, 33).unwrap(),
        (2, 24),
    )
    .unwrap();
    let p = Prolongator::new(&gaussian_vectors(m.layout(), 32, 500), [2, 2, 2, 2]).unwrap();
    let want = coarsen(&m, &p).unwrap();
    let mut dc = DeviceCoarsen::new(&gpu, &m, &p).unwrap();
    for mode in [TileMode::F64, TileMode::Bf16x3] {
        let d = dc.build(mode).unwrap();
        assert_within(&dc.download(&d).unwrap(), &want, &m, &p, &dc, mode);
    }
    let fixed = coarsen_fixed16(
        &m,
        &p,
        Grouping {
            group: 1,
            reversed: false,
        },
    )
    .unwrap();
    assert!(dc.fixed16(UnitLaunch::default()).unwrap() == fixed);
}
