//! `qdsl bench`: in one process run, the device copy bandwidth (the roofline), then each
//! kernel and operator at each lattice size, one parity: median time over many launches
//! after warm-up (device events around batches of back-to-back launches,
//! [`run::BATCH`]), GFLOP/s with the standard flop counts, GB/s in QUDA's and the
//! minimal byte model ([`qdsl_core::dsl::info::ByteModels`]), the minimal-model GB/s as
//! a fraction of the copy bandwidth, and optionally the ratio to QUDA.
//!
//! | module | holds |
//! |---|---|
//! | `block_blas` | the tensor-core block inner products (`mma_tile!`) in each mode |
//! | [`coarse`] | the device coarse construction's stages (multigrid set-up) |
//! | [`cpu`] | the CPU backend: the generated Rust of the hops, timed on the host |
//! | [`metrics`] | the arithmetic: rates from times, copy bandwidth |
//! | `operators` | the even-odd operators: Wilson, clover and twisted-mass M̂ |
//! | [`quda`] | QUDA's H100 numbers (from DESIGN.md) |
//! | [`report`] | cases, results, the table, the JSON document |
//! | [`run`] | the GPU runs |
//! | [`scaling`] | strong and weak scaling of the distributed device hops (`--grid`) |
//! | [`grid_operator`] | a whole distributed operator (Möbius or Wilson-clover M̂) against one GPU (`--grid … --mobius`, `--clover`) |
//! | [`grid_smear`] | extended-volume smearing over ranks (`--grid … --smear`) |
//! | [`smear`](mod@smear) | the asqtad link-smearing case |
//! | `generate` | the quenched Wilson heatbath sweep |

mod block_blas;
pub mod coarse;
pub mod cpu;
mod generate;
pub mod grid_operator;
pub mod grid_smear;
pub mod metrics;
mod mobius;
mod operators;
pub mod quda;
pub mod report;
pub mod run;
pub mod scaling;
pub mod smear;

pub use report::{default_cases, render, to_json, BenchCase, BenchKernel, BenchReport};
pub use run::{run_bench, BenchOptions};
