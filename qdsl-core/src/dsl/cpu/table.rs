//! The neighbour table of the generated CPU code: for every output site x (one 4D slice
//! of the output subset) and every displacement d = n · μ̂ a spec uses (its hops and the
//! sites of its links), the checkerboard index of x + d (periodically wrapped) and the
//! hop's boundary factor, folded once instead of recomputed per term:
//!
//! ```text
//! factor(x, d) = 0                 if the hop leaves x's Dirichlet block,
//!              = (−1)^{wraps}      if μ is antiperiodic (wraps: boundary crossings),
//!              = 1                 otherwise.
//! ```
//!
//! Tables depend only on the geometry (lattice, output subset, time boundary, Dirichlet
//! blocks, displacements), so [`table`] keeps the most recent few and hands them out
//! shared: repeated applications (solvers, benchmarks) build each table once.

use crate::dsl::variant::{DirichletBlocks, TimeBoundary};
use crate::field::{SiteSubset, SpinorLayout};
use crate::lattice::{BoundaryConditions, Lattice};
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// A displacement n · μ̂ from the output site: (μ, n).
pub type Displacement = (usize, isize);

/// How many tables the cache keeps (the least recently used one is dropped first).
const CACHED_TABLES: usize = 8;

/// The geometry a table is built for.
#[derive(Clone, Debug, PartialEq)]
struct TableKey {
    lattice: Lattice,
    subset: SiteSubset,
    boundary: TimeBoundary,
    dirichlet: Option<DirichletBlocks>,
    displacements: Vec<Displacement>,
}

/// Checkerboard indices and boundary factors of x + d for every output site x and
/// displacement d (row-major: site, then displacement).
#[derive(Debug)]
pub struct NeighbourTable {
    per_site: usize,
    cb: Vec<u32>,
    factor: Vec<i8>,
}

/// One output site's row of a [`NeighbourTable`].
#[derive(Clone, Copy, Debug)]
pub struct Site<'a> {
    cb: &'a [u32],
    factor: &'a [i8],
}

impl Site<'_> {
    /// The checkerboard index of x + d_j (d_j: the spec's j-th displacement).
    #[inline(always)]
    pub fn cb(&self, j: usize) -> usize {
        self.cb[j] as usize
    }

    /// The boundary factor (0, ±1) of the hop x → x + d_j.
    #[inline(always)]
    pub fn factor(&self, j: usize) -> i8 {
        self.factor[j]
    }
}

impl NeighbourTable {
    /// Builds the table of `displacements` for the 4D sites of `out` (one slice).
    fn build(key: &TableKey) -> Self {
        let lattice = key.lattice;
        let bc = match key.boundary {
            TimeBoundary::Periodic => BoundaryConditions::periodic(),
            TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
        };
        let per_site = key.displacements.len().max(1);
        let sites = match key.subset {
            SiteSubset::Full => lattice.volume(),
            SiteSubset::Single(_) => lattice.half_volume(),
        };
        let mut cb = vec![0u32; sites * per_site];
        let mut factor = vec![0i8; sites * per_site];
        cb.par_chunks_mut(per_site)
            .zip(factor.par_chunks_mut(per_site))
            .enumerate()
            .for_each(|(i, (cb, factor))| {
                let x = lattice.coords_of_cb(match key.subset {
                    SiteSubset::Full => i,
                    SiteSubset::Single(p) => lattice.join_cb(p, i),
                });
                for (j, &(mu, steps)) in key.displacements.iter().enumerate() {
                    let (y, _) = lattice.shift(x, mu, steps);
                    let walled = key.dirichlet.is_some_and(|d| !d.keeps(x[mu], y[mu], mu));
                    // Volumes are below 2³¹ (lattice::MAX_SITES): the index fits.
                    cb[j] = lattice.cb_index(y) as u32;
                    factor[j] = if walled {
                        0
                    } else {
                        bc.hop_sign(&lattice, x, mu, steps) as i8
                    };
                }
            });
        NeighbourTable {
            per_site,
            cb,
            factor,
        }
    }

