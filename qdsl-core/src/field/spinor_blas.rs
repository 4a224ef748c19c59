//! The few vector operations on colour-spinor fields that solvers need: ‖ψ‖², ⟨ψ, χ⟩
//! and y ← a x + y.
//!
//! Norms and inner products accumulate in `f64` whatever the field's precision, and in a
//! fixed order: the field is cut into chunks of [`REDUCTION_CHUNK`](crate::reduce::REDUCTION_CHUNK) components, each
//! chunk summed sequentially (in parallel across chunks), then the chunk sums added in
//! order. The result is therefore the same bits for any number of threads.

use super::{ColourSpinorField, FieldError};
use crate::reduce::ordered_sum;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// A complex number of any precision widened to f64.
#[inline]
fn widen<T: Real>(z: Complex<T>) -> Complex<f64> {
    Complex::new(z.re.to_f64(), z.im.to_f64())
}

impl<T: Real> ColourSpinorField<T> {
    /// Squared norm ‖ψ‖² = Σ_{s,x,σ,a} |ψ_{s,x,σ,a}|², accumulated in f64.
    pub fn norm_sqr(&self) -> f64 {
        let psi = self.data();
        ordered_sum(psi.len(), |r| {
            psi[r].iter().map(|&z| widen(z).norm_sqr()).sum()
        })
    }

    /// Inner product ⟨ψ, χ⟩ = Σ_{s,x,σ,a} ψ*_{s,x,σ,a} χ_{s,x,σ,a} (conjugate-linear in
    /// `self` = ψ), accumulated in f64. The layouts must agree.
    pub fn dot(&self, chi: &Self) -> Result<Complex<f64>, FieldError> {
        self.layout().expect_same(chi.layout())?;
        let (psi, chi) = (self.data(), chi.data());
        Ok(ordered_sum(psi.len(), |r| {
            psi[r.clone()]
                .iter()
                .zip(&chi[r])
                .map(|(&p, &c)| widen(p).conj() * widen(c))
                .sum()
        }))
    }

    /// y ← a x + y (y = `self`), in the field's precision. `a` may be real or complex.
    /// The layouts must agree.
    pub fn axpy(&mut self, a: impl Into<Complex<T>>, x: &Self) -> Result<(), FieldError> {
        self.layout().expect_same(x.layout())?;
        let a = a.into();
        self.data_mut()
            .par_iter_mut()
            .zip(x.data().par_iter())
            .for_each(|(y, &x)| *y += a * x);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{SiteSubset, SpinorLayout};
    use crate::lattice::{Lattice, Parity};

    fn c(re: f64, im: f64) -> Complex<f64> {
        Complex::new(re, im)
    }

    /// Hand-computed values on a field with two non-zero components per field:
    /// ψ = (1 + 2i) e₀ + 3 e₅, χ = (2 − i) e₀ + i e₅ ⇒ ‖ψ‖² = 1 + 4 + 9 = 14,
    /// ⟨ψ, χ⟩ = (1 − 2i)(2 − i) + 3·i = −5i + 3i = −2i, and ψ + (1 + i) χ.
    #[test]
    fn norm_dot_axpy_match_hand_computation() {
        let layout = SpinorLayout::staggered(Lattice::new([2; 4]).unwrap(), SiteSubset::Full);
        let field = |a: Complex<f64>, b: Complex<f64>| {
            let mut data = vec![c(0.0, 0.0); layout.len()];
            (data[0], data[5]) = (a, b);
            ColourSpinorField::from_data(layout, data).unwrap()
        };
        let mut psi = field(c(1.0, 2.0), c(3.0, 0.0));
        let chi = field(c(2.0, -1.0), c(0.0, 1.0));
        assert_eq!(psi.norm_sqr(), 14.0);
        assert_eq!(psi.dot(&chi).unwrap(), c(0.0, -2.0));
        assert_eq!(chi.dot(&psi).unwrap(), c(0.0, 2.0));
        assert_eq!(psi.dot(&psi).unwrap(), c(14.0, 0.0));
        // (1 + i)(2 − i) = 3 + i; (1 + i)·i = −1 + i.
        psi.axpy(c(1.0, 1.0), &chi).unwrap();
        assert_eq!(psi, field(c(4.0, 3.0), c(2.0, 1.0)));
        psi.axpy(-2.0, &chi).unwrap();
        assert_eq!(psi, field(c(0.0, 5.0), c(2.0, -1.0)));
        let odd =
            ColourSpinorField::<f64>::zeros(layout.with_subset(SiteSubset::Single(Parity::Odd)));
        assert!(matches!(
            psi.dot(&odd),
            Err(FieldError::LayoutMismatch { .. })
        ));
        assert!(matches!(
            psi.axpy(1.0, &odd),
            Err(FieldError::LayoutMismatch { .. })
        ));
    }

    /// One component 10⁴ and 4095 components 1 in f32: ‖ψ‖² = 10⁸ + 4095 exactly in f64,
    /// while an f32 accumulator (spacing 8 at 10⁸) would lose most of the 4095.
    #[test]
    fn reductions_accumulate_in_f64() {
        let layout = SpinorLayout::wilson(Lattice::new([4, 4, 4, 8]).unwrap(), SiteSubset::Full);
        let mut psi = ColourSpinorField::<f32>::zeros(layout);
        psi.data_mut()[0] = Complex::new(1e4, 0.0);
        for z in &mut psi.data_mut()[1..crate::reduce::REDUCTION_CHUNK] {
            *z = Complex::new(1.0, 0.0);
        }
        assert_eq!(psi.norm_sqr(), 1e8 + 4095.0);
        assert_eq!(psi.dot(&psi).unwrap(), Complex::new(1e8 + 4095.0, 0.0));
    }

    /// Reductions over many chunks give identical bits on 1 and 3 threads.
    #[test]
    fn reductions_do_not_depend_on_thread_count() {
        let layout = SpinorLayout::wilson(Lattice::new([4, 4, 4, 8]).unwrap(), SiteSubset::Full);
        let psi = ColourSpinorField::<f32>::gaussian(layout, 5);
        let chi = ColourSpinorField::<f32>::gaussian(layout, 6);
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| (psi.norm_sqr().to_bits(), psi.dot(&chi).unwrap()))
        };
        let (one, three) = (run(1), run(3));
        assert_eq!(one.0, three.0);
        assert_eq!(one.1.re.to_bits(), three.1.re.to_bits());
        assert_eq!(one.1.im.to_bits(), three.1.im.to_bits());
    }
}
