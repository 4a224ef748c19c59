//! The gauge force of an [`ActionSpec`], derived from its loops.
//!
//! For a link U_μ(x), every loop through it can be written (rotating it to start there,
//! reversing it where it runs through the link backwards, which leaves Re tr unchanged) as
//! Re tr[U_μ(x) A(x + μ̂ → x)], A the rest of the loop. The sum of those, reversed into
//! paths x → x + μ̂, is the staple sum
//!
//! Σ_μ(x) = Σ_t (c_t / m_t) Σ_{positions i of the loop} Σ_{o = ±} Σ_{choices} P(x),
//!
//! so that S = const − (β/3) Σ_{x,μ} Re tr[U_μ(x) Σ_μ(x)†] for the dependence on each single
//! link. [`staple_spec`] builds it as an ordinary smearing [`PathSpec`] (displacement 1),
//! so the planner shares sub-paths and the CPU and CUDA back ends run it unchanged. The
//! plaquette gives the six 3-staples `[+nu, +mu, -nu]`; the rectangle the 5-link staples
//! `[+nu, +mu, +mu, -nu, -mu]`, `[-mu, +nu, +mu, +mu, -nu]`, `[+nu, +nu, +mu, -nu, -nu]`.
//!
//! **Force convention.** For X ∈ su(3) and the variation U_μ(x) → e^{tX} U_μ(x),
//!
//! d S / dt |_{t=0} = tr[X F_μ(x)],  F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†],
//!
//! with TA(M) = (M − M†)/2 − tr[(M − M†)/2]/3 the traceless anti-hermitian part. F is
//! anti-hermitian and traceless, and it points down the action: moving along X = F
//! changes S by tr F² ≤ 0. With momenta P ∈ su(3), U̇ = P U and kinetic energy
//! K = −½ Σ tr P², H = K + S is conserved for Ṗ = F: the leapfrog momentum step is
//! P ← P + ε F.

use super::action::{reversed, ActionSpec};
use super::cpu;
use super::cuda;
use super::info::LinkPathsInfo;
use super::plan::{PathPlan, MATMUL_FLOPS};
use super::spec::{Dir, PathSpec, PathTerm, Step};
use super::tree::PathTree;
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::real::Real;

/// Flops of c · TA(M) for one 3 × 3 complex M, counted minimally: the 3 off-diagonal
/// pairs (M_ij − M_ji*)/2 cost 4 each (the other triangle is their negative conjugate),
/// the diagonal is i·Im M_ii, its trace over 3 costs 3 and its removal 3; scaling the 18
/// reals by c costs 18.
pub const SCALED_TA_FLOPS: usize = 12 + 6 + 18;

/// Flops of the force of one link from its staple sum: U Σ† (one product) and c · TA.
pub const FORCE_LINK_FLOPS: usize = MATMUL_FLOPS + SCALED_TA_FLOPS;

/// The flops per site that MILC and QUDA count for the tree-level Symanzik
/// (Lüscher–Weisz) gauge force, the reference for GFLOP/s figures (issue 6). qdsl's own
/// count ([`ForcePlan::flops_per_site`]) is 59,904: 288 matrix products per site with the
/// planner's reuse (336 without), the staple sums and the 4 TA projections.
pub const MILC_SYMANZIK_FORCE_FLOPS_PER_SITE: usize = 153_004;

fn negate(s: Step) -> Step {
    Step {
        dir: s.dir,
        forward: !s.forward,
    }
}

/// A staple path with its free names renumbered by first appearance and each name's
/// orientation flipped so that its first step is forward: the same set of concrete paths
/// (each free name ranges over both orientations), one spelling.
fn canonical_staple(steps: &[Step]) -> Vec<Step> {
    let mut order: Vec<(usize, bool)> = Vec::new();
    for s in steps {
        if let Dir::Free(k) = s.dir {
            if !order.iter().any(|o| o.0 == k) {
                order.push((k, s.forward));
            }
        }
    }
    steps
        .iter()
        .map(|s| match s.dir {
            Dir::Mu => *s,
            Dir::Free(k) => {
                let j = order.iter().position(|o| o.0 == k).unwrap_or(0);
                Step {
                    dir: Dir::Free(j),
                    forward: s.forward == order[j].1,
                }
            }
        })
        .collect()
}

