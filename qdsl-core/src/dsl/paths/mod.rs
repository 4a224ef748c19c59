//! The `link_paths!` DSL: smeared links as sums of gauge paths.
//!
//! A spec is a list of terms `name: c * [s₁, …, s_L]`, each step a signed direction: the
//! link direction `mu`, or a free direction (`nu`, `rho`, `sigma`, any other name) that
//! ranges over the directions ≠ μ, distinct names taking distinct directions. A signed free
//! direction ranges over both orientations: `[+nu, +mu, -nu]` is the sum of the six
//! 3-staples, `-nu` being the opposite of whichever orientation `+nu` took. Every term gets
//! the tadpole factor u0^(−(L − 1)). For direction μ the output is
//!
//! F_μ(x) = Σ_t c_t u0^(−(L_t − 1)) Σ_{ν, ρ, … distinct ≠ μ; ± each} P_t(x),
//!
//! P_t(x) the ordered product of links along the path from x (a forward step in d
//! multiplies by U_d(y), a backward one by U_d(y − d̂)†).
//!
//! ```text
//! link_paths! tokens ──qdsl-macros──▶ spec::PathSpec ──plan──▶ plan::PathPlan ──cpu──▶ smeared links
//!                                                     │                      ──info─▶ LinkPathsInfo
//!                                                     └──tree──▶ tree::PathTree ──cuda─▶ CUDA C++
//!                                                                               ──smear_cpu─▶ its reference
//! ```
//!
//! The CPU runs the plan (every sub-staple a field, computed once: the fewest products);
//! the GPU runs the tree, either in one kernel (one thread per link, the staple levels
//! nested by Horner's rule, every intermediate in registers: one launch, no intermediate
//! fields) or staged (the knob [`PlanKind`]: the inner staple levels stored once per site
//! and (μ, used directions) as fields by a kernel per level, MILC's and QUDA's reuse).
//!
//! | module | holds |
//! |---|---|
//! | [`spec`] | the spec as data, validation, concrete path enumeration |
//! | [`plan`] | lowering to shared sub-paths (MILC's nested staples), product counts |
//! | [`cpu`] | running a plan on host gauge fields |
//! | [`tree`] | the GPU plan: terms factored into nested wraps, its CPU evaluation |
//! | [`staged`] | the staged GPU plan: which tree nodes become fields, products, launches |
//! | [`cuda`] | the CUDA C++ emitter of a tree: one kernel per link, or the staged passes |
//! | [`info`] | [`LinkPathsInfo`]: flops, products with and without reuse, bytes |
//! | [`knobs`] | [`PathKnobs`]: input links in recon 18 or recon 12 + phase, the output in recon 18 |
//! | [`action`] | closed loops and gauge actions ([`ActionSpec`]): loop classes, the action value |
//! | [`project`] | the CUDA C++ of the HISQ U(3) projection W = V(V†V)^(−1/2) |
//! | [`force`] | the gauge force derived from the loops: staple spec, CPU, CUDA, [`ForceInfo`] |
//! | [`fermion_force`] | the chain rule back through a plan (and the U(3) projection): the fermion force of smeared links |
//! | [`pullback_cuda`] | the CUDA C++ of the chain rule back through a tree (the smearing's part of the force) |
//!
//! An `action` spec (every name free, every path closed) lowers to its staple sum, an
//! ordinary smearing spec, so the force reuses the planner and both back ends:
//!
//! ```text
//! action tokens ──▶ action::ActionSpec ──force::staple_spec──▶ PathSpec ──plan──▶ staples Σ_μ
//!                                                                        F_μ = −(β/3) TA[U_μ Σ_μ†]
//! ```

pub mod action;
pub mod cpu;
pub mod cuda;
pub mod fermion_force;
pub mod force;
pub mod info;
pub mod knobs;
pub mod plan;
pub mod project;
pub mod pullback_cuda;
pub mod reverse;
pub mod reverse_cuda;
pub mod spec;
pub mod staged;
#[cfg(test)]
pub(crate) mod test_specs;
pub mod tree;

pub use action::ActionSpec;
pub use force::{ForceInfo, ForcePlan, GaugeAction};
pub use info::LinkPathsInfo;
pub use knobs::{PathKnobs, PlanKind};
pub use plan::PathPlan;
pub use spec::{Dir, PathSpec, PathTerm, Step};
pub use staged::Staging;
pub use tree::PathTree;

use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::real::Real;

/// A smeared-link kernel defined by a `link_paths!` spec. The macro generates a unit
/// struct implementing it; everything else derives from the spec.
pub trait LinkPaths {
    /// The spec as data.
    fn spec() -> PathSpec;

    /// The lowered plan (an error only for a spec the macro would have rejected).
    fn plan() -> Result<PathPlan, DslError> {
        PathPlan::new(&Self::spec())
    }

    /// The smeared links of thin links `u` (phases already folded in) with tadpole
    /// factor `u0`, on the CPU.
    fn smear_cpu<T: Real>(u: &GaugeField<T>, u0: f64) -> Result<GaugeField<T>, DslError> {
        cpu::smear(&Self::plan()?, u, u0)
    }

    /// The GPU plan: the terms factored into nested wraps ([`tree`]).
    fn tree() -> Result<PathTree, DslError> {
        PathTree::new(&Self::spec())
    }

    /// The CUDA C++ source for real type `T` (f32 or f64); deterministic.
    fn cuda_source<T: Real>() -> Result<String, DslError> {
        cuda::emit::<T>(&Self::tree()?)
    }

    /// The CUDA C++ source for real type `T` with the links stored as `knobs` says
    /// (errors for a knob value that does not apply, [`PathKnobs::validate`]).
    fn cuda_source_with<T: Real>(knobs: &PathKnobs) -> Result<String, DslError> {
        cuda::emit_with::<T>(&Self::tree()?, knobs)
    }

    /// The smeared links the kernel of `knobs` computes, emulated on the CPU: the input
    /// links rounded through their storage ([`knobs::emulate_input`]), then smeared.
    fn smear_cpu_with<T: Real>(
        u: &GaugeField<T>,
        u0: f64,
        knobs: &PathKnobs,
    ) -> Result<GaugeField<T>, DslError> {
        let plan = Self::plan()?;
        let input = self::knobs::emulate_input(u, knobs, &plan.spec.name)?;
        cpu::smear(&plan, &input, u0)
    }

    /// Flops, matrix products and bytes per site.
    fn info() -> Result<LinkPathsInfo, DslError> {
        Ok(LinkPathsInfo::new(&Self::plan()?))
    }
}
