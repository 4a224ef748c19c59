//! The device layout: DESIGN.md's structure of arrays in chunks, generalised from
//! [`qdsl_core::dsl::layout::SoaLayout`] to every storage width.
//!
//! A record (a site of a fermion field; one link of a gauge field) has R stored reals of
//! b bytes. f32 and f64 records follow SoaLayout: H = ⌊R·b/16⌋ chunks of W = 16 bytes,
//! then, where 16 does not divide R·b, an 8-byte tail kept in its own array after all
//! the head arrays. Every other format is cut into chunks of W bytes, W the largest of
//! 16, 8, 4, 2, 1 that divides R·b, and has no tail (the one chunk rule,
//! `qdsl_core::dsl::codec::chunking`). Stored real k of record (site i,
//! sub-record μ of S) lies at byte
//!
//! offset(i, μ, k) = ((μ·H + ⌊k/P⌋)·stride + i)·W + (k mod P)·b        (k < H·P),
//! offset(i, μ, k) = S·H·stride·W + (μ·stride + i)·T + (k − H·P)·b      (the tail),
//!
//! with P = W/b reals per chunk, T the tail's bytes, μ = 0 for fermions and the direction
//! for links (the gauge rule of SoaLayout), and stride = the sites rounded up to a
//! multiple of 32, so that every chunk array starts 512-byte aligned. The f32 norms of
//! fixed-point fermions are a separate array, one per site. Packed fermions (packed20,
//! packed30) store the 32-bit words of their ⌈N/6⌉ groups as the "reals" (b = 4, R =
//! 4 or 6 words per group), in the byte order of `qdsl_core::format`'s record.

use super::format::{DeviceFormat, StoredReal, UnsupportedFormat};
use qdsl_core::format::FloatWidth;

/// The shape of one device field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLayout {
    /// Storage format.
    pub format: DeviceFormat,
    /// Sites.
    pub sites: usize,
    /// Sites per chunk array (≥ sites, a multiple of 32).
    pub stride: usize,
    /// Records per site (4 for gauge fields).
    pub subs: usize,
    /// Host reals per record (18 for links).
    pub host_reals: usize,
    /// Stored reals per record.
    pub stored_reals: usize,
    /// Bytes per stored real.
    pub real_bytes: usize,
    /// Chunk width W in bytes (of the head chunks).
    pub chunk_bytes: usize,
    /// Bytes of the tail of an f32/f64 record (R·b mod 16; 0 for the other formats).
    pub tail_bytes: usize,
}

impl DeviceLayout {
    /// The layout of `sites` sites in `format`, with `fermion_reals` reals per fermion
    /// site (ignored for gauge fields).
    pub fn new(
        format: DeviceFormat,
        fermion_reals: usize,
        sites: usize,
    ) -> Result<Self, UnsupportedFormat> {
        let real_bytes = format.stored_real()?.bytes();
        let stored_reals = format.stored_reals(fermion_reals);
        let record = stored_reals * real_bytes;
        let float = matches!(
            format.stored_real()?,
            StoredReal::Float(FloatWidth::F32 | FloatWidth::F64)
        );
        let chunking = qdsl_core::dsl::codec::chunking(record, float);
        let (chunk_bytes, tail_bytes) = (chunking.chunk_bytes, chunking.tail_bytes);
        Ok(Self {
            format,
            sites,
            stride: sites.div_ceil(32) * 32,
            subs: format.records_per_site(),
            host_reals: format.host_reals(fermion_reals),
            stored_reals,
            real_bytes,
            chunk_bytes,
            tail_bytes,
        })
    }

    /// Reals per chunk, P = W/b.
    pub fn reals_per_chunk(&self) -> usize {
        self.chunk_bytes / self.real_bytes
    }

    /// Head chunks per record, H = ⌊R/P⌋ (all of them for a format without a tail).
    pub fn head_chunks(&self) -> usize {
        (self.stored_reals * self.real_bytes - self.tail_bytes) / self.chunk_bytes
    }

    /// Chunks per record, the head's and the tail's.
    pub fn chunks(&self) -> usize {
        self.head_chunks() + usize::from(self.tail_bytes > 0)
    }

