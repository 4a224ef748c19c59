//! Host fields distributed over the ranks of a [`Decomposition`]: each rank's part stored
//! on the [`ExtendedLattice`] (its local lattice plus halos, see that type for why), the
//! global field scattered to the ranks and gathered back, and the faces packed into
//! contiguous buffers (the messages) and unpacked into the neighbours' halos.
//!
//! One generic code path serves every field kind through [`SiteField`]: gauge fields
//! (four links per site), colour-spinor fields of any shape (Wilson, staggered, 5D with
//! Ls slices, one parity or both) and clover fields (site-local: distributed with halo
//! depth 0).
//!
//! # Face buffers
//! The buffer of the face on side s of direction μ holds, slice by slice (s-slice slowest
//! for 5D fields), the sites of [`ExtendedLattice::boundary_layers`] that belong to the
//! field's subset, each site's elements in storage order. The receiver unpacks it into
//! its [`ExtendedLattice::halo_layers`] on side −s: the same sites in the same order.
//!
//! # Boundary signs
//! A fermion field with an antiperiodic boundary in μ satisfies ψ(x + L_μ μ̂) = −ψ(x). A
//! face whose message crosses the global lattice's boundary (sent forward by the last
//! rank of direction μ, or backward by the first: [`Decomposition::face_wraps`]) is
//! therefore packed negated; the halo then holds exactly what the single-process stencil
//! would read, sign included, and the stencil applies no sign in cut directions (an
//! interior site's hop never wraps the extended lattice there). Negation is exact, so the
//! distributed operator stays bit-identical. Links carry no boundary sign (pass
//! [`BoundaryConditions::periodic`]); staggered fields fold the antiperiodic sign into
//! the links (MILC), so their spinor faces are periodic too.

use super::{CloverField, ColourSpinorField, FieldError, GaugeField, SiteSubset, SpinorLayout};
use crate::lattice::{
    BoundaryConditions, Coords, Decomposition, DecompositionError, ExtendedLattice, HaloShape,
    Lattice, Side, DIRECTION_NAMES,
};
use crate::math::ColourMatrix;
use crate::Real;
use num_complex::Complex;
use thiserror::Error;

/// What went wrong distributing, gathering or exchanging a field.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DistributionError {
    /// The decomposition itself is invalid.
    #[error(transparent)]
    Decomposition(#[from] DecompositionError),
    /// A field could not be built.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A field lives on another lattice than the one expected.
    #[error("{what}: expected a field on {expected}, found one on {found}")]
    WrongLattice {
        /// Which field ("global field", "rank 3").
        what: String,
        /// The lattice expected.
        expected: Lattice,
        /// The lattice found.
        found: Lattice,
    },
    /// Gathering needs one part per rank.
    #[error("gather needs one field per rank: the grid has {expected} ranks, found {found}")]
    WrongPartCount {
        /// Ranks of the grid.
        expected: usize,
        /// Parts supplied.
        found: usize,
    },
    /// A face buffer of the wrong length.
    #[error(
        "face buffer for the {side:?} halo in direction {dir}: expected {expected} elements, \
         found {found}"
    )]
    FaceLength {
        /// Direction of the face.
        dir: char,
        /// Which halo of the receiver.
        side: Side,
        /// Elements the halo holds.
        expected: usize,
        /// Elements received.
        found: usize,
    },
}

/// A host field whose sites can be scattered, gathered and exchanged: per s-slice and
/// site (index within the field's subset), a run of `elems_per_site` elements.
pub trait SiteField: Sized {
    /// One stored element (a link, a complex component, a real).
    type Elem: Copy + Send + Sync;

    /// The 4D lattice.
    fn lattice(&self) -> &Lattice;
    /// The sites held: all or one parity.
    fn subset(&self) -> SiteSubset;
    /// Fifth-dimension slices (Ls; 1 for 4D fields).
    fn slices(&self) -> usize;
    /// Elements per site and slice.
    fn elems_per_site(&self) -> usize;
    /// The elements of site `i` (index within the subset) of slice `s`.
    fn site_elems(&self, s: usize, i: usize) -> &[Self::Elem];
    /// The elements of site `i` of slice `s`, writable.
    fn site_elems_mut(&mut self, s: usize, i: usize) -> &mut [Self::Elem];
    /// −e (exact).
    fn negated(e: Self::Elem) -> Self::Elem;
    /// A field of the same shape (subset, slices, components) on `lattice`, every element
    /// zero (links: the identity).
    fn blank_on(&self, lattice: Lattice) -> Result<Self, FieldError>;

