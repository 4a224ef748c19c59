//! Lüscher's Schwarz alternating procedure (SAP, hep-lat/0310048) as a preconditioner
//! of the full-lattice Wilson(-clover) operator, static or adaptive (Gruber et al.,
//! openQ*D).
//!
//! The lattice is tiled by blocks coloured black and white ([`blocks`]); M_Λ is M
//! restricted to block Λ with Dirichlet boundaries (hops leaving Λ dropped). One
//! application z = K η runs `ncy` Schwarz cycles from z = 0, ρ = η:
//!
//! for each colour c ∈ (black, white):
//!   δ_Λ ≈ M_Λ⁻¹ ρ_Λ on every block Λ of colour c (`nmr` MR steps, [`mr`]),
//!   z ← z + δ,  ρ ← ρ − M δ,
//!
//! so ρ = η − M z throughout (the multiplicative Schwarz method: each colour sees the
//! residual the other just left). With exact block solves one cycle is a block
//! Gauss–Seidel sweep of the two colours; on a one-block lattice it is M⁻¹. K depends
//! on η non-linearly once the MR steps are data-dependent, so the outer solver must be
//! flexible ([`crate::solver::gcr`]).
//!
//! Adaptive ([`AdaptiveSap`]): `ncy` and `nmr` are maxima. The cycle phase ends after a
//! cycle j that does not lower the residual norm, in the sense
//!
//! ‖ρ_j‖ ≥ γ_cy · ‖ρ_{j−1}‖  (ρ_0 = η),
//!
//! γ_cy ∈ (0, 1] the cycle fraction ([`AdaptiveSap::cycle_fraction`]): a cycle that
//! leaves more than γ_cy of the residual did not lower it by the factor that makes a
//! further cycle worth its cost — from then on the outer GCR, which minimises over all
//! directions so far, lowers the residual more cheaply than the stationary Schwarz
//! iteration. γ_cy = 1 is the literal rule "the norm did not decrease", which never fires
//! in practice: the recursively updated ρ decreases in every cycle (each block's MR step
//! minimises its block residual), by a factor that approaches the Schwarz iteration's
//! asymptotic rate (docs/sap_gcr.md).
//! The MR iteration of each block stops by the criteria of [`mr::MrStopping`], its
//! tolerance being τ · ‖η‖ / N_blocks with τ the outer (GCR) tolerance (a block residual
//! below it cannot matter for the outer solve) and its relative tolerance
//! [`AdaptiveSap::block_tolerance`]: each block solve is done once it has lowered its
//! residual by that factor, which takes fewer MR steps on small blocks than on large
//! ones (docs/sap_gcr.md, 2026-11-29).
//!
//! Precisions: the block arithmetic runs in the field precision T (f64 or f32); the block
//! vectors (z, ρ, δ, r, q) can additionally be rounded through a 16-bit (or other)
//! storage format after every write ([`Sap::with_storage`], f64 arithmetic); the block
//! reductions accumulate in f64 or f32 ([`Reduction`]). The outer solver's precision is
//! its own: the preconditioner converts η in and z out.
//!
//! Work: P_c M P_c is applied as M on a field that is zero off colour c, then masked, so
//! every MR step costs one M application here; [`SapStats::work`] counts instead what a
//! block-local implementation costs, in units of one M application on the lattice: an MR
//! step on block Λ is |Λ|/V, a residual update ρ ← ρ − M δ is ½.

pub mod blocks;
pub mod mr;

use super::gcr::Preconditioner;
use crate::linear::{real, ConvertFrom, LinearOperator, SolverError, SolverField};
use crate::solver::quantized::{round_through, SpinorStorage};
pub use blocks::{Colour, Reduction, SchwarzBlocks};
pub use mr::MrStopping;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::Real;

/// A bad SAP (or SAP+GCR) configuration.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SapError {
    /// The blocks do not tile the lattice in a colourable way.
    #[error("SAP blocks {block:?}: {reason}")]
    Blocks {
        /// The block extents asked for.
        block: [usize; 4],
        /// Why they were refused.
        reason: String,
    },
    /// A parameter out of range.
    #[error("solver parameter {name} = {found}: expected {expected}")]
    Parameter {
        /// Its name.
        name: &'static str,
        /// The value given.
        found: String,
        /// What is allowed.
        expected: &'static str,
    },
}

/// Rounds a field through a storage format after a write (emulated low-precision
/// storage of the block vectors).
pub type Rounding<T> = fn(&mut ColourSpinorField<T>);

