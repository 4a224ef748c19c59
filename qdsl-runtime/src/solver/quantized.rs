//! Emulated low-precision storage for solver fields: [`QuantizedField`] keeps its
//! components representable in a storage format of qdsl-core ([`FermionFormat`]: f16,
//! bf16, 16- and 8-bit fixed point, 20- and 30-bit packed) or in TF32 ([`Tf32`], the
//! tensor-core input format: f32's exponent, 10 explicit mantissa bits), so that a mixed-precision
//! solve on the CPU iterates with exactly the rounding a field stored in that format
//! would have — the precision study of the solvers, before device fields exist.
//!
//! Only the rounding is emulated, not the memory saving: the components are held in f64
//! and rounded through the format (encode, then decode) after every write.

use super::{ConvertFrom, LinearOperator, SolverError, SolverField};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::format::FermionFormat;
use qdsl_core::{Complex, Real};
use rayon::prelude::*;
use std::marker::PhantomData;

/// A storage format as a type, with its relative round-off as a constant (the solvers'
/// tolerance checks need it before any field exists).
pub trait SpinorStorage: Send + Sync + 'static {
    /// The format.
    const FORMAT: FermionFormat;
    /// The relative round-off u of one stored component, relative to the largest
    /// component of its site (fixed point) or group of 6 (packed), or to itself (float).
    const UNIT_ROUNDOFF: f64;
    /// The format's name in reports ("fixed16", "tf32", …).
    const NAME: &'static str = Self::FORMAT.name();

    /// Rounds the reals of one site through the format: reals ← decode(encode(reals)),
    /// `bytes` being scratch of [`FermionFormat::bytes_per_site`] bytes. False (reals
    /// untouched) when the format cannot hold the site (NaN, ±∞, out of range).
    fn round_site(reals: &mut [f64], bytes: &mut [u8]) -> bool {
        Self::FORMAT.encode(reals, bytes).is_ok() && Self::FORMAT.decode(bytes, reals).is_ok()
    }
}

/// Defines a marker type for one storage format.
macro_rules! storage {
    ($(#[$doc:meta])* $name:ident, $format:expr, $u:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name;

        impl SpinorStorage for $name {
            const FORMAT: FermionFormat = $format;
            const UNIT_ROUNDOFF: f64 = $u;
        }
    };
}

storage!(
    /// IEEE half precision: u = 2⁻¹¹.
    Half, FermionFormat::F16, 1.0 / 2048.0
);
storage!(
    /// bfloat16: u = 2⁻⁸.
    BFloat16, FermionFormat::BF16, 1.0 / 256.0
);
storage!(
    /// 16-bit fixed point with a per-site norm: u = 1/(2 · 32767).
    Fixed16, FermionFormat::FIXED16, 1.0 / 65534.0
);
storage!(
    /// 8-bit fixed point with a per-site norm: u = 1/(2 · 127).
    Fixed8, FermionFormat::FIXED8, 1.0 / 254.0
);
storage!(
    /// 20-bit packed groups of 6 with a shared exponent: u = 1/(2¹⁹ − 1).
    Packed20, FermionFormat::PACKED20, 1.0 / 524_287.0
);
storage!(
    /// 30-bit packed groups of 6 with a shared exponent: u = 1/(2²⁹ − 1).
    Packed30, FermionFormat::PACKED30, 1.0 / 536_870_911.0
);

/// TF32 (NVIDIA's tensor-float 32): the 8-bit exponent of f32 with 10 explicit mantissa
/// bits, held in an f32 container ([`FermionFormat::F32`]), u = 2⁻¹¹. Emulated by rounding
/// each real to nearest (ties to even) at 11 significant bits:
///
/// round(v) = q · rint(v/q),  q = 2^(max(e, −126) − 10),  e = ⌊log₂|v|⌋,
///
/// (subnormals keep the spacing 2⁻¹³⁶), and ±∞ beyond the largest value (2 − 2⁻¹⁰)·2¹²⁷.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tf32;

impl Tf32 {
    /// The largest finite TF32 value, (2 − 2⁻¹⁰) · 2¹²⁷.
    pub const MAX: f64 = (2.0 - 1.0 / 1024.0) * 1.701_411_834_604_692_3e38;

    /// v rounded to the nearest TF32 value (ties to even); NaN and ±∞ pass through.
    pub fn round(v: f64) -> f64 {
        if v == 0.0 || !v.is_finite() {
            return v;
        }
        // ⌊log₂|v|⌋ from the f64 exponent field (v is normal in f64 for any v TF32 can
        // hold; f64 subnormals round to zero below).
        let biased = ((v.to_bits() >> 52) & 0x7ff) as i32;
        let exponent = (biased - 1023).max(-126);
        let quantum = 2f64.powi(exponent - 10);
        let rounded = (v / quantum).round_ties_even() * quantum;
        if rounded.abs() > Self::MAX {
            f64::INFINITY.copysign(v)
        } else {
            rounded
        }
    }
}

impl SpinorStorage for Tf32 {
    const FORMAT: FermionFormat = FermionFormat::F32;
    const UNIT_ROUNDOFF: f64 = 1.0 / 2048.0;
    const NAME: &'static str = "tf32";

    /// Each real rounded to TF32; false (untouched) if any is not finite or overflows.
    fn round_site(reals: &mut [f64], _bytes: &mut [u8]) -> bool {
        if reals.iter().any(|v| !Self::round(*v).is_finite()) {
            return false;
        }
        reals.iter_mut().for_each(|v| *v = Self::round(*v));
        true
    }
}

/// A colour-spinor field whose components are always representable in the storage
/// format `S`: an f64 field rounded through `S` after every write.
///
/// A site the format cannot hold (NaN, ±∞, or beyond its range) is left unrounded, so
/// that the solver sees the non-finite value and reports a breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedField<S> {
    field: ColourSpinorField<f64>,
    storage: PhantomData<S>,
}

