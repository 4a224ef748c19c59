//! The manifest of every generated CUDA source of the catalog: one line per kernel
//! variant with its entry name, source length and FNV-1a hash. A refactor of the
//! generators must leave every line unchanged (or explain each change), so this covers
//! every catalog kernel and every value of every knob:
//!
//! * the `stencil!` kernels over [`variant_space`]: the full product of the boolean knobs
//!   (sites × dagger × xpay × boundary) for each storage format (spinor = gauge) and each
//!   gauge compression; every mixed (spinor ≠ gauge) pair of formats in each compression;
//!   Dirichlet walls; and every long-link compression in every format. Variants a spec
//!   excludes are counted, not listed;
//! * the `link_paths!` smearing kernels in f64 and f32 with recon-18 and recon-12 + phase
//!   input, the gauge forces derived from the actions, and the HISQ U(3) projection.
//!
//! The runtime's own generated kernels (BLAS, reductions, format conversions) have their
//! manifest in qdsl-runtime (`device::codegen` tests).

use qdsl_core::dsl::paths::project::project_source;
use qdsl_core::dsl::paths::{GaugeAction, LinkPaths, PathKnobs};
use qdsl_core::dsl::variant::{
    fnv1a, DirichletBlocks, LongRecon, OutputSites, Recon, StorageFormat, TimeBoundary,
};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_core::lattice::Parity;
use qdsl_kernels::{
    AsqtadFat, AsqtadLong, CloverApply, CoarseHop, CoarseOp, Fat7, HisqFat, ImprovedStaggeredHop,
    NaiveStaggeredHop, SymanzikGauge, TwistedMassTwist, WilsonClover, WilsonGauge, WilsonHop,
};
use std::fmt::Write;

const SITES: [OutputSites; 3] = [
    OutputSites::Parity(Parity::Even),
    OutputSites::Parity(Parity::Odd),
    OutputSites::Full,
];
const BOUNDARIES: [TimeBoundary; 2] = [TimeBoundary::Periodic, TimeBoundary::Antiperiodic];

/// Two settings of the boolean knobs: the default, and every one of them flipped.
fn two_settings(base: Variant) -> [Variant; 2] {
    [
        base,
        Variant {
            sites: OutputSites::Parity(Parity::Odd),
            dagger: true,
            xpay: true,
            boundary: TimeBoundary::Antiperiodic,
            ..base
        },
    ]
}

/// The variants every `stencil!` kernel is listed for (see the module doc).
fn variant_space() -> Vec<Variant> {
    let mut out = Vec::new();
    for format in StorageFormat::EVERY {
        for recon in Recon::EVERY {
            for sites in SITES {
                for dagger in [false, true] {
                    for xpay in [false, true] {
                        for boundary in BOUNDARIES {
                            out.push(Variant {
                                sites,
                                dagger,
                                xpay,
                                spinor: format,
                                gauge: format,
                                recon,
                                boundary,
                                ..Variant::default()
                            });
                        }
                    }
                }
            }
        }
    }
    for spinor in StorageFormat::EVERY {
        for gauge in StorageFormat::EVERY.into_iter().filter(|&g| g != spinor) {
            for recon in Recon::EVERY {
                out.extend(two_settings(Variant {
                    spinor,
                    gauge,
                    recon,
                    ..Variant::default()
                }));
            }
        }
    }
    let walls = Some(DirichletBlocks {
        block: [2, 4, 4, 8],
    });
    for format in [
        StorageFormat::F64,
        StorageFormat::F32,
        StorageFormat::Fixed16,
    ] {
        for recon in [Recon::R18, Recon::R12] {
            out.extend(two_settings(Variant {
                spinor: format,
                gauge: format,
                recon,
                dirichlet: walls,
                ..Variant::default()
            }));
        }
    }
    for long_recon in [LongRecon::R13, LongRecon::R12, LongRecon::R9] {
        for format in StorageFormat::EVERY {
            for recon in [Recon::R18, Recon::R12] {
                out.extend(two_settings(Variant {
                    spinor: format,
                    gauge: format,
                    recon,
                    long_recon,
                    ..Variant::default()
                }));
            }
        }
    }
    out
}

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

