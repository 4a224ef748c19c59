//! Operators built from the generated kernels, on host fields (the generated CPU code)
//! and on device fields (the generated CUDA kernels).
//!
//! | module | holds |
//! |---|---|
//! | [`even_odd`] | the composition layer: [`EvenOddBlocks`] (D_pp, D_pq, D_qp, D_qq⁻¹ of an operator) and the one [`Schur`] complement M̂ = D_pp − D_pq D_qq⁻¹ D_qp over them, with source preparation and reconstruction, for host and device fields |
//! | [`cpu`] | host blocks of hop operators M = d + h K ([`HopBlocks`] of a [`HostHop`]): [`EvenOddWilson`] and [`EvenOddStaggered`] |
//! | [`full_clover`] | [`FullClover`]: the unpreconditioned Wilson-clover M = A − ½ H on all sites (the operator SAP decomposes) |
//! | [`clover`] | host [`CloverBlocks`]: [`EvenOddClover`], M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp, D = A + iμγ5 (mass normalisation, μ = 0 for plain clover) |
//! | [`mobius`] | Möbius (and Shamir, zMöbius) domain-wall fermions on host 5D fields: [`mobius::MobiusParams`], the s-operators M5, M_φ, M5⁻¹ ([`mobius::ChiralSOperator`]), [`mobius::MobiusBlocks`] and [`mobius::EvenOddMobius`] (asymmetric and symmetric M̂) |
//! | [`device`] | [`DeviceStencil`] (compile, bind, tuned launch) and the same blocks on device fields |
//!
//! Conventions: even-odd Wilson M̂ = 1 − κ² H_pq H_qp on parity p (its dagger through the
//! kernels' dagger knob); staggered: MILC's even-odd normal operator
//! A = 4m² − D_pq D_qp = ((2m + D)†(2m + D))_pp, Hermitian positive definite.

pub mod clover;
pub mod cpu;
pub mod device;
pub mod even_odd;
pub mod full_clover;
pub mod mobius;
#[cfg(test)]
pub(crate) mod tests;

pub use clover::{CloverBlocks, EvenOddClover};
pub use cpu::{
    EvenOddStaggered, EvenOddWilson, HopAdjoint, HopBlocks, HostHop, StaggeredLinks, WilsonLinks,
};
pub use device::{
    DeviceCloverBlocks, DeviceEvenOddClover, DeviceEvenOddHop, DeviceHopBlocks, DeviceRun,
    DeviceStencil, DeviceXpay,
};
pub use even_odd::{EvenOddBlocks, Schur, SchurForm};
pub use full_clover::FullClover;
pub use qdsl_core::dsl::KernelParam;
