//! The solvers on small dense test operators (192 × 192 complex matrices of known
//! condition number acting on a 2⁴ Wilson-layout field): solutions checked against an
//! independent dense residual and a direct Gaussian-elimination solve; solvers against
//! each other; mixed precision, multi-shift, breakdown, limits and refusals.

mod reference_operators;

use qdsl_core::field::ColourSpinorField;
use qdsl_core::Complex;
use qdsl_runtime::solver::{
    bicgstab, cg, cgnr, multishift_cg, Breakdown, Convergence, ResidualKind, ShiftedOperator,
    SolveResult, SolverError, SolverField, SolverKind, SolverOptions,
};
use qdsl_runtime::solver::{
    BFloat16, Fixed16, Fixed8, Half, Packed20, Packed30, QuantizedField, QuantizedOperator,
    SpinorStorage,
};
use reference_operators::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

type F64 = ColourSpinorField<f64>;
type F32 = ColourSpinorField<f32>;

fn hpd(cond: f64) -> DenseOperator {
    DenseOperator::new(Dense::random_hpd(small_layout().len(), cond, 17))
}

fn general(cond: f64) -> DenseOperator {
    DenseOperator::new(Dense::random_with_condition(small_layout().len(), cond, 29))
}

fn source(seed: u64) -> F64 {
    ColourSpinorField::gaussian(small_layout(), seed)
}

fn options(tolerance: f64) -> SolverOptions {
    SolverOptions::with_tolerance(tolerance)
}

/// The recorded true residual is what an independent dense product gives for the
/// returned x, and the history ends with it.
fn assert_honest(result: &SolveResult, m: &Dense, x: &F64, b: &F64) {
    let dense = dense_residual(m, &to_c64(x), &to_c64(b));
    assert!(
        (result.true_residual - dense).abs() <= 1e-6 * dense + 1e-15,
        "reported {} vs dense {dense}",
        result.true_residual
    );
}

/// CG on A = U diag(λ) U†, λ ∈ [0.01, 1]: the dense residual meets the tolerance and
/// x agrees with Gaussian elimination to κ · tol; the history starts at the true
/// residual 1 (x₀ = 0) and ends with a true residual; CG needs fewer iterations than
/// the dimension.
#[test]
fn cg_matches_direct_solve() {
    let op = hpd(100.0);
    let b = source(1);
    let mut x = b.zeros_like();
    let result = cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10)).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    let dense = dense_residual(&op.m, &to_c64(&x), &to_c64(&b));
    assert!(dense <= 1e-10, "{dense}");
    assert_honest(&result, &op.m, &x, &b);
    let direct = op.m.solve(&to_c64(&b));
    assert!(dense_residual(&op.m, &direct, &to_c64(&b)) < 1e-13);
    let error = relative_difference(&to_c64(&x), &direct);
    assert!(error <= 100.0 * 1e-10, "{error}");
    assert!(
        result.iterations > 10 && result.iterations < 192,
        "{}",
        result.iterations
    );
    let first = result.history[0];
    assert_eq!((first.iteration, first.kind), (0, ResidualKind::True));
    assert!((first.residual - 1.0).abs() < 1e-14);
    let last = result.history.last().unwrap();
    assert_eq!(last.kind, ResidualKind::True);
    assert_eq!(last.residual, result.true_residual);
    let iterated = result
        .history
        .iter()
        .filter(|r| r.kind == ResidualKind::Iterated)
        .count();
    assert_eq!(iterated, result.iterations);
    // One application per iteration and per true residual, 8 n² flops each.
    let trues = result.history.len() - iterated;
    assert_eq!(result.operator_applications, result.iterations + trues);
    assert_eq!(
        result.operator_flops,
        result.operator_applications as u64 * 8 * 192 * 192
    );
}

/// A warm start from the exact solution converges at once, with no iteration.
#[test]
fn cg_from_the_solution_needs_no_iteration() {
    let op = hpd(100.0);
    let b = source(2);
    let direct = op.m.solve(&to_c64(&b));
    let mut x = F64::from_data(
        small_layout(),
        direct.iter().map(|z| Complex::new(z.re, z.im)).collect(),
    )
    .unwrap();
    let result = cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10)).unwrap();
    assert!(result.is_converged());
    assert_eq!(result.iterations, 0);
    assert!(result.true_residual < 1e-13);
}

