//! Every catalog kernel variant compiles with NVRTC for sm_80 and sm_90, and `ptxas -v`
//! reports its registers; the Wilson and staggered hops do not spill. Skips with a
//! message where libnvrtc or ptxas is absent.
//!
//! To keep the test fast, the 96 variants of a kernel are compiled as one NVRTC program:
//! each variant's (standalone) source is wrapped in its own C++ namespace, and the
//! `extern "C"` entry names differ by the variant hash.

mod nvrtc;

use qdsl_core::dsl::variant::{LongRecon, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist, WilsonHop};

type Source = fn(&Variant) -> Result<String, DslError>;
type Name = fn(&Variant) -> String;

fn catalog() -> [(&'static str, Source, Name); 4] {
    [
        ("wilson_hop", WilsonHop::cuda_source, WilsonHop::kernel_name),
        (
            "naive_staggered_hop",
            NaiveStaggeredHop::cuda_source,
            NaiveStaggeredHop::kernel_name,
        ),
        (
            "improved_staggered_hop",
            ImprovedStaggeredHop::cuda_source,
            ImprovedStaggeredHop::kernel_name,
        ),
        (
            "twisted_mass_twist",
            TwistedMassTwist::cuda_source,
            TwistedMassTwist::kernel_name,
        ),
    ]
}

/// Compiles a batch of variants of one kernel for one architecture as one program;
/// returns the register range.
fn check(
    tc: &nvrtc::Toolchain,
    (name, source, kernel_name): (&str, Source, Name),
    arch: &str,
    variants: &[Variant],
) -> (u32, u32) {
    let mut program = String::new();
    for v in variants {
        let src = source(v).unwrap();
        program.push_str(&format!(
            "namespace variant_{:016x} {{\n{src}}}\n",
            v.stable_hash()
        ));
    }
    let tag = format!("{name}_{arch}_{:016x}", variants[0].stable_hash());
    let entries: Vec<String> = variants.iter().map(kernel_name).collect();
    let reports = tc.compile_checked(&program, &tag, arch, &entries, true);
    assert_eq!(reports.len(), variants.len());
    let (mut lo, mut hi) = (u32::MAX, 0);
    for (entry, r) in &reports {
        assert!(r.registers > 0 && r.registers <= 255, "{entry}: {r:?}");
        lo = lo.min(r.registers);
        hi = hi.max(r.registers);
    }
    (lo, hi)
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn every_variant_compiles_and_does_not_spill() {
    let tc = nvrtc::Toolchain::load();
    // Batches of 16 variants per (kernel, architecture), compiled by a pool of threads
    // (NVRTC programs are independent); NVRTC needs about 0.5 s of CPU per variant.
    let variants = Variant::all();
    // QDSL_NVRTC_ONLY=<kernel name> compiles one kernel's variants (e.g. a new kernel).
    let only = std::env::var("QDSL_NVRTC_ONLY").ok();
    let mut jobs = Vec::new();
    for k in catalog()
        .into_iter()
        .filter(|k| only.as_deref().is_none_or(|o| o == k.0))
    {
        for arch in ["sm_80", "sm_90"] {
            for batch in variants.chunks(16) {
                let batch: Vec<Variant> =
                    batch.iter().filter(|v| (k.1)(v).is_ok()).copied().collect();
                if batch.is_empty() {
                    continue;
                }
                jobs.push((k, arch, batch));
            }
        }
    }
    let queue = std::sync::Mutex::new(jobs);
    let results = std::sync::Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let job = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let Some((k, arch, batch)) = job else { break };
                let range = check(&tc, k, arch, &batch);
                results.lock().unwrap_or_else(|e| e.into_inner()).push((
                    k.0,
                    arch,
                    batch.len(),
                    range,
                ));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    // Wilson and the twist: all 96 variants; staggered: the 48 with recon 18 (the spec
    // excludes 12).
    let total: usize = results.iter().map(|r| r.2).sum();
    if only.is_none() {
        assert_eq!(total, 2 * (96 + 48 + 48 + 96));
    }
    results.sort();
    for (name, arch, n, (lo, hi)) in results {
        println!("{name} {arch}: {n} variants, {lo}..{hi} registers, no spills");
    }
}

/// The narrow-storage variants: each of f16, bf16, fixed16, fixed8 (spinor and gauge)
/// with recon 18, 12 and 8, plain and with xpay (dagger and antiperiodic time on the
/// xpay ones), plus mixed precision (fixed16 spinor with f32 links, f32 spinor with
/// fixed16 links); those a kernel's knobs exclude are left out by the caller.
fn narrow_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for format in [
        StorageFormat::F16,
        StorageFormat::BF16,
        StorageFormat::Fixed16,
        StorageFormat::Fixed8,
    ] {
        for recon in Recon::EVERY {
            for xpay in [false, true] {
                out.push(Variant {
                    spinor: format,
                    gauge: format,
                    recon,
                    xpay,
                    dagger: xpay,
                    boundary: if xpay {
                        TimeBoundary::Antiperiodic
                    } else {
                        TimeBoundary::Periodic
                    },
                    ..Variant::default()
                });
            }
        }
    }
    for (spinor, gauge) in [
        (StorageFormat::Fixed16, StorageFormat::F32),
        (StorageFormat::F32, StorageFormat::Fixed16),
    ] {
        out.push(Variant {
            spinor,
            gauge,
            recon: Recon::R12,
            ..Variant::default()
        });
    }
    out
}

/// Every narrow-storage variant ([`narrow_variants`]) of every catalog kernel compiles
/// for sm_80 and sm_90, and none spills (QDSL_NVRTC_ONLY=<kernel> filters as above).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn narrow_variants_compile_and_do_not_spill() {
    let tc = nvrtc::Toolchain::load();
    let only = std::env::var("QDSL_NVRTC_ONLY").ok();
    let mut compiled = 0;
    for k in catalog()
        .into_iter()
        .filter(|k| only.as_deref().is_none_or(|o| o == k.0))
    {
        let variants: Vec<Variant> = narrow_variants()
            .into_iter()
            .filter(|v| (k.1)(v).is_ok())
            .collect();
        for arch in ["sm_80", "sm_90"] {
            let (lo, hi) = check(&tc, k, arch, &variants);
            println!(
                "{} {arch}: {} narrow variants, {lo}..{hi} registers, no spills",
                k.0,
                variants.len()
            );
            compiled += variants.len();
        }
    }
    if only.is_none() {
        // Wilson and the twist: 4 formats × 3 recons × 2 + 2 mixed = 26; staggered:
        // recon 18 only (the knobs exclude 12 and 8) = 8.
        assert_eq!(compiled, 2 * (26 + 8 + 8 + 26));
    }
}

