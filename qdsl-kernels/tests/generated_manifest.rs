//! The manifest of every generated CUDA source of the catalog: one line per kernel
//! variant with its entry name, source length and FNV-1a hash. A refactor of the
//! generators must leave every line unchanged (or explain each change), so this covers
//! every catalog kernel and every value of every knob:
//!
//! * the `stencil!` kernels over [`variant_space`]: the full product of the boolean knobs
//!   (sites × dagger × xpay × boundary, `variant_space`) for each storage format (spinor = gauge) and each
//!   gauge compression; every mixed (spinor ≠ gauge) pair of formats in each compression;
//!   Dirichlet walls; every long-link compression in every format; and fixed16/fixed8
//!   links with a global scale under every spinor format, with long recon 18 and
//!   12 + sign; the spinor-only packed20/packed30 spinors beside links in every format,
//!   recon 18 and 12. Variants a spec
//!   excludes are counted, not listed;
//! * the `fused5d!` domain-wall chains over output sites, xpay, formats, compressions
//!   and Ls ([`fused_section`]);
//! * the `link_paths!` smearing kernels in f64 and f32 with recon-18 and recon-12 + phase
//!   input, the gauge forces derived from the actions, and the HISQ U(3) projection;
//! * the `mma_tile!` block inner products of `block_blas`, every variant with m = n.
//! * gauge generation: each action's heatbath kernel (with the colouring its staples
//!   need) and per-term trace kernels, and the HMC field program.
//!
//! The runtime's own generated kernels (BLAS, reductions, format conversions) have their
//! manifest in qdsl-runtime (`device::codegen` tests).

mod variant_space;

use qdsl_core::dsl::paths::project::{project_pullback_source, project_source};
use qdsl_core::dsl::paths::{PathKnobs, PlanKind};
use qdsl_core::dsl::variant::{fnv1a, LinkScale, LongRecon, Recon, StorageFormat};
use qdsl_core::dsl::Variant;
use qdsl_kernels::catalog::{self, ActionEntry, SmearingEntry, StencilEntry};
use std::fmt::Write;

/// One manifest line: the entry name, what it is, its length and hash.
fn line(out: &mut String, name: &str, what: &str, source: &str) {
    writeln!(
        out,
        "{name} [{what}] {} bytes, fnv {:016x}",
        source.len(),
        fnv1a(source.as_bytes())
    )
    .unwrap();
}

/// The manifest section of one `stencil!` kernel over the variant space.
fn stencil_section(out: &mut String, k: &StencilEntry, space: &[Variant]) {
    let supported: Vec<&Variant> = space.iter().filter(|v| (k.supports)(v)).collect();
    writeln!(
        out,
        "## {}: {} variants, {} excluded by the spec",
        k.name,
        supported.len(),
        space.len() - supported.len()
    )
    .unwrap();
    for v in supported {
        match (k.cuda)(v) {
            Ok(src) => line(out, &(k.kernel_name)(v), &v.canonical(), &src),
            Err(e) => writeln!(
                out,
                "{} [{v}] supported but not generated: {e}",
                (k.kernel_name)(v)
            )
            .unwrap(),
        }
    }
}

/// The manifest section of one `link_paths!` smearing kernel.
fn paths_section(out: &mut String, p: &SmearingEntry) {
    writeln!(out, "## {}", p.name).unwrap();
    for (plan, tag) in [(PlanKind::Tree, ""), (PlanKind::Staged, " plan=staged")] {
        for input in [Recon::R18, Recon::R12] {
            let knobs = PathKnobs::with_input(input).with_plan(plan);
            for (real, cuda) in [("f64", p.cuda_f64), ("f32", p.cuda_f32)] {
                let what = format!("real={real} input=recon{}{tag}", input.reals());
                line(
                    out,
                    &p.name,
                    &what,
                    &cuda(&knobs).expect("a link_paths! source"),
                );
            }
        }
    }
}

/// The manifest section of one gauge action's force kernel.
fn force_section(out: &mut String, a: &ActionEntry) {
    writeln!(out, "## {} force", a.name).unwrap();
    line(out, &a.name, "real=f64", &(a.force_f64)().unwrap());
    line(out, &a.name, "real=f32", &(a.force_f32)().unwrap());
}