    /// Index within the subset of the site at `c`, or `None` if the field does not hold
    /// that parity.
    fn index_of(&self, c: Coords) -> Option<usize> {
        let lattice = self.lattice();
        let cb = lattice.cb_index(c);
        match self.subset() {
            SiteSubset::Full => Some(cb),
            SiteSubset::Single(p) => {
                let (found, i) = lattice.split_cb(cb);
                (found == p).then_some(i)
            }
        }
    }
}

impl<T: Real> SiteField for GaugeField<T> {
    type Elem = ColourMatrix<T>;
    fn lattice(&self) -> &Lattice {
        GaugeField::lattice(self)
    }
    fn subset(&self) -> SiteSubset {
        SiteSubset::Full
    }
    fn slices(&self) -> usize {
        1
    }
    fn elems_per_site(&self) -> usize {
        4
    }
    fn site_elems(&self, _s: usize, i: usize) -> &[ColourMatrix<T>] {
        &self.links()[4 * i..4 * i + 4]
    }
    fn site_elems_mut(&mut self, _s: usize, i: usize) -> &mut [ColourMatrix<T>] {
        &mut self.links_mut()[4 * i..4 * i + 4]
    }
    fn negated(e: ColourMatrix<T>) -> ColourMatrix<T> {
        e.scale(-T::one())
    }
    fn blank_on(&self, lattice: Lattice) -> Result<Self, FieldError> {
        Ok(GaugeField::unit(lattice))
    }
}

impl<T: Real> SiteField for ColourSpinorField<T> {
    type Elem = Complex<T>;
    fn lattice(&self) -> &Lattice {
        self.layout().lattice()
    }
    fn subset(&self) -> SiteSubset {
        self.layout().subset()
    }
    fn slices(&self) -> usize {
        self.layout().ls()
    }
    fn elems_per_site(&self) -> usize {
        self.layout().site_len()
    }
    fn site_elems(&self, s: usize, i: usize) -> &[Complex<T>] {
        self.site(s, i)
    }
    fn site_elems_mut(&mut self, s: usize, i: usize) -> &mut [Complex<T>] {
        self.site_mut(s, i)
    }
    fn negated(e: Complex<T>) -> Complex<T> {
        -e
    }
    fn blank_on(&self, lattice: Lattice) -> Result<Self, FieldError> {
        let l = self.layout();
        let layout = SpinorLayout::new(lattice, l.ls(), l.subset(), l.nspin(), l.ncolour())?;
        Ok(ColourSpinorField::zeros(layout))
    }
}

impl<T: Real> SiteField for CloverField<T> {
    type Elem = T;
    fn lattice(&self) -> &Lattice {
        CloverField::lattice(self)
    }
    fn subset(&self) -> SiteSubset {
        CloverField::subset(self)
    }
    fn slices(&self) -> usize {
        1
    }
    fn elems_per_site(&self) -> usize {
        super::CLOVER_SITE_REALS
    }
    fn site_elems(&self, _s: usize, i: usize) -> &[T] {
        self.site(i)
    }
    fn site_elems_mut(&mut self, _s: usize, i: usize) -> &mut [T] {
        self.site_mut(i)
    }
    fn negated(e: T) -> T {
        -e
    }
    fn blank_on(&self, lattice: Lattice) -> Result<Self, FieldError> {
        Ok(CloverField::zeros(lattice, CloverField::subset(self)))
    }
}

/// Copies every slice of site `from_c` of `from` to site `to_c` of `to`, negated when
/// `negate`; nothing when either field lacks the site's parity.
fn copy_site<F: SiteField>(from: &F, from_c: Coords, to: &mut F, to_c: Coords, negate: bool) {
    let (Some(i), Some(j)) = (from.index_of(from_c), to.index_of(to_c)) else {
        return;
    };
    for s in 0..from.slices() {
        let src = from.site_elems(s, i);
        let dst = to.site_elems_mut(s, j);
        for (d, &e) in dst.iter_mut().zip(src) {
            *d = if negate { F::negated(e) } else { e };
        }
    }
}

