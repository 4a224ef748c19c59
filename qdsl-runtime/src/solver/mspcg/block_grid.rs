//! [`PaddedBlocks`]: a grid of blocks over a *domain* — the whole lattice of one
//! process, or one rank's local lattice of a decomposed one ([`BlockDomain`]) — each
//! block with its own *padded* local lattice, and the maps between the domain's even-odd
//! fields and the blocks' local fields.
//!
//! The domain (extents D_μ) is tiled by blocks of extents b_μ (a
//! [`BlockDecomposition`]); a direction is *padded* when the blocks cut it (b_μ < D_μ)
//! or when the process grid does (the rank's neighbours own the sites beyond its
//! boundary). The local lattice of a block is the block with a pad of w = 2 sites on each
//! side of every padded direction,
//!
//! ℓ_μ = b_μ + 2w (padded),  ℓ_μ = D_μ (otherwise),
//!
//! local coordinates l ↔ domain coordinates d = o + l − w, o the block's origin; d
//! wraps modulo D_μ in a direction the process grid does not cut (the whole lattice's
//! periodicity) and reaches w sites into the rank's halo in one it cuts. Two hops out
//! and two back reach at most w = 2 sites beyond the block, which is why a pad of two
//! makes the four-hop normal operator exact on the block ([`super::LocalNormal`]). The
//! local lattice is periodic: its wrap joins the two pads, which carries only terms
//! that never reach the block within four hops (module docs of
//! [`super::local_operator`]).
//!
//! The links of the local lattice are the links at those sites — the global links on
//! one process, the rank's links with their halo (faces and corners, at least w deep)
//! on a decomposed lattice — with the fermions' antiperiodic time sign folded into the
//! time links U_t(g) of global g_t = L_t − 1 (the hop across the global time boundary
//! then carries its −1 in either direction), so that the local operators use the
//! periodic boundary. The blocks of a rank are therefore exactly the blocks of the
//! whole lattice that lie on it: the preconditioner of a decomposed solve is the
//! single-process one, computed by each rank for its own blocks without communication.

use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{BlockDecomposition, Coords, ExtendedLattice, Lattice, Lattice5D, Parity};
use qdsl_core::{Complex, Real};
use rayon::prelude::*;

/// The pad width w on each side of a cut direction: four hops reach two sites out and
/// two back.
pub const PAD: usize = 2;

/// Why a block grid cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BlockGridError {
    /// A block extent is zero or does not divide the lattice.
    #[error("--blocks {blocks:?}: {count} blocks in direction {dir} do not tile its extent {extent} into equal even blocks")]
    Tiling {
        /// The blocks per direction asked for.
        blocks: [usize; 4],
        /// The direction (x, y, z, t).
        dir: char,
        /// The blocks asked for in it.
        count: usize,
        /// The lattice extent.
        extent: usize,
    },
    /// Ls of the fields is zero.
    #[error("the fifth dimension must have Ls ≥ 1")]
    Ls,
    /// The blocks cannot be stacked along t ([`super::StackedBlocks`]).
    #[error("--blocks {blocks:?}: the GPU preconditioner stacks the blocks along t, so t must be cut into at least 2 blocks when there is more than one block (found {} in t), and the stacked lattice must fit", blocks[3])]
    Stacking {
        /// The blocks asked for.
        blocks: [usize; 4],
    },
    /// A rank's links do not reach far enough into its halo for the pads (or are not
    /// of the fields' decomposition).
    #[error("the rank's links have a halo {found} deep (of the fields' decomposition); MSPCG's pads need {PAD}")]
    Halo {
        /// The halo depth of the rank's extended lattice.
        found: usize,
    },
    /// The rank does not exist in the decomposition.
    #[error("rank {rank} of a {size}-rank grid")]
    Rank {
        /// The rank asked for.
        rank: usize,
        /// The ranks of the grid.
        size: usize,
    },
}

/// Where the blocks of a [`PaddedBlocks`] lie (module docs).
// One per block grid, built once: the size of the rank variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockDomain {
    /// The whole lattice of one process: fields and links on it, every direction
    /// periodic.
    Whole(Lattice),
    /// Rank `rank`'s local lattice of a decomposed one: its fields on the extended
    /// lattice `fields` (the solver's vectors), its links on the extended lattice
    /// `links` of the same decomposition, their halo filled with faces and corners at
    /// least [`PAD`] deep; the directions the process grid cuts are padded even with one
    /// block.
    Rank {
        /// The extended lattice of the fields gathered and scattered.
        fields: ExtendedLattice,
        /// The extended lattice of the links.
        links: ExtendedLattice,
        /// This rank.
        rank: usize,
    },
}

