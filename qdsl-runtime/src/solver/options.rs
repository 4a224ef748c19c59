//! Solver options and the check that a tolerance is attainable.

use super::{SolverError, SolverField};
use std::fmt;
use std::sync::Arc;

/// Default reliable-update δ: the iterated residual is replaced by the true one when it
/// has dropped by a factor 10 below its largest value since the last replacement.
pub const DEFAULT_RELIABLE_DELTA: f64 = 0.1;

/// The smallest relative residual accepted, in units of the unit round-off u of a
/// precision: tolerance ≥ 10 u. A necessary bound, not a sufficient one: an
/// ill-conditioned system may stagnate above it, which the solve then reports
/// ([`Convergence::Stagnation`](super::Convergence::Stagnation)).
pub const TOLERANCE_FLOOR_IN_ROUNDOFF: f64 = 10.0;

/// What a progress callback is told after every iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Iterations done.
    pub iteration: usize,
    /// The iteration limit.
    pub max_iterations: usize,
    /// The iterated relative residual ‖r‖/‖b‖.
    pub residual: f64,
    /// The tolerance the solve aims at.
    pub tolerance: f64,
}

/// A callback told the progress of a solve (e.g. to drive a progress bar).
pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Options of a solve.
#[derive(Clone)]
pub struct SolverOptions {
    /// Target relative residual ‖b − M x‖/‖b‖ (see each solver for which system).
    pub tolerance: f64,
    /// Iteration limit; reaching it is reported as
    /// [`Convergence::MaxIterations`](super::Convergence::MaxIterations).
    pub max_iterations: usize,
    /// Reliable-update δ ∈ [0, 1): the iterated residual r is replaced by the true
    /// residual b − M x, recomputed in the high precision, when
    /// ‖r‖ < δ · max ‖r‖ over the iterations since the previous replacement (the
    /// criterion of van der Vorst and Ye, as QUDA uses it). Small δ: few updates, the
    /// low-precision iteration drifts further; δ → 1: an update every iteration.
    /// δ = 0 disables reliable updates (the true residual is still checked once the
    /// iterated one has converged).
    pub reliable_delta: f64,
    /// CG only: β = ⟨r_{k+1}, r_{k+1} − r_k⟩/⟨r_k, r_k⟩ (Polak–Ribière, clamped at 0)
    /// instead of β = ⟨r_{k+1}, r_{k+1}⟩/⟨r_k, r_k⟩ (Fletcher–Reeves); more robust when
    /// the iteration runs in a low precision.
    pub polak_ribiere: bool,
    /// Consecutive true-residual checks (reliable updates and checks at iterated
    /// convergence) that may fail to lower the best true residual so far by a factor
    /// max(½, √δ) before the solve stops with
    /// [`Convergence::Stagnation`](super::Convergence::Stagnation).
    /// A healthy solve's true residual follows the iterated one, which has dropped by
    /// 1/δ (reliable update) or to the tolerance (convergence check) since the
    /// previous check; when it no longer does, the iteration precision is exhausted.
    pub max_stalled_checks: usize,
    /// Flexible PCG only ([`super::mspcg::pcg`]): each new search direction is made
    /// A-orthogonal to this many previous ones (Notay's FCG(m)). 1 is the flexible CG
    /// with the Polak–Ribière β; more keep the global conjugacy that a strongly varying
    /// preconditioner (a few inner iterations) loses, for two fields of memory each.
    /// 0 is refused.
    pub flexible_directions: usize,
    /// Called after every iteration.
    pub progress: Option<ProgressCallback>,
}

impl Default for SolverOptions {
    /// tolerance 1e-10, 10 000 iterations, δ = [`DEFAULT_RELIABLE_DELTA`],
    /// Fletcher–Reeves β, 2 stalled checks, no progress callback.
    fn default() -> Self {
        Self {
            tolerance: 1e-10,
            max_iterations: 10_000,
            reliable_delta: DEFAULT_RELIABLE_DELTA,
            polak_ribiere: false,
            max_stalled_checks: 2,
            flexible_directions: 1,
            progress: None,
        }
    }
}

