//! The black/white block colouring of SAP and the block-wise vector operations its
//! block solves need (per-block inner products and per-block coefficients).
//!
//! The lattice is tiled by a [`BlockDecomposition`]; block (b₀, b₁, b₂, b₃) is *black*
//! when b₀ + b₁ + b₂ + b₃ is even and *white* otherwise. With 1 or an even number of
//! blocks in every direction, no two blocks of one colour are neighbours (a direction
//! with a single block wraps onto the block itself). Then the restriction
//! P_c M P_c of the operator to the sites of colour c (P_c zeroes every other site) is
//! the direct sum of the Dirichlet block operators M_Λ of the blocks Λ of colour c:
//! every hop that leaves a block ends on the other colour and is dropped. All blocks of
//! one colour are therefore solved at once with one (masked) application of M.

use super::SapError;
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{BlockDecomposition, Lattice};
use qdsl_core::{Complex, Real};
use rayon::prelude::*;

/// Reals of one Wilson site (4 spins × 3 colours, complex).
const SITE_LEN: usize = 12;

/// The two colours of the blocks, in the order SAP visits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Colour {
    /// Blocks with an even sum of block coordinates.
    Black,
    /// Blocks with an odd sum.
    White,
}

impl Colour {
    /// Black, then white: the order of one Schwarz cycle.
    pub const CYCLE: [Colour; 2] = [Colour::Black, Colour::White];
}

/// Precision in which the block inner products are accumulated (the reduction
/// arithmetic, chosen independently of the storage of the block vectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Reduction {
    /// Sums of f64.
    #[default]
    F64,
    /// Sums of f32 (each term rounded to f32, then summed in f32).
    F32,
}

/// The coloured block tiling of a lattice with the site → block table of full-lattice
/// Wilson fields.
#[derive(Clone, Debug)]
pub struct SchwarzBlocks {
    decomposition: BlockDecomposition,
    layout: SpinorLayout,
    /// The block of each site index of the full-lattice layout.
    block_of_site: Vec<u32>,
    /// The colour of each block.
    colour_of_block: Vec<Colour>,
}

impl SchwarzBlocks {
    /// Blocks of extents `block` on `lattice`: each extent must divide the lattice's and
    /// leave 1 or an even number of blocks in its direction (module docs).
    pub fn new(lattice: Lattice, block: [usize; 4]) -> Result<Self, SapError> {
        let decomposition =
            BlockDecomposition::new(lattice, block).map_err(|e| SapError::Blocks {
                block,
                reason: e.to_string(),
            })?;
        let per_dim = decomposition.blocks_per_dim();
        if let Some(mu) = (0..4).find(|&mu| per_dim[mu] > 1 && per_dim[mu] % 2 == 1) {
            return Err(SapError::Blocks {
                block,
                reason: format!(
                    "{} blocks in direction {mu}: the black/white colouring needs 1 or an \
                     even number of blocks per direction",
                    per_dim[mu]
                ),
            });
        }
        let layout = SpinorLayout::wilson(lattice, SiteSubset::Full);
        let block_of_site = (0..lattice.volume())
            .map(|i| decomposition.block_of(layout.coords_of_site(i)) as u32)
            .collect();
        let colour_of_block = (0..decomposition.num_blocks())
            .map(|b| {
                let (mut rest, mut sum) = (b, 0);
                for n in per_dim {
                    sum += rest % n;
                    rest /= n;
                }
                if sum % 2 == 0 {
                    Colour::Black
                } else {
                    Colour::White
                }
            })
            .collect();
        Ok(Self {
            decomposition,
            layout,
            block_of_site,
            colour_of_block,
        })
    }

    /// The tiling.
    pub fn decomposition(&self) -> &BlockDecomposition {
        &self.decomposition
    }

    /// The full-lattice Wilson layout of the fields.
    pub fn layout(&self) -> SpinorLayout {
        self.layout
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.colour_of_block.len()
    }

    /// The colour of block `b`.
    pub fn colour(&self, b: usize) -> Colour {
        self.colour_of_block[b]
    }

    /// The block of site `i` (full-lattice site index).
    pub fn block_of_site(&self, i: usize) -> usize {
        self.block_of_site[i] as usize
    }

    /// ψ ← P_c ψ: zero on every site outside the blocks of colour `c`.
    pub fn mask<T: Real>(&self, psi: &mut ColourSpinorField<T>, c: Colour) {
        let zero = Complex::new(T::zero(), T::zero());
        psi.data_mut()
            .par_chunks_mut(SITE_LEN)
            .zip(self.block_of_site.par_iter())
            .for_each(|(site, &b)| {
                if self.colour_of_block[b as usize] != c {
                    site.fill(zero);
                }
            });
    }

    /// Per block Λ: ⟨a, b⟩_Λ = Σ_{x∈Λ} a(x)* b(x), accumulated in `reduction`.
    pub fn dots<T: Real>(
        &self,
        a: &ColourSpinorField<T>,
        b: &ColourSpinorField<T>,
        reduction: Reduction,
    ) -> Vec<Complex<f64>> {
        self.sums(reduction, |i| {
            let (a, b) = (&a.data()[i * SITE_LEN..], &b.data()[i * SITE_LEN..]);
            let mut s = Complex::new(0.0, 0.0);
            for k in 0..SITE_LEN {
                let (x, y) = (a[k], b[k]);
                let (xr, xi, yr, yi) = (x.re.to_f64(), x.im.to_f64(), y.re.to_f64(), y.im.to_f64());
                s += Complex::new(xr * yr + xi * yi, xr * yi - xi * yr);
            }
            s
        })
    }

