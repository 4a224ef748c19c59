//! Tests of the fermion formats: byte sizes, hand-computed encodings, the stated bounds on
//! large random samples (never exceeded, and not vacuous), zeros, extremes, subnormals,
//! non-finite input and corrupt bytes.

use super::*;
use crate::format::testing::TestRng;

const WILSON: usize = 24;
const STAGGERED: usize = 6;

fn round_trip<T: Real>(f: FermionFormat, site: &[T]) -> Result<Vec<T>, FormatError> {
    let mut bytes = vec![0u8; f.bytes_per_site(site.len())];
    f.encode(site, &mut bytes)?;
    let mut out = vec![T::zero(); site.len()];
    f.decode(&bytes, &mut out)?;
    Ok(out)
}

fn encoded<T: Real>(f: FermionFormat, site: &[T]) -> Vec<u8> {
    let mut bytes = vec![0u8; f.bytes_per_site(site.len())];
    f.encode(site, &mut bytes).expect("encodable site");
    bytes
}

fn max_abs<T: Real>(site: &[T]) -> f64 {
    site.iter().fold(0.0, |m, &v| m.max(Real::to_f64(v).abs()))
}

#[test]
fn bytes_per_site_match_hand_counts() {
    // (format, Wilson 24 reals, staggered 6 reals)
    let table = [
        (FermionFormat::F64, 192, 48),
        (FermionFormat::F32, 96, 24),
        (FermionFormat::F16, 48, 12),
        (FermionFormat::BF16, 48, 12),
        (FermionFormat::FIXED16, 4 + 48, 4 + 12),
        (FermionFormat::FIXED8, 4 + 24, 4 + 6),
        (FermionFormat::PACKED20, 4 * 16, 16),
        (FermionFormat::PACKED30, 4 * 24, 24),
    ];
    for (f, wilson, staggered) in table {
        assert_eq!(f.bytes_per_site(WILSON), wilson, "{f}");
        assert_eq!(f.bytes_per_site(STAGGERED), staggered, "{f}");
    }
    // Padding of a partial group, and empty sites.
    assert_eq!(FermionFormat::PACKED20.bytes_per_site(7), 32);
    assert_eq!(FermionFormat::PACKED30.bytes_per_site(0), 0);
    assert_eq!(FermionFormat::FIXED8.bytes_per_site(0), 4);
    assert_eq!(
        FermionFormat::ALL.map(|f| f.bits_per_real()),
        [64, 32, 16, 16, 16, 8, 20, 30]
    );
    for f in FermionFormat::ALL {
        assert_eq!(FermionFormat::from_name(f.name()), Some(f));
    }
    assert_eq!(FermionFormat::from_name("f8"), None);
}

#[test]
fn fixed_point_bytes_match_a_hand_computed_encoding() {
    // norm = 1; q = round(v · 32767): 32767, −16383.5 → −16384 (ties to even), 8191.75 → 8192, 0.
    let bytes = encoded(FermionFormat::FIXED16, &[1.0f64, -0.5, 0.25, 0.0]);
    assert_eq!(
        bytes,
        [0x00, 0x00, 0x80, 0x3f, 0xff, 0x7f, 0x00, 0xc0, 0x00, 0x20, 0x00, 0x00]
    );
    // 8 bits: 0.5 · 127 = 63.5 → 64 (even), −1 → −127 = 0x81.
    let bytes = encoded(FermionFormat::FIXED8, &[0.5f64, -1.0]);
    assert_eq!(bytes, [0x00, 0x00, 0x80, 0x3f, 0x40, 0x81]);
    // Norm rounded up to f32: max = 1 + 2^-40 is not an f32, the norm is 1 + 2^-23.
    let bytes = encoded(FermionFormat::FIXED16, &[1.0 + 2f64.powi(-40)]);
    assert_eq!(
        f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        1.0 + f32::EPSILON
    );
    // Decoding: v = q · (norm · fl(1/Q)) in T.
    let out = round_trip(FermionFormat::FIXED16, &[1.0f32, -0.5, 0.25, 0.0]).unwrap();
    let s = 1.0f32 * (1.0f32 / 32767.0);
    assert_eq!(out, vec![32767.0 * s, -16384.0 * s, 8192.0 * s, 0.0]);
}

