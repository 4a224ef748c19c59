//! Extents, coordinates, lexicographic and checkerboard indices, neighbours.

use super::{GeometryError, DIRECTION_NAMES};

/// Largest number of sites (4D volume × Ls) a lattice may have: device kernels index
/// sites with a 32-bit signed integer.
pub const MAX_SITES: usize = i32::MAX as usize;

/// Site coordinates `[x, y, z, t]`.
pub type Coords = [usize; 4];

/// Checkerboard parity of a site: even when x + y + z + t is even.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Parity {
    Even = 0,
    Odd = 1,
}

impl Parity {
    /// The other parity.
    pub fn opposite(self) -> Self {
        match self {
            Parity::Even => Parity::Odd,
            Parity::Odd => Parity::Even,
        }
    }

    /// Parity of a coordinate sum.
    pub fn of_sum(sum: usize) -> Self {
        if sum.is_multiple_of(2) {
            Parity::Even
        } else {
            Parity::Odd
        }
    }

    /// Both parities, even first.
    pub const BOTH: [Parity; 2] = [Parity::Even, Parity::Odd];
}

/// A 4D lattice with even, non-zero extents `[Lx, Ly, Lz, Lt]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lattice {
    dims: [usize; 4],
    volume: usize,
}

impl Lattice {
    /// A lattice with extents `[Lx, Ly, Lz, Lt]`; rejects zero or odd extents and volumes
    /// beyond [`MAX_SITES`].
    pub fn new(dims: [usize; 4]) -> Result<Self, GeometryError> {
        validate(dims, 1)?;
        Ok(Self {
            dims,
            volume: dims.iter().product(),
        })
    }

    /// A hypercubic lattice L⁴.
    pub fn hypercubic(l: usize) -> Result<Self, GeometryError> {
        Self::new([l; 4])
    }

    /// Extents `[Lx, Ly, Lz, Lt]`.
    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// Extent in direction μ.
    pub fn extent(&self, mu: usize) -> usize {
        self.dims[mu]
    }

    /// Number of sites V.
    pub fn volume(&self) -> usize {
        self.volume
    }

    /// Number of sites of one parity, V/2.
    pub fn half_volume(&self) -> usize {
        self.volume / 2
    }

    /// Coordinates of the site with lexicographic index `lex` (x fastest).
    pub fn coords_of_lex(&self, lex: usize) -> Coords {
        debug_assert!(lex < self.volume);
        let [lx, ly, lz, _] = self.dims;
        [
            lex % lx,
            (lex / lx) % ly,
            (lex / (lx * ly)) % lz,
            lex / (lx * ly * lz),
        ]
    }

    /// Lexicographic index of in-range coordinates.
    pub fn lex_index(&self, c: Coords) -> usize {
        let [lx, ly, lz, _] = self.dims;
        c[0] + lx * (c[1] + ly * (c[2] + lz * c[3]))
    }

    /// Lexicographic index of coordinates, checking that each lies inside the lattice.
    pub fn checked_lex_index(&self, c: Coords) -> Result<usize, GeometryError> {
        for mu in 0..4 {
            if c[mu] >= self.dims[mu] {
                return Err(GeometryError::CoordinateOutOfRange {
                    dir: DIRECTION_NAMES[mu],
                    coord: c[mu],
                    extent: self.dims[mu],
                });
            }
        }
        Ok(self.lex_index(c))
    }

    /// Parity of a site.
    pub fn parity(&self, c: Coords) -> Parity {
        Parity::of_sum(c.iter().sum())
    }

    /// Checkerboard index of a site: `parity · V/2 + lex / 2`.
    pub fn cb_index(&self, c: Coords) -> usize {
        self.parity(c) as usize * self.half_volume() + self.lex_index(c) / 2
    }

    /// Checkerboard index of the site with lexicographic index `lex`.
    pub fn lex_to_cb(&self, lex: usize) -> usize {
        self.cb_index(self.coords_of_lex(lex))
    }