    /// Per block Λ: ‖a‖²_Λ, accumulated in `reduction`.
    pub fn norms<T: Real>(&self, a: &ColourSpinorField<T>, reduction: Reduction) -> Vec<f64> {
        self.sums(reduction, |i| {
            let s: f64 = a.data()[i * SITE_LEN..(i + 1) * SITE_LEN]
                .iter()
                .map(|z| z.re.to_f64().powi(2) + z.im.to_f64().powi(2))
                .sum();
            Complex::new(s, 0.0)
        })
        .into_iter()
        .map(|z| z.re)
        .collect()
    }

    /// y(x) ← y(x) + a_Λ(x) · v(x) with one coefficient per block (a_Λ = 0 leaves the
    /// block alone).
    pub fn axpy<T: Real>(
        &self,
        y: &mut ColourSpinorField<T>,
        a: &[Complex<f64>],
        v: &ColourSpinorField<T>,
    ) {
        let a: Vec<Complex<T>> = a
            .iter()
            .map(|z| Complex::new(T::from_f64(z.re), T::from_f64(z.im)))
            .collect();
        let zero = Complex::new(T::zero(), T::zero());
        y.data_mut()
            .par_chunks_mut(SITE_LEN)
            .zip(v.data().par_chunks(SITE_LEN))
            .zip(self.block_of_site.par_iter())
            .for_each(|((y, v), &b)| {
                let a = a[b as usize];
                if a != zero {
                    for (y, v) in y.iter_mut().zip(v) {
                        *y += a * *v;
                    }
                }
            });
    }

    /// Per-block sums of the site terms `term(i)`, accumulated in f64 or f32.
    fn sums(
        &self,
        reduction: Reduction,
        term: impl Fn(usize) -> Complex<f64> + Sync,
    ) -> Vec<Complex<f64>> {
        let n = self.num_blocks();
        let sites = self.block_of_site.len();
        match reduction {
            Reduction::F64 => (0..sites)
                .into_par_iter()
                .fold(
                    || vec![Complex::new(0.0, 0.0); n],
                    |mut acc, i| {
                        acc[self.block_of_site[i] as usize] += term(i);
                        acc
                    },
                )
                .reduce(
                    || vec![Complex::new(0.0, 0.0); n],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                        a
                    },
                ),
            Reduction::F32 => {
                let sums = (0..sites)
                    .into_par_iter()
                    .fold(
                        || vec![Complex::new(0.0f32, 0.0f32); n],
                        |mut acc, i| {
                            let t = term(i);
                            acc[self.block_of_site[i] as usize] +=
                                Complex::new(t.re as f32, t.im as f32);
                            acc
                        },
                    )
                    .reduce(
                        || vec![Complex::new(0.0f32, 0.0f32); n],
                        |mut a, b| {
                            a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                            a
                        },
                    );
                sums.into_iter()
                    .map(|z| Complex::new(z.re as f64, z.im as f64))
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 × 4 × 4 × 4 in 4⁴ blocks: 2 blocks in x, 1 elsewhere; black and white alternate
    /// in x; an odd block count (3 in x on 12) is refused with the direction named.
    #[test]
    fn colouring_alternates_and_odd_counts_are_refused() {
        let blocks = SchwarzBlocks::new(Lattice::new([8, 4, 4, 4]).unwrap(), [4; 4]).unwrap();
        assert_eq!(blocks.num_blocks(), 2);
        assert_eq!(blocks.colour(0), Colour::Black);
        assert_eq!(blocks.colour(1), Colour::White);
        let layout = blocks.layout();
        for i in 0..layout.lattice().volume() {
            let x = layout.coords_of_site(i);
            assert_eq!(blocks.block_of_site(i), x[0] / 4);
        }
        let err = SchwarzBlocks::new(Lattice::new([12, 4, 4, 4]).unwrap(), [4; 4])
            .unwrap_err()
            .to_string();
        assert!(err.contains("3 blocks in direction 0"), "{err}");
        let err = SchwarzBlocks::new(Lattice::new([8, 4, 4, 4]).unwrap(), [3, 4, 4, 4])
            .unwrap_err()
            .to_string();
        assert!(err.contains("[3, 4, 4, 4]"), "{err}");
    }

    /// Per-block dots and norms sum to the global ones; f32 accumulation agrees to f32
    /// accuracy; the per-block axpy touches only blocks with a non-zero coefficient.
    #[test]
    fn block_reductions_and_axpy() {
        let blocks = SchwarzBlocks::new(Lattice::new([4, 4, 4, 4]).unwrap(), [2; 4]).unwrap();
        let a = ColourSpinorField::<f64>::gaussian(blocks.layout(), 1);
        let b = ColourSpinorField::<f64>::gaussian(blocks.layout(), 2);
        let dots = blocks.dots(&a, &b, Reduction::F64);
        let total: Complex<f64> = dots.iter().sum();
        assert!((total - a.dot(&b).unwrap()).norm() < 1e-10);
        let n64 = blocks.norms(&a, Reduction::F64);
        let n32 = blocks.norms(&a, Reduction::F32);
        for (x, y) in n64.iter().zip(&n32) {
            assert!((x - y).abs() < 1e-5 * x, "{x} {y}");
        }
        let mut y = a.clone();
        let mut coef = vec![Complex::new(0.0, 0.0); blocks.num_blocks()];
        coef[3] = Complex::new(0.5, -1.0);
        blocks.axpy(&mut y, &coef, &b);
        for i in 0..blocks.layout().lattice().volume() {
            for k in 0..SITE_LEN {
                let j = i * SITE_LEN + k;
                let want = if blocks.block_of_site(i) == 3 {
                    a.data()[j] + coef[3] * b.data()[j]
                } else {
                    a.data()[j]
                };
                assert!((y.data()[j] - want).norm() < 1e-14);
            }
        }
    }
}
