//! Dense link fields: per site x and direction μ a dense N × N complex matrix Y_μ(x)
//! acting on all N = N_s · N_c spin-colour components of a colour-spinor site, as the
//! links of a multigrid coarse operator are (QUDA's coarse links Y are
//! (N_s N_c) × (N_s N_c) per site and direction: dense in spin as well as colour).
//!
//! A spinor site ψ(x) is the vector of its N components in the
//! [`super::SpinorLayout`] order, component k = σ · N_c + a (spin-major). The product
//! of a dense link with a site is
//!
//! (Y ψ)_r = Σ_{c=0}^{N−1} Y_{rc} ψ_c,   (Y† ψ)_r = Σ_c conj(Y_{cr}) ψ_c,
//!
//! so a stencil term `y[mu](x) * phi(x + mu)` multiplies the whole N-vector φ(x + μ̂) by
//! Y_μ(x), and a backward hop `y[mu](x - mu).dagger() * phi(x - mu)` by Y_μ(x − μ̂)†.

use super::rng::{RandomStream, StreamDomain};
use super::FieldError;
use crate::lattice::{Coords, Lattice};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// The random streams of [`DenseLinkField::random`]: the application domain 0xC0A5
/// (no other qdsl field draws from it).
pub const DENSE_LINK_DOMAIN: StreamDomain = StreamDomain::User(0xC0A5);

/// The random streams of [`DenseLinkField::random_of`] for site matrices: the
/// application domain 0xC0A6 (no other qdsl field draws from it).
pub const SITE_MATRIX_DOMAIN: StreamDomain = StreamDomain::User(0xC0A6);

/// What the N × N matrices of a [`DenseLinkField`] are: the field holds
/// [`DenseKind::per_site`] of them per site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DenseKind {
    /// Links Y_μ(x), μ = 0..4 (x, y, z, t): 4 matrices per site (`Gauge<N>` in a spec).
    Links,
    /// One site-local matrix X(x) per site (`SiteMatrix<N>` in a spec).
    SiteMatrix,
}

impl DenseKind {
    /// Matrices per site: 4 links or 1 site matrix.
    pub fn per_site(self) -> usize {
        match self {
            DenseKind::Links => 4,
            DenseKind::SiteMatrix => 1,
        }
    }

    /// The stream domain of random fields of this kind.
    fn domain(self) -> StreamDomain {
        match self {
            DenseKind::Links => DENSE_LINK_DOMAIN,
            DenseKind::SiteMatrix => SITE_MATRIX_DOMAIN,
        }
    }
}

/// A dense field of P = [`DenseKind::per_site`] matrices per site: links
/// Y_μ(x) ∈ C^{N×N} for every site x and μ = 0..4 (x, y, z, t), or one site matrix
/// X(x) ∈ C^{N×N} (matrix k = 0), stored site-major in checkerboard order (even sites
/// first), like [`super::GaugeField`]:
///
/// offset(cb, k, r, c) = ((P · cb + k) · N + r) · N + c,
///
/// with r the row, c the column (fastest).
#[derive(Clone, Debug, PartialEq)]
pub struct DenseLinkField<T: Real> {
    lattice: Lattice,
    n: usize,
    kind: DenseKind,
    data: Vec<Complex<T>>,
}

impl<T: Real> DenseLinkField<T> {
    /// All links zero, N × N (`n` = N_s · N_c). An error for N = 0 or a field too large
    /// to index.
    pub fn zeros(lattice: Lattice, n: usize) -> Result<Self, FieldError> {
        Self::zeros_of(DenseKind::Links, lattice, n)
    }

    /// All matrices zero, N × N, `kind.per_site()` per site. An error for N = 0 or a
    /// field too large to index.
    pub fn zeros_of(kind: DenseKind, lattice: Lattice, n: usize) -> Result<Self, FieldError> {
        let len = Self::checked_len(kind, lattice, n)?;
        Ok(Self {
            lattice,
            n,
            kind,
            data: vec![Complex::new(T::zero(), T::zero()); len],
        })
    }

