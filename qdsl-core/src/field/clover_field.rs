//! Clover fields: a site-local 12 × 12 hermitian matrix per site, stored as its two
//! chiral 6 × 6 blocks.
//!
//! In the DeGrand–Rossi basis γ5 = diag(1, 1, −1, −1), and every σ_μν commutes with γ5,
//! so a clover term A(x) = a·1 + c Σ_{μ<ν} σ_μν F_μν(x) is block diagonal: spins {0, 1}
//! (chirality +) and spins {2, 3} (chirality −), each block a hermitian 6 × 6 matrix over
//! (spin within the block, colour). Row/column index of a block: r = 3·s' + a with
//! s' = spin − 2·block ∈ {0, 1} and colour a ∈ {0, 1, 2}.
//!
//! # Storage (72 reals per site, checkerboard site order)
//!
//! Block b ∈ {0, 1} occupies reals 36·b .. 36·b + 36 of the site:
//!
//! * reals 0..6: the real diagonal A_rr, r = 0..6;
//! * reals 6..36: the 15 strictly-lower entries A_rc (r > c), in row order
//!   (1,0), (2,0), (2,1), (3,0), (3,1), (3,2), (4,0), …, (5,4), each as (re, im); the
//!   upper entries are their conjugates, A_cr = conj(A_rc).
//!
//! This is the packed hermitian layout fast clover codes use: 72 reals instead of 144.

use super::{ColourSpinorField, FieldError, SiteSubset, SpinorLayout};
use crate::lattice::{Lattice, Parity};
use crate::math::Spinor;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// Rows (and columns) of one chiral block: 2 spins × 3 colours.
pub const CLOVER_BLOCK_DIM: usize = 6;
/// Reals of one packed block: 6 diagonal + 2 · 15 off-diagonal.
pub const CLOVER_BLOCK_REALS: usize = 36;
/// Reals per site: two blocks.
pub const CLOVER_SITE_REALS: usize = 2 * CLOVER_BLOCK_REALS;

/// The offset, within a packed block, of the strictly-lower entry (r, c), r > c: the
/// real part; the imaginary part follows it.
pub const fn clover_offdiag_offset(r: usize, c: usize) -> usize {
    CLOVER_BLOCK_DIM + 2 * (r * (r - 1) / 2 + c)
}

/// A clover (or inverse-clover) field on the CPU: one packed hermitian 12 × 12 block
/// diagonal matrix per site (see the module docs for the layout), on the full lattice or
/// one parity (the V/2 sites of that parity, index within the parity).
#[derive(Clone, Debug, PartialEq)]
pub struct CloverField<T: Real> {
    lattice: Lattice,
    subset: SiteSubset,
    data: Vec<T>,
}

impl<T: Real> CloverField<T> {
    /// The zero field on `subset` of `lattice`.
    pub fn zeros(lattice: Lattice, subset: SiteSubset) -> Self {
        let sites = sites_of(&lattice, subset);
        Self {
            lattice,
            subset,
            data: vec![T::zero(); sites * CLOVER_SITE_REALS],
        }
    }

    /// A field over existing packed storage (72 reals per site of the subset).
    pub fn from_data(
        lattice: Lattice,
        subset: SiteSubset,
        data: Vec<T>,
    ) -> Result<Self, FieldError> {
        let expected = sites_of(&lattice, subset) * CLOVER_SITE_REALS;
        if data.len() != expected {
            return Err(FieldError::WrongLength {
                expected,
                found: data.len(),
            });
        }
        Ok(Self {
            lattice,
            subset,
            data,
        })
    }

    /// The lattice.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// The sites held: the full lattice or one parity.
    pub fn subset(&self) -> SiteSubset {
        self.subset
    }

    /// Number of sites held.
    pub fn sites(&self) -> usize {
        self.data.len() / CLOVER_SITE_REALS
    }

    /// The 72 packed reals of site `i` (checkerboard index on the full lattice, index
    /// within the parity otherwise).
    pub fn site(&self, i: usize) -> &[T] {
        &self.data[i * CLOVER_SITE_REALS..(i + 1) * CLOVER_SITE_REALS]
    }

    /// The 72 packed reals of site `i`, writable.
    pub fn site_mut(&mut self, i: usize) -> &mut [T] {
        &mut self.data[i * CLOVER_SITE_REALS..(i + 1) * CLOVER_SITE_REALS]
    }

