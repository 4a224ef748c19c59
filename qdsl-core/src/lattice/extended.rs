//! A rank's local lattice extended by halos: the storage every distributed field uses.
//!
//! # Why an extended (padded) field, not separate ghost buffers
//! QUDA keeps each face's halo in its own ghost buffer and its kernels branch, per
//! neighbour read, between the field and the ghost buffer (with a face index of its own);
//! Grid's stencils likewise index either the local field or a communication buffer. qdsl
//! stores a distributed field on the **extended lattice**: the local lattice with
//! `margin_μ` extra layers below and above it in every cut direction, the halo sites
//! living in the same checkerboarded array as the interior. Chosen because:
//!
//! * the generated kernels compute a neighbour's index from coordinates on a periodic
//!   lattice; on the extended lattice an interior site's neighbour x ± nμ̂ (n ≤ depth) is
//!   an ordinary site of the same array, never wrapped in a cut direction. The kernels
//!   need no new read path: only the thread-to-site map changes (thread i → the i-th
//!   interior site, coordinates + margin), with the extended extents as `L0..L3`. The
//!   CPU kernels run on it **unchanged** today (they compute every extended site; the
//!   interior ones are exact, see `qdsl_runtime::distributed`);
//! * the interior/exterior split is a choice of which sites a launch covers, not a second
//!   kernel body: interior sites (all neighbours local) run while faces travel, the
//!   boundary layers after their halos arrived;
//! * link smearing with an extended volume (Shi et al.) needs exactly this storage: thin
//!   links exchanged once into a halo, every staple then computed locally;
//! * uncut directions keep margin 0 and wrap locally as before, so the single-process
//!   lattice is the special case of a 1,1,1,1 grid.
//!
//! The cost is memory for the halo layers (at 32⁴ per rank cut in four directions,
//! (34/32)⁴ − 1 = 27 % for depth 1) and an unpack after each receive (halo sites are not
//! contiguous); messages are contiguous face buffers either way ([`boundary_layers`],
//! [`halo_layers`]), packed from and unpacked into the extended field.
//!
//! # Parity
//! A site's parity on the extended lattice is that of its extended coordinates `c +
//! margin`. So that it equals the site's global parity (and the even-odd kernels, which
//! take the output parity as a knob, run unchanged), the margins must sum to an even
//! number. They are `depth` in every cut direction; when depth · (cut directions) is odd
//! the first cut direction gets one more layer on each side (never read or filled: no
//! hop reaches beyond `depth`).
//!
//! # Faces
//! Rank r's [`boundary_layers`] on side s of direction μ (its `depth` outermost layers
//! there) are the [`halo_layers`] on side −s of its neighbour on side s: r sends them to
//! that neighbour. Both lists hold the slab's sites in the same order (lexicographic in
//! slab coordinates, x fastest), so entry k of one is entry k of the other. The slabs
//! span the interior in the other directions (no corners: the straight hops of the Dirac
//! operators never read a corner; staples for smearing will exchange direction by
//! direction including the halos already filled).
//!
//! [`boundary_layers`]: ExtendedLattice::boundary_layers
//! [`halo_layers`]: ExtendedLattice::halo_layers

use super::decomposition::{Decomposition, DecompositionError, Side};
use super::{Coords, Lattice, SiteBox};

/// The launches of a distributed operator's output sites on a rank's extended lattice:
/// the interior box (every neighbour within `depth` is an interior site: computable
/// before any halo arrives) and, per cut direction μ in increasing order, the exterior
/// slabs of μ (backward, forward) — made disjoint, so that every interior site of the
/// rank is in exactly one box ([`ExtendedLattice::launch_boxes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchBoxes {
    /// The sites at least `depth` layers from every cut boundary.
    pub interior: SiteBox,
    /// (μ, backward slab, forward slab) for each cut direction, increasing μ. The slabs of
    /// μ read the halos of μ and of the cut directions before μ, never after: launched
    /// in this order, each after its own faces arrived, every read halo is filled.
    pub exterior: Vec<(usize, [SiteBox; 2])>,
}

