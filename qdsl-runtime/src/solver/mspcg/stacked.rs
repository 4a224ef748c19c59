//! [`StackedBlocks`]: every block's padded local lattice ([`PaddedBlocks`]) placed one
//! after the other along t in one *stacked* lattice, so that one launch of an ordinary
//! periodic operator applies every block's local operator at once (the GPU form of
//! MSPCG's preconditioner), and each block's sites of one parity are one contiguous
//! range of the stacked field's single-parity sites.
//!
//! # The stacked lattice
//!
//! Block s's local lattice (extents ℓ_μ) occupies the stacked coordinates
//! (l_x, l_y, l_z, s·ℓ_t + l_t), so the stacked lattice is ℓ_x × ℓ_y × ℓ_z × (N ℓ_t) for
//! N blocks, with the links of each block's local lattice ([`PaddedBlocks::local_gauge`]:
//! the global links, the antiperiodic time sign folded in) and the periodic boundary.
//!
//! In x, y and z the stacked lattice wraps onto itself exactly as each local lattice
//! does. In t, the outer pad layer of block s touches the outer pad layer of block s + 1
//! instead of its own other pad. That changes nothing the local operator computes
//! ([`super::local_operator`]): with x zero in every pad, the first hop's output on an
//! outer pad layer reads only pad sites (zero, in either block), so it is the exact
//! value (zero); the second hop's output on it reads the first hop's on both sides —
//! exact in its own block, zero across the join — so M̂x is exact two sites out; what
//! the third hop brings across the join lands on the outer pad layer, which the fourth
//! hop (whose output is kept on the block only) never reads. The host test
//! `the_stacked_operator_is_every_blocks_local_operator` checks it against the blocks'
//! own local operators, with and without the snake terms.
//!
//! This needs t padded (two or more blocks in t, or t cut by the process grid): were t
//! unpadded, block s's last time slice would hop into block s + 1's first, a site of the
//! block, not of a pad.
//!
//! # Sites
//!
//! The stacked lattice's single-parity index runs x fastest and t slowest, so block s
//! holds the single-parity indices [s·V_ℓ/2, (s+1)·V_ℓ/2) of either parity (V_ℓ the
//! local volume): a 5D stacked field (s-slices outermost) is Ls × N equal slices, slice
//! k = s₅·N + s of fifth coordinate s₅ on block s — the right-hand-side slices of the
//! batched BLAS and reductions, which give every block its own CG coefficients.
//! [`StackedBlocks::global_sites`] maps each stacked single-parity site to its
//! single-parity site on the domain's field lattice (the whole lattice, or the rank's
//! extended lattice: [`super::BlockDomain`]), or −1 on a pad.

use super::block_grid::copy_sites;
use super::{BlockGridError, PaddedBlocks};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Lattice5D, Parity, SiteBox};
use qdsl_core::{Complex, Real};

/// The blocks' padded local lattices stacked along t (module docs).
#[derive(Clone, Debug)]
pub struct StackedBlocks {
    grid: PaddedBlocks,
    lattice: Lattice,
    /// Per parity [even, odd]: the field-lattice single-parity site of each stacked
    /// single-parity site, −1 on a pad.
    global: [Vec<i32>; 2],
}

impl StackedBlocks {
    /// The stacked lattice of `grid`'s blocks. An error when t is not padded while there
    /// is more than one block (module docs), or when the stacked lattice is too large.
    pub fn new(grid: PaddedBlocks) -> Result<Self, BlockGridError> {
        let n = grid.num_blocks();
        let blocks = grid.blocks_per_dim();
        if n > 1 && !grid.is_padded(3) {
            return Err(BlockGridError::Stacking { blocks });
        }
        let local = grid.local_lattice();
        let mut dims = local.dims();
        dims[3] *= n;
        let lattice = Lattice::new(dims).map_err(|_| BlockGridError::Stacking { blocks })?;
        let half_local = local.half_volume();
        let field_lattice = grid.field_lattice();
        let global = [Parity::Even, Parity::Odd].map(|p| {
            let stacked = SpinorLayout::wilson(lattice, SiteSubset::Single(p));
            let field_layout = SpinorLayout::wilson(field_lattice, SiteSubset::Single(p));
            (0..lattice.half_volume())
                .map(|i| {
                    let v = stacked.coords_of_site(i);
                    let block = v[3] / local.extent(3);
                    debug_assert_eq!(block, i / half_local, "block {block} is contiguous");
                    let l = [v[0], v[1], v[2], v[3] % local.extent(3)];
                    if grid.is_interior(l) {
                        let f = grid.field_coords(block, l);
                        let site = field_layout
                            .site_of_coords(f)
                            .expect("even pads, blocks and margins keep the parity");
                        i32::try_from(site).expect("global sites fit i32")
                    } else {
                        -1
                    }
                })
                .collect()
        });
        Ok(Self {
            grid,
            lattice,
            global,
        })
    }

