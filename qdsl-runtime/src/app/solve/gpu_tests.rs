//! GPU tests of `qdsl solve` for clover and twisted mass: they skip (with a message)
//! where there is no GPU. Run them on the GPU machine:
//! `cargo test --release -p qdsl-runtime --lib app::solve::gpu_tests`.
//!
//! The references are independent of the device code: the residual ‖b − M̂ x‖/‖b‖ of the
//! downloaded solution recomputed on the host with the CPU [`crate::operator::EvenOddClover`]
//! in f64 (the report's `recomputed_residual`), and the CPU solve's solution.

use super::*;
use crate::solver::device::DeviceContext;
use qdsl_core::io::{read_gauge, ReadOptions};
use std::path::Path;
use std::sync::Arc;

use crate::test_gpu::context;

/// MILC's real 4⁴ configuration.
fn l4444() -> GaugeField<f64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l4444");
    read_gauge(&path, &ReadOptions::default()).unwrap().field
}

/// ‖a − b‖/‖b‖.
fn rel_distance(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    let (mut d, mut n) = (0.0, 0.0);
    for (x, y) in a.data().iter().zip(b.data()) {
        d += (x - y).norm_sqr();
        n += y.norm_sqr();
    }
    (d / n).sqrt()
}

/// κ = 0.12, a Gaussian source, tolerance 1e-10.
fn config(action: Action, csw: f64, mu: Option<f64>, precision: Precision) -> SolveConfig {
    SolveConfig {
        action,
        kappa: Some(0.12),
        mass: None,
        u0: None,
        csw: Some(csw),
        mu,
        epsilon_naik: None,
        solver: SolverKind::Cgnr,
        precision,
        tolerance: 1e-10,
        max_iterations: 5000,
        source: Source::Gaussian { seed: 5 },
    }
}

/// Solves `config` on the GPU and asserts: it ran there, converged, the residual
/// recomputed on the host with the CPU f64 operator is ≤ the tolerance, a mixed solve
/// made reliable updates, and the solution is the CPU f64 solve's to 1e3 × tolerance.
fn check_solve(ctx: &Arc<DeviceContext>, gauge: &GaugeField<f64>, config: &SolveConfig) {
    let what = format!("{} {} {:?}", config.action, config.solver, config.precision);
    let gpu = solve_on(&SolveBackend::Cuda(Arc::clone(ctx)), gauge, config, None)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(gpu.backend.starts_with("cuda ("), "{what}: {}", gpu.backend);
    assert!(
        gpu.result.is_converged(),
        "{what}: {:?}",
        gpu.result.convergence
    );
    assert!(
        gpu.recomputed_residual <= config.tolerance,
        "{what}: true residual {:e}",
        gpu.recomputed_residual
    );
    if config.precision.is_mixed() {
        assert!(
            gpu.result.reliable_updates > 0,
            "{what}: no reliable update"
        );
    }
    let f64_config = SolveConfig {
        precision: Precision::F64,
        ..config.clone()
    };
    let cpu = solve_on(&SolveBackend::Cpu, gauge, &f64_config, None).unwrap();
    let rel = rel_distance(&gpu.solution, &cpu.solution);
    assert!(
        rel <= 1e3 * config.tolerance,
        "{what}: GPU and CPU solutions differ by {rel:e}"
    );
}

/// Clover (c_sw = 1) with CGNR on the real 4⁴ configuration: f64, f64–f32, f64–fixed16
/// and f64–f16 reach a true residual of 1e-10 and the CPU solution.
#[test]
fn clover_cgnr_solves_reach_the_true_residual_in_every_precision() {
    let Some((ctx, _dir)) = context() else { return };
    let gauge = l4444();
    for precision in Precision::ALL {
        check_solve(&ctx, &gauge, &config(Action::Clover, 1.0, None, precision));
    }
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// Twisted clover (c_sw = 1, μ = 0.1) and plain twisted mass (c_sw = 0, μ = 0.2) with
/// CGNR in f64 and f64–fixed16, and twisted clover with BiCGStab in f64–f32, on the real
/// 4⁴ configuration: true residual 1e-10 and the CPU solution.
#[test]
fn twisted_mass_solves_reach_the_true_residual() {
    let Some((ctx, _dir)) = context() else { return };
    let gauge = l4444();
    for (csw, mu) in [(1.0, 0.1), (0.0, 0.2)] {
        for precision in [Precision::F64, Precision::Fixed16] {
            let c = config(Action::TwistedMass, csw, Some(mu), precision);
            check_solve(&ctx, &gauge, &c);
        }
    }
    let c = SolveConfig {
        solver: SolverKind::BiCgStab,
        ..config(Action::TwistedMass, 1.0, Some(0.1), Precision::F32)
    };
    check_solve(&ctx, &gauge, &c);
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}
