//! GPU tests of the check and bench paths (each returns early, printing why, where there
//! is no GPU): generated kernels and operators against the CPU reference, and a bench
//! smoke run.

use super::*;
use crate::bench::report::{BenchCase, BenchKernel};
use crate::bench::run::copy_bandwidth;
use crate::bench::{run_bench, BenchOptions};

use qdsl_runtime::testing::gpu;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// A spread of variants of every catalog kernel (parities, full lattice, dagger, xpay,
/// f64/f32, recon 12/18, both boundaries) on random fields and the real configurations:
/// every one within its bound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_kernels_match_the_cpu_reference() {
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    for entry in qdsl_kernels::catalog::stencils() {
        let ir = (entry.ir)();
        // Dense-link kernels have their own rows and GPU test (`check::dense`).
        if lower(&ir).is_ok_and(|l| l.dense.is_some()) {
            continue;
        }
        let gauges = ir
            .fields
            .iter()
            .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
            .count();
        let random = DataSet {
            name: "random".into(),
            // A gauge-free kernel still takes its lattice from one field.
            links: (0..gauges.max(1) as u64)
                .map(|k| GaugeField::random(lat, 40 + k))
                .collect(),
        };
        let real = real_links(&data_dir(), &entry.name, gauges).unwrap();
        let variants: Vec<Variant> = Variant::all()
            .into_iter()
            .enumerate()
            .filter(|(k, v)| k % 7 == 0 && ir.knobs.check(&ir.name, v).is_ok())
            .map(|(_, v)| v)
            .collect();
        assert!(variants.len() >= 6, "{}", entry.name);
        for data in [&random, &real] {
            for v in &variants {
                let o = compare_kernel_any(&gpu, &entry, v, data, 5);
                assert!(
                    matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                    "{} {v} {}: {o:?}",
                    entry.name,
                    data.name
                );
            }
        }
    }
}

/// The compressed long-link rows of `qdsl check` — long recon 13, 12 + sign and 9, each
/// in f64, f32 and fixed16 with three settings of the other knobs — on asqtad long links
/// of random thin links and on MILC's fat.l8 + long.l8: every row compared and within its
/// bound, except the fixed16 rows on MILC's fat links (entries above 1), skipped with the
/// reason. Kernels without long links get no such rows.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn compressed_long_link_rows_match_the_cpu_reference() {
    let wilson = (qdsl_kernels::catalog::stencils().into_iter())
        .find(|e| e.name == "wilson_hop")
        .unwrap();
    assert!(long_recon_variants(&(wilson.ir)()).is_empty());
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let entry = (qdsl_kernels::catalog::stencils().into_iter())
        .find(|e| e.name == "improved_staggered_hop")
        .unwrap();
    let ir = (entry.ir)();
    let variants = long_recon_variants(&ir);
    assert_eq!(variants.len(), 27);
    let random = random_links(lat, &ir, 2, 7).unwrap();
    let real = real_links(&data_dir(), &entry.name, 2).unwrap();
    let mut compared = 0;
    for data in [&random, &real] {
        for v in &variants {
            let o = compare_kernel_any(&gpu, &entry, v, data, 11);
            let fixed_on_milc = data.name != "random" && v.spinor == StorageFormat::Fixed16;
            match o {
                Outcome::Skipped(ref why) if fixed_on_milc => {
                    assert!(why.contains("cannot be stored"), "{v}: {why}")
                }
                _ => {
                    assert!(
                        matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                        "{v} {}: {o:?}",
                        data.name
                    );
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 27 + 18);
}

/// The global-link-scale rows of `qdsl check` (fixed16 and fixed8 links stored as s·q/Q,
/// [`link_scale_variants`]) of the naive and improved staggered hops and the Wilson hop on
/// random links and on the real ones — MILC's fat.l8 (entries up to 8.3, which unit-scale
/// fixed point skips) + long.l8, lat.sample.l8 for Wilson: every row compared (none
/// skipped) and within its bound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn global_link_scale_rows_match_the_cpu_reference() {
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let mut compared = 0;
    for name in [
        "naive_staggered_hop",
        "improved_staggered_hop",
        "wilson_hop",
    ] {
        let entry = (qdsl_kernels::catalog::stencils().into_iter())
            .find(|e| e.name == name)
            .unwrap();
        let ir = (entry.ir)();
        let gauges = gauge_names(&ir).len();
        let random = random_links(lat, &ir, gauges, 7).unwrap();
        let real = real_links(&data_dir(), &entry.name, gauges).unwrap();
        for data in [&random, &real] {
            for v in link_scale_variants(&ir) {
                let o = compare_kernel_any(&gpu, &entry, &v, data, 13);
                assert!(
                    matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                    "{name} {v} {}: {o:?}",
                    data.name
                );
                compared += 1;
            }
        }
    }
    // 8 variants per data set (16 for the improved hop: long recon 18 and 12 + sign).
    assert_eq!(compared, 2 * (8 + 16 + 8));
}

/// The packed-spinor rows of `qdsl check` ([`packed_variants`]: packed20 in f32 and
/// packed30 in f64, links in the compute type) of the Wilson hop, the twist, the clover
/// kernels and the staggered hops on random links and on the real ones: every row
/// compared and within its bound (the compute type's rounding plus one packed step).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn packed_spinor_rows_match_the_cpu_reference() {
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let mut compared = 0;
    for name in [
        "wilson_hop",
        "twisted_mass_twist",
        "wilson_clover",
        "clover_apply",
        "naive_staggered_hop",
        "improved_staggered_hop",
    ] {
        let entry = (qdsl_kernels::catalog::stencils().into_iter())
            .find(|e| e.name == name)
            .unwrap();
        let ir = (entry.ir)();
        let gauges = gauge_names(&ir).len();
        let random = random_links(lat, &ir, gauges, 7).unwrap();
        let real = real_links(&data_dir(), &entry.name, gauges).unwrap();
        for data in [&random, &real] {
            for v in packed_variants() {
                if ir.knobs.check(&ir.name, &v).is_err() {
                    continue;
                }
                let o = compare_kernel_any(&gpu, &entry, &v, data, 17);
                assert!(
                    matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                    "{name} {v} {}: {o:?}",
                    data.name
                );
                compared += 1;
            }
        }
    }
    // 8 variants per data set (4 for the staggered hops: recon 18 only).
    assert_eq!(compared, 2 * (4 * 8 + 2 * 4));
}