    /// The row of output site `i` (index within the output subset).
    #[inline(always)]
    pub fn site(&self, i: usize) -> Site<'_> {
        let r = i * self.per_site..(i + 1) * self.per_site;
        Site {
            cb: &self.cb[r.clone()],
            factor: &self.factor[r],
        }
    }
}

/// The recently built tables, most recent last.
static TABLES: Mutex<Vec<(TableKey, Arc<NeighbourTable>)>> = Mutex::new(Vec::new());

/// The table of `displacements` for the output sites of `out` (4D part), the time
/// boundary and the Dirichlet blocks: from the cache, or built and cached.
pub fn table(
    out: &SpinorLayout,
    boundary: TimeBoundary,
    dirichlet: Option<DirichletBlocks>,
    displacements: &[Displacement],
) -> Arc<NeighbourTable> {
    let key = TableKey {
        lattice: *out.lattice(),
        subset: out.subset(),
        boundary,
        dirichlet,
        displacements: displacements.to_vec(),
    };
    // A panic while holding the lock leaves the list itself valid: keep using it.
    let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = tables.iter().position(|(k, _)| *k == key) {
        let entry = tables.remove(k);
        let t = Arc::clone(&entry.1);
        tables.push(entry);
        return t;
    }
    let t = Arc::new(NeighbourTable::build(&key));
    if tables.len() == CACHED_TABLES {
        tables.remove(0);
    }
    tables.push((key, Arc::clone(&t)));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Parity;

    const HOPS: [Displacement; 4] = [(3, 1), (3, -1), (0, 3), (0, 0)];

    fn layout(parity: Parity) -> SpinorLayout {
        let lat = Lattice::new([4, 4, 4, 4]).unwrap();
        SpinorLayout::wilson(lat, SiteSubset::Single(parity))
    }

    /// The row of the first odd site (1,0,0,0) of 4⁴, computed by hand with
    /// lex = x + 4 (y + 4 (z + 4 t)) and cb = parity · V/2 + lex/2 (V/2 = 128).
    #[test]
    fn rows_hold_wrapped_checkerboard_indices_and_antiperiodic_signs() {
        let t = table(
            &layout(Parity::Odd),
            TimeBoundary::Antiperiodic,
            None,
            &HOPS,
        );
        // Odd site 0 is (1,0,0,0), lex 1.
        let s = t.site(0);
        // (1,0,0,1): lex 65, even → cb 32; no wrap.
        assert_eq!((s.cb(0), s.factor(0)), (32, 1));
        // (1,0,0,3): lex 193, even → cb 96; wraps backward in t: −1.
        assert_eq!((s.cb(1), s.factor(1)), (96, -1));
        // (0,0,0,0): x wraps (1+3 = 4 → 0), space is periodic: +1; cb 0.
        assert_eq!((s.cb(2), s.factor(2)), (0, 1));
        // The site itself: odd, lex 1 → cb 128 + 0.
        assert_eq!((s.cb(3), s.factor(3)), (128, 1));
    }

    /// Dirichlet blocks of 2 in t: the hop out of the block gets factor 0, the one
    /// inside keeps 1; the walls also cut the periodic wrap.
    #[test]
    fn dirichlet_walls_zero_the_factor_of_hops_leaving_the_block() {
        let walls = Some(DirichletBlocks {
            block: [4, 4, 4, 2],
        });
        let t = table(&layout(Parity::Odd), TimeBoundary::Periodic, walls, &HOPS);
        // Odd site 0 = (1,0,0,0): t+1 = 1 stays in block 0, t−1 wraps to 3 (block 1).
        let s = t.site(0);
        assert_eq!(s.factor(0), 1);
        assert_eq!(s.factor(1), 0);
    }

    /// The cache hands the same table back for the same geometry and a new one when
    /// the boundary differs.
    #[test]
    fn the_cache_shares_tables_of_equal_geometry() {
        let a = table(&layout(Parity::Even), TimeBoundary::Periodic, None, &HOPS);
        let b = table(&layout(Parity::Even), TimeBoundary::Periodic, None, &HOPS);
        let c = table(
            &layout(Parity::Even),
            TimeBoundary::Antiperiodic,
            None,
            &HOPS,
        );
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
    }
}
