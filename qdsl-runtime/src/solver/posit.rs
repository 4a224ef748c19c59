//! Posit arithmetic emulation: rounding of a real to the nearest posit(n, es), and the
//! posit storage formats of the precision study.
//!
//! A posit(n, es) is n bits: a sign, then (for x > 0) a *regime* of m identical bits
//! ended by the opposite bit (or by the end of the word), then es exponent bits and the
//! remaining fraction bits f (fl of them; bits cut off by the word end count as 0):
//!
//! x = 2^(k·2^es + e) · (1 + f/2^fl),  k = m − 1 for a run of ones, −m for zeros,
//!
//! negative values being the two's complement of the pattern. The rounding of a real v
//! follows the posit standard (2022): write |v| as this bit string to unbounded
//! length, round it to the n − 1 bits after the sign to nearest, ties to the even
//! pattern, and never to 0 or NaR: magnitudes above maxpos = 2^((n−2)·2^es) give maxpos,
//! non-zero ones below minpos = 2^(−(n−2)·2^es) give minpos. NaN and ±∞ map to NaR,
//! returned as NaN.
//!
//! The 2022 standard fixes es = 2 for every n; the older (2017) convention used
//! es = 0, 1, 2 for posit8, 16, 32 (Gustafson), which Gruber et al. also consider. The
//! study uses [`Posit8`] (es 0), [`Posit16`] (es 1), [`Posit32`] (es 2, both
//! conventions) and the standard's [`Posit8Es2`], [`Posit16Es2`].

use super::quantized::SpinorStorage;
use qdsl_core::format::FermionFormat;