/// M̂, M̂† (Wilson, lat.sample.l8), the asqtad A (fat.l8, long.l8) and the open- and
/// SF-boundary Wilson and clover M̂, M̂† (openQCD's gauge.bc_0.bin, f64 and f32) on the
/// GPU match the host operators.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_operators_match_the_host_operators() {
    let (gpu, _dir) = gpu();
    let rows = check_operators(&gpu, &data_dir());
    // Wilson M̂, M̂†: f64, f32 recon 18 and 12, packed20, packed30; asqtad: f64, f32,
    // packed20, packed30; open/SF Wilson and clover: 3 operators × (M̂, M̂†) × (f64, f32).
    assert_eq!(rows.len(), 2 * 5 + 4 + 3 * 4);
    for kernel in ["wilson_eo open", "clover_eo open", "clover_eo sf"] {
        assert_eq!(rows.iter().filter(|r| r.kernel == kernel).count(), 4);
    }
    for r in &rows {
        assert!(
            matches!(r.outcome, Outcome::Compared { .. }) && !r.outcome.is_failure(),
            "{r:?}"
        );
    }
}

/// The bench runs end to end on a small lattice: a plausible copy bandwidth, one hop
/// and M̂ measured with positive times, a fixed-point case skipped with the emitter's
/// reason.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn bench_smoke_run() {
    let (gpu, dir) = gpu();
    let c = copy_bandwidth(&gpu, 64 << 20, 2, 5).unwrap();
    assert!(c.memcpy_gbs > 10.0 && c.kernel_gbs > 10.0, "{c:?}");
    let tuner =
        qdsl_runtime::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_progress(false);
    let case = |kernel, format, recon| BenchCase {
        kernel,
        format,
        recon,
        sources: None,
    };
    let opts = BenchOptions {
        extents: vec![8],
        cases: vec![
            case(BenchKernel::WilsonHop, StorageFormat::F32, Recon::R12),
            case(
                BenchKernel::ImprovedStaggeredHop,
                StorageFormat::F32,
                Recon::R18,
            ),
            case(BenchKernel::WilsonEo, StorageFormat::F32, Recon::R12),
            case(BenchKernel::CloverEo, StorageFormat::F32, Recon::R12),
            case(BenchKernel::TwistedMassEo, StorageFormat::F32, Recon::R12),
            case(BenchKernel::WilsonHop, StorageFormat::Fixed16, Recon::R12),
            case(BenchKernel::WilsonHeatbath, StorageFormat::F64, Recon::R18),
            case(BenchKernel::WilsonHmc, StorageFormat::F64, Recon::R18),
        ],
        warmup: 2,
        reps: 5,
        copy_bytes: 16 << 20,
        seed: 1,
    };
    let report = run_bench(&gpu, &tuner, &opts, &mut |_| {}).unwrap();
    // The improved staggered f32 case also runs with long links in recon 13, 12 + sign
    // and 9.
    // Plus the heatbath sweep and the HMC trajectory rows.
    assert_eq!(report.results.len(), 11, "{:?}", report.skipped);
    for suffix in [" long13", " long12", " long9"] {
        assert!(
            report.results.iter().any(|r| r.label.ends_with(suffix)),
            "no{suffix} row"
        );
    }
    for r in &report.results {
        assert!(r.time_us > 0.0 && r.rates.gflops > 0.0, "{r:?}");
        // The generation rows update the whole lattice, the others one parity.
        let whole = r.label.starts_with("wilson_heatbath") || r.label.starts_with("wilson_hmc");
        assert_eq!(r.sites, 8usize.pow(4) / if whole { 1 } else { 2 });
    }
    let row = |label: &str| {
        let found = report.results.iter().find(|r| r.label == label);
        found.unwrap_or_else(|| panic!("no row {label}"))
    };
    assert_eq!(
        row("wilson_eo f32 recon12").flops_per_site,
        1320 + 1320 + 72
    );
    // Clover M̂: two hops (the second with xpay a·x + b·y, 72 more), two clover products
    // of 504; twisted mass: a third clover product and two twists of 48. Their bytes are
    // more than the Wilson operator's (the clover fields and the intermediates).
    assert_eq!(
        row("clover_eo f32 recon12").flops_per_site,
        1320 + 1392 + 2 * 504
    );
    assert_eq!(
        row("twisted_mass_eo f32 recon12").flops_per_site,
        1320 + 1392 + 3 * 504 + 2 * 48
    );
    for label in ["clover_eo f32 recon12", "twisted_mass_eo f32 recon12"] {
        let (op, wilson) = (row(label).bytes, row("wilson_eo f32 recon12").bytes);
        assert!(
            op.minimal > wilson.minimal && op.quda > wilson.quda,
            "{label}"
        );
    }
    // fixed16 recon 12, QUDA's byte model: the output site (48 B + a 4 B norm) and 8 ×
    // (neighbour site 52 B + link 24 B) = 660 B per site.
    assert_eq!(
        row("wilson_hop fixed16 recon12").bytes.quda,
        52 + 8 * (52 + 24)
    );
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
}

