//! Errors of host-field construction and arithmetic.

use crate::lattice::{Coords, GeometryError, Lattice, Parity};
use thiserror::Error;

/// What went wrong building, indexing or combining host fields.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FieldError {
    /// The lattice (or Ls) itself is invalid.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// A colour-spinor field needs at least one spin and one colour component.
    #[error(
        "a colour-spinor field needs nspin ≥ 1 and ncolour ≥ 1, found nspin = {nspin}, \
         ncolour = {ncolour}"
    )]
    EmptyComponents {
        /// Requested spin components.
        nspin: usize,
        /// Requested colour components.
        ncolour: usize,
    },
    /// The number of complex components does not fit in memory indexing.
    #[error(
        "a field of {sites} sites × {per_site} complex components per site does not fit the \
         address space"
    )]
    TooLarge {
        /// Sites, Ls · N_sites.
        sites: usize,
        /// Complex components per site, nspin · ncolour.
        per_site: usize,
    },
    /// Storage of the wrong length for a layout.
    #[error("storage holds {found} complex components, the layout needs {expected}")]
    WrongLength {
        /// Components the layout needs.
        expected: usize,
        /// Components supplied.
        found: usize,
    },
    /// Two fields that must share a layout do not.
    #[error("field layouts differ: expected {expected}, found {found}")]
    LayoutMismatch {
        /// The first field's layout.
        expected: String,
        /// The other field's layout.
        found: String,
    },
    /// Two objects that must live on the same lattice do not.
    #[error("lattices differ: expected {expected}, found {found}")]
    LatticeMismatch {
        /// The lattice of the object acting.
        expected: Lattice,
        /// The lattice of the object acted on.
        found: Lattice,
    },
    /// A site of the wrong parity was addressed in a single-parity field.
    #[error("site {coords:?} has {found:?} parity, but the field holds only {expected:?} sites")]
    WrongParity {
        /// The site addressed.
        coords: Coords,
        /// The parity the field holds.
        expected: Parity,
        /// The parity of the site.
        found: Parity,
    },
    /// An index (coordinate, s-slice, spin or colour) is out of range.
    #[error("{what} index {index} is out of range: the field has {limit}")]
    IndexOutOfRange {
        /// Which index ("s-slice", "spin", "colour").
        what: &'static str,
        /// The index given.
        index: usize,
        /// Its exclusive upper bound.
        limit: usize,
    },
    /// An operation defined for a fixed number of colours met a field with another.
    #[error("{operation} needs {expected} colours, the field has {found}")]
    ColourCount {
        /// The operation that was attempted.
        operation: &'static str,
        /// Colours it needs.
        expected: usize,
        /// Colours the field has.
        found: usize,
    },
}
