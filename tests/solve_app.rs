//! `qdsl solve`'s logic (qdsl::app::solve) checked from outside: the solution it
//! returns for the Wilson M̂ on MILC's 8⁴ sample is re-checked with the hand-written
//! textbook operator of `reference_operators`, which shares no code with the generated
//! kernels the solve used. (The command-line tests are in qdsl-runtime/tests/solve_cli.rs.)

mod common;
mod reference_operators;

use qdsl::app::solve::{solve, Action, Precision, SolveConfig, Source};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::BoundaryConditions;
use qdsl_runtime::solver::{LinearOperator, SolverField, SolverKind};
use reference_operators::{WilsonEvenOdd, WilsonOperator};

/// ‖b − M̂_ref x‖/‖b‖ ≤ tol (up to f64 round-off in the reference) for the f64–f32
/// mixed-precision BiCGStab and CGNR solutions, M̂_ref = 1 − κ² H_eo H_oe in plain loops
/// with the antiperiodic time boundary.
#[test]
fn solutions_satisfy_the_reference_even_odd_wilson_equation() {
    let path = common::data("milc/lat.sample.l8");
    let gauge = read_gauge(&path, &ReadOptions::default()).unwrap().field;
    let reference = WilsonEvenOdd(WilsonOperator {
        gauge: gauge.clone(),
        kappa: 0.12,
        boundary: BoundaryConditions::antiperiodic_time(),
    });
    for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
        let config = SolveConfig {
            clover_trace: Default::default(),
            action: Action::Wilson,
            kappa: Some(0.12),
            mass: None,
            u0: None,
            csw: None,
            mu: None,
            epsilon_naik: None,
            solver,
            precision: Precision::F32,
            tolerance: 1e-10,
            max_iterations: 1000,
            source: Source::Gaussian { seed: 7 },
            boundary: qdsl_core::dsl::variant::TimeBoundary::Antiperiodic.into(),
        };
        let report = solve(&gauge, &config, None).unwrap();
        assert!(
            report.result.is_converged(),
            "{solver}: {:?}",
            report.result
        );
        let mut r = report.source.zeros_like();
        reference.apply(&mut r, &report.solution).unwrap();
        r.xpay(&report.source, num_complex::Complex::new(-1.0, 0.0))
            .unwrap();
        let residual = (r.norm_sqr() / report.source.norm_sqr()).sqrt();
        assert!(
            residual <= 1.01e-10,
            "{solver}: reference residual {residual:e}"
        );
        assert!(
            (residual - report.recomputed_residual).abs() <= 1e-3 * residual,
            "{solver}: reference {residual:e} vs reported {:e}",
            report.recomputed_residual
        );
    }
}
