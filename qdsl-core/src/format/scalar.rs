//! Scalar storage codecs shared by the fermion and the link formats: IEEE binary floating
//! point of four widths, and signed fixed-point integers of two widths.
//!
//! Every stored value is little-endian. The rounding of a real into a narrower float is
//! defined here in software (round to nearest, ties to even, with gradual underflow), so
//! that it is exact and identical on every machine: the `half` crate's own `f64 → f16`
//! conversion truncates the low 32 bits of the significand before rounding, and on x86
//! with F16C goes through `f32` (a double rounding), so neither is used for rounding —
//! `half` only packs values that are already representable.

use crate::Real;

/// An IEEE 754 binary floating-point storage width.
///
/// A value `v` is stored as `fl(v)`, the nearest representable value (ties to even),
/// including subnormals. For finite `v` whose rounding does not overflow,
///
/// ```text
/// |fl(v) − v| ≤ u·|v| + η,    u = 2^(−p) (unit roundoff),  η = 2^(e_min − p) (half the
///                              smallest subnormal)
/// ```
///
/// | width | p | e_min | e_max | largest finite | u |
/// |---|---|---|---|---|---|
/// | `F64` | 53 | −1022 | 1023 | 1.80e308 | 1.1e−16 |
/// | `F32` | 24 | −126 | 127 | 3.40e38 | 6.0e−8 |
/// | `F16` | 11 | −14 | 15 | 65504 | 4.9e−4 |
/// | `BF16` | 8 | −126 | 127 | 3.39e38 | 3.9e−3 |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatWidth {
    /// IEEE binary64.
    F64,
    /// IEEE binary32.
    F32,
    /// IEEE binary16 (`half::f16`).
    F16,
    /// bfloat16: binary32's exponent with an 8-bit significand (`half::bf16`).
    BF16,
}

impl FloatWidth {
    /// Bytes of one stored value.
    pub const fn bytes(self) -> usize {
        match self {
            Self::F64 => 8,
            Self::F32 => 4,
            Self::F16 | Self::BF16 => 2,
        }
    }

    /// Short name ("f64", "f32", "f16", "bf16").
    pub const fn name(self) -> &'static str {
        match self {
            Self::F64 => "f64",
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
        }
    }

    /// Significand precision p in bits, the implicit leading bit included.
    pub const fn precision(self) -> i32 {
        match self {
            Self::F64 => 53,
            Self::F32 => 24,
            Self::F16 => 11,
            Self::BF16 => 8,
        }
    }

    /// Exponent of the smallest normal number, e_min (smallest normal = 2^e_min).
    pub const fn min_exponent(self) -> i32 {
        match self {
            Self::F64 => -1022,
            Self::F32 | Self::BF16 => -126,
            Self::F16 => -14,
        }
    }

    /// Exponent of the largest finite number, e_max.
    pub const fn max_exponent(self) -> i32 {
        match self {
            Self::F64 => 1023,
            Self::F32 | Self::BF16 => 127,
            Self::F16 => 15,
        }
    }

    /// Unit roundoff u = 2^(−p): the largest relative rounding error of a normal value.
    pub fn unit_roundoff(self) -> f64 {
        pow2(-self.precision())
    }

    /// Half the smallest subnormal, η = 2^(e_min − p): the largest absolute rounding error
    /// in the subnormal range (0 for `F64`, whose inputs are stored exactly).
    pub fn underflow_error(self) -> f64 {
        match self {
            Self::F64 => 0.0,
            _ => pow2(self.min_exponent() - self.precision()),
        }
    }

    /// Largest finite value, (2 − 2^(1−p))·2^e_max.
    pub fn max_finite(self) -> f64 {
        (2.0 - pow2(1 - self.precision())) * pow2(self.max_exponent())
    }

    /// Bound on |fl(x) − x| for finite |x| ≤ `abs` whose rounding does not overflow:
    /// u·abs + η, and at most u/2 when abs ≤ 1 (the spacing below 1 is at most 2u, and 1
    /// itself is exact). 0 for `F64`, which stores f64 values exactly.
    pub fn rounding_bound(self, abs: f64) -> f64 {
        if self == Self::F64 || abs == 0.0 {
            return 0.0;
        }
        let u = self.unit_roundoff();
        let general = u * abs + self.underflow_error();
        if abs <= 1.0 {
            general.min(u / 2.0)
        } else {
            general
        }
    }

    /// The width of the compute type `T` (`F32` or `F64`).
    pub fn of<T: Real>() -> Self {
        if T::BYTES == 4 {
            Self::F32
        } else {
            Self::F64
        }
    }

    /// True if every value of `T` is stored exactly (the width is at least `T`'s).
    pub fn holds<T: Real>(self) -> bool {
        self.bytes() >= T::BYTES
    }

    /// `fl(v)`: `v` rounded to this width, to nearest with ties to even, with gradual
    /// underflow; ±∞ when the rounded magnitude exceeds [`Self::max_finite`]. NaN, ±∞ and
    /// ±0 are returned unchanged, and the sign of a value that underflows to zero is kept.
    ///
    /// With ulp(v) = 2^(max(⌊log2|v|⌋, e_min) − p + 1), fl(v) = ulp · round_even(v / ulp);
    /// both scalings are by powers of two and exact in f64.
    pub fn round(self, v: f64) -> f64 {
        if self == Self::F64 || !v.is_finite() || v == 0.0 {
            return v;
        }
        let ulp_exp = floor_log2(v.abs()).max(self.min_exponent()) - self.precision() + 1;
        let r = scale_pow2(scale_pow2(v, -ulp_exp).round_ties_even(), ulp_exp);
        if r.abs() > self.max_finite() {
            f64::INFINITY.copysign(v)
        } else {
            r
        }
    }

    /// Writes `fl(v)` ([`Self::round`]) into `out` (`self.bytes()` long), little-endian.
    /// NaN is written as the width's canonical quiet NaN.
    pub(crate) fn write(self, v: f64, out: &mut [u8]) {
        let r = self.round(v);
        match self {
            Self::F64 => out.copy_from_slice(&r.to_le_bytes()),
            // `r` is representable in the target: these conversions are exact.
            Self::F32 => out.copy_from_slice(&(r as f32).to_le_bytes()),
            Self::F16 => out.copy_from_slice(&half::f16::from_f64(r).to_bits().to_le_bytes()),
            Self::BF16 => out.copy_from_slice(&half::bf16::from_f64(r).to_bits().to_le_bytes()),
        }
    }

    /// Reads one value (`self.bytes()` long, little-endian); exact.
    pub(crate) fn read(self, b: &[u8]) -> f64 {
        match self {
            Self::F64 => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            Self::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            Self::F16 => half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64(),
            Self::BF16 => half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64(),
        }
    }
}