    /// All packed reals, site after site.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// All packed reals, writable.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The restriction of a full-lattice field to the V/2 sites of `parity` (index within
    /// the parity): in checkerboard order that is the contiguous run of sites
    /// parity·V/2 .. (parity + 1)·V/2. An error if the field is not on the full lattice.
    pub fn restrict(&self, parity: Parity) -> Result<Self, FieldError> {
        if self.subset != SiteSubset::Full {
            return Err(FieldError::LayoutMismatch {
                expected: "a clover field on the full lattice".into(),
                found: format!("a clover field on {:?}", self.subset),
            });
        }
        let start = self.lattice.join_cb(parity, 0) * CLOVER_SITE_REALS;
        let len = self.lattice.half_volume() * CLOVER_SITE_REALS;
        Ok(Self {
            lattice: self.lattice,
            subset: SiteSubset::Single(parity),
            data: self.data[start..start + len].to_vec(),
        })
    }

    /// out(x) = A(x) ψ(x) on every site held ([`clover_apply_site`], rayon over sites).
    /// `psi` and `out` must be Wilson fields on this field's lattice and subset, with any
    /// number Ls of slices (5D fields, or N right-hand sides): every slice is multiplied
    /// by the same 4D A.
    pub fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        psi: &ColourSpinorField<T>,
    ) -> Result<(), FieldError> {
        let layout = SpinorLayout::new(self.lattice, psi.layout().ls(), self.subset, 4, 3)?;
        layout.expect_same(psi.layout())?;
        layout.expect_same(out.layout())?;
        let slice = 12 * layout.sites_per_slice();
        out.data_mut()
            .par_chunks_mut(slice)
            .zip(psi.data().par_chunks(slice))
            .for_each(|(o, p)| {
                o.par_chunks_mut(12)
                    .zip(p.par_chunks(12))
                    .zip(self.data.par_chunks(CLOVER_SITE_REALS))
                    .for_each(|((o, p), a)| {
                        let psi = Spinor::from_fn(|s, c| p[3 * s + c]);
                        let r = clover_apply_site(a, &psi);
                        for (k, z) in o.iter_mut().enumerate() {
                            *z = r.0[k / 3].0[k % 3];
                        }
                    });
            });
        Ok(())
    }

    /// The same field in another precision.
    pub fn cast<U: Real>(&self) -> CloverField<U> {
        CloverField {
            lattice: self.lattice,
            subset: self.subset,
            data: self.data.iter().map(|&x| U::from_f64(x.to_f64())).collect(),
        }
    }
}

fn sites_of(lattice: &Lattice, subset: SiteSubset) -> usize {
    match subset {
        SiteSubset::Full => lattice.volume(),
        SiteSubset::Single(_) => lattice.half_volume(),
    }
}

/// Entry (r, c) of a packed hermitian block: A_rr, A_rc (r > c), or conj(A_cr) (r < c).
pub fn clover_block_entry<T: Real>(block: &[T], r: usize, c: usize) -> Complex<T> {
    use std::cmp::Ordering;
    match r.cmp(&c) {
        Ordering::Equal => Complex::new(block[r], T::zero()),
        Ordering::Greater => {
            let o = clover_offdiag_offset(r, c);
            Complex::new(block[o], block[o + 1])
        }
        Ordering::Less => {
            let o = clover_offdiag_offset(c, r);
            Complex::new(block[o], -block[o + 1])
        }
    }
}

/// Writes a hermitian 6 × 6 block `a` (only its diagonal real parts and strictly-lower
/// entries are read) into packed form.
pub fn pack_clover_block<T: Real>(a: &[[Complex<T>; 6]; 6], block: &mut [T]) {
    for (r, row) in a.iter().enumerate() {
        block[r] = row[r].re;
        for (c, z) in row.iter().enumerate().take(r) {
            let o = clover_offdiag_offset(r, c);
            block[o] = z.re;
            block[o + 1] = z.im;
        }
    }
}

/// The dense 6 × 6 hermitian matrix of a packed block.
pub fn unpack_clover_block<T: Real>(block: &[T]) -> [[Complex<T>; 6]; 6] {
    std::array::from_fn(|r| std::array::from_fn(|c| clover_block_entry(block, r, c)))
}

