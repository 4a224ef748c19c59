//! Multi-shift CG: (A + σ_i) x_i = b for many shifts σ_i in one Krylov space, followed
//! by a per-shift refinement.

use super::{
    cg, Breakdown, Convergence, ConvertFrom, LinearOperator, Progress, ResidualKind,
    ResidualRecord, ShiftedOperator, SolveResult, SolverError, SolverField, SolverOptions,
    TOLERANCE_FLOOR_IN_ROUNDOFF,
};
use crate::linear::real;
use std::time::Instant;

/// The outcome of [`multishift_cg`].
#[derive(Clone, Debug, PartialEq)]
pub struct MultiShiftResult {
    /// The multi-shift iteration in the low precision: its convergence (every shift
    /// reached the tolerance), iterations, and the history of the iterated residual of
    /// the smallest shift. Its `true_residual` is the largest true residual over the
    /// shifts before refinement, ‖b − (A + σ_i) x_i‖/‖b‖, recomputed in the high
    /// precision.
    pub multishift: SolveResult,
    /// The refinement of each shift (in the order of the shifts): a [`cg`] on
    /// A + σ_i warm-started from the multi-shift solution; its `true_residual` is that
    /// of the returned x_i.
    pub shifts: Vec<SolveResult>,
}

impl MultiShiftResult {
    /// Whether every shift converged after refinement.
    pub fn is_converged(&self) -> bool {
        self.shifts.iter().all(SolveResult::is_converged)
    }
}

/// The shifts must be finite, ≥ 0 (A + σ_i then stays positive definite), as many as
/// the solutions, and at least one.
fn check_shifts(shifts: &[f64], solutions: usize) -> Result<(), SolverError> {
    let reason = if shifts.is_empty() {
        "at least one shift is needed".to_string()
    } else if shifts.len() != solutions {
        format!("{} shifts but {solutions} solution vectors", shifts.len())
    } else if let Some(s) = shifts.iter().find(|s| !(s.is_finite() && **s >= 0.0)) {
        format!("every shift must be finite and ≥ 0, found {s}")
    } else {
        return Ok(());
    };
    Err(SolverError::InvalidShifts { reason })
}

