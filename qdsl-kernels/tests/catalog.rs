//! The registry generated from the specs lists every catalog kernel once, with the
//! standard flop counts, and names the known kernels when asked for an unknown one.

use qdsl_core::dsl::Variant;
use qdsl_kernels::catalog::{actions, find_stencil, smearings, stencils};
use std::collections::BTreeMap;

#[test]
fn every_spec_is_registered_with_the_standard_flop_counts() {
    let v = Variant::default();
    let flops: BTreeMap<String, usize> = stencils()
        .iter()
        .map(|e| (e.name.clone(), (e.info)(&v).unwrap().flops_per_site))
        .collect();
    let dense = |products: usize, sums: usize| products * (8 * 48 * 48 - 2 * 48) + sums * 2 * 48;
    let want: BTreeMap<String, usize> = [
        // The standard counts: Wilson 1320, naive staggered 570, improved staggered 1146.
        ("wilson_hop", 1320),
        ("naive_staggered_hop", 570),
        ("improved_staggered_hop", 1146),
        // i γ5 ψ only relabels and negates components: no arithmetic.
        ("twisted_mass_twist", 0),
        // The clover matrix: QUDA's 504 (2 blocks × 6 rows × 42); Wilson-clover adds 8
        // projected hops scaled by −½, 180 each.
        ("wilson_clover", 504 + 8 * 180),
        ("clover_apply", 504),
        // 8 dense 48 × 48 products (8N² − 2N each) and 7 sums of 2N reals; the site
        // matrix X adds a ninth product and an eighth sum.
        ("coarse_hop", dense(8, 7)),
        ("coarse_op", dense(9, 8)),
    ]
    .into_iter()
    .map(|(n, f)| (n.to_string(), f))
    .collect();
    assert_eq!(flops, want);
    assert_eq!(stencils().len(), want.len(), "a kernel is registered twice");
    let names = |v: Vec<String>| v.join(" ");
    assert_eq!(
        names(smearings().into_iter().map(|e| e.name).collect()),
        "asqtad_fat asqtad_long fat7 hisq_fat"
    );
    assert_eq!(
        names(actions().into_iter().map(|e| e.name).collect()),
        "wilson_gauge symanzik_gauge iwasaki_gauge"
    );
}

#[test]
fn an_unknown_kernel_is_an_error_listing_the_catalog() {
    assert_eq!(find_stencil("wilson_hop").unwrap().name, "wilson_hop");
    let e = find_stencil("clover").unwrap_err();
    assert!(e.contains("no kernel \"clover\""), "{e}");
    assert!(e.contains("wilson_hop") && e.contains("coarse_op"), "{e}");
}
