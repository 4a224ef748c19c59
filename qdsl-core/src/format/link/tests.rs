//! Tests of the link formats: byte sizes, hand-computed parameters, the per-link bounds on
//! Haar-random and near-identity SU(3) links (f64 and f32), signs, and refusals.

use super::*;
use crate::format::testing::{det, haar_su3, near_identity_su3, TestRng};
use num_complex::Complex;

fn all_formats() -> impl Iterator<Item = LinkFormat> {
    LinkStorage::ALL
        .into_iter()
        .flat_map(|s| Compression::ALL.map(|c| LinkFormat::new(s, c)))
}

fn round_trip<T: Real>(
    f: LinkFormat,
    link: &ColourMatrix<T>,
    sign: LinkSign,
    check: SuCheck,
) -> Result<ColourMatrix<T>, FormatError> {
    let mut bytes = vec![0u8; f.bytes_per_link()];
    f.encode_checked(link, sign, check, &mut bytes)?;
    f.decode(&bytes, sign)
}

fn max_diff(a: &ColourMatrix<f64>, b: &ColourMatrix<f64>) -> f64 {
    (*a - *b).max_abs_component()
}

/// Round-trips `links` (references in f64, encoded from their rounding to `T`) and checks
/// every link against its bound. Returns (worst error/bound, links whose bound is ∞).
fn worst_ratio<T: Real>(
    f: LinkFormat,
    links: &[ColourMatrix<f64>],
    sign: LinkSign,
) -> (f64, usize) {
    let mut worst = 0.0f64;
    let mut unbounded = 0;
    for reference in links {
        let l = reference.scale(sign.value()).cast::<T>();
        let back = round_trip(f, &l, sign, SuCheck::Skip).unwrap_or_else(|e| panic!("{f}: {e}"));
        let err = max_diff(&back.cast(), &reference.scale(sign.value()));
        let bound = f.error_bound::<T>(&reference.scale(sign.value()));
        if bound.is_infinite() {
            unbounded += 1;
            continue;
        }
        assert!(
            err <= bound,
            "{f} ({}): error {err:e} > bound {bound:e} for {reference:?}",
            T::NAME
        );
        if bound > 0.0 {
            worst = worst.max(err / bound);
        }
    }
    (worst, unbounded)
}

#[test]
fn bytes_per_link_match_hand_counts() {
    // (storage, recon 18, 12, 8)
    let table = [
        (LinkStorage::F64, 144, 96, 64),
        (LinkStorage::F32, 72, 48, 32),
        (LinkStorage::F16, 36, 24, 16),
        (LinkStorage::BF16, 36, 24, 16),
        (LinkStorage::FIXED16, 36, 24, 16),
        (LinkStorage::FIXED8, 18, 12, 8),
    ];
    for (s, full, r12, r8) in table {
        let bytes = Compression::ALL.map(|c| LinkFormat::new(s, c).bytes_per_link());
        assert_eq!(bytes, [full, r12, r8], "{s}");
        assert_eq!(LinkStorage::from_name(s.name()), Some(s));
    }
    assert_eq!(
        LinkFormat::new(LinkStorage::F16, Compression::Recon8).name(),
        "f16/recon8"
    );
}

/// True when the storage, not the compute type's own rounding, dominates the error: there
/// the bounds must be tight (measured ≥ bound/4). At the rounding level of `T` itself the
/// bounds carry safety factors and are only checked as bounds.
fn storage_dominated<T: Real>(s: LinkStorage) -> bool {
    match s {
        LinkStorage::Float(w) => !w.holds::<T>(),
        LinkStorage::Fixed(_) => true,
    }
}

