//! The lattice decomposed over processes (one GPU each): a process grid over the four
//! directions, the rank of each grid point, its neighbours and its local lattice.
//!
//! # Ranks
//! A grid `P = [Px, Py, Pz, Pt]` has `Px·Py·Pz·Pt` ranks. Rank r sits at grid coordinates
//! `p = [px, py, pz, pt]` in **lexicographic order, x fastest** — the order of sites
//! ([`super::Lattice::lex_index`]):
//!
//! ```text
//! r = px + Px (py + Py (pz + Pz pt))
//! ```
//!
//! Rank r holds the sites whose global coordinates are `offset(r) + c` for local
//! coordinates `0 ≤ c_μ < ℓ_μ`, with the local extents `ℓ_μ = L_μ / P_μ` and
//! `offset(r)_μ = p_μ ℓ_μ`. The grid is periodic: the forward neighbour of the last rank
//! in a direction is the first one (the lattice is a torus).
//!
//! # Why local extents must be even
//! Even-odd preconditioned fields hold one parity, and a site's parity is the parity of
//! the sum of its coordinates. Every rank's offset `p_μ ℓ_μ` is even when every ℓ_μ is
//! even, so the parity of a site's *local* coordinates equals the parity of its *global*
//! ones: the even sites of every rank together are exactly the global even sites, and a
//! rank can run the single-process even-odd kernels on its local lattice unchanged. With
//! an odd ℓ_μ, the ranks at odd p_μ would see the checkerboard inverted (their local
//! even sites being global odd sites) and the local checkerboard index ([`super::Lattice`]
//! needs even extents too) would not exist. Odd local extents are refused.
//!
//! # Halo depth
//! A stencil that reads ψ(x ± n μ̂) needs the n layers of sites beyond each cut face of a
//! rank (the halo): depth 1 for the Wilson and naive staggered hops, 3 for the Naik term
//! of the improved staggered hop. A rank whose local extent in a cut direction is smaller
//! than the depth would need sites of its neighbour's neighbour (the faces overlap);
//! [`Decomposition::check_halo_depth`] refuses such a decomposition. Directions that are
//! not cut (P_μ = 1) wrap locally and need no halo.

use super::{Coords, Lattice, DIRECTION_NAMES};
use std::fmt;
use thiserror::Error;

/// Halo depth of one-hop stencils (Wilson, naive staggered).
pub const ONE_HOP_DEPTH: usize = 1;
/// Halo depth of stencils with the Naik (three-hop) term.
pub const NAIK_DEPTH: usize = 3;

/// A process grid or decomposition that cannot be used; every message names the
/// direction and the values involved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecompositionError {
    /// The grid text does not have four comma-separated entries.
    #[error("process grid {text:?} has {found} entries; expected 4 (Px,Py,Pz,Pt, e.g. 1,1,2,2)")]
    WrongCount { text: String, found: usize },
    /// An entry of the grid text is not a non-negative integer.
    #[error(
        "process grid {text:?}: entry {entry:?} for direction {dir} is not a positive integer"
    )]
    NotANumber {
        text: String,
        entry: String,
        dir: char,
    },
    /// A grid entry is zero.
    #[error("process grid: P{dir} = 0; every direction needs at least one process")]
    ZeroProcesses { dir: char },
    /// The number of ranks overflows.
    #[error("process grid {grid:?} has more ranks than fit a usize")]
    TooManyRanks { grid: [usize; 4] },
    /// A grid entry does not divide the lattice extent.
    #[error("process grid P{dir} = {grid} does not divide the lattice extent L{dir} = {extent}")]
    DoesNotDivide {
        dir: char,
        extent: usize,
        grid: usize,
    },
    /// A local extent is odd.
    #[error(
        "local extent L{dir}/P{dir} = {extent}/{grid} = {local} is odd; even-odd \
         preconditioning needs even local extents so that local and global parity agree"
    )]
    OddLocalExtent {
        dir: char,
        extent: usize,
        grid: usize,
        local: usize,
    },
    /// A cut direction's local extent is shorter than the halo depth a stencil needs.
    #[error(
        "local extent L{dir}/P{dir} = {extent}/{grid} = {local} is shorter than the halo \
         depth {depth} the stencil needs (3 for the Naik term): the faces would overlap; \
         use fewer processes in direction {dir}"
    )]
    ShorterThanHalo {
        dir: char,
        extent: usize,
        grid: usize,
        local: usize,
        depth: usize,
    },
    /// The extended (halo-padded) local lattice is not a valid lattice (too many sites).
    #[error("extended local lattice: {0}")]
    Geometry(#[from] super::GeometryError),
    /// A rank outside the grid.
    #[error("rank {rank} is outside the process grid of {size} ranks")]
    RankOutOfRange { rank: usize, size: usize },
}

