//! `qdsl check`: every kernel variant of the catalog that the device path supports, run
//! on the GPU and compared with the CPU reference (the generated `apply_cpu`) on random
//! fields (seeded) and on real configurations from tests/data; then the even-odd
//! operators. A table of relative errors ‖gpu − cpu‖/‖cpu‖ against each format's bound.
//!
//! | module | holds |
//! |---|---|
//! | [`report`] | rows, bounds, relative errors, the table |
//! | [`block_blas`] | the tensor-core block inner products' rows (each mode, 16/32/64 vectors) |
//! | [`coarse`] | the device coarse construction's rows (Y_c, X_c, X⁻¹Y per tile mode; fixed16 bitwise) |
//! | [`dense`] | the dense-link kernels' rows (the coarse hop on random fields) |
//! | [`mobius`] | the `fused5d!` chains and the device even-odd Möbius operator |
//! | [`reference`](mod@reference) | the CPU reference of a catalog kernel by name |
//! | [`run`] | the GPU runs |
//! | [`open_boundary`] | the open- and SF-boundary operator rows (openQCD's file) |
//! | [`smear`] | the link-smearing rows (asqtad fat and long, fat7) |

pub mod block_blas;
pub mod coarse;
pub mod dense;
pub mod mobius;
pub mod open_boundary;
pub mod reference;
pub mod report;
pub mod run;
pub mod smear;

pub use report::{bound, relative_error, render, CheckRow, Outcome};
pub use run::{run_check, CheckOptions};
