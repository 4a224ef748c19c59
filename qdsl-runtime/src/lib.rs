//! # qdsl-runtime
//!
//! Runs what qdsl generates: backends, JIT and caches, device fields, the autotuner,
//! operators and solvers: the library the `qdsl` program (the root package `qdsl`: its
//! applications, `check`, `bench` and command line) and the Python package build on.
//!
//! | module | holds |
//! |---|---|
//! | [`backend`] | the [`backend::Backend`] interface, CPU and CUDA backends, selection |
//! | [`comm`] | communication between ranks: grouped face exchange, deterministic all-reduce; threads and NCCL |
//! | [`distributed`] | operators on a lattice decomposed over ranks: halo exchange, the distributed host hop |
//! | [`jit`] | NVRTC compilation, the PTX cache, ptxas reports |
//! | [`tune`] | the autotuner and its TSV cache |
//! | [`device`] | device fields: formats, layout, GPU conversion kernels, f64 reductions |
//! | [`operator`] | even-odd Wilson and staggered operators on host and device fields; generated-kernel launches |
//! | [`generate`] | gauge-field generation on the GPU: the f64 force back end of quenched HMC |
//! | [`smear`] | `link_paths!` plans run on the GPU: asqtad, fat7 smeared links |
//! | [`libs`] | finding the CUDA libraries without panicking |
//! | [`hash`] | the stable FNV-1a-128 content hash of cache keys |
//! | [`multigrid`] | aggregation multigrid: dense operators of every level, prolongator, coarse-operator construction, X⁻¹Y |
//! | [`linear`] | the interfaces between operators and solvers: vector space, linear operator, their error |
//! | [`solver`] | Krylov solvers on host and device vectors, mixed precision with reliable updates |
//! | `testing` | (feature `testing`, and this crate's tests) NVRTC and GPU access for tests |
//!
//! Environment: `QDSL_BACKEND` (cpu|cuda|auto), `QDSL_CACHE_DIR`, `QDSL_DUMP_DIR`,
//! `QDSL_TUNE=0`, `QDSL_NVRTC_LIB`, `QDSL_NCCL_LIB`, `QDSL_COMM_TIMEOUT`, `QDSL_PTXAS`, `QDSL_CUDA_WHEEL_DIR`.

pub mod backend;
pub mod comm;
pub mod device;
pub mod distributed;
pub mod generate;
pub mod hash;
pub mod jit;
pub mod libs;
pub mod linear;
pub mod multigrid;
pub mod operator;
pub mod rhmc;
pub mod smear;
pub mod solver;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tune;