/// A signed fixed-point integer width b ∈ {16, 8}, two's complement, little-endian.
///
/// Only the symmetric range −Q ≤ q ≤ Q with Q = 2^(b−1) − 1 is used: the most negative
/// integer −2^(b−1) is never written, and reading it is an error (corrupt data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FixedWidth {
    /// 16-bit integers, Q = 32767 (QUDA's "half" precision).
    Bits16,
    /// 8-bit integers, Q = 127 (QUDA's "quarter" precision).
    Bits8,
}

impl FixedWidth {
    /// Bytes of one stored integer.
    pub const fn bytes(self) -> usize {
        match self {
            Self::Bits16 => 2,
            Self::Bits8 => 1,
        }
    }

    /// Short name ("fixed16", "fixed8").
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bits16 => "fixed16",
            Self::Bits8 => "fixed8",
        }
    }

    /// Q = 2^(b−1) − 1, the largest stored integer.
    pub const fn max_int(self) -> i32 {
        match self {
            Self::Bits16 => i16::MAX as i32,
            Self::Bits8 => i8::MAX as i32,
        }
    }

    /// 1/Q rounded to nearest in `T`: the constant every decoder multiplies by.
    pub fn inv_max<T: Real>(self) -> T {
        T::one() / T::from_f64(self.max_int() as f64)
    }

    /// Writes `q` (|q| ≤ Q) little-endian.
    pub(crate) fn write(self, q: i32, out: &mut [u8]) {
        match self {
            Self::Bits16 => out.copy_from_slice(&(q as i16).to_le_bytes()),
            Self::Bits8 => out.copy_from_slice(&(q as i8).to_le_bytes()),
        }
    }

    /// Reads one integer; `None` for the unused value −2^(b−1).
    pub(crate) fn read(self, b: &[u8]) -> Option<i32> {
        let q = match self {
            Self::Bits16 => i16::from_le_bytes([b[0], b[1]]) as i32,
            Self::Bits8 => i8::from_le_bytes([b[0]]) as i32,
        };
        (q >= -self.max_int()).then_some(q)
    }
}

/// 2^k as an f64, exact for −1074 ≤ k ≤ 1023.
pub(crate) fn pow2(k: i32) -> f64 {
    scale_pow2(1.0, k)
}