impl BlockDomain {
    /// The lattice the blocks tile: the whole lattice, or the rank's local lattice.
    pub fn lattice(&self) -> Lattice {
        match self {
            Self::Whole(l) => *l,
            Self::Rank { fields, .. } => *fields.local(),
        }
    }

    /// The lattice the domain's fields live on: the whole lattice, or the rank's
    /// extended lattice of the fields.
    pub fn field_lattice(&self) -> Lattice {
        match self {
            Self::Whole(l) => *l,
            Self::Rank { fields, .. } => *fields.extended(),
        }
    }

    /// The lattice the domain's links live on: the whole lattice, or the rank's
    /// extended lattice of the links.
    pub fn link_lattice(&self) -> Lattice {
        match self {
            Self::Whole(l) => *l,
            Self::Rank { links, .. } => *links.extended(),
        }
    }

    /// Whether the process grid cuts direction μ (the domain's own boundary is a
    /// neighbour's).
    fn is_cut(&self, mu: usize) -> bool {
        match self {
            Self::Whole(_) => false,
            Self::Rank { fields, .. } => fields.decomposition().grid().is_cut(mu),
        }
    }

    /// Coordinates of domain coordinates d (module docs: wrapped where the process grid
    /// does not cut) on a lattice that extends the domain by `margin` layers below it.
    fn shifted(&self, d: [isize; 4], margin: [usize; 4]) -> Coords {
        let extent = self.lattice().dims();
        std::array::from_fn(|mu| {
            let inside = if self.is_cut(mu) {
                d[mu]
            } else {
                d[mu].rem_euclid(extent[mu] as isize)
            };
            usize::try_from(inside + margin[mu] as isize)
                .expect("pads reach no farther than the links' halo")
        })
    }

    /// Coordinates on the field lattice of domain coordinates d of the domain itself.
    fn field_coords(&self, d: [isize; 4]) -> Coords {
        match self {
            Self::Whole(_) => self.shifted(d, [0; 4]),
            Self::Rank { fields, .. } => self.shifted(d, fields.margin()),
        }
    }

    /// Coordinates on the link lattice of domain coordinates d (up to [`PAD`] beyond
    /// the domain).
    fn link_coords(&self, d: [isize; 4]) -> Coords {
        match self {
            Self::Whole(_) => self.shifted(d, [0; 4]),
            Self::Rank { links, .. } => self.shifted(d, links.margin()),
        }
    }

    /// The global time coordinate of link-lattice coordinates f.
    fn global_t(&self, f: Coords) -> usize {
        match self {
            Self::Whole(_) => f[3],
            Self::Rank { links, rank, .. } => links.global_of_ext(*rank, f).0[3],
        }
    }

    /// The extent of the global lattice in t.
    fn global_extent_t(&self) -> usize {
        match self {
            Self::Whole(l) => l.extent(3),
            Self::Rank { fields, .. } => fields.decomposition().global().extent(3),
        }
    }
}

const DIRS: [char; 4] = ['x', 'y', 'z', 't'];

/// A virtual block grid with padded local lattices (module docs).
#[derive(Clone, Debug)]
pub struct PaddedBlocks {
    domain: BlockDomain,
    decomposition: BlockDecomposition,
    ls: usize,
    local: Lattice,
    pad: [usize; 4],
    /// Per block: (local, domain field) single-parity site indices of the block's sites
    /// of the solve parity.
    interior: Vec<Vec<(usize, usize)>>,
    /// Local single-parity indices of the pad sites, per parity [even, odd].
    pad_sites: [Vec<usize>; 2],
    parity: Parity,
}

impl PaddedBlocks {
    /// The grid of `blocks[μ]` blocks per direction on the whole lattice `global` × Ls
    /// for fields on `parity`. Each count must divide L_μ into blocks of even extent
    /// (even extents keep a site's parity the same in the local and the global lattice).
    pub fn new(
        global: Lattice,
        ls: usize,
        blocks: [usize; 4],
        parity: Parity,
    ) -> Result<Self, BlockGridError> {
        Self::on(BlockDomain::Whole(global), ls, blocks, parity)
    }

    /// The grid of `blocks[μ]` blocks per direction on rank `rank`'s local lattice × Ls
    /// (the rank's share of a grid of blocks on the whole lattice), for fields on
    /// `parity` living on the extended lattice `fields`, with links on the extended
    /// lattice `links` of the same decomposition, at least [`PAD`] deep where the
    /// process grid cuts.
    pub fn on_rank(
        fields: ExtendedLattice,
        links: ExtendedLattice,
        rank: usize,
        ls: usize,
        blocks: [usize; 4],
        parity: Parity,
    ) -> Result<Self, BlockGridError> {
        let size = fields.decomposition().size();
        if rank >= size {
            return Err(BlockGridError::Rank { rank, size });
        }
        if links.decomposition() != fields.decomposition()
            || (links.decomposition().grid().cut_count() > 0 && links.depth() < PAD)
        {
            return Err(BlockGridError::Halo {
                found: links.depth(),
            });
        }
        Self::on(
            BlockDomain::Rank {
                fields,
                links,
                rank,
            },
            ls,
            blocks,
            parity,
        )
    }