impl fmt::Debug for SolverOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolverOptions")
            .field("tolerance", &self.tolerance)
            .field("max_iterations", &self.max_iterations)
            .field("reliable_delta", &self.reliable_delta)
            .field("polak_ribiere", &self.polak_ribiere)
            .field("max_stalled_checks", &self.max_stalled_checks)
            .field("flexible_directions", &self.flexible_directions)
            .field("progress", &self.progress.as_ref().map(|_| "callback"))
            .finish()
    }
}

impl SolverOptions {
    /// The default options with another tolerance.
    pub fn with_tolerance(tolerance: f64) -> Self {
        Self {
            tolerance,
            ..Self::default()
        }
    }

    /// Refuses options a solve iterating in precision `L` with solution and true
    /// residual in precision `H` cannot honour:
    ///
    /// * tolerance ≤ 0 or not finite, δ ∉ [0, 1), no kept flexible direction;
    /// * tolerance < 10 u_H: the true residual itself is computed in H;
    /// * without reliable updates (δ = 0), tolerance < 10 u_L: the solution is then
    ///   accumulated in L and cannot be more accurate than L.
    pub fn check<H: SolverField, L: SolverField>(&self) -> Result<(), SolverError> {
        let tol = self.tolerance;
        if !(tol.is_finite() && tol > 0.0) {
            return Err(SolverError::InvalidTolerance { found: tol });
        }
        if !(0.0..1.0).contains(&self.reliable_delta) {
            return Err(SolverError::InvalidDelta {
                found: self.reliable_delta,
            });
        }
        if self.flexible_directions == 0 {
            return Err(SolverError::InvalidFlexibleDirections {
                found: self.flexible_directions,
            });
        }
        let high_floor = TOLERANCE_FLOOR_IN_ROUNDOFF * H::UNIT_ROUNDOFF;
        if tol < high_floor {
            return Err(SolverError::UnreachableTolerance {
                tolerance: tol,
                floor: high_floor,
                reason: format!(
                    "the solution and the true residual are kept in a precision of unit \
                     round-off {:e}, and no residual below ~{TOLERANCE_FLOOR_IN_ROUNDOFF} \
                     times that is reliable",
                    H::UNIT_ROUNDOFF
                ),
            });
        }
        let low_floor = TOLERANCE_FLOOR_IN_ROUNDOFF * L::UNIT_ROUNDOFF;
        if self.reliable_delta == 0.0 && tol < low_floor {
            return Err(SolverError::UnreachableTolerance {
                tolerance: tol,
                floor: low_floor,
                reason: format!(
                    "without reliable updates (δ = 0) the solution is accumulated in the \
                     iteration precision, of unit round-off {:e}; enable reliable updates \
                     (δ > 0) to reach lower residuals",
                    L::UNIT_ROUNDOFF
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::field::ColourSpinorField;

    type F64 = ColourSpinorField<f64>;
    type F32 = ColourSpinorField<f32>;

    fn check<H: SolverField, L: SolverField>(tol: f64, delta: f64) -> Result<(), SolverError> {
        SolverOptions {
            reliable_delta: delta,
            ..SolverOptions::with_tolerance(tol)
        }
        .check::<H, L>()
    }

    /// Floors: 10 · 2⁻⁵³ ≈ 1.1e-15 for f64, 10 · 2⁻²⁴ ≈ 6.0e-7 for f32; the f32 floor
    /// of a mixed solve applies only without reliable updates.
    #[test]
    fn floors_follow_the_precisions() {
        assert!(check::<F64, F64>(2e-15, 0.1).is_ok());
        assert!(check::<F64, F64>(1e-15, 0.1).is_err());
        assert!(check::<F64, F32>(1e-12, 0.1).is_ok());
        assert!(check::<F64, F32>(1e-6, 0.0).is_ok());
        match check::<F64, F32>(5e-7, 0.0) {
            Err(SolverError::UnreachableTolerance { floor, .. }) => {
                assert_eq!(floor, 10.0 / 16_777_216.0)
            }
            other => panic!("{other:?}"),
        }
        assert!(check::<F32, F32>(1e-6, 0.1).is_ok());
        assert!(check::<F32, F32>(5e-7, 0.1).is_err());
        assert!(matches!(
            check::<F64, F64>(1e-8, 1.0),
            Err(SolverError::InvalidDelta { .. })
        ));
        assert!(matches!(
            check::<F64, F64>(1e-8, -0.1),
            Err(SolverError::InvalidDelta { .. })
        ));
    }
}
