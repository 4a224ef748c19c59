//! The device image is placed where the layout says, and the generated kernels'
//! fixed-point and recon-12 arithmetic (emulated) equals qdsl-core's bit for bit.

use super::emulate::*;
use super::*;
use qdsl_core::field::{haar_su3, RandomStream, StreamDomain};
use qdsl_core::format::FermionFormat;
use qdsl_core::format::{Compression, FixedWidth, LinkFormat, LinkStorage};

fn stream(i: u64) -> RandomStream {
    RandomStream::new(7, StreamDomain::User(42), i)
}

/// Gaussian reals with a per-site magnitude spread over 80 decades, and special sites:
/// all zero, one non-zero, huge, tiny (subnormal in f32).
fn sites(n: usize, reals: usize) -> Vec<Vec<f64>> {
    let mut out = vec![vec![0.0; reals], {
        let mut v = vec![0.0; reals];
        v[reals - 1] = -0.75;
        v
    }];
    out.push((0..reals).map(|k| 1e30 * (k as f64 - 2.5)).collect());
    out.push((0..reals).map(|k| 1e-42 * (k as f64 + 1.0)).collect());
    for i in 0..n {
        let mut s = stream(i as u64);
        let scale = 10f64.powi((s.uniform() * 80.0) as i32 - 40);
        out.push((0..reals).map(|_| s.gaussian_pair().0 * scale).collect());
    }
    out
}

#[test]
fn the_image_puts_each_real_at_its_documented_offset() {
    let l = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 24, 3).unwrap();
    let host: Vec<f64> = (0..3 * 24).map(|i| i as f64 + 0.5).collect();
    let img = encode_image(&l, &host).unwrap();
    assert_eq!(img.values.len(), 6 * 32 * 16);
    for site in 0..3 {
        for k in 0..24 {
            // f32 Wilson: float4 chunks, stride 32 → ((k/4)·32 + site)·16 + (k%4)·4.
            let at = ((k / 4) * 32 + site) * 16 + (k % 4) * 4;
            let v = f32::from_le_bytes(img.values[at..at + 4].try_into().unwrap());
            assert_eq!(v as f64, host[site * 24 + k]);
        }
    }
    // Everything else is padding and zero: 3 sites × 24 reals × 4 bytes are set.
    let nonzero = img
        .values
        .chunks(4)
        .filter(|c| c.iter().any(|&b| b != 0))
        .count();
    assert_eq!(nonzero, 72);
    assert_eq!(decode_image::<f64>(&l, &img).unwrap(), host);
    assert!(matches!(
        encode_image(&l, &host[1..]),
        Err(ImageError::Length {
            expected: 72,
            found: 71,
            ..
        })
    ));
}

#[test]
fn images_round_trip_within_each_format_bound() {
    for f in FermionFormat::ALL {
        let Ok(l) = DeviceLayout::new(DeviceFormat::Fermion(f), 6, 40) else {
            continue;
        };
        // Magnitudes 1e−3 … 1e3: within every format's range (f16 stops at 65504).
        let data: Vec<f64> = (0..40u64)
            .flat_map(|i| {
                let mut s = stream(5000 + i);
                let scale = 10f64.powf(s.uniform() * 6.0 - 3.0);
                (0..6)
                    .map(move |_| s.gaussian_pair().0 * scale)
                    .collect::<Vec<_>>()
            })
            .collect();
        let img = encode_image(&l, &data).unwrap();
        let back = decode_image::<f64>(&l, &img).unwrap();
        for (site, (a, b)) in data.chunks(6).zip(back.chunks(6)).enumerate() {
            let m = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let bound = f.error_bound::<f64>(m);
            for (x, y) in a.iter().zip(b) {
                assert!(
                    (x - y).abs() <= bound,
                    "{f} site {site}: {x} → {y}, bound {bound}"
                );
            }
        }
        assert_eq!(
            img.norms.len(),
            if f.name().starts_with("fixed") { 40 } else { 0 }
        );
    }
}

