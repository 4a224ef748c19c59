//! Aggregation multigrid for Wilson-type operators (Clark et al., arXiv:1612.07873;
//! Brannick, Brower, Clark, Osborn and Rebbi; QUDA's coarse operators): the operators
//! of every level in one form, M = X − D with dense N × N site matrices and links
//! ([`DenseOperator`], the catalog's `CoarseOp`), the prolongator P of chirality-split,
//! block-orthonormal near-null vectors ([`Prolongator`]), the coarse operator
//! M_c = P† M P ([`coarsen`]) and its site-preconditioned form X⁻¹M = 1 − X⁻¹D with
//! the even-odd Schur complement ([`Preconditioned`]).
//!
//! | module | holds |
//! |---|---|
//! | [`operator`] | [`DenseOperator`]: M = X − D, from Wilson-clover or a coarse level |
//! | [`prolongator`] | [`Prolongator`]: V chirality split and block orthonormalised; P, P† |
//! | [`coarsen`] | UV, Y = V†UV and X_c: M_c = P† M P (the CPU reference); in 16-bit fixed point through integer sums (`fixed16`); the links through the `mma_tile!` V†UV tiles (`tiles`) |
//! | [`preconditioned`] | X⁻¹Y and the even-odd Schur complement 1 − D'_pq D'_qp |
//! | [`device`] | the construction on the GPU: Y_c, X_c and X⁻¹Y by the `mma_tile!` tiles (f64 DMMA, 3×BF16), the fixed16 passes bitwise the CPU's |
//! | `dense` | row-major complex matrix products and inversion |

pub mod coarsen;
mod dense;
pub mod device;
pub mod operator;
pub mod preconditioned;
pub mod prolongator;
#[cfg(test)]
mod tests;

pub use coarsen::{coarsen, coarsen_fixed16, Fixed16Coarse, Grouping};
pub use operator::DenseOperator;
pub use preconditioned::Preconditioned;
pub use prolongator::Prolongator;

use qdsl_core::field::FieldError;
use qdsl_core::lattice::{Coords, GeometryError};

/// Why a multigrid level could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CoarsenError {
    /// Fields or operators of shapes that do not fit together (the message says which,
    /// expected and found).
    #[error("multigrid: {0}")]
    Shape(String),
    /// A field's layout or size.
    #[error("multigrid: {0}")]
    Field(#[from] FieldError),
    /// Blocks that do not tile the lattice, or an odd coarse extent.
    #[error("multigrid: blocks: {0}")]
    Geometry(#[from] GeometryError),
    /// Near-null vector `vector` of chirality `chirality` is linearly dependent on the
    /// earlier ones on the block of coarse site `block`.
    #[error(
        "multigrid: near-null vector {vector} (chirality {chirality}) is linearly dependent \
         on the earlier ones on the block of coarse site {block:?}"
    )]
    DependentVectors {
        /// The coarse site.
        block: Coords,
        /// The chirality, 0 (+) or 1 (−).
        chirality: usize,
        /// The vector.
        vector: usize,
    },
    /// A unit or a sum of the fixed-point construction beyond the 32-bit accumulator
    /// (the scale of pass 1 cannot hold it).
    #[error(
        "multigrid: a fixed-point sum of coarse site {coarse_site} overflows the 32-bit \
         accumulator (|contribution| ≥ 2⁷ S)"
    )]
    FixedPointOverflow {
        /// The coarse site (checkerboard index).
        coarse_site: usize,
    },
    /// The device construction failed (a launch, a copy, memory).
    #[error("multigrid: {0}")]
    Device(#[from] crate::device::DeviceError),
    /// The site matrix X at `site` is singular (no pivot in `column`).
    #[error("multigrid: the site matrix X at {site:?} is singular (no pivot in column {column})")]
    SingularSiteMatrix {
        /// The coarse site.
        site: Coords,
        /// The column without a pivot.
        column: usize,
    },
}