/// x · 2^k, exact unless the result overflows or falls below the normal range of f64.
/// Done in steps of at most 2^±1000 so that every intermediate factor is representable.
pub(crate) fn scale_pow2(mut x: f64, mut k: i32) -> f64 {
    while k != 0 {
        let step = k.clamp(-1000, 1000);
        x *= f64::from_bits(((1023 + step) as u64) << 52);
        k -= step;
    }
    x
}

/// ⌊log2 a⌋ for a finite a > 0 (subnormals included), read from the bits.
pub(crate) fn floor_log2(a: f64) -> i32 {
    let biased = ((a.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first (exact).
        floor_log2(a * pow2(64)) - 64
    } else {
        biased - 1023
    }
}

/// The smallest f32 ≥ m, for finite m ≥ 0; `None` when that exceeds `f32::MAX`.
pub(crate) fn f32_round_up(m: f64) -> Option<f32> {
    let f = m as f32;
    let up = if (f as f64) < m {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f
    };
    up.is_finite().then_some(up)
}

/// Largest absolute rounding error of one operation in `T` in the subnormal range:
/// the smallest positive subnormal of `T` (a safe over-estimate of half of it).
pub(crate) fn subnormal_of<T: Real>() -> f64 {
    (T::min_positive_value() * T::epsilon()).to_f64()
}

/// Unit roundoff u = ε/2 of `T`.
pub(crate) fn unit_roundoff_of<T: Real>() -> f64 {
    T::epsilon().to_f64() / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_constants_match_the_ieee_tables() {
        assert_eq!(FloatWidth::F16.max_finite(), 65504.0);
        assert_eq!(FloatWidth::F32.max_finite(), f32::MAX as f64);
        assert_eq!(FloatWidth::F64.max_finite(), f64::MAX);
        assert_eq!(FloatWidth::BF16.max_finite(), half::bf16::MAX.to_f64());
        assert_eq!(
            FloatWidth::F16.unit_roundoff(),
            half::f16::EPSILON.to_f64() / 2.0
        );
        assert_eq!(
            FloatWidth::BF16.unit_roundoff(),
            half::bf16::EPSILON.to_f64() / 2.0
        );
        assert_eq!(FloatWidth::F32.unit_roundoff(), f32::EPSILON as f64 / 2.0);
        // η is half the smallest subnormal.
        assert_eq!(
            2.0 * FloatWidth::F16.underflow_error(),
            half::f16::from_bits(1).to_f64()
        );
        assert_eq!(
            2.0 * FloatWidth::F32.underflow_error(),
            f32::from_bits(1) as f64
        );
        assert_eq!(
            2.0 * FloatWidth::BF16.underflow_error(),
            half::bf16::from_bits(1).to_f64()
        );
        assert_eq!(FixedWidth::Bits16.max_int(), 32767);
        assert_eq!(FixedWidth::Bits8.max_int(), 127);
    }

    #[test]
    fn f32_rounding_agrees_with_the_hardware_cast() {
        // `as f32` is IEEE round-to-nearest-even; the software rounding must match it
        // everywhere, subnormals, ties and overflow included.
        let cases = [
            1.0 + f64::EPSILON,
            1.0 + 2f64.powi(-24),                     // exact tie → even (down)
            1.0 + 3.0 * 2f64.powi(-24),               // exact tie → even (up)
            1.0 + 2f64.powi(-24) + 2f64.powi(-50),    // just above the tie → up
            1e-40,                                    // f32 subnormal
            -1.5e-45,                                 // near the smallest subnormal
            7e-46,                                    // below half the smallest → 0
            f32::MAX as f64 * (1.0 + 2f64.powi(-25)), // just below the overflow tie
            3.0e38,
            -123.456e-12,
        ];
        for &v in &cases {
            assert_eq!(
                FloatWidth::F32.round(v).to_bits(),
                ((v as f32) as f64).to_bits(),
                "{v:e}"
            );
        }
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if v.is_finite() {
                assert_eq!(
                    FloatWidth::F32.round(v).to_bits(),
                    ((v as f32) as f64).to_bits(),
                    "{v:e}"
                );
            }
        }
    }

    #[test]
    fn f16_rounding_is_correct_where_a_double_rounding_is_not() {
        // 1 + 2^-11 + 2^-40 lies just above the midpoint of 1 and 1 + 2^-10: the correct
        // f16 is 1 + 2^-10. Rounding through f32 first gives the tie 1 + 2^-11 and then 1.
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(FloatWidth::F16.round(v), 1.0 + 2f64.powi(-10));
        // Exact ties go to even.
        assert_eq!(FloatWidth::F16.round(1.0 + 2f64.powi(-11)), 1.0);
        assert_eq!(
            FloatWidth::F16.round(1.0 + 3.0 * 2f64.powi(-11)),
            1.0 + 2f64.powi(-9)
        );
        // Overflow threshold: 65520 = 65504 + half an ulp is a tie and goes to ∞ (even).
        assert_eq!(FloatWidth::F16.round(65519.99), 65504.0);
        assert_eq!(FloatWidth::F16.round(65520.0), f64::INFINITY);
        assert_eq!(FloatWidth::F16.round(-65520.0), f64::NEG_INFINITY);
        // Subnormals: spacing 2^-24; 3·2^-26 rounds to 2^-24, 2^-26 to +0, −2^-26 to −0.
        assert_eq!(FloatWidth::F16.round(3.0 * 2f64.powi(-26)), 2f64.powi(-24));
        assert_eq!(
            FloatWidth::F16.round(2f64.powi(-26)).to_bits(),
            0.0f64.to_bits()
        );
        assert_eq!(
            FloatWidth::F16.round(-(2f64.powi(-26))).to_bits(),
            (-0.0f64).to_bits()
        );
        // bf16: 8-bit significand.
        assert_eq!(
            FloatWidth::BF16.round(1.0 + 2f64.powi(-8) + 2f64.powi(-30)),
            1.0 + 2f64.powi(-7)
        );
        assert_eq!(FloatWidth::BF16.round(1.0 + 2f64.powi(-8)), 1.0);
    }

    #[test]
    fn write_then_read_gives_the_rounded_value_in_the_ieee_bit_pattern() {
        for w in [
            FloatWidth::F64,
            FloatWidth::F32,
            FloatWidth::F16,
            FloatWidth::BF16,
        ] {
            let mut b = vec![0u8; w.bytes()];
            for v in [0.0, -0.0, 1.0, -2.5, 1e-6, 1.2345678, 1e-300, f64::INFINITY] {
                w.write(v, &mut b);
                assert_eq!(
                    w.read(&b).to_bits(),
                    w.round(v).to_bits(),
                    "{} {v:e}",
                    w.name()
                );
            }
            w.write(f64::NAN, &mut b);
            assert!(w.read(&b).is_nan());
        }
        // Known bit patterns: 1.0 in f16 is 0x3c00, −2 in bf16 is 0xc000.
        let mut b = [0u8; 2];
        FloatWidth::F16.write(1.0, &mut b);
        assert_eq!(b, [0x00, 0x3c]);
        FloatWidth::BF16.write(-2.0, &mut b);
        assert_eq!(b, [0x00, 0xc0]);
    }

    #[test]
    fn fixed_integers_are_little_endian_twos_complement_and_reject_the_minimum() {
        let mut b = [0u8; 2];
        FixedWidth::Bits16.write(-2, &mut b);
        assert_eq!(b, [0xfe, 0xff]);
        assert_eq!(FixedWidth::Bits16.read(&b), Some(-2));
        assert_eq!(FixedWidth::Bits16.read(&[0x00, 0x80]), None);
        assert_eq!(FixedWidth::Bits8.read(&[0x81]), Some(-127));
        assert_eq!(FixedWidth::Bits8.read(&[0x80]), None);
    }

    #[test]
    fn helpers_are_exact() {
        assert_eq!(floor_log2(1.0), 0);
        assert_eq!(floor_log2(0.75), -1);
        assert_eq!(floor_log2(f64::from_bits(1)), -1074);
        assert_eq!(floor_log2(f64::MAX), 1023);
        assert_eq!(pow2(-1074), f64::from_bits(1));
        assert_eq!(scale_pow2(3.0, -1075), f64::from_bits(2)); // 3·2^-1075 → ties to even 2·2^-1075
        assert_eq!(f32_round_up(1.0), Some(1.0));
        assert_eq!(f32_round_up(1.0 + 1e-12), Some(1.0 + f32::EPSILON));
        assert_eq!(f32_round_up(0.0), Some(0.0));
        assert_eq!(f32_round_up(1e-50), Some(f32::from_bits(1)));
        assert_eq!(f32_round_up(f32::MAX as f64 * (1.0 + 1e-12)), None);
        assert!(!FloatWidth::F16.holds::<f32>());
        assert!(FloatWidth::F32.holds::<f32>() && !FloatWidth::F32.holds::<f64>());
        assert!(FloatWidth::F64.holds::<f32>() && FloatWidth::F64.holds::<f64>());
    }
}
