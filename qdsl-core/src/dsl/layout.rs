//! The device memory layout of fields: structure of arrays in 16-byte chunks.
//!
//! A field holds `reals` real numbers per site (per link for gauge fields), stored in
//! `bytes` bytes each, B = reals · bytes per record. The record is cut into H = ⌊B/16⌋
//! chunks of 16 bytes (`float4` for f32, `double2` for f64) and, where 16 does not divide
//! B, an 8-byte tail (`float2`: f32 records of 4k + 2 reals — recon-18 links, staggered
//! colour vectors). With S sub-records per site (the 4 directions of a gauge field, else
//! 1), head chunk c of sub-record μ of site i lives at
//!
//! address = ((μ · H + c) · stride + i) · 16,
//!
//! and the tails of all sub-records follow the S · H head arrays, the tail of sub-record
//! μ of site i at
//!
//! address = S · H · stride · 16 + (μ · stride + i) · 8,
//!
//! with stride ≥ the number of sites (the padding keeps each array aligned), so the
//! threads of a warp, which handle consecutive sites, load consecutive 16-byte words (and
//! consecutive 8-byte tails): a recon-18 link is four 16-byte loads and one 8-byte load,
//! not nine 8-byte ones. Within a site the reals keep the host order (spin, colour,
//! re/im; row-major links).
//!
//! * a colour-spinor field on one parity has V/2 sites, the index within the parity;
//!   on the full lattice V sites, the checkerboard index (even sites first);
//! * a gauge field stores the four directions as its sub-records, V sites.
//!
//! The runtime's device fields implement this layout; the CUDA emitter indexes it.

use super::variant::StorageFormat;

/// The chunked structure-of-arrays shape of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoaLayout {
    /// Reals per site (or per link).
    pub reals: usize,
    /// Storage format of each real.
    pub format: StorageFormat,
}

impl SoaLayout {
    /// The layout of `reals` reals per site in `format`.
    pub fn new(reals: usize, format: StorageFormat) -> Self {
        Self { reals, format }
    }

    /// Bytes per record, B (its codec's, [`crate::dsl::codec::Codec::record_bytes`]).
    pub fn record_bytes(&self) -> usize {
        self.format.codec().record_bytes(self.reals)
    }

    /// Whole 16-byte chunks per record, H = ⌊B/16⌋ (the chunk rule of
    /// [`crate::dsl::codec::chunking`]).
    pub fn head_chunks(&self) -> usize {
        crate::dsl::codec::chunking(self.record_bytes(), true).head_chunks
    }

    /// Bytes of the tail, B mod 16 (0 or 8 for f32 and f64, whose records have an even
    /// number of reals).
    pub fn tail_bytes(&self) -> usize {
        crate::dsl::codec::chunking(self.record_bytes(), true).tail_bytes
    }

    /// Reals per 16-byte chunk.
    pub fn reals_per_chunk(&self) -> usize {
        16 / self.format.bytes()
    }

    /// Chunks per record, the head's and the tail's: H + (1 if B mod 16 ≠ 0).
    pub fn chunks(&self) -> usize {
        self.head_chunks() + usize::from(self.tail_bytes() > 0)
    }

    /// The CUDA vector type of one head chunk (`float4`, `double2`).
    pub fn cuda_type(&self) -> &'static str {
        match self.format {
            StorageFormat::F64 => "double2",
            _ => "float4",
        }
    }

    /// The CUDA type of the 8-byte tail (`float2`, `double`).
    pub fn tail_type(&self) -> &'static str {
        match self.format {
            StorageFormat::F64 => "double",
            _ => "float2",
        }
    }

    /// The position, in 16-byte units, of head chunk `c` of sub-record `sub` of site `i`
    /// (H = [`Self::head_chunks`]): (sub · H + c) · stride + i.
    pub fn chunk_index(&self, sub: usize, c: usize, i: usize, stride: usize) -> usize {
        (sub * self.head_chunks() + c) * stride + i
    }

    /// The byte address of the tail of sub-record `sub` of site `i` in a field of `subs`
    /// sub-records: S · H · stride · 16 + (sub · stride + i) · 8.
    pub fn tail_address(&self, subs: usize, sub: usize, i: usize, stride: usize) -> usize {
        subs * self.head_chunks() * stride * 16 + (sub * stride + i) * self.tail_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed shapes: Wilson spinor f32 24 reals = 6 float4; f64 = 12 double2;
    /// recon-12 f32 = 3 float4; recon-18 f32 (72 bytes) = 4 float4 + an 8-byte tail;
    /// colour vector f32 (24 bytes) = 1 float4 + tail, f64 (48 bytes) = 3 double2.
    #[test]
    fn chunk_shapes() {
        let cases = [
            (24, StorageFormat::F32, 6, 0),
            (24, StorageFormat::F64, 12, 0),
            (12, StorageFormat::F32, 3, 0),
            (18, StorageFormat::F32, 4, 8),
            (18, StorageFormat::F64, 9, 0),
            (6, StorageFormat::F32, 1, 8),
            (6, StorageFormat::F64, 3, 0),
        ];
        for (reals, format, head, tail) in cases {
            let l = SoaLayout::new(reals, format);
            assert_eq!(
                (l.head_chunks(), l.tail_bytes()),
                (head, tail),
                "{reals} {format:?}"
            );
            assert_eq!(
                l.head_chunks() * 16 + l.tail_bytes(),
                reals * format.bytes()
            );
            assert_eq!(l.chunks(), head + usize::from(tail > 0));
        }
        let link = SoaLayout::new(18, StorageFormat::F32);
        // Head chunk 2 of direction 3 at site 5, stride 100: (3·4 + 2)·100 + 5.
        assert_eq!(link.chunk_index(3, 2, 5, 100), 1405);
        // Its tail: after 4 · 4 · 100 head chunks, element 3·100 + 5 of 8 bytes.
        assert_eq!(link.tail_address(4, 3, 5, 100), 16 * 1600 + 305 * 8);
    }
}
