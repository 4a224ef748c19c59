//! Test-only access to NVRTC and the GPU.
//!
//! Tests that compile with NVRTC start from [`jit`] and carry
//! `#[cfg_attr(not(qdsl_nvrtc), ignore = ...)]`: the build script sets `qdsl_nvrtc` where
//! it finds the toolchain, elsewhere they are reported as ignored (never as passed).
//! Tests that need a GPU start from [`gpu`] or [`context`] and are
//! `#[ignore = "needs a CUDA GPU: ..."]`: `cargo test` reports them as ignored; on a GPU
//! machine run the test binaries with `--include-ignored`. Either helper panics,
//! saying why, where what it needs is missing, so a test that runs never passes by
//! skipping its work.

use crate::app::solve::{solve_on, Precision, SolveBackend, SolveConfig, SolveReport};
use crate::backend::CudaBackend;
use crate::device::Gpu;
use crate::jit::Jit;
use crate::solver::device::DeviceContext;
use crate::tune::Tuner;
use qdsl_core::field::{ColourSpinorField, GaugeField};
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

/// The GPU solve converges, its residual recomputed by the CPU operator meets the
/// tolerance, mixed precision does reliable updates, and the solution equals the CPU
/// solve's to the tolerance times a condition-number margin.
pub fn check_solve(
    ctx: &Arc<DeviceContext>,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
) -> SolveReport {
    let what = format!("{} {} {:?}", config.action, config.solver, config.precision);
    let gpu = solve_on(&SolveBackend::Cuda(Arc::clone(ctx)), gauge, config, None)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(gpu.backend.starts_with("cuda ("), "{}", gpu.backend);
    assert!(
        gpu.result.is_converged(),
        "{what}: {:?}",
        gpu.result.convergence
    );
    assert!(
        gpu.recomputed_residual <= config.tolerance,
        "{what}: {}",
        gpu.recomputed_residual
    );
    if config.precision.is_mixed() {
        assert!(
            gpu.result.reliable_updates > 0,
            "{what}: no reliable update"
        );
    }
    let cpu = solve_on(
        &SolveBackend::Cpu,
        gauge,
        &SolveConfig {
            precision: Precision::F64,
            ..config.clone()
        },
        None,
    )
    .unwrap();
    let rel = relative_distance(&gpu.solution, &cpu.solution);
    assert!(
        rel <= 1e3 * config.tolerance,
        "{what}: GPU and CPU solutions differ by {rel:e}"
    );
    gpu
}
