//! Operators built from the generated kernels, on host fields (the generated CPU code)
//! and on device fields (the generated CUDA kernels).
//!
//! | module | holds |
//! |---|---|
//! | [`cpu`] | [`EvenOddWilson`] and [`EvenOddStaggered`] on host fields: the solver's [`crate::solver::LinearOperator`] |
//! | [`clover`] | [`EvenOddClover`] on host fields: M̂ = D_pp − ¼ H_pq D_qq⁻¹ H_qp, D = A + iμγ5 (mass normalisation, μ = 0 for plain clover) |
//! | [`device`] | [`DeviceStencil`] (compile, bind, tuned launch) and the same operators on device fields |
//!
//! Conventions: even-odd Wilson M̂ = 1 − κ² H_pq H_qp on parity p (its dagger through the
//! kernels' dagger knob); staggered: MILC's even-odd normal operator
//! A = 4m² − D_pq D_qp = ((2m + D)†(2m + D))_pp, Hermitian positive definite.

pub mod clover;
pub mod cpu;
pub mod device;
#[cfg(test)]
mod tests;

pub use clover::EvenOddClover;
pub use cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
pub use device::{
    DeviceEvenOddClover, DeviceEvenOddStaggered, DeviceEvenOddWilson, DeviceStencil, DeviceXpay,
};
pub use qdsl_core::dsl::KernelParam;