/// A direction along an axis: towards larger (`Forward`) or smaller (`Backward`)
/// coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// Towards smaller coordinates (−μ̂).
    Backward = 0,
    /// Towards larger coordinates (+μ̂).
    Forward = 1,
}

impl Side {
    /// Both sides, backward first.
    pub const BOTH: [Side; 2] = [Side::Backward, Side::Forward];

    /// The other side.
    pub fn opposite(self) -> Self {
        match self {
            Side::Backward => Side::Forward,
            Side::Forward => Side::Backward,
        }
    }

    /// −1 or +1.
    pub fn step(self) -> isize {
        match self {
            Side::Backward => -1,
            Side::Forward => 1,
        }
    }
}

/// The number of processes in each direction, `[Px, Py, Pz, Pt]`, each ≥ 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessGrid([usize; 4]);

impl ProcessGrid {
    /// A grid of `dims` processes per direction; refuses zero entries.
    pub fn new(dims: [usize; 4]) -> Result<Self, DecompositionError> {
        for (mu, &p) in dims.iter().enumerate() {
            if p == 0 {
                return Err(DecompositionError::ZeroProcesses {
                    dir: DIRECTION_NAMES[mu],
                });
            }
        }
        dims.iter()
            .try_fold(1usize, |acc, &p| acc.checked_mul(p))
            .ok_or(DecompositionError::TooManyRanks { grid: dims })?;
        Ok(Self(dims))
    }

    /// Parses `"Px,Py,Pz,Pt"` (e.g. `"1,1,2,2"`; spaces around entries are allowed).
    pub fn parse(text: &str) -> Result<Self, DecompositionError> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        if entries.len() != 4 {
            return Err(DecompositionError::WrongCount {
                text: text.into(),
                found: entries.len(),
            });
        }
        let mut dims = [0; 4];
        for (mu, entry) in entries.iter().enumerate() {
            dims[mu] = entry.parse().map_err(|_| DecompositionError::NotANumber {
                text: text.into(),
                entry: (*entry).into(),
                dir: DIRECTION_NAMES[mu],
            })?;
        }
        Self::new(dims)
    }

    /// The single process: `[1, 1, 1, 1]`.
    pub fn single() -> Self {
        Self([1; 4])
    }

    /// Processes per direction.
    pub fn dims(&self) -> [usize; 4] {
        self.0
    }

    /// The number of ranks, Px·Py·Pz·Pt.
    pub fn size(&self) -> usize {
        self.0.iter().product()
    }

    /// Whether direction μ is cut (more than one process along it).
    pub fn is_cut(&self, mu: usize) -> bool {
        self.0[mu] > 1
    }

    /// The number of cut directions.
    pub fn cut_count(&self) -> usize {
        (0..4).filter(|&mu| self.is_cut(mu)).count()
    }

    /// Grid coordinates of `rank` (lexicographic, x fastest; see the module docs).
    pub fn coords_of(&self, rank: usize) -> [usize; 4] {
        debug_assert!(rank < self.size());
        let p = self.0;
        [
            rank % p[0],
            (rank / p[0]) % p[1],
            (rank / (p[0] * p[1])) % p[2],
            rank / (p[0] * p[1] * p[2]),
        ]
    }

    /// Rank of in-range grid coordinates.
    pub fn rank_of(&self, c: [usize; 4]) -> usize {
        let p = self.0;
        c[0] + p[0] * (c[1] + p[1] * (c[2] + p[2] * c[3]))
    }

    /// The rank next to `rank` on `side` in direction μ (periodic: the grid is a torus;
    /// `rank` itself when direction μ is not cut).
    pub fn neighbour(&self, rank: usize, mu: usize, side: Side) -> usize {
        let mut c = self.coords_of(rank);
        let p = self.0[mu];
        c[mu] = match side {
            Side::Forward => (c[mu] + 1) % p,
            Side::Backward => (c[mu] + p - 1) % p,
        };
        self.rank_of(c)
    }
}

