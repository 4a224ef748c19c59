//! CPU tests of `qdsl solve`: parameter checks, backend choice, solves on small lattices.

use super::*;
use qdsl_runtime::backend::BackendChoice;

fn config(action: Action) -> SolveConfig {
    SolveConfig {
        clover_trace: Default::default(),
        action,
        kappa: None,
        mass: None,
        u0: None,
        csw: None,
        mu: None,
        epsilon_naik: None,
        solver: SolverKind::Cg,
        precision: Precision::F64,
        tolerance: 1e-10,
        max_iterations: 100,
        source: Source::Point,
        boundary: qdsl_core::dsl::variant::TimeBoundary::Antiperiodic.into(),
    }
}

fn check(c: &SolveConfig) -> Result<Parameters, SolveError> {
    check_parameters(c)
}

#[test]
fn parameters_are_checked_against_the_action() {
    let mut c = config(Action::Wilson);
    assert!(matches!(
        check(&c),
        Err(SolveError::MissingParameter {
            flag: "--kappa K",
            ..
        })
    ));
    c.kappa = Some(0.0);
    assert!(matches!(
        check(&c),
        Err(SolveError::InvalidKappa { found }) if found == 0.0
    ));
    c.kappa = Some(0.12);
    assert!(matches!(check(&c), Err(SolveError::NotHermitian { .. })));
    c.solver = SolverKind::BiCgStab;
    assert!(check(&c).is_ok());
    c.mass = Some(0.1);
    assert!(matches!(
        check(&c),
        Err(SolveError::UnusedParameter { flag: "--mass", .. })
    ));
    let mut c = config(Action::Asqtad);
    c.mass = Some(-0.01);
    assert!(matches!(check(&c), Err(SolveError::InvalidMass { .. })));
    c.mass = Some(0.01);
    c.u0 = Some(f64::NAN);
    assert!(matches!(check(&c), Err(SolveError::InvalidU0 { .. })));
    let mut c = config(Action::Staggered);
    c.mass = Some(0.01);
    c.u0 = Some(0.9);
    assert!(matches!(
        check(&c),
        Err(SolveError::UnusedParameter { flag: "--u0", .. })
    ));
}

/// Unit links: P = 1, so the default u0 = P^{1/4} = 1.
#[test]
fn default_tadpole_factor_is_the_fourth_root_of_the_plaquette() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([2; 4]).unwrap());
    assert_eq!(tadpole_factor(&gauge, None), 1.0);
    assert_eq!(tadpole_factor(&gauge, Some(0.8)), 0.8);
}

/// Free field, point source, naive staggered, pure f64: A = 4m² − D_eo D_oe is
/// Hermitian positive definite, CG converges, and the recomputed residual
/// meets the tolerance.
#[test]
fn free_field_staggered_solve_converges() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([4; 4]).unwrap());
    let mut c = config(Action::Staggered);
    c.mass = Some(0.1);
    let report = solve(&gauge, &c, None).unwrap();
    assert!(
        report.result.is_converged(),
        "{:?}",
        report.result.convergence
    );
    assert!(report.recomputed_residual <= 1e-10);
    assert_eq!(report.backend, "CPU");
}

/// `cpu` never touches the GPU; `auto` always yields a backend, with exactly one
/// notice line when it falls back; `cuda` without a GPU is an error naming the cause.
#[test]
fn backend_selection_falls_back_with_one_line_or_fails_clearly() {
    let mut lines = Vec::new();
    let cpu = SolveBackend::select(BackendChoice::Cpu, &mut |l| lines.push(l.to_string()));
    assert_eq!(cpu.unwrap().describe(), "CPU");
    assert!(lines.is_empty());
    let auto =
        SolveBackend::select(BackendChoice::Auto, &mut |l| lines.push(l.to_string())).unwrap();
    match &auto {
        SolveBackend::Cpu => {
            assert_eq!(lines.len(), 1);
            assert!(
                lines[0].ends_with("; using the CPU backend"),
                "{}",
                lines[0]
            );
            let e = SolveBackend::select(BackendChoice::Cuda, &mut |_| {}).unwrap_err();
            assert!(e
                .to_string()
                .starts_with("the CUDA backend is not available: "));
        }
        SolveBackend::Cuda(_) => {
            assert!(lines.is_empty());
            assert!(auto.describe().starts_with("cuda ("), "{}", auto.describe());
        }
    }
}