/// CGNR, CGNE and BiCGStab on a non-Hermitian M of condition number 20 reach the
/// tolerance in the dense residual and agree with each other and with Gaussian
/// elimination to κ · tol.
#[test]
fn normal_equations_and_bicgstab_agree() {
    let op = general(20.0);
    // M is neither Hermitian nor normal (M M† ≠ M† M).
    let (mmd, mdm) = (op.m.mul(&op.m_dagger), op.m_dagger.mul(&op.m));
    let hermitian_defect = (0..op.m.n * op.m.n)
        .map(|k| (op.m.a[k] - op.m_dagger.a[k]).norm())
        .fold(0.0, f64::max);
    let normal_defect = (0..op.m.n * op.m.n)
        .map(|k| (mmd.a[k] - mdm.a[k]).norm())
        .fold(0.0, f64::max);
    assert!(
        hermitian_defect > 1e-2 && normal_defect > 1e-3,
        "{hermitian_defect} {normal_defect}"
    );
    let b = source(3);
    let direct = op.m.solve(&to_c64(&b));
    let mut solutions = Vec::new();
    for name in ["cgnr", "cgne", "bicgstab"] {
        let solver: SolverKind = name.parse().unwrap();
        let mut x = b.zeros_like();
        let result = solver
            .solve::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10))
            .unwrap();
        assert!(result.is_converged(), "{name}: {:?}", result.convergence);
        eprintln!(
            "{name}: {} iterations, true residual {:e}",
            result.iterations, result.true_residual
        );
        let dense = dense_residual(&op.m, &to_c64(&x), &to_c64(&b));
        assert!(dense <= 1e-10, "{name}: {dense}");
        assert_honest(&result, &op.m, &x, &b);
        let error = relative_difference(&to_c64(&x), &direct);
        assert!(error <= 20.0 * 1e-10, "{name}: {error}");
        // Every application is one of M or M†, of 8 n² flops.
        assert_eq!(
            result.operator_flops,
            result.operator_applications as u64 * 8 * 192 * 192,
            "{name}"
        );
        assert!(
            result.operator_applications >= 2 * result.iterations,
            "{name}"
        );
        solutions.push(to_c64(&x));
    }
    assert!(relative_difference(&solutions[0], &solutions[2]) < 4e-9);
    assert!(relative_difference(&solutions[1], &solutions[2]) < 4e-9);
}

/// Multi-shift CG: each x_i solves (A + σ_i) x_i = b (dense residual, and agreement with
/// Gaussian elimination and with a single-shift CG); the multi-shift iteration alone
/// already reached the tolerance (its recomputed true residuals are small, the
/// refinements need at most a couple of iterations), in fewer iterations than the
/// single-shift solves together.
#[test]
fn multishift_equals_single_shift_solves() {
    let op = hpd(100.0);
    let b = source(4);
    let shifts = [0.5, 0.0, 0.02, 0.1];
    let mut xs: Vec<F64> = shifts.iter().map(|_| b.zeros_like()).collect();
    let result =
        multishift_cg::<F64, F64, _, _>(&op, &op, &b, &shifts, &mut xs, &options(1e-10)).unwrap();
    assert!(result.is_converged());
    assert_eq!(result.multishift.convergence, Convergence::Converged);
    assert!(
        result.multishift.true_residual < 1e-9,
        "{}",
        result.multishift.true_residual
    );
    let mut single_iterations = 0;
    for ((x, &sigma), refined) in xs.iter().zip(&shifts).zip(&result.shifts) {
        assert!(
            refined.iterations <= 2,
            "σ = {sigma}: {}",
            refined.iterations
        );
        let shifted = op.m.shifted(sigma);
        let dense = dense_residual(&shifted, &to_c64(x), &to_c64(&b));
        assert!(dense <= 1e-10, "σ = {sigma}: {dense}");
        let direct = shifted.solve(&to_c64(&b));
        assert!(relative_difference(&to_c64(x), &direct) < 1e-8);
        let a = ShiftedOperator::new(&op, sigma);
        let mut single = b.zeros_like();
        let one = cg::<F64, F64, _, _>(&a, &a, &b, &mut single, &options(1e-10)).unwrap();
        assert!(one.is_converged());
        single_iterations += one.iterations;
        assert!(relative_difference(&to_c64(x), &to_c64(&single)) < 1e-8);
    }
    assert!(result.multishift.iterations < single_iterations);
}

