//! Lattice geometry: extents, site indexing, neighbours, boundary phases, sub-domains,
//! MILC's staggered signs, the decomposition over processes ([`decomposition`]).
//!
//! Sites carry coordinates `[x, y, z, t]` (direction μ = 0, 1, 2, 3). Two orders exist:
//!
//! * **lexicographic** (external files): `lex = x + Lx (y + Ly (z + Lz t))`, x fastest;
//! * **checkerboard** (host fields): even sites (x+y+z+t even) first, then odd ones;
//!   within a parity sites keep their lexicographic order, so
//!   `cb = parity · V/2 + lex / 2` (valid because every extent is even).
//!
//! Extents must be even and non-zero, and the number of sites (times Ls for 5D fields)
//! must fit the 32-bit signed site index that device kernels use.

mod blocks;
mod boundary;
pub mod decomposition;
mod extended;
mod geometry;
mod site_box;
mod staggered;

pub use blocks::BlockDecomposition;
pub use boundary::{BoundaryCondition, BoundaryConditions};
pub use decomposition::{Decomposition, DecompositionError, ProcessGrid, Side};
pub use extended::LaunchBoxes;
pub use extended::{ExtendedLattice, HaloShape};
pub use geometry::{Coords, Lattice, Lattice5D, Parity, MAX_SITES};
pub use site_box::SiteBox;
pub use staggered::{staggered_link_sign, staggered_phase};

use thiserror::Error;

/// Invalid lattice dimensions or decompositions.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GeometryError {
    /// An extent is zero.
    #[error("lattice extent L{dir} is zero; every extent must be a positive even number")]
    ZeroExtent { dir: char },
    /// An extent is odd (even-odd preconditioning needs even extents).
    #[error(
        "lattice extent L{dir} = {extent} is odd; even-odd (checkerboard) indexing needs every \
         extent to be even"
    )]
    OddExtent { dir: char, extent: usize },
    /// The volume does not fit the site index type.
    #[error(
        "lattice {dims:?} × Ls = {ls} has too many sites for the 32-bit site index \
         (limit {limit}, found {found})"
    )]
    VolumeOverflow {
        dims: [usize; 4],
        ls: usize,
        limit: usize,
        /// The site count, or "more than usize::MAX" when the product overflowed.
        found: String,
    },
    /// Ls is zero.
    #[error("fifth-dimension extent Ls must be at least 1, found 0")]
    ZeroLs,
    /// Block extents do not divide the lattice.
    #[error(
        "block extent {block} in direction {dir} does not divide the lattice extent {extent} \
         (or is zero)"
    )]
    BlockDoesNotDivide {
        dir: char,
        block: usize,
        extent: usize,
    },
    /// A coordinate lies outside the lattice.
    #[error("coordinate {coord} in direction {dir} is outside the lattice extent {extent}")]
    CoordinateOutOfRange {
        dir: char,
        coord: usize,
        extent: usize,
    },
}

/// Names of the four directions, μ = 0..4.
pub const DIRECTION_NAMES: [char; 4] = ['x', 'y', 'z', 't'];
