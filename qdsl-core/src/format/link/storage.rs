//! How each stored real of a link is held: a float width, or a fixed-point integer with no
//! norm (link elements lie in [−1, 1]).

use crate::format::scalar::{unit_roundoff_of, FixedWidth, FloatWidth};
use crate::format::FormatError;
use crate::Real;
use std::fmt;

/// Storage of the reals of a gauge link (each stored real is little-endian).
///
/// * `Float(w)`: the real rounded to nearest even in width w ([`FloatWidth::round`]).
/// * `Fixed(b)`: q = round_half_even(fl(v·Q)), Q = 2^(b−1) − 1, accepted for
///   |v·Q| < Q + ½ (so |q| ≤ Q; elements of unitary matrices, |v| ≤ 1, and the recon-8
///   angles θ/π ∈ [−1, 1] always fit); decoded in T as v = fl(T(q) · fl(1/Q)). No norm:
///   the scale is fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkStorage {
    /// IEEE floating point.
    Float(FloatWidth),
    /// Fixed point with the fixed scale 1/Q.
    Fixed(FixedWidth),
}

impl LinkStorage {
    /// IEEE binary64.
    pub const F64: Self = Self::Float(FloatWidth::F64);
    /// IEEE binary32.
    pub const F32: Self = Self::Float(FloatWidth::F32);
    /// IEEE binary16.
    pub const F16: Self = Self::Float(FloatWidth::F16);
    /// bfloat16.
    pub const BF16: Self = Self::Float(FloatWidth::BF16);
    /// 16-bit fixed point, step 1/32767.
    pub const FIXED16: Self = Self::Fixed(FixedWidth::Bits16);
    /// 8-bit fixed point, step 1/127.
    pub const FIXED8: Self = Self::Fixed(FixedWidth::Bits8);

    /// Every link storage.
    pub const ALL: [Self; 6] = [
        Self::F64,
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::FIXED16,
        Self::FIXED8,
    ];

    /// Short name ("f64", "f32", "f16", "bf16", "fixed16", "fixed8").
    pub const fn name(self) -> &'static str {
        match self {
            Self::Float(w) => w.name(),
            Self::Fixed(w) => w.name(),
        }
    }

    /// The storage with this [`Self::name`], if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Bytes of one stored real.
    pub const fn bytes_per_real(self) -> usize {
        match self {
            Self::Float(w) => w.bytes(),
            Self::Fixed(w) => w.bytes(),
        }
    }

    /// Bound on |decoded − v| for one stored real with |v| ≤ 1, encoding from f64 and
    /// decoding into `T`. `exact_in_t` says that v is a value of `T` (a link element given
    /// in `T`), which a width holding `T` stores exactly; the recon-8 angles are not.
    ///
    /// * float: u_w/2 (0 for f64) for the storage rounding — below 1 the spacing is at
    ///   most 2u_w, so |v| ≤ 1 rounds with an error ≤ u_w/2 — plus u_T/2 when the stored
    ///   value must then be rounded into a narrower `T`; 0 when `exact_in_t` and the
    ///   width holds `T`;
    /// * fixed: 1/(2Q) + 2^−53 (the f64 product v·Q) + 2.0001·u_T (the two roundings of
    ///   the decode).
    pub fn element_bound<T: Real>(self, exact_in_t: bool) -> f64 {
        let u_t = unit_roundoff_of::<T>();
        match self {
            Self::Float(w) if exact_in_t && w.holds::<T>() => 0.0,
            Self::Float(w) => {
                let narrow = if w.bytes() > T::BYTES { u_t / 2.0 } else { 0.0 };
                w.rounding_bound(1.0) + narrow
            }
            Self::Fixed(w) => 0.5 / w.max_int() as f64 + f64::EPSILON / 2.0 + 2.0001 * u_t,
        }
    }

    /// Bound on |decoded − x| for one stored real x of a link given in `T`, |x| ≤ `abs` ≤ 1:
    /// 0 if the width holds `T`, the float rounding [`FloatWidth::rounding_bound`]
    /// (relative: small elements keep their digits) otherwise, and the constant
    /// fixed-point bound of [`Self::element_bound`].
    pub fn real_bound<T: Real>(self, abs: f64) -> f64 {
        match self {
            Self::Float(w) if w.holds::<T>() => 0.0,
            Self::Float(w) => w.rounding_bound(abs),
            Self::Fixed(_) => self.element_bound::<T>(true),
        }
    }

    /// Writes one real; a fixed-point value outside |v·Q| < Q + ½ is
    /// [`FormatError::OutOfRange`] (`component` and `format` name it).
    pub(super) fn write(
        self,
        v: f64,
        out: &mut [u8],
        component: usize,
        format: &dyn Fn() -> String,
    ) -> Result<(), FormatError> {
        match self {
            Self::Float(w) => w.write(v, out),
            Self::Fixed(w) => {
                let q_max = w.max_int() as f64;
                let x = v * q_max;
                if x.abs().partial_cmp(&(q_max + 0.5)) != Some(std::cmp::Ordering::Less) {
                    return Err(FormatError::OutOfRange {
                        format: format(),
                        component,
                        value: v,
                        limit: (q_max + 0.5) / q_max,
                    });
                }
                w.write(x.round_ties_even() as i32, out);
            }
        }
        Ok(())
    }

    /// Reads one real into `T`; the fixed-point integer −2^(b−1) is [`FormatError::Corrupt`].
    pub(super) fn read<T: Real>(
        self,
        bytes: &[u8],
        component: usize,
        format: &dyn Fn() -> String,
    ) -> Result<T, FormatError> {
        match self {
            Self::Float(w) => Ok(T::from_f64(w.read(bytes))),
            Self::Fixed(w) => {
                let q = w.read(bytes).ok_or_else(|| FormatError::Corrupt {
                    format: format(),
                    detail: format!(
                        "stored real {component} is −2^{}, expected |q| ≤ {}",
                        8 * w.bytes() - 1,
                        w.max_int()
                    ),
                })?;
                Ok(T::from_f64(q as f64) * w.inv_max::<T>())
            }
        }
    }
}

impl fmt::Display for LinkStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
