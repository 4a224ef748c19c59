//! CG on the normal equations of a general operator M: CGNR (M†M x = M† b) and CGNE
//! (M M† y = b, x = M† y).

use super::{
    cg, Convergence, ConvertFrom, LinearOperator, NormalForm, NormalOperator, Progress,
    ProgressCallback, ResidualKind, ResidualRecord, SolveResult, SolverError, SolverField,
    SolverOptions, SourceBatch, TOLERANCE_FLOOR_IN_ROUNDOFF,
};
use crate::linear::real;
use std::sync::Arc;
use std::time::Instant;

/// Rounds of tightening the normal-equation tolerance in [`cgnr`].
const MAX_CGNR_ROUNDS: usize = 6;

/// ‖b − M x‖/‖b‖ (one application of M in H).
fn relative_residual<H: SolverField, O: LinearOperator<H> + ?Sized>(
    op: &O,
    b: &H,
    x: &H,
) -> Result<f64, SolverError> {
    let mut r = b.zeros_like();
    op.apply(&mut r, x)?;
    r.xpay(b, real(-1.0))?;
    Ok((r.norm_sqr()? / b.norm_sqr()?).sqrt())
}

/// The caller's progress callback, told iterations counted from `offset` (the
/// iterations of earlier CGNR rounds).
fn offset_progress(opts: &SolverOptions, offset: usize) -> Option<ProgressCallback> {
    let outer = opts.progress.clone()?;
    let max_iterations = opts.max_iterations;
    Some(Arc::new(move |p: &Progress| {
        outer(&Progress {
            iteration: p.iteration + offset,
            max_iterations,
            ..*p
        })
    }))
}

/// Appends a later solve's counts and history (iterations offset) to `total`.
fn merge(total: &mut SolveResult, part: SolveResult) {
    let offset = total.iterations;
    total
        .history
        .extend(part.history.into_iter().map(|mut record| {
            record.iteration += offset;
            record
        }));
    total.iterations += part.iterations;
    total.reliable_updates += part.reliable_updates;
    total.operator_applications += part.operator_applications;
    total.operator_flops += part.operator_flops;
    total.convergence = part.convergence;
    total.true_residual = part.true_residual;
}

/// Solves M x = b by CG on the normal equations M†M x = M† b (CGNR), from the guess in
/// `x`, in mixed precision with reliable updates ([`cg`] with A = M†M).
///
/// The tolerance is that of the original system, ‖b − M x‖ ≤ tolerance · ‖b‖. CG
/// controls the normal residual ‖M†(b − M x)‖/‖M† b‖, which can be smaller by up to
/// the condition number of M; so CG first runs to the tolerance, then ‖b − M x‖ is
/// recomputed and, while it is too large, CG continues from x with the normal
/// tolerance lowered by the factor missed (twice over), down to the floor of the
/// precisions ([`SolverOptions::check`]), where the solve reports
/// [`Convergence::Stagnation`]. The iteration limit counts all rounds.
///
/// The history holds the normal-equation residuals of each round followed by the
/// recomputed ‖b − M x‖/‖b‖ (kind [`ResidualKind::True`]); `true_residual` is that of
/// M x = b, whatever the outcome; operator applications count applications of M or M†.
pub fn cgnr<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<SolveResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    opts.check::<H, L>()?;
    let start = Instant::now();
    if b.norm_sqr()? == 0.0 {
        x.set_zero();
        return Ok(SolveResult::zero_source());
    }
    let mut b_normal = b.zeros_like();
    op_high.apply_dagger(&mut b_normal, b)?;
    let a_high = NormalOperator::new(op_high, NormalForm::MdagM);
    let a_low = NormalOperator::new(op_low, NormalForm::MdagM);
    let mut floor = TOLERANCE_FLOOR_IN_ROUNDOFF * H::UNIT_ROUNDOFF;
    if opts.reliable_delta == 0.0 {
        floor = floor.max(TOLERANCE_FLOOR_IN_ROUNDOFF * L::UNIT_ROUNDOFF);
    }
    let mut inner = opts.clone();
    let mut total = SolveResult {
        operator_applications: 1,
        operator_flops: op_high.flops_per_apply(),
        history: Vec::new(),
        ..SolveResult::zero_source()
    };
    for _ in 0..MAX_CGNR_ROUNDS {
        inner.max_iterations = opts.max_iterations - total.iterations;
        inner.progress = offset_progress(opts, total.iterations);
        let part = cg(&a_high, &a_low, &b_normal, x, &inner)?;
        // Each application of A = M†M is two of M or M† (the flops already count both).
        let applications = part.operator_applications;
        merge(&mut total, part);
        total.operator_applications += applications;
        let residual = relative_residual(op_high, b, x)?;
        total.operator_applications += 1;
        total.operator_flops += op_high.flops_per_apply();
        total.true_residual = residual;
        total.history.push(ResidualRecord {
            iteration: total.iterations,
            residual,
            kind: ResidualKind::True,
        });
        if !total.is_converged() || residual <= opts.tolerance {
            break;
        }
        total.convergence = Convergence::Stagnation;
        if inner.tolerance <= floor {
            break;
        }
        inner.tolerance = (0.5 * inner.tolerance * opts.tolerance / residual).max(floor);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

/// Solves M x = b by CG on M M† y = b (CGNE), x = M† y, in mixed precision with
/// reliable updates ([`cg`] with A = M M†). The residual of the CG system,
/// b − M M† y = b − M x, is the residual of M x = b itself, so the tolerance applies
/// directly. CG starts from y = 0: the content of `x` on entry is ignored.
///
/// The true residual ‖b − M x‖/‖b‖ is recomputed from x = M† y at the end; should
/// rounding leave it above the tolerance although CG's was below, the solve reports
/// [`Convergence::Stagnation`]. Operator applications count applications of M or M†.
pub fn cgne<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<SolveResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    let start = Instant::now();
    let a_high = NormalOperator::new(op_high, NormalForm::MMdag);
    let a_low = NormalOperator::new(op_low, NormalForm::MMdag);
    let mut y = b.zeros_like();
    let mut result = cg(&a_high, &a_low, b, &mut y, opts)?;
    result.operator_applications *= 2;
    if b.norm_sqr()? == 0.0 {
        x.set_zero();
        return Ok(result);
    }
    op_high.apply_dagger(x, &y)?;
    result.true_residual = relative_residual(op_high, b, x)?;
    result.operator_applications += 2;
    result.operator_flops += 2 * op_high.flops_per_apply();
    let residual = result.true_residual;
    if result.is_converged() && (residual.is_nan() || residual > opts.tolerance) {
        result.convergence = Convergence::Stagnation;
    }
    result.elapsed = start.elapsed();
    Ok(result)
}

