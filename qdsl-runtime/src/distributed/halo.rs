//! The halo exchange of a distributed host field through a [`Communicator`].

use super::DistributedError;
use crate::comm::{Communicator, Incoming, Outgoing};
use qdsl_core::field::distributed::{face_len, pack_face, unpack_halo, SiteField};
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, Side};

/// The tag of the face a rank sends towards `side` of direction μ: 2μ + side.
pub fn face_tag(mu: usize, side: Side) -> u32 {
    2 * mu as u32 + side as u32
}

/// Fills the halos of this rank's part `field` from its neighbours: every cut
/// direction's two faces packed ([`pack_face`], negated across the global boundary where
/// `bc` is antiperiodic) and sent in one grouped exchange, the received faces unpacked
/// into the halos. Every rank calls it together; `operation` names it in errors.
///
/// Rank r sends the face towards side s of μ to its neighbour on side s under tag
/// [`face_tag`]`(μ, s)`; that neighbour receives it from its neighbour on side −s and
/// unpacks it into its halo on side −s.
pub fn exchange_halos<F, C>(
    comm: &mut C,
    field: &mut F,
    ext: &ExtendedLattice,
    bc: &BoundaryConditions,
    operation: &str,
) -> Result<(), DistributedError>
where
    F: SiteField,
    F::Elem: 'static,
    C: Communicator,
{
    let rank = comm.rank();
    let dec = ext.decomposition();
    let faces: Vec<(usize, Side)> = (0..4)
        .filter(|&mu| dec.grid().is_cut(mu))
        .flat_map(|mu| Side::BOTH.map(|side| (mu, side)))
        .collect();
    let sends = faces
        .iter()
        .map(|&(mu, side)| Outgoing {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side),
            data: pack_face(field, ext, rank, mu, side, bc),
        })
        .collect();
    let recvs: Vec<Incoming> = faces
        .iter()
        .map(|&(mu, side)| Incoming {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side.opposite()),
            len: face_len(field, ext, mu),
        })
        .collect();
    let received = comm.exchange(operation, sends, &recvs)?;
    for (&(mu, side), buf) in faces.iter().zip(&received) {
        unpack_halo(field, ext, mu, side, buf)?;
    }
    Ok(())
}
