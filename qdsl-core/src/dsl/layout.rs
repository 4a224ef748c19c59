//! The device memory layout of fields: structure of arrays in 16-byte chunks.
//!
//! A field holds `reals` real numbers per site (per link for gauge fields), stored in
//! `bytes` bytes each. They are cut into chunks of W bytes, W = 16 when the site's bytes
//! are a multiple of 16 (`float4` for f32, `double2` for f64), else W = 8 (`float2`,
//! `double`). Chunk c of site i lives at
//!
//! address(c, i) = (c · stride + i) · W,
//!
//! with stride ≥ the number of sites (the padding keeps each chunk array aligned), so the
//! threads of a warp, which handle consecutive sites, load consecutive W-byte words.
//! Within a site the reals keep the host order (spin, colour, re/im; row-major links).
//!
//! * a colour-spinor field on one parity has V/2 sites, the index within the parity;
//!   on the full lattice V sites, the checkerboard index (even sites first);
//! * a gauge field stores the four directions one after the other: chunk c of U_μ at
//!   the site with checkerboard index cb is chunk (μ · chunks + c) of site cb, V sites.
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

    /// Chunk width W in bytes: 16 if it divides the site's bytes, else 8.
    pub fn chunk_bytes(&self) -> usize {
        if (self.reals * self.format.bytes()).is_multiple_of(16) {
            16
        } else {
            8
        }
    }

    /// Reals per chunk, W / bytes per real.
    pub fn reals_per_chunk(&self) -> usize {
        self.chunk_bytes() / self.format.bytes()
    }

    /// Chunks per site, ⌈reals / reals per chunk⌉ (exact for f32/f64, whose site bytes
    /// are a multiple of 8 because `reals` is even; the last chunk of a narrow-format site
    /// may be padded).
    pub fn chunks(&self) -> usize {
        self.reals.div_ceil(self.reals_per_chunk())
    }

    /// The CUDA vector type of one chunk (`uint4`/`uint2` raw words for the narrow formats).
    pub fn cuda_type(&self) -> &'static str {
        match (self.format, self.chunk_bytes()) {
            (StorageFormat::F32, 16) => "float4",
            (StorageFormat::F32, _) => "float2",
            (StorageFormat::F64, 16) => "double2",
            (StorageFormat::F64, _) => "double",
            // Narrow formats move raw bits; their decoding is the format's.
            (_, 16) => "uint4",
            (_, _) => "uint2",
        }
    }

    /// The position, in units of W, of chunk `c` of site `i` for a given stride:
    /// c · stride + i.
    pub fn chunk_index(c: usize, i: usize, stride: usize) -> usize {
        c * stride + i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed shapes: Wilson spinor f32 24 reals = 6 float4; f64 = 12 double2;
    /// recon-12 f32 = 3 float4; recon-18 f32 (72 bytes) = 9 float2; colour vector f32
    /// (24 bytes) = 3 float2, f64 (48 bytes) = 3 double2.
    #[test]
    fn chunk_shapes() {
        let cases = [
            (24, StorageFormat::F32, "float4", 6),
            (24, StorageFormat::F64, "double2", 12),
            (12, StorageFormat::F32, "float4", 3),
            (18, StorageFormat::F32, "float2", 9),
            (18, StorageFormat::F64, "double2", 9),
            (6, StorageFormat::F32, "float2", 3),
            (6, StorageFormat::F64, "double2", 3),
        ];
        for (reals, format, ty, chunks) in cases {
            let l = SoaLayout::new(reals, format);
            assert_eq!(
                (l.cuda_type(), l.chunks()),
                (ty, chunks),
                "{reals} {format:?}"
            );
            assert_eq!(l.chunks() * l.chunk_bytes(), reals * format.bytes());
        }
        assert_eq!(SoaLayout::chunk_index(2, 5, 100), 205);
    }
}