#[test]
fn haar_random_links_round_trip_within_their_bounds_and_the_bounds_are_tight() {
    let mut rng = TestRng::new(11);
    let links: Vec<ColourMatrix<f64>> = (0..3000).map(|_| haar_su3(&mut rng)).collect();
    for f in all_formats() {
        for sign in [LinkSign::Plus, LinkSign::Minus] {
            let (r64, inf64) = worst_ratio::<f64>(f, &links, sign);
            let (r32, inf32) = worst_ratio::<f32>(f, &links, sign);
            assert_eq!(
                (inf64, inf32),
                (0, 0),
                "{f}: Haar links should have finite bounds"
            );
            if storage_dominated::<f64>(f.storage) {
                assert!(
                    r64 >= 0.25,
                    "{f} f64: bound is loose, worst error/bound {r64}"
                );
            }
            if storage_dominated::<f32>(f.storage) || f.compression == Compression::Full {
                assert!(
                    r32 >= 0.25,
                    "{f} f32: bound is loose, worst error/bound {r32}"
                );
            }
        }
    }
}

#[test]
fn reconstructed_links_are_special_unitary() {
    let mut rng = TestRng::new(12);
    for _ in 0..1000 {
        let v = haar_su3(&mut rng);
        for c in [Compression::Recon12, Compression::Recon8] {
            let back = round_trip(
                LinkFormat::new(LinkStorage::F64, c),
                &v,
                LinkSign::Plus,
                SuCheck::default(),
            )
            .unwrap();
            assert!(back.unitarity_deviation() < 1e-13, "{c:?}");
            assert!(
                (det(&back) - Complex::new(1.0, 0.0)).norm() < 1e-13,
                "{c:?}"
            );
            assert!(max_diff(&back, &v) < 1e-12, "{c:?}");
        }
    }
}

#[test]
fn near_identity_links_stay_within_bounds_and_recon8_degrades_as_documented() {
    let mut rng = TestRng::new(13);
    let epsilons = [0.3, 0.1, 0.03, 0.01, 0.003, 0.001];
    let sets: Vec<Vec<ColourMatrix<f64>>> = epsilons
        .iter()
        .map(|&eps| (0..300).map(|_| near_identity_su3(&mut rng, eps)).collect())
        .collect();
    for f in all_formats() {
        for links in &sets {
            worst_ratio::<f64>(f, links, LinkSign::Plus);
            worst_ratio::<f32>(f, links, LinkSign::Minus);
        }
    }
    // Measured errors at ε = 0.3 and 0.003, f32 compute. Fixed point has an absolute
    // error 1/(2Q) on the small elements v01, v02, which recon 8 divides by r ∝ ε: it
    // degrades near the identity while recon 12 does not. Float storage rounds the small
    // elements relatively and keeps recon 8 accurate there.
    let worst = |s: LinkStorage, c: Compression, links: &[ColourMatrix<f64>]| {
        let f = LinkFormat::new(s, c);
        links.iter().fold(0.0f64, |m, v| {
            let back = round_trip(f, &v.cast::<f32>(), LinkSign::Plus, SuCheck::Skip).unwrap();
            m.max(max_diff(&back.cast(), v))
        })
    };
    let (wide, near) = (&sets[0], &sets[4]);
    let fixed = LinkStorage::FIXED16;
    let (r12_wide, r12_near) = (
        worst(fixed, Compression::Recon12, wide),
        worst(fixed, Compression::Recon12, near),
    );
    let (r8_wide, r8_near) = (
        worst(fixed, Compression::Recon8, wide),
        worst(fixed, Compression::Recon8, near),
    );
    let (f16_wide, f16_near) = (
        worst(LinkStorage::F16, Compression::Recon8, wide),
        worst(LinkStorage::F16, Compression::Recon8, near),
    );
    assert!(
        r12_near < 2.0 * r12_wide && r12_wide < 4.0 / 32767.0,
        "{r12_wide:e} {r12_near:e}"
    );
    assert!(
        r8_near > 20.0 * r8_wide,
        "fixed-point recon8 should degrade near the identity: {r8_wide:e} → {r8_near:e}"
    );
    assert!(
        f16_near < 2.0 * f16_wide,
        "f16 recon8 should not degrade: {f16_wide:e} → {f16_near:e}"
    );
    // Where the bound gives up (D ≥ r²), the round-trip check refuses the link instead.
    let f = LinkFormat::new(LinkStorage::FIXED8, Compression::Recon8);
    // (At ε = 0.001 the small elements quantise to 0 in 8 bits and the degenerate branch
    // returns a matrix O(ε) away; the trouble is at ε ≈ the quantisation step.)
    let hopeless: Vec<&ColourMatrix<f64>> = sets[2..5]
        .iter()
        .flatten()
        .filter(|v| f.error_bound::<f64>(v).is_infinite())
        .collect();
    assert!(!hopeless.is_empty());
    let refused = hopeless
        .iter()
        .filter(|v| {
            let mut bytes = vec![0u8; f.bytes_per_link()];
            matches!(
                f.encode_checked(*v, LinkSign::Plus, SuCheck::RoundTrip(0.02), &mut bytes),
                Err(FormatError::Reconstruction { found, .. }) if found > 0.02
            )
        })
        .count();
    assert!(
        refused > 0,
        "none of {} near-degenerate links was refused",
        hopeless.len()
    );
}

