//! What a solve returns: [`SolveResult`], its [`Convergence`] and residual history.

use std::fmt;
use std::time::Duration;

/// How a solve ended. Only [`Convergence::Converged`] is success.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Convergence {
    /// The recomputed true residual reached the tolerance.
    Converged,
    /// The iteration limit was reached first.
    MaxIterations,
    /// The true residual stopped improving (it failed to drop by max(½, √δ) at
    /// `max_stalled_checks + 1` consecutive checks): the precision cannot go lower.
    Stagnation,
    /// The recurrence broke down.
    Breakdown(Breakdown),
}

/// Why a Krylov recurrence broke down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breakdown {
    /// A quantity became NaN or infinite (NaN or Inf in the source or the operator).
    NonFinite {
        /// Which quantity: "‖b‖²", "⟨p, A p⟩", "‖r‖²", …
        quantity: &'static str,
    },
    /// A quantity the recurrence divides by vanished (e.g. ρ = ⟨r̂₀, r⟩ = 0 in BiCGStab).
    Zero {
        /// Which quantity.
        quantity: &'static str,
    },
    /// ⟨p, A p⟩ ≤ 0 in CG: the operator is not Hermitian positive definite.
    NotPositiveDefinite,
}

impl fmt::Display for Convergence {
    /// "converged", "iteration limit reached", "stagnated", "breakdown: …".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Convergence::Converged => f.write_str("converged"),
            Convergence::MaxIterations => f.write_str("iteration limit reached"),
            Convergence::Stagnation => f.write_str("stagnated (precision exhausted)"),
            Convergence::Breakdown(b) => write!(f, "breakdown: {b}"),
        }
    }
}

impl fmt::Display for Breakdown {
    /// "‖r‖² is not finite", "ρ = ⟨r̂₀, r⟩ is zero", "the operator is not …".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breakdown::NonFinite { quantity } => write!(f, "{quantity} is not finite"),
            Breakdown::Zero { quantity } => write!(f, "{quantity} is zero"),
            Breakdown::NotPositiveDefinite => {
                f.write_str("⟨p, A p⟩ ≤ 0: the operator is not Hermitian positive definite")
            }
        }
    }
}

/// Which residual a history entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResidualKind {
    /// The residual of the recurrence (in the iteration precision).
    Iterated,
    /// The true residual b − M x, recomputed with an operator application in the high
    /// precision (at the start, at reliable updates and at the end).
    True,
}

/// One entry of the residual history.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidualRecord {
    /// Iterations done when it was recorded.
    pub iteration: usize,
    /// Relative residual ‖r‖/‖b‖.
    pub residual: f64,
    /// Iterated or true.
    pub kind: ResidualKind,
}

/// The outcome of a solve.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveResult {
    /// How it ended.
    pub convergence: Convergence,
    /// Iterations done (operator applications per iteration depend on the solver).
    pub iterations: usize,
    /// Reliable updates done: replacements of the iterated residual by the true one
    /// triggered by the δ criterion or the stall watchdog (not counting the checks at
    /// iterated convergence).
    pub reliable_updates: usize,
    /// The true relative residual ‖b − M x‖/‖b‖ of the returned x, recomputed at the
    /// end with an operator application in the high precision.
    pub true_residual: f64,
    /// Wall-clock time of the solve.
    pub elapsed: Duration,
    /// Operator applications (of M, M† or A), including the true-residual ones.
    pub operator_applications: usize,
    /// Floating-point operations of those applications
    /// ([`LinearOperator::flops_per_apply`](super::LinearOperator::flops_per_apply);
    /// vector operations not counted), for flop rates.
    pub operator_flops: u64,
    /// The residual history, in order.
    pub history: Vec<ResidualRecord>,
}

impl SolveResult {
    /// Whether the solve converged.
    pub fn is_converged(&self) -> bool {
        self.convergence == Convergence::Converged
    }

    /// The solve of a zero source: x = 0, converged after 0 iterations.
    pub(crate) fn zero_source() -> Self {
        Self {
            convergence: Convergence::Converged,
            iterations: 0,
            reliable_updates: 0,
            true_residual: 0.0,
            elapsed: Duration::ZERO,
            operator_applications: 0,
            operator_flops: 0,
            history: vec![ResidualRecord {
                iteration: 0,
                residual: 0.0,
                kind: ResidualKind::True,
            }],
        }
    }
}
