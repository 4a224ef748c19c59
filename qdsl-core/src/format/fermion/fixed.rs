//! Fixed-point fermion storage with one f32 norm per site (QUDA's half and quarter).
//!
//! Layout of a site of N reals, b-bit integers (b ∈ {16, 8}), Q = 2^(b−1) − 1:
//!
//! ```text
//! bytes [0, 4)              norm: f32, little-endian
//! bytes [4 + i·b/8, …)      q_i: signed b-bit integer, little-endian, i = 0 … N−1
//! ```
//!
//! Encoding (host, f64 arithmetic, bit-exact):
//! m = max_i |v_i|; norm = the smallest f32 ≥ m; c = fl(Q / norm);
//! q_i = round_half_even(fl(v_i · c)), so |q_i| ≤ Q. An all-zero site stores norm = 0 and
//! q_i = 0 (no division).
//!
//! Decoding (in the compute type T, two roundings, no fused multiply-add):
//! s = fl(T(norm) · fl(1/Q)); v_i = fl(T(q_i) · s).

use crate::format::scalar::{f32_round_up, subnormal_of, unit_roundoff_of, FixedWidth};
use crate::format::FormatError;
use crate::Real;

/// Bytes of the norm at the start of each site.
pub(super) const NORM_BYTES: usize = 4;

/// Encodes a site (see the module docs). NaN or ±∞ in any component is a
/// [`FormatError::NonFinite`]; a site whose max exceeds `f32::MAX` (the norm's range), or
/// whose decoded value would overflow `T`, is a [`FormatError::Overflow`].
pub(super) fn encode<T: Real>(
    w: FixedWidth,
    site: &[T],
    out: &mut [u8],
) -> Result<(), FormatError> {
    let format = || w.name().to_string();
    let mut max = 0.0f64;
    let mut arg_max = 0;
    for (component, v) in site.iter().enumerate() {
        let x = Real::to_f64(*v);
        if !x.is_finite() {
            return Err(FormatError::NonFinite {
                format: format(),
                component,
                value: x,
            });
        }
        if x.abs() > max {
            max = x.abs();
            arg_max = component;
        }
    }
    let overflow = |component: usize, value: f64| FormatError::Overflow {
        format: format(),
        component,
        value,
        max: f32::MAX as f64,
    };
    let norm = f32_round_up(max).ok_or_else(|| overflow(arg_max, max))?;
    let (norm_bytes, ints) = out.split_at_mut(NORM_BYTES);
    norm_bytes.copy_from_slice(&norm.to_le_bytes());
    let q_max = w.max_int() as f64;
    let c = if norm > 0.0 { q_max / norm as f64 } else { 0.0 };
    let s = decode_scale::<T>(w, norm);
    for (component, (v, chunk)) in site
        .iter()
        .zip(ints.chunks_exact_mut(w.bytes()))
        .enumerate()
    {
        let x = Real::to_f64(*v);
        // |x·c| ≤ Q(1 + 2u) < Q + ½, so the rounded value is within ±Q; the clamp is inert.
        let q = (x * c).round_ties_even().clamp(-q_max, q_max) as i32;
        if !decode_value(q, s).is_finite() {
            return Err(overflow(component, x));
        }
        w.write(q, chunk);
    }
    Ok(())
}

/// Decodes a site; a negative or non-finite norm, or the integer −2^(b−1), is
/// [`FormatError::Corrupt`].
pub(super) fn decode<T: Real>(
    w: FixedWidth,
    bytes: &[u8],
    site: &mut [T],
) -> Result<(), FormatError> {
    let (norm_bytes, ints) = bytes.split_at(NORM_BYTES);
    let norm = f32::from_le_bytes([norm_bytes[0], norm_bytes[1], norm_bytes[2], norm_bytes[3]]);
    if !(norm.is_finite() && norm >= 0.0) {
        return Err(FormatError::Corrupt {
            format: w.name().to_string(),
            detail: format!("norm is {norm}, expected a finite value ≥ 0"),
        });
    }
    let s = decode_scale::<T>(w, norm);
    for (component, (v, chunk)) in site
        .iter_mut()
        .zip(ints.chunks_exact(w.bytes()))
        .enumerate()
    {
        let q = w.read(chunk).ok_or_else(|| FormatError::Corrupt {
            format: w.name().to_string(),
            detail: format!(
                "integer of component {component} is −2^{}, expected |q| ≤ {}",
                8 * w.bytes() - 1,
                w.max_int()
            ),
        })?;
        *v = decode_value(q, s);
    }
    Ok(())
}

/// s = fl(T(norm) · fl(1/Q)), the per-site decode scale.
fn decode_scale<T: Real>(w: FixedWidth, norm: f32) -> T {
    T::from_f64(norm as f64) * w.inv_max::<T>()
}

/// v = fl(T(q) · s).
fn decode_value<T: Real>(q: i32, s: T) -> T {
    T::from_f64(q as f64) * s
}

/// Round-trip bound for a site whose max |v_i| is `max_abs`, per component, absolute:
///
/// ```text
/// |v̂_i − v_i| ≤ norm/(2Q) + (2.0001·2^−53 + 3.0001·u_T)·norm + (Q + 1)·σ_T
/// ```
///
/// with norm = the smallest f32 ≥ `max_abs` (so norm ≤ max_abs·(1 + 2^−23) for normal
/// values), u_T the unit roundoff of T and σ_T its smallest subnormal. The first term is
/// the quantisation (half a step), the second the f64 encode arithmetic and the three
/// roundings of the decode, the third the decode's underflow when the norm is tiny.
/// 0 for an all-zero site; `f64::INFINITY` when `max_abs` exceeds the norm's range.
pub(super) fn error_bound<T: Real>(w: FixedWidth, max_abs: f64) -> f64 {
    let Some(norm) = f32_round_up(max_abs) else {
        return f64::INFINITY;
    };
    if norm == 0.0 {
        return 0.0; // an all-zero site is stored and decoded exactly
    }
    let norm = norm as f64;
    let q = w.max_int() as f64;
    norm / (2.0 * q)
        + (2.0001 * f64::EPSILON / 2.0 + 3.0001 * unit_roundoff_of::<T>()) * norm
        + (q + 1.0) * subnormal_of::<T>()
}
