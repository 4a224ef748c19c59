//! Rational hybrid Monte Carlo for improved staggered quarks (asqtad, HISQ) on the host.
//!
//! | module | holds |
//! |---|---|
//! | [`links`] | the smeared links of one configuration and the pull-back of a gradient through the smearing |
//! | [`fermion`] | a pseudofermion's rational action φ† r(A) φ, its force, the heatbath r(A) ξ |
//! | [`gpu`] | the pull-back through the smearing (the fermion force's smearing part) on the GPU |
//! | [`trajectory`] | [`Rhmc`]: 2+1 flavours outside, the gauge levels of [`Hmc`](qdsl_core::gauge::generate::Hmc) inside, Metropolis |

pub mod fermion;
pub mod gpu;
pub mod links;
pub mod trajectory;

pub use fermion::StaggeredFermion;
pub use gpu::GpuSmearingPullback;
pub use links::{SmearedLinks, SmearingPullback, StaggeredSmearing};
pub use trajectory::{Flavour, Pseudofermions, Rhmc};

use crate::linear::SolverError;
use qdsl_core::dsl::DslError;
use qdsl_core::field::FieldError;
use qdsl_core::gauge::generate::GenerateError;
use qdsl_core::math::MatrixError;

/// Why an RHMC step failed.
#[derive(Debug, thiserror::Error)]
pub enum RhmcError {
    /// A link spec could not be lowered or run.
    #[error("link smearing: {0}")]
    Spec(#[from] DslError),
    /// The U(3) projection (or its derivative) of a HISQ fat7 link failed.
    #[error("U(3) projection of the fat7 link with storage index {link} (4·cb + μ): {error}")]
    Projection {
        /// 4 · checkerboard index + μ.
        link: usize,
        /// Why.
        error: MatrixError,
    },
    /// A GPU kernel of the force failed.
    #[error("GPU: {0}")]
    Gpu(#[from] crate::smear::SmearGpuError),
    /// Inconsistent link levels.
    #[error("{0}")]
    Links(String),
    /// The solver failed.
    #[error("solver: {0}")]
    Solver(#[from] SolverError),
    /// A field operation failed.
    #[error("field: {0}")]
    Field(#[from] FieldError),
    /// The gauge levels failed.
    #[error("gauge levels: {0}")]
    Gauge(#[from] GenerateError),
    /// The multi-shift CG did not reach its tolerance.
    #[error(
        "multi-shift CG: expected every shift to converge to {tolerance:e}, found one that did not"
    )]
    NotConverged {
        /// The tolerance asked for.
        tolerance: f64,
    },
}

#[cfg(test)]
mod tests;