/// The staple sum of an action as a smearing spec named `<action>_staples`: for every
/// loop term t, position i and orientation o of the name at i, that name becomes the link
/// direction μ (oriented so that step i runs along +μ), the loop is rotated to start after
/// step i and reversed into a path x → x + μ̂; identical staples are merged, coefficients
/// c_t / m_t summed.
pub fn staple_spec(action: &ActionSpec) -> Result<PathSpec, DslError> {
    action.validate()?;
    let mut staples: Vec<(Vec<Step>, f64)> = Vec::new();
    for t in &action.terms {
        let weight = t.coeff / action.classes(t)?.multiplicity as f64;
        let n = t.steps.len();
        for i in 0..n {
            let at = t.steps[i].dir;
            for o in [true, false] {
                let mut path: Vec<Step> = t
                    .steps
                    .iter()
                    .map(|s| {
                        if s.dir == at {
                            Step {
                                dir: Dir::Mu,
                                forward: s.forward == o,
                            }
                        } else {
                            *s
                        }
                    })
                    .collect();
                let mut j = i;
                if !path[j].forward {
                    path = reversed(&path, negate);
                    j = n - 1 - j;
                }
                let back: Vec<Step> = path[j + 1..].iter().chain(&path[..j]).copied().collect();
                let staple = canonical_staple(&reversed(&back, negate));
                match staples.iter_mut().find(|s| s.0 == staple) {
                    Some(s) => s.1 += weight,
                    None => staples.push((staple, weight)),
                }
            }
        }
    }
    Ok(PathSpec {
        name: format!("{}_staples", action.name),
        output: "staples".into(),
        free_names: ["nu", "rho", "sigma"].map(String::from).to_vec(),
        terms: staples
            .into_iter()
            .enumerate()
            .map(|(i, (steps, coeff))| PathTerm {
                name: format!("staple{i}"),
                coeff,
                steps,
            })
            .collect(),
    })
}

/// An action with its lowered staple plan (the CPU's) and tree (the GPU's).
#[derive(Clone, Debug, PartialEq)]
pub struct ForcePlan {
    /// The action.
    pub action: ActionSpec,
    /// The plan of [`staple_spec`] (tadpole factor 1).
    pub staples: PathPlan,
    /// The tree of [`staple_spec`], the GPU kernel's plan.
    pub tree: PathTree,
}

impl ForcePlan {
    /// Validates the action and lowers its staple spec.
    pub fn new(action: &ActionSpec) -> Result<Self, DslError> {
        let spec = staple_spec(action)?;
        Ok(ForcePlan {
            action: action.clone(),
            staples: PathPlan::new(&spec)?,
            tree: PathTree::new(&spec)?,
        })
    }

    /// Flops per site: the staple plan's, then [`FORCE_LINK_FLOPS`] per direction.
    pub fn flops_per_site(&self) -> usize {
        self.staples.flops_per_site() + 4 * FORCE_LINK_FLOPS
    }
}

/// The staple sums Σ_μ(x) (paths x → x + μ̂) of links `u`, on the CPU.
pub fn staples_cpu<T: Real>(
    plan: &ForcePlan,
    u: &GaugeField<T>,
) -> Result<GaugeField<T>, DslError> {
    cpu::smear(&plan.staples, u, 1.0)
}

/// The force F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] of every link, on the CPU (one su(3)
/// matrix per link, in a [`GaugeField`] as container).
pub fn force_cpu<T: Real>(
    plan: &ForcePlan,
    u: &GaugeField<T>,
    beta: f64,
) -> Result<GaugeField<T>, DslError> {
    let sigma = staples_cpu(plan, u)?;
    let c = T::from_f64(-beta / 3.0);
    let mut f = u.clone();
    for (link, s) in f.links_mut().iter_mut().zip(sigma.links()) {
        *link = link.mul_adjoint(s).traceless_antihermitian_part().scale(c);
    }
    Ok(f)
}

/// The entry name of an action's force kernel.
pub fn force_kernel(action: &str) -> String {
    format!("{action}_force")
}