impl<S: SpinorStorage> QuantizedField<S> {
    /// round_S(ψ): the field rounded through the format.
    pub fn new(field: ColourSpinorField<f64>) -> Self {
        let mut quantized = Self {
            field,
            storage: PhantomData,
        };
        quantized.quantize();
        quantized
    }

    /// The (representable) values, in f64.
    pub fn field(&self) -> &ColourSpinorField<f64> {
        &self.field
    }

    /// Rounds every site through the format ([`round_through`]).
    fn quantize(&mut self) {
        round_through::<S>(&mut self.field);
    }
}

/// Rounds every site of an f64 field through the format `S`:
/// ψ_site ← decode(encode(ψ_site)); a site the format cannot hold is left as it is.
pub fn round_through<S: SpinorStorage>(field: &mut ColourSpinorField<f64>) {
    let site_len = field.layout().site_len();
    let bytes_len = S::FORMAT.bytes_per_site(2 * site_len);
    field.data_mut().par_chunks_mut(site_len).for_each_init(
        || (vec![0.0_f64; 2 * site_len], vec![0_u8; bytes_len]),
        |(reals, bytes), site| {
            for (pair, z) in reals.chunks_exact_mut(2).zip(site.iter()) {
                (pair[0], pair[1]) = (z.re, z.im);
            }
            if S::round_site(reals, bytes) {
                for (z, pair) in site.iter_mut().zip(reals.chunks_exact(2)) {
                    *z = Complex::new(pair[0], pair[1]);
                }
            }
        },
    );
}

impl<S: SpinorStorage> SolverField for QuantizedField<S> {
    const UNIT_ROUNDOFF: f64 = S::UNIT_ROUNDOFF;

    fn zeros_like(&self) -> Self {
        Self {
            field: self.field.zeros_like(),
            storage: PhantomData,
        }
    }

    fn copy_from(&mut self, x: &Self) -> Result<(), SolverError> {
        self.field.copy_from(&x.field)
    }

    fn set_zero(&mut self) {
        self.field.set_zero();
    }

    fn norm_sqr(&self) -> Result<f64, SolverError> {
        Ok(self.field.norm_sqr())
    }

