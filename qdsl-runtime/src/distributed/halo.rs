//! The halo exchange of a distributed host field through a [`Communicator`].

use super::DistributedError;
use crate::comm::{Communicator, Incoming, Outgoing};
use qdsl_core::dsl::halo_spin::{project_site, reconstruct_half_site, HaloProjections};
use qdsl_core::field::distributed::{face_len, face_negated, pack_face, unpack_halo, SiteField};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, HaloShape, Side};
use qdsl_core::{Complex, Real};

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

/// The reals of one 4-spin, 3-colour site, in the order of the half-spinor helpers
/// (spin, colour, re/im).
fn site_reals<T: Real>(site: &[Complex<T>]) -> [T; 24] {
    std::array::from_fn(|k| {
        let z = site[k / 2];
        if k % 2 == 0 {
            z.re
        } else {
            z.im
        }
    })
}

/// Fills the one-hop halos of this rank's part `field` (4 spins, 3 colours, any number
/// of slices) from its neighbours as [`exchange_halos`] with [`HaloShape::Faces`] does,
/// but where `projections` projects a halo the face travels as half spinors: the sender
/// packs h = (1 ± γ_μ) ψ (12 reals a site instead of 24, negated across an antiperiodic
/// global boundary), the receiver stores χ = ½ R h, which the hop's own projection reads
/// back as h exactly ([`qdsl_core::dsl::halo_spin`]: the host reference of the device
/// face kernels) — half the bytes, the hop bit for bit. Faces `projections` leaves whole
/// travel whole. Returns the elements (complex numbers) this rank sent. Every rank calls
/// it together.
pub fn exchange_projected_halos<T: Real, C: Communicator>(
    comm: &mut C,
    field: &mut ColourSpinorField<T>,
    ext: &ExtendedLattice,
    bc: &BoundaryConditions,
    projections: &HaloProjections,
    operation: &str,
) -> Result<usize, DistributedError> {
    let layout = *field.layout();
    if layout.nspin() != 4 || layout.ncolour() != 3 {
        return Err(DistributedError::Operator(format!(
            "{operation}: projected faces need 4-spin, 3-colour fields, found {} spins and {} colours",
            layout.nspin(),
            layout.ncolour()
        )));
    }
    let rank = comm.rank();
    let dec = ext.decomposition();
    let faces: Vec<(usize, Side)> = (0..4)
        .filter(|&mu| dec.grid().is_cut(mu))
        .flat_map(|mu| Side::BOTH.map(|side| (mu, side)))
        .collect();
    let held = |f: &ColourSpinorField<T>, sites: Vec<qdsl_core::lattice::Coords>| -> Vec<usize> {
        sites
            .iter()
            .filter_map(|&c| SiteField::index_of(f, c))
            .collect()
    };
    let slices = SiteField::slices(field);
    let mut sent = 0;
    let mut sends = Vec::with_capacity(faces.len());
    let mut recvs = Vec::with_capacity(faces.len());
    for &(mu, side) in &faces {
        let negate = face_negated(dec, bc, rank, mu, side);
        let sites = held(field, ext.boundary_slab(mu, side, HaloShape::Faces));
        let plan = projections.sent(mu, side).map(|p| p.plan());
        let mut data = Vec::with_capacity(slices * sites.len() * 12);
        for s in 0..slices {
            for &i in &sites {
                let mut reals = site_reals(SiteField::site_elems(field, s, i));
                if negate {
                    reals = reals.map(|x| -x);
                }
                match &plan {
                    Some(plan) => {
                        let h = project_site(&reals, plan);
                        data.extend(h.chunks_exact(2).map(|c| Complex::new(c[0], c[1])));
                    }
                    None => data.extend(reals.chunks_exact(2).map(|c| Complex::new(c[0], c[1]))),
                }
            }
        }
        sent += data.len();
        sends.push(Outgoing {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side),
            data,
        });
        let halo_sites = held(field, ext.halo_slab(mu, side, HaloShape::Faces)).len();
        let per_site = if projections.halo(mu, side).is_some() {
            6
        } else {
            12
        };
        recvs.push(Incoming {
            peer: dec.neighbour(rank, mu, side),
            tag: face_tag(mu, side.opposite()),
            len: slices * halo_sites * per_site,
        });
    }
    let received = comm.exchange(operation, sends, &recvs)?;
    for (&(mu, side), buf) in faces.iter().zip(&received) {
        let sites = held(field, ext.halo_slab(mu, side, HaloShape::Faces));
        let plan = projections.halo(mu, side).map(|p| p.plan());
        let per_site = if plan.is_some() { 6 } else { 12 };
        if buf.len() != slices * sites.len() * per_site {
            return Err(DistributedError::Operator(format!(
                "{operation}: the face of direction {mu} on side {side:?} holds {} numbers, expected {}",
                buf.len(),
                slices * sites.len() * per_site
            )));
        }
        let mut chunks = buf.chunks_exact(per_site);
        for s in 0..slices {
            for &i in &sites {
                let chunk = chunks.next().expect("length checked");
                let site = SiteField::site_elems_mut(field, s, i);
                match &plan {
                    Some(plan) => {
                        let h: [T; 12] = std::array::from_fn(|k| {
                            let z = chunk[k / 2];
                            if k % 2 == 0 {
                                z.re
                            } else {
                                z.im
                            }
                        });
                        let chi = reconstruct_half_site(&h, plan);
                        for (k, z) in site.iter_mut().enumerate() {
                            *z = Complex::new(chi[2 * k], chi[2 * k + 1]);
                        }
                    }
                    None => site.copy_from_slice(chunk),
                }
            }
        }
    }
    Ok(sent)
}
