//! Fermion (colour-spinor, colour-vector) storage: how the N reals of one site are stored.
//!
//! A site has N reals in the host field's order (24 for a Wilson spinor: spin-major,
//! colour, re/im; 6 for a staggered colour vector; any N is accepted). Each format turns
//! them into a fixed number of bytes ([`FermionFormat::bytes_per_site`]) and back, with a
//! stated per-component bound on |decoded − original| ([`FermionFormat::error_bound`]).
//! These per-site byte records are the bit-exact definitions the generated kernels decode;
//! a device layout may place the pieces of a record (e.g. the norm) in separate arrays,
//! but each piece keeps the encoding defined here.
//!
//! | format | per site of N reals | round-trip bound per component (m = site max \|v\|) |
//! |---|---|---|
//! | `f64`, `f32`, `f16`, `bf16` | N·w bytes | u·\|v_i\| + η (0 if the width holds T) |
//! | `fixed16`, `fixed8` | 4 + N·b/8 bytes | ≈ m/(2Q), Q = 32767 or 127 |
//! | `packed20`, `packed30` | ⌈N/6⌉·16 or ·24 bytes | < m/Q per group, Q = 2^19−1 or 2^29−1 |
//!
//! Non-finite input: the float formats store NaN and ±∞ as such (they are casts); the
//! fixed-point and packed formats reject them with [`FormatError::NonFinite`] naming the
//! component. Finite values too large for a format are [`FormatError::Overflow`].
//! On any error the contents of the output buffer are unspecified.

mod fixed;
mod float;
mod packed;
#[cfg(test)]
mod tests;

pub use packed::{PackedWidth, GROUP_REALS};

use crate::format::scalar::{FixedWidth, FloatWidth};
use crate::format::FormatError;
use crate::Real;
use std::fmt;

/// How the reals of one fermion site are stored.
///
/// * `Float(w)` — element-wise IEEE cast (`f64`, `f32`, `f16`, `bf16`), round to nearest
///   even with gradual underflow. Bound per component: |v̂_i − v_i| ≤ u·|v_i| + η
///   (u = 2^−53, 2^−24, 2^−11, 2^−8; η = half the width's smallest subnormal); exactly 0
///   when the width holds every value of T (f64 always, f32 for T = f32). f16 holds
///   |v| < 65520 (larger finite values are an overflow error), values below 2^−25 flush to
///   ±0, and between those gradual underflow keeps an absolute error ≤ 2^−25.
/// * `Fixed(b)` — b-bit integers (16 or 8) with one f32 norm per site (QUDA's convention):
///   norm = max_i |v_i| rounded up to f32, q_i = round(v_i/norm · Q), Q = 2^(b−1) − 1,
///   decoded v_i = q_i · norm/Q. Bound: norm/(2Q) plus rounding terms (see
///   [`FermionFormat::error_bound`]), i.e. ≈ 1.5e−5·m (16 bits) and 3.9e−3·m (8 bits).
/// * `Packed(b)` — groups of 6 reals as b-bit integers (20 or 30) sharing a power-of-two
///   scale 2^k stored as an 8-bit exponent, 16 or 24 bytes per group. Bound: 2^k/2 <
///   m_group/Q, i.e. ε < 1.9e−6 (20 bits) and 1.9e−9 (30 bits) relative to the group's
///   max (absolute 2^−127 for groups below Q·2^−126); groups up to Q·2^127 are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FermionFormat {
    /// Element-wise IEEE floating point.
    Float(FloatWidth),
    /// Fixed point with one f32 norm per site.
    Fixed(FixedWidth),
    /// Bit-packed groups of 6 with a shared exponent.
    Packed(PackedWidth),
}

impl FermionFormat {
    /// IEEE binary64, 8 bytes per real.
    pub const F64: Self = Self::Float(FloatWidth::F64);
    /// IEEE binary32, 4 bytes per real.
    pub const F32: Self = Self::Float(FloatWidth::F32);
    /// IEEE binary16, 2 bytes per real.
    pub const F16: Self = Self::Float(FloatWidth::F16);
    /// bfloat16, 2 bytes per real.
    pub const BF16: Self = Self::Float(FloatWidth::BF16);
    /// 16-bit fixed point + f32 norm per site.
    pub const FIXED16: Self = Self::Fixed(FixedWidth::Bits16);
    /// 8-bit fixed point + f32 norm per site.
    pub const FIXED8: Self = Self::Fixed(FixedWidth::Bits8);
    /// 20-bit integers, 6 per 128 bits with a shared exponent.
    pub const PACKED20: Self = Self::Packed(PackedWidth::Bits20);
    /// 30-bit integers, 6 per 192 bits with a shared exponent.
    pub const PACKED30: Self = Self::Packed(PackedWidth::Bits30);

