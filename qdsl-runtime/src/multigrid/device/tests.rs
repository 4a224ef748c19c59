//! The device construction: its kernels compile with NVRTC (registers and spills from
//! ptxas), and on a GPU (ignored elsewhere) Y_c, X_c and X⁻¹Y against the CPU reference
//! within each mode's bound, the fixed-point operator bitwise the CPU path's for two
//! launches, and a coarse operator coarsened again (N_c 24 → 32).

use super::super::coarsen::units::{matrix, unit_table, Side};
use super::super::dense::{mul_add, ZERO};
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

/// A side's values on the CPU (as the device gathers them).
fn side(op: &DenseOperator, p: &Prolongator, s: Side) -> Vec<C> {
    let (nf, nc2) = (op.n(), 2 * p.n_vectors());
    match s.matrix {
        None => p.v(s.site).to_vec(),
        Some(k) => {
            let mut uv = vec![ZERO; nf * nc2];
            mul_add(&mut uv, matrix(op, k), p.v(s.site), (nf, nf, nc2));
            uv
        }
    }
}

/// Per target and coarse site, √2 ‖a_i‖ ‖b_j‖ (the rows of the tile product, over all
/// units): Cauchy–Schwarz bounds the Σ|a||b| of the tiles' error bound.
fn magnitudes(op: &DenseOperator, p: &Prolongator) -> Vec<Vec<f64>> {
    let nc2 = 2 * p.n_vectors();
    let table = unit_table(op, p);
    let sites = p.coarse_lattice().volume();
    let mut out = Vec::new();
    for t in Target::ALL {
        let per = table.count[t.index()];
        for xc in 0..sites {
            let (mut na, mut nb) = (vec![0.0; nc2], vec![0.0; nc2]);
            for u in &table.units[t.index()][xc * per..(xc + 1) * per] {
                for (norms, s) in [(&mut na, u.a), (&mut nb, u.b)] {
                    for (k, z) in side(op, p, s).iter().enumerate() {
                        norms[k % nc2] += z.norm_sqr();
                    }
                }
            }
            out.push(
                (0..nc2 * nc2)
                    .map(|e| std::f64::consts::SQRT_2 * (na[e / nc2] * nb[e % nc2]).sqrt())
                    .collect(),
            );
        }
    }
    out
}

/// The mode's relative bound ε for products of depth k.
fn epsilon(mode: TileMode, nc2: usize, k: usize) -> f64 {
    let (v, _) = Tiles::variant(mode, nc2, k).unwrap();
    let spec = match mode {
        TileMode::F64 => CoarseVuvF64::spec(),
        TileMode::Bf16x3 => CoarseVuvBf16x3::spec(),
    };
    mma::cpu::error_bound(&spec, v.input, v.tile_k, k)
}

/// The device operator against the reference, each entry within twice the mode's bound
/// (GPU and the f64 reference each within it of the exact value).
fn assert_within(
    got: &DenseOperator,
    want: &DenseOperator,
    op: &DenseOperator,
    p: &Prolongator,
    dc: &DeviceCoarsen<'_>,
    mode: TileMode,
) {
    let mags = magnitudes(op, p);
    let (sites, nc2) = (p.coarse_lattice().volume(), 2 * p.n_vectors());
    for t in Target::ALL {
        let eps = 2.0 * epsilon(mode, nc2, dc.depth(t)) + 1e-15;
        for xc in 0..sites {
            let pick = |m: &DenseOperator| -> Vec<C> {
                match t {
                    Target::Site => m.x.link(xc, 0).to_vec(),
                    Target::Forward(mu) => m.yf.link(xc, mu).to_vec(),
                    Target::Backward(mu) => m.yb.link(xc, mu).to_vec(),
                }
            };
            let mag = &mags[t.index() * sites + xc];
            for (e, (g, w)) in pick(got).iter().zip(pick(want)).enumerate() {
                let d = g - w;
                assert!(
                    d.re.abs().max(d.im.abs()) <= eps * mag[e],
                    "{mode:?} {t:?} coarse site {xc} entry {e}: GPU {g} CPU {w} (bound {})",
                    eps * mag[e]
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_coarse_operator_agrees_with_the_reference() {
    let (gpu, _dir) = crate::testing::gpu();
    let (_, _, op) = wilson_clover(0.1, 3);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 100), [2, 2, 2, 2]).unwrap();
    let want = coarsen(&op, &p).unwrap();
    let mut dc = DeviceCoarsen::new(&gpu, &op, &p).unwrap();
    for mode in [TileMode::F64, TileMode::Bf16x3] {
        let d = dc.build(mode).unwrap();
        let got = dc.download(&d).unwrap();
        assert_within(&got, &want, &op, &p, &dc, mode);
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
        let eps = 2.0 * epsilon(mode, nc2, 2 * nc2) + 1e-11;
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