fn check_lattice(
    what: impl Into<String>,
    expected: &Lattice,
    found: &Lattice,
) -> Result<(), DistributionError> {
    if expected != found {
        return Err(DistributionError::WrongLattice {
            what: what.into(),
            expected: *expected,
            found: *found,
        });
    }
    Ok(())
}

/// Rank `rank`'s part of the global field `global`: a field on the extended lattice whose
/// interior holds the rank's sites, halos zero (filled by an exchange).
pub fn scatter<F: SiteField>(
    global: &F,
    ext: &ExtendedLattice,
    rank: usize,
) -> Result<F, DistributionError> {
    let dec = ext.decomposition();
    dec.check_rank(rank)?;
    check_lattice("global field", dec.global(), global.lattice())?;
    let mut part = global.blank_on(*ext.extended())?;
    for e in ext.interior() {
        let (g, _) = ext.global_of_ext(rank, e);
        copy_site(global, g, &mut part, e, false);
    }
    Ok(part)
}

/// Every rank's part of `global`, in rank order ([`scatter`]).
pub fn scatter_all<F: SiteField>(
    global: &F,
    ext: &ExtendedLattice,
) -> Result<Vec<F>, DistributionError> {
    (0..ext.decomposition().size())
        .map(|r| scatter(global, ext, r))
        .collect()
}

/// The global field from every rank's part (rank order; halos ignored): the inverse of
/// [`scatter_all`].
pub fn gather<F: SiteField>(parts: &[F], ext: &ExtendedLattice) -> Result<F, DistributionError> {
    let dec = ext.decomposition();
    if parts.len() != dec.size() {
        return Err(DistributionError::WrongPartCount {
            expected: dec.size(),
            found: parts.len(),
        });
    }
    let mut global = parts[0].blank_on(*dec.global())?;
    for (rank, part) in parts.iter().enumerate() {
        check_lattice(format!("rank {rank}"), ext.extended(), part.lattice())?;
        for e in ext.interior() {
            let (g, _) = ext.global_of_ext(rank, e);
            copy_site(part, e, &mut global, g, false);
        }
    }
    Ok(global)
}

/// Whether the face on `side` of direction μ of `rank` is sent negated: the message
/// crosses the global boundary and μ is antiperiodic.
pub fn face_negated(
    dec: &Decomposition,
    bc: &BoundaryConditions,
    rank: usize,
    mu: usize,
    side: Side,
) -> bool {
    dec.face_wraps(rank, mu, side) && bc.0[mu].sign(1) < 0.0
}

/// The sites of `sites` the field holds, as indices within its subset.
fn held<F: SiteField>(field: &F, sites: &[Coords]) -> Vec<usize> {
    sites.iter().filter_map(|&c| field.index_of(c)).collect()
}

/// The face buffer rank `rank` sends to its neighbour on `side` of direction μ: the
/// boundary layers' elements (see the module docs for the order), negated where the
/// boundary condition says so ([`face_negated`]). Empty when μ is not cut.
pub fn pack_face<F: SiteField>(
    field: &F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    rank: usize,
    mu: usize,
    side: Side,
    bc: &BoundaryConditions,
) -> Vec<F::Elem> {
    let negate = face_negated(ext.decomposition(), bc, rank, mu, side);
    let sites = held(field, &ext.boundary_slab(mu, side, shape));
    let mut buf = Vec::with_capacity(field.slices() * sites.len() * field.elems_per_site());
    for s in 0..field.slices() {
        for &i in &sites {
            let elems = field.site_elems(s, i);
            if negate {
                buf.extend(elems.iter().map(|&e| F::negated(e)));
            } else {
                buf.extend_from_slice(elems);
            }
        }
    }
    buf
}

/// Elements of the face buffer of direction μ of `field` ([`pack_face`]; both sides
/// have the same length).
pub fn face_len<F: SiteField>(
    field: &F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    mu: usize,
) -> usize {
    let sites = held(field, &ext.halo_slab(mu, Side::Backward, shape)).len();
    field.slices() * sites * field.elems_per_site()
}

