//! [`PaddedBlocks`]: a virtual grid of blocks on one process, each block with its own
//! *padded* local lattice, and the maps between the global even-odd fields and the
//! blocks' local fields.
//!
//! The lattice (extents L_μ) is tiled by blocks of extents b_μ (a
//! [`BlockDecomposition`]); a direction is *cut* when b_μ < L_μ. The local lattice of a
//! block is the block with a pad of w = 2 sites on each side of every cut direction,
//!
//! ℓ_μ = b_μ + 2w (cut),  ℓ_μ = L_μ (uncut),
//!
//! local coordinates l ↔ global g = (o + l − w) mod L, o the block's origin. Two hops
//! out and two back reach at most w = 2 sites beyond the block, which is why a pad of
//! two makes the four-hop normal operator exact on the block ([`super::LocalNormal`]).
//! The local lattice is periodic: its wrap joins the two pads, which carries only terms
//! that never reach the block within four hops (module docs of [`super::local_operator`]).
//!
//! The links of the local lattice are the global links at the global sites, with the
//! fermions' antiperiodic time sign folded into the time links U_t(g) of g_t = L_t − 1
//! (the hop across the global time boundary then carries its −1 in either direction),
//! so that the local operators use the periodic boundary.

use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{BlockDecomposition, Coords, Lattice, Lattice5D, Parity};
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
}

const DIRS: [char; 4] = ['x', 'y', 'z', 't'];

/// A virtual block grid with padded local lattices (module docs).
#[derive(Clone, Debug)]
pub struct PaddedBlocks {
    global: Lattice,
    decomposition: BlockDecomposition,
    ls: usize,
    local: Lattice,
    pad: [usize; 4],
    /// Per block: (local, global) single-parity site indices of the block's sites of
    /// the solve parity.
    interior: Vec<Vec<(usize, usize)>>,
    /// Local single-parity indices of the pad sites, per parity [even, odd].
    pad_sites: [Vec<usize>; 2],
    parity: Parity,
}

impl PaddedBlocks {
    /// The grid of `blocks[μ]` blocks per direction on `global` × Ls for fields on
    /// `parity`. Each count must divide L_μ into blocks of even extent (even extents keep
    /// a site's parity the same in the local and the global lattice).
    pub fn new(
        global: Lattice,
        ls: usize,
        blocks: [usize; 4],
        parity: Parity,
    ) -> Result<Self, BlockGridError> {
        if ls == 0 {
            return Err(BlockGridError::Ls);
        }
        let mut extents = [0; 4];
        for mu in 0..4 {
            let (n, l) = (blocks[mu], global.extent(mu));
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
            BlockDecomposition::new(global, extents).expect("extents checked to divide");
        let pad: [usize; 4] = std::array::from_fn(|mu| if blocks[mu] > 1 { PAD } else { 0 });
        let local = Lattice::new(std::array::from_fn(|mu| extents[mu] + 2 * pad[mu]))
            .expect("even extents");
        let mut grid = Self {
            global,
            decomposition,
            ls,
            local,
            pad,
            interior: Vec::new(),
            pad_sites: [Vec::new(), Vec::new()],
            parity,
        };
        let local_layout = |p| SpinorLayout::wilson(local, SiteSubset::Single(p));
        let global_layout = SpinorLayout::wilson(global, SiteSubset::Single(parity));
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
                        let g = grid.global_coords(block, layout.coords_of_site(i));
                        let gi = global_layout
                            .site_of_coords(g)
                            .expect("even pads and blocks keep the parity");
                        (i, gi)
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

    /// The global lattice.
    pub fn global_lattice(&self) -> Lattice {
        self.global
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

    /// g = (o + l − w) mod L for local coordinates l of `block`.
    pub fn global_coords(&self, block: usize, l: Coords) -> Coords {
        let o = self.origin(block);
        std::array::from_fn(|mu| {
            let extent = self.global.extent(mu);
            (o[mu] + l[mu] + extent - self.pad[mu]) % extent
        })
    }

    /// The links of `block`'s local lattice (module docs: the global links at the
    /// global sites, the antiperiodic time sign folded into U_t at g_t = L_t − 1), to be
    /// used with the periodic time boundary.
    pub fn local_gauge<T: Real>(
        &self,
        gauge: &GaugeField<T>,
        boundary: TimeBoundary,
        block: usize,
    ) -> GaugeField<T> {
        let last_t = self.global.extent(3) - 1;
        GaugeField::par_from_fn(self.local, |l, mu| {
            let g = self.global_coords(block, l);
            let link = *gauge.link_at(g, mu);
            if mu == 3 && g[3] == last_t && boundary == TimeBoundary::Antiperiodic {
                link * T::from_f64(-1.0)
            } else {
                link
            }
        })
    }

    /// local ← P_s global: the block's sites of `global` (on the grid's parity) into the
    /// local field (converted to its precision), the pads zero.
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