/// The manifest section of one `stencil!` kernel over [`variant_space`].
fn stencil_section<S: Stencil>(out: &mut String, space: &[Variant]) {
    let name = S::ir().name;
    let supported: Vec<&Variant> = space.iter().filter(|v| S::supports(v)).collect();
    writeln!(
        out,
        "## {name}: {} variants, {} excluded by the spec",
        supported.len(),
        space.len() - supported.len()
    )
    .unwrap();
    for v in supported {
        match S::cuda_source(v) {
            Ok(src) => line(out, &S::kernel_name(v), &v.canonical(), &src),
            Err(e) => writeln!(
                out,
                "{} [{v}] supported but not generated: {e}",
                S::kernel_name(v)
            )
            .unwrap(),
        }
    }
}

/// The manifest section of one `link_paths!` smearing kernel.
fn paths_section<P: LinkPaths>(out: &mut String) {
    let name = P::spec().name;
    writeln!(out, "## {name}").unwrap();
    for input in [Recon::R18, Recon::R12] {
        let knobs = PathKnobs::with_input(input);
        let entries: [(&str, Result<String, DslError>); 2] = [
            ("f64", P::cuda_source_with::<f64>(&knobs)),
            ("f32", P::cuda_source_with::<f32>(&knobs)),
        ];
        for (real, src) in entries {
            let what = format!("real={real} input=recon{}", input.reals());
            line(out, &name, &what, &src.expect("a link_paths! source"));
        }
    }
}

/// The manifest section of one gauge action's force kernel.
fn force_section<A: GaugeAction>(out: &mut String) {
    let name = A::spec().name;
    writeln!(out, "## {name} force").unwrap();
    line(
        out,
        &name,
        "real=f64",
        &A::force_cuda_source::<f64>().unwrap(),
    );
    line(
        out,
        &name,
        "real=f32",
        &A::force_cuda_source::<f32>().unwrap(),
    );
}

#[test]
fn manifest_of_every_generated_source() {
    let space = variant_space();
    let mut manifest = String::new();
    stencil_section::<WilsonHop>(&mut manifest, &space);
    stencil_section::<NaiveStaggeredHop>(&mut manifest, &space);
    stencil_section::<ImprovedStaggeredHop>(&mut manifest, &space);
    stencil_section::<TwistedMassTwist>(&mut manifest, &space);
    stencil_section::<WilsonClover>(&mut manifest, &space);
    stencil_section::<CloverApply>(&mut manifest, &space);
    stencil_section::<CoarseHop>(&mut manifest, &space);
    stencil_section::<CoarseOp>(&mut manifest, &space);
    paths_section::<AsqtadFat>(&mut manifest);
    paths_section::<AsqtadLong>(&mut manifest);
    paths_section::<Fat7>(&mut manifest);
    paths_section::<HisqFat>(&mut manifest);
    force_section::<WilsonGauge>(&mut manifest);
    force_section::<SymanzikGauge>(&mut manifest);
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
    insta::assert_snapshot!("every_generated_source", manifest);
}

/// The variant space holds every value of every knob (so no knob value can change its
/// source unseen) and no variant twice.
#[test]
fn the_variant_space_covers_every_knob_value() {
    let space = variant_space();
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
    for recon in Recon::EVERY {
        assert!(space.iter().any(|v| v.recon == recon));
    }
    for long in LongRecon::EVERY {
        assert!(space.iter().any(|v| v.long_recon == long));
    }
    for sites in SITES {
        assert!(space.iter().any(|v| v.sites == sites && v.dagger && v.xpay));
    }
    assert!(space.iter().any(|v| v.dirichlet.is_some()));
}