impl fmt::Display for ProcessGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z, t] = self.0;
        write!(f, "{x},{y},{z},{t}")
    }
}

/// A global lattice cut by a process grid into identical local lattices (see the module
/// docs for the rank order and why local extents are even).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decomposition {
    global: Lattice,
    grid: ProcessGrid,
    local: Lattice,
}

impl Decomposition {
    /// Cuts `global` by `grid`: every P_μ must divide L_μ and leave an even local extent.
    pub fn new(global: Lattice, grid: ProcessGrid) -> Result<Self, DecompositionError> {
        let mut local = [0; 4];
        for mu in 0..4 {
            let (extent, p) = (global.extent(mu), grid.dims()[mu]);
            let dir = DIRECTION_NAMES[mu];
            if !extent.is_multiple_of(p) {
                return Err(DecompositionError::DoesNotDivide {
                    dir,
                    extent,
                    grid: p,
                });
            }
            local[mu] = extent / p;
            if !local[mu].is_multiple_of(2) {
                return Err(DecompositionError::OddLocalExtent {
                    dir,
                    extent,
                    grid: p,
                    local: local[mu],
                });
            }
        }
        // Even, non-zero extents no larger than the global ones: always a valid lattice.
        let local = Lattice::new(local).expect("even local extents below the global ones");
        Ok(Self {
            global,
            grid,
            local,
        })
    }

    /// Like [`Self::new`], then [`Self::check_halo_depth`] for `depth`.
    pub fn with_halo_depth(
        global: Lattice,
        grid: ProcessGrid,
        depth: usize,
    ) -> Result<Self, DecompositionError> {
        let d = Self::new(global, grid)?;
        d.check_halo_depth(depth)?;
        Ok(d)
    }

    /// Refuses a halo of `depth` layers when a cut direction's local extent is smaller
    /// (the faces of a rank would overlap, and the halo would need sites of the
    /// neighbour's neighbour). Directions that are not cut need no halo.
    pub fn check_halo_depth(&self, depth: usize) -> Result<(), DecompositionError> {
        for (mu, &dir) in DIRECTION_NAMES.iter().enumerate() {
            let local = self.local.extent(mu);
            if self.grid.is_cut(mu) && local < depth {
                return Err(DecompositionError::ShorterThanHalo {
                    dir,
                    extent: self.global.extent(mu),
                    grid: self.grid.dims()[mu],
                    local,
                    depth,
                });
            }
        }
        Ok(())
    }

    /// The global lattice.
    pub fn global(&self) -> &Lattice {
        &self.global
    }

    /// The process grid.
    pub fn grid(&self) -> &ProcessGrid {
        &self.grid
    }

    /// The local lattice every rank holds (extents L_μ / P_μ).
    pub fn local(&self) -> &Lattice {
        &self.local
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.grid.size()
    }

    /// Checks that `rank` is one of the grid's.
    pub fn check_rank(&self, rank: usize) -> Result<(), DecompositionError> {
        if rank < self.size() {
            Ok(())
        } else {
            Err(DecompositionError::RankOutOfRange {
                rank,
                size: self.size(),
            })
        }
    }

    /// Global coordinates of rank `rank`'s local origin: `p_μ ℓ_μ`.
    pub fn offset(&self, rank: usize) -> Coords {
        let p = self.grid.coords_of(rank);
        std::array::from_fn(|mu| p[mu] * self.local.extent(mu))
    }

