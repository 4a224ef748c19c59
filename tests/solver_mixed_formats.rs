//! Mixed-precision solves on the real configuration lat.sample.l8: CGNR on the even-odd
//! Wilson M̂ = 1 − κ² H_eo H_oe of qdsl's generated kernels, the solution and the true
//! residual in f64, the iteration stored in each low format, reliable updates. Every
//! result is checked by recomputing ‖b − M̂ x‖/‖b‖ with the textbook operator of
//! tests/reference_operators (plain loops, not the generated kernels).

mod common;
mod reference_operators;

use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{BoundaryConditions, Parity};
use qdsl_runtime::operator::cpu::EvenOddWilson;
use qdsl_runtime::solver::{
    bicgstab, cgnr, BFloat16, Convergence, ConvertFrom, Fixed16, Fixed8, Half, LinearOperator,
    Packed20, Packed30, QuantizedField, QuantizedOperator, SolveResult, SolverError, SolverField,
    SolverOptions, SpinorStorage, Tf32,
};
use reference_operators::{to_c64, WilsonOperator};
use std::sync::OnceLock;

type F64 = ColourSpinorField<f64>;

const KAPPA: f64 = 0.124;
const TOLERANCE: f64 = 1e-10;

fn gauge() -> &'static GaugeField<f64> {
    static GAUGE: OnceLock<GaugeField<f64>> = OnceLock::new();
    GAUGE.get_or_init(|| {
        read_gauge(common::data("milc/lat.sample.l8"), &ReadOptions::default())
            .unwrap()
            .field
    })
}

fn source() -> F64 {
    let layout = SpinorLayout::wilson(*gauge().lattice(), SiteSubset::Single(Parity::Even));
    F64::gaussian(layout, 11)
}

fn operator(kappa: f64) -> EvenOddWilson<f64> {
    EvenOddWilson::new(
        gauge().clone(),
        kappa,
        Parity::Even,
        TimeBoundary::Antiperiodic,
    )
}

/// ‖b − M̂ x‖/‖b‖ with the textbook even-odd operator.
fn reference_residual(kappa: f64, x: &F64, b: &F64) -> f64 {
    let reference = reference_operators::WilsonEvenOdd(WilsonOperator {
        gauge: gauge().clone(),
        kappa,
        boundary: BoundaryConditions::antiperiodic_time(),
    });
    let mut mx = x.zeros_like();
    reference.apply(&mut mx, x).unwrap();
    let (mx, b) = (to_c64(&mx), to_c64(b));
    let r2: f64 = mx.iter().zip(&b).map(|(m, b)| (b - m).norm_sqr()).sum();
    let b2: f64 = b.iter().map(|b| b.norm_sqr()).sum();
    (r2 / b2).sqrt()
}

fn options() -> SolverOptions {
    SolverOptions {
        polak_ribiere: true,
        max_iterations: 2000,
        ..SolverOptions::with_tolerance(TOLERANCE)
    }
}

/// CGNR with the iteration in L; returns the result and x.
fn cgnr_in<L, OL>(low: &OL, opts: &SolverOptions) -> Result<(SolveResult, F64), SolverError>
where
    L: SolverField + ConvertFrom<F64>,
    F64: ConvertFrom<L>,
    OL: LinearOperator<L>,
{
    let b = source();
    let mut x = b.zeros_like();
    let result = cgnr::<F64, L, _, _>(&operator(KAPPA), low, &b, &mut x, opts)?;
    Ok((result, x))
}

fn cgnr_stored<S: SpinorStorage>(opts: &SolverOptions) -> Result<(SolveResult, F64), SolverError> {
    cgnr_in::<QuantizedField<S>, _>(&QuantizedOperator(operator(KAPPA)), opts)
}

/// Asserts a converged mixed solve: true residual ≤ 1e−10 as reported and as recomputed
/// with the textbook operator, with at least one reliable update.
fn assert_reaches_tolerance(name: &str, (result, x): (SolveResult, F64)) {
    assert!(result.is_converged(), "{name}: {}", result.convergence);
    assert!(
        result.true_residual <= TOLERANCE,
        "{name}: {}",
        result.true_residual
    );
    assert!(result.reliable_updates > 0, "{name}: no reliable update");
    let recomputed = reference_residual(KAPPA, &x, &source());
    assert!(
        recomputed <= 1.01 * TOLERANCE,
        "{name}: recomputed {recomputed:e}"
    );
}

