//! # qdsl-runtime
//!
//! Runs what qdsl generates: backends, JIT and caches, device fields, the autotuner,
//! operators and solvers, and the `qdsl` command-line program ([`cli`]).

pub mod cli;