    /// Global coordinates of local site `c` of `rank`.
    pub fn global_coords(&self, rank: usize, c: Coords) -> Coords {
        let o = self.offset(rank);
        std::array::from_fn(|mu| o[mu] + c[mu])
    }

    /// The rank holding global site `g` and the site's local coordinates there.
    pub fn owner(&self, g: Coords) -> (usize, Coords) {
        let l = self.local.dims();
        let p = std::array::from_fn(|mu| g[mu] / l[mu]);
        (
            self.grid.rank_of(p),
            std::array::from_fn(|mu| g[mu] % l[mu]),
        )
    }

    /// The neighbour of `rank` on `side` in direction μ ([`ProcessGrid::neighbour`]).
    pub fn neighbour(&self, rank: usize, mu: usize, side: Side) -> usize {
        self.grid.neighbour(rank, mu, side)
    }

    /// Whether the face of `rank` on `side` of direction μ is also the global lattice's
    /// boundary: a message across it wraps the torus (and picks up an antiperiodic sign).
    pub fn face_wraps(&self, rank: usize, mu: usize, side: Side) -> bool {
        let p = self.grid.coords_of(rank)[mu];
        match side {
            Side::Forward => p + 1 == self.grid.dims()[mu],
            Side::Backward => p == 0,
        }
    }
}

