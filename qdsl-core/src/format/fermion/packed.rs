//! Bit-packed fermion storage: groups of 6 reals as b-bit signed integers (b ∈ {20, 30})
//! with one shared power-of-two scale (after Clark et al., "Maximizing the bang per bit").
//!
//! # Scale and integers (per group of 6 reals; Q = 2^(b−1) − 1)
//!
//! m = max |v_i| over the group. If m = 0 the group stores e = 0 and q_i = 0. Otherwise
//! the scale is s = 2^k with
//!
//! ```text
//! k = max(−126, smallest integer with Q·2^k ≥ m)        (an error if k > 127)
//! q_i = round_half_even(v_i / s)                          (|q_i| ≤ Q, never clamped)
//! e = k + 127 ∈ [1, 254]                                  (8 bits)
//! ```
//!
//! so 2^(k+b−1) is a power of two ≥ m (the group's "shared exponent" in the usual sense),
//! the division by s is exact, and s is the f32 whose biased exponent field is e and whose
//! significand is zero (e = 0 gives +0.0, so a zero group decodes to zeros with no special
//! case). Decoding in T is v_i = fl(T(q_i) · T(s)): the product by a power of two is
//! exact, and so is T(q_i) for integers encoded from the same T.
//!
//! # Word layout
//!
//! `packed20`, 16 bytes: the little-endian 128-bit integer
//! W = Σ_{i<6} (q_i mod 2^20)·2^(20i) + e·2^120, i.e. real i in bits [20i, 20i+20) (two's
//! complement), the exponent in bits [120, 128). Read as four little-endian u32 words,
//! real 1 straddles words 0 and 1 (bits 20–31 of word 0 are its low 12 bits), real 3
//! words 1 and 2, real 4 words 2 and 3; a funnel shift extracts them.
//!
//! `packed30`, 24 bytes: six little-endian u32 words; word i holds real i in bits [0, 30)
//! (two's complement) and, for i < 4, bits [2i, 2i+2) of e in its bits [30, 32); the top
//! two bits of words 4 and 5 are zero.
//!
//! A site of N reals is ⌈N/6⌉ consecutive groups of consecutive reals; the last group is
//! padded with zeros (stored as q = 0).

use crate::format::scalar::{floor_log2, pow2, scale_pow2};
use crate::format::FormatError;
use crate::Real;

/// Reals per packed group.
pub const GROUP_REALS: usize = 6;

/// Width of the packed integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PackedWidth {
    /// 20-bit integers, 6 per 128 bits (120 bits of integers + 8-bit exponent).
    Bits20,
    /// 30-bit integers, 6 per 192 bits (180 bits + 8-bit exponent + 4 zero bits).
    Bits30,
}

/// Largest scale exponent k (e = 254).
const MAX_K: i32 = 127;
/// Smallest scale exponent k (e = 1, s = the smallest normal f32).
const MIN_K: i32 = -126;
/// Bias of the stored exponent, e = k + 127 (the f32 exponent bias).
const BIAS: i32 = 127;

impl PackedWidth {
    /// Bits b of one integer (20 or 30).
    pub const fn bits(self) -> u32 {
        match self {
            Self::Bits20 => 20,
            Self::Bits30 => 30,
        }
    }

    /// Bytes of one group of 6 reals (16 or 24).
    pub const fn group_bytes(self) -> usize {
        match self {
            Self::Bits20 => 16,
            Self::Bits30 => 24,
        }
    }

