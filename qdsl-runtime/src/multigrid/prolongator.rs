//! The prolongator P of aggregation multigrid from near-null vectors, chirality split
//! and block orthonormalised (Clark et al., arXiv:1612.07873, §III; Brannick et al.).

use super::dense::{C, ZERO};
use super::CoarsenError;
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{BlockDecomposition, Lattice};
use rayon::prelude::*;

/// The prolongator of N_v near-null vectors v_a (a = 0..N_v) of N_f components per fine
/// site, aggregated over the blocks of a [`BlockDecomposition`] (one coarse site X per
/// block) and split by chirality: coarse component j = s N_v + a (coarse spin s ∈ {0, 1}
/// the chirality, colour a the vector) is
///
/// V_j(x) = Π_s v_a(x) restricted to the block X ∋ x, then Gram–Schmidt over a within
/// (X, s),
///
/// Π_s the projection onto the fine components of chirality s (the first N_f/2 have
/// chirality +1, the last N_f/2 −1, as in [`super::DenseOperator`]). The columns are then
/// block orthonormal, Σ_{x∈X} V_i(x)† V_j(x) = δ_ij, so P†P = 1 with
///
/// (P φ)(x) = Σ_j V_j(x) φ_j(X(x)),   (P† ψ)_j(X) = Σ_{x∈X} V_j(x)† ψ(x),
///
/// and P Γ5 = γ5 P (Γ5 = diag(1, −1) on the coarse spin): the coarse operator P†DP is
/// Γ5-hermitian when D is γ5-hermitian.
#[derive(Clone, Debug)]
pub struct Prolongator {
    fine: Lattice,
    blocks: BlockDecomposition,
    coarse: Lattice,
    fine_shape: (usize, usize),
    nv: usize,
    /// V(x) per fine site (checkerboard order): an N_f × 2N_v matrix, row-major, column j.
    v: Vec<C>,
    /// The fine sites (checkerboard indices) of each coarse site (its checkerboard index).
    sites: Vec<Vec<usize>>,
}

impl Prolongator {
    /// The prolongator of `vectors` (full-lattice fields of one shape) on blocks of
    /// extents `block`. An error for no vectors, fields of different layouts or not on
    /// the full lattice, an odd number of components, blocks that do not tile the
    /// lattice or make an odd coarse extent, or vectors linearly dependent on a block
    /// and chirality (the error names them).
    pub fn new(
        vectors: &[ColourSpinorField<f64>],
        block: [usize; 4],
    ) -> Result<Self, CoarsenError> {
        let first = vectors
            .first()
            .ok_or_else(|| CoarsenError::Shape("no near-null vectors".into()))?;
        let layout = *first.layout();
        let fine = *layout.lattice();
        let expected =
            SpinorLayout::new(fine, 1, SiteSubset::Full, layout.nspin(), layout.ncolour())?;
        for v in vectors {
            expected.expect_same(v.layout())?;
        }
        let nf = layout.site_len();
        if !nf.is_multiple_of(2) {
            return Err(CoarsenError::Shape(format!(
                "{nf} components per site cannot be split into two chiral halves"
            )));
        }
        let blocks = BlockDecomposition::new(fine, block)?;
        let coarse = Lattice::new(blocks.blocks_per_dim())?;
        let nv = vectors.len();
        let cols = 2 * nv;
        let mut sites = vec![Vec::new(); coarse.volume()];
        for cb in 0..fine.volume() {
            sites[coarse.cb_index(Self::coarse_coords(&blocks, fine.coords_of_cb(cb)))].push(cb);
        }
        let mut v = vec![ZERO; fine.volume() * nf * cols];
        for (a, field) in vectors.iter().enumerate() {
            for cb in 0..fine.volume() {
                for (k, z) in field.site(0, cb).iter().enumerate() {
                    let s = k / (nf / 2);
                    v[(cb * nf + k) * cols + s * nv + a] = *z;
                }
            }
        }
        let mut p = Self {
            fine,
            blocks,
            coarse,
            fine_shape: (layout.nspin(), layout.ncolour()),
            nv,
            v,
            sites,
        };
        p.orthonormalise()?;
        Ok(p)
    }

    /// The coarse coordinates of the block holding fine site `c`: X_μ = ⌊x_μ / b_μ⌋.
    fn coarse_coords(blocks: &BlockDecomposition, c: [usize; 4]) -> [usize; 4] {
        let b = blocks.block_dims();
        std::array::from_fn(|mu| c[mu] / b[mu])
    }