impl fmt::Display for Decomposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on grid {} ({} per rank)",
            self.global, self.grid, self.local
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lattice(dims: [usize; 4]) -> Lattice {
        Lattice::new(dims).unwrap()
    }

    #[test]
    fn parse_accepts_four_positive_entries_and_names_what_is_wrong() {
        assert_eq!(ProcessGrid::parse("1,1,2,2").unwrap().dims(), [1, 1, 2, 2]);
        assert_eq!(ProcessGrid::parse(" 2, 1,1 ,4").unwrap().size(), 8);
        let err = |t: &str| ProcessGrid::parse(t).unwrap_err();
        assert_eq!(
            err("1,2,2"),
            DecompositionError::WrongCount {
                text: "1,2,2".into(),
                found: 3
            }
        );
        assert!(err("1,1,1,1,1").to_string().contains("has 5 entries"));
        assert_eq!(
            err("1,1,x,2"),
            DecompositionError::NotANumber {
                text: "1,1,x,2".into(),
                entry: "x".into(),
                dir: 'z'
            }
        );
        assert!(matches!(
            err("1,-1,1,1"),
            DecompositionError::NotANumber { dir: 'y', .. }
        ));
        assert_eq!(
            err("1,1,1,0"),
            DecompositionError::ZeroProcesses { dir: 't' }
        );
        assert_eq!(
            err("1,1,1,0").to_string(),
            "process grid: Pt = 0; every direction needs at least one process"
        );
        assert_eq!(
            ProcessGrid::parse("1,1,2,2").unwrap().to_string(),
            "1,1,2,2"
        );
    }

    #[test]
    fn a_grid_must_divide_the_lattice_into_even_local_extents() {
        let grid = |t| ProcessGrid::parse(t).unwrap();
        let e = Decomposition::new(lattice([8, 8, 6, 8]), grid("1,1,4,1")).unwrap_err();
        assert_eq!(
            e,
            DecompositionError::DoesNotDivide {
                dir: 'z',
                extent: 6,
                grid: 4
            }
        );
        assert_eq!(
            e.to_string(),
            "process grid Pz = 4 does not divide the lattice extent Lz = 6"
        );
        let e = Decomposition::new(lattice([8, 8, 6, 8]), grid("1,1,2,1")).unwrap_err();
        assert_eq!(
            e,
            DecompositionError::OddLocalExtent {
                dir: 'z',
                extent: 6,
                grid: 2,
                local: 3
            }
        );
        assert!(e.to_string().contains("Lz/Pz = 6/2 = 3 is odd"), "{e}");
        let d = Decomposition::new(lattice([8, 4, 6, 8]), grid("2,1,1,4")).unwrap();
        assert_eq!(d.local().dims(), [4, 4, 6, 2]);
        assert_eq!(d.size(), 8);
    }

    /// Local extent 2 in a cut direction: fine for one-hop stencils (depth 1), refused
    /// for the Naik term (depth 3) with the direction, extents and depth named; an uncut
    /// direction of extent 2 needs no halo.
    #[test]
    fn halo_deeper_than_a_cut_local_extent_is_refused() {
        let global = lattice([2, 8, 8, 8]);
        let d = Decomposition::new(global, ProcessGrid::parse("1,1,1,4").unwrap()).unwrap();
        assert!(d.check_halo_depth(ONE_HOP_DEPTH).is_ok());
        let e = d.check_halo_depth(NAIK_DEPTH).unwrap_err();
        assert_eq!(
            e,
            DecompositionError::ShorterThanHalo {
                dir: 't',
                extent: 8,
                grid: 4,
                local: 2,
                depth: 3
            }
        );
        assert!(e
            .to_string()
            .contains("Lt/Pt = 8/4 = 2 is shorter than the halo depth 3"));
        // x has extent 2 but is not cut.
        let d = Decomposition::with_halo_depth(
            global,
            ProcessGrid::parse("1,2,1,1").unwrap(),
            NAIK_DEPTH,
        )
        .unwrap();
        assert_eq!(d.local().dims(), [2, 4, 8, 8]);
    }

    /// Ranks are lexicographic with x fastest (checked against the formula written out),
    /// coordinates and ranks are inverse bijections, and neighbours wrap around the torus
    /// and are inverse to each other.
    #[test]
    fn ranks_are_lexicographic_and_neighbours_wrap() {
        let g = ProcessGrid::new([2, 3, 1, 2]).unwrap();
        let mut seen = vec![false; g.size()];
        for pt in 0..2 {
            for pz in 0..1 {
                for py in 0..3 {
                    for px in 0..2 {
                        let r = px + 2 * (py + 3 * (pz + pt));
                        assert_eq!(g.rank_of([px, py, pz, pt]), r);
                        assert_eq!(g.coords_of(r), [px, py, pz, pt]);
                        assert!(!seen[r]);
                        seen[r] = true;
                    }
                }
            }
        }
        // Rank 5 = (1, 2, 0, 0).
        assert_eq!(g.neighbour(5, 0, Side::Forward), 4);
        assert_eq!(g.neighbour(5, 1, Side::Forward), 1);
        assert_eq!(g.neighbour(5, 1, Side::Backward), 3);
        assert_eq!(g.neighbour(5, 2, Side::Forward), 5, "z is not cut");
        assert_eq!(g.neighbour(5, 3, Side::Backward), 11);
        for r in 0..g.size() {
            for mu in 0..4 {
                for side in Side::BOTH {
                    let n = g.neighbour(r, mu, side);
                    assert_eq!(g.neighbour(n, mu, side.opposite()), r);
                }
            }
        }
    }

    /// Every global site has exactly one owner, at the local coordinates that map back to
    /// it, with the same parity locally and globally; the faces that wrap the torus are
    /// those of the first and last ranks of a direction.
    #[test]
    fn local_lattices_tile_the_global_one_with_the_same_parity() {
        let global = lattice([4, 8, 4, 12]);
        let d = Decomposition::new(global, ProcessGrid::new([2, 2, 1, 3]).unwrap()).unwrap();
        let mut count = vec![0; d.size()];
        for g in global.sites_lex() {
            let (r, c) = d.owner(g);
            count[r] += 1;
            assert_eq!(d.global_coords(r, c), g);
            assert_eq!(d.local().parity(c), global.parity(g));
        }
        assert!(count.iter().all(|&n| n == d.local().volume()));
        assert_eq!(d.offset(d.grid().rank_of([1, 0, 0, 2])), [2, 0, 0, 8]);
        let last_t = d.grid().rank_of([0, 0, 0, 2]);
        assert!(d.face_wraps(last_t, 3, Side::Forward));
        assert!(!d.face_wraps(last_t, 3, Side::Backward));
        assert!(d.face_wraps(0, 3, Side::Backward));
        assert!(d.face_wraps(0, 2, Side::Forward), "uncut: both faces wrap");
        assert!(d.check_rank(12).is_err());
    }
}