/// Solves (A + σ_i) x_i = b, i = 0 … n−1, for a Hermitian positive-definite A and
/// shifts σ_i ≥ 0, by one CG in the low precision L (Jegerlehner's multi-shift CG),
/// then refines each x_i by a mixed-precision [`cg`] on A + σ_i (H with `op_high`,
/// L with `op_low`) started from the multi-shift solution.
///
/// The Krylov space is that of the smallest shift σ_b (the slowest to converge), run as
/// ordinary CG on A + σ_b (α_k, β_k, r_k as in [`cg`]). The residual of shift σ
/// (relative shift s = σ − σ_b ≥ 0) is collinear, r^σ_k = ζ^σ_k r_k, with ζ^σ_{−1} =
/// ζ^σ_0 = 1, α_{−1} = 1, β_{−1} = 0 and
///
/// ζ^σ_{k+1} = ζ^σ_k ζ^σ_{k−1} α_{k−1} /
///             (α_k β_{k−1} (ζ^σ_{k−1} − ζ^σ_k) + ζ^σ_{k−1} α_{k−1} (1 + s α_k)),
/// α^σ_k = α_k ζ^σ_{k+1}/ζ^σ_k,  β^σ_k = β_k (ζ^σ_{k+1}/ζ^σ_k)²,
/// x^σ ← x^σ + α^σ_k p^σ_k,  p^σ_{k+1} = ζ^σ_{k+1} r_{k+1} + β^σ_k p^σ_k.
///
/// A shift whose residual |ζ^σ| ‖r‖ has reached the tolerance (or 10 u_L, whichever is
/// larger: the refinement takes it further) is frozen: its x and p are no longer
/// updated. The iteration stops when all shifts are frozen. All solutions start from
/// zero (the content of `solutions` on entry is ignored): the shifted residuals are
/// collinear only then.
pub fn multishift_cg<H, L, OH, OL>(
    op_high: &OH,
    op_low: &OL,
    b: &H,
    shifts: &[f64],
    solutions: &mut [H],
    opts: &SolverOptions,
) -> Result<MultiShiftResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    check_shifts(shifts, solutions.len())?;
    opts.check::<H, L>()?;
    let start = Instant::now();
    let (base, &sigma_base) = shifts
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .ok_or_else(|| SolverError::InvalidShifts {
            reason: "at least one shift is needed".to_string(),
        })?;
    let tolerance = opts
        .tolerance
        .max(TOLERANCE_FLOOR_IN_ROUNDOFF * L::UNIT_ROUNDOFF);
    let b2 = b.norm_sqr()?;
    let b_norm = b2.sqrt();
    let n = shifts.len();
    let mut multishift = SolveResult {
        history: Vec::new(),
        ..SolveResult::zero_source()
    };
    let mut convergence = Convergence::Converged;
    let mut x_low: Vec<L> = Vec::with_capacity(n);
    if b2 == 0.0 || !b2.is_finite() {
        for x in solutions.iter_mut() {
            x.set_zero();
        }
        if !b2.is_finite() {
            convergence = Convergence::Breakdown(Breakdown::NonFinite {
                quantity: "‖b‖²"
            });
        }
    } else {
        let op_base = ShiftedOperator::new(op_low, sigma_base);
        let mut r = L::converted(b);
        let mut ap = r.zeros_like();
        let mut p: Vec<L> = Vec::with_capacity(n);
        for _ in 0..n {
            let mut p_i = r.zeros_like();
            p_i.copy_from(&r)?;
            p.push(p_i);
            x_low.push(r.zeros_like());
        }
        let mut zeta = vec![1.0_f64; n];
        let mut zeta_prev = vec![1.0_f64; n];
        let mut active = vec![true; n];
        let (mut alpha_prev, mut beta_prev) = (1.0_f64, 0.0_f64);
        let mut r2 = r.norm_sqr()?;
        convergence = loop {
            if !active.iter().any(|&a| a) {
                break Convergence::Converged;
            }
            if multishift.iterations >= opts.max_iterations {
                break Convergence::MaxIterations;
            }
            op_base.apply(&mut ap, &p[base])?;
            multishift.operator_applications += 1;
            multishift.operator_flops += op_base.flops_per_apply();
            let p_ap = p[base].dot(&ap)?.re;
            if !p_ap.is_finite() {
                let quantity = "⟨p, A p⟩";
                break Convergence::Breakdown(Breakdown::NonFinite { quantity });
            }
            if p_ap <= 0.0 {
                break Convergence::Breakdown(Breakdown::NotPositiveDefinite);
            }
            let alpha = r2 / p_ap;
            let mut zeta_next = vec![0.0_f64; n];
            for i in (0..n).filter(|&i| active[i]) {
                let s = shifts[i] - sigma_base;
                zeta_next[i] = zeta[i] * zeta_prev[i] * alpha_prev
                    / (alpha * beta_prev * (zeta_prev[i] - zeta[i])
                        + zeta_prev[i] * alpha_prev * (1.0 + s * alpha));
                x_low[i].axpy(real(alpha * zeta_next[i] / zeta[i]), &p[i])?;
            }
            r.axpy(real(-alpha), &ap)?;
            let r2_new = r.norm_sqr()?;
            if !r2_new.is_finite() {
                break Convergence::Breakdown(Breakdown::NonFinite {
                    quantity: "‖r‖²"
                });
            }
            let beta = r2_new / r2;
            for i in 0..n {
                if !active[i] {
                    continue;
                }
                let ratio = zeta_next[i] / zeta[i];
                p[i].scale(real(beta * ratio * ratio));
                p[i].axpy(real(zeta_next[i]), &r)?;
                if zeta_next[i].abs() * r2_new.sqrt() <= tolerance * b_norm {
                    active[i] = false;
                }
            }
            zeta_prev = zeta;
            zeta = zeta_next;
            (alpha_prev, beta_prev, r2) = (alpha, beta, r2_new);
            multishift.iterations += 1;
            let residual = r2.sqrt() / b_norm;
            multishift.history.push(ResidualRecord {
                iteration: multishift.iterations,
                residual,
                kind: ResidualKind::Iterated,
            });
            if let Some(progress) = &opts.progress {
                progress(&Progress {
                    iteration: multishift.iterations,
                    max_iterations: opts.max_iterations,
                    residual,
                    tolerance,
                });
            }
        };
        for (x, x_l) in solutions.iter_mut().zip(&x_low) {
            x.convert_from(x_l)?;
        }
    }
    multishift.convergence = convergence;
    let mut results = Vec::with_capacity(n);
    for (x, &sigma) in solutions.iter_mut().zip(shifts) {
        let a_high = ShiftedOperator::new(op_high, sigma);
        let a_low = ShiftedOperator::new(op_low, sigma);
        results.push(cg(&a_high, &a_low, b, x, opts)?);
    }
    // Each refinement starts by recomputing the true residual of the multi-shift x_i
    // (absent only when the source was not finite: NaN).
    let before: Vec<f64> = results
        .iter()
        .map(|r| r.history.first().map_or(f64::NAN, |first| first.residual))
        .collect();
    multishift.true_residual = if before.iter().any(|r| r.is_nan()) {
        f64::NAN
    } else {
        before.into_iter().fold(0.0, f64::max)
    };
    multishift.elapsed = start.elapsed();
    Ok(MultiShiftResult {
        multishift,
        shifts: results,
    })
}