/// Writes a face buffer received from the neighbour on `side` of direction μ into the
/// halo layers on `side`; an error naming the face if its length is wrong.
pub fn unpack_halo<F: SiteField>(
    field: &mut F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    mu: usize,
    side: Side,
    buf: &[F::Elem],
) -> Result<(), DistributionError> {
    let sites = held(field, &ext.halo_slab(mu, side, shape));
    let per_site = field.elems_per_site();
    let expected = field.slices() * sites.len() * per_site;
    if buf.len() != expected {
        return Err(DistributionError::FaceLength {
            dir: DIRECTION_NAMES[mu],
            side,
            expected,
            found: buf.len(),
        });
    }
    let mut chunks = buf.chunks_exact(per_site.max(1));
    for s in 0..field.slices() {
        for &i in &sites {
            let chunk = chunks.next().expect("length checked");
            field.site_elems_mut(s, i).copy_from_slice(chunk);
        }
    }
    Ok(())
}

/// The halo exchange of every cut direction between parts held in one place (`parts[r]`
/// is rank r's): each rank's boundary slabs of `shape` packed ([`pack_face`]) and
/// unpacked into its neighbour's halo, direction by direction in order (x, y, z, t: the
/// order [`HaloShape::FacesAndCorners`] needs). The reference for the transports of
/// `qdsl_runtime::comm`.
pub fn exchange_in_place<F: SiteField>(
    parts: &mut [F],
    ext: &ExtendedLattice,
    shape: HaloShape,
    bc: &BoundaryConditions,
) -> Result<(), DistributionError> {
    let dec = *ext.decomposition();
    if parts.len() != dec.size() {
        return Err(DistributionError::WrongPartCount {
            expected: dec.size(),
            found: parts.len(),
        });
    }
    for mu in (0..4).filter(|&mu| dec.grid().is_cut(mu)) {
        for side in Side::BOTH {
            let bufs: Vec<Vec<F::Elem>> = (0..dec.size())
                .map(|r| pack_face(&parts[r], ext, shape, r, mu, side, bc))
                .collect();
            for (r, buf) in bufs.iter().enumerate() {
                let n = dec.neighbour(r, mu, side);
                unpack_halo(&mut parts[n], ext, shape, mu, side.opposite(), buf)?;
            }
        }
    }
    Ok(())
}