#[test]
fn packed_bytes_match_a_hand_computed_encoding() {
    let site = [1.0f64, -1.0, 0.5, 0.0, 0.0, 0.25];
    // 20 bits: Q = 524287; Q·2^-19 < 1 ≤ Q·2^-18, so k = −18, e = 109, q = v·2^18.
    let q: [i64; 6] = [262144, -262144, 131072, 0, 0, 65536];
    let mut w: u128 = 109u128 << 120;
    for (i, &qi) in q.iter().enumerate() {
        w |= ((qi & 0xf_ffff) as u128) << (20 * i);
    }
    assert_eq!(
        encoded(FermionFormat::PACKED20, &site),
        w.to_le_bytes().to_vec()
    );
    // Real 1 = −2^18 is 0xc0000: its low 12 bits (0x000) in bits 20–31 of word 0, its
    // high 8 bits (0xc0) in bits 0–7 of word 1.
    assert_eq!(&w.to_le_bytes()[4..5], &[0xc0]);
    // 30 bits: Q = 2^29 − 1, k = −28, e = 99 = 0b01_10_00_11 spread over words 0–3.
    let words: [u32; 6] = [
        (1 << 28) | (3 << 30),
        (1 << 30) - (1 << 28),
        (1 << 27) | (2 << 30),
        1 << 30,
        0,
        1 << 26,
    ];
    let expected: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(encoded(FermionFormat::PACKED30, &site), expected);
    // Powers of two times small integers survive exactly.
    for f in [FermionFormat::PACKED20, FermionFormat::PACKED30] {
        assert_eq!(round_trip(f, &site).unwrap(), site.to_vec());
        assert_eq!(
            round_trip(f, &site.map(|v| v as f32)).unwrap(),
            site.map(|v| v as f32).to_vec()
        );
    }
}

#[test]
fn packed_scale_exponent_is_the_smallest_that_fits() {
    let w = PackedWidth::Bits20;
    let q = w.max_int() as f64;
    assert_eq!(q, 524287.0);
    // Q·2^k ≥ m exactly at the boundary, and one more just above it.
    assert_eq!(w.scale_exponent(q * 2f64.powi(-20)), Some(-20));
    assert_eq!(
        w.scale_exponent(q * 2f64.powi(-20) * (1.0 + f64::EPSILON)),
        Some(-19)
    );
    assert_eq!(w.scale_exponent(1.0), Some(-18));
    assert_eq!(w.scale_exponent(0.5), Some(-19));
    // Clamped at 2^-126 for tiny groups, refused above Q·2^127.
    assert_eq!(w.scale_exponent(1e-300), Some(-126));
    assert_eq!(w.scale_exponent(w.max_accepted()), Some(127));
    assert_eq!(w.scale_exponent(w.max_accepted() * 1.000001), None);
    assert_eq!(PackedWidth::Bits30.scale_exponent(1.0), Some(-28));
}

/// Round-trips `samples` random sites and checks every component against the bound;
/// returns the largest measured error / bound.
fn worst_ratio<T: Real>(
    f: FermionFormat,
    samples: usize,
    n: usize,
    rng: &mut TestRng,
    mut value: impl FnMut(&mut TestRng, usize) -> f64,
) -> f64 {
    let mut worst = 0.0f64;
    let per_component = matches!(f, FermionFormat::Float(_));
    for _ in 0..samples {
        let site: Vec<T> = (0..n).map(|i| T::from_f64(value(rng, i))).collect();
        let out = round_trip(f, &site).unwrap_or_else(|e| panic!("{f}: {e}"));
        let m = max_abs(&site);
        for (&v, &w) in site.iter().zip(&out) {
            let (v, w) = (Real::to_f64(v), Real::to_f64(w));
            let err = (w - v).abs();
            let bound = f.error_bound::<T>(if per_component { v.abs() } else { m });
            assert!(
                err <= bound,
                "{f} ({}): |{w:e} − {v:e}| = {err:e} > {bound:e}",
                T::NAME
            );
            assert!(err <= f.error_bound::<T>(m));
            if bound > 0.0 {
                worst = worst.max(err / bound);
            }
        }
    }
    worst
}

