//! Conjugate gradient for a Hermitian positive-definite operator A, in mixed precision
//! with reliable updates.

use super::driver::{Driver, Start, Step};
use super::{
    Breakdown, Convergence, ConvertFrom, LinearOperator, SolveResult, SolverError, SolverField,
    SolverOptions,
};
use crate::linear::real;

/// Solves A x = b for a Hermitian positive-definite A by conjugate gradients, starting
/// from the guess in `x` (x = 0 for none).
///
/// The recurrence, in the low precision L with `op_low` (k = 0, 1, …; r₀ = p₀ = b − A x₀):
///
/// α_k = ‖r_k‖²/⟨p_k, A p_k⟩,  x_L ← x_L + α_k p_k,  r_{k+1} = r_k − α_k A p_k,
/// β_k = ‖r_{k+1}‖²/‖r_k‖²  (Fletcher–Reeves), or with
/// [`SolverOptions::polak_ribiere`] β_k = max(0, ⟨r_{k+1}, r_{k+1} − r_k⟩/‖r_k‖²),
/// p_{k+1} = r_{k+1} + β_k p_k.
///
/// The solution and the true residual live in the high precision H with `op_high`
/// (reliable updates, [`SolverOptions::reliable_delta`]). After a reliable update the
/// search direction is re-projected, p ← p − (⟨r, p⟩/‖r‖²) r, restoring ⟨r, p⟩ = 0,
/// which the replacement of r had broken, and β_k = ‖r_true‖²/‖r_k‖² for that step
/// (Fletcher–Reeves with the true residual). For a pure solve pass the same precision
/// (and operator) twice.
///
/// Stops on ‖b − A x‖ ≤ tolerance · ‖b‖ (the true residual, recomputed in H), the
/// iteration limit, stagnation, or breakdown (a non-finite value, or
/// ⟨p, A p⟩ ≤ 0: A is not positive definite); x then holds the last solution whose
/// true residual was computed (after a breakdown, the one before the breakdown).
/// Refuses tolerances the precisions cannot reach ([`SolverOptions::check`]).
pub fn cg<H, L, OH, OL>(
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
    let (mut driver, mut r, mut r2) = match Driver::<H, L, OH>::start(op_high, b, x, opts)? {
        Start::Done(result) => return Ok(result),
        Start::Running {
            driver,
            residual,
            r2,
        } => (driver, residual, r2),
    };
    let mut p = r.zeros_like();
    p.copy_from(&r)?;
    let mut ap = r.zeros_like();
    let mut r_old = opts.polak_ribiere.then(|| r.zeros_like());
    let convergence = loop {
        if driver.at_limit() {
            break Convergence::MaxIterations;
        }
        op_low.apply(&mut ap, &p)?;
        driver.applied(op_low.flops_per_apply());
        let p_ap = p.dot(&ap)?.re;
        if !p_ap.is_finite() {
            let quantity = "⟨p, A p⟩";
            break Convergence::Breakdown(Breakdown::NonFinite { quantity });
        }
        if p_ap <= 0.0 {
            break Convergence::Breakdown(Breakdown::NotPositiveDefinite);
        }
        let alpha = r2 / p_ap;
        if let Some(r_old) = r_old.as_mut() {
            r_old.copy_from(&r)?;
        }
        r.axpy(real(-alpha), &ap)?;
        driver.x_low().axpy(real(alpha), &p)?;
        let r2_new = r.norm_sqr()?;
        let beta = match driver.step(x, &mut r, r2_new)? {
            Step::Stop(convergence) => break convergence,
            Step::Continue {
                r2: r2_true,
                rescale: Some(c),
            } => {
                // p into the new units, then orthogonal to the replaced r.
                p.scale(real(c));
                let rp = r.dot(&p)?;
                p.axpy(-rp / r2_true, &r)?;
                let beta = r2_true / (r2 * c * c);
                r2 = r2_true;
                beta
            }
            Step::Continue { rescale: None, .. } => {
                let beta = match &r_old {
                    Some(r_old) => ((r2_new - r_old.dot(&r)?.re) / r2).max(0.0),
                    None => r2_new / r2,
                };
                r2 = r2_new;
                beta
            }
        };
        p.xpay(&r, real(beta))?;
    };
    driver.finish(x, convergence)
}