/// Multi-shift in f32 with f64 refinement reaches 1e-10 for every shift.
#[test]
fn mixed_multishift_refines_to_double_precision() {
    let op = hpd(100.0);
    let b = source(5);
    let shifts = [0.0, 0.05, 1.0];
    let mut xs: Vec<F64> = shifts.iter().map(|_| b.zeros_like()).collect();
    let result =
        multishift_cg::<F64, F32, _, _>(&op, &op, &b, &shifts, &mut xs, &options(1e-10)).unwrap();
    assert!(result.is_converged());
    for (x, &sigma) in xs.iter().zip(&shifts) {
        let dense = dense_residual(&op.m.shifted(sigma), &to_c64(x), &to_c64(&b));
        assert!(dense <= 1e-10, "σ = {sigma}: {dense}");
    }
    // The f32 multi-shift alone cannot be accurate to 1e-10.
    assert!(result.multishift.true_residual > 1e-9);
}

/// f64–f32 CG with reliable updates reaches a 1e-10 dense residual, with reliable
/// updates done; so does the Polak–Ribière variant. Pure f32 cannot: 1e-10 is refused
/// for it, and even the exact solution rounded to f32 has a residual far above 1e-10.
#[test]
fn mixed_precision_cg_reaches_double_precision_residual() {
    let op = hpd(100.0);
    let b = source(6);
    for polak_ribiere in [false, true] {
        let opts = SolverOptions {
            polak_ribiere,
            ..options(1e-10)
        };
        let mut x = b.zeros_like();
        let result = cg::<F64, F32, _, _>(&op, &op, &b, &mut x, &opts).unwrap();
        assert!(
            result.is_converged(),
            "PR {polak_ribiere}: {:?}",
            result.convergence
        );
        assert!(result.reliable_updates > 0);
        let dense = dense_residual(&op.m, &to_c64(&x), &to_c64(&b));
        assert!(dense <= 1e-10, "PR {polak_ribiere}: {dense}");
        assert_honest(&result, &op.m, &x, &b);
        let trues = result
            .history
            .iter()
            .filter(|r| r.kind == ResidualKind::True);
        assert!(trues.count() >= result.reliable_updates + 2);
    }
    let b32: F32 = b.cast();
    let mut x32 = b32.zeros_like();
    assert!(matches!(
        cg::<F32, F32, _, _>(&op, &op, &b32, &mut x32, &options(1e-10)),
        Err(SolverError::UnreachableTolerance { .. })
    ));
    let rounded: Vec<C> =
        op.m.solve(&to_c64(&b))
            .iter()
            .map(|z| C::new(z.re as f32 as f64, z.im as f32 as f64))
            .collect();
    assert!(dense_residual(&op.m, &rounded, &to_c64(&b)) > 1e-9);
    // A pure f32 solve is fine at a tolerance f32 can reach.
    let result = cg::<F32, F32, _, _>(&op, &op, &b32, &mut x32, &options(1e-5)).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    assert!(dense_residual(&op.m, &to_c64(&x32), &to_c64(&b)) <= 1e-5);
}

/// f64–f32 BiCGStab and CGNR with reliable updates reach 1e-10 on a non-Hermitian M.
#[test]
fn mixed_precision_bicgstab_and_cgnr() {
    let op = general(20.0);
    let b = source(7);
    let mut x = b.zeros_like();
    let result = bicgstab::<F64, F32, _, _>(&op, &op, &b, &mut x, &options(1e-10)).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    assert!(result.reliable_updates > 0);
    assert!(dense_residual(&op.m, &to_c64(&x), &to_c64(&b)) <= 1e-10);
    let mut y = b.zeros_like();
    let result = cgnr::<F64, F32, _, _>(&op, &op, &b, &mut y, &options(1e-10)).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    assert!(result.reliable_updates > 0);
    assert!(dense_residual(&op.m, &to_c64(&y), &to_c64(&b)) <= 1e-10);
    assert!(relative_difference(&to_c64(&x), &to_c64(&y)) < 4e-9);
}

/// A zero source gives x = 0 at once (whatever x held), converged, 0 iterations, for
/// every solver.
#[test]
fn zero_source_returns_zero_at_once() {
    let op = general(20.0);
    let b = source(8).zeros_like();
    let junk = source(9);
    for solver in SolverKind::ALL {
        let mut x = junk.clone();
        let result = solver
            .solve::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10))
            .unwrap();
        assert!(result.is_converged());
        assert_eq!(result.iterations, 0);
        assert_eq!(result.true_residual, 0.0);
        assert_eq!(x.norm_sqr(), 0.0);
    }
    let mut xs = vec![junk.clone(), junk];
    let result =
        multishift_cg::<F64, F64, _, _>(&op, &op, &b, &[0.0, 1.0], &mut xs, &options(1e-10))
            .unwrap();
    assert!(result.is_converged());
    assert!(xs.iter().all(|x| x.norm_sqr() == 0.0));
}