    /// P · V · N², or an error for N = 0 or an overflowing size.
    fn checked_len(kind: DenseKind, lattice: Lattice, n: usize) -> Result<usize, FieldError> {
        if n == 0 {
            return Err(FieldError::EmptyComponents {
                nspin: 1,
                ncolour: 0,
            });
        }
        let per_site = n
            .checked_mul(n)
            .and_then(|m| m.checked_mul(kind.per_site()));
        match per_site.and_then(|p| p.checked_mul(lattice.volume())) {
            Some(len) if len <= isize::MAX as usize / 16 => Ok(len),
            _ => Err(FieldError::TooLarge {
                sites: lattice.volume(),
                per_site: per_site.unwrap_or(usize::MAX),
            }),
        }
    }

    /// A random field: every entry of Y_μ(x) an independent complex Gaussian with unit
    /// variance per real part ([`RandomStream::gaussian_complex`]), drawn in f64 and
    /// rounded to `T`, row-major, from the stream ([`DENSE_LINK_DOMAIN`], 4 · lex(x) + μ).
    /// The field does not depend on the number of threads, and is unrelated to a gauge
    /// field made with the same seed.
    pub fn random(lattice: Lattice, n: usize, seed: u64) -> Result<Self, FieldError> {
        Self::random_of(DenseKind::Links, lattice, n, seed)
    }

    /// A random field of `kind`, drawn as [`Self::random`] does: matrix k of site x from
    /// the stream (domain, P · lex(x) + k), the domain [`DENSE_LINK_DOMAIN`] for links and
    /// [`SITE_MATRIX_DOMAIN`] for site matrices.
    pub fn random_of(
        kind: DenseKind,
        lattice: Lattice,
        n: usize,
        seed: u64,
    ) -> Result<Self, FieldError> {
        let mut field = Self::zeros_of(kind, lattice, n)?;
        let p = kind.per_site();
        field
            .data
            .par_chunks_mut(n * n)
            .enumerate()
            .for_each(|(k, link)| {
                let (cb, mu) = (k / p, k % p);
                let lex = lattice.cb_to_lex(cb) as u64;
                let stream = p as u64 * lex + mu as u64;
                let mut s = RandomStream::new(seed, kind.domain(), stream);
                for z in link {
                    let g = s.gaussian_complex();
                    *z = Complex::new(T::from_f64(g.re), T::from_f64(g.im));
                }
            });
        Ok(field)
    }

    /// The lattice.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// N, the matrix dimension (N_s · N_c of the spinors it acts on).
    pub fn n(&self) -> usize {
        self.n
    }

    /// What the matrices are (links or one site matrix per site).
    pub fn kind(&self) -> DenseKind {
        self.kind
    }

    /// All entries, in the storage order of the type's docs.
    pub fn data(&self) -> &[Complex<T>] {
        &self.data
    }

    /// Matrix `mu` (< P) of the site of checkerboard index `cb`, row-major (N²
    /// entries): Y_μ(x), or X(x) for `mu` = 0 of a site-matrix field.
    #[inline]
    pub fn link(&self, cb: usize, mu: usize) -> &[Complex<T>] {
        let (m, k) = (self.n * self.n, self.matrix_index(cb, mu));
        &self.data[k * m..(k + 1) * m]
    }

    /// Mutable matrix `mu` (< P) of the site of checkerboard index `cb`, row-major.
    #[inline]
    pub fn link_mut(&mut self, cb: usize, mu: usize) -> &mut [Complex<T>] {
        let (m, k) = (self.n * self.n, self.matrix_index(cb, mu));
        &mut self.data[k * m..(k + 1) * m]
    }

    /// P · cb + mu, the matrix's index in storage order.
    #[inline]
    fn matrix_index(&self, cb: usize, mu: usize) -> usize {
        let p = self.kind.per_site();
        debug_assert!(mu < p, "matrix {mu} of a field with {p} per site");
        p * cb + mu
    }

    /// Matrix `mu` at coordinates `c` (Y_μ(x), or X(x) for `mu` = 0 of a site-matrix field).
    #[inline]
    pub fn link_at(&self, c: Coords, mu: usize) -> &[Complex<T>] {
        self.link(self.lattice.cb_index(c), mu)
    }

