//! Colour-spinor fields: Wilson (4 spins), staggered (1 spin), coarse (2 spins), 5D.

use super::rng::{RandomStream, StreamDomain};
use super::{FieldError, SpinorLayout};
use crate::lattice::Coords;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// A colour-spinor field ψ_{s, x, σ, a} on the CPU: one contiguous array of complex
/// numbers in the order of its [`SpinorLayout`] (`[s][site][spin][colour]`, colour
/// fastest).
///
/// The spin and colour counts are run-time values, so one type serves Wilson fields
/// (4 × 3), staggered colour vectors (1 × 3, see [`ColourVectorField`]), domain-wall
/// fields (4 × 3 × Ls) and multigrid coarse vectors (2 × N_c). A field on a single
/// parity holds the V/2 sites of that parity (even-odd preconditioned vectors).
#[derive(Clone, Debug, PartialEq)]
pub struct ColourSpinorField<T: Real> {
    layout: SpinorLayout,
    data: Vec<Complex<T>>,
}

/// A staggered colour-vector field χ_{x, a}: the one-spin case of [`ColourSpinorField`]
/// (build its layout with [`SpinorLayout::staggered`]).
pub type ColourVectorField<T> = ColourSpinorField<T>;

impl<T: Real> ColourSpinorField<T> {
    /// The zero field ψ = 0.
    pub fn zeros(layout: SpinorLayout) -> Self {
        Self {
            layout,
            data: vec![Complex::new(T::zero(), T::zero()); layout.len()],
        }
    }

    /// A field over existing storage in the layout's order; the length must be
    /// [`SpinorLayout::len`].
    pub fn from_data(layout: SpinorLayout, data: Vec<Complex<T>>) -> Result<Self, FieldError> {
        if data.len() != layout.len() {
            return Err(FieldError::WrongLength {
                expected: layout.len(),
                found: data.len(),
            });
        }
        Ok(Self { layout, data })
    }

    /// Builds ψ_{s,x,σ,a} = f(s, x, σ, a) for every component the layout holds (x as
    /// coordinates), visiting them in storage order.
    pub fn from_fn(
        layout: SpinorLayout,
        mut f: impl FnMut(usize, Coords, usize, usize) -> Complex<T>,
    ) -> Self {
        let mut data = Vec::with_capacity(layout.len());
        for s in 0..layout.ls() {
            for i in 0..layout.sites_per_slice() {
                let x = layout.coords_of_site(i);
                for spin in 0..layout.nspin() {
                    for colour in 0..layout.ncolour() {
                        data.push(f(s, x, spin, colour));
                    }
                }
            }
        }
        Self { layout, data }
    }

    /// The point source ψ_{s',x',σ',a'} = δ_{s's} δ_{x'x} δ_{σ'σ} δ_{a'a} (norm 1). An
    /// error if any index is out of range or x is not in the field's subset.
    pub fn point_source(
        layout: SpinorLayout,
        s: usize,
        x: Coords,
        spin: usize,
        colour: usize,
    ) -> Result<Self, FieldError> {
        let offset = layout.checked_offset(s, x, spin, colour)?;
        let mut field = Self::zeros(layout);
        field.data[offset] = Complex::new(T::one(), T::zero());
        Ok(field)
    }

    /// A Gaussian random field: every component an independent complex Gaussian with
    /// unit variance per real part (E|ψ|² = 2 per component,
    /// [`RandomStream::gaussian_complex`]), computed in `f64` and rounded to `T`.
    ///
    /// The site (s, x) draws its nspin · ncolour components, spin-major, from the stream
    /// ([`StreamDomain::Fermion`], s · V + lex(x)); the field therefore does not depend
    /// on the number of threads, and a single-parity field equals the restriction of the
    /// full field made with the same seed.
    pub fn gaussian(layout: SpinorLayout, seed: u64) -> Self {
        let mut field = Self::zeros(layout);
        let sites = layout.sites_per_slice();
        field
            .data
            .par_chunks_mut(layout.site_len())
            .enumerate()
            .for_each(|(k, site)| {
                let (s, i) = (k / sites, k % sites);
                let index = layout.lex5_index(s, layout.coords_of_site(i));
                let mut stream = RandomStream::new(seed, StreamDomain::Fermion, index);
                for z in site {
                    let g = stream.gaussian_complex();
                    *z = Complex::new(T::from_f64(g.re), T::from_f64(g.im));
                }
            });
        field
    }

    /// The field's layout.
    pub fn layout(&self) -> &SpinorLayout {
        &self.layout
    }

    /// All components in storage order.
    pub fn data(&self) -> &[Complex<T>] {
        &self.data
    }

    /// All components in storage order, mutable.
    pub fn data_mut(&mut self) -> &mut [Complex<T>] {
        &mut self.data
    }

    /// The nspin · ncolour components ψ_{s,i,σ,a} of site `i` (index within the subset)
    /// of slice `s`, spin-major. Panics if `s` or `i` is out of range, like slice
    /// indexing.
    pub fn site(&self, s: usize, i: usize) -> &[Complex<T>] {
        let start = self.layout.offset(s, i, 0, 0);
        &self.data[start..start + self.layout.site_len()]
    }