    /// Parity and index within that parity of a checkerboard index.
    pub fn split_cb(&self, cb: usize) -> (Parity, usize) {
        let h = self.half_volume();
        if cb < h {
            (Parity::Even, cb)
        } else {
            (Parity::Odd, cb - h)
        }
    }

    /// Checkerboard index from a parity and an index within that parity.
    pub fn join_cb(&self, parity: Parity, index: usize) -> usize {
        parity as usize * self.half_volume() + index
    }

    /// Coordinates of the site with checkerboard index `cb`.
    pub fn coords_of_cb(&self, cb: usize) -> Coords {
        self.coords_of_lex(self.cb_to_lex(cb))
    }

    /// Lexicographic index of the site with checkerboard index `cb`.
    pub fn cb_to_lex(&self, cb: usize) -> usize {
        let (parity, i) = self.split_cb(cb);
        // The pair (2i, 2i+1) holds one site of each parity (Lx is even).
        let lex = 2 * i;
        let pair_parity = self.parity(self.coords_of_lex(lex));
        if pair_parity == parity {
            lex
        } else {
            lex + 1
        }
    }

    /// Coordinates shifted by `steps` (any sign) in direction μ, periodically wrapped,
    /// and how many times the shift crossed the lattice boundary (signed: +1 for each
    /// wrap going forward, −1 going backward).
    pub fn shift(&self, c: Coords, mu: usize, steps: isize) -> (Coords, isize) {
        let l = self.dims[mu] as isize;
        let raw = c[mu] as isize + steps;
        let wraps = raw.div_euclid(l);
        let mut out = c;
        out[mu] = raw.rem_euclid(l) as usize;
        (out, wraps)
    }

    /// Checkerboard index of the neighbour `steps` sites away in direction μ (`steps` =
    /// ±1 for the hop, ±3 for the Naik term), wrapping periodically. Boundary phases are
    /// separate: see [`super::BoundaryConditions::hop_sign`].
    pub fn neighbour_cb(&self, cb: usize, mu: usize, steps: isize) -> usize {
        let (c, _) = self.shift(self.coords_of_cb(cb), mu, steps);
        self.cb_index(c)
    }

    /// Lexicographic index of the neighbour `steps` sites away in direction μ.
    pub fn neighbour_lex(&self, lex: usize, mu: usize, steps: isize) -> usize {
        let (c, _) = self.shift(self.coords_of_lex(lex), mu, steps);
        self.lex_index(c)
    }

    /// Iterator over all coordinates in lexicographic order.
    pub fn sites_lex(&self) -> impl Iterator<Item = Coords> + '_ {
        (0..self.volume).map(move |i| self.coords_of_lex(i))
    }
}

impl std::fmt::Display for Lattice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, y, z, t] = self.dims;
        write!(f, "{x}×{y}×{z}×{t}")
    }
}

/// A 5D lattice: a 4D lattice times a fifth dimension of extent Ls (domain-wall fermions).
/// The fifth dimension has no even-odd structure of its own: a 5D field is Ls copies of a
/// 4D field, s-slice slowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lattice5D {
    four: Lattice,
    ls: usize,
}

impl Lattice5D {
    /// A 4D lattice with a fifth dimension of extent `ls` ≥ 1.
    pub fn new(dims: [usize; 4], ls: usize) -> Result<Self, GeometryError> {
        if ls == 0 {
            return Err(GeometryError::ZeroLs);
        }
        validate(dims, ls)?;
        Ok(Self {
            four: Lattice::new(dims)?,
            ls,
        })
    }

    /// The 4D lattice.
    pub fn four(&self) -> &Lattice {
        &self.four
    }

    /// Extent of the fifth dimension.
    pub fn ls(&self) -> usize {
        self.ls
    }

    /// Number of 5D sites, V · Ls.
    pub fn volume(&self) -> usize {
        self.four.volume() * self.ls
    }
}

