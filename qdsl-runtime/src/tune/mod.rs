//! The autotuner and its cache.
//!
//! * [`launch`]: launch knobs (1- to 3-D block, grid, throttling shared memory: no
//!   recompile) and the candidates, enumerated from a kernel's knob space
//!   ([`qdsl_core::dsl::KnobSpace`], carried in its geometry); compile knobs travel in
//!   [`Candidate::compile`] as a label.
//! * [`compile`]: the builds of a kernel's compile knobs (register caps, prefetch).
//! * [`search`]: the two-stage compile × launch search ([`Tuner::tune_two_stage`]).
//! * [`key`]: the [`TuneKey`] (kernel, variant hash, volume, formats, device) and the
//!   cache's [`Fingerprint`] (crate version, codegen hash, GPU, sm, driver, NVRTC).
//! * [`cache`]: the human-readable TSV file keeping every candidate's time.
//! * [`lock`]: the inter-process lock writers take.
//! * [`tunable`]: the [`Tunable`] trait every tuned kernel implements (stencils, BLAS,
//!   reductions, format conversions, link paths) and [`Tuner::tune_kernel`], the one
//!   entry point under the [`TunePolicy`] (which kernels are timed on first use:
//!   [`FirstUse`]).
//! * `tuner`: [`Tuner::tune`], which takes a closure "run this candidate, return its
//!   time in µs", so it can be tested with a fake timer.
//!
//! The cache file is `<cache root>/tunecache.tsv` ([`default_path`]). `QDSL_TUNE`
//! chooses the [`TunePolicy`]: launch knobs of one heuristic build on first use (the
//! default), `full` (compile × launch knobs), or `0` (off: the default build and launch).

pub mod cache;
pub mod compile;
pub mod key;
pub mod launch;
pub mod lock;
pub mod search;
pub mod tunable;
mod tuner;

#[cfg(test)]
mod first_use_tests;

pub use cache::{Measurement, TuneCache};
pub use compile::{compile_knobs, heuristic_knob, CompileKnob, PREFETCH_MACRO, REGISTER_CAPS};
pub use key::{Fingerprint, TuneKey};
pub use launch::{launch_candidates, Candidate, LaunchConfig, LaunchLimits};
pub use search::TwoStageSearch;
pub use tunable::FirstUse;
pub use tunable::Tunable;
pub use tuner::{
    tuning_enabled, TuneError, TunePolicy, TuneSource, Tuned, Tuner, TRANSFER_VOLUME_RATIO,
    TUNE_ENV,
};

/// The tune cache file: `<cache root>/tunecache.tsv` (see [`crate::jit::cache`]).
pub fn default_path() -> std::path::PathBuf {
    crate::jit::cache::cache_root().join("tunecache.tsv")
}
