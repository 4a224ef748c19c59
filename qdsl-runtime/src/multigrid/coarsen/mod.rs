//! Coarse-operator construction (Clark et al., arXiv:1612.07873, §III; QUDA's
//! `coarse_op`): from an operator M = X − D in [`super::DenseOperator`] form and a
//! [`super::Prolongator`] P, the coarse operator M_c = P† M P in the same form.
//!
//! With the fine hop D φ(x) = Σ_μ [Y⁺_μ(x) φ(x+μ̂) + Y⁻_μ(x−μ̂)† φ(x−μ̂)] and, for every
//! fine site z and direction μ, the products of the links with the vectors at the
//! forward neighbour
//!
//! UV⁺_μ(z) = Y⁺_μ(z) V(z+μ̂),   UV⁻_μ(z) = Y⁻_μ(z) V(z+μ̂)   (N_f × 2N_v),
//!
//! the coarse links of the coarse site X are sums over the sites z of X whose forward
//! hop leaves the block (z_μ mod b_μ = b_μ − 1):
//!
//! Y⁺_c,μ(X) = Σ_z V(z)† UV⁺_μ(z),   Y⁻_c,μ(X) = Σ_z V(z)† UV⁻_μ(z),
//!
//! (the coarse hop's forward link, and the link whose adjoint the backward coarse hop
//! from X + μ̂ applies: P†DP's block (X+μ̂, X) is Σ_z [V(z)† Y⁻_μ(z) V(z+μ̂)]†), and the
//! site-local part collects the site term and the hops that stay inside the block:
//!
//! X_c(X) = Σ_{x∈X} V(x)† X(x) V(x) − Σ_{z∈X, z+μ̂∈X} [ V(z)† UV⁺_μ(z) + (V(z)† UV⁻_μ(z))† ].
//!
//! Boundary signs are in the fine links, so they land in the coarse links of the last
//! coarse slice and the coarse operator wraps periodically. [`cpu`] is the reference: the
//! definitions as plain loops in f64;
//! [`fixed16`] the same in 16-bit fixed point through integer sums, bitwise identical
//! for any grouping and order of the sums; [`tiles`] the coarse links through the
//! tensor-core tiles' CPU path (`mma_tile!`, `qdsl_kernels::multigrid`); [`units`] the
//! construction as a table of units c_u = ±A†B, what the device construction runs.

pub mod cpu;
pub mod fixed16;
pub mod tiles;
pub mod units;

pub use cpu::coarsen;
pub use fixed16::{coarsen_fixed16, Fixed16Coarse, Grouping};
