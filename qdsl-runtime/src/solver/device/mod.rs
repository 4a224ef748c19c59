//! Solves on the GPU: device Krylov vectors ([`DeviceVector`], the solvers'
//! [`SolverField`](crate::solver::SolverField) with BLAS as generated CUDA kernels and
//! f64 reductions) and the device even-odd operators as the solvers'
//! [`LinearOperator`](crate::solver::LinearOperator) ([`DeviceOperator`]).
//!
//! | module | holds |
//! |---|---|
//! | [`precision`] | [`DevicePrecision`]: the storage markers device vectors are kept in (f64 [`Double`], f32 [`Single`], fixed16, fixed8, f16, packed20/30) |
//! | [`context`] | [`DeviceContext`]: GPU, tuner, BLAS status word, the sticky error |
//! | [`blas_source`] | the CUDA source of y ← a x + b y for any pair of vector formats |
//! | [`blas`] | its launch on device fields |
//! | [`vector`] | [`DeviceVector`]: `SolverField` and `ConvertFrom` between every pair of precisions |
//! | [`operator`](mod@operator) | [`DeviceOperator`]: the generic even-odd [`crate::operator::Schur`] of device blocks (Wilson, clover/twisted, staggered, any stencil's hop blocks) on device vectors |
//! | [`site_map`] | gather onto, scatter from and mask a mapped lattice (MSPCG's stacked blocks), any pair of formats |
//! | [`converting`] | [`ConvertingOperator`]: an operator of one precision on vectors of another (packed20/30) |
//!
//! The GPU tests (`solver::device::gpu_tests`) are ignored where there is no GPU (run them with `--include-ignored` on one).

pub mod blas;
pub mod blas_source;
pub mod context;
pub mod converting;
#[cfg(test)]
mod gpu_tests;
pub mod operator;
pub mod precision;
pub mod site_map;
pub mod vector;

pub use context::{DeviceContext, GlobalSum};
pub use converting::ConvertingOperator;
pub use operator::DeviceOperator;
pub use precision::{DevicePrecision, Double, Single};
pub use vector::DeviceVector;
