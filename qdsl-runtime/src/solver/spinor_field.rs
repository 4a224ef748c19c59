//! [`SolverField`] and [`ConvertFrom`] for host [`ColourSpinorField`]s in f32 and f64.
//!
//! Norms, inner products and y ← a x + y are qdsl-core's (f64 accumulation in a fixed,
//! thread-count independent order); the rest runs here, rayon-parallel over the
//! contiguous storage.

use super::block_cg::expect_sources;
use super::{ConvertFrom, SolverError, SolverField, SourceBatch};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::{Complex, Real};
use rayon::prelude::*;

/// A complex f64 coefficient rounded to the field's precision.
fn narrow<T: Real>(a: Complex<f64>) -> Complex<T> {
    Complex::new(T::from_f64(a.re), T::from_f64(a.im))
}

/// The error of two fields whose layouts differ.
fn same_layout<A: Real, B: Real>(
    y: &ColourSpinorField<A>,
    x: &ColourSpinorField<B>,
) -> Result<(), SolverError> {
    y.layout()
        .expect_same(x.layout())
        .map_err(SolverError::field)
}

impl<T: Real> SolverField for ColourSpinorField<T> {
    /// 2⁻⁵³ for f64, 2⁻²⁴ for f32: half the spacing of the numbers near 1.
    const UNIT_ROUNDOFF: f64 = if T::BYTES == 8 {
        1.0 / 9_007_199_254_740_992.0
    } else {
        1.0 / 16_777_216.0
    };

    fn zeros_like(&self) -> Self {
        ColourSpinorField::zeros(*self.layout())
    }

    fn copy_from(&mut self, x: &Self) -> Result<(), SolverError> {
        same_layout(self, x)?;
        self.data_mut()
            .par_iter_mut()
            .zip(x.data().par_iter())
            .for_each(|(y, &x)| *y = x);
        Ok(())
    }

    fn set_zero(&mut self) {
        let zero = Complex::new(T::zero(), T::zero());
        self.data_mut().par_iter_mut().for_each(|y| *y = zero);
    }

    fn norm_sqr(&self) -> Result<f64, SolverError> {
        Ok(ColourSpinorField::norm_sqr(self))
    }

    fn dot(&self, x: &Self) -> Result<Complex<f64>, SolverError> {
        ColourSpinorField::dot(self, x).map_err(SolverError::field)
    }

    fn axpy(&mut self, a: Complex<f64>, x: &Self) -> Result<(), SolverError> {
        ColourSpinorField::axpy(self, narrow::<T>(a), x).map_err(SolverError::field)
    }

    fn xpay(&mut self, x: &Self, a: Complex<f64>) -> Result<(), SolverError> {
        same_layout(self, x)?;
        let a = narrow::<T>(a);
        self.data_mut()
            .par_iter_mut()
            .zip(x.data().par_iter())
            .for_each(|(y, &x)| *y = x + a * *y);
        Ok(())
    }

    fn scale(&mut self, a: Complex<f64>) {
        let a = narrow::<T>(a);
        self.data_mut().par_iter_mut().for_each(|y| *y = a * *y);
    }
}

/// The components of one source (one slice: slices are contiguous, slice-major).
fn slice_len<T: Real>(f: &ColourSpinorField<T>) -> usize {
    f.data().len() / f.layout().ls().max(1)
}

/// The sources of a host field are its Ls slices; per-source sums in f64, each slice
/// summed in order (the slices in parallel).
impl<T: Real> SourceBatch for ColourSpinorField<T> {
    fn sources(&self) -> usize {
        self.layout().ls()
    }

    fn norm_sqr_each(&self) -> Vec<f64> {
        self.data()
            .par_chunks(slice_len(self))
            .map(|s| {
                s.iter()
                    .map(|z| z.re.to_f64().powi(2) + z.im.to_f64().powi(2))
                    .sum()
            })
            .collect()
    }

    fn dot_each(&self, x: &Self) -> Result<Vec<Complex<f64>>, SolverError> {
        same_layout(self, x)?;
        let n = slice_len(self);
        Ok(self
            .data()
            .par_chunks(n)
            .zip(x.data().par_chunks(n))
            .map(|(y, x)| {
                y.iter().zip(x).fold(Complex::new(0.0, 0.0), |acc, (y, x)| {
                    let (yr, yi, xr, xi) =
                        (y.re.to_f64(), y.im.to_f64(), x.re.to_f64(), x.im.to_f64());
                    acc + Complex::new(yr * xr + yi * xi, yr * xi - yi * xr)
                })
            })
            .collect())
    }

    fn axpy_each(&mut self, a: &[Complex<f64>], x: &Self) -> Result<(), SolverError> {
        same_layout(self, x)?;
        expect_sources(a.len(), self.sources())?;
        let n = slice_len(self);
        self.data_mut()
            .par_chunks_mut(n)
            .zip(x.data().par_chunks(n))
            .zip(a.par_iter())
            .for_each(|((y, x), &a)| {
                let a = narrow::<T>(a);
                y.iter_mut().zip(x).for_each(|(y, &x)| *y = a * x + *y);
            });
        Ok(())
    }

    fn xpay_each(&mut self, x: &Self, a: &[Complex<f64>]) -> Result<(), SolverError> {
        same_layout(self, x)?;
        expect_sources(a.len(), self.sources())?;
        let n = slice_len(self);
        self.data_mut()
            .par_chunks_mut(n)
            .zip(x.data().par_chunks(n))
            .zip(a.par_iter())
            .for_each(|((y, x), &a)| {
                let a = narrow::<T>(a);
                y.iter_mut().zip(x).for_each(|(y, &x)| *y = x + a * *y);
            });
        Ok(())
    }
}