/// Solves M x_k = b_k for the N sources of `b` at once by CG on the normal equations
/// M†M x_k = M† b_k ([`block_cg`] with A = M†M: one application of M and M† per
/// iteration for all sources), from the guess in `x`, in rounds as [`cgnr`]: after each,
/// ‖b_k − M x_k‖/‖b_k‖ is recomputed per source, and a source above the tolerance goes
/// on from x_k with its normal tolerance lowered by the factor it missed (twice over),
/// down to the floor of the precisions (then [`Convergence::Stagnation`]); sources that
/// met it rest. One result per source: its iterations over all rounds, the histories
/// with the recomputed residuals (kind [`ResidualKind::True`]), `true_residual` that of
/// M x_k = b_k; operator applications (of M or M†) and time are the batch's.
pub fn block_cgnr<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<Vec<SolveResult>, SolverError>
where
    H: SourceBatch + ConvertFrom<L>,
    L: SourceBatch + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    opts.check::<H, L>()?;
    let start = Instant::now();
    let n = b.sources();
    let b2 = b.norm_sqr_each();
    let mut b_normal = b.zeros_like();
    op_high.apply_dagger(&mut b_normal, b)?;
    let a_high = NormalOperator::new(op_high, NormalForm::MdagM);
    let a_low = NormalOperator::new(op_low, NormalForm::MdagM);
    let mut floor = TOLERANCE_FLOOR_IN_ROUNDOFF * H::UNIT_ROUNDOFF;
    if opts.reliable_delta == 0.0 {
        floor = floor.max(TOLERANCE_FLOOR_IN_ROUNDOFF * L::UNIT_ROUNDOFF);
    }
    let mut totals: Vec<SolveResult> = (0..n)
        .map(|_| SolveResult {
            history: Vec::new(),
            ..SolveResult::zero_source()
        })
        .collect();
    let mut tolerances = vec![opts.tolerance; n];
    let (mut applications, mut flops) = (1, op_high.flops_per_apply());
    let mut r = b.zeros_like();
    for _ in 0..MAX_CGNR_ROUNDS {
        let mut inner = opts.clone();
        inner.max_iterations =
            opts.max_iterations - totals.iter().map(|t| t.iterations).max().unwrap_or(0);
        let parts =
            super::block_cg::block_cg_to(&a_high, &a_low, &b_normal, x, &inner, &tolerances)?;
        if let Some(p) = parts.first() {
            // Each application of A = M†M is two of M or M†.
            applications += 2 * p.operator_applications;
            flops += p.operator_flops;
        }
        op_high.apply(&mut r, x)?;
        r.xpay(b, real(-1.0))?;
        applications += 1;
        flops += op_high.flops_per_apply();
        let r2 = r.norm_sqr_each();
        let mut again = false;
        for (k, part) in parts.into_iter().enumerate() {
            if tolerances[k].is_infinite() {
                continue;
            }
            let total = &mut totals[k];
            merge(total, part);
            let residual = if b2[k] == 0.0 {
                0.0
            } else {
                (r2[k] / b2[k]).sqrt()
            };
            total.true_residual = residual;
            total.history.push(ResidualRecord {
                iteration: total.iterations,
                residual,
                kind: ResidualKind::True,
            });
            if !total.is_converged() || residual <= opts.tolerance {
                tolerances[k] = f64::INFINITY;
                continue;
            }
            total.convergence = Convergence::Stagnation;
            if tolerances[k] <= floor {
                tolerances[k] = f64::INFINITY;
                continue;
            }
            tolerances[k] = (0.5 * tolerances[k] * opts.tolerance / residual).max(floor);
            again = true;
        }
        if !again {
            break;
        }
    }
    let elapsed = start.elapsed();
    for t in &mut totals {
        t.operator_applications = applications;
        t.operator_flops = flops;
        t.elapsed = elapsed;
    }
    Ok(totals)
}