/// The CPU emulation of the narrow formats converges to 1e-10 on a random 4⁴
/// Wilson system through reliable updates (fixed16: u = 1.5e-5, fixed8: u = 3.9e-3,
/// f16: u = 4.9e-4), the residual recomputed in f64.
#[test]
fn narrow_precisions_converge_through_reliable_updates() {
    let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 3);
    for precision in [Precision::Fixed16, Precision::Fixed8, Precision::F16] {
        let mut c = config(Action::Wilson);
        (c.kappa, c.solver, c.precision) = (Some(0.12), SolverKind::BiCgStab, precision);
        c.source = Source::Gaussian { seed: 2 };
        let report = solve(&gauge, &c, None).unwrap();
        assert!(
            report.result.is_converged(),
            "{precision:?}: {:?}",
            report.result.convergence
        );
        assert!(report.result.reliable_updates >= 1, "{precision:?}");
        assert!(report.recomputed_residual <= 1e-10, "{precision:?}");
    }
}

#[test]
fn names_parse() {
    assert_eq!("Asqtad".parse::<Action>(), Ok(Action::Asqtad));
    assert_eq!("Twisted-Mass".parse::<Action>(), Ok(Action::TwistedMass));
    for (a, name) in Action::ALL.into_iter().zip(Action::NAMES) {
        assert_eq!(name.parse::<Action>(), Ok(a));
    }
    assert!("tm".parse::<Action>().unwrap_err().contains("hisq"));
    // The solve's precisions: those GPUs iterate in (bf16 is emulated on the host only).
    assert_eq!(Precision::parse_device("f32"), Ok(Precision::F32));
    assert_eq!(Precision::parse_device("FIXED16"), Ok(Precision::Fixed16));
    assert!(Precision::parse_device("bf16")
        .unwrap_err()
        .contains("fixed16"));
}

/// `action` with the Wilson-like defaults κ = 0.12, BiCGStab.
fn wilson_like(action: Action) -> SolveConfig {
    let mut c = config(action);
    (c.kappa, c.solver) = (Some(0.12), SolverKind::BiCgStab);
    c
}

