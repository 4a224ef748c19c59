//! Gauge-field generation: quenched heatbath with over-relaxation, and quenched HMC, for
//! any gauge action given as a `link_paths!` loop spec ([`ActionSpec`]).
//!
//! | item | what it is |
//! |---|---|
//! | [`Heatbath`] | Cabibbo–Marinari SU(2)-subgroup heatbath (Kennedy–Pendleton / Creutz) and over-relaxation on the staple sum of any action whose loops the colouring separates (Wilson: 2-colour checkerboard; Symanzik, Iwasaki: 8 colours) |
//! | [`Hmc`], [`Level`], [`Integrator`] | HMC with nested time scales (a list of levels, each an action, its β, steps and leapfrog or Omelyan 2MN), Metropolis |
//! | [`su2`] | SU(2) quaternions, the subgroup embedding, the x₀ samplers |
//! | [`LocalStaples`], [`Colouring`] | the staple sum of one link from the action's loops; the colouring of the links |
//! | [`Series`] | Monte Carlo time series: binned errors, integrated autocorrelation time |
//! | [`TermTraces`] | the action and loop averages from per-term link traces Σ Re tr[U Σ_t†] (the GPU's reductions) |
//! | [`cuda`] | the CUDA C++ of the heatbath and over-relaxation (the GPU twin of [`Heatbath`]'s link update, the same random streams) |
//! | [`cuda_hmc`] | the CUDA C++ of HMC's momenta, kick, drift U ← e^{εP} U and the norm reductions |
//!
//! Random numbers come from per-link counter-based streams (the sweep or trajectory
//! number is part of the stream index), so a run depends on the seed only: never on the
//! thread count, and a run resumed from a checkpoint continues bit for bit.

pub mod cuda;
pub mod cuda_hmc;
mod heatbath;
mod hmc;
pub mod reference;
mod staples;
mod stats;
pub mod su2;
#[cfg(test)]
mod test_actions;
mod traces;

pub use heatbath::Heatbath;
pub use hmc::{
    max_link_difference, negate, CpuForce, ForceBackend, Hmc, Integrator, Level, MdState, Momenta,
    TrajectoryResult, OMELYAN_LAMBDA,
};
pub use staples::{Colouring, LocalStaples};
pub use stats::{Autocorrelation, Series};
pub use traces::{TermTrace, TermTraces};

use crate::dsl::paths::ActionSpec;
use crate::dsl::DslError;
use thiserror::Error;

/// What went wrong setting up or running an update.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GenerateError {
    /// The action spec is invalid.
    #[error(transparent)]
    Spec(#[from] DslError),
    /// A parameter is out of range.
    #[error("{name}: expected {expected}, found {found}")]
    Parameter {
        /// The parameter.
        name: &'static str,
        /// What is accepted.
        expected: String,
        /// What was given.
        found: String,
    },
    /// A force back end failed (the device's error, in words).
    #[error("force back end: {0}")]
    Backend(String),
    /// The lattice does not suit the update.
    #[error("lattice {dims:?}: expected {expected}")]
    Lattice {
        /// The extents.
        dims: [usize; 4],
        /// What the update needs.
        expected: String,
    },
}

/// The actions of one level's terms: `action` restricted to the terms named in `terms`
/// (in the spec's order), named `<action>_<term>…`; for splitting an action over time
/// scales (e.g. rectangles on the outer level, plaquettes on the inner). An error names
/// a term the action does not have.
pub fn action_terms(action: &ActionSpec, terms: &[&str]) -> Result<ActionSpec, GenerateError> {
    for t in terms {
        if !action.terms.iter().any(|a| a.name == *t) {
            return Err(GenerateError::Parameter {
                name: "term",
                expected: format!(
                    "a term of `{}` ({})",
                    action.name,
                    action
                        .terms
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                found: t.to_string(),
            });
        }
    }
    Ok(ActionSpec {
        name: format!("{}_{}", action.name, terms.join("_")),
        free_names: action.free_names.clone(),
        terms: action
            .terms
            .iter()
            .filter(|a| terms.contains(&a.name.as_str()))
            .cloned()
            .collect(),
    })
}
