//! The walking thread map of 5D hops (`slices = walk`, [`Slices::Walk`]): each thread
//! walks the slices of its site, the block a 4D tile of whole x rows whose source rows
//! are staged through shared memory.
//!
//! * The Wilson hop's walking kernel IR: no prefetch, every term's source read from the
//!   stage and its links from registers, the slice count a parameter; its CUDA source
//!   (snapshot), its geometry (a 2-D block of whole rows × 8 or 16, the stages' shared
//!   memory), and with NVRTC its registers (f32: no spill).
//! * Stencils the walk cannot stage are refused naming the knob and the reason: 3-hop
//!   (Naik) terms, site-local terms, fixed-point storage, the full lattice, Dirichlet
//!   walls.
//!
//! The GPU equality with one-source launches is `walking_hops_equal_single_source_hops`
//! (qdsl-runtime), and `qdsl check` compares the walk with the CPU reference.

mod nvrtc;

use qdsl_core::dsl::emit::cuda;
use qdsl_core::dsl::interface::{BlockShape, KernelParam};
use qdsl_core::dsl::kernel_ir::passes::any_stmt;
use qdsl_core::dsl::kernel_ir::walk::{copies_per_thread, BLOCK_ROWS};
use qdsl_core::dsl::kernel_ir::{FifthIndex, LoadAt, StageKind, Stmt};
use qdsl_core::dsl::variant::{
    DirichletBlocks, OutputSites, Recon, Slices, StorageFormat, TimeBoundary,
};
use qdsl_core::dsl::{DslError, Extents, Stencil, Variant};
use qdsl_core::lattice::Parity;
use qdsl_kernels::{CloverApply, ImprovedStaggeredHop, WilsonHop};

fn walk_f32() -> Variant {
    Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        boundary: TimeBoundary::Antiperiodic,
        slices: Slices::Walk,
        ..Variant::default()
    }
}

#[test]
fn the_walking_wilson_hop_reads_its_sources_from_the_stage() {
    let k = cuda::kernel_ir(&WilsonHop::lowered().unwrap(), &walk_f32()).unwrap();
    assert_eq!(k.prologue.fifth, FifthIndex::Walk);
    assert!(k
        .stages
        .iter()
        .all(|s| matches!(s.kind, StageKind::Term(_))));
    let plan = k.walk.as_ref().unwrap();
    assert_eq!((plan.source.as_str(), plan.terms.len()), ("psi", 8));
    for (n, (stage, term)) in k.stages.iter().zip(&plan.terms).enumerate() {
        let has = |p: &dyn Fn(&Stmt) -> bool| any_stmt(&stage.body, p);
        assert!(has(
            &|s| matches!(s, Stmt::WalkSource { term, .. } if *term == n)
        ));
        assert!(has(
            &|s| matches!(s, Stmt::WalkLink { term, link: 0 } if *term == n)
        ));
        assert!(has(
            &|s| matches!(s, Stmt::Load(l) if matches!(l.at, LoadAt::Staged { .. }))
        ));
        assert!(!has(&|s| matches!(
            s,
            Stmt::Neighbour { .. } | Stmt::SourceIndex { .. } | Stmt::LinkSite(_)
        )));
        assert!(!has(
            &|s| matches!(s, Stmt::Load(l) if !matches!(l.at, LoadAt::Staged { .. }))
        ));
        // x ± μ̂ in spec order; the t hops carry the antiperiodic sign.
        assert_eq!(
            (term.mu, term.steps),
            (n / 2, if n % 2 == 0 { 1 } else { -1 })
        );
        assert_eq!(term.tracks_wraps, n / 2 == 3);
        assert_eq!(term.links.len(), 1);
    }
    assert_eq!(k.params.last().unwrap().role, KernelParam::Slices);
}

#[test]
fn walking_wilson_hop_source() {
    insta::assert_snapshot!(
        "wilson_hop_even_f32_recon12_antiperiodic_walk",
        WilsonHop::cuda_source(&walk_f32()).unwrap()
    );
}

/// A block of a whole x row (the work along x) by 8 or 16 rows, the default 8; two
/// stages of 4.5 records per thread (the 8-row tile copies 36 rows).
#[test]
fn walking_geometry() {
    let g = WilsonHop::compiled(&walk_f32()).unwrap().geometry;
    assert_eq!(g.block, BlockShape::Tunable(2));
    assert_eq!(g.knobs.launch.block[0], Extents::Work);
    assert_eq!(g.knobs.launch.block[1], Extents::List(&BLOCK_ROWS));
    assert_eq!(g.knobs.launch.default_block, [0, 8, 1]);
    assert_eq!(copies_per_thread(), 4.5);
    assert_eq!(g.shared_per_thread, 2 * 45 * 96 / 10);
    let f64_recon18 = Variant {
        spinor: StorageFormat::F64,
        gauge: StorageFormat::F64,
        recon: Recon::R18,
        ..walk_f32()
    };
    let g = WilsonHop::compiled(&f64_recon18).unwrap().geometry;
    assert_eq!(g.shared_per_thread, 2 * 45 * 192 / 10);
}

fn refusal(result: Result<String, DslError>) -> String {
    match result {
        Err(e @ DslError::UnsupportedVariant { knob: "slices", .. }) => e.to_string(),
        other => panic!("expected a refusal of slices=walk, got {other:?}"),
    }
}

#[test]
fn stencils_the_walk_cannot_stage_are_refused() {
    let staggered = Variant {
        recon: Recon::R18,
        ..walk_f32()
    };
    let e = refusal(ImprovedStaggeredHop::cuda_source(&staggered));
    assert!(e.contains("one-hop read") && e.contains("hops 3"), "{e}");
    let e = refusal(CloverApply::cuda_source(&walk_f32()));
    assert!(e.contains("one-hop read"), "{e}");
    let fixed16 = Variant {
        spinor: StorageFormat::Fixed16,
        gauge: StorageFormat::Fixed16,
        ..walk_f32()
    };
    let e = refusal(WilsonHop::cuda_source(&fixed16));
    assert!(e.contains("f32 or f64") && e.contains("fixed16"), "{e}");
    let full = Variant {
        sites: OutputSites::Full,
        ..walk_f32()
    };
    assert!(refusal(WilsonHop::cuda_source(&full)).contains("one output parity"));
    let walls = Variant {
        dirichlet: Some(DirichletBlocks {
            block: [4, 4, 4, 4],
        }),
        sites: OutputSites::Parity(Parity::Odd),
        ..walk_f32()
    };
    assert!(refusal(WilsonHop::cuda_source(&walls)).contains("Dirichlet"));
}

/// NVRTC compiles the walking Wilson hop for sm_90: f32 recon 12 (plain, and odd with
/// dagger, xpay) without spills; f64 recon 18 compiles.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn walking_hops_compile() {
    let tc = nvrtc::Toolchain::load();
    let odd = Variant {
        sites: OutputSites::Parity(Parity::Odd),
        dagger: true,
        xpay: true,
        ..walk_f32()
    };
    for (v, no_spills) in [
        (walk_f32(), true),
        (odd, true),
        (
            Variant {
                spinor: StorageFormat::F64,
                gauge: StorageFormat::F64,
                recon: Recon::R18,
                ..walk_f32()
            },
            false,
        ),
    ] {
        let src = WilsonHop::cuda_source(&v).unwrap();
        let name = WilsonHop::kernel_name(&v);
        let reports =
            tc.compile_checked(&src, &name, "sm_90", std::slice::from_ref(&name), no_spills);
        assert_eq!(reports.len(), 1, "{name}");
    }
}