    /// The grid of `blocks` on `domain` (module docs).
    pub fn on(
        domain: BlockDomain,
        ls: usize,
        blocks: [usize; 4],
        parity: Parity,
    ) -> Result<Self, BlockGridError> {
        if ls == 0 {
            return Err(BlockGridError::Ls);
        }
        let lattice = domain.lattice();
        let mut extents = [0; 4];
        for mu in 0..4 {
            let (n, l) = (blocks[mu], lattice.extent(mu));
            if n == 0 || !l.is_multiple_of(n) || !(l / n).is_multiple_of(2) {
                return Err(BlockGridError::Tiling {
                    blocks,
                    dir: DIRS[mu],
                    count: n,
                    extent: l,
                });
            }
            extents[mu] = l / n;
        }
        let decomposition =
            BlockDecomposition::new(lattice, extents).expect("extents checked to divide");
        let pad: [usize; 4] = std::array::from_fn(|mu| {
            if blocks[mu] > 1 || domain.is_cut(mu) {
                PAD
            } else {
                0
            }
        });
        let local = Lattice::new(std::array::from_fn(|mu| extents[mu] + 2 * pad[mu]))
            .expect("even extents");
        let mut grid = Self {
            domain,
            decomposition,
            ls,
            local,
            pad,
            interior: Vec::new(),
            pad_sites: [Vec::new(), Vec::new()],
            parity,
        };
        let local_layout = |p| SpinorLayout::wilson(local, SiteSubset::Single(p));
        let field_layout = SpinorLayout::wilson(domain.field_lattice(), SiteSubset::Single(parity));
        for p in [Parity::Even, Parity::Odd] {
            let layout = local_layout(p);
            grid.pad_sites[p as usize] = (0..local.half_volume())
                .filter(|&i| !grid.is_interior(layout.coords_of_site(i)))
                .collect();
        }
        let layout = local_layout(parity);
        grid.interior = (0..grid.num_blocks())
            .map(|block| {
                (0..local.half_volume())
                    .filter(|&i| grid.is_interior(layout.coords_of_site(i)))
                    .map(|i| {
                        let f = grid.field_coords(block, layout.coords_of_site(i));
                        let fi = field_layout
                            .site_of_coords(f)
                            .expect("even pads, blocks and margins keep the parity");
                        (i, fi)
                    })
                    .collect()
            })
            .collect();
        Ok(grid)
    }

