//! Errors that stop a solve before or outside the iteration.
//!
//! Breakdown, stagnation and the iteration limit are *outcomes* of a solve, reported in
//! [`SolveResult`](crate::solver::SolveResult); a [`SolverError`] means the solve could not be set
//! up or an operation on a field or an operator failed.

use thiserror::Error;

/// Why a solve was refused or aborted.
#[derive(Debug, Error)]
pub enum SolverError {
    /// The tolerance is not a positive finite number.
    #[error("the tolerance must be a positive finite number, found {found}")]
    InvalidTolerance {
        /// The tolerance given.
        found: f64,
    },
    /// The tolerance is below what the chosen precisions can reach.
    #[error(
        "tolerance {tolerance:e} is below the attainable floor {floor:e}: {reason}; \
         loosen the tolerance or use a higher precision"
    )]
    UnreachableTolerance {
        /// The tolerance asked for.
        tolerance: f64,
        /// The smallest tolerance accepted for these precisions and options.
        floor: f64,
        /// Which precision limits it, and why.
        reason: String,
    },
    /// The reliable-update parameter δ is outside [0, 1).
    #[error("the reliable-update δ must lie in [0, 1), found {found}")]
    InvalidDelta {
        /// The δ given.
        found: f64,
    },
    /// The flexible PCG must keep at least one previous search direction.
    #[error("the flexible PCG must keep at least 1 previous search direction, found {found}")]
    InvalidFlexibleDirections {
        /// The number given.
        found: usize,
    },
    /// A multi-shift solve needs shifts σ_i ≥ 0 (A + σ_i must stay positive definite)
    /// and one solution vector per shift.
    #[error("invalid shifts: {reason}")]
    InvalidShifts {
        /// What is wrong with them.
        reason: String,
    },
    /// An operation on fields failed (e.g. two fields of different layouts).
    #[error("field operation failed: {0}")]
    Field(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Applying the operator failed.
    #[error("operator application failed: {0}")]
    Operator(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SolverError {
    /// Wraps an error of a field operation.
    pub fn field(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        SolverError::Field(Box::new(e))
    }

    /// Wraps an error of an operator application.
    pub fn operator(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        SolverError::Operator(Box::new(e))
    }
}
