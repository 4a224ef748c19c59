//! BiCGStab for a general (non-Hermitian) operator M, in mixed precision with reliable
//! updates.

use super::driver::{Driver, Start, Step};
use super::{
    Breakdown, Convergence, ConvertFrom, LinearOperator, SolveResult, SolverError, SolverField,
    SolverOptions,
};
use qdsl_core::Complex;

/// The driver's stagnation patience for BiCGStab (see `Driver::set_patience`): its
/// residual has no minimisation property, and on lat.sample.l8 at κ = 0.155 (f64–f32,
/// converged in ~1400 iterations) it stayed flat for up to 1.65 times the iterations
/// before each stretch (185 after 112); 2 leaves a margin.
const STAGNATION_PATIENCE: usize = 2;

/// r̂₀ ← r, p = v = 0 (the caller resets ρ = α = ω = 1).
fn restart<L: SolverField>(shadow: &mut L, p: &mut L, v: &mut L, r: &L) -> Result<(), SolverError> {
    p.set_zero();
    v.set_zero();
    shadow.copy_from(r)
}

/// Stops the solve on a recurrence scalar that is zero or not finite.
fn check(z: Complex<f64>, quantity: &'static str) -> Option<Convergence> {
    if !(z.re.is_finite() && z.im.is_finite()) {
        Some(Convergence::Breakdown(Breakdown::NonFinite { quantity }))
    } else if z == Complex::new(0.0, 0.0) {
        Some(Convergence::Breakdown(Breakdown::Zero { quantity }))
    } else {
        None
    }
}

/// Solves M x = b by BiCGStab (van der Vorst), from the guess in `x`.
///
/// The recurrence, in the low precision L with `op_low` (r₀ = b − M x₀, shadow r̂₀ = r₀,
/// ρ₀ = α₀ = ω₀ = 1, v₀ = p₀ = 0), for k = 1, 2, …:
///
/// ρ_k = ⟨r̂₀, r_{k−1}⟩,  β = (ρ_k/ρ_{k−1})(α/ω),  p_k = r_{k−1} + β (p_{k−1} − ω v_{k−1}),
/// v_k = M p_k,  α = ρ_k/⟨r̂₀, v_k⟩,  s = r_{k−1} − α v_k,
/// t = M s,  ω = ⟨t, s⟩/⟨t, t⟩,  x ← x + α p_k + ω s,  r_k = s − ω t.
///
/// (When ‖s‖ already meets the tolerance the t half-step is skipped: x ← x + α p_k,
/// r_k = s; should the true residual then miss the tolerance, the recurrence restarts
/// from r.) Two applications of M per iteration. The solution and the true residual
/// live in the high precision H with `op_high`, with reliable updates as in
/// [`cg`](super::cg) (r replaced by b − M x; the shadow r̂₀ and p are kept).
///
/// A Lanczos breakdown — ρ = 0 (or |ρ| ≤ u_L ‖r̂₀‖ ‖r‖, rounding noise) or
/// ⟨r̂₀, v⟩ = 0 — restarts the recurrence with r̂₀ = r (p = v = 0, ρ = α = ω = 1), as
/// happens for point sources on symmetric (e.g. free) fields; if it recurs before an
/// iteration with the new r̂₀ completes, it is reported as
/// [`Breakdown::Zero`]. Stagnation is reported only after twice as many iterations without
/// progress of the true residual as the progress took (its residual is erratic near
/// criticality, and resumes after long flat stretches). Breakdown is also reported when ⟨t, t⟩ or ω is zero or any
/// scalar is not finite; x then holds the last solution whose true residual was
/// computed.
pub fn bicgstab<H, L, OH, OL>(
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
    driver.set_patience(STAGNATION_PATIENCE);
    let mut shadow = r.zeros_like();
    let (mut p, mut v, mut t) = (r.zeros_like(), r.zeros_like(), r.zeros_like());
    let one = Complex::new(1.0, 0.0);
    let (mut rho, mut alpha, mut omega) = (one, one, one);
    // `fresh` while no iteration has used the current r̂₀.
    restart(&mut shadow, &mut p, &mut v, &r)?;
    let mut shadow_norm = r2.sqrt();
    let mut fresh = true;
    let convergence = loop {
        if driver.at_limit() {
            break Convergence::MaxIterations;
        }
        let rho_new = shadow.dot(&r)?;
        // |ρ| at rounding level of ‖r̂₀‖ ‖r‖ counts as zero.
        let rho_floor = L::UNIT_ROUNDOFF * shadow_norm * r2.sqrt();
        let rho_checked = if rho_new.norm() <= rho_floor {
            Complex::new(0.0, 0.0)
        } else {
            rho_new
        };
        let mut stop = check(rho_checked, "ρ = ⟨r̂₀, r⟩");
        if stop.is_none() {
            let beta = (rho_new / rho) * (alpha / omega);
            rho = rho_new;
            p.axpy(-omega, &v)?;
            p.xpay(&r, beta)?;
            op_low.apply(&mut v, &p)?;
            driver.applied(op_low.flops_per_apply());
            let shadow_v = shadow.dot(&v)?;
            stop = check(shadow_v, "⟨r̂₀, v⟩");
            alpha = rho / shadow_v;
        }
        match stop {
            // A Lanczos breakdown with an r̂₀ already iterated on: restart from r.
            Some(Convergence::Breakdown(Breakdown::Zero { .. })) if !fresh => {
                restart(&mut shadow, &mut p, &mut v, &r)?;
                (rho, alpha, omega) = (one, one, one);
                (shadow_norm, fresh) = (r2.sqrt(), true);
                continue;
            }
            Some(stop) => break stop,
            None => {}
        }
        r.axpy(-alpha, &v)?;
        driver.x_low().axpy(alpha, &p)?;
        let s2 = r.norm_sqr()?;
        let mut omega_zero = false;
        let half_step = driver.meets_tolerance(s2);
        if !half_step {
            op_low.apply(&mut t, &r)?;
            driver.applied(op_low.flops_per_apply());
            let t2 = Complex::new(t.norm_sqr()?, 0.0);
            if let Some(stop) = check(t2, "⟨t, t⟩") {
                break stop;
            }
            omega = t.dot(&r)? / t2;
            match check(omega, "ω") {
                Some(Convergence::Breakdown(Breakdown::Zero { .. })) => omega_zero = true,
                Some(stop) => break stop,
                None => {}
            }
            driver.x_low().axpy(omega, &r)?;
            r.axpy(-omega, &t)?;
        }
        let r2_new = r.norm_sqr()?;
        match driver.step(x, &mut r, r2_new)? {
            Step::Stop(convergence) => break convergence,
            Step::Continue { .. } if omega_zero => {
                break Convergence::Breakdown(Breakdown::Zero { quantity: "ω" })
            }
            Step::Continue { r2: next, rescale } => {
                (r2, fresh) = (next, false);
                if let Some(c) = rescale {
                    // p, v and ρ into the units of the replaced r (α, ω are ratios).
                    p.scale(Complex::new(c, 0.0));
                    v.scale(Complex::new(c, 0.0));
                    rho *= c;
                }
            }
        }
        if half_step {
            // ω was not updated: the true residual missed the tolerance after a half
            // step, so start the recurrence afresh from r.
            restart(&mut shadow, &mut p, &mut v, &r)?;
            (rho, alpha, omega) = (one, one, one);
            (shadow_norm, fresh) = (r2.sqrt(), true);
        }
    };
    driver.finish(x, convergence)
}
