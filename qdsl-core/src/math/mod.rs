//! Lattice QCD linear algebra, generic over [`Real`](crate::Real) (`f32`, `f64`).
//!
//! | type | what it is |
//! |---|---|
//! | [`ColourMatrix`] | a 3×3 complex matrix: gauge links (SU(3)), smeared links (U(3)), staples |
//! | [`ColourVector`] | a 3-component complex vector (staggered fermion at one site) |
//! | [`Spinor`], [`HalfSpinor`] | 4 × 3 and 2 × 3 spin-colour vectors ([`SpinColourVector`]) |
//! | [`SpinMatrix`] | a dense 4×4 complex matrix in spin space |
//! | [`Gamma`], [`SignedPermutation`], [`Phase`] | the DeGrand–Rossi γ_μ, γ_5 as exact tables ([`gamma`]) |
//! | [`ProjectorSign`] | the ± of the spin projectors 1 ± γ_μ ([`projector`]) |
//! | [`MatrixError`] | why a U(3)/SU(3) projection failed |
//!
//! SU(3)/U(3) algorithms are methods of [`ColourMatrix`]: [`ColourMatrix::determinant`],
//! [`ColourMatrix::reunitarize`] (Gram–Schmidt to SU(3)),
//! [`ColourMatrix::traceless_antihermitian_part`], [`ColourMatrix::exp`] (su(3) → SU(3),
//! closed form), [`ColourMatrix::polar_u3`] (HISQ's V(V†V)^{−1/2}) and
//! [`ColourMatrix::project_su3`] (maximises Re tr(W†V) over SU(3)). Spin projection is
//! [`Spinor::project`] / [`HalfSpinor::reconstruct`]; σ_μν is [`sigma`].

mod colour_matrix;
mod colour_vector;
mod error;
pub mod gamma;
mod polar;
pub(crate) use polar::{inverse_sqrt_coefficients, PolarCore};
pub mod projector;
mod spin_matrix;
mod spinor;
mod su3;
mod su3_exp;
mod su3_projection;
#[cfg(test)]
mod test_support;

pub use colour_matrix::ColourMatrix;
pub use colour_vector::ColourVector;
pub use error::MatrixError;
pub use gamma::{sigma, Gamma, Phase, SignedPermutation};
pub use num_complex::Complex;
pub use projector::ProjectorSign;
pub use spin_matrix::SpinMatrix;
pub use spinor::{HalfSpinor, SpinColourVector, Spinor};

/// Number of colours of the gauge group SU(N_c) the host math is written for.
pub const NC: usize = 3;
