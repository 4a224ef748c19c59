//! The kernel catalog as the command line sees it: one entry per kernel of qdsl-kernels.
//!
//! qdsl-kernels exports the kernels as types implementing [`Stencil`]; this is the one
//! place that lists them for `qdsl info` and `qdsl emit`. A kernel added to the catalog
//! is added here with one line.

use qdsl_core::dsl::{CompiledKernel, DslError, Ir, KernelInfo, Stencil, Variant};
use qdsl_kernels::{
    CloverApply, CoarseHop, CoarseOp, ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist,
    WilsonClover, WilsonHop,
};

/// One kernel of the catalog, with its generators.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    /// The kernel's name (snake case, as in its spec).
    pub name: String,
    /// Its IR.
    pub ir: fn() -> Ir,
    /// The CUDA source of a variant.
    pub cuda: fn(&Variant) -> Result<String, DslError>,
    /// A variant's kernel with its interface (what the launcher binds).
    pub compiled: fn(&Variant) -> Result<CompiledKernel, DslError>,
    /// The `extern "C"` name of a variant's kernel.
    pub kernel_name: fn(&Variant) -> String,
    /// Flops, bytes and knobs of a variant.
    pub info: fn(&Variant) -> Result<KernelInfo, DslError>,
}

fn entry<S: Stencil>() -> CatalogEntry {
    CatalogEntry {
        name: S::ir().name,
        ir: S::ir,
        cuda: S::cuda_source,
        compiled: S::compiled,
        kernel_name: S::kernel_name,
        info: S::info,
    }
}

/// Every kernel of the catalog.
pub fn catalog() -> Vec<CatalogEntry> {
    vec![
        entry::<WilsonHop>(),
        entry::<NaiveStaggeredHop>(),
        entry::<ImprovedStaggeredHop>(),
        entry::<TwistedMassTwist>(),
        entry::<WilsonClover>(),
        entry::<CloverApply>(),
        entry::<CoarseHop>(),
        entry::<CoarseOp>(),
    ]
}

/// The entry named `name`, or the list of names in the error.
pub fn find(name: &str) -> Result<CatalogEntry, String> {
    let all = catalog();
    let names: Vec<String> = all.iter().map(|e| e.name.clone()).collect();
    all.into_iter().find(|e| e.name == name).ok_or_else(|| {
        format!(
            "no kernel {name:?} in the catalog; kernels: {}",
            names.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_catalog_with_standard_flop_counts() {
        let v = Variant::default();
        let flops: Vec<(String, usize)> = catalog()
            .iter()
            .map(|e| (e.name.clone(), (e.info)(&v).unwrap().flops_per_site))
            .collect();
        // The standard counts: Wilson 1320, naive staggered 570, improved staggered 1146.
        assert_eq!(
            flops,
            vec![
                ("wilson_hop".to_string(), 1320),
                ("naive_staggered_hop".to_string(), 570),
                ("improved_staggered_hop".to_string(), 1146),
                // i γ5 ψ only relabels and negates components: no arithmetic.
                ("twisted_mass_twist".to_string(), 0),
                // The clover matrix: QUDA's 504 (2 blocks × 6 rows × 42); Wilson-clover
                // adds 8 projected hops scaled by −½, 180 each.
                ("wilson_clover".to_string(), 504 + 8 * 180),
                ("clover_apply".to_string(), 504),
                // 8 dense 48 × 48 products (8N² − 2N each) and 7 sums of 2N reals.
                (
                    "coarse_hop".to_string(),
                    8 * (8 * 48 * 48 - 2 * 48) + 7 * 2 * 48
                ),
                // The site matrix X adds a ninth dense product and an eighth sum.
                (
                    "coarse_op".to_string(),
                    9 * (8 * 48 * 48 - 2 * 48) + 8 * 2 * 48
                ),
            ]
        );
        assert!(find("wilson_hop").is_ok());
        assert!(find("wilson_clover").is_ok());
        let e = find("clover").unwrap_err();
        assert!(e.contains("wilson_hop, naive_staggered_hop"), "{e}");
    }
}
