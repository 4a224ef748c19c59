//! Test-only access to the GPU: every GPU test starts from [`gpu`] or [`context`] and
//! skips (returns early, with one "skipping (no GPU)" line) where there is no device.

use crate::app::solve::{solve_on, Precision, SolveBackend, SolveConfig, SolveReport};
use crate::backend::CudaBackend;
use crate::device::Gpu;
use crate::jit::Jit;
use crate::solver::device::DeviceContext;
use crate::tune::Tuner;
use qdsl_core::field::{ColourSpinorField, GaugeField};
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