impl<H: Real, L: Real> ConvertFrom<ColourSpinorField<H>> for ColourSpinorField<L> {
    fn convert_from(&mut self, x: &ColourSpinorField<H>) -> Result<(), SolverError> {
        same_layout(self, x)?;
        self.data_mut()
            .par_iter_mut()
            .zip(x.data().par_iter())
            .for_each(|(y, x)| {
                *y = Complex::new(L::from_f64(x.re.to_f64()), L::from_f64(x.im.to_f64()))
            });
        Ok(())
    }

    fn converted(x: &ColourSpinorField<H>) -> Self {
        x.cast::<L>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::field::{SiteSubset, SpinorLayout};
    use qdsl_core::lattice::{Lattice, Parity};

    fn c(re: f64, im: f64) -> Complex<f64> {
        Complex::new(re, im)
    }

    fn layout() -> SpinorLayout {
        SpinorLayout::staggered(Lattice::new([2; 4]).unwrap(), SiteSubset::Full)
    }

    /// A field with the two given components at offsets 0 and 5, zero elsewhere.
    fn field(a: Complex<f64>, b: Complex<f64>) -> ColourSpinorField<f64> {
        let mut data = vec![c(0.0, 0.0); layout().len()];
        (data[0], data[5]) = (a, b);
        ColourSpinorField::from_data(layout(), data).unwrap()
    }

    /// Hand-computed: y = (1 + 2i, 3), x = (2 − i, i), a = 1 + i:
    /// x + a y = (2 − i + (−1 + 3i), i + 3 + 3i) = (1 + 2i, 3 + 4i);
    /// a y = (−1 + 3i, 3 + 3i); copy and zero; ‖·‖² and ⟨·,·⟩ through the trait.
    #[test]
    fn vector_operations_match_hand_computation() {
        let a = c(1.0, 1.0);
        let x = field(c(2.0, -1.0), c(0.0, 1.0));
        let mut y = field(c(1.0, 2.0), c(3.0, 0.0));
        SolverField::xpay(&mut y, &x, a).unwrap();
        assert_eq!(y, field(c(1.0, 2.0), c(3.0, 4.0)));
        let mut y = field(c(1.0, 2.0), c(3.0, 0.0));
        SolverField::scale(&mut y, a);
        assert_eq!(y, field(c(-1.0, 3.0), c(3.0, 3.0)));
        SolverField::axpy(&mut y, c(0.0, -1.0), &x).unwrap();
        // −i (2 − i) = −1 − 2i; −i · i = 1.
        assert_eq!(y, field(c(-2.0, 1.0), c(4.0, 3.0)));
        assert_eq!(SolverField::norm_sqr(&y).unwrap(), 4.0 + 1.0 + 16.0 + 9.0);
        // ⟨x, y⟩ = (2 + i)(−2 + i) + (−i)(4 + 3i) = (−5) + (3 − 4i) = −2 − 4i.
        assert_eq!(SolverField::dot(&x, &y).unwrap(), c(-2.0, -4.0));
        let mut z = y.zeros_like();
        assert_eq!(z.norm_sqr(), 0.0);
        z.copy_from(&y).unwrap();
        assert_eq!(z, y);
        z.set_zero();
        assert_eq!(z, y.zeros_like());
    }

    /// Conversions round to nearest (1 + 2⁻³⁰ is 1 in f32), go both ways, and keep
    /// the layout; fields of other layouts are refused with the layout error.
    #[test]
    fn conversion_rounds_and_checks_layouts() {
        let y = field(c(1.0 + 2f64.powi(-30), 0.1), c(-3.0, 1e-3));
        let low: ColourSpinorField<f32> = ConvertFrom::converted(&y);
        assert_eq!(low.data()[0], Complex::new(1.0f32, 0.1f32));
        let mut back = y.zeros_like();
        back.convert_from(&low).unwrap();
        assert_eq!(back.data()[0], c(1.0, 0.1f32 as f64));
        assert_eq!(back.data()[5], c(-3.0, 1e-3f32 as f64));
        let odd =
            ColourSpinorField::<f64>::zeros(layout().with_subset(SiteSubset::Single(Parity::Odd)));
        assert!(matches!(
            back.convert_from(&odd),
            Err(SolverError::Field(_))
        ));
        assert!(back.copy_from(&odd).is_err());
        assert!(back.clone().xpay(&odd, c(1.0, 0.0)).is_err());
    }

    /// The unit round-offs are 2⁻⁵³ and 2⁻²⁴: 1 + u rounds to 1, 1 + 2u does not.
    #[test]
    fn unit_roundoff_is_half_an_ulp_of_one() {
        let u64_ = <ColourSpinorField<f64> as SolverField>::UNIT_ROUNDOFF;
        let u32_ = <ColourSpinorField<f32> as SolverField>::UNIT_ROUNDOFF;
        assert_eq!(u64_, f64::EPSILON / 2.0);
        assert_eq!(u32_ as f32, f32::EPSILON / 2.0);
        assert_eq!(1.0f32 + u32_ as f32, 1.0);
        assert_ne!(1.0f32 + 2.0 * u32_ as f32, 1.0);
    }
}