/// The narrow storage formats on the GPU (decoding on load, fixed-point norms, encoding
/// on store) against the CPU path, which rounds through qdsl_core::format's exact
/// encodings: f16, bf16, fixed16, fixed8 for spinor and links, recon 18 and 12, with and
/// without xpay, even and odd (dagger) outputs, on random SU(3) links (every kernel) and
/// the real Wilson configuration; each within the format's bound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn narrow_formats_match_the_cpu_path() {
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let narrow = [
        StorageFormat::F16,
        StorageFormat::BF16,
        StorageFormat::Fixed16,
        StorageFormat::Fixed8,
    ];
    for entry in qdsl_kernels::catalog::stencils() {
        let ir = (entry.ir)();
        let gauges = ir
            .fields
            .iter()
            .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
            .count();
        let mut sets = vec![DataSet {
            name: "random".into(),
            // A gauge-free kernel still takes its lattice from one field.
            links: (0..gauges.max(1) as u64)
                .map(|k| GaugeField::random(lat, 60 + k))
                .collect(),
        }];
        if entry.name == "wilson_hop" {
            sets.push(real_links(&data_dir(), &entry.name, gauges).unwrap());
        }
        for data in &sets {
            for format in narrow {
                for recon in Recon::ALL {
                    for (xpay, odd) in [(false, false), (true, true)] {
                        let v = Variant {
                            sites: OutputSites::Parity(if odd {
                                Parity::Odd
                            } else {
                                Parity::Even
                            }),
                            dagger: odd,
                            xpay,
                            spinor: format,
                            gauge: format,
                            recon,
                            ..Variant::default()
                        };
                        if ir.knobs.check(&ir.name, &v).is_err() || (entry.cuda)(&v).is_err() {
                            continue;
                        }
                        let o = compare_kernel_any(&gpu, &entry, &v, data, 9);
                        assert!(
                            matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                            "{} {v} {}: {o:?}",
                            entry.name,
                            data.name
                        );
                    }
                }
            }
        }
    }
}