/// The new actions' flags: c_sw ≥ 0 required for clover, μ required for twisted
/// mass, ε only for HISQ, and neither on Wilson; u0 is not a HISQ parameter; CG is
/// refused on the non-Hermitian clover M̂.
#[test]
fn clover_twisted_mass_and_hisq_parameters_are_checked() {
    let err = |c: &SolveConfig| check_parameters(c).err().map(|e| e.to_string());
    let mut clover = wilson_like(Action::Clover);
    assert_eq!(
        err(&clover).as_deref(),
        Some("the clover action needs --csw C")
    );
    clover.csw = Some(-1.0);
    assert!(err(&clover)
        .unwrap()
        .starts_with("--csw must be a finite number ≥ 0"));
    clover.csw = Some(1.0);
    assert!(err(&clover).is_none());
    clover.mu = Some(0.1);
    assert!(err(&clover)
        .unwrap()
        .starts_with("--mu does not apply to the clover"));
    let mut tm = wilson_like(Action::TwistedMass);
    assert_eq!(
        err(&tm).as_deref(),
        Some("the twisted-mass action needs --mu MU")
    );
    tm.mu = Some(f64::INFINITY);
    assert!(err(&tm)
        .unwrap()
        .starts_with("--mu must be a finite number"));
    tm.mu = Some(0.05);
    assert!(err(&tm).is_none());
    tm.solver = SolverKind::Cg;
    assert!(err(&tm).unwrap().contains("even-odd twisted-mass M̂ is not"));
    let mut wilson = wilson_like(Action::Wilson);
    wilson.mu = Some(0.05);
    assert!(err(&wilson)
        .unwrap()
        .starts_with("--mu does not apply to the wilson"));
    let mut hisq = config(Action::Hisq);
    hisq.mass = Some(0.05);
    hisq.epsilon_naik = Some(f64::NAN);
    assert!(err(&hisq)
        .unwrap()
        .starts_with("--epsilon-naik must be a finite"));
    hisq.epsilon_naik = Some(-0.1);
    assert!(err(&hisq).is_none());
    hisq.u0 = Some(0.9);
    assert!(err(&hisq)
        .unwrap()
        .starts_with("--u0 does not apply to the hisq"));
    // HISQ's u0 is 1 by construction: --u0 1 is accepted.
    hisq.u0 = Some(1.0);
    assert!(err(&hisq).is_none());
    hisq.u0 = Some(0.9);
    let asqtad = SolveConfig {
        clover_trace: Default::default(),
        action: Action::Asqtad,
        u0: None,
        epsilon_naik: Some(0.0),
        ..hisq
    };
    assert!(err(&asqtad)
        .unwrap()
        .starts_with("--epsilon-naik does not apply"));
}

/// ‖s·a − b‖/‖b‖ of two host fields.
fn scaled_distance(a: &ColourSpinorField<f64>, s: f64, b: &ColourSpinorField<f64>) -> f64 {
    let mut d = b.clone();
    d.axpy(qdsl_core::Complex::new(-s, 0.0), a).unwrap();
    (d.norm_sqr() / b.norm_sqr()).sqrt()
}

/// ‖a − b‖/‖b‖.
fn distance(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    scaled_distance(a, 1.0, b)
}

/// At c_sw = μ = 0 the clover term is (m + 4)·1, so the clover M̂ is (m + 4) times
/// the Wilson M̂ (m = 1/(2κ) − 4): on a random 4⁴ gauge field the same source gives
/// the Wilson solution divided by (m + 4), in the same number of BiCGStab and CGNR
/// iterations (Krylov methods are invariant under scaling the operator).
#[test]
fn clover_without_clover_term_is_scaled_wilson() {
    let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 5);
    for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
        let mut c = wilson_like(Action::Wilson);
        (c.solver, c.source) = (solver, Source::Gaussian { seed: 4 });
        let clover = SolveConfig {
            clover_trace: Default::default(),
            action: Action::Clover,
            csw: Some(0.0),
            ..c.clone()
        };
        let w = solve(&gauge, &c, None).unwrap();
        let cl = solve_on(&SolveBackend::Cpu, &gauge, &clover, None).unwrap();
        assert!(w.result.is_converged() && cl.result.is_converged());
        assert!(cl.recomputed_residual <= 1e-10);
        assert_eq!(cl.result.iterations, w.result.iterations, "{solver}");
        let scale = 0.5 / 0.12; // m + 4 = 1/(2κ)
        assert!(
            scaled_distance(&cl.solution, scale, &w.solution) < 1e-8,
            "{solver}"
        );
        assert!(
            cl.parameters.contains("4.166667 × the Wilson"),
            "{}",
            cl.parameters
        );
    }
}