/// The parameters of the adaptive variant (Gruber et al.).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveSap {
    /// MR criterion 1 applies after this many steps (k).
    pub min_steps: usize,
    /// MR criterion 1: a block stops when a step leaves more than this fraction of its
    /// residual.
    pub stall_fraction: f64,
    /// The outer tolerance τ; the block tolerance is τ ‖η‖/N_blocks (criterion 3).
    pub outer_tolerance: f64,
    /// γ_cy: the cycle phase ends after a cycle with ‖ρ_j‖ ≥ γ_cy ‖ρ_{j−1}‖ (module docs;
    /// 1: only when the norm did not decrease at all).
    pub cycle_fraction: f64,
    /// MR criterion 4: a block stops once its residual is below this fraction of the
    /// residual it started from (0: never).
    pub block_tolerance: f64,
}

impl Default for AdaptiveSap {
    /// k = 2, MR fraction 0.9, block tolerance 0.2, τ = 1e-10, γ_cy = 0.5 (the study in
    /// docs/sap_gcr.md, 2026-11-29: 1.03–1.14× the work of the best static setting on 2⁴
    /// and 4⁴ blocks, maxima (4, 4) and (8, 8), at a well-conditioned and a near-critical
    /// κ; the static settings span 1.00–2.26×).
    fn default() -> Self {
        Self {
            min_steps: 2,
            stall_fraction: 0.9,
            outer_tolerance: 1e-10,
            cycle_fraction: 0.5,
            block_tolerance: 0.2,
        }
    }
}

/// The parameters of SAP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SapParams {
    /// Block extents (x, y, z, t).
    pub block: [usize; 4],
    /// Schwarz cycles per application (the maximum when adaptive).
    pub ncy: usize,
    /// MR steps per block solve (the maximum when adaptive).
    pub nmr: usize,
    /// The adaptive stopping rules, or `None` for static SAP.
    pub adaptive: Option<AdaptiveSap>,
    /// The precision of the block reductions.
    pub reduction: Reduction,
}

impl Default for SapParams {
    /// 4⁴ blocks, ncy = 4, nmr = 4, static, f64 reductions (openQCD's usual choice).
    fn default() -> Self {
        Self {
            block: [4; 4],
            ncy: 4,
            nmr: 4,
            adaptive: None,
            reduction: Reduction::F64,
        }
    }
}

impl SapParams {
    /// Refuses ncy = 0, nmr = 0 and adaptive parameters out of range.
    pub fn check(&self) -> Result<(), SapError> {
        let bad = |name, found: String, expected| {
            Err(SapError::Parameter {
                name,
                found,
                expected,
            })
        };
        if self.ncy == 0 {
            return bad("ncy", "0".into(), "at least 1");
        }
        if self.nmr == 0 {
            return bad("nmr", "0".into(), "at least 1");
        }
        if let Some(a) = self.adaptive {
            if !(a.stall_fraction > 0.0 && a.stall_fraction <= 1.0) {
                return bad("stall_fraction", a.stall_fraction.to_string(), "in (0, 1]");
            }
            if !(a.cycle_fraction > 0.0 && a.cycle_fraction <= 1.0) {
                return bad("cycle_fraction", a.cycle_fraction.to_string(), "in (0, 1]");
            }
            if !(0.0..1.0).contains(&a.block_tolerance) {
                return bad(
                    "block_tolerance",
                    a.block_tolerance.to_string(),
                    "in [0, 1)",
                );
            }
            if !(a.outer_tolerance.is_finite() && a.outer_tolerance > 0.0) {
                let found = a.outer_tolerance.to_string();
                return bad("outer_tolerance", found, "positive and finite");
            }
        }
        Ok(())
    }
}

/// What the preconditioner did, summed over its applications.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SapStats {
    /// Applications z = K η.
    pub applications: usize,
    /// Schwarz cycles done.
    pub cycles: usize,
    /// MR steps summed over blocks.
    pub mr_block_steps: usize,
    /// Applications of M made (masked block operators and residual updates).
    pub operator_applications: usize,
    /// The work of a block-local implementation in units of one M application on the
    /// lattice (module docs).
    pub work: f64,
}

/// The SAP preconditioner K ≈ M⁻¹ for an operator `O` on full-lattice fields of
/// precision T (module docs).
pub struct Sap<T: Real, O> {
    op: O,
    blocks: SchwarzBlocks,
    params: SapParams,
    rounding: Option<Rounding<T>>,
    stats: SapStats,
}

