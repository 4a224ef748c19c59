//! Smeared links on the GPU: the runner of a `link_paths!` plan ([`GpuSmearer`]), the
//! asqtad fat and long links of thin links ([`asqtad_links_gpu`]), HISQ links with the
//! U(3) projection on the GPU ([`hisq_links_gpu`]) and the gauge force of a `link_paths!`
//! action ([`GpuGaugeForce`]).
//!
//! | module | holds |
//! |---|---|
//! | [`runner`] | compiling a spec's tree kernel and launching it (one thread per link) |
//! | [`hisq`] | fat7, the U(3) projection and the second HISQ level, all on the GPU |
//! | [`force`] | an action's staple tree and F = −(β/3) TA[U Σ†] in one kernel |
//! | [`pullback`] | the chain rule back through a smearing (the fermion force's smearing part) |
//! | [`hisq_force`] | the chain rule back through the whole HISQ construction, U(3) projection included |
//!
//! Each kernel evaluates a [`qdsl_core::dsl::paths::tree::PathTree`] per link exactly as
//! its host reference `qdsl_core::dsl::paths::tree::smear_cpu` does (tested against the CPU
//! plan, plain path walks and MILC's links in the CPU tests; the GPU against the CPU in
//! `gpu_tests` and `qdsl check`).

pub mod force;
pub mod hisq;
pub mod hisq_force;
pub mod pullback;
pub mod runner;

pub use force::{force_program, ForceBuffers, GpuGaugeForce};
pub use hisq::{hisq_links_gpu, hisq_links_gpu_with, projection_program};
pub use hisq_force::{projection_pullback_program, GpuHisqForce, HisqForceBuffers};
pub use pullback::{gpu_pullback_program, GpuPullback, PullbackBuffers};
pub use runner::{
    asqtad_links_gpu, upload_links, GpuReal, GpuSmearer, NoHooks, SmearBuffers, SmearGpuError,
    StageHooks,
};

#[cfg(test)]
mod gpu_tests;