/// The site-local product (A ψ)_{σ a} = Σ_{σ' b} A_{(σ a),(σ' b)} ψ_{σ' b} with A given by
/// its 72 packed reals: block b acts on spins 2b, 2b + 1.
pub fn clover_apply_site<T: Real>(site: &[T], psi: &Spinor<T>) -> Spinor<T> {
    let mut out = Spinor::zero();
    for b in 0..2 {
        let block = &site[b * CLOVER_BLOCK_REALS..(b + 1) * CLOVER_BLOCK_REALS];
        for r in 0..CLOVER_BLOCK_DIM {
            let mut acc = Complex::new(T::zero(), T::zero());
            for c in 0..CLOVER_BLOCK_DIM {
                acc += clover_block_entry(block, r, c) * psi.0[2 * b + c / 3].0[c % 3];
            }
            out.0[2 * b + r / 3].0[r % 3] = acc;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offsets enumerate 6..36 exactly once, in the documented row order.
    #[test]
    fn offdiagonal_offsets_tile_the_block() {
        let mut seen = Vec::new();
        for r in 1..6 {
            for c in 0..r {
                seen.push(clover_offdiag_offset(r, c));
            }
        }
        assert_eq!(seen, (0..15).map(|k| 6 + 2 * k).collect::<Vec<_>>());
        assert_eq!(clover_offdiag_offset(1, 0), 6);
        assert_eq!(clover_offdiag_offset(5, 4), 34);
    }

    /// pack → unpack is the identity on hermitian blocks, and the site product equals the
    /// dense 12 × 12 product written out by hand (block diagonal in spin pairs).
    #[test]
    #[allow(clippy::needless_range_loop)] // matrix indices, written as in the equations
    fn packed_block_product_matches_dense_product() {
        let z = |k: usize| Complex::new((k as f64 * 0.37).sin(), (k as f64 * 0.91).cos());
        let mut site = vec![0.0f64; CLOVER_SITE_REALS];
        let mut dense = [[Complex::new(0.0, 0.0); 12]; 12];
        for b in 0..2 {
            let mut a = [[Complex::new(0.0, 0.0); 6]; 6];
            for r in 0..6 {
                a[r][r] = Complex::new(1.0 + r as f64 + 10.0 * b as f64, 0.0);
                for c in 0..r {
                    a[r][c] = z(100 * b + 6 * r + c);
                    a[c][r] = a[r][c].conj();
                }
            }
            pack_clover_block(&a, &mut site[36 * b..36 * b + 36]);
            assert_eq!(unpack_clover_block(&site[36 * b..36 * b + 36]), a);
            for r in 0..6 {
                for c in 0..6 {
                    dense[6 * b + r][6 * b + c] = a[r][c];
                }
            }
        }
        let psi = Spinor::from_fn(|s, a| z(500 + 3 * s + a));
        let got = clover_apply_site(&site, &psi);
        for i in 0..12 {
            let want: Complex<f64> = (0..12).map(|j| dense[i][j] * psi.0[j / 3].0[j % 3]).sum();
            assert!((got.0[i / 3].0[i % 3] - want).norm() < 1e-14);
        }
    }

    #[test]
    fn wrong_storage_length_is_an_error() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let err =
            CloverField::<f64>::from_data(lattice, SiteSubset::Full, vec![0.0; 71]).unwrap_err();
        assert_eq!(
            err,
            FieldError::WrongLength {
                expected: 16 * 72,
                found: 71
            }
        );
    }

    /// restrict(p) holds the full field's sites p·V/2 + i (checkerboard order), and
    /// restricting a parity field again is an error.
    #[test]
    fn restriction_takes_the_parity_run_of_sites() {
        let lattice = Lattice::new([2, 2, 2, 4]).unwrap();
        let data: Vec<f64> = (0..32 * 72).map(|k| k as f64).collect();
        let full = CloverField::from_data(lattice, SiteSubset::Full, data).unwrap();
        for (p, offset) in [(Parity::Even, 0), (Parity::Odd, 16)] {
            let part = full.restrict(p).unwrap();
            assert_eq!(part.subset(), SiteSubset::Single(p));
            assert_eq!(part.sites(), 16);
            for i in 0..16 {
                assert_eq!(part.site(i)[0], ((offset + i) * 72) as f64);
            }
            assert!(part.restrict(p).is_err());
        }
    }

    /// apply refuses a spinor on another subset or lattice instead of panicking.
    #[test]
    fn apply_checks_the_spinor_layout() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let a = CloverField::<f64>::zeros(lattice, SiteSubset::Single(Parity::Even));
        let odd = SpinorLayout::wilson(lattice, SiteSubset::Single(Parity::Odd));
        let even = SpinorLayout::wilson(lattice, SiteSubset::Single(Parity::Even));
        let mut out = ColourSpinorField::zeros(even);
        assert!(a.apply(&mut out, &ColourSpinorField::zeros(odd)).is_err());
        assert!(a.apply(&mut out, &ColourSpinorField::zeros(even)).is_ok());
    }
}