/// NaN in the source or in the operator's output is a breakdown, never success; x keeps
/// the last verified solution (here the zero start).
#[test]
fn nan_is_reported_as_breakdown() {
    let op = hpd(100.0);
    let mut b = source(10);
    b.data_mut()[3] = Complex::new(f64::NAN, 0.0);
    let mut x = b.zeros_like();
    let result = cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10)).unwrap();
    assert_eq!(
        result.convergence,
        Convergence::Breakdown(Breakdown::NonFinite {
            quantity: "‖b‖²"
        })
    );
    assert!(!result.is_converged());
    let mut xs = vec![b.zeros_like(), b.zeros_like()];
    let shifted =
        multishift_cg::<F64, F64, _, _>(&op, &op, &b, &[0.0, 1.0], &mut xs, &options(1e-10))
            .unwrap();
    assert!(!shifted.is_converged());
    assert!(matches!(
        shifted.multishift.convergence,
        Convergence::Breakdown(Breakdown::NonFinite { .. })
    ));
    assert!(shifted.multishift.true_residual.is_nan());
    let mut nan_op = hpd(100.0);
    nan_op.nan = true;
    let b = source(10);
    for solver in SolverKind::ALL {
        let mut x = b.zeros_like();
        let result = solver
            .solve::<F64, F64, _, _>(&nan_op, &nan_op, &b, &mut x, &options(1e-10))
            .unwrap();
        assert!(
            matches!(
                result.convergence,
                Convergence::Breakdown(Breakdown::NonFinite { .. })
            ),
            "{:?}",
            result.convergence
        );
        assert!(!result.true_residual.is_finite() || result.true_residual > 1e-10);
    }
    // NaN only in the low-precision operator: the high-precision x stays finite.
    let mut x = b.zeros_like();
    let result = cg::<F64, F64, _, _>(&op, &nan_op, &b, &mut x, &options(1e-10)).unwrap();
    assert!(matches!(
        result.convergence,
        Convergence::Breakdown(Breakdown::NonFinite { .. })
    ));
    assert!(x.norm_sqr().is_finite());
    assert!((result.true_residual - 1.0).abs() < 1e-12);
}

/// CG on an indefinite operator (−A) stops with NotPositiveDefinite.
#[test]
fn cg_detects_an_operator_that_is_not_positive_definite() {
    let op = hpd(10.0);
    let negative = DenseOperator::new(Dense::from_fn(op.m.n, |i, j| -op.m.at(i, j)));
    let b = source(11);
    let mut x = b.zeros_like();
    let result = cg::<F64, F64, _, _>(&negative, &negative, &b, &mut x, &options(1e-10)).unwrap();
    assert_eq!(
        result.convergence,
        Convergence::Breakdown(Breakdown::NotPositiveDefinite)
    );
}

/// The iteration limit is reported as such, with the history of the iterations done and
/// an honest (recomputed) true residual above the tolerance; the progress callback saw
/// every iteration.
#[test]
fn iteration_limit_is_reported_with_history() {
    let op = hpd(100.0);
    let b = source(12);
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let opts = SolverOptions {
        max_iterations: 5,
        progress: Some(Arc::new(move |p| {
            assert!(p.residual > 0.0 && p.iteration <= p.max_iterations);
            counter.fetch_add(1, Ordering::Relaxed);
        })),
        ..options(1e-10)
    };
    for solver in SolverKind::ALL {
        calls.store(0, Ordering::Relaxed);
        let mut x = b.zeros_like();
        let result = solver
            .solve::<F64, F64, _, _>(&op, &op, &b, &mut x, &opts)
            .unwrap();
        assert_eq!(result.convergence, Convergence::MaxIterations);
        assert!(!result.is_converged());
        assert_eq!(result.iterations, 5);
        assert_eq!(calls.load(Ordering::Relaxed), 5);
        let iterated: Vec<_> = result
            .history
            .iter()
            .filter(|r| r.kind == ResidualKind::Iterated)
            .map(|r| r.iteration)
            .collect();
        assert_eq!(iterated, vec![1, 2, 3, 4, 5]);
        assert!(result.true_residual.is_finite() && result.true_residual > 1e-10);
        assert_honest(&result, &op.m, &x, &b);
    }
}