/// The local lattice of a [`Decomposition`] extended by halos of `depth` layers in the cut
/// directions (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExtendedLattice {
    decomposition: Decomposition,
    depth: usize,
    margin: [usize; 4],
    extended: Lattice,
}

impl ExtendedLattice {
    /// The local lattice of `decomposition` with halos of `depth` layers; refuses a depth
    /// larger than a cut local extent ([`Decomposition::check_halo_depth`]).
    pub fn new(decomposition: Decomposition, depth: usize) -> Result<Self, DecompositionError> {
        decomposition.check_halo_depth(depth)?;
        let grid = decomposition.grid();
        let mut margin: [usize; 4] =
            std::array::from_fn(|mu| if grid.is_cut(mu) { depth } else { 0 });
        if (depth * grid.cut_count()) % 2 == 1 {
            let first = (0..4)
                .find(|&mu| grid.is_cut(mu))
                .expect("an odd count cuts");
            margin[first] += 1;
        }
        let local = decomposition.local().dims();
        let extended = Lattice::new(std::array::from_fn(|mu| local[mu] + 2 * margin[mu]))?;
        Ok(Self {
            decomposition,
            depth,
            margin,
            extended,
        })
    }

    /// The decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// The halo depth.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Layers below (and above) the local lattice in each direction.
    pub fn margin(&self) -> [usize; 4] {
        self.margin
    }

    /// The extended lattice, the storage of every rank's fields.
    pub fn extended(&self) -> &Lattice {
        &self.extended
    }

    /// The local lattice (the interior of the extended one).
    pub fn local(&self) -> &Lattice {
        self.decomposition.local()
    }

    /// Extended coordinates of local site `c`.
    pub fn ext_of_local(&self, c: Coords) -> Coords {
        std::array::from_fn(|mu| c[mu] + self.margin[mu])
    }

    /// Local coordinates of extended site `e`, if it is an interior site.
    pub fn local_of_ext(&self, e: Coords) -> Option<Coords> {
        let l = self.local().dims();
        let mut c = [0; 4];
        for mu in 0..4 {
            c[mu] = e[mu].checked_sub(self.margin[mu])?;
            if c[mu] >= l[mu] {
                return None;
            }
        }
        Some(c)
    }

    /// The global site that extended site `e` of `rank` stands for (wrapped onto the
    /// global lattice), and how many times the wrap crossed the global boundary in each
    /// direction (signed, as [`Lattice::shift`]).
    pub fn global_of_ext(&self, rank: usize, e: Coords) -> (Coords, [isize; 4]) {
        let offset = self.decomposition.offset(rank);
        let global = self.decomposition.global();
        let mut g = [0; 4];
        let mut wraps = [0; 4];
        for mu in 0..4 {
            let raw = (offset[mu] + e[mu]) as isize - self.margin[mu] as isize;
            let l = global.extent(mu) as isize;
            g[mu] = raw.rem_euclid(l) as usize;
            wraps[mu] = raw.div_euclid(l);
        }
        (g, wraps)
    }

