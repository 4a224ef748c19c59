//! # qdsl-kernels
//!
//! The kernel catalog: the library's operators, each written once as a `stencil!` spec.
//! Every variant (parity, dagger, xpay, formats, recon, boundary) is a knob of the one
//! spec ([`qdsl_core::dsl::Variant`]).
//!
//! | kernel | operator |
//! |---|---|
//! | [`WilsonHop`] | the Wilson hopping term H (DESIGN.md conventions) |
//! | [`NaiveStaggeredHop`] | the naive staggered hop with phases folded into the links |
//! | [`ImprovedStaggeredHop`] | fat one-hop + long three-hop links (asqtad, HISQ) |
//! | [`WilsonClover`] | the Wilson-clover operator A ψ − ½ H ψ, with a clover field A |
//! | [`CloverApply`] | the clover matrix A(x) ψ(x) (or A⁻¹ with the inverse field) |
//! | [`CoarseHop`] | the multigrid coarse hop on 2 × 24 fields with dense 48 × 48 links |
//! | [`CoarseOp`] | the whole coarse operator X − D_c (dense site matrix X plus the coarse hop) |
//! | [`TwistedMassTwist`] | the twist i γ5 ψ(x); with xpay the twisted-mass block (m + 4) + i μ γ5 and its inverse |
//! | [`AsqtadFat`], [`AsqtadLong`], [`Fat7`], [`HisqFat`] | smeared links (`link_paths!`), see [`asqtad_links`], [`hisq_links`] |
//! | [`domain_wall`] | Möbius domain-wall chains (`fused5d!`): QUDA's fused M̂ kernels and the MSPCG kernels |
//! | [`block_blas`] | tensor-core block inner products (`mma_tile!`) in f64 DMMA, 3×TF32, bf16 and 3×BF16 |
//! | [`multigrid`] | the multigrid set-up's tiles (`mma_tile!`): Y = V†UV as batched inner products, f64 DMMA and 3×BF16 |
//! | [`WilsonGauge`], [`SymanzikGauge`], [`IwasakiGauge`] | gauge actions of closed loops (`link_paths!` `action`), their value and force |
//!
//! [`catalog`] lists every spec as values, generated at build time from the specs
//! themselves.

mod actions;
pub mod block_blas;
pub mod catalog;
mod clover;
mod coarse;
pub mod domain_wall;
mod links;
pub mod multigrid;
mod staggered;
mod twisted_mass;
mod wilson;

pub use actions::{IwasakiGauge, SymanzikGauge, WilsonGauge};
pub use clover::{CloverApply, WilsonClover};
pub use coarse::{CoarseHop, CoarseOp};
pub use links::{
    add_naik_epsilon, asqtad_links, fold_staggered_phases, hisq_chain, hisq_links,
    naik_epsilon_coefficients, staggered_phase, AsqtadFat, AsqtadLong, Fat7, HisqFat, HisqStages,
    SmearError,
};
pub use staggered::{ImprovedStaggeredHop, NaiveStaggeredHop};
pub use twisted_mass::TwistedMassTwist;
pub use wilson::WilsonHop;