impl<T: Real, O: LinearOperator<ColourSpinorField<T>>> Sap<T, O> {
    /// SAP for `op` (the full-lattice operator on `lattice`, e.g.
    /// [`crate::operator::FullClover`]) with `params`.
    pub fn new(
        op: O,
        lattice: qdsl_core::lattice::Lattice,
        params: SapParams,
    ) -> Result<Self, SapError> {
        params.check()?;
        Ok(Self {
            op,
            blocks: SchwarzBlocks::new(lattice, params.block)?,
            params,
            rounding: None,
            stats: SapStats::default(),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SapParams {
        &self.params
    }

    /// The blocks.
    pub fn blocks(&self) -> &SchwarzBlocks {
        &self.blocks
    }

    /// The work done so far.
    pub fn stats(&self) -> SapStats {
        self.stats
    }

    /// Sets the outer tolerance the adaptive block tolerance derives from (no effect on
    /// static SAP).
    pub fn set_outer_tolerance(&mut self, tolerance: f64) {
        if let Some(a) = self.params.adaptive.as_mut() {
            a.outer_tolerance = tolerance;
        }
    }

    /// z = K η: the Schwarz cycles from z = 0 (module docs).
    pub fn precondition(
        &mut self,
        z: &mut ColourSpinorField<T>,
        eta: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        let round = |f: &mut ColourSpinorField<T>, r: Option<Rounding<T>>| {
            if let Some(r) = r {
                r(f)
            }
        };
        let n_blocks = self.blocks.num_blocks();
        let block_fraction = self.blocks.decomposition().block_volume() as f64
            / self.blocks.layout().lattice().volume() as f64;
        z.set_zero();
        let mut rho = eta.clone();
        round(&mut rho, self.rounding);
        let mut delta = rho.zeros_like();
        let mut m_delta = rho.zeros_like();
        let eta_norm = eta.norm_sqr().sqrt();
        let stopping = self.params.adaptive.map(|a| MrStopping {
            min_steps: a.min_steps,
            stall_fraction: a.stall_fraction,
            tolerance: a.outer_tolerance * eta_norm / n_blocks as f64,
            relative_tolerance: a.block_tolerance,
        });
        let mut previous = eta_norm;
        self.stats.applications += 1;
        for _ in 0..self.params.ncy {
            for c in Colour::CYCLE {
                let work = mr::solve_blocks(
                    &self.op,
                    &self.blocks,
                    c,
                    &rho,
                    &mut delta,
                    self.params.nmr,
                    stopping.as_ref(),
                    self.params.reduction,
                    self.rounding,
                )?;
                SolverField::axpy(z, real(1.0), &delta)?;
                round(z, self.rounding);
                self.op.apply(&mut m_delta, &delta)?;
                SolverField::axpy(&mut rho, real(-1.0), &m_delta)?;
                round(&mut rho, self.rounding);
                self.stats.mr_block_steps += work.block_steps;
                self.stats.operator_applications += work.applications + 1;
                self.stats.work += work.block_steps as f64 * block_fraction + 0.5;
            }
            self.stats.cycles += 1;
            if let Some(a) = self.params.adaptive {
                let now = rho.norm_sqr().sqrt();
                if now.is_nan() || now >= a.cycle_fraction * previous {
                    break;
                }
                previous = now;
            }
        }
        Ok(())
    }
}

impl<T: Real, O> Sap<T, O> {
    /// The same SAP with its block vectors (z, ρ, δ, r, q) passed through `rounding`
    /// after every write (`None`: kept in T).
    pub fn with_rounding(self, rounding: Option<Rounding<T>>) -> Self {
        Self { rounding, ..self }
    }
}

impl<O: LinearOperator<ColourSpinorField<f64>>> Sap<f64, O> {
    /// The same SAP with its block vectors rounded through storage format `S` after every
    /// write (f64 arithmetic on values representable in `S`).
    pub fn with_storage<S: SpinorStorage>(self) -> Self {
        self.with_rounding(Some(round_through::<S>))
    }
}

impl<T, O, F> Preconditioner<F> for Sap<T, O>
where
    T: Real,
    O: LinearOperator<ColourSpinorField<T>>,
    F: SolverField + ConvertFrom<ColourSpinorField<T>>,
    ColourSpinorField<T>: ConvertFrom<F>,
{
    /// z = K r, r converted into T and z back into the outer precision.
    fn apply(&mut self, z: &mut F, r: &F) -> Result<(), SolverError> {
        let eta = ColourSpinorField::<T>::converted(r);
        let mut z_t = eta.zeros_like();
        self.precondition(&mut z_t, &eta)?;
        z.convert_from(&z_t)
    }
}

#[cfg(test)]
mod tests;
