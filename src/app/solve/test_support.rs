//! The check every GPU solve test makes: converged, the residual recomputed on the host
//! meets the tolerance, and the solution equals the CPU solve's.

use super::{solve_on, Precision, SolveBackend, SolveConfig, SolveReport};
use qdsl_core::field::GaugeField;
use qdsl_runtime::solver::device::DeviceContext;
use qdsl_runtime::testing::relative_distance;
use std::sync::Arc;

pub use qdsl_runtime::testing::context;

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
            clover_trace: Default::default(),
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