/// Checks extents and the site count `V · ls` against [`MAX_SITES`] without overflowing.
fn validate(dims: [usize; 4], ls: usize) -> Result<(), GeometryError> {
    for (mu, &l) in dims.iter().enumerate() {
        let dir = DIRECTION_NAMES[mu];
        if l == 0 {
            return Err(GeometryError::ZeroExtent { dir });
        }
        if !l.is_multiple_of(2) {
            return Err(GeometryError::OddExtent { dir, extent: l });
        }
    }
    let sites = dims.iter().try_fold(ls, |acc, &l| acc.checked_mul(l));
    let overflow = |found: String| GeometryError::VolumeOverflow {
        dims,
        ls,
        limit: MAX_SITES,
        found,
    };
    match sites {
        None => Err(overflow("more than usize::MAX".into())),
        Some(n) if n > MAX_SITES => Err(overflow(n.to_string())),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_extents() {
        assert!(matches!(
            Lattice::new([4, 0, 4, 4]),
            Err(GeometryError::ZeroExtent { dir: 'y' })
        ));
        assert!(matches!(
            Lattice::new([4, 4, 5, 4]),
            Err(GeometryError::OddExtent {
                dir: 'z',
                extent: 5
            })
        ));
        assert!(matches!(
            Lattice::new([1 << 16, 1 << 16, 2, 2]),
            Err(GeometryError::VolumeOverflow { .. })
        ));
        assert!(matches!(
            Lattice::new([usize::MAX - 1, usize::MAX - 1, 2, 2]),
            Err(GeometryError::VolumeOverflow { .. })
        ));
        assert!(matches!(
            Lattice5D::new([4; 4], 0),
            Err(GeometryError::ZeroLs)
        ));
        assert!(matches!(
            Lattice5D::new([256, 256, 256, 128], 16),
            Err(GeometryError::VolumeOverflow { .. })
        ));
        let msg = Lattice::new([4, 4, 5, 4]).unwrap_err().to_string();
        assert!(msg.contains("Lz = 5"), "{msg}");
    }

    #[test]
    fn lex_and_cb_are_inverse_bijections() {
        let lat = Lattice::new([4, 2, 6, 8]).unwrap();
        let mut seen = vec![false; lat.volume()];
        for lex in 0..lat.volume() {
            let c = lat.coords_of_lex(lex);
            assert_eq!(lat.lex_index(c), lex);
            let cb = lat.lex_to_cb(lex);
            assert!(!seen[cb]);
            seen[cb] = true;
            assert_eq!(lat.cb_to_lex(cb), lex);
            let (p, _) = lat.split_cb(cb);
            assert_eq!(p, lat.parity(c));
        }
        // Even sites come first.
        assert!((0..lat.half_volume()).all(|cb| lat.parity(lat.coords_of_cb(cb)) == Parity::Even));
    }

    #[test]
    fn neighbours_wrap_and_flip_parity() {
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        for cb in 0..lat.volume() {
            for mu in 0..4 {
                for steps in [1isize, -1, 3, -3] {
                    let n = lat.neighbour_cb(cb, mu, steps);
                    assert_ne!(
                        lat.split_cb(n).0,
                        lat.split_cb(cb).0,
                        "odd hops change parity"
                    );
                    assert_eq!(lat.neighbour_cb(n, mu, -steps), cb);
                }
            }
        }
        let (c, wraps) = lat.shift([3, 0, 0, 5], 3, 3);
        assert_eq!((c, wraps), ([3, 0, 0, 2], 1));
        let (c, wraps) = lat.shift([3, 0, 0, 1], 3, -3);
        assert_eq!((c, wraps), ([3, 0, 0, 4], -1));
        assert_eq!(
            lat.checked_lex_index([0, 0, 4, 0]).unwrap_err().to_string(),
            "coordinate 4 in direction z is outside the lattice extent 4"
        );
    }
}