#[test]
fn the_identity_survives_every_format() {
    let one64 = ColourMatrix::<f64>::identity();
    let one32 = ColourMatrix::<f32>::identity();
    for f in all_formats() {
        for sign in [LinkSign::Plus, LinkSign::Minus] {
            let l64 = one64.scale(sign.value());
            let l32 = one32.scale(sign.value());
            let b64 = round_trip(f, &l64, sign, SuCheck::default()).unwrap();
            let b32 = round_trip(f, &l32, sign, SuCheck::default()).unwrap();
            if let LinkStorage::Float(_) = f.storage {
                // 0 and ±1 are exact in every width; recon 8 takes its degenerate branch.
                assert_eq!((b64, b32), (l64, l32), "{f}");
            } else {
                // ±1 is stored as ±Q and decoded as Q·fl(1/Q).
                assert!(max_diff(&b64, &l64) <= 4.0 * f64::EPSILON, "{f}");
                assert!(
                    max_diff(&b32.cast(), &l32.cast()) <= 4.0 * f32::EPSILON as f64,
                    "{f}"
                );
            }
        }
    }
}

#[test]
fn stored_reals_match_hand_computed_parameters() {
    // V = [[0, e^{iα}, 0], [0, 0, e^{iβ}], [e^{iγ}, 0, 0]], γ = −α − β: an even permutation
    // times phases, so det V = 1.
    let (alpha, beta) = (0.5f64, -1.2f64);
    let gamma = -alpha - beta;
    let z = Complex::<f64>::new(0.0, 0.0);
    let e = |t: f64| Complex::new(t.cos(), t.sin());
    let v = ColourMatrix([[z, e(alpha), z], [z, z, e(beta)], [e(gamma), z, z]]);
    let read_f64 = |bytes: &[u8]| -> Vec<f64> {
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    // Recon 8: [arg v00/π, arg v20/π, v01, v02, v10] = [0, γ/π, cos α, sin α, 0, 0, 0, 0].
    let f = LinkFormat::new(LinkStorage::F64, Compression::Recon8);
    let mut bytes = vec![0u8; 64];
    f.encode(&v, LinkSign::Plus, &mut bytes).unwrap();
    let expected = [
        0.0,
        gamma / std::f64::consts::PI,
        alpha.cos(),
        alpha.sin(),
        0.0,
        0.0,
        0.0,
        0.0,
    ];
    for (got, want) in read_f64(&bytes).iter().zip(expected) {
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }
    // |v00| = 0 and |v20| = 1 come back from the square roots; the block from the formulas.
    assert!(max_diff(&f.decode::<f64>(&bytes, LinkSign::Plus).unwrap(), &v) < 1e-15);
    // The sign: −V with s = −1 stores exactly the bytes of V.
    let mut neg = vec![0u8; 64];
    f.encode(&v.scale(-1.0), LinkSign::Minus, &mut neg).unwrap();
    assert_eq!(neg, bytes);
    // Recon 12 in f32: the first 12 reals (rows 0 and 1), little-endian.
    let f = LinkFormat::new(LinkStorage::F32, Compression::Recon12);
    let v32 = v.cast::<f32>();
    let mut bytes = vec![0u8; 48];
    f.encode(&v32, LinkSign::Plus, &mut bytes).unwrap();
    let expected: Vec<u8> = v32.to_reals()[..12]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(bytes, expected);
    // Fixed 8 bits, recon 18: q = round(127·v); cos 0.5 · 127 = 111.45 → 111.
    let f = LinkFormat::new(LinkStorage::FIXED8, Compression::Full);
    let mut bytes = vec![0u8; 18];
    f.encode(&v, LinkSign::Plus, &mut bytes).unwrap();
    assert_eq!(bytes[2] as i8, 111);
    assert_eq!(bytes[3] as i8, (127.0 * alpha.sin()).round() as i8);
}

#[test]
fn signs_u3_links_and_non_unitary_matrices() {
    let mut rng = TestRng::new(14);
    let v = haar_su3(&mut rng);
    let minus_v = v.scale(-1.0);
    for c in [Compression::Recon12, Compression::Recon8] {
        let f = LinkFormat::new(LinkStorage::F32, c);
        let mut bytes = vec![0u8; f.bytes_per_link()];
        // −V with the right sign: fine; decoding with the wrong sign gives exactly +V̂.
        f.encode(&minus_v, LinkSign::Minus, &mut bytes).unwrap();
        let right = f.decode::<f64>(&bytes, LinkSign::Minus).unwrap();
        assert!(max_diff(&right, &minus_v) < 1e-6);
        assert_eq!(
            f.decode::<f64>(&bytes, LinkSign::Plus).unwrap(),
            right.scale(-1.0)
        );
        // −V claimed to be +SU(3): det = −1, refused.
        let err = f.encode(&minus_v, LinkSign::Plus, &mut bytes).unwrap_err();
        assert!(
            matches!(err, FormatError::NotSpecialUnitary { det_error, .. } if (det_error - 2.0).abs() < 1e-9),
            "{err}"
        );
        // A U(3) link e^{0.2i}·V (det = e^{0.6i}) and a non-unitary 1.1·V are refused.
        let u3 = v.scale_complex(Complex::new(0.2f64.cos(), 0.2f64.sin()));
        assert!(matches!(
            f.encode(&u3, LinkSign::Plus, &mut bytes),
            Err(FormatError::NotSpecialUnitary { .. })
        ));
        let err = f
            .encode(&v.scale(1.1), LinkSign::Plus, &mut bytes)
            .unwrap_err();
        assert!(err.to_string().contains("not in SU(3)"), "{err}");
        // Without the check they are stored, and come back as a different matrix.
        f.encode_checked(&u3, LinkSign::Plus, SuCheck::Skip, &mut bytes)
            .unwrap();
        assert!(max_diff(&f.decode(&bytes, LinkSign::Plus).unwrap(), &u3) > 0.05);
        // The round-trip check refuses it too.
        let err = f
            .encode_checked(&u3, LinkSign::Plus, SuCheck::RoundTrip(1e-3), &mut bytes)
            .unwrap_err();
        assert!(
            matches!(err, FormatError::Reconstruction { found, .. } if found > 0.05),
            "{err}"
        );
    }
    // Recon 18 stores anything finite (fixed point: within ±1), and ignores the sign.
    let f = LinkFormat::new(LinkStorage::F32, Compression::Full);
    let mut bytes = vec![0u8; 72];
    let u3 = v.scale_complex(Complex::new(0.0, 1.0)).scale(1.7);
    f.encode(&u3, LinkSign::Minus, &mut bytes).unwrap();
    assert!(max_diff(&f.decode(&bytes, LinkSign::Plus).unwrap(), &u3) < 1e-6);
    // f32 links (unitary to ~1e-7) pass the default check.
    for _ in 0..1000 {
        let l = haar_su3(&mut rng).cast::<f32>();
        for c in [Compression::Recon12, Compression::Recon8] {
            let f = LinkFormat::new(LinkStorage::F16, c);
            let mut bytes = vec![0u8; f.bytes_per_link()];
            f.encode(&l, LinkSign::Plus, &mut bytes).unwrap();
        }
    }
}

#[test]
fn recon8_degenerate_branch_is_exact_only_where_documented() {
    let (c, s) = (0.8f64.cos(), 0.8f64.sin());
    let z = Complex::new(0.0, 0.0);
    let one = Complex::new(1.0, 0.0);
    // diag(e^{iα}, e^{−iα}, 1): r = 0, block diag(conj v00, 1) is right.
    let good = ColourMatrix([
        [Complex::new(c, s), z, z],
        [z, Complex::new(c, -s), z],
        [z, z, one],
    ]);
    // diag(e^{iα}, 1, e^{−iα}): also SU(3), but the block is not diag(conj v00, 1).
    let bad = ColourMatrix([
        [Complex::new(c, s), z, z],
        [z, one, z],
        [z, z, Complex::new(c, -s)],
    ]);
    let f = LinkFormat::new(LinkStorage::F64, Compression::Recon8);
    assert!(f.error_bound::<f64>(&good).is_infinite());
    let back = round_trip(f, &good, LinkSign::Plus, SuCheck::RoundTrip(1e-12)).unwrap();
    assert!(max_diff(&back, &good) < 1e-15);
    // The SU(3) check passes `bad` (it is SU(3)); the round-trip check does not.
    let back = round_trip(f, &bad, LinkSign::Plus, SuCheck::default()).unwrap();
    assert!(max_diff(&back, &bad) > 0.5);
    let err = round_trip(f, &bad, LinkSign::Plus, SuCheck::RoundTrip(1e-6)).unwrap_err();
    assert!(matches!(err, FormatError::Reconstruction { .. }), "{err}");
}

#[test]
fn out_of_range_non_finite_and_corrupt_input_are_errors() {
    // Fixed point accepts |v·Q| < Q + ½ only.
    let f = LinkFormat::new(LinkStorage::FIXED16, Compression::Full);
    let mut bytes = vec![0u8; 36];
    let q = 32767.0;
    let mut m = ColourMatrix::<f64>::identity();
    m.0[0][0].re = 1.0 + 0.4 / q;
    f.encode(&m, LinkSign::Plus, &mut bytes).unwrap();
    assert_eq!(&bytes[..2], &32767i16.to_le_bytes());
    m.0[1][2].im = -(1.0 + 0.6 / q);
    let err = f.encode(&m, LinkSign::Plus, &mut bytes).unwrap_err();
    assert!(
        matches!(err, FormatError::OutOfRange { component: 11, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("component 11"));
    // NaN / ∞ anywhere is refused by every format, naming the real.
    let mut m = ColourMatrix::<f32>::identity();
    m.0[2][1].re = f32::NAN;
    for f in all_formats() {
        let mut bytes = vec![0u8; f.bytes_per_link()];
        let err = f.encode(&m, LinkSign::Plus, &mut bytes).unwrap_err();
        assert!(
            matches!(err, FormatError::NonFinite { component: 14, .. }),
            "{f}: {err}"
        );
        // Wrong buffer sizes.
        let mut short = vec![0u8; f.bytes_per_link() + 1];
        assert!(matches!(
            f.encode(&ColourMatrix::<f32>::identity(), LinkSign::Plus, &mut short),
            Err(FormatError::BufferSize { expected, found, .. }) if expected + 1 == found
        ));
        assert!(f.decode::<f32>(&short, LinkSign::Plus).is_err());
    }
    // The unused integer −2^(b−1) is corrupt data.
    let f = LinkFormat::new(LinkStorage::FIXED8, Compression::Recon12);
    let mut bytes = vec![0u8; 12];
    f.encode(&ColourMatrix::<f64>::identity(), LinkSign::Plus, &mut bytes)
        .unwrap();
    bytes[3] = 0x80;
    let err = f.decode::<f64>(&bytes, LinkSign::Plus).unwrap_err();
    assert!(
        matches!(&err, FormatError::Corrupt { detail, .. } if detail.contains("stored real 3")),
        "{err}"
    );
}