/// `qdsl check`'s smearing rows: three specs in the tree plan (with uncompressed and
/// recon-12 input links), HISQ fat and long links, asqtad fat, fat7 and HISQ with the
/// staged plan (the default; uncompressed and recon-12 input links), the pullback
/// (gather plan) through asqtad fat, fat7, HISQ's second level, the Naik term and HISQ, and two gauge forces in f64 and f32, each compared and passing its bound; a filter keeps only the
/// matching spec.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn check_rows_of_the_smearing_specs_pass() {
    let (gpu, _dir) = gpu();
    let dir = data_dir();
    let rows = crate::check::smear::check_smearing(&gpu, &dir, &|_| true);
    assert_eq!(rows.len(), 46);
    assert_eq!(
        rows.iter()
            .filter(|r| r.variant.ends_with("plan=staged"))
            .count(),
        16
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r.variant.ends_with("input=recon12"))
            .count(),
        6
    );
    for r in &rows {
        assert!(
            matches!(r.outcome, crate::check::Outcome::Compared { .. }) && !r.outcome.is_failure(),
            "{r:?}"
        );
    }
    let fat7 = crate::check::smear::check_smearing(&gpu, &dir, &|n| n.contains("fat7"));
    assert_eq!(fat7.len(), 10);
    let forces = crate::check::smear::check_smearing(&gpu, &dir, &|n| n.ends_with("_force"));
    assert_eq!(forces.len(), 4);
    let hisq = crate::check::smear::check_smearing(&gpu, &dir, &|n| n.starts_with("hisq_links"));
    assert_eq!(hisq.len(), 12);
}

/// The multi-right-hand-side rows of `qdsl check` ([`multi_rhs_variants`]: the slices
/// inside the block, 4 sources in one block) of every non-dense catalog kernel on random
/// links and on the real ones: every row compared and within its bound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn multi_rhs_rows_match_the_cpu_reference() {
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let mut compared = 0;
    for entry in qdsl_kernels::catalog::stencils() {
        let ir = (entry.ir)();
        if lower(&ir).is_ok_and(|l| l.dense.is_some()) {
            continue;
        }
        let gauges = gauge_names(&ir).len();
        let random = random_links(lat, &ir, gauges, 9).unwrap();
        let real = real_links(&data_dir(), &entry.name, gauges).unwrap();
        for data in [&random, &real] {
            for v in multi_rhs_variants() {
                if ir.knobs.check(&ir.name, &v).is_err() || (entry.cuda)(&v).is_err() {
                    continue;
                }
                let o = compare_kernel_any(&gpu, &entry, &v, data, 19);
                assert!(
                    matches!(o, Outcome::Compared { .. }) && !o.is_failure(),
                    "{} {v} {}: {o:?}",
                    entry.name,
                    data.name
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 2 * 5 * 2, "{compared} rows");
}

/// The multi-RHS bench rows: Wilson f32 recon 12 and improved staggered f32 on 1 and 4
/// sources at 8⁴, per source: positive times, the minimal bytes with the links shared
/// (Wilson at N = 4: 2 · 96 + 384/4 = 288 B per site and source).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn multi_rhs_bench_rows() {
    let (gpu, dir) = gpu();
    let tuner =
        qdsl_runtime::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_progress(false);
    let case = |kernel, recon, sources| BenchCase {
        kernel,
        format: StorageFormat::F32,
        recon,
        sources: Some(sources),
    };
    let opts = BenchOptions {
        extents: vec![8],
        cases: vec![
            case(BenchKernel::WilsonHop, Recon::R12, 1),
            case(BenchKernel::WilsonHop, Recon::R12, 4),
            case(BenchKernel::ImprovedStaggeredHop, Recon::R18, 4),
        ],
        warmup: 2,
        reps: 5,
        copy_bytes: 16 << 20,
        seed: 1,
    };
    let report = run_bench(&gpu, &tuner, &opts, &mut |_| {}).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.results.len(), 3);
    let row = |label: &str| report.results.iter().find(|r| r.label == label).unwrap();
    assert_eq!(row("wilson_hop f32 recon12 sources1").bytes.minimal, 576);
    assert_eq!(row("wilson_hop f32 recon12 sources4").bytes.minimal, 288);
    for r in &report.results {
        assert!(r.time_us > 0.0 && r.rates.gbs_minimal > 0.0, "{r:?}");
    }
}

