//! The checksums of the gauge-file formats.
//!
//! * MILC v5: with w_k the k-th 32-bit word of the payload (read in the file's byte order),
//!   `sum29 = ⊕_k rotl(w_k, k mod 29)`, `sum31 = ⊕_k rotl(w_k, k mod 31)`.
//! * NERSC: `CHECKSUM = Σ_k w_k mod 2³²` over the 32-bit words of the payload after
//!   conversion to host byte order. A 64-bit real contributes its low and its high word
//!   (the sum does not depend on which comes first, so it is the same on every host).
//! * SciDAC (and ILDG files carrying a `scidac-checksum` record): with c_r the CRC-32
//!   (zlib polynomial) of the stored bytes of the site with global lexicographic index r,
//!   `suma = ⊕_r rotl(c_r, r mod 29)`, `sumb = ⊕_r rotl(c_r, r mod 31)`.

use super::bytes::{decode_real_bits, u32_words, ByteOrder, Precision};

/// A pair of rotated-XOR sums (MILC's sum29/sum31, SciDAC's suma/sumb).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RotatedSums {
    /// `⊕ rotl(v_k, k mod 29)`.
    pub mod29: u32,
    /// `⊕ rotl(v_k, k mod 31)`.
    pub mod31: u32,
}

impl RotatedSums {
    /// The sums of a sequence of values v_k, k = 0, 1, ….
    pub fn of(values: impl Iterator<Item = u32>) -> Self {
        let mut s = Self { mod29: 0, mod31: 0 };
        for (k, v) in values.enumerate() {
            s.mod29 ^= v.rotate_left((k % 29) as u32);
            s.mod31 ^= v.rotate_left((k % 31) as u32);
        }
        s
    }
}

/// MILC's sum29/sum31 of a payload whose words are stored in `order`.
pub fn milc_checksum(payload: &[u8], order: ByteOrder) -> RotatedSums {
    RotatedSums::of(u32_words(payload, order))
}

/// NERSC's CHECKSUM: the wrapping sum of the payload's 32-bit words after byte conversion.
pub fn nersc_checksum(payload: &[u8], precision: Precision, order: ByteOrder) -> u32 {
    payload
        .chunks_exact(precision.bytes())
        .map(|c| decode_real_bits(c, precision, order))
        .fold(0u32, |s, bits| {
            s.wrapping_add(bits as u32)
                .wrapping_add((bits >> 32) as u32)
        })
}

/// SciDAC's suma/sumb of a payload of sites with `site_bytes` bytes each, in global
/// lexicographic order.
pub fn scidac_checksum(payload: &[u8], site_bytes: usize) -> RotatedSums {
    RotatedSums::of(payload.chunks_exact(site_bytes.max(1)).map(crc32fast::hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_sums_follow_the_definition() {
        // Hand-computed: v = [1, 1, 0x80000000]: mod29 = 1 ^ 2 ^ rotl(0x80000000, 2) = 1^2^2 = 1.
        let s = RotatedSums::of([1u32, 1, 0x8000_0000].into_iter());
        assert_eq!(s.mod29, 1);
        assert_eq!(s.mod31, 1);
        // Index 29 rotates by 0 under mod 29 but by 29 under mod 31.
        let v: Vec<u32> = (0..30).map(|k| if k == 29 { 1 } else { 0 }).collect();
        let s = RotatedSums::of(v.into_iter());
        assert_eq!((s.mod29, s.mod31), (1, 1 << 29));
    }

    #[test]
    fn nersc_sum_adds_both_halves_of_doubles() {
        // 1.0f64 = 0x3ff0000000000000: words 0 and 0x3ff00000.
        let mut p = 1.0f64.to_be_bytes().to_vec();
        p.extend_from_slice(&2.0f64.to_be_bytes()); // 0x4000000000000000
        assert_eq!(
            nersc_checksum(&p, Precision::Double, ByteOrder::Big),
            0x3ff0_0000u32.wrapping_add(0x4000_0000)
        );
        let q = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2];
        assert_eq!(nersc_checksum(&q, Precision::Single, ByteOrder::Big), 1);
    }

    #[test]
    fn crc_is_zlib_crc32() {
        // The standard check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
        let s = scidac_checksum(b"123456789", 9);
        assert_eq!((s.mod29, s.mod31), (0xcbf4_3926, 0xcbf4_3926));
    }
}
