//! qdsl: a kernel DSL for lattice QCD. This umbrella crate re-exports the workspace's
//! crates; the integration tests in `tests/` and the applications in `examples/` use it.

pub use qdsl_core as core;
pub use qdsl_kernels as kernels;
pub use qdsl_macros as macros;
pub use qdsl_runtime as runtime;
