//! Smeared links on the GPU: the runner of a `link_paths!` plan ([`GpuSmearer`]) and the
//! asqtad fat and long links of thin links ([`asqtad_links_gpu`]).
//!
//! | module | holds |
//! |---|---|
//! | [`runner`] | compiling a plan's four kernels and running its launch schedule |
//!
//! The runner follows [`qdsl_core::dsl::paths::cuda::schedule`] launch by launch, exactly
//! as the host emulation in `qdsl-kernels/tests/link_paths_plan.rs` does.

pub mod runner;

pub use runner::{asqtad_links_gpu, GpuReal, GpuSmearer, SmearBuffers, SmearGpuError};

#[cfg(test)]
mod gpu_tests;