#[test]
fn float_formats_round_trip_within_the_relative_bound_over_sixty_decades() {
    let mut rng = TestRng::new(1);
    // (format, exponent range of |v| for T = f64, for T = f32): each range includes the
    // format's subnormals and reaches close to its largest value.
    let cases = [
        (FermionFormat::F32, (-44.0, 38.0), (-44.0, 38.0)),
        (FermionFormat::F16, (-8.5, 4.8), (-8.5, 4.8)),
        (FermionFormat::BF16, (-40.0, 38.0), (-40.0, 38.0)),
    ];
    for (f, (lo64, hi64), (lo32, hi32)) in cases {
        let r = worst_ratio::<f64>(f, 4000, WILSON, &mut rng, |r, _| r.log_uniform(lo64, hi64));
        assert!(r >= 0.25, "{f} f64: bound is loose, worst error/bound {r}");
        if f != FermionFormat::F32 {
            let r = worst_ratio::<f32>(f, 4000, WILSON, &mut rng, |r, _| r.log_uniform(lo32, hi32));
            assert!(r >= 0.25, "{f} f32: bound is loose, worst error/bound {r}");
        }
    }
    // 1e-30 … 1e30 within one site, in f32 storage.
    worst_ratio::<f64>(FermionFormat::F32, 2000, WILSON, &mut rng, |r, _| {
        r.log_uniform(-30.0, 30.0)
    });
}

#[test]
fn float_formats_that_hold_the_compute_type_are_exact() {
    let mut rng = TestRng::new(2);
    for _ in 0..500 {
        let site64: Vec<f64> = (0..WILSON)
            .map(|_| rng.log_uniform(-300.0, 300.0))
            .collect();
        let site32: Vec<f32> = (0..WILSON)
            .map(|_| rng.log_uniform(-44.0, 38.0) as f32)
            .collect();
        assert_eq!(round_trip(FermionFormat::F64, &site64).unwrap(), site64);
        assert_eq!(round_trip(FermionFormat::F64, &site32).unwrap(), site32);
        assert_eq!(round_trip(FermionFormat::F32, &site32).unwrap(), site32);
        assert_eq!(FermionFormat::F64.error_bound::<f64>(1.0), 0.0);
        assert_eq!(FermionFormat::F32.error_bound::<f32>(1.0), 0.0);
    }
}

#[test]
fn fixed_and_packed_round_trip_within_the_norm_bound() {
    let mut rng = TestRng::new(3);
    for f in [
        FermionFormat::FIXED16,
        FermionFormat::FIXED8,
        FermionFormat::PACKED20,
        FermionFormat::PACKED30,
    ] {
        // Uniform components at a random overall scale 1e-30 … 1e30: the error is
        // absolute, relative to the site's max.
        let mut scale = 1.0;
        let r64 = worst_ratio::<f64>(f, 3000, WILSON, &mut rng, |r, i| {
            if i == 0 {
                scale = r.log_uniform(-30.0, 30.0).abs();
            }
            scale * r.symmetric()
        });
        let r32 = worst_ratio::<f32>(f, 3000, WILSON, &mut rng, |r, i| {
            if i == 0 {
                scale = r.log_uniform(-30.0, 30.0).abs();
            }
            scale * r.symmetric()
        });
        assert!(
            r64 >= 0.25 && r32 >= 0.25,
            "{f}: bound is loose: {r64} (f64), {r32} (f32)"
        );
        // Magnitudes spanning 60 decades inside one site: small components lose all
        // their digits but stay within the site-max bound.
        worst_ratio::<f64>(f, 1000, WILSON, &mut rng, |r, _| r.log_uniform(-30.0, 30.0));
        worst_ratio::<f32>(f, 1000, STAGGERED, &mut rng, |r, _| {
            r.log_uniform(-30.0, 30.0)
        });
        // Any length, including a partial packed group.
        worst_ratio::<f64>(f, 200, 7, &mut rng, |r, _| r.symmetric());
    }
}

#[test]
fn stated_epsilons_relative_to_the_max() {
    // The headline numbers: fixed16 ≈ 1.5e-5, fixed8 ≈ 3.9e-3, packed20 < 1.9e-6,
    // packed30 < 1.9e-9, per unit of the site/group max.
    let b = |f: FermionFormat| f.error_bound::<f64>(1.0);
    assert!((b(FermionFormat::FIXED16) - 0.5 / 32767.0).abs() < 1e-9);
    assert!((b(FermionFormat::FIXED8) - 0.5 / 127.0).abs() < 1e-9);
    let mut rng = TestRng::new(4);
    for _ in 0..1000 {
        let m = rng.log_uniform(-29.0, 30.0).abs();
        for t in [
            FermionFormat::PACKED20.error_bound::<f64>(m),
            FermionFormat::PACKED20.error_bound::<f32>(m),
        ] {
            assert!(t < m * 1.9074e-6 && t >= m * 1.9073e-6 / 2.0);
        }
        assert!(FermionFormat::PACKED30.error_bound::<f64>(m) < m * 1.8627e-9);
    }
    // Below Q·2^-126 the scale stops at 2^-126: an absolute 2^-127.
    assert_eq!(
        FermionFormat::PACKED30.error_bound::<f64>(1e-35),
        2f64.powi(-127)
    );
}