    /// Mutable components of site `i` of slice `s` (see [`Self::site`]).
    pub fn site_mut(&mut self, s: usize, i: usize) -> &mut [Complex<T>] {
        let start = self.layout.offset(s, i, 0, 0);
        let len = self.layout.site_len();
        &mut self.data[start..start + len]
    }

    /// The component ψ_{s,x,σ,a}, every index checked.
    pub fn get(
        &self,
        s: usize,
        x: Coords,
        spin: usize,
        colour: usize,
    ) -> Result<Complex<T>, FieldError> {
        Ok(self.data[self.layout.checked_offset(s, x, spin, colour)?])
    }

    /// Sets the component ψ_{s,x,σ,a}, every index checked.
    pub fn set(
        &mut self,
        s: usize,
        x: Coords,
        spin: usize,
        colour: usize,
        value: Complex<T>,
    ) -> Result<(), FieldError> {
        let offset = self.layout.checked_offset(s, x, spin, colour)?;
        self.data[offset] = value;
        Ok(())
    }

    /// The same field in another precision (each real rounded to nearest).
    pub fn cast<U: Real>(&self) -> ColourSpinorField<U> {
        ColourSpinorField {
            layout: self.layout,
            data: self
                .data
                .par_iter()
                .map(|z| Complex::new(U::from_f64(z.re.to_f64()), U::from_f64(z.im.to_f64())))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::SiteSubset;
    use crate::lattice::{Lattice, Lattice5D, Parity};

    fn lattice() -> Lattice {
        Lattice::new([4, 2, 2, 6]).unwrap()
    }

    #[test]
    fn point_source_has_one_unit_component_where_asked() {
        let layout = SpinorLayout::domain_wall(
            Lattice5D::new(lattice().dims(), 3).unwrap(),
            SiteSubset::Single(Parity::Odd),
        );
        let x = [1, 1, 1, 2];
        let psi = ColourSpinorField::<f64>::point_source(layout, 2, x, 3, 1).unwrap();
        assert_eq!(psi.norm_sqr(), 1.0);
        assert_eq!(psi.get(2, x, 3, 1).unwrap(), Complex::new(1.0, 0.0));
        assert_eq!(psi.get(1, x, 3, 1).unwrap(), Complex::new(0.0, 0.0));
        assert_eq!(psi.data().iter().filter(|z| z.norm_sqr() != 0.0).count(), 1);
        // (0,0,0,0) is even: not in an odd field.
        assert!(matches!(
            ColourSpinorField::<f64>::point_source(layout, 0, [0; 4], 0, 0),
            Err(FieldError::WrongParity { .. })
        ));
        assert!(matches!(
            ColourSpinorField::<f64>::point_source(layout, 0, x, 4, 0),
            Err(FieldError::IndexOutOfRange {
                what: "spin",
                index: 4,
                limit: 4
            })
        ));
    }

    #[test]
    fn from_fn_visits_the_documented_order() {
        let layout = SpinorLayout::staggered(lattice(), SiteSubset::Full);
        let lat = lattice();
        // ψ(x, a) = lex(x) + i a.
        let psi = ColourVectorField::<f32>::from_fn(layout, |_, x, _, a| {
            Complex::new(lat.lex_index(x) as f32, a as f32)
        });
        for cb in 0..lat.volume() {
            let x = lat.coords_of_cb(cb);
            for a in 0..3 {
                assert_eq!(
                    psi.site(0, cb)[a],
                    Complex::new(lat.lex_index(x) as f32, a as f32)
                );
                assert_eq!(psi.get(0, x, 0, a).unwrap(), psi.site(0, cb)[a]);
            }
        }
        assert!(matches!(
            ColourVectorField::<f32>::from_data(layout, vec![Complex::new(0.0, 0.0); 5]),
            Err(FieldError::WrongLength {
                expected: 288,
                found: 5
            })
        ));
    }

    /// The parity restriction of a full Gaussian field equals the single-parity field of
    /// the same seed (streams follow sites, not storage); E|ψ|² = 2 per component; the
    /// f32 field is the f64 field rounded; other seeds give other fields.
    #[test]
    fn gaussian_fields_follow_sites_and_have_unit_variance() {
        let lat = Lattice::new([4, 4, 4, 4]).unwrap();
        let full = SpinorLayout::new(lat, 2, SiteSubset::Full, 4, 3).unwrap();
        let odd = full.with_subset(SiteSubset::Single(Parity::Odd));
        let psi = ColourSpinorField::<f64>::gaussian(full, 11);
        let chi = ColourSpinorField::<f64>::gaussian(odd, 11);
        for s in 0..2 {
            for i in 0..odd.sites_per_slice() {
                let cb = lat.join_cb(Parity::Odd, i);
                assert_eq!(chi.site(s, i), psi.site(s, cb));
            }
        }
        assert_ne!(psi.site(0, 0), psi.site(1, 0));
        let per_component = psi.norm_sqr() / full.len() as f64;
        // 6144 components, each |z|² ~ Exp(mean 2): standard error 0.026.
        assert!((per_component - 2.0).abs() < 0.13, "{per_component}");
        let single = ColourSpinorField::<f32>::gaussian(full, 11);
        assert_eq!(single, psi.cast::<f32>());
        assert_ne!(ColourSpinorField::<f64>::gaussian(full, 12), psi);
    }
}