    /// Short name ("packed20", "packed30").
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bits20 => "packed20",
            Self::Bits30 => "packed30",
        }
    }

    /// Q = 2^(b−1) − 1, the largest stored integer (524287 or 536870911).
    pub const fn max_int(self) -> i64 {
        (1i64 << (self.bits() - 1)) - 1
    }

    /// Largest group max |v| the format accepts: Q·2^127 (≈ 8.9e43 for 20 bits, 9.1e46 for
    /// 30 bits). Decoding into f32 further needs the rounded values to stay finite.
    pub fn max_accepted(self) -> f64 {
        self.max_int() as f64 * pow2(MAX_K)
    }

    /// The scale exponent k for a group of max `m` > 0 (see the module docs); `None` if
    /// k would exceed 127.
    pub fn scale_exponent(self, m: f64) -> Option<i32> {
        let q = self.max_int() as f64;
        if m <= q * pow2(MIN_K) {
            return Some(MIN_K);
        }
        // Q ∈ [2^(b−2), 2^(b−1)): Q·2^(e_m−b+1) < 2^e_m ≤ m ≤ … < Q·2^(e_m−b+3).
        let mut k = floor_log2(m) - self.bits() as i32 + 2;
        if q * pow2(k) < m {
            k += 1;
        }
        (k <= MAX_K).then_some(k)
    }

    /// Bit mask of one integer.
    const fn mask(self) -> u64 {
        (1u64 << self.bits()) - 1
    }

    /// Two's complement field → signed integer.
    fn sign_extend(self, field: u64) -> i64 {
        let shift = 64 - self.bits();
        ((field << shift) as i64) >> shift
    }

    /// Writes the 6 integers and the exponent in this width's word layout.
    fn pack(self, q: &[i64; GROUP_REALS], e: u32, out: &mut [u8]) {
        match self {
            Self::Bits20 => {
                let mut word = (e as u128) << 120;
                for (i, &qi) in q.iter().enumerate() {
                    word |= ((qi as u64 & self.mask()) as u128) << (20 * i);
                }
                out.copy_from_slice(&word.to_le_bytes());
            }
            Self::Bits30 => {
                for (i, (&qi, chunk)) in q.iter().zip(out.chunks_exact_mut(4)).enumerate() {
                    let exp_bits = if i < 4 { (e >> (2 * i)) & 3 } else { 0 };
                    let word = (qi as u64 & self.mask()) as u32 | (exp_bits << 30);
                    chunk.copy_from_slice(&word.to_le_bytes());
                }
            }
        }
    }

    /// Reads the 6 integers and the exponent; `Err` describes a non-zero padding field.
    fn unpack(self, bytes: &[u8]) -> Result<([i64; GROUP_REALS], u32), String> {
        let mut q = [0i64; GROUP_REALS];
        match self {
            Self::Bits20 => {
                let mut le = [0u8; 16];
                le.copy_from_slice(bytes);
                let word = u128::from_le_bytes(le);
                for (i, qi) in q.iter_mut().enumerate() {
                    *qi = self.sign_extend((word >> (20 * i)) as u64 & self.mask());
                }
                Ok((q, (word >> 120) as u32))
            }
            Self::Bits30 => {
                let mut e = 0u32;
                for (i, (qi, chunk)) in q.iter_mut().zip(bytes.chunks_exact(4)).enumerate() {
                    let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    *qi = self.sign_extend(word as u64 & self.mask());
                    let top = word >> 30;
                    if i < 4 {
                        e |= top << (2 * i);
                    } else if top != 0 {
                        return Err(format!("top bits of word {i} are {top}, expected 0"));
                    }
                }
                Ok((q, e))
            }
        }
    }
}

/// The decoded value fl(T(q) · T(2^k)).
fn decode_value<T: Real>(q: i64, scale: T) -> T {
    T::from_f64(q as f64) * scale
}

/// T(s) for the stored exponent e: 0 for e = 0, else 2^(e−127) (a normal f32, exact in T).
fn scale_of<T: Real>(e: u32) -> T {
    if e == 0 {
        T::zero()
    } else {
        T::from_f64(pow2(e as i32 - BIAS))
    }
}