    /// Every fermion format, widest first within each family.
    pub const ALL: [Self; 8] = [
        Self::F64,
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::FIXED16,
        Self::FIXED8,
        Self::PACKED20,
        Self::PACKED30,
    ];

    /// Short name: "f64", "f32", "f16", "bf16", "fixed16", "fixed8", "packed20", "packed30".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Float(w) => w.name(),
            Self::Fixed(w) => w.name(),
            Self::Packed(w) => w.name(),
        }
    }

    /// The format with this [`Self::name`], if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Nominal bits of one stored real (64, 32, 16, 16, 16, 8, 20, 30), not counting the
    /// per-site norm or the shared exponent.
    pub const fn bits_per_real(self) -> u32 {
        match self {
            Self::Float(w) => 8 * w.bytes() as u32,
            Self::Fixed(w) => 8 * w.bytes() as u32,
            Self::Packed(w) => w.bits(),
        }
    }

    /// Bytes of one site of `n_reals` reals, norm and padding included:
    /// N·w (float), 4 + N·b/8 (fixed), ⌈N/6⌉·16 or ⌈N/6⌉·24 (packed).
    pub const fn bytes_per_site(self, n_reals: usize) -> usize {
        match self {
            Self::Float(w) => n_reals * w.bytes(),
            Self::Fixed(w) => fixed::NORM_BYTES + n_reals * w.bytes(),
            Self::Packed(w) => n_reals.div_ceil(GROUP_REALS) * w.group_bytes(),
        }
    }

    /// Encodes the reals of one site into `out`, which must be exactly
    /// [`Self::bytes_per_site`]`(site.len())` bytes.
    ///
    /// Errors: [`FormatError::BufferSize`] for a wrong `out` length;
    /// [`FormatError::NonFinite`] for NaN/±∞ in fixed-point and packed formats;
    /// [`FormatError::Overflow`] for finite values beyond the format's range.
    pub fn encode<T: Real>(self, site: &[T], out: &mut [u8]) -> Result<(), FormatError> {
        self.check_len(site.len(), out.len())?;
        match self {
            Self::Float(w) => float::encode(w, site, out),
            Self::Fixed(w) => fixed::encode(w, site, out),
            Self::Packed(w) => packed::encode(w, site, out),
        }
    }

    /// Decodes one site from `bytes` ([`Self::bytes_per_site`]`(site.len())` bytes) into
    /// `site`, computing in `T`.
    ///
    /// Errors: [`FormatError::BufferSize`]; [`FormatError::Corrupt`] for bytes no encoder
    /// writes (a negative norm, the integer −2^(b−1), a bad exponent or padding).
    pub fn decode<T: Real>(self, bytes: &[u8], site: &mut [T]) -> Result<(), FormatError> {
        self.check_len(site.len(), bytes.len())?;
        match self {
            Self::Float(w) => {
                float::decode(w, bytes, site);
                Ok(())
            }
            Self::Fixed(w) => fixed::decode(w, bytes, site),
            Self::Packed(w) => packed::decode(w, bytes, site),
        }
    }

    /// Bound on |decode(encode(v))_i − v_i| for every component of a site whose max |v_i|
    /// is `max_abs`, when encoding from and decoding into `T`:
    ///
    /// * float: u·max_abs + η (at most u/2 when max_abs ≤ 1), or 0 when the width holds
    ///   T or max_abs = 0. Because the error of a float
    ///   format depends only on the component itself, `error_bound(|v_i|)` also bounds
    ///   component i alone;
    /// * fixed: norm/(2Q) + (2.0001·2^−53 + 3.0001·u_T)·norm + (Q+1)·σ_T, norm = max_abs
    ///   rounded up to f32, σ_T the smallest subnormal of T;
    /// * packed: 2^k/2, 2^k the scale of a group of max `max_abs`; the bound computed
    ///   from a group's own max is tighter and also holds.
    ///
    /// `f64::INFINITY` for a `max_abs` the format rejects.
    pub fn error_bound<T: Real>(self, max_abs: f64) -> f64 {
        match self {
            Self::Float(w) => float::error_bound::<T>(w, max_abs),
            Self::Fixed(w) => fixed::error_bound::<T>(w, max_abs),
            Self::Packed(w) => packed::error_bound(w, max_abs),
        }
    }

    fn check_len(self, reals: usize, found: usize) -> Result<(), FormatError> {
        let expected = self.bytes_per_site(reals);
        if found == expected {
            Ok(())
        } else {
            Err(FormatError::BufferSize {
                format: self.name().to_string(),
                reals,
                expected,
                found,
            })
        }
    }
}

impl fmt::Display for FermionFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