/// Tolerances the precisions cannot reach, and invalid options, are refused with an
/// explanation before any work.
#[test]
fn unreachable_tolerances_and_bad_options_are_refused() {
    let op = hpd(10.0);
    let b = source(13);
    let mut x = b.zeros_like();
    let error = cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-17)).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, SolverError::UnreachableTolerance { .. }));
    assert!(
        message.contains("1e-17") && message.contains("round-off"),
        "{message}"
    );
    // f64–f32 without reliable updates: limited by f32.
    let no_updates = SolverOptions {
        reliable_delta: 0.0,
        ..options(1e-10)
    };
    let error = cg::<F64, F32, _, _>(&op, &op, &b, &mut x, &no_updates).unwrap_err();
    assert!(error.to_string().contains("reliable updates"), "{error}");
    // …but allowed with them.
    assert!(cg::<F64, F32, _, _>(&op, &op, &b, &mut x, &options(1e-10)).is_ok());
    for bad in [0.0, -1e-8, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(bad)),
            Err(SolverError::InvalidTolerance { .. })
        ));
    }
    let bad_delta = SolverOptions {
        reliable_delta: 1.5,
        ..options(1e-8)
    };
    assert!(matches!(
        bicgstab::<F64, F64, _, _>(&op, &op, &b, &mut x, &bad_delta),
        Err(SolverError::InvalidDelta { .. })
    ));
    let mut xs = vec![b.zeros_like()];
    for shifts in [&[-0.1][..], &[0.0, 1.0][..], &[][..]] {
        assert!(matches!(
            multishift_cg::<F64, F64, _, _>(&op, &op, &b, shifts, &mut xs, &options(1e-8)),
            Err(SolverError::InvalidShifts { .. })
        ));
    }
}

/// Fields of different layouts are an error, not a panic.
#[test]
fn mismatched_fields_are_an_error() {
    let op = hpd(10.0);
    let b = source(14);
    let other = qdsl_core::field::SpinorLayout::staggered(
        qdsl_core::lattice::Lattice::new([2; 4]).unwrap(),
        qdsl_core::field::SiteSubset::Full,
    );
    let mut x = F64::zeros(other);
    assert!(cg::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-8)).is_err());
}

/// BiCGStab on a Hermitian positive-definite A agrees with CG.
#[test]
fn bicgstab_agrees_with_cg_on_hpd() {
    let op = hpd(100.0);
    let b = source(15);
    let mut x = b.zeros_like();
    let result = bicgstab::<F64, F64, _, _>(&op, &op, &b, &mut x, &options(1e-10)).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    let mut y = b.zeros_like();
    let cg_result = cg::<F64, F64, _, _>(&op, &op, &b, &mut y, &options(1e-10)).unwrap();
    assert!(cg_result.is_converged());
    assert!(relative_difference(&to_c64(&x), &to_c64(&y)) < 1e-8);
}

/// A pure f32 solve on an ill-conditioned A (κ = 10⁴) at a tolerance above the f32
/// floor but below what f32 can deliver for this κ (the true residual computed in f32
/// carries errors ~ u_f32 κ ≈ 6e-4): reported as stagnation, never as success, and the
/// dense residual of x indeed misses the tolerance.
#[test]
fn stagnation_is_reported() {
    let op = hpd(1e4);
    let b32: F32 = source(16).cast();
    let mut x = b32.zeros_like();
    let opts = SolverOptions {
        max_iterations: 5000,
        ..options(1e-6)
    };
    let result = cg::<F32, F32, _, _>(&op, &op, &b32, &mut x, &opts).unwrap();
    assert_eq!(result.convergence, Convergence::Stagnation);
    // Stopped by the stall checks, long before the iteration limit, after true
    // residual checks that did not halve the best one.
    assert!(result.iterations < 2000, "{}", result.iterations);
    let trues: Vec<f64> = result
        .history
        .iter()
        .filter(|h| h.kind == ResidualKind::True)
        .map(|h| h.residual)
        .collect();
    let best_before = trues[..trues.len() - 3]
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min);
    assert!(trues[trues.len() - 3..]
        .iter()
        .all(|&r| r > 0.5 * best_before));
    let dense = dense_residual(&op.m, &to_c64(&x), &to_c64(&b32));
    assert!(dense > 1e-6, "{dense}");
}