#[test]
fn all_zero_sites_round_trip_to_exact_zeros_with_zero_bytes() {
    for f in FermionFormat::ALL {
        for n in [WILSON, STAGGERED, 7] {
            let out = round_trip(f, &vec![0.0f64; n]).unwrap();
            assert!(out.iter().all(|v| v.to_bits() == 0), "{f}: {out:?}");
            let out = round_trip(f, &vec![0.0f32; n]).unwrap();
            assert!(out.iter().all(|v| v.to_bits() == 0), "{f}: {out:?}");
            assert!(encoded(f, &vec![0.0f64; n]).iter().all(|&b| b == 0), "{f}");
        }
        assert_eq!(f.error_bound::<f64>(0.0), 0.0, "{f}");
    }
    // Exact zeros next to non-zero values stay exact zeros.
    for f in FermionFormat::ALL {
        let out = round_trip(f, &[0.0, 3.5, 0.0, -1e-3, 0.0, 0.0, 0.0]).unwrap();
        for i in [0, 2, 4, 5, 6] {
            assert_eq!(out[i], 0.0, "{f}");
        }
    }
    // Float formats keep the sign of zero.
    for f in [
        FermionFormat::F64,
        FermionFormat::F32,
        FermionFormat::F16,
        FermionFormat::BF16,
    ] {
        assert_eq!(
            round_trip(f, &[-0.0f64]).unwrap()[0].to_bits(),
            (-0.0f64).to_bits(),
            "{f}"
        );
    }
}

#[test]
fn negative_values_mirror_positive_ones() {
    let mut rng = TestRng::new(5);
    for f in FermionFormat::ALL {
        for _ in 0..200 {
            let site: Vec<f64> = (0..WILSON).map(|_| rng.symmetric() * 100.0).collect();
            let neg: Vec<f64> = site.iter().map(|v| -v).collect();
            let a = round_trip(f, &site).unwrap();
            let b = round_trip(f, &neg).unwrap();
            assert!(a.iter().zip(&b).all(|(x, y)| *x == -*y), "{f}");
        }
    }
}

