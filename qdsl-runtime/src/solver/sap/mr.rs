//! Minimal-residual (MR) iteration on all blocks of one colour at once, each block with
//! its own coefficients and its own stopping decision.
//!
//! For a block Λ with Dirichlet operator M_Λ and right-hand side ρ_Λ, from δ = 0,
//! r = ρ_Λ, one MR step is
//!
//! q = M_Λ r,  α = ⟨q, r⟩/‖q‖²,  δ ← δ + α r,  r ← r − α q,
//!
//! which minimises ‖r − α q‖ over α: ‖r_new‖² = ‖r‖² − |⟨q, r⟩|²/‖q‖² ≤ ‖r‖². q is
//! computed for every block of the colour by one application of P_c M P_c
//! ([`super::blocks`]).
//!
//! Static: every block does `nmr` steps. Adaptive (Gruber et al., openQ*D): `nmr` is a
//! maximum and a block stops after a step at which
//! 1. at least `min_steps` steps are done and ‖r_new‖ > `stall_fraction` · ‖r_old‖
//!    (it no longer converges usefully),
//! 2. ‖r_new‖ > ‖r_old‖ (rounding made it grow), or
//! 3. ‖r_new‖ ≤ `tolerance` (the block residual is negligible for the outer solve), or
//! 4. ‖r_new‖ ≤ `relative_tolerance` · ‖r_0‖ (the block solve reached the relative accuracy asked
//!    of it; r_0 = ρ_Λ). Criteria 1–3 are Gruber et al.'s; 4 lets the block size set the
//!    step count: MR on a small block lowers its residual faster per step, so it gets
//!    there in fewer steps than on a large one.

use super::blocks::{Colour, Reduction, SchwarzBlocks};
use super::Rounding;
use crate::linear::{LinearOperator, SolverError, SolverField};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::{Complex, Real};

/// When the MR iteration on a block stops early (the adaptive variant).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrStopping {
    /// Criterion 1 applies from this many steps on (k).
    pub min_steps: usize,
    /// Criterion 1: stop when ‖r_new‖ > this fraction of ‖r_old‖.
    pub stall_fraction: f64,
    /// Criterion 3: stop when ‖r_new‖ ≤ this absolute block residual.
    pub tolerance: f64,
    /// Criterion 4: stop when ‖r_new‖ ≤ this fraction of the block's starting residual
    /// (0: never).
    pub relative_tolerance: f64,
}

/// The outcome of one MR solve on the blocks of a colour.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct MrWork {
    /// MR steps summed over the blocks (a block that stopped no longer counts).
    pub block_steps: usize,
    /// Applications of P_c M P_c (one per step while any block is active).
    pub applications: usize,
}

/// The approximate block solves of colour `c`: δ with M_Λ δ ≈ ρ_Λ on every block Λ of
/// colour `c` (δ zero elsewhere), by at most `nmr` MR steps per block, stopping early
/// per `stopping` (module docs). `rho` is read on the blocks of colour `c` only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_blocks<T: Real, O: LinearOperator<ColourSpinorField<T>>>(
    op: &O,
    blocks: &SchwarzBlocks,
    c: Colour,
    rho: &ColourSpinorField<T>,
    delta: &mut ColourSpinorField<T>,
    nmr: usize,
    stopping: Option<&MrStopping>,
    reduction: Reduction,
    rounding: Option<Rounding<T>>,
) -> Result<MrWork, SolverError> {
    let round = |f: &mut ColourSpinorField<T>| {
        if let Some(r) = rounding {
            r(f)
        }
    };
    delta.set_zero();
    let mut r = rho.clone();
    blocks.mask(&mut r, c);
    let mut q = r.zeros_like();
    let n = blocks.num_blocks();
    let mut active: Vec<bool> = (0..n).map(|b| blocks.colour(b) == c).collect();
    let mut r2 = blocks.norms(&r, reduction);
    let start: Vec<f64> = r2.iter().map(|r2| r2.sqrt()).collect();
    // A block already below the tolerance (criterion 3) needs no step.
    let tolerance = stopping.map_or(0.0, |s| s.tolerance);
    for (a, r2) in active.iter_mut().zip(&r2) {
        *a &= *r2 > 0.0 && r2.is_finite() && r2.sqrt() > tolerance;
    }
    let mut work = MrWork::default();
    for step in 1..=nmr {
        if !active.iter().any(|&a| a) {
            break;
        }
        op.apply(&mut q, &r)?;
        blocks.mask(&mut q, c);
        round(&mut q);
        work.applications += 1;
        let qr = blocks.dots(&q, &r, reduction);
        let qq = blocks.norms(&q, reduction);
        let alpha: Vec<Complex<f64>> = (0..n)
            .map(|b| {
                let a = qr[b] / qq[b];
                if active[b] && a.re.is_finite() && a.im.is_finite() {
                    a
                } else {
                    Complex::new(0.0, 0.0)
                }
            })
            .collect();
        blocks.axpy(delta, &alpha, &r);
        round(delta);
        let minus: Vec<Complex<f64>> = alpha.iter().map(|a| -a).collect();
        blocks.axpy(&mut r, &minus, &q);
        round(&mut r);
        let r2_new = blocks.norms(&r, reduction);
        for b in 0..n {
            if !active[b] {
                continue;
            }
            work.block_steps += 1;
            let (old, new) = (r2[b].sqrt(), r2_new[b].sqrt());
            if alpha[b] == Complex::new(0.0, 0.0) || !new.is_finite() {
                active[b] = false;
            } else if let Some(s) = stopping {
                let stalled = step >= s.min_steps && new > s.stall_fraction * old;
                let accurate = new <= s.relative_tolerance * start[b];
                if stalled || new > old || new <= s.tolerance || accurate {
                    active[b] = false;
                }
            }
        }
        r2 = r2_new;
    }
    Ok(work)
}