    /// The number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.decomposition.num_blocks()
    }

    /// Blocks per direction.
    pub fn blocks_per_dim(&self) -> [usize; 4] {
        self.decomposition.blocks_per_dim()
    }

    /// The extents b_μ of a block.
    pub fn block_dims(&self) -> [usize; 4] {
        self.decomposition.block_dims()
    }

    /// The padded local lattice (the same for every block).
    pub fn local_lattice(&self) -> Lattice {
        self.local
    }

    /// Where the blocks lie.
    pub fn domain(&self) -> &BlockDomain {
        &self.domain
    }

    /// The lattice the blocks tile (the whole lattice, or the rank's local lattice).
    pub fn domain_lattice(&self) -> Lattice {
        self.domain.lattice()
    }

    /// The lattice of the fields the grid gathers from and scatters into (the whole
    /// lattice, or the rank's extended lattice).
    pub fn field_lattice(&self) -> Lattice {
        self.domain.field_lattice()
    }

    /// Whether direction μ is padded (cut by the blocks or by the process grid).
    pub fn is_padded(&self, mu: usize) -> bool {
        self.pad[mu] > 0
    }

    /// The parity of the fields the grid maps.
    pub fn parity(&self) -> Parity {
        self.parity
    }

    /// The layout of the local 5D fields on parity `p`.
    pub fn local_layout(&self, p: Parity) -> SpinorLayout {
        let l5 = Lattice5D::new(self.local.dims(), self.ls).expect("ls checked");
        SpinorLayout::domain_wall(l5, SiteSubset::Single(p))
    }

    /// Ls of the fields.
    pub fn ls(&self) -> usize {
        self.ls
    }

    /// Whether the local coordinates lie inside the block (not in a pad).
    pub(crate) fn is_interior(&self, l: Coords) -> bool {
        let b = self.block_dims();
        (0..4).all(|mu| l[mu] >= self.pad[mu] && l[mu] < self.pad[mu] + b[mu])
    }

    /// The block's origin o.
    fn origin(&self, block: usize) -> Coords {
        let (n, b) = (self.blocks_per_dim(), self.block_dims());
        let mut rest = block;
        std::array::from_fn(|mu| {
            let k = rest % n[mu];
            rest /= n[mu];
            k * b[mu]
        })
    }

    /// The domain coordinates d = o + l − w of local coordinates l of `block` (module
    /// docs), not yet wrapped.
    fn domain_coords(&self, block: usize, l: Coords) -> [isize; 4] {
        let o = self.origin(block);
        std::array::from_fn(|mu| (o[mu] + l[mu]) as isize - self.pad[mu] as isize)
    }

    /// The field-lattice coordinates of the block's own (not pad) local coordinates l
    /// of `block`, on the whole lattice or the rank's extended one.
    pub fn field_coords(&self, block: usize, l: Coords) -> Coords {
        debug_assert!(self.is_interior(l), "pad sites have no field site");
        self.domain.field_coords(self.domain_coords(block, l))
    }

    /// The links of `block`'s local lattice (module docs: the links at the domain's
    /// sites, the antiperiodic time sign folded into U_t at global g_t = L_t − 1), to be
    /// used with the periodic time boundary. `gauge` lives on the domain's link lattice
    /// (the whole lattice, or the rank's extended lattice of the links, halo filled).
    pub fn local_gauge<T: Real>(
        &self,
        gauge: &GaugeField<T>,
        boundary: TimeBoundary,
        block: usize,
    ) -> GaugeField<T> {
        assert_eq!(
            *gauge.lattice(),
            self.domain.link_lattice(),
            "the links of the block grid's domain"
        );
        let last_t = self.domain.global_extent_t() - 1;
        GaugeField::par_from_fn(self.local, |l, mu| {
            let f = self.domain.link_coords(self.domain_coords(block, l));
            let link = *gauge.link_at(f, mu);
            if mu == 3
                && boundary == TimeBoundary::Antiperiodic
                && self.domain.global_t(f) == last_t
            {
                link * T::from_f64(-1.0)
            } else {
                link
            }
        })
    }

    /// local ← P_s global: the block's sites of `global` (a field of the domain, on the
    /// grid's parity) into the local field (converted to its precision), the pads zero.
    pub fn gather<H: Real, L: Real>(
        &self,
        block: usize,
        global: &ColourSpinorField<H>,
        local: &mut ColourSpinorField<L>,
    ) {
        local.data_mut().fill(Complex::new(L::zero(), L::zero()));
        copy_sites(global, local, self.interior[block].iter().copied());
    }

    /// global|_s ← local|_s: the block's sites of `local` into `global` (the other sites
    /// of `global` untouched).
    pub fn scatter<H: Real, L: Real>(
        &self,
        block: usize,
        local: &ColourSpinorField<L>,
        global: &mut ColourSpinorField<H>,
    ) {
        let pairs = self.interior[block].iter().map(|&(l, g)| (g, l));
        copy_sites(local, global, pairs);
    }

    /// Sets the pad sites of a local field on parity `p` to zero (the projection P_s).
    pub fn zero_pad<T: Real>(&self, field: &mut ColourSpinorField<T>, p: Parity) {
        let layout = *field.layout();
        let n = layout.site_len();
        let zero = Complex::new(T::zero(), T::zero());
        let pads = &self.pad_sites[p as usize];
        field
            .data_mut()
            .par_chunks_mut(layout.sites_per_slice() * n)
            .for_each(|slice| {
                for &i in pads {
                    slice[i * n..(i + 1) * n].fill(zero);
                }
            });
    }
}

/// dst(s₅, d) ← src(s₅, c), converted to dst's precision, for every fifth-dimension slice
/// s₅ and every pair (d, c) of single-parity sites in `pairs`; the other sites of dst
/// untouched.
pub(crate) fn copy_sites<S: Real, D: Real>(
    src: &ColourSpinorField<S>,
    dst: &mut ColourSpinorField<D>,
    pairs: impl Iterator<Item = (usize, usize)> + Clone,
) {
    let (sl, dl) = (*src.layout(), *dst.layout());
    let n = sl.site_len();
    let (from, to) = (src.data(), dst.data_mut());
    for s in 0..sl.ls() {
        for (d, c) in pairs.clone() {
            let (a, b) = (dl.offset(s, d, 0, 0), sl.offset(s, c, 0, 0));
            for k in 0..n {
                let z = from[b + k];
                to[a + k] = Complex::new(D::from_f64(z.re.to_f64()), D::from_f64(z.im.to_f64()));
            }
        }
    }
}
