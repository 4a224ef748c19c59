//! [`pcg`]: flexible preconditioned CG (Polak–Ribière β) with reliable updates, and the
//! fallback to plain CG when the preconditioner breaks down.

use super::Preconditioner;
use crate::linear::real;
use crate::solver::driver::{Driver, Start, Step};
use crate::solver::{
    cg, Breakdown, Convergence, ConvertFrom, LinearOperator, ResidualRecord, SolveResult,
    SolverError, SolverField, SolverOptions,
};
use std::fmt;

/// Why the preconditioner was abandoned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PreconditionerFault {
    /// z = P r has a NaN or infinite component.
    NonFinite,
    /// ⟨r, z⟩ ≤ 0 (or not finite): P is not positive definite on this r.
    NotPositive {
        /// ⟨r, z⟩ (real part).
        rz: f64,
    },
}

impl fmt::Display for PreconditionerFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite => f.write_str("z = P r is not finite"),
            Self::NotPositive { rz } => write!(f, "⟨r, z⟩ = {rz:e} ≤ 0"),
        }
    }
}

/// A preconditioner breakdown: when and why, and the preconditioned solve's history up
/// to it.
#[derive(Clone, Debug, PartialEq)]
pub struct PreconditionerBreakdown {
    /// Outer iterations done when z was found bad.
    pub iteration: usize,
    /// What was wrong.
    pub fault: PreconditionerFault,
    /// The history of the preconditioned solve up to the breakdown (true residual of
    /// the iterate the fallback starts from last).
    pub history: Vec<ResidualRecord>,
}

/// The outcome of [`pcg`].
#[derive(Clone, Debug, PartialEq)]
pub struct PcgResult {
    /// The whole solve: iterations and history of the preconditioned part, followed by
    /// those of the plain-CG fallback if there was one (its iterations numbered on).
    pub result: SolveResult,
    /// Outer iterations with the preconditioner.
    pub preconditioned_iterations: usize,
    /// Preconditioner applications and their flops.
    pub preconditioner_applications: usize,
    /// Flops of those applications.
    pub preconditioner_flops: u64,
    /// Set when the preconditioner broke down and the solve went on with plain CG.
    pub breakdown: Option<PreconditionerBreakdown>,
}

/// z ← P r; the fault if z is not finite or ⟨r, z⟩ ≤ 0, else ⟨r, z⟩.
fn precondition<L: SolverField, P: Preconditioner<L> + ?Sized>(
    precond: &P,
    z: &mut L,
    r: &L,
) -> Result<Result<f64, PreconditionerFault>, SolverError> {
    precond.apply(z, r)?;
    if !z.norm_sqr()?.is_finite() {
        return Ok(Err(PreconditionerFault::NonFinite));
    }
    let rz = r.dot(z)?.re;
    if rz.is_finite() && rz > 0.0 {
        Ok(Ok(rz))
    } else {
        Ok(Err(PreconditionerFault::NotPositive { rz }))
    }
}

