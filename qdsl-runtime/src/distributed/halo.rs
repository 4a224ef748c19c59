//! The halo exchange of a distributed host field through a [`Communicator`].

use super::DistributedError;
use crate::comm::{Communicator, Incoming, Outgoing};
use qdsl_core::field::distributed::{face_len, pack_face, unpack_halo, SiteField};
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, HaloShape, Side};

/// The tag of the face a rank sends towards `side` of direction μ: 2μ + side.
pub fn face_tag(mu: usize, side: Side) -> u32 {
    2 * mu as u32 + side as u32
}

/// Fills the halos of `shape` of this rank's part `field` from its neighbours: the
/// boundary slabs packed ([`pack_face`], negated across the global boundary where `bc`
/// is antiperiodic), sent and unpacked into the halos. [`HaloShape::Faces`]: every cut
/// direction in one grouped exchange; [`HaloShape::FacesAndCorners`]: one grouped
/// exchange per cut direction, in order (each carries the halos of the directions before
/// it). Every rank calls it together; `operation` names it in errors.
///
/// Rank r sends the slab towards side s of μ to its neighbour on side s under tag
/// [`face_tag`]`(μ, s)`; that neighbour receives it from its neighbour on side −s and
/// unpacks it into its halo on side −s.
pub fn exchange_halos<F, C>(
    comm: &mut C,
    field: &mut F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    bc: &BoundaryConditions,
    operation: &str,
) -> Result<(), DistributedError>
where
    F: SiteField,
    F::Elem: 'static,
    C: Communicator,
{
    let cut: Vec<usize> = (0..4)
        .filter(|&mu| ext.decomposition().grid().is_cut(mu))
        .collect();
    let rounds: Vec<Vec<usize>> = match shape {
        HaloShape::Faces => vec![cut],
        HaloShape::FacesAndCorners => cut.into_iter().map(|mu| vec![mu]).collect(),
    };
    for directions in rounds {
        exchange_round(comm, field, ext, shape, bc, operation, &directions)?;
    }
    Ok(())
}

/// One grouped exchange of both faces of each of `directions`.
fn exchange_round<F, C>(
    comm: &mut C,
    field: &mut F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    bc: &BoundaryConditions,
    operation: &str,
    directions: &[usize],
) -> Result<(), DistributedError>
where
    F: SiteField,
    F::Elem: 'static,
    C: Communicator,
{
    let rank = comm.rank();
    let dec = ext.decomposition();
    let faces: Vec<(usize, Side)> = directions
        .iter()
        .flat_map(|&mu| Side::BOTH.map(|side| (mu, side)))
        .collect();
    let sends = faces
        .iter()
        .map(|&(mu, side)| Outgoing {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side),
            data: pack_face(field, ext, shape, rank, mu, side, bc),
        })
        .collect();
    let recvs: Vec<Incoming> = faces
        .iter()
        .map(|&(mu, side)| Incoming {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side.opposite()),
            len: face_len(field, ext, shape, mu),
        })
        .collect();
    let received = comm.exchange(operation, sends, &recvs)?;
    for (&(mu, side), buf) in faces.iter().zip(&received) {
        unpack_halo(field, ext, shape, mu, side, buf)?;
    }
    Ok(())
}