/// v rounded to the nearest posit(n, es) (module docs), for 3 ≤ n ≤ 32, es ≤ 4.
pub fn posit_round(v: f64, n: u32, es: u32) -> f64 {
    debug_assert!((3..=32).contains(&n) && es <= 4);
    if v == 0.0 {
        return 0.0;
    }
    if !v.is_finite() {
        return f64::NAN;
    }
    let a = v.abs();
    // |v| = 2^scale · (1 + frac/2^52) exactly (subnormal f64 are far below any minpos
    // here and clamp to it below).
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    if biased == 0 {
        return minpos(n, es).copysign(v);
    }
    let scale = biased - 1023;
    let frac = (bits & ((1u64 << 52) - 1)) as u128;
    let useed_log = 1i64 << es;
    let k = scale.div_euclid(useed_log);
    let e = scale.rem_euclid(useed_log) as u128;
    let max_k = n as i64 - 2;
    if k > max_k {
        return maxpos(n, es).copysign(v);
    }
    if k < -max_k {
        return minpos(n, es).copysign(v);
    }
    // The unbounded pattern: regime, exponent, 52 fraction bits.
    let (regime, regime_len) = if k >= 0 {
        // k + 1 ones then a zero.
        (((1u128 << (k + 1)) - 1) << 1, k as u32 + 2)
    } else {
        // −k zeros then a one.
        (1u128, (-k) as u32 + 1)
    };
    let len = regime_len + es + 52;
    let pattern = (((regime << es) | e) << 52) | frac;
    let keep = n - 1;
    let mut rounded = if len <= keep {
        pattern << (keep - len)
    } else {
        let shift = len - keep;
        let kept = pattern >> shift;
        let rest = pattern & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        if rest > half || (rest == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let max_pattern = (1u128 << keep) - 1;
    rounded = rounded.clamp(1, max_pattern);
    decode(rounded as u64, keep, es).copysign(v)
}

/// The value of the n − 1 bits after a zero sign bit (a positive posit).
fn decode(p: u64, keep: u32, es: u32) -> f64 {
    let bit = |i: u32| (p >> (keep - 1 - i)) & 1;
    let first = bit(0);
    let mut m = 1;
    while m < keep && bit(m) == first {
        m += 1;
    }
    let k = if first == 1 {
        m as i64 - 1
    } else {
        -(m as i64)
    };
    // Skip the terminating bit, if the word has one.
    let mut i = (m + 1).min(keep);
    let mut e = 0i64;
    for _ in 0..es {
        e <<= 1;
        if i < keep {
            e |= bit(i) as i64;
            i += 1;
        }
    }
    let fl = keep - i;
    let f = p & ((1u64 << fl) - 1);
    let mantissa = 1.0 + f as f64 / (1u64 << fl) as f64;
    mantissa * 2f64.powi((k * (1 << es) + e) as i32)
}

/// The largest posit(n, es), 2^((n−2)·2^es).
fn maxpos(n: u32, es: u32) -> f64 {
    2f64.powi(((n - 2) << es) as i32)
}

/// The smallest positive posit(n, es), 2^(−(n−2)·2^es).
fn minpos(n: u32, es: u32) -> f64 {
    2f64.powi(-(((n - 2) << es) as i32))
}

/// Defines a posit storage format (emulated: every real rounded to posit(n, es), held in
/// f64; the container label is f32 as for TF32, the rounding is the posit's).
macro_rules! posit_storage {
    ($(#[$doc:meta])* $name:ident, $n:expr, $es:expr, $label:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name;

        impl SpinorStorage for $name {
            const FORMAT: FermionFormat = FermionFormat::F32;
            /// Half the spacing just above 1: 2^−(n − 2 − es) · ½ · 2 = 2^−(n−2−es).
            const UNIT_ROUNDOFF: f64 = 1.0 / (1u64 << ($n - 2 - $es)) as f64;
            const NAME: &'static str = $label;

            /// Each real rounded to posit(n, es); false (untouched) if any is not finite.
            fn round_site(reals: &mut [f64], _bytes: &mut [u8]) -> bool {
                if reals.iter().any(|v| !v.is_finite()) {
                    return false;
                }
                reals.iter_mut().for_each(|v| *v = posit_round(*v, $n, $es));
                true
            }
        }
    };
}

posit_storage!(
    /// posit8 with es = 0 (2017 convention): 5 fraction bits at 1, range 2^±6.
    Posit8, 8, 0, "posit8"
);
posit_storage!(
    /// posit8 with es = 2 (2022 standard): 3 fraction bits at 1, range 2^±24.
    Posit8Es2, 8, 2, "posit8es2"
);
posit_storage!(
    /// posit16 with es = 1 (2017 convention): 12 fraction bits at 1, range 2^±28.
    Posit16, 16, 1, "posit16"
);
posit_storage!(
    /// posit16 with es = 2 (2022 standard): 11 fraction bits at 1, range 2^±56.
    Posit16Es2, 16, 2, "posit16es2"
);
posit_storage!(
    /// posit32 with es = 2 (both conventions): 27 fraction bits at 1, range 2^±120.
    Posit32, 32, 2, "posit32"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Values worked out by hand from the bit layout.
    ///
    /// posit8 es0: 1 = 0|10|00000, spacing 2⁻⁵ on [1, 2): 1.03 → 1 + 1/32; 3 = 0|110|1000
    /// exact; on [8, 16) the regime 11110 leaves 2 fraction bits (spacing 2): 11 is the
    /// tie between 10 (…01) and 12 (…10) → 12 (even); 100 > maxpos 64 → 64;
    /// 10⁻⁵ < minpos 1/64 → 1/64; −3 → −3.
    /// posit16 es1: spacing 2⁻¹² on [1, 2): 1 + 2⁻¹³ is a tie → 1 (even);
    /// 1 + 3·2⁻¹³ a tie between 1 + 2⁻¹² (odd) and 1 + 2⁻¹¹ (even) → 1 + 2⁻¹¹;
    /// 0.3 on [¼, ½) = 2⁻² (k = −1, e = 0): regime 01, 12 fraction bits, spacing 2⁻¹⁴:
    /// 0.3 · 2¹⁴ = 4915.2 → 4915 · 2⁻¹⁴.
    /// posit32 es2: on [1, 2) 27 fraction bits: π → round(π/2 · 2²⁷)·2⁻²⁶;
    /// maxpos 2¹²⁰.
    /// posit8 es2: on [1, 2) 3 fraction bits: 1.2 → 1.25; 2²⁴ is maxpos; 2³⁰ → 2²⁴.
    #[test]
    fn hand_computed_values() {
        assert_eq!(posit_round(1.0, 8, 0), 1.0);
        assert_eq!(posit_round(1.03, 8, 0), 1.0 + 1.0 / 32.0);
        assert_eq!(posit_round(3.0, 8, 0), 3.0);
        assert_eq!(posit_round(11.0, 8, 0), 12.0);
        assert_eq!(posit_round(10.0, 8, 0), 10.0);
        assert_eq!(posit_round(100.0, 8, 0), 64.0);
        assert_eq!(posit_round(1e-5, 8, 0), 1.0 / 64.0);
        assert_eq!(posit_round(-3.0, 8, 0), -3.0);
        assert_eq!(posit_round(1.0 + 2f64.powi(-13), 16, 1), 1.0);
        assert_eq!(
            posit_round(1.0 + 3.0 * 2f64.powi(-13), 16, 1),
            1.0 + 2f64.powi(-11)
        );
        assert_eq!(posit_round(0.3, 16, 1), 4915.0 * 2f64.powi(-14));
        let pi = std::f64::consts::PI;
        assert_eq!(
            posit_round(pi, 32, 2),
            (pi / 2.0 * 2f64.powi(27)).round() * 2f64.powi(-26)
        );
        assert_eq!(posit_round(1e40, 32, 2), 2f64.powi(120));
        assert_eq!(posit_round(1.2, 8, 2), 1.25);
        assert_eq!(posit_round(2f64.powi(24), 8, 2), 2f64.powi(24));
        assert_eq!(posit_round(2f64.powi(30), 8, 2), 2f64.powi(24));
        assert_eq!(posit_round(0.0, 16, 1), 0.0);
        assert!(posit_round(f64::NAN, 16, 1).is_nan());
        assert!(posit_round(f64::INFINITY, 16, 1).is_nan());
    }

    /// Every posit8 (es 0 and 2) rounds to itself; between neighbours p and p + 1 the
    /// rounding boundary is the value of the 8-bit string "p then 1" (round to nearest on
    /// the bit string): just below it rounds to p, just above to p + 1, on it to the even
    /// pattern.
    #[test]
    fn posit8_patterns_are_fixed_points_and_ties_round_to_even() {
        for es in [0, 2] {
            let values: Vec<f64> = (1u64..128).map(|p| decode(p, 7, es)).collect();
            assert!(values.windows(2).all(|w| w[0] < w[1]), "monotone, es {es}");
            for p in 1u64..127 {
                let (v, next) = (values[p as usize - 1], values[p as usize]);
                assert_eq!(posit_round(v, 8, es), v, "es {es} pattern {p}");
                let tie = decode((p << 1) | 1, 8, es);
                assert!(v < tie && tie < next);
                assert_eq!(posit_round(tie * (1.0 - 1e-9), 8, es), v);
                assert_eq!(posit_round(tie * (1.0 + 1e-9), 8, es), next);
                let even = if p % 2 == 0 { v } else { next };
                assert_eq!(posit_round(tie, 8, es), even, "es {es} tie after {p}");
            }
        }
    }

    /// The unit round-offs bound the relative rounding error on [1, 2).
    #[test]
    fn unit_roundoffs_bound_the_error_near_one() {
        fn check<S: SpinorStorage>(n: u32, es: u32) {
            for v in [1.0 + 1e-3, 1.37, 1.6180339, 1.999] {
                let e = (posit_round(v, n, es) - v).abs() / v;
                assert!(e <= S::UNIT_ROUNDOFF, "{} {v}: {e:e}", S::NAME);
            }
        }
        check::<Posit8>(8, 0);
        check::<Posit8Es2>(8, 2);
        check::<Posit16>(16, 1);
        check::<Posit16Es2>(16, 2);
        check::<Posit32>(32, 2);
    }
}