    /// The interior box and the disjoint exterior slabs of a distributed operator's
    /// launches (see [`LaunchBoxes`]). With m = margin, ℓ = local extent and d = depth
    /// in direction ν: the interior box spans `[m + d, m + ℓ − d)` in cut directions and
    /// `[0, ℓ)` elsewhere; the slabs of cut direction μ span `[m, m + min(d, ℓ))`
    /// (backward) and `[m + max(d, ℓ − d), m + ℓ)` (forward) in μ, the interior range
    /// `[m + d, m + ℓ − d)` in the cut directions after μ and the whole local range
    /// `[m, m + ℓ)` in those before. An exterior site belongs to the slab of the last cut
    /// direction in whose boundary layers it lies, and only to it.
    pub fn launch_boxes(&self) -> LaunchBoxes {
        let d = self.depth;
        let cut = |nu: usize| self.decomposition.grid().is_cut(nu);
        let (m, l) = (self.margin, self.local().dims());
        let local_lo = m;
        let local_hi: Coords = std::array::from_fn(|nu| m[nu] + l[nu]);
        let inner_lo: Coords = std::array::from_fn(|nu| if cut(nu) { m[nu] + d } else { m[nu] });
        let inner_hi: Coords = std::array::from_fn(|nu| {
            if cut(nu) {
                (m[nu] + l[nu]).saturating_sub(d).max(inner_lo[nu])
            } else {
                m[nu] + l[nu]
            }
        });
        let exterior = (0..4)
            .filter(|&mu| cut(mu))
            .map(|mu| {
                let (mut lo, mut hi) = (local_lo, local_hi);
                lo[mu + 1..].copy_from_slice(&inner_lo[mu + 1..]);
                hi[mu + 1..].copy_from_slice(&inner_hi[mu + 1..]);
                let (mut back_hi, mut fwd_lo) = (hi, lo);
                back_hi[mu] = m[mu] + d.min(l[mu]);
                fwd_lo[mu] = m[mu] + d.max(l[mu].saturating_sub(d));
                (
                    mu,
                    [SiteBox::between(lo, back_hi), SiteBox::between(fwd_lo, hi)],
                )
            })
            .collect();
        LaunchBoxes {
            interior: SiteBox::between(inner_lo, inner_hi),
            exterior,
        }
    }

    /// The boundary layers and the halo layers on `side` of μ as boxes
    /// ([`HaloShape::Faces`]: spanning the interior in the other directions): where this
    /// rank packs the face it sends to its neighbour on `side`, and where it unpacks the
    /// face that neighbour sends. The sites of [`Self::boundary_layers`] and
    /// [`Self::halo_layers`]; `None` when μ is not cut. Both boxes have the same extents,
    /// and their corners the same parity as the neighbour's matching boxes (the same
    /// global sites), so [`SiteBox`]'s thread order is a face buffer's order on both sides.
    pub fn face_boxes(&self, mu: usize, side: Side) -> Option<[SiteBox; 2]> {
        self.face_boxes_of_depth(mu, side, self.depth)
    }

    /// [`Self::face_boxes`] `d` layers deep (at most the halo's depth): the boundary
    /// layers next to the local sites' face and the halo layers next to them (a halo
    /// filled only as deep as a field is read).
    pub fn face_boxes_of_depth(&self, mu: usize, side: Side, d: usize) -> Option<[SiteBox; 2]> {
        if !self.decomposition.grid().is_cut(mu) || d > self.depth {
            return None;
        }
        let (m, l) = (self.margin[mu], self.local().extent(mu));
        let (boundary, halo) = match side {
            Side::Backward => (m, m - d),
            Side::Forward => (m + l - d, m + l),
        };
        let slab = |start: usize| {
            let mut lo = self.margin;
            let mut n = self.local().dims();
            lo[mu] = start;
            n[mu] = d;
            SiteBox { lo, n }
        };
        Some([slab(boundary), slab(halo)])
    }

    /// Extended coordinates of every interior site, lexicographic (x fastest).
    pub fn interior(&self) -> Vec<Coords> {
        let lo = self.margin;
        let hi = std::array::from_fn(|mu| self.margin[mu] + self.local().extent(mu));
        box_sites(lo, hi)
    }

    /// The `depth` outermost interior layers on `side` of direction μ (extended
    /// coordinates, slab order) spanning the interior in the other directions
    /// ([`HaloShape::Faces`]): what this rank sends to its neighbour on `side`. Empty
    /// when μ is not cut.
    pub fn boundary_layers(&self, mu: usize, side: Side) -> Vec<Coords> {
        self.boundary_slab(mu, side, HaloShape::Faces)
    }

    /// The `depth` halo layers beyond the local lattice on `side` of direction μ
    /// (extended coordinates, slab order) spanning the interior in the other directions:
    /// what this rank receives from its neighbour on `side`. Empty when μ is not cut.
    pub fn halo_layers(&self, mu: usize, side: Side) -> Vec<Coords> {
        self.halo_slab(mu, side, HaloShape::Faces)
    }

