//! [`ReducedLs`]: the reduced-Ls preconditioner of MSPCG,
//!
//! z = (T† K̂ T + μ 1) r,
//!
//! for A = M̂†M̂ of Ls slices: T ([`super::Transfer`]) maps r to L̂s < Ls slices, K̂ ≈ Â⁻¹
//! is a preconditioner of the reduced normal operator Â = M̂_L̂s†M̂_L̂s (the same Möbius
//! parameters with L̂s slices; in MSPCG K̂ = Σ_s P_s CG_k(Â_s; P_s ·), the block solves
//! of [`super::MultiSplitting`] on L̂s slices, so every inner iteration costs about
//! L̂s/Ls of the full-Ls one), and μ 1 lifts the directions T annihilates (T† K̂ T has
//! rank 12 L̂s per site out of 12 Ls). T and μ are chosen so that A z ≈ r on the
//! vectors the outer solve has most trouble with ([`super::training`]).
//!
//! z is Hermitian positive definite in r when K̂ is and μ > 0 (⟨r, z⟩ = ⟨Tr, K̂ Tr⟩ +
//! μ‖r‖² > 0); the outer PCG checks ⟨r, z⟩ > 0 anyway and falls back to CG otherwise.

use super::{Preconditioner, Transfer};
use crate::linear::{real, SolverError, SolverField};
use qdsl_core::field::{ColourSpinorField, SpinorLayout};
use qdsl_core::lattice::Lattice5D;
use qdsl_core::Real;

/// z = (T† K̂ T + μ) r (module docs).
#[derive(Debug)]
pub struct ReducedLs<P> {
    transfer: Transfer,
    mu: f64,
    inner: P,
}

impl<P> ReducedLs<P> {
    /// From T, μ and K̂ (a preconditioner on fields of L̂s = `transfer.ls_hat()` slices).
    pub fn new(transfer: Transfer, mu: f64, inner: P) -> Self {
        Self {
            transfer,
            mu,
            inner,
        }
    }

    /// T.
    pub fn transfer(&self) -> &Transfer {
        &self.transfer
    }

    /// μ.
    pub fn mu(&self) -> f64 {
        self.mu
    }

    /// K̂.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

/// The layout of `full` with `ls` slices.
pub fn with_ls(full: &SpinorLayout, ls: usize) -> SpinorLayout {
    let l5 = Lattice5D::new(full.lattice().dims(), ls).expect("Ls ≥ 1 checked by the transfer");
    SpinorLayout::domain_wall(l5, full.subset())
}

pub(crate) fn transfer_error(e: super::TransferError) -> SolverError {
    SolverError::operator(std::io::Error::other(e.to_string()))
}

impl<H: Real, P> Preconditioner<ColourSpinorField<H>> for ReducedLs<P>
where
    P: Preconditioner<ColourSpinorField<H>>,
{
    /// z = T† K̂ T r + μ r.
    fn apply(
        &self,
        z: &mut ColourSpinorField<H>,
        r: &ColourSpinorField<H>,
    ) -> Result<(), SolverError> {
        let layout = with_ls(r.layout(), self.transfer.ls_hat());
        let mut w = ColourSpinorField::<H>::zeros(layout);
        self.transfer.apply(&mut w, r).map_err(transfer_error)?;
        let mut y = ColourSpinorField::<H>::zeros(layout);
        self.inner.apply(&mut y, &w)?;
        self.transfer.apply_dagger(z, &y).map_err(transfer_error)?;
        SolverField::axpy(z, real(self.mu), r)
    }

    /// K̂'s flops (the two site-local transfers are not counted, as vector operations
    /// are not).
    fn flops_per_apply(&self) -> u64 {
        self.inner.flops_per_apply()
    }
}