    fn dot(&self, x: &Self) -> Result<Complex<f64>, SolverError> {
        SolverField::dot(&self.field, &x.field)
    }

    /// y ← round_S(a x + y).
    fn axpy(&mut self, a: Complex<f64>, x: &Self) -> Result<(), SolverError> {
        SolverField::axpy(&mut self.field, a, &x.field)?;
        self.quantize();
        Ok(())
    }

    /// y ← round_S(x + a y).
    fn xpay(&mut self, x: &Self, a: Complex<f64>) -> Result<(), SolverError> {
        self.field.xpay(&x.field, a)?;
        self.quantize();
        Ok(())
    }

    /// y ← round_S(a y).
    fn scale(&mut self, a: Complex<f64>) {
        self.field.scale(a);
        self.quantize();
    }
}

impl<S: SpinorStorage, H: Real> ConvertFrom<ColourSpinorField<H>> for QuantizedField<S> {
    fn convert_from(&mut self, x: &ColourSpinorField<H>) -> Result<(), SolverError> {
        self.field.convert_from(x)?;
        self.quantize();
        Ok(())
    }

    fn converted(x: &ColourSpinorField<H>) -> Self {
        Self::new(x.cast())
    }
}

impl<S: SpinorStorage, L: Real> ConvertFrom<QuantizedField<S>> for ColourSpinorField<L> {
    fn convert_from(&mut self, x: &QuantizedField<S>) -> Result<(), SolverError> {
        self.convert_from(&x.field)
    }

    fn converted(x: &QuantizedField<S>) -> Self {
        x.field.cast()
    }
}

/// An operator on f64 fields acting on quantized ones: out = round_S(M in), the
/// arithmetic in f64 (a kernel that loads and stores format S and computes in a wider
/// precision).
pub struct QuantizedOperator<O>(pub O);