#[test]
fn fixed_fermion_arithmetic_matches_the_core_bit_for_bit() {
    for w in [FixedWidth::Bits16, FixedWidth::Bits8] {
        let f = FermionFormat::Fixed(w);
        let b = w.bytes();
        for site in sites(500, 24) {
            let mut bytes = vec![0u8; f.bytes_per_site(24)];
            if f.encode(&site, &mut bytes).is_err() {
                continue; // the 1e30 site overflows nothing here, but be general
            }
            let norm = f32::from_le_bytes(bytes[..4].try_into().unwrap());
            let ints: Vec<i32> = bytes[4..]
                .chunks(b)
                .map(|c| {
                    if b == 2 {
                        i16::from_le_bytes([c[0], c[1]]) as i32
                    } else {
                        c[0] as i8 as i32
                    }
                })
                .collect();
            let (enorm, eints) = fixed_fermion_encode(w, &site);
            assert_eq!(
                (enorm.to_bits(), &eints),
                (norm.to_bits(), &ints),
                "{f} {site:?}"
            );
            let mut core64 = vec![0.0f64; 24];
            f.decode(&bytes, &mut core64).unwrap();
            let emu64 = fixed_decode::<f64>(w, Some(norm), &ints);
            assert_eq!(bits64(&core64), bits64(&emu64));
            let mut core32 = vec![0.0f32; 24];
            f.decode(&bytes, &mut core32).unwrap();
            let emu32 = fixed_decode::<f32>(w, Some(norm), &ints);
            assert_eq!(bits32(&core32), bits32(&emu32));
        }
    }
}

fn bits64(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn round_up_to_f32_is_the_smallest_f32_not_below() {
    for m in [
        0.0,
        1.0,
        1.0 + 1e-12,
        3.4e38,
        1e-45,
        0.1,
        f64::from(f32::MAX) * (1.0 + 1e-9),
    ] {
        let r = double2float_ru(m);
        assert!(r as f64 >= m, "{m}");
        if r > 0.0 && r.is_finite() {
            assert!((f32::from_bits(r.to_bits() - 1) as f64) < m, "{m}");
        }
    }
    assert!(double2float_ru(f64::from(f32::MAX) * 1.5).is_infinite());
}

#[test]
fn fixed_links_and_recon12_match_the_core_bit_for_bit() {
    for i in 0..300u64 {
        let u = haar_su3(&mut stream(1000 + i));
        for w in [FixedWidth::Bits16, FixedWidth::Bits8] {
            let l = LinkFormat::new(LinkStorage::Fixed(w), Compression::Full);
            let mut bytes = vec![0u8; l.bytes_per_link()];
            l.encode_checked(&u, LinkSign::Plus, SuCheck::Skip, &mut bytes)
                .unwrap();
            let ints: Vec<i32> = bytes
                .chunks(w.bytes())
                .map(|c| {
                    if w.bytes() == 2 {
                        i16::from_le_bytes([c[0], c[1]]) as i32
                    } else {
                        c[0] as i8 as i32
                    }
                })
                .collect();
            let emu: Vec<i32> = u
                .to_reals()
                .iter()
                .map(|&v| fixed_link_encode(w, v))
                .collect();
            assert_eq!(ints, emu);
            let core = l.decode::<f32>(&bytes, LinkSign::Plus).unwrap().to_reals();
            assert_eq!(bits32(&core), bits32(&fixed_decode::<f32>(w, None, &ints)));
        }
        // Recon 12 in f64 storage: row 2 rebuilt in f32 and in f64.
        let l = LinkFormat::new(LinkStorage::F64, Compression::Recon12);
        let mut bytes = vec![0u8; l.bytes_per_link()];
        l.encode_checked(&u, LinkSign::Plus, SuCheck::Skip, &mut bytes)
            .unwrap();
        let core64 = l.decode::<f64>(&bytes, LinkSign::Plus).unwrap().to_reals();
        let mut rows: [f64; 12] = [0.0; 12];
        rows.copy_from_slice(&core64[..12]);
        assert_eq!(bits64(&core64[12..]), bits64(&recon12_row2(&rows)));
        let core32 = l.decode::<f32>(&bytes, LinkSign::Plus).unwrap().to_reals();
        let mut rows32 = [0.0f32; 12];
        rows32.copy_from_slice(&core32[..12]);
        assert_eq!(bits32(&core32[12..]), bits32(&recon12_row2(&rows32)));
    }
}
