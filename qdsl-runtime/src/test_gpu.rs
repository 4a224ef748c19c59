//! Test-only access to the GPU: every GPU test starts from [`gpu`] or [`context`] and
//! skips (returns early, with one "skipping (no GPU)" line) where there is no device.

use crate::backend::CudaBackend;
use crate::device::Gpu;
use crate::jit::Jit;
use crate::solver::device::DeviceContext;
use crate::tune::Tuner;
use std::sync::Arc;

/// The first GPU with a JIT over a fresh temporary PTX cache (kept alive by the returned
/// directory), or `None` with a message where no driver or device is present.
pub fn gpu() -> Option<(Gpu, tempfile::TempDir)> {
    let backend = match CudaBackend::new(0) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipping (no GPU): {e}");
            return None;
        }
    };
    let dir = tempfile::tempdir().ok()?;
    let jit = Jit::new(dir.path(), None).ok()?;
    Some((Gpu::new(backend, jit), dir))
}

/// A solver context on [`gpu`] with tuning off (default launches, no progress bar).
pub fn context() -> Option<(Arc<DeviceContext>, tempfile::TempDir)> {
    let (gpu, dir) = gpu()?;
    let tuner = Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
        .with_enabled(false)
        .with_progress(false);
    let ctx = DeviceContext::new(gpu, tuner).expect("a context on a present GPU");
    Some((ctx, dir))
}