    /// Gram–Schmidt of the columns (s, a), a = 0..N_v, over the sites of each block, for
    /// each chirality s: column j ← column j − Σ_{i<j} ⟨i, j⟩ column i, twice (classical
    /// Gram–Schmidt with one re-orthogonalisation, orthogonal to rounding), then
    /// normalised. A column whose norm falls below 1e-10 of its norm before the
    /// projections is linearly dependent on the earlier ones: an error.
    fn orthonormalise(&mut self) -> Result<(), CoarsenError> {
        let (nf, nv, cols) = (self.n_fine(), self.nv, 2 * self.nv);
        let sites = &self.sites;
        // Each block's rows gathered, orthonormalised and scattered back (blocks in
        // parallel).
        let blocks: Vec<(usize, Vec<C>)> = sites
            .par_iter()
            .enumerate()
            .map(|(xc, block_sites)| {
                let mut m: Vec<C> = block_sites
                    .iter()
                    .flat_map(|&cb| self.v[cb * nf * cols..(cb + 1) * nf * cols].iter().copied())
                    .collect();
                let rows = block_sites.len() * nf;
                let col =
                    |m: &[C], j: usize| (0..rows).map(move |r| m[r * cols + j]).collect::<Vec<_>>();
                for s in 0..2 {
                    for a in 0..nv {
                        let j = s * nv + a;
                        let before = col(&m, j).iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
                        for _pass in 0..2 {
                            for i in (s * nv)..j {
                                let dot: C = (0..rows)
                                    .map(|r| m[r * cols + i].conj() * m[r * cols + j])
                                    .sum();
                                for r in 0..rows {
                                    let mi = m[r * cols + i];
                                    m[r * cols + j] -= dot * mi;
                                }
                            }
                        }
                        let norm = col(&m, j).iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
                        if norm <= 1e-10 * before || norm.is_nan() {
                            return Err(CoarsenError::DependentVectors {
                                block: self.coarse.coords_of_cb(xc),
                                chirality: s,
                                vector: a,
                            });
                        }
                        for r in 0..rows {
                            m[r * cols + j] /= norm;
                        }
                    }
                }
                Ok((xc, m))
            })
            .collect::<Result<_, _>>()?;
        for (xc, m) in blocks {
            for (i, &cb) in self.sites[xc].iter().enumerate() {
                self.v[cb * nf * cols..(cb + 1) * nf * cols]
                    .copy_from_slice(&m[i * nf * cols..(i + 1) * nf * cols]);
            }
        }
        Ok(())
    }

    /// N_f, the fine components per site.
    pub fn n_fine(&self) -> usize {
        self.fine_shape.0 * self.fine_shape.1
    }

    /// N_v, the vectors (coarse colours) per chirality; the coarse fields have 2 N_v
    /// components per site.
    pub fn n_vectors(&self) -> usize {
        self.nv
    }

    /// The fine lattice.
    pub fn fine_lattice(&self) -> &Lattice {
        &self.fine
    }

    /// The coarse lattice: one site per block, extents L_μ / b_μ.
    pub fn coarse_lattice(&self) -> &Lattice {
        &self.coarse
    }

    /// The block decomposition of the fine lattice.
    pub fn blocks(&self) -> &BlockDecomposition {
        &self.blocks
    }

    /// The block extents b_μ.
    pub fn block_dims(&self) -> [usize; 4] {
        self.blocks.block_dims()
    }

    /// V(x) of the fine site of checkerboard index `cb`: N_f × 2N_v, row-major.
    pub fn v(&self, cb: usize) -> &[C] {
        let m = self.n_fine() * 2 * self.nv;
        &self.v[cb * m..(cb + 1) * m]
    }

    /// The fine sites (checkerboard indices) of the coarse site of checkerboard index
    /// `xc`.
    pub fn block_sites(&self, xc: usize) -> &[usize] {
        &self.sites[xc]
    }

    /// The layout of the fine fields (full lattice).
    pub fn fine_layout(&self) -> SpinorLayout {
        SpinorLayout::new(
            self.fine,
            1,
            SiteSubset::Full,
            self.fine_shape.0,
            self.fine_shape.1,
        )
        .expect("the layout of the vectors")
    }

    /// The layout of the coarse fields: 2 spins (chiralities) × N_v colours.
    pub fn coarse_layout(&self) -> SpinorLayout {
        SpinorLayout::new(self.coarse, 1, SiteSubset::Full, 2, self.nv)
            .expect("a valid coarse lattice and N_v > 0")
    }

    /// ψ = P φ: ψ(x) = Σ_j V_j(x) φ_j(X(x)). An error if φ is not a coarse field of
    /// [`Self::coarse_layout`].
    pub fn prolong(
        &self,
        phi: &ColourSpinorField<f64>,
    ) -> Result<ColourSpinorField<f64>, CoarsenError> {
        self.coarse_layout().expect_same(phi.layout())?;
        let (nf, cols) = (self.n_fine(), 2 * self.nv);
        let mut out = ColourSpinorField::zeros(self.fine_layout());
        for (xc, block) in self.sites.iter().enumerate() {
            let src = phi.site(0, xc);
            for &cb in block {
                let v = self.v(cb);
                for (k, o) in out.site_mut(0, cb).iter_mut().enumerate() {
                    *o = v[k * cols..(k + 1) * cols]
                        .iter()
                        .zip(src)
                        .map(|(a, b)| a * b)
                        .sum();
                }
            }
        }
        debug_assert_eq!(nf * self.fine.volume(), out.data().len());
        Ok(out)
    }

    /// φ = P† ψ: φ_j(X) = Σ_{x∈X} Σ_k conj(V_{kj}(x)) ψ_k(x). An error if ψ is not a
    /// fine field of [`Self::fine_layout`].
    pub fn restrict(
        &self,
        psi: &ColourSpinorField<f64>,
    ) -> Result<ColourSpinorField<f64>, CoarsenError> {
        self.fine_layout().expect_same(psi.layout())?;
        let cols = 2 * self.nv;
        let mut out = ColourSpinorField::zeros(self.coarse_layout());
        for (xc, block) in self.sites.iter().enumerate() {
            let o = out.site_mut(0, xc);
            for &cb in block {
                let v = self.v(cb);
                for (k, p) in psi.site(0, cb).iter().enumerate() {
                    for (j, oj) in o.iter_mut().enumerate() {
                        *oj += v[k * cols + j].conj() * p;
                    }
                }
            }
        }
        Ok(out)
    }
}