/// Solves A x = b for a Hermitian positive-definite A by preconditioned CG with the
/// preconditioner P (z = P r ≈ A⁻¹ r, which may be nonlinear: a fixed number of inner
/// iterations), starting from the guess in `x`. With r₀ = b − A x₀, z₀ = P r₀, p₀ = z₀:
///
/// α_k = ⟨r_k, z_k⟩/⟨p_k, A p_k⟩,  x ← x + α_k p_k,  r_{k+1} = r_k − α_k A p_k,
/// z_{k+1} = P r_{k+1},  β_k = ⟨z_{k+1}, r_{k+1} − r_k⟩/⟨z_k, r_k⟩
/// (Polak–Ribière: the flexible CG that tolerates a varying P),
/// p_{k+1} = z_{k+1} + β_k p_k.
///
/// With r_{k+1} − r_k = −α_k A p_k this β is −⟨z_{k+1}, A p_k⟩/⟨p_k, A p_k⟩, the
/// coefficient that makes p_{k+1} A-orthogonal to p_k (Notay's flexible CG with one
/// kept direction), whatever its sign. It is not clamped at 0 as in nonlinear CG: the
/// clamp would throw that A-orthogonality away whenever a varying P makes β negative.
/// p_{k+1} stays a descent direction either way: ⟨r_{k+1}, p_k⟩ = 0, so
/// ⟨r_{k+1}, p_{k+1}⟩ = ⟨r_{k+1}, z_{k+1}⟩ > 0. (On the MSPCG studies of docs/mspcg.md
/// the clamp never acted: 8⁴ and 24⁴ solves take the same iterations with and without.)
///
/// With `opts.flexible_directions` = m > 1 (Notay's FCG(m)) the new direction is made
/// A-orthogonal to the last m directions, not only the last one:
///
/// p_{k+1} = z_{k+1} − Σ_{j = k−m+1}^{k} (Re⟨A p_j, z_{k+1}⟩/⟨p_j, A p_j⟩) p_j,
/// α_k = Re⟨r_k, p_k⟩/⟨p_k, A p_k⟩,
///
/// for m more dot products and 2m fields (p_j and A p_j); the coefficients do not depend
/// on the scale of the kept p_j, so a reliable update's rescaling leaves them alone. With
/// a fixed linear preconditioner it is PCG; with an iteration-dependent one (a few
/// inner iterations) it keeps the conjugacy that the one-direction recurrence loses.
///
/// The iteration runs in L with `op_low`, the solution and true residual in H with
/// `op_high`, through reliable updates exactly as [`cg`] (after one, r is the
/// normalized true residual and p, r_k and ⟨z_k, r_k⟩ are carried into its units).
///
/// Robustness: if z is not finite or ⟨r, z⟩ ≤ 0, the breakdown is recorded
/// ([`PcgResult::breakdown`], with the history so far), x keeps the last iterate (all
/// of whose updates were finite), and the solve continues from it with plain [`cg`]
/// (the options' β) for the remaining iterations. No NaN reaches x: a non-finite
/// quantity of the outer recurrence itself ends the solve with x at its last check.
pub fn pcg<H, L, OH, OL, P>(
    op_high: &OH,
    op_low: &OL,
    precond: &P,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<PcgResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
    P: Preconditioner<L> + ?Sized,
{
    let mut out = PcgResult {
        result: SolveResult::zero_source(),
        preconditioned_iterations: 0,
        preconditioner_applications: 0,
        preconditioner_flops: 0,
        breakdown: None,
    };
    let (mut driver, mut r, _) = match Driver::<H, L, OH>::start(op_high, b, x, opts)? {
        Start::Done(result) => {
            out.result = result;
            return Ok(out);
        }
        Start::Running {
            driver,
            residual,
            r2,
        } => (driver, residual, r2),
    };
    let mut z = r.zeros_like();
    let count = |out: &mut PcgResult| {
        out.preconditioner_applications += 1;
        out.preconditioner_flops += precond.flops_per_apply();
    };
    count(&mut out);
    let mut fault = precondition(precond, &mut z, &r)?.err();
    let mut rz = match fault {
        None => r.dot(&z)?.re,
        Some(_) => 0.0,
    };
    let mut p = r.zeros_like();
    p.copy_from(&z)?;
    let mut ap = r.zeros_like();
    let mut r_old = r.zeros_like();
    let mut kept = KeptDirections::new(opts.flexible_directions);
    let convergence = loop {
        if fault.is_some() {
            break None;
        }
        if driver.at_limit() {
            break Some(Convergence::MaxIterations);
        }
        op_low.apply(&mut ap, &p)?;
        driver.applied(op_low.flops_per_apply());
        let p_ap = p.dot(&ap)?.re;
        if !p_ap.is_finite() {
            let quantity = "⟨p, A p⟩";
            break Some(Convergence::Breakdown(Breakdown::NonFinite { quantity }));
        }
        if p_ap <= 0.0 {
            break Some(Convergence::Breakdown(Breakdown::NotPositiveDefinite));
        }
        let alpha = rz / p_ap;
        kept.push(&p, &ap, p_ap)?;
        r_old.copy_from(&r)?;
        r.axpy(real(-alpha), &ap)?;
        driver.x_low().axpy(real(alpha), &p)?;
        let r2_new = r.norm_sqr()?;
        match driver.step(x, &mut r, r2_new)? {
            Step::Stop(convergence) => break Some(convergence),
            Step::Continue {
                rescale: Some(c), ..
            } => {
                p.scale(real(c));
                r_old.scale(real(c));
                rz *= c * c;
            }
            Step::Continue { rescale: None, .. } => {}
        }
        count(&mut out);
        match precondition(precond, &mut z, &r)? {
            Ok(rz_new) if kept.capacity == 1 => {
                let beta = (rz_new - z.dot(&r_old)?.re) / rz;
                rz = rz_new;
                p.xpay(&z, real(beta))?;
            }
            Ok(_) => {
                kept.orthogonalize(&mut p, &z)?;
                // α's numerator ⟨r, p⟩ (= ⟨r, z⟩ only where r ⟂ every kept p_j).
                rz = r.dot(&p)?.re;
                if !(rz.is_finite() && rz > 0.0) {
                    fault = Some(PreconditionerFault::NotPositive { rz });
                }
            }
            Err(f) => fault = Some(f),
        }
    };
    match (convergence, fault) {
        (Some(convergence), _) => {
            out.result = driver.finish(x, convergence)?;
            out.preconditioned_iterations = out.result.iterations;
            Ok(out)
        }
        (None, Some(fault)) => fall_back(driver, x, op_high, op_low, b, opts, out, fault),
        (None, None) => unreachable!("the loop leaves with an outcome or a fault"),
    }
}

/// The last search directions p_j of FCG(m), with A p_j and ⟨p_j, A p_j⟩ (none kept
/// for m = 1: the Polak–Ribière recurrence needs only r_k).
pub(super) struct KeptDirections<L> {
    /// m.
    capacity: usize,
    /// Oldest first.
    entries: std::collections::VecDeque<(L, L, f64)>,
}

impl<L: SolverField> KeptDirections<L> {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: std::collections::VecDeque::with_capacity(capacity),
        }
    }

    /// Keeps p, A p and ⟨p, A p⟩ (m > 1), dropping the oldest beyond m and reusing its
    /// fields.
    pub(super) fn push(&mut self, p: &L, ap: &L, p_ap: f64) -> Result<(), SolverError> {
        if self.capacity == 1 {
            return Ok(());
        }
        let (mut kp, mut kap) = match self.entries.len() == self.capacity {
            true => {
                let (kp, kap, _) = self.entries.pop_front().expect("m > 1 entries");
                (kp, kap)
            }
            false => (p.zeros_like(), p.zeros_like()),
        };
        kp.copy_from(p)?;
        kap.copy_from(ap)?;
        self.entries.push_back((kp, kap, p_ap));
        Ok(())
    }

    /// p ← z − Σ_j (Re⟨A p_j, z⟩/⟨p_j, A p_j⟩) p_j over the kept directions.
    pub(super) fn orthogonalize(&self, p: &mut L, z: &L) -> Result<(), SolverError> {
        let coefficients = self
            .entries
            .iter()
            .map(|(_, kap, p_ap)| Ok(kap.dot(z)?.re / p_ap))
            .collect::<Result<Vec<f64>, SolverError>>()?;
        p.copy_from(z)?;
        for ((kp, _, _), c) in self.entries.iter().zip(coefficients) {
            p.axpy(real(-c), kp)?;
        }
        Ok(())
    }
}