    /// Bytes of the value arrays: subs · stride · (H · W + T).
    pub fn value_bytes(&self) -> usize {
        self.subs * self.stride * (self.head_chunks() * self.chunk_bytes + self.tail_bytes)
    }

    /// Bytes of the norm array (4 per site for fixed-point fermions, else 0).
    pub fn norm_bytes(&self) -> usize {
        if self.format.has_norm() {
            4 * self.sites
        } else {
            0
        }
    }

    /// Byte offset of stored real `k` of record (`site`, `sub`) (see the module doc).
    pub fn byte_offset(&self, site: usize, sub: usize, k: usize) -> usize {
        let (p, h) = (self.reals_per_chunk(), self.head_chunks());
        if k < h * p {
            ((sub * h + k / p) * self.stride + site) * self.chunk_bytes + (k % p) * self.real_bytes
        } else {
            self.subs * h * self.stride * self.chunk_bytes
                + (sub * self.stride + site) * self.tail_bytes
                + (k - h * p) * self.real_bytes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::layout::SoaLayout;
    use qdsl_core::dsl::variant::StorageFormat;
    use qdsl_core::format::{Compression, FermionFormat, LinkFormat, LinkStorage};

    #[test]
    fn agrees_with_the_dsl_layout_for_f32_and_f64() {
        let cases = [
            (
                DeviceFormat::Fermion(FermionFormat::F32),
                24,
                StorageFormat::F32,
            ),
            (
                DeviceFormat::Fermion(FermionFormat::F64),
                24,
                StorageFormat::F64,
            ),
            (
                DeviceFormat::Fermion(FermionFormat::F32),
                6,
                StorageFormat::F32,
            ),
            (
                DeviceFormat::Fermion(FermionFormat::F64),
                6,
                StorageFormat::F64,
            ),
            (
                DeviceFormat::Link(LinkFormat::new(LinkStorage::F32, Compression::Recon12)),
                0,
                StorageFormat::F32,
            ),
            (
                DeviceFormat::Link(LinkFormat::new(LinkStorage::F32, Compression::Recon8)),
                0,
                StorageFormat::F32,
            ),
            (
                DeviceFormat::Link(LinkFormat::new(LinkStorage::F64, Compression::Recon8)),
                0,
                StorageFormat::F64,
            ),
            (
                DeviceFormat::Link(LinkFormat::new(LinkStorage::F32, Compression::Full)),
                0,
                StorageFormat::F32,
            ),
            (
                DeviceFormat::Link(LinkFormat::new(LinkStorage::F64, Compression::Full)),
                0,
                StorageFormat::F64,
            ),
        ];
        for (format, reals, soa_format) in cases {
            let l = DeviceLayout::new(format, reals, 100).unwrap();
            let soa = SoaLayout::new(l.stored_reals, soa_format);
            assert_eq!(
                (l.head_chunks(), l.tail_bytes, l.chunks()),
                (soa.head_chunks(), soa.tail_bytes(), soa.chunks()),
                "{format}"
            );
            // Every real of the last sub-record: SoaLayout's head chunk index times 16
            // plus the position in the chunk, or its tail address plus the position.
            let (site, mu) = (37, l.subs - 1);
            let p = soa.reals_per_chunk();
            for k in 0..l.stored_reals {
                let want = if k < soa.head_chunks() * p {
                    soa.chunk_index(mu, k / p, site, l.stride) * 16 + (k % p) * l.real_bytes
                } else {
                    soa.tail_address(l.subs, mu, site, l.stride)
                        + (k - soa.head_chunks() * p) * l.real_bytes
                };
                assert_eq!(l.byte_offset(site, mu, k), want, "{format} k = {k}");
            }
        }
    }

    /// Hand-computed tails: an f32 recon-18 link (72 B) = 4 head chunks + 8 B; with 32
    /// sites, real 16 of direction 2 at site 5 follows the 4·4·32 head chunks:
    /// 8192 + (2·32 + 5)·8; a staggered f32 site (24 B) = 1 chunk + 8 B, real 5 of site 3
    /// at 32·16 + 3·8 + 4; f64 records have none.
    #[test]
    fn float_tails_by_hand() {
        let link = DeviceFormat::Link(LinkFormat::new(LinkStorage::F32, Compression::Full));
        let l = DeviceLayout::new(link, 0, 32).unwrap();
        assert_eq!((l.head_chunks(), l.tail_bytes, l.chunks()), (4, 8, 5));
        assert_eq!(l.byte_offset(5, 2, 16), 8192 + 69 * 8);
        assert_eq!(l.byte_offset(5, 2, 17), 8192 + 69 * 8 + 4);
        assert_eq!(l.byte_offset(5, 2, 15), ((2 * 4 + 3) * 32 + 5) * 16 + 12);
        assert_eq!(l.value_bytes(), 4 * 32 * 72);
        let st = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 6, 32).unwrap();
        assert_eq!((st.head_chunks(), st.tail_bytes), (1, 8));
        assert_eq!(st.byte_offset(3, 0, 5), 32 * 16 + 3 * 8 + 4);
        assert_eq!(st.value_bytes(), 32 * 24);
        let d = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F64), 6, 32).unwrap();
        assert_eq!((d.head_chunks(), d.tail_bytes, d.chunk_bytes), (3, 0, 16));
    }

    /// Hand-computed: fixed8 staggered site = 6 bytes → W = 2, 3 chunks; fixed16 Wilson
    /// site = 48 bytes → W = 16, 3 chunks of 8 integers; f16 recon 12 = 24 bytes → W = 8.
    #[test]
    fn narrow_formats_by_hand() {
        let f8 = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::FIXED8), 6, 40).unwrap();
        assert_eq!((f8.chunk_bytes, f8.chunks(), f8.stride), (2, 3, 64));
        assert_eq!(f8.byte_offset(5, 0, 3), (64 + 5) * 2 + 1);
        assert_eq!((f8.value_bytes(), f8.norm_bytes()), (3 * 64 * 2, 160));
        let f16 = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::FIXED16), 24, 32).unwrap();
        assert_eq!((f16.chunk_bytes, f16.chunks()), (16, 3));
        assert_eq!(f16.byte_offset(1, 0, 9), (32 + 1) * 16 + 2);
        let h = DeviceLayout::new(
            DeviceFormat::Link(LinkFormat::new(LinkStorage::F16, Compression::Recon12)),
            0,
            32,
        )
        .unwrap();
        assert_eq!((h.chunk_bytes, h.chunks(), h.subs), (8, 3, 4));
        assert_eq!(h.byte_offset(2, 3, 11), ((3 * 3 + 2) * 32 + 2) * 8 + 3 * 2);
        assert_eq!(h.value_bytes(), 4 * 3 * 32 * 8);
    }

    /// Hand-computed packed shapes: a packed20 Wilson site is 4 groups of 4 words (64 B,
    /// W = 16, a group per chunk), packed30 6 words per group (96 B, W = 16; a staggered
    /// site's 24 B give W = 8); word k of a packed20 site sits at chunk ⌊k/4⌋, byte 4(k mod 4).
    #[test]
    fn packed_sites_are_words_of_groups_and_recon8_holds_8_reals() {
        let p20 = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::PACKED20), 24, 8).unwrap();
        assert_eq!(
            (
                p20.stored_reals,
                p20.real_bytes,
                p20.chunk_bytes,
                p20.chunks()
            ),
            (16, 4, 16, 4)
        );
        assert_eq!(p20.byte_offset(3, 0, 9), (2 * 32 + 3) * 16 + 4);
        assert_eq!((p20.value_bytes(), p20.norm_bytes()), (4 * 32 * 16, 0));
        let p30 = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::PACKED30), 24, 8).unwrap();
        assert_eq!(
            (p30.stored_reals, p30.chunk_bytes, p30.chunks()),
            (24, 16, 6)
        );
        let p30s = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::PACKED30), 6, 8).unwrap();
        assert_eq!(
            (p30s.stored_reals, p30s.chunk_bytes, p30s.chunks()),
            (6, 8, 3)
        );
        let r8 = LinkFormat::new(LinkStorage::F32, Compression::Recon8);
        let l = DeviceLayout::new(DeviceFormat::Link(r8), 0, 8).unwrap();
        // 8 f32 reals per link in 16-byte chunks of 4: 2 chunks of 4 links each.
        assert_eq!((l.stored_reals, l.host_reals, l.subs), (8, 18, 4));
        assert_eq!(l.value_bytes(), 4 * 2 * l.stride * 16);
    }
}