/// The manifest section of one `fused5d!` chain: every output-site choice, xpay where
/// the chain allows it either way, each storage format (spinor = gauge) with each gauge
/// compression, antiperiodic time, Ls = 4 and 12; then each other `m5inv` mode the
/// chain lists.
fn fused_section(out: &mut String, e: &qdsl_kernels::domain_wall::FusedEntry) {
    use qdsl_core::dsl::fused5d::FusedVariant;
    use qdsl_core::dsl::variant::{OutputSites, TimeBoundary};
    use qdsl_core::lattice::Parity;
    writeln!(out, "## {} (fused5d)", e.name).unwrap();
    let chain = (e.chain)();
    let xpays: &[bool] = if chain.xpay.is_some() {
        &[true]
    } else {
        &[false, true]
    };
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for &xpay in xpays {
            for format in [
                StorageFormat::F64,
                StorageFormat::F32,
                StorageFormat::Fixed16,
                StorageFormat::Fixed8,
            ] {
                for recon in [Recon::R18, Recon::R12, Recon::R8] {
                    for ls in [4, 12] {
                        let v = FusedVariant {
                            variant: Variant {
                                sites,
                                xpay,
                                spinor: format,
                                gauge: format,
                                recon,
                                boundary: TimeBoundary::Antiperiodic,
                                ..Variant::default()
                            },
                            ls,
                            m5inv: Default::default(),
                        };
                        match (e.compiled)(&v) {
                            Ok(k) => line(out, &k.name, &v.canonical(), &k.source),
                            Err(err) => {
                                writeln!(out, "{} [{}] not generated: {err}", e.name, v.canonical())
                                    .unwrap()
                            }
                        }
                    }
                }
            }
        }
    }
    // The other ways the chain applies M5⁻¹ (the dense rows, the tensor cores): one
    // parity, f32 and fixed16 recon 12, Ls = 12 and 16.
    for mode in chain
        .m5inv_modes()
        .into_iter()
        .filter(|&m| m != qdsl_core::dsl::fused5d::M5invMode::Sweep)
    {
        for &xpay in xpays {
            for format in [StorageFormat::F32, StorageFormat::Fixed16] {
                for ls in [12, 16] {
                    let v = FusedVariant {
                        variant: Variant {
                            sites: OutputSites::Parity(Parity::Even),
                            xpay,
                            spinor: format,
                            gauge: format,
                            recon: Recon::R12,
                            boundary: TimeBoundary::Antiperiodic,
                            ..Variant::default()
                        },
                        ls,
                        m5inv: mode,
                    };
                    match (e.compiled)(&v) {
                        Ok(k) => line(out, &k.name, &v.canonical(), &k.source),
                        Err(err) => {
                            writeln!(out, "{} [{}] not generated: {err}", e.name, v.canonical())
                                .unwrap()
                        }
                    }
                }
            }
        }
    }
}

/// The manifest section of one gauge action's generation kernels: the heatbath (the
/// colouring of an 8⁴ lattice, which fits every colouring) and the per-term traces.
fn generation_section(out: &mut String, a: &ActionEntry) {
    use qdsl_core::gauge::generate::cuda::heatbath_program;
    use qdsl_core::gauge::generate::{Heatbath, TermTraces};
    let spec = (a.spec)();
    let lat = qdsl_core::lattice::Lattice::new([8, 8, 8, 8]).unwrap();
    let colouring = Heatbath::new(&spec, 6.0, lat).unwrap().colouring();
    let plan = qdsl_core::dsl::paths::ForcePlan::new(&spec).unwrap();
    writeln!(out, "## {} generation", a.name).unwrap();
    let hb = heatbath_program(&plan, colouring).unwrap();
    line(out, &hb.kernels[0].name, "real=f64", &hb.source);
    for t in TermTraces::new(&spec).unwrap().terms {
        line(out, &t.kernel(), "real=f64", &t.program().unwrap().source);
    }
}

