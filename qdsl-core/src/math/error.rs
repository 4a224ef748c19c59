//! Errors of the matrix algorithms that can fail on their input.

use thiserror::Error;

/// Why a projection of a colour matrix to U(3) or SU(3) could not be computed.
///
/// Values are reported in `f64` whatever the precision of the computation.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MatrixError {
    /// The input has a NaN or infinite element.
    #[error("colour matrix has a non-finite element (NaN or infinity); expected finite elements")]
    NonFinite,
    /// V is singular (or too close to singular for the closed form): the polar factor
    /// V (V†V)^{−1/2} is not defined or not accurate.
    #[error(
        "polar projection to U(3) needs a non-singular matrix V: the eigenvalues of V†V/‖V‖² \
         range from {smallest:e} to {largest:e}; expected the smallest above {threshold:e} \
         times the largest"
    )]
    Singular {
        /// Smallest eigenvalue of V†V/‖V‖²_F.
        smallest: f64,
        /// Largest eigenvalue of V†V/‖V‖²_F.
        largest: f64,
        /// The smallest ratio smallest/largest accepted.
        threshold: f64,
    },
    /// The computed polar factor fails the final unitarity check ‖W†W − 1‖_F ≤ tolerance.
    #[error(
        "polar projection to U(3) lost accuracy: ‖W†W − 1‖ = {deviation:e}, expected at most \
         {tolerance:e}"
    )]
    NotUnitary {
        /// ‖W†W − 1‖_F of the computed W.
        deviation: f64,
        /// The largest deviation accepted.
        tolerance: f64,
    },
}
