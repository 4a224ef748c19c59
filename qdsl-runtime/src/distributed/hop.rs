//! The distributed host hop: a generated CPU hop kernel applied on every rank's extended
//! lattice after the halo exchange (see [`super`] for why the result is bit-identical to
//! the single-process operator).

use super::{exchange_halos, zero_halo_sites};
use crate::comm::CommError;
use crate::operator::cpu::HostHop;
use qdsl_core::dsl::variant::{TimeBoundary, Variant};
use qdsl_core::dsl::DslError;
use qdsl_core::field::distributed::DistributionError;
use qdsl_core::field::{ColourSpinorField, SiteSubset};
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, HaloShape};
use thiserror::Error;

/// What went wrong applying a distributed operator.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DistributedError {
    /// Communication failed (timeouts name the peer).
    #[error(transparent)]
    Comm(#[from] CommError),
    /// Scattering, gathering or a face buffer went wrong.
    #[error(transparent)]
    Distribution(#[from] DistributionError),
    /// The kernel refused its fields or variant.
    #[error(transparent)]
    Kernel(#[from] DslError),
    /// An operator could not be built or applied (its message).
    #[error("distributed operator: {0}")]
    Operator(String),
    /// The links do not live on the extended lattice.
    #[error(
        "distributed {what}: on the lattice {found}, expected the extended lattice {expected}"
    )]
    WrongLattice {
        /// What is on the wrong lattice ("hop links", "field", …).
        what: &'static str,
        /// The extended lattice.
        expected: String,
        /// The lattice found.
        found: String,
    },
}

/// One rank's part of a hop K of the decomposed lattice:
///
/// (K ψ)(x) = the single-process K ψ at every interior site x of this rank,
///
/// computed by the hop kernel `hop` (its links: this rank's part on the extended lattice,
/// halos filled by [`exchange_halos`] (faces) with periodic boundary conditions — links carry no
/// boundary sign) after the exchange of ψ's halos. Every rank calls [`Self::apply`]
/// together.
pub struct DistributedHop<H: HostHop> {
    ext: ExtendedLattice,
    hop: H,
}

impl<H: HostHop> DistributedHop<H> {
    /// The hop of this rank; `hop`'s links must live on `ext`'s extended lattice.
    pub fn new(ext: ExtendedLattice, hop: H) -> Result<Self, DistributedError> {
        let links = *hop.layout(SiteSubset::Full).lattice();
        if links != *ext.extended() {
            return Err(DistributedError::WrongLattice {
                what: "hop links",
                expected: ext.extended().to_string(),
                found: links.to_string(),
            });
        }
        Ok(Self { ext, hop })
    }

    /// The extended lattice of this rank.
    pub fn extended(&self) -> &ExtendedLattice {
        &self.ext
    }

    /// out = K ψ on this rank's interior sites for `variant` (as the single-process
    /// operator's: output parity, dagger, time boundary); the halo sites of `out` are
    /// zero. ψ's halos are exchanged first (with the antiperiodic sign on faces crossing
    /// the global time boundary when the variant's boundary is antiperiodic); the kernel
    /// then runs with a periodic time boundary when t is cut (the faces carry the sign).
    pub fn apply<C: crate::comm::Communicator>(
        &self,
        comm: &mut C,
        variant: &Variant,
        out: &mut ColourSpinorField<H::Real>,
        psi: &mut ColourSpinorField<H::Real>,
    ) -> Result<(), DistributedError> {
        let bc = match variant.boundary {
            TimeBoundary::Periodic => BoundaryConditions::periodic(),
            TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
        };
        exchange_halos(
            comm,
            psi,
            &self.ext,
            HaloShape::Faces,
            &bc,
            "distributed hop: halo exchange",
        )?;
        let mut kernel_variant = *variant;
        if self.ext.decomposition().grid().is_cut(3) {
            kernel_variant.boundary = TimeBoundary::Periodic;
        }
        self.hop.apply(&kernel_variant, out, psi, None)?;
        zero_halo_sites(out, &self.ext);
        Ok(())
    }
}
