//! # qdsl
//!
//! The `qdsl` program and the umbrella crate. The layers below it, one way only:
//! `qdsl-core` (the compiler part: math, lattice, fields, storage formats, the DSL from
//! spec to CUDA text; with `full`, gauge utilities and file I/O) ← `qdsl-macros` (the
//! `stencil!`/`link_paths!` front ends) ← `qdsl-kernels` (the specs and their generated
//! registry) ← `qdsl-runtime` (backends, JIT, tuner, device fields, operators, solvers)
//! ← this crate:
//!
//! | module | holds |
//! |---|---|
//! | [`app`] | applications apart from their command lines: solves, propagators and correlators, precision studies, histories |
//! | [`check`] | `qdsl check`: GPU kernels and operators against the CPU reference |
//! | [`bench`](mod@bench) | `qdsl bench`: copy roofline, kernel and operator timings, QUDA comparison |
//! | [`cli`] | the command line (`src/main.rs` is the binary) |
//!
//! The crates are re-exported as [`core`], [`macros`], [`kernels`] and [`runtime`].

pub use qdsl_core as core;
pub use qdsl_kernels as kernels;
pub use qdsl_macros as macros;
pub use qdsl_runtime as runtime;

pub mod app;
pub mod bench;
pub mod check;
pub mod cli;