impl<S: SpinorStorage, O: LinearOperator<ColourSpinorField<f64>>> LinearOperator<QuantizedField<S>>
    for QuantizedOperator<O>
{
    /// out ← round_S(M in).
    fn apply(
        &self,
        out: &mut QuantizedField<S>,
        input: &QuantizedField<S>,
    ) -> Result<(), SolverError> {
        self.0.apply(&mut out.field, &input.field)?;
        out.quantize();
        Ok(())
    }

    /// out ← round_S(M† in).
    fn apply_dagger(
        &self,
        out: &mut QuantizedField<S>,
        input: &QuantizedField<S>,
    ) -> Result<(), SolverError> {
        self.0.apply_dagger(&mut out.field, &input.field)?;
        out.quantize();
        Ok(())
    }

    /// Those of M.
    fn flops_per_apply(&self) -> u64 {
        self.0.flops_per_apply()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::field::{SiteSubset, SpinorLayout};
    use qdsl_core::lattice::Lattice;

    fn gaussian() -> ColourSpinorField<f64> {
        let layout = SpinorLayout::wilson(Lattice::new([2; 4]).unwrap(), SiteSubset::Full);
        ColourSpinorField::gaussian(layout, 3)
    }

    /// The round-off constants bound the formats' documented errors relative to the site
    /// (group) max, for maxima across the range, and are tight (reached within 1 % at
    /// some max). (Float formats: in their normal range, where the absolute subnormal
    /// term η ≤ 2⁻²⁵ adds at most 10⁻³ u.)
    #[test]
    fn unit_roundoffs_bound_the_format_errors() {
        fn check<S: SpinorStorage>(maxima: &[f64], slack: f64) {
            let u = S::UNIT_ROUNDOFF;
            let relative: Vec<f64> = maxima
                .iter()
                .map(|&m| S::FORMAT.error_bound::<f64>(m) / m)
                .collect();
            for (m, r) in maxima.iter().zip(&relative) {
                assert!(*r <= u * (1.0 + slack), "{} at {m}: {r} > {u}", S::FORMAT);
            }
            let worst = relative.iter().cloned().fold(0.0, f64::max);
            assert!(worst >= 0.99 * u, "{}: {worst} vs {u}", S::FORMAT);
        }
        let wide = [0.3, 0.7, 0.999_999, 1.0, 1.5, 1e3, 1e-4];
        check::<Fixed16>(&wide, 1e-6);
        check::<Fixed8>(&wide, 1e-6);
        check::<Packed20>(&wide, 1e-6);
        check::<Packed30>(&wide, 1e-6);
        let normal = [0.75, 1.0, 1.5, 1e3];
        check::<Half>(&normal, 1e-3);
        check::<BFloat16>(&normal, 1e-3);
    }

    /// TF32 rounding against hand-computed values: 1 + 2⁻¹⁰ is representable; the ties
    /// 1 + 2⁻¹¹ and 1 + 3·2⁻¹¹ go to the even neighbours 1 and 1 + 2⁻⁹; just above a tie
    /// rounds up; the subnormal spacing is 2⁻¹³⁶; overflow gives ∞. Every rounded value
    /// is an f32 (round trip through f32 is exact), rounding twice changes nothing, and the
    /// relative error is at most u = 2⁻¹¹ on a Gaussian field.
    #[test]
    fn tf32_rounds_the_mantissa_to_ten_bits() {
        let p = |e: i32| 2f64.powi(e);
        assert_eq!(Tf32::round(1.0 + p(-10)), 1.0 + p(-10));
        assert_eq!(Tf32::round(1.0 + p(-11)), 1.0);
        assert_eq!(Tf32::round(1.0 + 3.0 * p(-11)), 1.0 + p(-9));
        assert_eq!(Tf32::round(-(1.0 + p(-11) + p(-30))), -(1.0 + p(-10)));
        assert_eq!(Tf32::round(3.0 * p(-137)), p(-135));
        assert_eq!(Tf32::round(p(-140)), 0.0);
        assert_eq!(Tf32::round(Tf32::MAX), Tf32::MAX);
        assert_eq!(Tf32::round(2.0 * Tf32::MAX), f64::INFINITY);
        let q = QuantizedField::<Tf32>::new(gaussian());
        let exact = gaussian();
        assert_eq!(QuantizedField::<Tf32>::new(q.field().clone()), q);
        for (a, b) in exact.data().iter().zip(q.field().data()) {
            for (x, y) in [(a.re, b.re), (a.im, b.im)] {
                assert_eq!(y as f32 as f64, y);
                assert!((x - y).abs() <= Tf32::UNIT_ROUNDOFF * x.abs());
            }
        }
        assert_ne!(q.field(), &exact);
        assert_eq!(Tf32::NAME, "tf32");
        assert_eq!(Fixed16::NAME, "fixed16");
    }

    /// Every write leaves representable values (rounding again changes nothing), within
    /// the format's bound of the exact f64 result; NaN passes through unrounded.
    #[test]
    fn writes_are_rounded_through_the_format() {
        let exact = gaussian();
        let q = QuantizedField::<Fixed16>::new(exact.clone());
        assert_ne!(q.field(), &exact);
        let again = QuantizedField::<Fixed16>::new(q.field().clone());
        assert_eq!(again, q);
        let layout = *exact.layout();
        for i in 0..layout.sites_per_slice() {
            let m = exact
                .site(0, i)
                .iter()
                .map(|z| z.re.abs().max(z.im.abs()))
                .fold(0.0, f64::max);
            let bound = FermionFormat::FIXED16.error_bound::<f64>(m);
            for (a, b) in exact.site(0, i).iter().zip(q.field().site(0, i)) {
                assert!((a.re - b.re).abs() <= bound && (a.im - b.im).abs() <= bound);
            }
        }
        let mut y = q.clone();
        y.axpy(Complex::new(0.3, 0.1), &q).unwrap();
        assert_eq!(QuantizedField::<Fixed16>::new(y.field().clone()), y);
        let mut nan = exact;
        nan.data_mut()[0] = Complex::new(f64::NAN, 0.0);
        let nan = QuantizedField::<Packed20>::new(nan);
        assert!(nan.norm_sqr().unwrap().is_nan());
    }
}