    /// [`Self::boundary_layers`] of either shape: for [`HaloShape::FacesAndCorners`] the
    /// slab spans the whole extended lattice in the other directions.
    pub fn boundary_slab(&self, mu: usize, side: Side, shape: HaloShape) -> Vec<Coords> {
        if !self.decomposition.grid().is_cut(mu) {
            return Vec::new();
        }
        let (m, l, d) = (self.margin[mu], self.local().extent(mu), self.depth);
        let range = match side {
            Side::Backward => m..m + d,
            Side::Forward => m + l - d..m + l,
        };
        self.slab(mu, range, shape)
    }

    /// [`Self::halo_layers`] of either shape (see [`Self::boundary_slab`]).
    pub fn halo_slab(&self, mu: usize, side: Side, shape: HaloShape) -> Vec<Coords> {
        if !self.decomposition.grid().is_cut(mu) {
            return Vec::new();
        }
        let (m, l, d) = (self.margin[mu], self.local().extent(mu), self.depth);
        let range = match side {
            Side::Backward => m - d..m,
            Side::Forward => m + l..m + l + d,
        };
        self.slab(mu, range, shape)
    }

    /// The halo sites a complete exchange of `shape` fills: for
    /// [`HaloShape::Faces`] the union of the halo layers; for
    /// [`HaloShape::FacesAndCorners`] every non-interior site within `depth` of the
    /// interior in the cut directions (edges and corners included), lexicographic.
    pub fn halo_sites(&self, shape: HaloShape) -> Vec<Coords> {
        match shape {
            HaloShape::Faces => (0..4)
                .flat_map(|mu| Side::BOTH.map(|side| self.halo_layers(mu, side)))
                .flatten()
                .collect(),
            HaloShape::FacesAndCorners => {
                let cut = |mu: usize| self.decomposition.grid().is_cut(mu);
                let d = self.depth;
                let lo = std::array::from_fn(|mu| self.margin[mu] - if cut(mu) { d } else { 0 });
                let hi = std::array::from_fn(|mu| {
                    self.margin[mu] + self.local().extent(mu) + if cut(mu) { d } else { 0 }
                });
                box_sites(lo, hi)
                    .into_iter()
                    .filter(|&c| self.local_of_ext(c).is_none())
                    .collect()
            }
        }
    }

    /// The sites with coordinate μ in `range` and, in the other directions, interior
    /// coordinates ([`HaloShape::Faces`]) or the whole extended range
    /// ([`HaloShape::FacesAndCorners`]); lexicographic.
    fn slab(&self, mu: usize, range: std::ops::Range<usize>, shape: HaloShape) -> Vec<Coords> {
        let (mut lo, mut hi): (Coords, Coords) = match shape {
            HaloShape::Faces => (
                self.margin,
                std::array::from_fn(|nu| self.margin[nu] + self.local().extent(nu)),
            ),
            HaloShape::FacesAndCorners => ([0; 4], self.extended.dims()),
        };
        lo[mu] = range.start;
        hi[mu] = range.end;
        box_sites(lo, hi)
    }
}

/// Which halo sites an exchange fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HaloShape {
    /// The faces only: slabs spanning the interior in the other directions. Enough for
    /// the straight hops of the Dirac operators (a hop changes one coordinate); all
    /// directions travel in one grouped exchange.
    Faces,
    /// Faces, edges and corners: slabs spanning the whole extended lattice in the other
    /// directions, exchanged **direction by direction in order** (x, y, z, t). A slab of
    /// direction μ then carries the halos of the directions before μ, already filled, so
    /// that after the last direction every site within `depth` of the interior holds its
    /// global value; stale values sent along in directions after μ are overwritten when
    /// those directions are exchanged. Needed by link paths (staples reach diagonally).
    FacesAndCorners,
}

