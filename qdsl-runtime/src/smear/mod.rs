//! Smeared links on the GPU: the runner of a `link_paths!` plan ([`GpuSmearer`]), the
//! asqtad fat and long links of thin links ([`asqtad_links_gpu`]), HISQ links with the
//! U(3) projection on the GPU ([`hisq_links_gpu`]) and the gauge force of a `link_paths!`
//! action ([`GpuGaugeForce`]).
//!
//! | module | holds |
//! |---|---|
//! | [`runner`] | compiling a plan's four kernels and running its launch schedule |
//! | [`hisq`] | fat7, the U(3) projection and the second HISQ level, all on the GPU |
//! | [`force`] | the staple schedule of an action, then F = −(β/3) TA[U Σ†] per link |
//!
//! The runner follows [`qdsl_core::dsl::paths::cuda::schedule`] launch by launch, exactly
//! as the host emulation in `qdsl-kernels/tests/link_paths_plan.rs` does.

pub mod force;
pub mod hisq;
pub mod runner;

pub use force::{force_program, ForceBuffers, GpuGaugeForce};
pub use hisq::{hisq_links_gpu, projection_program};
pub use runner::{asqtad_links_gpu, GpuReal, GpuSmearer, SmearBuffers, SmearGpuError};

#[cfg(test)]
mod gpu_tests;
