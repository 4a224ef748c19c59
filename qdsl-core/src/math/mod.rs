//! Lattice QCD linear algebra, generic over [`Real`](crate::Real) (`f32`, `f64`).
//!
//! | type | what it is |
//! |---|---|
//! | [`ColourMatrix`] | a 3×3 complex matrix: gauge links (SU(3)), smeared links (U(3)), staples |
//! | [`ColourVector`] | a 3-component complex vector (staggered fermion at one site) |

mod colour_matrix;
mod colour_vector;

pub use colour_matrix::ColourMatrix;
pub use colour_vector::ColourVector;
pub use num_complex::Complex;

/// Number of colours of the gauge group SU(N_c) the host math is written for.
pub const NC: usize = 3;
