//! Bit-reproducible logarithm, sine and cosine for the random generator.
//!
//! Rust's `f64::ln`, `sin` and `cos` call the platform's maths library, whose last bit
//! varies between platforms and versions (the standard library documents them as
//! non-deterministic). A Gaussian random field must be the same on every machine, so the
//! Box–Muller transform uses these functions instead: they are built only from IEEE 754
//! `+ − × ÷` (correctly rounded everywhere, and never contracted to FMA by rustc), so
//! every machine gets the same bits. Their accuracy is a few units in the last place,
//! which is far more than a random number needs.

use std::f64::consts::{FRAC_PI_4, LN_2, SQRT_2};

/// `2^52`, to scale subnormal inputs into the normal range.
const TWO_POW_52: f64 = 4_503_599_627_370_496.0;

/// Natural logarithm ln x of a positive finite `x`, reproducible bit for bit.
///
/// With x = 2^e m, m ∈ [1/√2, √2) (exact bit manipulation) and s = (m − 1)/(m + 1),
///
/// ln x = e ln 2 + 2 atanh s = e ln 2 + 2 Σ_{k≥0} s^{2k+1}/(2k+1).
///
/// |s| ≤ (√2 − 1)/(√2 + 1) ≈ 0.172, so s² ≤ 0.0295 and twelve terms leave a truncation
/// below 10⁻¹⁸ relative. Accuracy: within 4 ulp of the exact value (tested against the
/// platform's `ln`). Not defined for x ≤ 0, infinity or NaN (callers pass uniforms in
/// (0, 1]).
pub(crate) fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    let (x, e_bias) = if x < f64::MIN_POSITIVE {
        (x * TWO_POW_52, -52)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023 + e_bias;
    // m ∈ [1, 2): the mantissa with the exponent field of 1.0.
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m >= SQRT_2 {
        m *= 0.5; // exact
        e += 1;
    }
    let d = m - 1.0; // exact (Sterbenz: m ∈ [1/√2, √2))
    let s = d / (2.0 + d);
    let s2 = s * s;
    // Horner in s²: Σ_{k=0}^{11} s^{2k}/(2k+1).
    let mut series = 1.0 / 23.0;
    for k in (0..11).rev() {
        series = series * s2 + 1.0 / (2 * k + 1) as f64;
    }
    let ln_m = 2.0 * s * series;
    // ln 2 split so that e · LN_2_HI is exact for |e| < 2^11.
    const LN_2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // fdlibm's ln2_hi
    const LN_2_LO: f64 = LN_2 - LN_2_HI;
    let e = e as f64;
    e * LN_2_HI + (e * LN_2_LO + ln_m)
}

/// (sin 2πu, cos 2πu) for u ∈ [0, 1), reproducible bit for bit.
///
/// The turn is split into octants exactly: v = 8u, o = ⌊v⌋, r = v − o. Within the
/// octant the angle θ = r π/4 (o even) or (1 − r) π/4 (o odd) lies in [0, π/4], where
/// the Taylor series
///
/// sin θ = Σ_{k=0}^{8} (−1)^k θ^{2k+1}/(2k+1)!,  cos θ = Σ_{k=0}^{9} (−1)^k θ^{2k}/(2k)!
///
/// leave a truncation below 10⁻¹⁸; the octant's symmetry (φ = oπ/4 ± θ) then gives
/// sin φ and cos φ from ±sin θ and ±cos θ. Absolute error below 4 × 10⁻¹⁶.
pub(crate) fn sin_cos_turns(u: f64) -> (f64, f64) {
    debug_assert!((0.0..1.0).contains(&u));
    let v = 8.0 * u; // exact
    let octant = v.floor();
    let r = v - octant; // exact
    let o = octant as u32 & 7;
    let theta = if o & 1 == 0 { r } else { 1.0 - r } * FRAC_PI_4;
    let (s, c) = sin_cos_small(theta);
    match o {
        0 => (s, c),
        1 => (c, s),
        2 => (c, -s),
        3 => (s, -c),
        4 => (-s, -c),
        5 => (-c, -s),
        6 => (-c, s),
        _ => (-s, c),
    }
}

/// 1/n! for n = 0..=19 (IEEE arithmetic at compile time: the same bits everywhere).
pub(crate) const INV_FACTORIAL: [f64; 20] = {
    let mut a = [1.0f64; 20];
    let mut n = 1;
    while n < 20 {
        a[n] = a[n - 1] / n as f64;
        n += 1;
    }
    a
};

/// Taylor series of (sin θ, cos θ) for θ ∈ [0, π/4], evaluated by Horner's rule in θ².
fn sin_cos_small(theta: f64) -> (f64, f64) {
    let t2 = theta * theta;
    let mut sin = 0.0;
    let mut cos = 0.0;
    for k in (0..=9).rev() {
        let sign = if k & 1 == 0 { 1.0 } else { -1.0 };
        sin = sin * t2 + sign * INV_FACTORIAL[2 * k + 1];
        cos = cos * t2 + sign * INV_FACTORIAL[2 * k];
    }
    (theta * sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two positive or two negative floats.
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_matches_known_values_and_platform_to_few_ulp() {
        assert_eq!(ln(1.0), 0.0);
        assert!(ulps(ln(0.5), -LN_2) <= 1);
        assert!(ulps(ln(2.0f64.powi(-53)), -53.0 * LN_2) <= 1);
        assert!(ulps(ln(f64::MIN_POSITIVE / 8.0), -1025.0 * LN_2) <= 1);
        assert!(ulps(ln(10.0), std::f64::consts::LN_10) <= 2);
        let mut x = 1.0e-300;
        while x < 1.0 {
            let (a, b) = (ln(x), x.ln());
            assert!(
                ulps(a, b) <= 4 || (a - b).abs() < 4.0 * f64::EPSILON,
                "{x}: {a} {b}"
            );
            x *= 1.003_1;
        }
    }

    #[test]
    fn sin_cos_turns_matches_exact_angles_and_platform() {
        let (s, c) = sin_cos_turns(0.0);
        assert_eq!((s, c), (0.0, 1.0));
        let (s, c) = sin_cos_turns(0.25);
        assert!((s - 1.0).abs() < 1e-16 && c.abs() < 1e-16);
        let (s, c) = sin_cos_turns(0.125);
        let h = 0.5f64.sqrt();
        assert!((s - h).abs() < 2e-16 && (c - h).abs() < 2e-16);
        let (s, c) = sin_cos_turns(1.0 / 12.0); // 30°
        assert!((s - 0.5).abs() < 2e-16 && (c - 0.75f64.sqrt()).abs() < 2e-16);
        for i in 0..100_000 {
            let u = i as f64 / 100_000.0 + 1.234_567e-7;
            let phi = 2.0 * std::f64::consts::PI * u;
            let (s, c) = sin_cos_turns(u);
            // The reference's own angle 2πu carries an error up to ~7e-16.
            assert!((s - phi.sin()).abs() < 1e-15, "{u}");
            assert!((c - phi.cos()).abs() < 1e-15, "{u}");
        }
    }
}
