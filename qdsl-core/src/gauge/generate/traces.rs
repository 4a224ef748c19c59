//! The action and the loop averages from per-term link traces, for reductions on the GPU.
//!
//! For one term t of an action (coefficient c_t, loops of n_t links, L_t distinct loops
//! per site) let Σ_t be its staple sum ([`staple_spec`](crate::dsl::paths::force::staple_spec)
//! of the action restricted to t) and
//!
//! T_t = Σ_{x,μ} Re tr[U_μ(x) Σ_{t,μ}(x)†].
//!
//! The action is linear in each link and no loop runs through a link twice, so
//! Re tr[U_l Σ_{t,l}†] = c_t Σ_{loops L ∋ l} Re tr U_L; summed over the links, each loop
//! is counted once per link: T_t = c_t n_t W_t with W_t = Σ_L Re tr U_L (over the V L_t
//! loops). Hence
//!
//! S = β Σ_t c_t Σ_L (1 − Re tr U_L / 3) = β Σ_t (c_t V L_t − T_t / (3 n_t)),
//!
//! and the mean of Re tr U_L / 3 over term t's loops (the plaquette P for the plaquette
//! term) is T_t / (3 c_t n_t V L_t). On the GPU, T_t is the tree kernel with the
//! [`Epilogue::Trace`](crate::dsl::paths::cuda::Epilogue::Trace) summed over the links;
//! the test below checks both formulas against [`ActionSpec::action`] and
//! [`ActionSpec::loop_average`] on the CPU.

use super::{action_terms, GenerateError};
use crate::dsl::interface::KernelProgram;
use crate::dsl::paths::cuda::{interface, prelude, Epilogue};
use crate::dsl::paths::force::staples_cpu;
use crate::dsl::paths::{ActionSpec, ForcePlan, PathKnobs};
use crate::field::GaugeField;
use crate::reduce::ordered_sum_by_index;

/// One term of an action as a single-term action with its staple plan.
#[derive(Clone, Debug)]
pub struct TermTrace {
    /// The action restricted to this term (named `<action>_<term>`).
    pub plan: ForcePlan,
    /// c_t.
    pub coeff: f64,
    /// n_t, the links of each loop.
    pub links: usize,
    /// L_t, the distinct loops per site.
    pub loops_per_site: usize,
}

impl TermTrace {
    /// The entry name of this term's trace kernel.
    pub fn kernel(&self) -> String {
        format!("{}_trace", self.plan.action.name)
    }

    /// The trace kernel's program (f64): the staple tree with the trace epilogue,
    /// `<kernel>(out, u, c0.., L0..L3)`, one thread per link, out[μ·V + cb].
    pub fn program(&self) -> Result<KernelProgram, GenerateError> {
        let tree = &self.plan.tree;
        let mut source = prelude::<f64>(tree, &PathKnobs::default())?;
        source.push_str(&crate::dsl::paths::cuda::kernel(
            tree,
            &self.kernel(),
            Epilogue::Trace,
        ));
        Ok(KernelProgram {
            name: format!("{}_f64", self.kernel()),
            source,
            options: Vec::new(),
            kernels: vec![interface(
                &self.kernel(),
                tree.spec.terms.len(),
                crate::dsl::interface::Elem::F64,
                Epilogue::Trace,
            )],
        })
    }

    /// The mean of Re tr U_L / 3 over this term's loops, from T_t on `volume` sites.
    pub fn loop_average(&self, volume: usize, trace: f64) -> f64 {
        trace / (3.0 * self.coeff * (self.links * volume * self.loops_per_site) as f64)
    }
}

/// The terms of an action, for its value from traces.
#[derive(Clone, Debug)]
pub struct TermTraces {
    /// One per term, in the spec's order.
    pub terms: Vec<TermTrace>,
}

impl TermTraces {
    /// The terms of `action` (an error for an invalid spec).
    pub fn new(action: &ActionSpec) -> Result<Self, GenerateError> {
        action.validate()?;
        let terms = action
            .terms
            .iter()
            .map(|t| {
                Ok(TermTrace {
                    plan: ForcePlan::new(&action_terms(action, &[t.name.as_str()])?)?,
                    coeff: t.coeff,
                    links: t.steps.len(),
                    loops_per_site: action.classes(t)?.loops.len(),
                })
            })
            .collect::<Result<Vec<_>, GenerateError>>()?;
        Ok(Self { terms })
    }

    /// S = β Σ_t (c_t V L_t − T_t / (3 n_t)) from the traces T_t (in term order).
    pub fn action(&self, beta: f64, volume: usize, traces: &[f64]) -> f64 {
        beta * self
            .terms
            .iter()
            .zip(traces)
            .map(|(t, tr)| {
                t.coeff * (volume * t.loops_per_site) as f64 - tr / (3.0 * t.links as f64)
            })
            .sum::<f64>()
    }

    /// The traces T_t on the CPU (the staple sums of [`staples_cpu`]).
    pub fn traces_cpu(&self, u: &GaugeField<f64>) -> Result<Vec<f64>, GenerateError> {
        self.terms
            .iter()
            .map(|t| {
                let sigma = staples_cpu(&t.plan, u)?;
                let (links, staples) = (u.links(), sigma.links());
                Ok(ordered_sum_by_index(links.len(), |i| {
                    links[i].mul_adjoint(&staples[i]).trace().re
                }))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gauge::generate::test_actions::{symanzik, wilson};
    use crate::lattice::Lattice;

    /// The action and the loop averages from the traces equal the direct loop sums
    /// ([`ActionSpec::action`], [`ActionSpec::loop_average`]) on a hot and a weak field,
    /// for Wilson and Symanzik (a wrong n_t, L_t or c_t misses by O(1)); the unit field
    /// has S = 0 and averages 1.
    #[test]
    fn action_from_traces_equals_the_loop_sums() {
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        for action in [wilson(), symanzik()] {
            let tt = TermTraces::new(&action).unwrap();
            for u in [
                GaugeField::<f64>::random(lat, 5),
                GaugeField::<f64>::weak(lat, 6, 0.4),
                GaugeField::<f64>::unit(lat),
            ] {
                let traces = tt.traces_cpu(&u).unwrap();
                let s = tt.action(5.9, lat.volume(), &traces);
                let expected = action.action(&u, 5.9).unwrap();
                assert!(
                    (s - expected).abs() < 1e-9 * expected.abs().max(1.0),
                    "{}: {s} vs {expected}",
                    action.name
                );
                for (k, t) in tt.terms.iter().enumerate() {
                    let avg = t.loop_average(lat.volume(), traces[k]);
                    let direct = action.loop_average(&u, k).unwrap();
                    assert!(
                        (avg - direct).abs() < 1e-12,
                        "{}: {avg} {direct}",
                        t.kernel()
                    );
                }
            }
        }
    }

    /// The trace program's interface is its source's signature.
    #[test]
    fn trace_program_interface_matches() {
        for t in TermTraces::new(&symanzik()).unwrap().terms {
            let p = t.program().unwrap();
            assert_eq!(p.signature_mismatches(), Vec::<String>::new());
        }
    }
}
