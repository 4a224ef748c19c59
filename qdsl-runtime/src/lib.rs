//! # qdsl-runtime
//!
//! Runs what qdsl generates: backends, JIT and caches, device fields, the autotuner,
//! operators and solvers, and the `qdsl` command-line program ([`cli`]).
//!
//! | module | holds |
//! |---|---|
//! | [`app`] | applications apart from their command lines: `qdsl solve`'s logic and history output |
//! | [`backend`] | the [`backend::Backend`] interface, CPU and CUDA backends, selection |
//! | [`jit`] | NVRTC compilation, the PTX cache, ptxas reports |
//! | [`tune`] | the autotuner and its TSV cache |
//! | [`device`] | device fields: formats, layout, GPU conversion kernels, f64 reductions |
//! | [`operator`] | even-odd Wilson and staggered operators on host and device fields; generated-kernel launches |
//! | [`check`] | `qdsl check`: GPU kernels and operators against the CPU reference |
//! | [`bench`](mod@bench) | `qdsl bench`: copy roofline, kernel and operator timings, QUDA comparison |
//! | [`smear`] | `link_paths!` plans run on the GPU: asqtad, fat7 smeared links |
//! | [`libs`] | finding the CUDA libraries without panicking |
//! | [`hash`] | the stable FNV-1a-128 content hash of cache keys |
//!
//! Environment: `QDSL_BACKEND` (cpu|cuda|auto), `QDSL_CACHE_DIR`, `QDSL_DUMP_DIR`,
//! `QDSL_TUNE=0`, `QDSL_NVRTC_LIB`, `QDSL_PTXAS`, `QDSL_CUDA_WHEEL_DIR`.

pub mod app;
pub mod backend;
pub mod bench;
pub mod check;
pub mod cli;
pub mod device;
pub mod hash;
pub mod jit;
pub mod libs;
pub mod operator;
pub mod smear;
pub mod solver;
#[cfg(test)]
mod test_gpu;
pub mod tune;