/// The prefetch build (the tuner's `-DQDSL_PREFETCH=1`, here a define at the top of the
/// source) of the benchmarked hop variants compiles, asks L2 for lines
/// (`prefetch.global.L2` in its PTX, none in the default build's) and does not spill;
/// so does its links-only form (`QDSL_PREFETCH_LINKS_ONLY`), with fewer prefetches (the
/// source records left out).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn prefetch_builds_compile_and_do_not_spill() {
    let tc = nvrtc::Toolchain::load();
    let hop = |spinor: StorageFormat, recon: Recon, long_recon: LongRecon| Variant {
        spinor,
        gauge: spinor,
        recon,
        long_recon,
        ..Variant::default()
    };
    let [wilson, _, staggered, _] = catalog();
    let mut cases = Vec::new();
    for (format, recon) in [
        (StorageFormat::F32, Recon::R12),
        (StorageFormat::F32, Recon::R18),
        (StorageFormat::Fixed16, Recon::R12),
        (StorageFormat::Fixed16, Recon::R18),
        (StorageFormat::F64, Recon::R18),
    ] {
        cases.push((wilson, hop(format, recon, LongRecon::R18)));
    }
    for format in [StorageFormat::F32, StorageFormat::Fixed16] {
        for long in [LongRecon::R18, LongRecon::R13, LongRecon::R12] {
            cases.push((staggered, hop(format, Recon::R18, long)));
        }
    }
    for ((name, source, kernel_name), v) in cases {
        let src = source(&v).unwrap();
        let tag = format!("{name}_prefetch_{:016x}", v.stable_hash());
        let plain = tc.nv.compile(&src, &tag, "sm_90").unwrap();
        assert!(
            !plain.contains("prefetch.global.L2"),
            "{tag}: default build"
        );
        let prefetch = format!("#define QDSL_PREFETCH 1\n{src}");
        let ptx = tc.nv.compile(&prefetch, &tag, "sm_90").unwrap();
        let all = ptx.matches("prefetch.global.L2").count();
        assert!(all > 0, "{tag}: no prefetch");
        tc.compile_checked(&prefetch, &tag, "sm_90", &[kernel_name(&v)], true);
        let links = format!("#define QDSL_PREFETCH 1\n#define QDSL_PREFETCH_LINKS_ONLY 1\n{src}");
        let ptx = tc.nv.compile(&links, &tag, "sm_90").unwrap();
        let some = ptx.matches("prefetch.global.L2").count();
        assert!(some > 0 && some < all, "{tag}: {some} of {all} prefetches");
        tc.compile_checked(&links, &tag, "sm_90", &[kernel_name(&v)], true);
    }
}