/// The sites `lo ≤ c < hi` (per direction), lexicographic (x fastest).
fn box_sites(lo: Coords, hi: Coords) -> Vec<Coords> {
    let mut out = Vec::with_capacity((0..4).map(|mu| hi[mu] - lo[mu]).product());
    for t in lo[3]..hi[3] {
        for z in lo[2]..hi[2] {
            for y in lo[1]..hi[1] {
                for x in lo[0]..hi[0] {
                    out.push([x, y, z, t]);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::decomposition::{ProcessGrid, NAIK_DEPTH};

    fn ext(dims: [usize; 4], grid: [usize; 4], depth: usize) -> ExtendedLattice {
        let d = Decomposition::new(Lattice::new(dims).unwrap(), ProcessGrid::new(grid).unwrap())
            .unwrap();
        ExtendedLattice::new(d, depth).unwrap()
    }

    /// The interior box and the exterior slabs cover the rank's interior sites exactly
    /// once; the interior box's sites have every neighbour within `depth` inside the
    /// local lattice, and each slab of μ holds only sites within `depth` of a boundary of
    /// μ, none within `depth` of a boundary of a cut direction after μ.
    #[test]
    fn launch_boxes_partition_the_interior() {
        use std::collections::HashMap;
        for (dims, grid, depth) in [
            ([8, 8, 8, 8], [1, 1, 1, 2], 1),
            ([8, 8, 8, 8], [1, 1, 2, 2], 1),
            ([8, 8, 8, 8], [2, 2, 2, 2], 1),
            ([8, 8, 8, 8], [2, 1, 2, 2], 3),
            ([4, 4, 4, 8], [2, 2, 1, 2], 1),
            ([4, 4, 4, 8], [1, 1, 1, 2], 3),
            ([8, 8, 8, 8], [1, 1, 1, 1], 1),
        ] {
            let e = ext(dims, grid, depth);
            let boxes = e.launch_boxes();
            let mut count: HashMap<Coords, usize> = HashMap::new();
            let is_cut = |nu: usize| e.decomposition().grid().is_cut(nu);
            let near = |c: Coords, nu: usize| {
                let local = e.local_of_ext(c).unwrap();
                is_cut(nu) && (local[nu] < depth || local[nu] + depth >= e.local().extent(nu))
            };
            for parity in 0..2 {
                for c in boxes.interior.sites_of_parity(parity) {
                    assert!((0..4).all(|nu| !near(c, nu)), "{c:?} {grid:?}");
                    *count.entry(c).or_default() += 1;
                }
                for (mu, slabs) in &boxes.exterior {
                    for slab in slabs {
                        for c in slab.sites_of_parity(parity) {
                            assert!(near(c, *mu), "{c:?} in slab {mu} {grid:?}");
                            assert!((mu + 1..4).all(|nu| !near(c, nu)), "{c:?} {grid:?}");
                            *count.entry(c).or_default() += 1;
                        }
                    }
                }
            }
            let interior = e.interior();
            assert_eq!(count.len(), interior.len(), "{grid:?} depth {depth}");
            for c in interior {
                assert_eq!(count.get(&c), Some(&1), "{c:?} {grid:?} depth {depth}");
            }
        }
    }

    /// The face boxes hold the sites of the boundary and halo layers; a rank's boundary
    /// box and its neighbour's halo box list the same global sites in thread order.
    #[test]
    fn face_boxes_are_the_layers_in_matching_order() {
        for (grid, depth) in [([1, 1, 1, 2], 1), ([2, 1, 2, 2], 3), ([2, 2, 2, 2], 1)] {
            let e = ext([8, 8, 8, 8], grid, depth);
            let dec = e.decomposition();
            for mu in 0..4 {
                for side in Side::BOTH {
                    let Some([boundary, halo]) = e.face_boxes(mu, side) else {
                        assert!(!dec.grid().is_cut(mu));
                        continue;
                    };
                    let sorted = |mut v: Vec<Coords>| {
                        v.sort();
                        v
                    };
                    let both = |b: SiteBox| {
                        sorted([0, 1].iter().flat_map(|&p| b.sites_of_parity(p)).collect())
                    };
                    assert_eq!(both(boundary), sorted(e.boundary_layers(mu, side)));
                    assert_eq!(both(halo), sorted(e.halo_layers(mu, side)));
                    for rank in 0..dec.size() {
                        let peer = dec.neighbour(rank, mu, side);
                        let [_, peer_halo] = e.face_boxes(mu, side.opposite()).unwrap();
                        for parity in 0..2 {
                            let sent = boundary.sites_of_parity(parity);
                            let got = peer_halo.sites_of_parity(parity);
                            assert_eq!(sent.len(), got.len());
                            for (x, y) in sent.into_iter().zip(got) {
                                assert_eq!(e.global_of_ext(rank, x).0, e.global_of_ext(peer, y).0);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Margins: depth in cut directions, 0 elsewhere, one more layer in the first cut
    /// direction when depth · cuts is odd; then every interior site has the same parity
    /// on the extended lattice as globally, on every rank.
    #[test]
    fn margins_keep_extended_parity_equal_to_global_parity() {
        for (grid, depth, margin) in [
            ([1, 1, 1, 2], 1, [0, 0, 0, 2]),
            ([1, 1, 2, 2], 1, [0, 0, 1, 1]),
            ([2, 1, 2, 2], 3, [4, 0, 3, 3]),
            ([2, 2, 2, 2], 3, [3, 3, 3, 3]),
            ([1, 1, 1, 1], 3, [0, 0, 0, 0]),
        ] {
            let e = ext([8, 8, 8, 8], grid, depth);
            assert_eq!(e.margin(), margin, "{grid:?} depth {depth}");
            let dec = e.decomposition();
            for rank in 0..dec.size() {
                for x in e.interior() {
                    let (g, wraps) = e.global_of_ext(rank, x);
                    assert_eq!(wraps, [0; 4]);
                    let c = e.local_of_ext(x).unwrap();
                    assert_eq!(dec.global_coords(rank, c), g);
                    assert_eq!(e.extended().parity(x), dec.global().parity(g));
                }
            }
        }
    }

    /// Boundary layers of a rank and the halo layers of its neighbour on that side name
    /// the same global sites, entry by entry; crossing the torus' boundary shows in the
    /// wrap count only at the first and last ranks.
    #[test]
    fn boundary_layers_are_the_neighbours_halo_layers() {
        let e = ext([4, 8, 4, 12], [1, 2, 1, 2], NAIK_DEPTH);
        let dec = e.decomposition();
        for rank in 0..dec.size() {
            for mu in [1, 3] {
                for side in Side::BOTH {
                    let n = dec.neighbour(rank, mu, side);
                    let sent = e.boundary_layers(mu, side);
                    let halo = e.halo_layers(mu, side.opposite());
                    assert_eq!(
                        sent.len(),
                        NAIK_DEPTH * e.local().volume() / e.local().extent(mu)
                    );
                    assert_eq!(sent.len(), halo.len());
                    for (s, h) in sent.iter().zip(&halo) {
                        let (gs, _) = e.global_of_ext(rank, *s);
                        let (gh, wraps) = e.global_of_ext(n, *h);
                        assert_eq!(gs, gh);
                        assert!(e.local_of_ext(*h).is_none(), "a halo site is not interior");
                        let crossed = dec.face_wraps(rank, mu, side);
                        assert_eq!(wraps[mu] != 0, crossed, "rank {rank} mu {mu} {side:?}");
                    }
                }
            }
            assert!(
                e.boundary_layers(0, Side::Forward).is_empty(),
                "x is not cut"
            );
        }
    }

    #[test]
    fn a_halo_deeper_than_a_cut_extent_is_an_error() {
        let d = Decomposition::new(
            Lattice::new([4, 4, 4, 8]).unwrap(),
            ProcessGrid::new([1, 1, 1, 4]).unwrap(),
        )
        .unwrap();
        assert!(matches!(
            ExtendedLattice::new(d, NAIK_DEPTH),
            Err(DecompositionError::ShorterThanHalo {
                dir: 't',
                local: 2,
                ..
            })
        ));
        // Depth 1 in one cut direction: one more layer each side for the parity.
        assert_eq!(
            ExtendedLattice::new(d, 1).unwrap().extended().dims(),
            [4, 4, 4, 6]
        );
    }
}