/// f32 (native), TF32, bf16, f16, fixed16, packed20, packed30 and even fixed8 (emulated
/// storage) all reach a 1e−10 true residual on lat.sample.l8 at κ = 0.124 through
/// reliable updates: each cycle needs only a drop by δ = 0.1, which a Krylov space
/// stored with relative error u ≤ 2⁻⁸ still delivers. No format of the study fails here;
/// what cannot reach 1e−10 is any 16-bit format *without* reliable updates (next test).
#[test]
fn every_low_format_reaches_the_tolerance_with_reliable_updates() {
    let opts = options();
    let single = EvenOddWilson::<f32>::new(
        gauge().cast(),
        KAPPA,
        Parity::Even,
        TimeBoundary::Antiperiodic,
    );
    assert_reaches_tolerance(
        "f32",
        cgnr_in::<ColourSpinorField<f32>, _>(&single, &opts).unwrap(),
    );
    assert_reaches_tolerance("tf32", cgnr_stored::<Tf32>(&opts).unwrap());
    assert_reaches_tolerance("bf16", cgnr_stored::<BFloat16>(&opts).unwrap());
    assert_reaches_tolerance("f16", cgnr_stored::<Half>(&opts).unwrap());
    assert_reaches_tolerance("fixed16", cgnr_stored::<Fixed16>(&opts).unwrap());
    assert_reaches_tolerance("packed20", cgnr_stored::<Packed20>(&opts).unwrap());
    assert_reaches_tolerance("packed30", cgnr_stored::<Packed30>(&opts).unwrap());
    assert_reaches_tolerance("fixed8", cgnr_stored::<Fixed8>(&opts).unwrap());
}

/// Without reliable updates (δ = 0) the solution is accumulated in the iteration
/// precision, so 1e−10 is out of reach of every 16-bit format (u ≥ 2⁻¹⁶): the solve is
/// refused up front with the floor and the reason, not run to a false success.
#[test]
fn sixteen_bit_formats_without_reliable_updates_are_refused() {
    let opts = SolverOptions {
        reliable_delta: 0.0,
        ..options()
    };
    for (name, outcome) in [
        ("bf16", cgnr_stored::<BFloat16>(&opts)),
        ("f16", cgnr_stored::<Half>(&opts)),
        ("fixed16", cgnr_stored::<Fixed16>(&opts)),
    ] {
        match outcome {
            Err(SolverError::UnreachableTolerance { floor, reason, .. }) => {
                assert!(floor > TOLERANCE, "{name}: floor {floor:e}");
                assert!(reason.contains("reliable updates"), "{name}: {reason}");
            }
            other => panic!(
                "{name}: expected a refusal, got {:?}",
                other.map(|r| r.0.convergence)
            ),
        }
    }
}

/// Regression (issue 5): BiCGStab f64–f32 at κ = 0.155 on lat.sample.l8 (Gaussian source,
/// seed 1, as `qdsl solve` makes it) used to end in "stagnation" after ~130 iterations
/// while CGNR converged. Cause: at this κ the even-odd M̂ is near critical and
/// indefinite, and BiCGStab's residual goes down slowly and erratically — in pure f64
/// just as in f64–f32 (pure f64 stagnated too, so the f32 shadow residual is not the
/// cause; scaling up small ω (Sleijpen–van der Vorst) did not help either); the overdue
/// watchdog checked the true residual, which had not halved three times in a row, and the
/// driver called that stagnation although the iterated residual had not claimed any
/// progress either. Stalls now count only checks where the iterated residual claimed
/// progress the true one does not confirm (precision exhausted), so the solve runs on
/// and converges (recorded: ~1100 iterations, ~45 reliable updates), checked here with
/// the textbook operator; CGNR converges at the same κ.
#[test]
fn bicgstab_mixed_precision_converges_near_critical_kappa() {
    let kappa = 0.155;
    let layout = SpinorLayout::wilson(*gauge().lattice(), SiteSubset::Single(Parity::Even));
    let b = F64::gaussian(layout, 1);
    let single = EvenOddWilson::<f32>::new(
        gauge().cast(),
        kappa,
        Parity::Even,
        TimeBoundary::Antiperiodic,
    );
    let opts = SolverOptions {
        max_iterations: 4000,
        ..options()
    };
    let mut x = b.zeros_like();
    let result =
        bicgstab::<F64, ColourSpinorField<f32>, _, _>(&operator(kappa), &single, &b, &mut x, &opts)
            .unwrap();
    assert_eq!(
        result.convergence,
        Convergence::Converged,
        "{} iterations",
        result.iterations
    );
    assert!(
        result.iterations > 200,
        "not the easy regime: {}",
        result.iterations
    );
    assert!(reference_residual(kappa, &x, &b) <= 1.01 * TOLERANCE);
    let mut y = b.zeros_like();
    let cgnr_result = cgnr::<F64, ColourSpinorField<f32>, _, _>(
        &operator(kappa),
        &single,
        &b,
        &mut y,
        &options(),
    )
    .unwrap();
    assert!(cgnr_result.is_converged());
    assert!(reference_residual(kappa, &y, &b) <= 1.01 * TOLERANCE);
}