/// The packed-spinor variants: packed20 (f32 compute) and packed30 (f64 compute) spinors
/// with links in the compute type (recon 18 and 12) and in fixed16 (recon 12), plain
/// and with dagger, xpay and antiperiodic time; those a kernel's knobs exclude are left
/// out by the caller.
fn packed_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for spinor in [StorageFormat::Packed20, StorageFormat::Packed30] {
        for (gauge, recon) in [
            (spinor.compute(), Recon::R18),
            (spinor.compute(), Recon::R12),
            (StorageFormat::Fixed16, Recon::R12),
        ] {
            for xpay in [false, true] {
                out.push(Variant {
                    spinor,
                    gauge,
                    recon,
                    xpay,
                    dagger: xpay,
                    boundary: if xpay {
                        TimeBoundary::Antiperiodic
                    } else {
                        TimeBoundary::Periodic
                    },
                    ..Variant::default()
                });
            }
        }
    }
    out
}

/// Every packed-spinor variant ([`packed_variants`]) of the hops of the even-odd
/// operators (Wilson, the twist and the clover kernels of clover/twisted mass, naive and
/// improved staggered) compiles for sm_80 and sm_90, and none spills (QDSL_NVRTC_ONLY
/// filters as above).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn packed_variants_compile_and_do_not_spill() {
    use qdsl_kernels::{CloverApply, WilsonClover};
    let tc = nvrtc::Toolchain::load();
    let only = std::env::var("QDSL_NVRTC_ONLY").ok();
    let clover: [(&'static str, Source, Name); 2] = [
        (
            "wilson_clover",
            WilsonClover::cuda_source,
            WilsonClover::kernel_name,
        ),
        (
            "clover_apply",
            CloverApply::cuda_source,
            CloverApply::kernel_name,
        ),
    ];
    let mut compiled = 0;
    for k in catalog()
        .into_iter()
        .chain(clover)
        .filter(|k| only.as_deref().is_none_or(|o| o == k.0))
    {
        let variants: Vec<Variant> = packed_variants()
            .into_iter()
            .filter(|v| (k.1)(v).is_ok())
            .collect();
        for arch in ["sm_80", "sm_90"] {
            let (lo, hi) = check(&tc, k, arch, &variants);
            println!(
                "{} {arch}: {} packed variants, {lo}..{hi} registers, no spills",
                k.0,
                variants.len()
            );
            compiled += variants.len();
        }
    }
    if only.is_none() {
        // Wilson, the twist and the clover kernels: 2 formats × 3 link settings × 2 =
        // 12; staggered: recon 18 only (the knobs exclude 12) = 4.
        assert_eq!(compiled, 2 * (12 + 4 + 4 + 12 + 12 + 12));
    }
}