/// The twisted-mass M̂ with μ > 0 (with and without a clover term) converges with
/// BiCGStab and CGNR, and the twist changes the solution.
#[test]
fn twisted_mass_converges_with_bicgstab_and_cgnr() {
    let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 6);
    let mut c = wilson_like(Action::TwistedMass);
    c.source = Source::Gaussian { seed: 8 };
    let mut solutions = Vec::new();
    for (csw, mu, solver) in [
        (None, 0.0, SolverKind::BiCgStab),
        (None, 0.1, SolverKind::BiCgStab),
        (None, 0.1, SolverKind::Cgnr),
        (Some(1.0), 0.1, SolverKind::BiCgStab),
    ] {
        (c.csw, c.mu, c.solver) = (csw, Some(mu), solver);
        let r = solve_on(&SolveBackend::Cpu, &gauge, &c, None).unwrap();
        assert!(r.result.is_converged(), "{csw:?} {mu} {solver}");
        assert!(r.recomputed_residual <= 1e-10, "{csw:?} {mu} {solver}");
        solutions.push(r.solution);
    }
    assert!(distance(&solutions[1], &solutions[0]) > 1e-3);
    assert!(distance(&solutions[2], &solutions[1]) < 1e-8);
    assert!(distance(&solutions[3], &solutions[1]) > 1e-3);
}

/// HISQ at ε = 0 on unit links has fat 9/8 and long −1/24 (times the phases), the
/// asqtad links at u0 = 1: the same solution. On a random gauge field the
/// reunitarised smearing differs from asqtad's and so do the solutions.
#[test]
fn hisq_matches_asqtad_on_the_free_field_only() {
    let lattice = Lattice::new([4; 4]).unwrap();
    let mut c = config(Action::Asqtad);
    (c.mass, c.u0, c.source) = (Some(0.1), Some(1.0), Source::Gaussian { seed: 3 });
    c.max_iterations = 2000;
    let hisq = SolveConfig {
        clover_trace: Default::default(),
        action: Action::Hisq,
        u0: None,
        ..c.clone()
    };
    let mut distances = Vec::new();
    for gauge in [GaugeField::unit(lattice), GaugeField::random(lattice, 9)] {
        let a = solve(&gauge, &c, None).unwrap();
        let h = solve_on(&SolveBackend::Cpu, &gauge, &hisq, None).unwrap();
        assert!(a.result.is_converged() && h.result.is_converged());
        assert!(h.recomputed_residual <= 1e-10);
        assert_eq!(h.action, Action::Hisq);
        distances.push(distance(&h.solution, &a.solution));
    }
    assert!(distances[0] < 1e-9, "{distances:?}");
    assert!(distances[1] > 1e-2, "{distances:?}");
}

/// `--boundary`, `--cf` and `--cf-prime` name one boundary: the wrapping ones without
/// coefficients, open with c_F at both ends (default 1), SF with c_F' defaulting to c_F.
#[test]
fn boundary_flags_name_one_boundary() {
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::gauge::OpenBoundary;
    let b = |name, cf, cfp| FermionBoundary::from_flags(name, cf, cfp);
    assert_eq!(
        b("Antiperiodic", None, None),
        Ok(FermionBoundary::Wrap(TimeBoundary::Antiperiodic))
    );
    assert_eq!(
        b("periodic", None, None),
        Ok(FermionBoundary::Wrap(TimeBoundary::Periodic))
    );
    assert_eq!(
        b("open", None, None),
        Ok(FermionBoundary::Open(OpenBoundary::open(1.0)))
    );
    assert_eq!(
        b("open", Some(1.3), None),
        Ok(FermionBoundary::Open(OpenBoundary::open(1.3)))
    );
    assert_eq!(
        b("SF", Some(1.3), None),
        Ok(FermionBoundary::Open(OpenBoundary::sf(1.3, 1.3)))
    );
    assert_eq!(
        b("sf", Some(1.3), Some(0.9)),
        Ok(FermionBoundary::Open(OpenBoundary::sf(1.3, 0.9)))
    );
    assert!(b("antiperiodic", Some(1.3), None)
        .unwrap_err()
        .contains("--cf"));
    assert!(b("open", None, Some(1.0))
        .unwrap_err()
        .contains("--cf-prime"));
    assert!(b("dirichlet", None, None)
        .unwrap_err()
        .contains("dirichlet"));
}
