//! The gauge-action catalog (`link_paths!` `action` specs) on the code-generation side:
//! the force's matrix products per site with and without sub-path reuse (hand-counted),
//! its flops beside MILC/QUDA's count, snapshots of the derived staple spec and of the
//! force's CUDA source, and that source compiling with NVRTC for sm_80 and sm_90 in both
//! precisions with every kernel present and ptxas's register and spill report. The NVRTC
//! part is ignored where the build found no libnvrtc or ptxas.

mod nvrtc;

use qdsl_core::dsl::paths::force::{
    staples_cpu, FORCE_LINK_FLOPS, MILC_SYMANZIK_FORCE_FLOPS_PER_SITE, SCALED_TA_FLOPS,
};
use qdsl_core::dsl::paths::plan::MATMUL_FLOPS;
use qdsl_core::dsl::paths::tree;
use qdsl_core::dsl::paths::{Dir, GaugeAction};
use qdsl_core::dsl::DslError;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{SymanzikGauge, WilsonGauge};

#[test]
fn force_products_and_flops_per_site() {
    let wilson = WilsonGauge::force_info().unwrap();
    // Per μ and ν: the 3-staple of both orientations, 2 products each.
    assert_eq!(wilson.staples.paths_per_site, 4 * 6);
    assert_eq!(wilson.staples.products_without_reuse, 4 * 6 * 2);
    assert_eq!(wilson.staples.products_with_reuse, 4 * 6 * 2);
    let symanzik = SymanzikGauge::force_info().unwrap();
    // Per μ: 6 three-staples and 3 · 6 rectangle staples of 5 links.
    assert_eq!(symanzik.staples.paths_per_site, 4 * 24);
    assert_eq!(
        symanzik.staples.products_without_reuse,
        4 * (6 * 2 + 18 * 4)
    );
    // Reuse: the 1×2 staple [+nu, +nu, +mu, -nu, -nu] wraps the 3-staple of the same
    // orientation in ±ν (2 products instead of 4, per ν and orientation).
    assert_eq!(
        symanzik.staples.products_with_reuse,
        4 * (6 * 2 + 12 * 4 + 6 * 2)
    );
    // The GPU tree, per link: the two rectangle staples that are no wraps multiplied out
    // (6 choices × 4 products each), the ±ν wrap of c_plaq U + the tied ±ν wrap of
    // c_rect U (6 × (2 + 2)): 72, one kernel with the force.
    let tree = SymanzikGauge::force_plan().unwrap().tree;
    assert_eq!(tree.products_per_link(), 2 * 24 + 24);
    assert_eq!(symanzik.staples.gpu_products, 4 * 72);
    assert_eq!(FORCE_LINK_FLOPS, MATMUL_FLOPS + SCALED_TA_FLOPS);
    assert_eq!(
        symanzik.flops_per_site,
        symanzik.staples.flops_per_site + 4 * FORCE_LINK_FLOPS
    );
    eprintln!(
        "symanzik force: qdsl {} flops/site ({} products with reuse, {} without), MILC/QUDA count {}",
        symanzik.flops_per_site,
        symanzik.staples.products_with_reuse,
        symanzik.staples.products_without_reuse,
        MILC_SYMANZIK_FORCE_FLOPS_PER_SITE
    );
}

/// The derived staples of the Symanzik action (one line per term) and the Wilson force's
/// CUDA source, deterministic and reviewed.
#[test]
fn staple_spec_and_force_source_are_reviewed() {
    let plan = SymanzikGauge::force_plan().unwrap();
    let staples: String = plan
        .staples
        .spec
        .terms
        .iter()
        .map(|t| {
            let path: Vec<String> = t
                .steps
                .iter()
                .map(|st| {
                    let sign = if st.forward { '+' } else { '-' };
                    match st.dir {
                        Dir::Mu => format!("{sign}mu"),
                        Dir::Free(k) => format!("{sign}{}", plan.staples.spec.free_names[k]),
                    }
                })
                .collect();
            format!("{}: {} * [{}]\n", t.name, t.coeff, path.join(", "))
        })
        .collect();
    insta::assert_snapshot!("link_paths_symanzik_staples", staples);
    let src = WilsonGauge::force_cuda_source::<f32>().unwrap();
    assert_eq!(src, WilsonGauge::force_cuda_source::<f32>().unwrap());
    insta::assert_snapshot!("link_paths_wilson_gauge_force_f32", src);
}

/// The GPU's computation of the staple sums (the staple tree, evaluated on the host link
/// by link as each thread does) agrees with the CPU plan's, for both actions on random
/// links.
#[test]
fn the_force_tree_computes_the_cpu_staples() {
    let lat = Lattice::new([4, 4, 6, 4]).unwrap();
    let u = GaugeField::<f64>::random(lat, 17);
    for plan in [
        WilsonGauge::force_plan().unwrap(),
        SymanzikGauge::force_plan().unwrap(),
    ] {
        let expected = staples_cpu(&plan, &u).unwrap();
        let got = tree::smear_cpu(&plan.tree, &u, 1.0);
        let worst = got
            .links()
            .iter()
            .zip(expected.links())
            .map(|(a, b)| (*a - *b).max_abs_component())
            .fold(0.0, f64::max);
        assert!(worst < 1e-13, "{}: max |Δ| = {worst:e}", plan.action.name);
    }
}

type Source = fn() -> Result<String, DslError>;

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn force_kernels_compile_with_nvrtc() {
    let tc = nvrtc::Toolchain::load();
    let catalog: [(&str, Source, Source); 2] = [
        (
            "wilson_gauge",
            WilsonGauge::force_cuda_source::<f64>,
            WilsonGauge::force_cuda_source::<f32>,
        ),
        (
            "symanzik_gauge",
            SymanzikGauge::force_cuda_source::<f64>,
            SymanzikGauge::force_cuda_source::<f32>,
        ),
    ];
    for (name, f64_source, f32_source) in catalog {
        for (precision, source) in [("f64", f64_source), ("f32", f32_source)] {
            let src = source().unwrap();
            for arch in ["sm_80", "sm_90"] {
                let tag = format!("{name}_{precision}_{arch}");
                let entries = vec![format!("{name}_force")];
                let reports = tc.compile_checked(&src, &tag, arch, &entries, true);
                assert_eq!(reports.len(), 1, "{tag}");
            }
        }
    }
}