/// The CUDA C++ of the force for real type `T`: one kernel
/// `<action>_force(out, u, c0..c{T−1}, cf, L0..L3)`, one thread per link, the staple sum
/// Σ_μ(x) of the staple tree ([`cuda`], the c_k its term coefficients) in registers, then
/// out_μ(x) = cf · TA[U_μ(x) Σ_μ(x)†], cf = −β/3.
pub fn force_cuda<T: Real>(plan: &ForcePlan) -> Result<String, DslError> {
    let mut s = cuda::prelude::<T>(&plan.tree, &super::knobs::PathKnobs::default())?;
    s.push_str(crate::dsl::emit::cuda::library::TRACELESS_ANTIHERMITIAN);
    s.push_str(&cuda::kernel(
        &plan.tree,
        &force_kernel(&plan.action.name),
        cuda::Epilogue::Force,
    ));
    Ok(s)
}

/// The cost of a gauge force, per site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceInfo {
    /// Action name.
    pub name: String,
    /// The staple plan's cost (paths, products with and without reuse, buffers).
    pub staples: LinkPathsInfo,
    /// Flops per site ([`ForcePlan::flops_per_site`]).
    pub flops_per_site: usize,
}

impl ForceInfo {
    /// The info of a force plan.
    pub fn new(plan: &ForcePlan) -> Self {
        ForceInfo {
            name: plan.action.name.clone(),
            staples: LinkPathsInfo::new(&plan.staples),
            flops_per_site: plan.flops_per_site(),
        }
    }
}

/// A gauge action defined by a `link_paths!` `action` spec. The macro generates a unit
/// struct implementing it; the action value, the staples and the force derive from the
/// loops.
pub trait GaugeAction {
    /// The spec as data.
    fn spec() -> ActionSpec;

    /// The force plan (an error only for a spec the macro would have rejected).
    fn force_plan() -> Result<ForcePlan, DslError> {
        ForcePlan::new(&Self::spec())
    }

    /// S[U] = β Σ_t c_t Σ_x Σ_loops (1 − Re tr U_L/3), on the CPU.
    fn action_cpu<T: Real>(u: &GaugeField<T>, beta: f64) -> Result<f64, DslError> {
        Self::spec().action(u, beta)
    }

    /// F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] of every link, on the CPU.
    fn force_cpu<T: Real>(u: &GaugeField<T>, beta: f64) -> Result<GaugeField<T>, DslError> {
        force_cpu(&Self::force_plan()?, u, beta)
    }

    /// The CUDA C++ source of the force for real type `T`.
    fn force_cuda_source<T: Real>() -> Result<String, DslError> {
        force_cuda::<T>(&Self::force_plan()?)
    }

    /// Flops, products and buffers of the force per site.
    fn force_info() -> Result<ForceInfo, DslError> {
        Ok(ForceInfo::new(&Self::force_plan()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(dir: Dir, forward: bool) -> Step {
        Step { dir, forward }
    }

    /// The plaquette's 8 (position, orientation) staples all spell the 3-staple
    /// `[+nu, +mu, -nu]`, each with weight 1/8: one term, coefficient 1.
    #[test]
    fn plaquette_staples_are_one_three_staple() {
        let a = Dir::Free(0);
        let b = Dir::Free(1);
        let wilson = ActionSpec {
            name: "w".into(),
            free_names: vec!["a".into(), "b".into()],
            terms: vec![PathTerm {
                name: "plaquette".into(),
                coeff: 2.5,
                steps: vec![step(a, true), step(b, true), step(a, false), step(b, false)],
            }],
        };
        let spec = staple_spec(&wilson).unwrap();
        assert_eq!(spec.terms.len(), 1);
        let nu = Dir::Free(0);
        assert_eq!(
            spec.terms[0].steps,
            vec![step(nu, true), step(Dir::Mu, true), step(nu, false)]
        );
        assert!((spec.terms[0].coeff - 2.5).abs() < 1e-15);
    }

    #[test]
    fn canonical_staple_flips_a_name_whose_first_step_is_backward() {
        let nu = Dir::Free(3);
        let s = canonical_staple(&[step(nu, false), step(Dir::Mu, true), step(nu, true)]);
        assert_eq!(
            s,
            vec![
                step(Dir::Free(0), true),
                step(Dir::Mu, true),
                step(Dir::Free(0), false)
            ]
        );
    }
}
