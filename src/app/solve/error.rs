//! [`SolveError`]: why a solve could not be set up or run.

use super::Action;
use qdsl_core::field::FieldError;
use qdsl_runtime::solver::SolverError;
use thiserror::Error;

/// Why a solve could not be set up or run.
#[derive(Debug, Error)]
pub enum SolveError {
    /// Möbius domain-wall fermions are solved by [`crate::app::mobius`], not here.
    #[error("--action mobius is solved by the Möbius solver (app::mobius: CPU, CGNR on the 5D M̂), not by the 4D even-odd solve")]
    MobiusNotHere,
    /// κ is not a positive finite number.
    #[error("--kappa must be a positive finite number (κ = 1/(2m + 8)), found {found}")]
    InvalidKappa {
        /// The κ given.
        found: f64,
    },
    /// The mass is negative or not finite.
    #[error("--mass must be a finite number ≥ 0, found {found}")]
    InvalidMass {
        /// The mass given.
        found: f64,
    },
    /// u0 is not a positive finite number.
    #[error("--u0 must be a positive finite number, found {found}")]
    InvalidU0 {
        /// The u0 given.
        found: f64,
    },
    /// c_sw is negative or not finite.
    /// HISQ's u0 is 1 by construction; any other value is refused.
    #[error(
        "--u0 does not apply to the hisq action (found --u0 {found}): its links are \
         reunitarised (projected onto U(3)) between the smearing levels, so u0 = 1 by \
         construction; --u0 1 is accepted"
    )]
    HisqU0 {
        /// The u0 given.
        found: f64,
    },
    #[error("--csw must be a finite number ≥ 0, found {found}")]
    InvalidCsw {
        /// The c_sw given.
        found: f64,
    },
    /// The twisted mass μ or the Naik correction ε is not finite.
    #[error("{flag} must be a finite number, found {found}")]
    NotFinite {
        /// The flag.
        flag: &'static str,
        /// The value given.
        found: f64,
    },
    /// The action needs a parameter that was not given.
    #[error("the {action} action needs {flag}")]
    MissingParameter {
        /// The action.
        action: Action,
        /// The flag it needs.
        flag: &'static str,
    },
    /// A parameter was given that the action does not use.
    #[error("{flag} does not apply to the {action} action (it takes {expected})")]
    UnusedParameter {
        /// The action.
        action: Action,
        /// The flag given.
        flag: &'static str,
        /// What the action takes instead.
        expected: &'static str,
    },
    /// CG was asked for on a Wilson-like M̂ (Wilson, clover, twisted mass), which is
    /// not Hermitian.
    #[error("cg needs a Hermitian positive-definite operator, and the even-odd {action} M̂ is not: use cgnr, cgne or bicgstab")]
    NotHermitian {
        /// The action.
        action: Action,
    },
    /// The CUDA backend was asked for and cannot be used.
    #[error("the CUDA backend is not available: {0}")]
    Backend(String),
    /// A GPU operation failed (building the operators, a transfer, a kernel).
    #[error("GPU solve failed: {0}")]
    Device(String),
    /// Smearing the links failed.
    #[error("{action} link smearing failed: {message}")]
    Smearing {
        /// The action (asqtad or HISQ).
        action: Action,
        /// Why.
        message: String,
    },
    /// The full system M ψ = η (a source on every site) cannot be solved for this action.
    #[error("the full system M ψ = η (a source on every site) is not available for the {action} action: {reason}")]
    FullSystemUnsupported {
        /// The action.
        action: Action,
        /// Why.
        reason: &'static str,
    },
    /// Open or SF boundaries for an action that has none, or that do not fit.
    #[error("{0}")]
    OpenBoundary(String),
    /// A process grid (`--grid`) that cannot be used, or a distributed solve that failed
    /// (a peer that timed out is named).
    #[error("{0}")]
    Grid(String),
    /// A source file could not be read or does not fit the action.
    #[error("cannot use the source file: {0}")]
    SourceFile(String),
    /// A multi-source solve (`--sources`) was asked for with options it does not take.
    #[error("{0}")]
    Sources(String),
    /// Making the source failed.
    #[error("making the source failed: {0}")]
    Source(#[from] FieldError),
    /// The solver refused the options or an operation failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
}