    /// The field with every entry rounded to `U`.
    pub fn cast<U: Real>(&self) -> DenseLinkField<U> {
        DenseLinkField {
            lattice: self.lattice,
            n: self.n,
            kind: self.kind,
            data: self
                .data
                .iter()
                .map(|z| Complex::new(U::from_f64(z.re.to_f64()), U::from_f64(z.im.to_f64())))
                .collect(),
        }
    }
}

/// acc += coeff · Y v (or coeff · Y† v with `dagger`) for a row-major N × N matrix `y`
/// and N-vectors `v`, `acc`:
///
/// (Y v)_r = Σ_c Y_{rc} v_c,   (Y† v)_r = Σ_c conj(Y_{cr}) v_c.
#[inline]
pub fn dense_mul_add<T: Real>(
    acc: &mut [Complex<T>],
    y: &[Complex<T>],
    dagger: bool,
    v: &[Complex<T>],
    coeff: T,
) {
    let n = v.len();
    for (r, a) in acc.iter_mut().enumerate() {
        let mut w = Complex::new(T::zero(), T::zero());
        if dagger {
            for (c, vc) in v.iter().enumerate() {
                w += y[c * n + r].conj() * vc;
            }
        } else {
            for (yrc, vc) in y[r * n..(r + 1) * n].iter().zip(v) {
                w += yrc * vc;
            }
        }
        *a += w * coeff;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat() -> Lattice {
        Lattice::new([4, 2, 2, 2]).unwrap()
    }

    #[test]
    fn random_fields_are_seeded_and_sized() {
        let a = DenseLinkField::<f64>::random(lat(), 6, 7).unwrap();
        let b = DenseLinkField::<f64>::random(lat(), 6, 7).unwrap();
        let c = DenseLinkField::<f64>::random(lat(), 6, 8).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.data().len(), 4 * 32 * 36);
        // Unit variance per real part: E|z|² = 2 (4608 draws: within 10 %).
        let m2: f64 = a.data().iter().map(|z| z.norm_sqr()).sum::<f64>() / a.data().len() as f64;
        assert!((m2 - 2.0).abs() < 0.2, "E|z|² = {m2}");
        assert!(DenseLinkField::<f64>::zeros(lat(), 0).is_err());
    }

    /// A site-matrix field holds one N × N matrix per site (V · N² entries), drawn from
    /// its own domain: it differs from matrix μ = 0 of a link field of the same seed,
    /// and its matrix of site cb is the cb-th block of N² entries.
    #[test]
    fn site_matrix_fields_hold_one_matrix_per_site() {
        let x = DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, lat(), 6, 7).unwrap();
        let y = DenseLinkField::<f64>::random(lat(), 6, 7).unwrap();
        assert_eq!(x.kind(), DenseKind::SiteMatrix);
        assert_eq!(x.data().len(), 32 * 36);
        assert_eq!(x.link(5, 0), &x.data()[5 * 36..6 * 36]);
        assert_eq!(y.link(5, 2), &y.data()[(4 * 5 + 2) * 36..(4 * 5 + 3) * 36]);
        assert_ne!(x.link(0, 0), y.link(0, 0));
        assert_eq!(x.cast::<f32>().kind(), DenseKind::SiteMatrix);
        let z = DenseLinkField::<f64>::zeros_of(DenseKind::SiteMatrix, lat(), 3).unwrap();
        assert_eq!(z.data().len(), 32 * 9);
    }

    /// The product against a hand-written 2 × 2 example: Y = [[1, i], [2, 3]],
    /// v = (1, 1): Y v = (1 + i, 5), Y† v = (1 + 2, −i + 3) = (3, 3 − i).
    #[test]
    fn dense_product_and_adjoint_by_hand() {
        let c = |re, im| Complex::new(re, im);
        let y = [c(1.0, 0.0), c(0.0, 1.0), c(2.0, 0.0), c(3.0, 0.0)];
        let v = [c(1.0, 0.0), c(1.0, 0.0)];
        let mut acc = [c(0.0, 0.0); 2];
        dense_mul_add(&mut acc, &y, false, &v, 1.0);
        assert_eq!(acc, [c(1.0, 1.0), c(5.0, 0.0)]);
        let mut acc = [c(1.0, 0.0); 2];
        dense_mul_add(&mut acc, &y, true, &v, 2.0);
        assert_eq!(acc, [c(7.0, 0.0), c(7.0, -2.0)]);
    }
}
