//! Errors of the gauge utilities.

use crate::field::FieldError;
use crate::lattice::Coords;
use thiserror::Error;

/// What went wrong in a gauge utility.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GaugeError {
    /// The fields involved do not fit together (lattice, colours).
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A link cannot be projected to SU(3): its first two rows are zero, parallel or not
    /// finite.
    #[error(
        "link U_{mu}(x) at x = {coords:?} cannot be reunitarised: expected two linearly \
         independent finite rows, found a degenerate or non-finite matrix"
    )]
    DegenerateLink {
        /// The site x.
        coords: Coords,
        /// The direction μ.
        mu: usize,
    },
}