/// After a preconditioner fault: keep the iterate (x_L folded into x: every update of
/// it was finite), record the breakdown, then plain CG from x for the iterations left.
#[allow(clippy::too_many_arguments)]
fn fall_back<H, L, OH, OL>(
    driver: Driver<'_, H, L, OH>,
    x: &mut H,
    op_high: &OH,
    op_low: &OL,
    b: &H,
    opts: &SolverOptions,
    mut out: PcgResult,
    fault: PreconditionerFault,
) -> Result<PcgResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
{
    // finish() with a non-breakdown outcome folds x_L and recomputes the true residual.
    let first = driver.finish(x, Convergence::MaxIterations)?;
    let done = first.iterations;
    out.preconditioned_iterations = done;
    out.breakdown = Some(PreconditionerBreakdown {
        iteration: done,
        fault,
        history: first.history.clone(),
    });
    let rest = SolverOptions {
        max_iterations: opts.max_iterations.saturating_sub(done),
        ..opts.clone()
    };
    let second = cg(op_high, op_low, b, x, &rest)?;
    let mut history = first.history;
    history.extend(second.history.iter().map(|h| ResidualRecord {
        iteration: h.iteration + done,
        ..*h
    }));
    out.result = SolveResult {
        convergence: second.convergence,
        iterations: done + second.iterations,
        reliable_updates: first.reliable_updates + second.reliable_updates,
        true_residual: second.true_residual,
        elapsed: first.elapsed + second.elapsed,
        operator_applications: first.operator_applications + second.operator_applications,
        operator_flops: first.operator_flops + second.operator_flops,
        history,
    };
    Ok(out)
}
