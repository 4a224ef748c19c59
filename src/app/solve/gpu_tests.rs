//! GPU tests of `qdsl solve` for clover and twisted mass: ignored
//! where there is no GPU. Run them on the GPU machine:
//! `cargo test --release -p qdsl --lib app::solve::gpu_tests`.
//!
//! The references are independent of the device code: the residual ‖b − M̂ x‖/‖b‖ of the
//! downloaded solution recomputed on the host with the CPU [`qdsl_runtime::operator::EvenOddClover`]
//! in f64 (the report's `recomputed_residual`), and the CPU solve's solution.

use super::*;
use qdsl_core::io::{read_gauge, ReadOptions};
use std::path::Path;

use super::test_support::{check_solve, context};

/// MILC's real 4⁴ configuration.
fn l4444() -> GaugeField<f64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/milc/lat.sample.l4444");
    read_gauge(&path, &ReadOptions::default()).unwrap().field
}

/// κ = 0.12, a Gaussian source, tolerance 1e-10.
fn config(action: Action, csw: f64, mu: Option<f64>, precision: Precision) -> SolveConfig {
    SolveConfig {
        clover_trace: Default::default(),
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
        boundary: qdsl_core::dsl::variant::TimeBoundary::Antiperiodic.into(),
    }
}

/// Clover (c_sw = 1) with CGNR on the real 4⁴ configuration: f64, f64–f32, f64–fixed16
/// and f64–f16 reach a true residual of 1e-10 and the CPU solution.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn clover_cgnr_solves_reach_the_true_residual_in_every_precision() {
    let (ctx, _dir) = context();
    let gauge = l4444();
    // Every precision the GPU iterates in (the registry's rows with a device marker).
    for precision in Precision::ALL.into_iter().filter(|p| p.has_device()) {
        check_solve(&ctx, &gauge, &config(Action::Clover, 1.0, None, precision));
    }
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

/// Twisted clover (c_sw = 1, μ = 0.1) and plain twisted mass (c_sw = 0, μ = 0.2) with
/// CGNR in f64 and f64–fixed16, and twisted clover with BiCGStab in f64–f32, on the real
/// 4⁴ configuration: true residual 1e-10 and the CPU solution.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn twisted_mass_solves_reach_the_true_residual() {
    let (ctx, _dir) = context();
    let gauge = l4444();
    for (csw, mu) in [(1.0, 0.1), (0.0, 0.2)] {
        for precision in [Precision::F64, Precision::Fixed16] {
            let c = config(Action::TwistedMass, csw, Some(mu), precision);
            check_solve(&ctx, &gauge, &c);
        }
    }
    let c = SolveConfig {
        clover_trace: Default::default(),
        solver: SolverKind::BiCgStab,
        ..config(Action::TwistedMass, 1.0, Some(0.1), Precision::F32)
    };
    check_solve(&ctx, &gauge, &c);
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}

fn solver_config(action: Action, solver: SolverKind, precision: Precision) -> SolveConfig {
    SolveConfig {
        clover_trace: Default::default(),
        action,
        kappa: action.is_wilson_like().then_some(0.12),
        // m = 0.1: cond(A) ≈ 16/(4m²) = 400, so two solves to 1e-10 agree to 1e-7.
        mass: (!action.is_wilson_like()).then_some(0.1),
        u0: None,
        csw: None,
        mu: None,
        epsilon_naik: None,
        solver,
        precision,
        tolerance: 1e-10,
        max_iterations: 5000,
        source: Source::Gaussian { seed: 7 },
        boundary: qdsl_core::dsl::variant::TimeBoundary::Antiperiodic.into(),
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn wilson_solves_on_a_random_8_4_agree_with_the_cpu() {
    let (ctx, _dir) = context();
    let gauge = GaugeField::<f64>::random(Lattice::new([8; 4]).unwrap(), 11);
    for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
        for precision in [
            Precision::F64,
            Precision::F32,
            Precision::Fixed16,
            Precision::Fixed8,
        ] {
            check_solve(
                &ctx,
                &gauge,
                &solver_config(Action::Wilson, solver, precision),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn solves_on_the_milc_sample_agree_with_the_cpu() {
    let (ctx, _dir) = context();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/milc/lat.sample.l8");
    let gauge = read_gauge(&path, &ReadOptions::default()).unwrap().field;
    for precision in [Precision::F64, Precision::F32, Precision::Fixed16] {
        check_solve(
            &ctx,
            &gauge,
            &solver_config(Action::Wilson, SolverKind::BiCgStab, precision),
        );
        check_solve(
            &ctx,
            &gauge,
            &solver_config(Action::Staggered, SolverKind::Cg, precision),
        );
    }
    check_solve(
        &ctx,
        &gauge,
        &solver_config(Action::Wilson, SolverKind::Cgnr, Precision::F16),
    );
}

/// HISQ (the fat and long links of `hisq_links`) and Wilson-clover solve on the GPU and
/// agree with the CPU solve.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn hisq_and_clover_solve_on_the_gpu() {
    let (ctx, _dir) = context();
    let gauge = GaugeField::<f64>::random(Lattice::new([8; 4]).unwrap(), 13);
    check_solve(
        &ctx,
        &gauge,
        &solver_config(Action::Hisq, SolverKind::Cg, Precision::F32),
    );
    let clover = SolveConfig {
        clover_trace: Default::default(),
        csw: Some(1.0),
        ..solver_config(Action::Clover, SolverKind::BiCgStab, Precision::F64)
    };
    check_solve(&ctx, &gauge, &clover);
}

/// Open boundaries on openQCD's own open-boundary file (tests/data/openqcd): the
/// Wilson-clover solve with the file's parameters (κ = 0.135, c_sw = 1.978, c_F = 1.3)
/// and Wilson with c_F = 1.3, CGNR in f64 and f64–f32 and BiCGStab in f64–f32: true
/// residual 1e-10 and the CPU solution (the zero links travel in recon 18).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn open_boundary_solves_on_the_openqcd_file_match_the_cpu() {
    let (ctx, _dir) = context();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openqcd/gauge.bc_0.bin");
    let gauge = read_gauge(&path, &ReadOptions::default()).unwrap().field;
    let open = FermionBoundary::Open(qdsl_core::gauge::OpenBoundary::open(1.3));
    for (action, csw) in [(Action::Clover, Some(1.978)), (Action::Wilson, None)] {
        for (solver, precision) in [
            (SolverKind::Cgnr, Precision::F64),
            (SolverKind::Cgnr, Precision::F32),
            (SolverKind::BiCgStab, Precision::F32),
        ] {
            let c = SolveConfig {
                clover_trace: Default::default(),
                kappa: Some(0.135),
                csw,
                solver,
                boundary: open,
                ..config(action, 0.0, None, precision)
            };
            check_solve(&ctx, &gauge, &c);
        }
    }
    assert!(ctx.error().is_none(), "{:?}", ctx.error());
}
