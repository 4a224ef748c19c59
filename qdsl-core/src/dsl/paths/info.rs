//! [`LinkPathsInfo`]: what building a set of smeared links costs per site.

use super::plan::PathPlan;
use super::tree::PathTree;

/// The cost of a smeared-link spec, per site (all four directions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkPathsInfo {
    /// Kernel name.
    pub name: String,
    /// Concrete paths summed per site (Σ_μ Σ_terms choices of free directions).
    pub paths_per_site: usize,
    /// 3 × 3 matrix products per site with the plan's sub-path reuse.
    pub products_with_reuse: usize,
    /// 3 × 3 matrix products per site multiplying every path out on its own.
    pub products_without_reuse: usize,
    /// Flops per site ([`PathPlan::flops_per_site`]).
    pub flops_per_site: usize,
    /// 3 × 3 matrix products per site the GPU kernel computes ([`PathTree`]: one
    /// thread per link, sub-staples recomputed at the neighbours rather than stored).
    pub gpu_products: usize,
}

impl LinkPathsInfo {
    /// The info of a plan.
    pub fn new(plan: &PathPlan) -> Self {
        LinkPathsInfo {
            name: plan.spec.name.clone(),
            paths_per_site: (0..4)
                .map(|mu| plan.spec.concrete_paths(mu, 1.0).len())
                .sum(),
            products_with_reuse: plan.products_with_reuse(),
            products_without_reuse: plan.products_without_reuse(),
            flops_per_site: plan.flops_per_site(),
            gpu_products: PathTree::new(&plan.spec).map_or(0, |t| 4 * t.products_per_link()),
        }
    }
}

/// The flops per site that MILC and QUDA count for asqtad fat7 + Naik link construction
/// (issue 6), the reference for GFLOP/s figures.
pub const MILC_ASQTAD_FLOPS_PER_SITE: usize = 62_640;