/// Encodes a site of any length as ⌈N/6⌉ groups (see the module docs). NaN or ±∞ is a
/// [`FormatError::NonFinite`]; a group max above [`PackedWidth::max_accepted`], or a value
/// whose decoded form overflows `T`, is a [`FormatError::Overflow`].
pub(super) fn encode<T: Real>(
    w: PackedWidth,
    site: &[T],
    out: &mut [u8],
) -> Result<(), FormatError> {
    for (g, (group, chunk)) in site
        .chunks(GROUP_REALS)
        .zip(out.chunks_exact_mut(w.group_bytes()))
        .enumerate()
    {
        let base = g * GROUP_REALS;
        let mut x = [0.0f64; GROUP_REALS];
        let mut max = 0.0f64;
        let mut arg_max = base;
        for (i, v) in group.iter().enumerate() {
            x[i] = Real::to_f64(*v);
            if !x[i].is_finite() {
                return Err(FormatError::NonFinite {
                    format: w.name().to_string(),
                    component: base + i,
                    value: x[i],
                });
            }
            if x[i].abs() > max {
                max = x[i].abs();
                arg_max = base + i;
            }
        }
        let overflow = |component: usize, value: f64| FormatError::Overflow {
            format: w.name().to_string(),
            component,
            value,
            max: w.max_accepted(),
        };
        let mut q = [0i64; GROUP_REALS];
        let mut e = 0u32;
        if max > 0.0 {
            let k = w
                .scale_exponent(max)
                .ok_or_else(|| overflow(arg_max, max))?;
            e = (k + BIAS) as u32;
            let scale = scale_of::<T>(e);
            for (i, (qi, &xi)) in q.iter_mut().zip(x.iter()).enumerate() {
                // Exact scaling by 2^−k; |x_i|/2^k ≤ Q, so |q_i| ≤ Q.
                *qi = scale_pow2(xi, -k).round_ties_even() as i64;
                if !decode_value(*qi, scale).is_finite() {
                    return Err(overflow(base + i, xi));
                }
            }
        }
        w.pack(&q, e, chunk);
    }
    Ok(())
}

/// Decodes a site; bytes no encoder writes are [`FormatError::Corrupt`]: e = 255, the
/// integer −2^(b−1), non-zero integers with e = 0, non-zero padding bits or padding reals.
pub(super) fn decode<T: Real>(
    w: PackedWidth,
    bytes: &[u8],
    site: &mut [T],
) -> Result<(), FormatError> {
    let corrupt = |detail: String| FormatError::Corrupt {
        format: w.name().to_string(),
        detail,
    };
    for (g, (group, chunk)) in site
        .chunks_mut(GROUP_REALS)
        .zip(bytes.chunks_exact(w.group_bytes()))
        .enumerate()
    {
        let (q, e) = w
            .unpack(chunk)
            .map_err(|d| corrupt(format!("group {g}: {d}")))?;
        if e > (MAX_K + BIAS) as u32 {
            return Err(corrupt(format!(
                "group {g}: exponent field is {e}, expected ≤ 254"
            )));
        }
        for (i, &qi) in q.iter().enumerate() {
            let component = g * GROUP_REALS + i;
            if qi < -w.max_int() {
                return Err(corrupt(format!(
                    "component {component}: integer is −2^{}, expected |q| ≤ {}",
                    w.bits() - 1,
                    w.max_int()
                )));
            }
            if qi != 0 && (e == 0 || i >= group.len()) {
                let why = if e == 0 {
                    "exponent 0 (zero group)"
                } else {
                    "a padding slot"
                };
                return Err(corrupt(format!(
                    "component {component}: integer {qi} in {why}, expected 0"
                )));
            }
        }
        let scale = scale_of::<T>(e);
        for (v, &qi) in group.iter_mut().zip(q.iter()) {
            *v = decode_value(qi, scale);
        }
    }
    Ok(())
}

/// Round-trip bound for a group (or site) of max |v| = `max_abs`, per component, absolute:
///
/// ```text
/// |v̂_i − v_i| ≤ s/2,     s = 2^k(max_abs)
/// ```
///
/// Since Q·2^(k−1) < max_abs, s/2 < max_abs/Q: ε = 1/Q ≈ 1.9e−6 (20 bits) and 1.9e−9
/// (30 bits) relative to the group's max, for max_abs ≥ Q·2^−126 (≈ 6.2e−33 and 6.3e−30);
/// below, k = −126 is forced and the error is at most 2^−127 absolute. The decode adds
/// nothing when encoding from and decoding into the same `T`: T(q) is exact, because
/// either |q| ≤ 2^24 or q = v/s is itself a scaled value of `T` (a 30-bit group encoded
/// from f64 and decoded into f32 is, like any f64 data read into f32, rounded to f32).
/// s(m) grows with m, so the bound for a site's max also bounds every group of the site.
/// `f64::INFINITY` above [`PackedWidth::max_accepted`].
pub(super) fn error_bound(w: PackedWidth, max_abs: f64) -> f64 {
    match w.scale_exponent(max_abs) {
        _ if max_abs == 0.0 => 0.0,
        Some(k) => pow2(k) / 2.0,
        None => f64::INFINITY,
    }
}