/// Fills rank `rank`'s halo sites of `shape` ([`ExtendedLattice::halo_sites`]) straight
/// from the global field: each takes the global site it stands for
/// ([`ExtendedLattice::global_of_ext`]), times −1 for every crossing of an antiperiodic
/// boundary. Independent of ranks, neighbours and messages: the reference the exchange is
/// tested against.
pub fn fill_halos_from_global<F: SiteField>(
    part: &mut F,
    global: &F,
    ext: &ExtendedLattice,
    shape: HaloShape,
    rank: usize,
    bc: &BoundaryConditions,
) {
    for e in ext.halo_sites(shape) {
        let (g, wraps) = ext.global_of_ext(rank, e);
        let sign: f64 = (0..4).map(|nu| bc.0[nu].sign(wraps[nu])).product();
        copy_site(global, g, part, e, sign < 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::rng::{RandomStream, StreamDomain};
    use crate::lattice::decomposition::{ProcessGrid, NAIK_DEPTH};
    use crate::lattice::{Lattice5D, Parity};

    const GRIDS: [[usize; 4]; 4] = [[1, 1, 1, 2], [1, 2, 1, 2], [2, 2, 2, 2], [2, 1, 1, 1]];

    fn ext(global: Lattice, grid: [usize; 4], depth: usize) -> ExtendedLattice {
        let d = Decomposition::new(global, ProcessGrid::new(grid).unwrap()).unwrap();
        ExtendedLattice::new(d, depth).unwrap()
    }

    fn random_clover(lattice: Lattice, seed: u64) -> CloverField<f64> {
        let mut a = CloverField::zeros(lattice, SiteSubset::Full);
        for (k, x) in a.data_mut().iter_mut().enumerate() {
            *x = RandomStream::new(seed, StreamDomain::Fermion, k as u64)
                .gaussian_complex()
                .re;
        }
        a
    }

    /// scatter → gather is the identity for gauge, Wilson (full and one parity), 5D
    /// domain-wall, staggered and clover fields on grids cutting 1, 2 and 4 directions;
    /// every interior site of every part equals the global site it stands for.
    #[test]
    fn scatter_then_gather_is_the_identity() {
        let global = Lattice::new([4, 4, 4, 8]).unwrap();
        let u = GaugeField::<f64>::random(global, 3);
        let wilson =
            ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(global, SiteSubset::Full), 4);
        let odd = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
            5,
        );
        let dwf = ColourSpinorField::<f32>::gaussian(
            SpinorLayout::domain_wall(
                Lattice5D::new(global.dims(), 3).unwrap(),
                SiteSubset::Single(Parity::Even),
            ),
            6,
        );
        let stag = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::staggered(global, SiteSubset::Full),
            7,
        );
        let clover = random_clover(global, 8);
        for grid in GRIDS {
            for depth in [1, 2] {
                let e = ext(global, grid, depth);
                assert_eq!(gather(&scatter_all(&u, &e).unwrap(), &e).unwrap(), u);
                assert_eq!(
                    gather(&scatter_all(&wilson, &e).unwrap(), &e).unwrap(),
                    wilson
                );
                assert_eq!(gather(&scatter_all(&odd, &e).unwrap(), &e).unwrap(), odd);
                assert_eq!(gather(&scatter_all(&dwf, &e).unwrap(), &e).unwrap(), dwf);
                assert_eq!(gather(&scatter_all(&stag, &e).unwrap(), &e).unwrap(), stag);
            }
            let e0 = ext(global, grid, 0);
            assert_eq!(
                gather(&scatter_all(&clover, &e0).unwrap(), &e0).unwrap(),
                clover
            );
            // Interior sites are the global sites (spot check every site of one rank).
            let e = ext(global, grid, 1);
            let last = e.decomposition().size() - 1;
            let part = scatter(&wilson, &e, last).unwrap();
            for x in e.interior() {
                let (g, _) = e.global_of_ext(last, x);
                let (i, j) = (part.index_of(x).unwrap(), wilson.index_of(g).unwrap());
                assert_eq!(part.site(0, i), wilson.site(0, j));
            }
        }
    }

    /// After the exchange every halo holds what the global field holds at the site it
    /// stands for, negated across the antiperiodic time boundary (the reference fill,
    /// computed from global coordinates, not from ranks and messages); checked for faces
    /// and for faces with corners (where a corner crossing the t boundary carries the
    /// sign too), depths 1, 2 and 3, full and one-parity Wilson, 5D, and gauge fields; and
    /// one face spelled out: the first t-rank's backward halo is the last t-rank's top
    /// layer, negated.
    #[test]
    fn exchanged_halos_hold_the_neighbours_boundary_sites_with_the_time_sign() {
        let big = Lattice::new([4, 8, 8, 16]).unwrap();
        let apt = BoundaryConditions::antiperiodic_time();
        let periodic = BoundaryConditions::periodic();
        let u = GaugeField::<f64>::random(big, 11);
        let full =
            ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(big, SiteSubset::Full), 12);
        let even = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::wilson(big, SiteSubset::Single(Parity::Even)),
            13,
        );
        let dwf = ColourSpinorField::<f64>::gaussian(
            SpinorLayout::domain_wall(
                Lattice5D::new(big.dims(), 2).unwrap(),
                SiteSubset::Single(Parity::Odd),
            ),
            14,
        );
        fn check<F: SiteField + PartialEq + std::fmt::Debug>(
            global: &F,
            e: &ExtendedLattice,
            shape: HaloShape,
            bc: &BoundaryConditions,
        ) {
            let mut parts = scatter_all(global, e).unwrap();
            exchange_in_place(&mut parts, e, shape, bc).unwrap();
            for (rank, part) in parts.iter().enumerate() {
                let mut reference = scatter(global, e, rank).unwrap();
                fill_halos_from_global(&mut reference, global, e, shape, rank, bc);
                assert_eq!(*part, reference, "rank {rank} {shape:?}");
            }
        }
        let mut checked = 0;
        for grid in [[1, 1, 1, 2], [1, 2, 1, 4], [2, 2, 2, 2]] {
            for depth in [1, 2, NAIK_DEPTH] {
                let Ok(d) =
                    Decomposition::with_halo_depth(big, ProcessGrid::new(grid).unwrap(), depth)
                else {
                    assert_eq!((grid, depth), ([2, 2, 2, 2], NAIK_DEPTH), "local x = 2 < 3");
                    continue;
                };
                let e = ExtendedLattice::new(d, depth).unwrap();
                for shape in [HaloShape::Faces, HaloShape::FacesAndCorners] {
                    check(&full, &e, shape, &apt);
                    check(&even, &e, shape, &apt);
                    check(&dwf, &e, shape, &apt);
                    check(&u, &e, shape, &periodic);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 16);
        // Corners are not faces: with a corner exchange a site diagonal to the interior
        // (halo in both y and t) is filled, with faces only it stays zero.
        let e = ext(big, [1, 2, 1, 2], 1);
        // Margins 1 in y and t: extended y = 0 and t = 0 are halo layers.
        let c = [1, 0, 2, 0];
        for (shape, filled) in [
            (HaloShape::Faces, false),
            (HaloShape::FacesAndCorners, true),
        ] {
            let mut parts = scatter_all(&full, &e).unwrap();
            exchange_in_place(&mut parts, &e, shape, &apt).unwrap();
            let i = parts[0].index_of(c).unwrap();
            assert_eq!(
                parts[0].site(0, i).iter().any(|z| z.norm_sqr() > 0.0),
                filled,
                "{shape:?}"
            );
        }
        let global = Lattice::new([4, 4, 6, 12]).unwrap();
        let full =
            ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(global, SiteSubset::Full), 12);
        // One face by hand: grid 1,1,1,2 (local Lt = 6), depth 1. Rank 0's backward halo
        // (extended t = 1, margin 2 after the parity fix) is global t = 11 = rank 1's top
        // layer (local t = 5), negated.
        let e = ext(global, [1, 1, 1, 2], 1);
        assert_eq!(e.margin()[3], 2);
        let mut parts = scatter_all(&full, &e).unwrap();
        exchange_in_place(&mut parts, &e, HaloShape::Faces, &apt).unwrap();
        let (h, top) = ([1, 2, 3, 1], [1, 2, 3, 7]);
        let i = parts[0].index_of(h).unwrap();
        let j = parts[1].index_of(top).unwrap();
        let negated: Vec<_> = parts[1].site(0, j).iter().map(|z| -z).collect();
        assert_eq!(parts[0].site(0, i), &negated[..]);
        assert_eq!(
            parts[1].site(0, j),
            full.site(0, full.index_of([1, 2, 3, 11]).unwrap())
        );
        // Rank 1's forward halo (extended t = 8, global t = 12 ≡ 0) is rank 0's bottom
        // layer (extended t = 2): that message also crosses the boundary, negated.
        let i = parts[1].index_of([1, 2, 3, 8]).unwrap();
        let j = parts[0].index_of([1, 2, 3, 2]).unwrap();
        let negated: Vec<_> = parts[0].site(0, j).iter().map(|z| -z).collect();
        assert_eq!(parts[1].site(0, i), &negated[..]);
    }

    #[test]
    fn bad_parts_and_faces_are_errors_naming_what_is_wrong() {
        let global = Lattice::new([4, 4, 4, 8]).unwrap();
        let e = ext(global, [1, 1, 1, 2], 1);
        let psi =
            ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(global, SiteSubset::Full), 1);
        let mut parts = scatter_all(&psi, &e).unwrap();
        assert_eq!(
            gather(&parts[..1], &e).unwrap_err(),
            DistributionError::WrongPartCount {
                expected: 2,
                found: 1
            }
        );
        let n = face_len(&parts[0], &e, HaloShape::Faces, 3);
        assert_eq!(n, 4 * 4 * 4 * 12);
        let err = unpack_halo(
            &mut parts[0],
            &e,
            HaloShape::Faces,
            3,
            Side::Backward,
            &vec![Complex::new(0.0, 0.0); n - 1],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "face buffer for the Backward halo in direction t: expected {n} elements, found {}",
                n - 1
            )
        );
        let wrong = scatter(&psi, &ext(global, [1, 1, 2, 1], 1), 0).unwrap();
        assert!(matches!(
            gather(&[wrong.clone(), wrong], &e),
            Err(DistributionError::WrongLattice { .. })
        ));
        assert!(matches!(
            scatter(&psi, &e, 2),
            Err(DistributionError::Decomposition(
                DecompositionError::RankOutOfRange { rank: 2, size: 2 }
            ))
        ));
    }
}
