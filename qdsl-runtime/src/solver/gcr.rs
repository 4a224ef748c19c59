//! Flexible GCR(n_kv) with restarts and right preconditioning, in mixed precision.
//!
//! Solves M x = b for a general (non-Hermitian) M with a preconditioner K ≈ M⁻¹ that may
//! change from one application to the next (SAP with data-dependent MR steps). From the
//! residual ρ₀ = r, iteration k (k = 0, 1, …, n_kv − 1 within a cycle) is
//!
//! φ_k = K ρ_k,  χ_k = M φ_k,
//! for l < k:  a_lk = ⟨χ_l, χ_k⟩,  χ_k ← χ_k − a_lk χ_l,  φ_k ← φ_k − a_lk φ_l
//!   (modified Gram–Schmidt, keeping M φ_k = χ_k),
//! b_k = ‖χ_k‖,  χ_k ← χ_k/b_k,  φ_k ← φ_k/b_k,
//! c_k = ⟨χ_k, ρ_k⟩,  x ← x + c_k φ_k,  ρ_{k+1} = ρ_k − c_k χ_k,
//!
//! so that ρ_{k+1} is ρ₀ minus its orthogonal projection on span(χ₀ … χ_k): ‖ρ‖ is
//! minimised over x₀ + span(φ₀ … φ_k) (Saad, *Iterative Methods*, §9.4: the flexible
//! variant stores the φ_k). After n_kv iterations the cycle restarts from the current
//! residual with an empty basis; this is the form of openQCD's `fgcr` (Lüscher).
//!
//! Precision: the iteration runs in L, the solution and the true residual in H
//! (f64): the common driver ([`super::driver`]) replaces ρ by b − M x recomputed in H
//! at reliable updates (δ criterion) and at iterated convergence, keeping the basis
//! (the true and iterated residuals differ by rounding only); convergence is declared
//! on the true residual only. A non-finite or vanishing ‖χ_k‖ (the preconditioner
//! produced NaN/Inf, or K ρ ∈ ker M) is a breakdown: the solve stops with x the last
//! iterate whose true residual was computed, so no NaN ever reaches x.

use super::driver::{Driver, Start, Step};
use super::{
    Breakdown, Convergence, ConvertFrom, LinearOperator, SolveResult, SolverError, SolverField,
    SolverOptions,
};
use crate::linear::real;

/// A (possibly non-linear) preconditioner z = K r on fields of type F.
pub trait Preconditioner<F> {
    /// z ← K r.
    fn apply(&mut self, z: &mut F, r: &F) -> Result<(), SolverError>;
}

/// K = 1: GCR without preconditioning.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl<F: SolverField> Preconditioner<F> for Identity {
    fn apply(&mut self, z: &mut F, r: &F) -> Result<(), SolverError> {
        z.copy_from(r)
    }
}

/// The outcome of [`gcr`]: the solve and its restarts.
#[derive(Clone, Debug, PartialEq)]
pub struct GcrResult {
    /// Convergence, iterations, true residual, history (as for every solver).
    pub result: SolveResult,
    /// Restarts of the GCR cycle (after every n_kv iterations).
    pub restarts: usize,
}

/// Solves M x = b by flexible GCR(`nkv`) right-preconditioned with `precond`, from the
/// guess in `x` (module docs): iteration in L with `op_low`, solution and true residual
/// in H with `op_high`. Options as for every solver ([`SolverOptions`]; one iteration is
/// one application of K and one of M). An error if `nkv` is 0.
pub fn gcr<H, L, OH, OL, P>(
    op_high: &OH,
    op_low: &OL,
    precond: &mut P,
    nkv: usize,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<GcrResult, SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
    OH: LinearOperator<H> + ?Sized,
    OL: LinearOperator<L> + ?Sized,
    P: Preconditioner<L> + ?Sized,
{
    if nkv == 0 {
        return Err(SolverError::operator(super::sap::SapError::Parameter {
            name: "nkv",
            found: "0".into(),
            expected: "at least 1 GCR basis vector",
        }));
    }
    let (mut driver, mut r) = match Driver::<H, L, OH>::start(op_high, b, x, opts)? {
        Start::Done(result) => {
            return Ok(GcrResult {
                result,
                restarts: 0,
            })
        }
        Start::Running {
            driver, residual, ..
        } => (driver, residual),
    };
    // Basis pairs (φ_l, χ_l), χ orthonormal, M φ_l = χ_l.
    let mut basis: Vec<(L, L)> = Vec::with_capacity(nkv);
    let mut restarts = 0;
    let convergence = loop {
        if driver.at_limit() {
            break Convergence::MaxIterations;
        }
        if basis.len() == nkv {
            basis.clear();
            restarts += 1;
        }
        let mut phi = r.zeros_like();
        precond.apply(&mut phi, &r)?;
        let mut chi = r.zeros_like();
        op_low.apply(&mut chi, &phi)?;
        driver.applied(op_low.flops_per_apply());
        for (phi_l, chi_l) in &basis {
            let a = chi_l.dot(&chi)?;
            chi.axpy(-a, chi_l)?;
            phi.axpy(-a, phi_l)?;
        }
        let b2 = chi.norm_sqr()?;
        if !b2.is_finite() {
            let quantity = "‖M K ρ‖² (the preconditioned direction)";
            break Convergence::Breakdown(Breakdown::NonFinite { quantity });
        }
        if b2 == 0.0 {
            let quantity = "‖M K ρ‖² (the preconditioned direction)";
            break Convergence::Breakdown(Breakdown::Zero { quantity });
        }
        let inv_b = real(1.0 / b2.sqrt());
        chi.scale(inv_b);
        phi.scale(inv_b);
        let c = chi.dot(&r)?;
        r.axpy(-c, &chi)?;
        driver.x_low().axpy(c, &phi)?;
        let r2 = r.norm_sqr()?;
        match driver.step(x, &mut r, r2)? {
            Step::Stop(convergence) => break convergence,
            // After a reliable update ρ is the (normalised) true residual, which differs
            // from the iterated one by rounding only: the basis stays (φ and χ are unit
            // directions, independent of the residual's units).
            Step::Continue { .. } => basis.push((phi, chi)),
        }
    };
    Ok(GcrResult {
        result: driver.finish(x, convergence)?,
        restarts,
    })
}
