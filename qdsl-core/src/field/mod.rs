//! Host fields: data on the CPU, indexed by checkerboard site index (even sites first),
//! and the portable, seeded random generator that fills them.
//!
//! | type | what it is |
//! |---|---|
//! | [`GaugeField`] | four links U_μ(x) per site |
//! | [`ColourSpinorField`] | ψ_{s,x,σ,a}: Wilson, staggered ([`ColourVectorField`]), 5D, coarse |
//! | [`DenseLinkField`] | a dense N × N link per site and direction (multigrid coarse links), or one site matrix per site |
//! | [`CloverField`] | a packed hermitian clover block pair A(x) per site (72 reals) |
//! | [`SpinorLayout`] | the shape of a colour-spinor field: Ls, subset, spins, colours |
//! | [`distributed`] | a field scattered over the ranks of a process grid, with halos; face packing |
//! | [`RandomStream`] | the counter-based (Philox-4x32-10) generator, one stream per link or site |

mod clover_field;
mod colour_spinor;
mod dense_links;
pub mod distributed;
mod error;
mod gauge_field;
pub(crate) mod portable_math;
mod random_su3;
pub mod rng;
mod spinor_blas;
mod spinor_layout;

pub use clover_field::{
    clover_apply_site, clover_block_entry, clover_offdiag_offset, pack_clover_block,
    unpack_clover_block, CloverField, CLOVER_BLOCK_DIM, CLOVER_BLOCK_REALS, CLOVER_SITE_REALS,
};
pub use colour_spinor::{ColourSpinorField, ColourVectorField};
pub use dense_links::{
    dense_mul_add, DenseKind, DenseLinkField, DENSE_LINK_DOMAIN, SITE_MATRIX_DOMAIN,
};
pub use error::FieldError;
pub use gauge_field::GaugeField;
pub use random_su3::{gaussian_su3_algebra, haar_su3};
pub use rng::{Philox4x32, RandomStream, StreamDomain};
pub use spinor_layout::{SiteSubset, SpinorLayout};