/// The Möbius rows of `qdsl check`: every `fused5d!` chain of the catalog on random 4⁴
/// links (Ls 12, both parities, xpay, f64 / f32 / fixed16: 13 chains × 3 formats × 2
/// parities × 1 or 2 xpay) and the device even-odd operator on lat.sample.l8 (3 forms ×
/// 3 formats × M̂, M̂†), the tensor-core M5⁻¹ chains and M̂ with it: every row compared
/// and within its bound.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn mobius_check_rows_pass() {
    let (gpu, dir) = gpu();
    let tuner =
        qdsl_runtime::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_enabled(false)
            .with_progress(false);
    let rows =
        crate::check::mobius::check_mobius(&gpu, &tuner, [4, 4, 4, 4], 7, &data_dir(), &|_| true);
    let chains = qdsl_kernels::domain_wall::chains();
    let xpay_chains = chains.iter().filter(|e| (e.chain)().xpay.is_some()).count();
    let chain_rows = 3 * 2 * (2 * chains.len() - xpay_chains);
    // The tensor-core chains: f16, bf16 × f32, fixed16 × Ls 12, 16; the device M̂ with
    // the tensor-core M5⁻¹: 2 modes × 2 formats × M̂, M̂†.
    let tensor_core = chains
        .iter()
        .filter(|e| {
            (e.chain)()
                .m5inv_modes()
                .contains(&qdsl_core::dsl::fused5d::M5invMode::MmaF16)
        })
        .count();
    assert_eq!(
        rows.len(),
        chain_rows + 8 * tensor_core + 3 * 3 * 2 + 2 * 2 * 2
    );
    for r in &rows {
        println!("{} {} {:?}", r.kernel, r.variant, r.outcome);
        assert!(
            matches!(r.outcome, crate::check::Outcome::Compared { .. }) && !r.outcome.is_failure(),
            "{r:?}"
        );
    }
}

/// `qdsl bench`'s Möbius rows at 8⁴: the hop alone, M5⁻¹ alone, the three fused kernels and the whole device M̂ in
/// three and two kernels (Ls 8, f32 recon 12): each row timed, and the whole M̂ (two or
/// three launches) not faster than 0.9 × its slowest kernel alone (timing noise aside).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn mobius_bench_rows_run() {
    let (gpu, dir) = gpu();
    let tuner =
        qdsl_runtime::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_progress(false);
    let kernels = [
        BenchKernel::MobiusDslash4,
        BenchKernel::MobiusM5inv,
        BenchKernel::MobiusDslash4pre,
        BenchKernel::MobiusDslash4M5invM5pre,
        BenchKernel::MobiusDslash4XpayM5mob,
        BenchKernel::MobiusEo,
        BenchKernel::MobiusEoTwoKernels,
    ];
    let opts = BenchOptions {
        extents: vec![8],
        cases: kernels
            .iter()
            .map(|&kernel| BenchCase {
                kernel,
                format: StorageFormat::F32,
                recon: Recon::R12,
                sources: Some(8),
            })
            .collect(),
        warmup: 2,
        reps: 5,
        copy_bytes: 16 << 20,
        seed: 1,
    };
    let report = run_bench(&gpu, &tuner, &opts, &mut |_| {}).unwrap();
    assert_eq!(report.results.len(), kernels.len(), "{:?}", report.skipped);
    for r in &report.results {
        println!("{} {:.1} µs", r.label, r.time_us);
        assert!(r.time_us > 0.0 && r.time_us.is_finite(), "{r:?}");
    }
    // One row per case, in order (speed itself is the bench's business, not a test's).
    for (r, k) in report.results.iter().zip(&kernels) {
        assert!(
            r.label.starts_with(k.name()),
            "{} for {}",
            r.label,
            k.name()
        );
    }
}
