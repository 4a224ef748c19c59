//! Preconditioners that act on each rank's own sites alone — block-Jacobi preconditioners
//! whose blocks never straddle two ranks, such as MSPCG's multi-splitting
//! ([`crate::solver::mspcg`]) — on distributed fields, and the links their blocks' pads
//! read.
//!
//! z = P r with P block-diagonal over blocks that each lie on one rank is computed by
//! every rank for its blocks from its part of r, with no communication: [`RankLocal`]
//! applies a single-process preconditioner of the rank's domain to the rank's part.
//! Its blocks are padded where the process grid cuts, and the pads' links come from the
//! neighbours once, before the solve ([`padded_block_links`]).

use super::field::{DistributedField, SharedComm};
use super::hop::DistributedError;
use super::smear::exchange_thin_links;
use crate::comm::Communicator;
use crate::linear::SolverError;
use crate::solver::mspcg::{Preconditioner, PAD};
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::ExtendedLattice;
use qdsl_core::Real;

/// A preconditioner `P` of the rank's domain (its fields on the rank's extended
/// lattice) applied to each rank's part of a distributed field: z|_rank = P r|_rank, the
/// halo sites of z zero. A collective only where `P` itself is.
#[derive(Debug)]
pub struct RankLocal<P>(pub P);

impl<P, T, C> Preconditioner<DistributedField<T, C>> for RankLocal<P>
where
    P: Preconditioner<ColourSpinorField<T>>,
    T: Real,
    C: Communicator + Send,
{
    fn apply(
        &self,
        z: &mut DistributedField<T, C>,
        r: &DistributedField<T, C>,
    ) -> Result<(), SolverError> {
        let ext = *z.extended();
        let part = z.part_mut();
        self.0.apply(part, r.part())?;
        super::zero_halo_sites(part, &ext);
        Ok(())
    }

    fn flops_per_apply(&self) -> u64 {
        self.0.flops_per_apply()
    }
}

/// This rank's links on the extended lattice of `fields`' decomposition with a halo of
/// [`PAD`] layers (faces and corners, filled from the neighbours: a collective), what
/// the padded blocks of [`crate::solver::mspcg::PaddedBlocks::on_rank`] read; and that
/// extended lattice. `global` is the whole lattice's links, read once and shared by the
/// ranks of one process.
pub fn padded_block_links<T: Real, C: Communicator>(
    global: &GaugeField<T>,
    fields: &ExtendedLattice,
    comm: &SharedComm<C>,
) -> Result<(ExtendedLattice, GaugeField<T>), DistributedError> {
    let links = ExtendedLattice::new(*fields.decomposition(), PAD).map_err(|e| {
        DistributedError::Operator(format!("the padded blocks' links, {PAD} layers deep: {e}"))
    })?;
    let mut part = scatter(global, &links, comm.rank())?;
    exchange_thin_links(comm, &mut part, &links)?;
    Ok((links, part))
}