#[test]
fn largest_values_round_trip_and_one_step_beyond_overflows() {
    // f16: 65504 is the largest finite; 65519.99 still rounds to it; 65520 would be ∞.
    let out = round_trip(FermionFormat::F16, &[65504.0f64, -65504.0, 65519.99]).unwrap();
    assert_eq!(out, vec![65504.0, -65504.0, 65504.0]);
    let err = round_trip(FermionFormat::F16, &[1.0f64, -65520.0]).unwrap_err();
    assert!(
        matches!(err, FormatError::Overflow { component: 1, value, .. } if value == -65520.0),
        "{err}"
    );
    assert!(err.to_string().contains("component 1"));
    // f32 storage of f64 values: f32::MAX is exact; the overflow tie and beyond overflow.
    let max32 = f32::MAX as f64;
    assert_eq!(
        round_trip(FermionFormat::F32, &[max32, -max32]).unwrap(),
        vec![max32, -max32]
    );
    let tie = max32 + 2f64.powi(103); // max + half an ulp (2^104)
    assert!(matches!(
        round_trip(FermionFormat::F32, &[tie]),
        Err(FormatError::Overflow { component: 0, .. })
    ));
    assert!(round_trip(FermionFormat::F32, &[1e39]).is_err());
    // bf16 and f64 extremes.
    let maxb = half::bf16::MAX.to_f64();
    assert_eq!(
        round_trip(FermionFormat::BF16, &[maxb]).unwrap(),
        vec![maxb]
    );
    assert_eq!(
        round_trip(FermionFormat::F64, &[f64::MAX, f64::MIN]).unwrap(),
        vec![f64::MAX, f64::MIN]
    );

    // Fixed point: the norm is an f32, so an f64 site must have max ≤ f32::MAX.
    for f in [FermionFormat::FIXED16, FermionFormat::FIXED8] {
        let out = round_trip(f, &[max32, -max32 / 3.0]).unwrap();
        assert!((out[0] - max32).abs() <= f.error_bound::<f64>(max32));
        let err = round_trip(f, &[1.0, 2.0, 1e300]).unwrap_err();
        assert!(
            matches!(err, FormatError::Overflow { component: 2, .. }),
            "{err}"
        );
        // In f32 compute the decode q·(norm·fl(1/Q)) of f32::MAX must stay finite, or the
        // encoder refuses; either way no infinity comes back.
        match round_trip(f, &[f32::MAX, 0.5]) {
            Ok(out) => assert!(
                out[0].is_finite() && (out[0] as f64 - max32).abs() <= f.error_bound::<f32>(max32)
            ),
            Err(e) => assert!(
                matches!(e, FormatError::Overflow { component: 0, .. }),
                "{e}"
            ),
        }
    }

    // Packed: groups up to Q·2^127 (f64 compute), exactly representable there.
    for w in [PackedWidth::Bits20, PackedWidth::Bits30] {
        let f = FermionFormat::Packed(w);
        let top = w.max_accepted();
        assert_eq!(
            round_trip(f, &[top, -top, 1.0]).unwrap(),
            vec![top, -top, 0.0]
        );
        let err = round_trip(
            f,
            &[0.0; 6]
                .into_iter()
                .chain([0.0, 3.0 * top])
                .collect::<Vec<f64>>(),
        )
        .unwrap_err();
        assert!(
            matches!(err, FormatError::Overflow { component: 7, .. }),
            "{err}"
        );
        // In f32 with 20 bits, f32::MAX = 2^128 − 2^104 needs k = 110 and
        // q = round(2^18 − 2^-6) = 2^18, which decodes to 2^128 = ∞: refused. With 30 bits
        // k = 100 and q = 2^28 − 16 (24 significant bits) decodes back to f32::MAX exactly.
        match w {
            PackedWidth::Bits20 => {
                let err = round_trip(f, &[1.0f32, f32::MAX]).unwrap_err();
                assert!(
                    matches!(err, FormatError::Overflow { component: 1, .. }),
                    "{err}"
                );
            }
            PackedWidth::Bits30 => assert_eq!(round_trip(f, &[f32::MAX]).unwrap(), vec![f32::MAX]),
        }
        let out = round_trip(f, &[1e38f32, -3e38]).unwrap();
        assert!(out.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn subnormals_are_stored_with_the_documented_absolute_error() {
    // f32 subnormals are exact in f32 storage.
    let tiny = [1e-40f32, -1.4e-45, 3e-39];
    assert_eq!(
        round_trip(FermionFormat::F32, &tiny).unwrap(),
        tiny.to_vec()
    );
    // f16: gradual underflow below 6.1e-5 with absolute error ≤ 2^-25; below 2^-25 → ±0.
    let out = round_trip(FermionFormat::F16, &[1e-6f64, -3e-7, 1e-9, -1e-9]).unwrap();
    assert!((out[0] - 1e-6).abs() <= 2f64.powi(-25) && out[0] != 0.0);
    assert!((out[1] + 3e-7).abs() <= 2f64.powi(-25));
    assert_eq!(out[2].to_bits(), 0.0f64.to_bits());
    assert_eq!(out[3].to_bits(), (-0.0f64).to_bits());
    // Fixed point with a subnormal f32 norm (f32 compute): within the bound, no NaN.
    let site = [1e-40f32, -5e-41, 2e-42, 0.0];
    let out = round_trip(FermionFormat::FIXED16, &site).unwrap();
    for (v, w) in site.iter().zip(&out) {
        assert!(((w - v) as f64).abs() <= FermionFormat::FIXED16.error_bound::<f32>(1e-40));
    }
    // Packed: the scale never goes below 2^-126, so values under 2^-127 become 0.
    let out = round_trip(FermionFormat::PACKED20, &[1e-300f64, 2e-310, -1e-40]).unwrap();
    assert_eq!(out[..2], [0.0, 0.0]);
    assert!((out[2] + 1e-40).abs() <= 2f64.powi(-127));
}

#[test]
fn non_finite_input_propagates_in_float_formats_and_is_refused_elsewhere() {
    let site = [1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    for f in [
        FermionFormat::F64,
        FermionFormat::F32,
        FermionFormat::F16,
        FermionFormat::BF16,
    ] {
        let out = round_trip(f, &site).unwrap();
        assert!(
            out[0] == 1.0
                && out[1].is_nan()
                && out[2] == f64::INFINITY
                && out[3] == f64::NEG_INFINITY,
            "{f}"
        );
    }
    for f in [
        FermionFormat::FIXED16,
        FermionFormat::FIXED8,
        FermionFormat::PACKED20,
        FermionFormat::PACKED30,
    ] {
        let err = round_trip(f, &site).unwrap_err();
        assert!(
            matches!(err, FormatError::NonFinite { component: 1, .. }),
            "{f}: {err}"
        );
        // Found in the second packed group too.
        let mut long = vec![0.5f32; 13];
        long[9] = f32::NEG_INFINITY;
        let err = round_trip(f, &long).unwrap_err();
        assert!(
            matches!(err, FormatError::NonFinite { component: 9, value, .. } if value == f64::NEG_INFINITY),
            "{err}"
        );
        assert!(err.to_string().contains("component 9"), "{err}");
    }
}

#[test]
fn wrong_buffer_sizes_and_corrupt_bytes_are_errors() {
    let mut site = [0.0f64; WILSON];
    for f in FermionFormat::ALL {
        let mut short = vec![0u8; f.bytes_per_site(WILSON) - 1];
        let err = f.encode(&site, &mut short).unwrap_err();
        assert_eq!(
            err,
            FormatError::BufferSize {
                format: f.name().to_string(),
                reals: WILSON,
                expected: f.bytes_per_site(WILSON),
                found: f.bytes_per_site(WILSON) - 1
            }
        );
        assert!(f.decode(&short, &mut site).is_err());
    }
    let corrupt = |f: FermionFormat, bytes: &[u8], n: usize| {
        let mut out = vec![0.0f64; n];
        match f.decode(bytes, &mut out) {
            Err(FormatError::Corrupt { detail, .. }) => detail,
            other => panic!("{f}: expected corrupt, got {other:?}"),
        }
    };
    // Fixed: negative or NaN norm, the unused integer −2^(b−1).
    let mut b = encoded(FermionFormat::FIXED16, &[0.5f64, 1.0]);
    b[..4].copy_from_slice(&(-1.0f32).to_le_bytes());
    assert!(corrupt(FermionFormat::FIXED16, &b, 2).contains("norm"));
    b[..4].copy_from_slice(&f32::NAN.to_le_bytes());
    corrupt(FermionFormat::FIXED16, &b, 2);
    let mut b = encoded(FermionFormat::FIXED16, &[0.5f64, 1.0]);
    b[6..8].copy_from_slice(&i16::MIN.to_le_bytes());
    assert!(corrupt(FermionFormat::FIXED16, &b, 2).contains("component 1"));
    // Packed: exponent 255, −2^(b−1), non-zero integer in a zero group or padding slot,
    // non-zero top bits of words 4–5 (30 bits).
    let mut b = encoded(FermionFormat::PACKED20, &[1.0f64; 6]);
    b[15] = 255;
    assert!(corrupt(FermionFormat::PACKED20, &b, 6).contains("exponent"));
    let mut b = encoded(FermionFormat::PACKED20, &[0.0f64; 6]);
    b[0] = 1;
    assert!(corrupt(FermionFormat::PACKED20, &b, 6).contains("zero group"));
    let mut b = encoded(FermionFormat::PACKED20, &[1.0f64; 4]);
    b[11] = 0x10; // bits 88..96 lie in real 4, a padding slot of a 4-real site
    assert!(corrupt(FermionFormat::PACKED20, &b, 4).contains("padding"));
    let mut b = encoded(FermionFormat::PACKED30, &[1.0f64; 6]);
    b[16..20].copy_from_slice(&(1u32 << 31).to_le_bytes());
    assert!(corrupt(FermionFormat::PACKED30, &b, 6).contains("word 4"));
    let mut b = encoded(FermionFormat::PACKED30, &[1.0f64; 6]);
    let word0 = (1u32 << 29) | ((b[3] as u32 & 0xc0) << 24); // −2^29, exponent bits kept
    b[0..4].copy_from_slice(&word0.to_le_bytes());
    assert!(corrupt(FermionFormat::PACKED30, &b, 6).contains("component 0"));
}