    /// The block grid.
    pub fn grid(&self) -> &PaddedBlocks {
        &self.grid
    }

    /// The stacked lattice ℓ_x × ℓ_y × ℓ_z × (N ℓ_t).
    pub fn lattice(&self) -> Lattice {
        self.lattice
    }

    /// The number of blocks N.
    pub fn num_blocks(&self) -> usize {
        self.grid.num_blocks()
    }

    /// The slices of a stacked 5D field: Ls × N (module docs).
    pub fn slices(&self) -> usize {
        self.grid.ls() * self.num_blocks()
    }

    /// The field-lattice single-parity site (the whole lattice's, or the rank's extended
    /// lattice's) of each stacked single-parity site on parity `p`, −1 on a pad.
    pub fn global_sites(&self, p: Parity) -> &[i32] {
        &self.global[p as usize]
    }

    /// The layout of stacked 5D fields on parity `p`.
    pub fn layout(&self, p: Parity) -> SpinorLayout {
        let l5 = Lattice5D::new(self.lattice.dims(), self.grid.ls()).expect("ls checked");
        SpinorLayout::domain_wall(l5, SiteSubset::Single(p))
    }

    /// Per block, the box of stacked sites within `reach` hops of the block (in each
    /// padded direction `reach` layers of its pads, at most the pad's [`super::PAD`];
    /// whole in the others): with `reach` 0 the blocks themselves. The sites a stage of
    /// the local operator must compute when `reach` more hops follow it.
    pub fn reach_boxes(&self, reach: usize) -> Vec<SiteBox> {
        let grid = &self.grid;
        let local = grid.local_lattice();
        let block = grid.block_dims();
        (0..self.num_blocks())
            .map(|s| {
                let lo: [usize; 4] = std::array::from_fn(|mu| {
                    let pad = if grid.is_padded(mu) { super::PAD } else { 0 };
                    pad - reach.min(pad)
                });
                let n: [usize; 4] = std::array::from_fn(|mu| {
                    if grid.is_padded(mu) {
                        block[mu] + 2 * reach.min(super::PAD)
                    } else {
                        local.extent(mu)
                    }
                });
                let mut lo = lo;
                lo[3] += s * local.extent(3);
                SiteBox { lo, n }
            })
            .collect()
    }

    /// The stacked links: block s's local links ([`PaddedBlocks::local_gauge`]) on its
    /// range of t, to be used with the periodic boundary.
    pub fn gauge<T: Real>(&self, gauge: &GaugeField<T>, boundary: TimeBoundary) -> GaugeField<T> {
        let lt = self.grid.local_lattice().extent(3);
        let locals: Vec<GaugeField<T>> = (0..self.num_blocks())
            .map(|s| self.grid.local_gauge(gauge, boundary, s))
            .collect();
        GaugeField::par_from_fn(self.lattice, |v, mu| {
            *locals[v[3] / lt].link_at([v[0], v[1], v[2], v[3] % lt], mu)
        })
    }

    /// (stacked site, global site) of every stacked site of parity `p` that is a
    /// block's.
    fn mapped(&self, p: Parity) -> impl Iterator<Item = (usize, usize)> + Clone + '_ {
        self.global_sites(p)
            .iter()
            .enumerate()
            .filter_map(|(i, &g)| usize::try_from(g).ok().map(|g| (i, g)))
    }

    /// stacked ← Σ_s P_s global on the grid's parity (the pads zero), on the host.
    pub fn gather<H: Real, L: Real>(
        &self,
        global: &ColourSpinorField<H>,
        stacked: &mut ColourSpinorField<L>,
    ) {
        stacked.data_mut().fill(Complex::new(L::zero(), L::zero()));
        copy_sites(global, stacked, self.mapped(self.grid.parity()));
    }

    /// global ← the blocks' sites of `stacked` on the grid's parity, on the host (every
    /// global site is some block's).
    pub fn scatter<H: Real, L: Real>(
        &self,
        stacked: &ColourSpinorField<L>,
        global: &mut ColourSpinorField<H>,
    ) {
        let pairs = self.mapped(self.grid.parity()).map(|(i, g)| (g, i));
        copy_sites(stacked, global, pairs);
    }

    /// Zeroes the pad sites of a stacked field on parity `p`, on the host.
    pub fn zero_pad<T: Real>(&self, field: &mut ColourSpinorField<T>, p: Parity) {
        let layout = *field.layout();
        let n = layout.site_len();
        let zero = Complex::new(T::zero(), T::zero());
        let data = field.data_mut();
        for s in 0..self.grid.ls() {
            for (i, _) in self
                .global_sites(p)
                .iter()
                .enumerate()
                .filter(|(_, &g)| g < 0)
            {
                let a = layout.offset(s, i, 0, 0);
                data[a..a + n].fill(zero);
            }
        }
    }
}
