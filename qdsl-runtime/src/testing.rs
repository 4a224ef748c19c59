//! Test support: access to NVRTC and the GPU for this crate's tests and, with the
//! `testing` feature, for the tests of crates above it (the `qdsl` program's).
//!
//! Tests that compile with NVRTC start from [`jit`] and carry
//! `#[cfg_attr(not(qdsl_nvrtc), ignore = ...)]`: the build script sets `qdsl_nvrtc` where
//! it finds the toolchain, elsewhere they are reported as ignored (never as passed).
//! Tests that need a GPU start from [`gpu`] or [`context`] and are
//! `#[ignore = "needs a CUDA GPU: ..."]`: `cargo test` reports them as ignored; on a GPU
//! machine run the test binaries with `--include-ignored`. Either helper panics,
//! saying why, where what it needs is missing, so a test that runs never passes by
//! skipping its work.

use crate::backend::CudaBackend;
use crate::device::Gpu;
use crate::jit::Jit;
use crate::solver::device::DeviceContext;
use crate::tune::Tuner;
use qdsl_core::field::ColourSpinorField;
use std::path::Path;
use std::sync::Arc;

/// A JIT over the PTX cache directory `root`; panics with the reason where NVRTC cannot
/// be loaded.
pub fn jit(root: &Path) -> Jit {
    Jit::new(root, None).unwrap_or_else(|e| panic!("NVRTC: {e}"))
}

/// The first GPU with a JIT over a fresh temporary PTX cache (kept alive by the returned
/// directory); panics with the reason where no driver, device or NVRTC is present.
pub fn gpu() -> (Gpu, tempfile::TempDir) {
    let backend = CudaBackend::new(0).unwrap_or_else(|e| panic!("no GPU: {e}"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let jit = jit(dir.path());
    (Gpu::new(backend, jit), dir)
}

/// A solver context on [`gpu`] with tuning off (default launches, no progress bar).
pub fn context() -> (Arc<DeviceContext>, tempfile::TempDir) {
    let (gpu, dir) = gpu();
    let tuner = Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
        .with_enabled(false)
        .with_progress(false);
    let ctx = DeviceContext::new(gpu, tuner).expect("a context on a present GPU");
    (ctx, dir)
}

/// ‖a − b‖/‖b‖ of two host fields of one layout.
pub fn relative_distance(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    let (mut d, mut n) = (0.0, 0.0);
    for (x, y) in a.data().iter().zip(b.data()) {
        d += (x - y).norm_sqr();
        n += y.norm_sqr();
    }
    (d / n).sqrt()
}