/// M swapping components 2i ↔ 2i+1 with b = e₀: BiCGStab's first step has
/// v = M p = e₁ ⟂ r̂₀ = e₀, so ⟨r̂₀, v⟩ = 0 — a breakdown, reported as such; CGNR (M
/// unitary) solves the same system at once.
#[test]
fn bicgstab_breakdown_is_reported() {
    let n = small_layout().len();
    let swap = DenseOperator::new(Dense::from_fn(n, |i, j| {
        C::new(if i ^ 1 == j { 1.0 } else { 0.0 }, 0.0)
    }));
    let mut b = F64::zeros(small_layout());
    b.data_mut()[0] = Complex::new(1.0, 0.0);
    let mut x = b.zeros_like();
    let result = bicgstab::<F64, F64, _, _>(&swap, &swap, &b, &mut x, &options(1e-10)).unwrap();
    assert_eq!(
        result.convergence,
        Convergence::Breakdown(Breakdown::Zero {
            quantity: "⟨r̂₀, v⟩"
        })
    );
    assert_eq!(x.norm_sqr(), 0.0);
    assert_eq!(result.true_residual, 1.0);
    let result = cgnr::<F64, F64, _, _>(&swap, &swap, &b, &mut x, &options(1e-10)).unwrap();
    assert!(result.is_converged());
    assert_eq!(result.iterations, 1);
    assert_eq!(x.data()[1], Complex::new(1.0, 0.0));
}

/// f64 solution with the iteration stored in each low format (f16, bf16, 16- and 8-bit
/// fixed, 20- and 30-bit packed; emulated by rounding through the format): CG, BiCGStab
/// and multi-shift CG with reliable updates reach a 1e-10 dense residual in every
/// format, doing reliable updates; without reliable updates the formats' floors refuse
/// 1e-10.
#[test]
fn mixed_precision_in_every_storage_format() {
    fn run<S: SpinorStorage>(delta: f64) {
        let options = |tolerance| SolverOptions {
            reliable_delta: delta,
            ..options(tolerance)
        };
        let hpd_op = hpd(100.0);
        let general_op = general(20.0);
        let b = source(17);
        let name = S::FORMAT.name();
        for (solver, op) in [
            (SolverKind::Cg, &hpd_op),
            (SolverKind::BiCgStab, &general_op),
            (SolverKind::Cgnr, &general_op),
        ] {
            let mut x = b.zeros_like();
            let low = QuantizedOperator(op);
            let result = solver
                .solve::<F64, QuantizedField<S>, _, _>(op, &low, &b, &mut x, &options(1e-10))
                .unwrap();
            assert!(
                result.is_converged(),
                "{name} {solver}: {:?}",
                result.convergence
            );
            assert!(result.reliable_updates > 0, "{name} {solver}");
            let dense = dense_residual(&op.m, &to_c64(&x), &to_c64(&b));
            assert!(dense <= 1e-10, "{name} {solver}: {dense}");
            eprintln!(
                "{name:>8} {solver:>8}: {:4} iterations, {:3} reliable updates",
                result.iterations, result.reliable_updates
            );
        }
        let shifts = [0.0, 0.1];
        let mut xs = vec![b.zeros_like(), b.zeros_like()];
        let low = QuantizedOperator(&hpd_op);
        let result = multishift_cg::<F64, QuantizedField<S>, _, _>(
            &hpd_op,
            &low,
            &b,
            &shifts,
            &mut xs,
            &options(1e-10),
        )
        .unwrap();
        assert!(result.is_converged(), "{name} multi-shift");
        for (x, sigma) in xs.iter().zip(shifts) {
            let dense = dense_residual(&hpd_op.m.shifted(sigma), &to_c64(x), &to_c64(&b));
            assert!(dense <= 1e-10, "{name} σ = {sigma}: {dense}");
        }
        let no_updates = SolverOptions {
            reliable_delta: 0.0,
            ..options(1e-10)
        };
        let mut x = b.zeros_like();
        let low = QuantizedOperator(&hpd_op);
        assert!(matches!(
            cg::<F64, QuantizedField<S>, _, _>(&hpd_op, &low, &b, &mut x, &no_updates),
            Err(SolverError::UnreachableTolerance { .. })
        ));
    }
    run::<Half>(0.1);
    run::<BFloat16>(0.1);
    run::<Fixed16>(0.1);
    // 8 bits (u ≈ 4e-3) cannot lower the residual by 10 at κ ~ 100 between updates:
    // update when it has halved.
    run::<Fixed8>(0.5);
    run::<Packed20>(0.1);
    run::<Packed30>(0.1);
}
