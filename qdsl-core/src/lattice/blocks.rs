//! Decomposition of the lattice into rectangular sub-domains (blocks), for Dirichlet
//! boundaries, Schwarz preconditioners and multigrid aggregation.

use super::{Coords, GeometryError, Lattice, DIRECTION_NAMES};

/// A tiling of a lattice by identical rectangular blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockDecomposition {
    lattice: Lattice,
    block: [usize; 4],
    blocks_per_dim: [usize; 4],
}

impl BlockDecomposition {
    /// Blocks of extents `block`; each must divide the lattice extent.
    pub fn new(lattice: Lattice, block: [usize; 4]) -> Result<Self, GeometryError> {
        let mut blocks_per_dim = [0; 4];
        for mu in 0..4 {
            let (b, l) = (block[mu], lattice.extent(mu));
            if b == 0 || !l.is_multiple_of(b) {
                return Err(GeometryError::BlockDoesNotDivide {
                    dir: DIRECTION_NAMES[mu],
                    block: b,
                    extent: l,
                });
            }
            blocks_per_dim[mu] = l / b;
        }
        Ok(Self {
            lattice,
            block,
            blocks_per_dim,
        })
    }

    /// Extents of one block.
    pub fn block_dims(&self) -> [usize; 4] {
        self.block
    }

    /// Number of blocks in each direction.
    pub fn blocks_per_dim(&self) -> [usize; 4] {
        self.blocks_per_dim
    }

    /// Total number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.blocks_per_dim.iter().product()
    }

    /// Number of sites in one block.
    pub fn block_volume(&self) -> usize {
        self.block.iter().product()
    }

    /// Lexicographic index of the block that holds site `c`.
    pub fn block_of(&self, c: Coords) -> usize {
        let b: [usize; 4] = std::array::from_fn(|mu| c[mu] / self.block[mu]);
        let n = self.blocks_per_dim;
        b[0] + n[0] * (b[1] + n[1] * (b[2] + n[2] * b[3]))
    }

    /// Coordinates of site `c` inside its block.
    pub fn local_coords(&self, c: Coords) -> Coords {
        std::array::from_fn(|mu| c[mu] % self.block[mu])
    }

    /// True when the hop from `c` by `steps` in direction μ ends in another block (such a
    /// hop is dropped by a Dirichlet operator on the sub-domain).
    pub fn hop_leaves_block(&self, c: Coords, mu: usize, steps: isize) -> bool {
        let (n, _) = self.lattice.shift(c, mu, steps);
        self.block_of(n) != self.block_of(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_lattice() {
        let lat = Lattice::new([8, 4, 4, 8]).unwrap();
        let d = BlockDecomposition::new(lat, [4, 2, 4, 4]).unwrap();
        assert_eq!(d.blocks_per_dim(), [2, 2, 1, 2]);
        assert_eq!(d.num_blocks(), 8);
        let mut count = vec![0; d.num_blocks()];
        for c in lat.sites_lex() {
            count[d.block_of(c)] += 1;
        }
        assert!(count.iter().all(|&n| n == d.block_volume()));
        assert!(d.hop_leaves_block([3, 0, 0, 0], 0, 1));
        assert!(!d.hop_leaves_block([2, 0, 0, 0], 0, 1));
        assert!(d.hop_leaves_block([0, 0, 0, 0], 0, -1));
        assert!(
            !d.hop_leaves_block([0, 0, 0, 0], 2, -1),
            "one block in z: wraps inside"
        );
        assert!(matches!(
            BlockDecomposition::new(lat, [3, 2, 4, 4]),
            Err(GeometryError::BlockDoesNotDivide { dir: 'x', .. })
        ));
    }
}
