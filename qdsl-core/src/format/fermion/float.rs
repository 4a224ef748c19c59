//! Element-wise floating-point fermion storage: f64, f32, f16, bf16.
//!
//! Layout: the N reals of the site one after the other, each `w.bytes()` bytes,
//! little-endian IEEE. Real i lies at bytes `[i·w, (i+1)·w)`.

use crate::format::scalar::FloatWidth;
use crate::format::FormatError;
use crate::Real;

/// Stores `fl(v_i)` for every component ([`FloatWidth::round`]).
///
/// NaN and ±∞ are stored as NaN and ±∞ (propagated: these formats are plain casts). A
/// finite value that would round to ±∞ is an [`FormatError::Overflow`] naming it.
pub(super) fn encode<T: Real>(
    w: FloatWidth,
    site: &[T],
    out: &mut [u8],
) -> Result<(), FormatError> {
    for (component, (v, chunk)) in site.iter().zip(out.chunks_exact_mut(w.bytes())).enumerate() {
        let x = Real::to_f64(*v);
        if x.is_finite() && !w.round(x).is_finite() {
            return Err(FormatError::Overflow {
                format: w.name().to_string(),
                component,
                value: x,
                max: w.max_finite(),
            });
        }
        w.write(x, chunk);
    }
    Ok(())
}

/// Reads every component and converts it to `T` (exact when `w` holds no more than `T`,
/// rounded to nearest otherwise).
pub(super) fn decode<T: Real>(w: FloatWidth, bytes: &[u8], site: &mut [T]) {
    for (v, chunk) in site.iter_mut().zip(bytes.chunks_exact(w.bytes())) {
        *v = T::from_f64(w.read(chunk));
    }
}

/// Per-component bound for a component of magnitude ≤ `abs`: 0 when the width holds every
/// `T`, else [`FloatWidth::rounding_bound`]: u·abs + η, and at most u/2 for abs ≤ 1.
pub(super) fn error_bound<T: Real>(w: FloatWidth, abs: f64) -> f64 {
    if w.holds::<T>() {
        0.0
    } else {
        w.rounding_bound(abs)
    }
}