/// Every kernel of the registry ([`qdsl_kernels::catalog`], generated from the specs: a
/// new spec appears here without being listed), then the HISQ projection and its
/// derivative.
#[test]
fn manifest_of_every_generated_source() {
    let space = variant_space::variant_space();
    let mut manifest = String::new();
    for k in catalog::stencils() {
        stencil_section(&mut manifest, &k, &space);
    }
    for p in catalog::smearings() {
        paths_section(&mut manifest, &p);
    }
    for a in catalog::actions() {
        force_section(&mut manifest, &a);
    }
    for a in catalog::actions() {
        generation_section(&mut manifest, &a);
    }
    writeln!(manifest, "## hmc fields").unwrap();
    line(
        &mut manifest,
        "hmc_f64",
        "real=f64",
        &qdsl_core::gauge::generate::cuda_hmc::hmc_cuda(),
    );
    for e in qdsl_kernels::domain_wall::chains() {
        fused_section(&mut manifest, &e);
    }
    writeln!(manifest, "## hisq U(3) projection").unwrap();
    line(
        &mut manifest,
        "hisq_project",
        "real=f64",
        &project_source::<f64>().unwrap(),
    );
    line(
        &mut manifest,
        "hisq_project",
        "real=f32",
        &project_source::<f32>().unwrap(),
    );
    for (real, source) in [
        ("real=f64", project_pullback_source::<f64>().unwrap()),
        ("real=f32", project_pullback_source::<f32>().unwrap()),
    ] {
        line(&mut manifest, "hisq_project_pullback", real, &source);
    }
    for mode in qdsl_kernels::block_blas::BlockBlasMode::ALL {
        mma_section(&mut manifest, mode);
    }
    insta::assert_snapshot!("every_generated_source", manifest);
}

/// The manifest section of one `mma_tile!` block-BLAS mode: every variant its spec
/// allows with m = n (each value of each compile knob, each input precision).
fn mma_section(out: &mut String, mode: qdsl_kernels::block_blas::BlockBlasMode) {
    use qdsl_core::dsl::mma::{self, MmaVariant};
    let spec = mode.spec();
    writeln!(out, "## {} (mma_tile)", spec.name).unwrap();
    for &m in &spec.m {
        for &input in &spec.input {
            for &tile_k in &spec.tile_k {
                for &warps in &spec.warps {
                    for &stages in &spec.stages {
                        let v = MmaVariant {
                            m,
                            n: m,
                            input,
                            tile_k,
                            warps,
                            stages,
                        };
                        match mma::plan(&spec, &v) {
                            Ok(p) => line(out, &p.name, &v.canonical(), &mma::cuda::source(&p)),
                            Err(e) => {
                                writeln!(out, "[{}] not planned: {e}", v.canonical()).unwrap()
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The variant space holds every value of every knob (so no knob value can change its
/// source unseen) and no variant twice.
#[test]
fn the_variant_space_covers_every_knob_value() {
    let space = variant_space::variant_space();
    let names: std::collections::HashSet<String> = space.iter().map(Variant::canonical).collect();
    assert_eq!(names.len(), space.len(), "a variant is listed twice");
    for format in StorageFormat::EVERY {
        assert!(space
            .iter()
            .any(|v| v.spinor == format && v.gauge != format));
        assert!(space
            .iter()
            .any(|v| v.gauge == format && v.spinor != format));
    }
    for format in [StorageFormat::Packed20, StorageFormat::Packed30] {
        assert!(space.iter().any(|v| v.spinor == format));
    }
    for recon in Recon::EVERY {
        assert!(space.iter().any(|v| v.recon == recon));
    }
    for long in LongRecon::EVERY {
        assert!(space.iter().any(|v| v.long_recon == long));
    }
    for scale in LinkScale::EVERY {
        assert!(space.iter().any(|v| v.link_scale == scale));
    }
    for sites in variant_space::SITES {
        assert!(space.iter().any(|v| v.sites == sites && v.dagger && v.xpay));
    }
    assert!(space.iter().any(|v| v.dirichlet.is_some()));
}
