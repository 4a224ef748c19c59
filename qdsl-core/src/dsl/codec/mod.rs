//! Storage codecs: what a storage format is, in one place, for every field of every
//! kernel — the chunking of a record in the device layout (the one chunk rule), the CUDA
//! decode/encode of its reals, the fixed-point constants (Q, the bias of the exact
//! decode; the packed spinors' group codec, [`packed`]), the extra kernel arguments it needs (the per-site norms of fixed-point
//! fermions, the global scale of fixed-point links with [`LinkScale::Global`]), the byte
//! model, and the host formats the CPU path rounds through.
//!
//! The chunk rule ([`chunking`]): a record of B bytes in f64/f32 is cut into
//! H = ⌊B/16⌋ chunks of 16 bytes and, where 16 does not divide B, an 8-byte tail in its
//! own array ([`crate::dsl::layout::SoaLayout`]); a record in any other format into
//! chunks of W bytes, W the largest of 16, 8, 4, 2, 1 dividing B, without a tail. The
//! runtime's device fields (qdsl-runtime `device::layout`) and the CUDA emitter both
//! take it from here.

pub mod packed;

use crate::dsl::interface::{Elem, KernelParam, ParamKind};
use crate::dsl::layout::SoaLayout;
use crate::dsl::variant::{LinkScale, Recon, StorageFormat};
use crate::field::GaugeField;
use crate::format::{FermionFormat, FixedWidth, LinkFormat, LinkStorage, PackedWidth};
use crate::Real;

/// How one record is cut into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunking {
    /// Chunk width W in bytes (of the head chunks).
    pub chunk_bytes: usize,
    /// Whole chunks per record, H.
    pub head_chunks: usize,
    /// Bytes of the tail (f64/f32 records only: B mod 16; else 0).
    pub tail_bytes: usize,
}

impl Chunking {
    /// Chunks per record, the head's and the tail's.
    pub fn chunks(&self) -> usize {
        self.head_chunks + usize::from(self.tail_bytes > 0)
    }
}

/// The chunk rule (see the module doc) for a record of `record_bytes` bytes, `float`
/// for the f64/f32 formats (16-byte chunks and an 8-byte tail).
pub fn chunking(record_bytes: usize, float: bool) -> Chunking {
    if float {
        return Chunking {
            chunk_bytes: 16,
            head_chunks: record_bytes / 16,
            tail_bytes: record_bytes % 16,
        };
    }
    let w = [16, 8, 4, 2, 1]
        .into_iter()
        .find(|w| record_bytes.is_multiple_of(*w))
        .unwrap_or(1);
    Chunking {
        chunk_bytes: w,
        head_chunks: record_bytes / w,
        tail_bytes: 0,
    }
}

/// An extra kernel argument a format needs beside a field's chunk pointer. Everything
/// about one is defined here: its name in the source ([`Self::cuda_name`]), its C
/// declaration ([`Self::cuda_decl`]), what the launcher passes ([`Self::kind`]); the
/// kernel IR plan declares the arguments of each field's codec ([`Codec::args`]) in this
/// order after its pointer, as [`KernelParam::Extra`], and the runtime binds each by
/// name from the field's buffer (the norms) or the launch's link scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtraArg {
    /// One f32 norm per site, `norm_<field>` (fixed-point colour spinors).
    SiteNorm,
    /// One real per field in the compute type, `scale_<field>`: the global scale s of a
    /// fixed-point gauge field with [`LinkScale::Global`] (v = s·q/Q).
    FieldScale,
}

/// The field an extra argument belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgOwner {
    /// The output field.
    Output,
    /// Input `index` (inputs counted in declaration order).
    Input(usize),
    /// The xpay operand x of out = a·x + b·D ψ.
    XpayX,
}

impl ExtraArg {
    /// The parameter's name in the source for the field `field` (the spec's name, or
    /// `xpay_x`): `norm_<field>`, `scale_<field>`.
    pub fn cuda_name(self, field: &str) -> String {
        match self {
            ExtraArg::SiteNorm => format!("norm_{field}"),
            ExtraArg::FieldScale => format!("scale_{field}"),
        }
    }

    /// The C declaration in the kernel signature (the norms of the output written).
    pub fn cuda_decl(self, field: &str, owner: ArgOwner) -> String {
        let name = self.cuda_name(field);
        match self {
            ExtraArg::SiteNorm if owner == ArgOwner::Output => {
                format!("float* __restrict__ {name}")
            }
            ExtraArg::SiteNorm => format!("const float* __restrict__ {name}"),
            ExtraArg::FieldScale => format!("const real {name}"),
        }
    }

    /// What the launcher passes, with `compute` the kernel's real type: an f32 buffer
    /// (written for the output's norms), or one real.
    pub fn kind(self, owner: ArgOwner, compute: Elem) -> ParamKind {
        match self {
            ExtraArg::SiteNorm if owner == ArgOwner::Output => ParamKind::write(Elem::F32),
            ExtraArg::SiteNorm => ParamKind::read(Elem::F32),
            ExtraArg::FieldScale => ParamKind::real(compute),
        }
    }

    /// The kernel parameter of this argument of `field`, owned by `owner`.
    pub fn param(self, field: &str, owner: ArgOwner) -> KernelParam {
        KernelParam::Extra {
            arg: self,
            field: field.to_string(),
            owner,
        }
    }
}

/// The codec of one storage format (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec(pub StorageFormat);

impl StorageFormat {
    /// This format's codec.
    pub fn codec(self) -> Codec {
        Codec(self)
    }
}

impl Codec {
    /// Bytes of a record of `reals` reals (a site of a colour spinor, a link):
    /// `reals` times the bytes of a real (the norm of a fixed-point site kept apart).
    pub fn record_bytes(self, reals: usize) -> usize {
        match self.packed() {
            Some(w) => packed::record_bytes(w, reals),
            None => reals * self.0.bytes(),
        }
    }

    /// Whether a record in this format is decoded and encoded whole, by the device
    /// helpers `decode_<fmt><N>(dest, words)` and `encode_<fmt><N>(words, src)` of
    /// [`Self::cuda`] (the packed formats, whose groups of 6 share an exponent), rather
    /// than real by real: the emitter moves the record's words and calls them.
    pub fn whole_records(self) -> bool {
        self.packed().is_some()
    }

    /// The width of a bit-packed spinor format (packed20, packed30: whole records of
    /// groups of 6 reals sharing an exponent, [`packed`]); `None` for the others.
    pub fn packed(self) -> Option<PackedWidth> {
        match self.fermion() {
            FermionFormat::Packed(w) => Some(w),
            _ => None,
        }
    }

    /// The chunking of a record of `reals` reals.
    pub fn chunking(self, reals: usize) -> Chunking {
        chunking(self.record_bytes(reals), self.0.is_native())
    }

    /// Q = 2^(b−1) − 1 of a fixed-point format, `None` for the float formats.
    pub fn fixed_q(self) -> Option<i32> {
        fixed_q(self.0)
    }

    /// The extra arguments of a site field (colour spinor) in this format.
    pub fn site_args(self) -> &'static [ExtraArg] {
        match self.fixed_q() {
            Some(_) => &[ExtraArg::SiteNorm],
            None => &[],
        }
    }

    /// The extra arguments of a gauge field (not a compressed long field, whose scale c
    /// is its own) in this format with link scale `scale`: the global scale for fixed
    /// point with [`LinkScale::Global`], none otherwise (floats hold any scale).
    pub fn link_args(self, scale: LinkScale) -> &'static [ExtraArg] {
        match (self.fixed_q(), scale) {
            (Some(_), LinkScale::Global) => &[ExtraArg::FieldScale],
            _ => &[],
        }
    }

    /// The extra arguments of a field in this format: of a site field (`site_field`: a
    /// colour spinor or the xpay operand) [`Self::site_args`], of a gauge field
    /// [`Self::link_args`] with link scale `scale`.
    pub fn args(self, site_field: bool, scale: LinkScale) -> &'static [ExtraArg] {
        if site_field {
            self.site_args()
        } else {
            self.link_args(scale)
        }
    }

    /// Whether gauge fields in this format with link scale `scale` are stored as
    /// s·q/Q with a global scale s ([`global_link_scale`]): they take the
    /// [`ExtraArg::FieldScale`] argument (fixed point with [`LinkScale::Global`]).
    pub fn scales_links(self, scale: LinkScale) -> bool {
        self.link_args(scale).contains(&ExtraArg::FieldScale)
    }

    /// The host format a colour-spinor site is rounded through on the CPU path.
    pub fn fermion(self) -> FermionFormat {
        self.0.fermion_format()
    }

    /// The host format a link in compression `recon` is rounded through on the CPU path.
    pub fn link(self, recon: Recon) -> LinkFormat {
        LinkFormat::new(self.link_storage(), recon.compression())
    }

    /// The per-real link storage (fixed point: step 1/Q, no norm).
    pub fn link_storage(self) -> LinkStorage {
        self.0.link_storage()
    }

    /// Byte model: bytes of one colour-spinor site of `reals` reals (with its norm).
    pub fn site_bytes(self, reals: usize) -> usize {
        self.fermion().bytes_per_site(reals)
    }

    /// Byte model: bytes of one link in compression `recon`.
    pub fn link_bytes(self, recon: Recon) -> usize {
        self.link(recon).bytes_per_link()
    }

    /// The CUDA decoder (and, with `encoder`, encoder) of a narrow format
    /// ([`cuda_codec`]); empty for f64/f32.
    pub fn cuda(self, encoder: bool, f64_compute: bool) -> String {
        cuda_codec(self.0, encoder, f64_compute)
    }
}

/// Chunk width W in bytes of a field in the device layout: 16 (the head chunks of
/// [`SoaLayout`]) for f64/f32, else the largest of 16, 8, 4, 2, 1 that divides the
/// record's bytes.
pub fn chunk_bytes(layout: &SoaLayout) -> usize {
    layout.format.codec().chunking(layout.reals).chunk_bytes
}

/// Chunks per record in the device layout, ⌈R·b / W⌉.
pub fn chunks(layout: &SoaLayout) -> usize {
    layout.format.codec().chunking(layout.reals).chunks()
}

/// The CUDA type of one chunk: [`SoaLayout::cuda_type`] for f64/f32, the raw word of
/// width W for the narrow formats.
pub fn chunk_type(layout: &SoaLayout) -> &'static str {
    if layout.format.is_native() {
        return layout.cuda_type();
    }
    match chunk_bytes(layout) {
        16 => "uint4",
        8 => "uint2",
        4 => "unsigned",
        2 => "unsigned short",
        _ => "unsigned char",
    }
}

/// Raw 32-bit words holding one narrow record, ⌈C·W / 4⌉.
pub fn words(layout: &SoaLayout) -> usize {
    (chunks(layout) * chunk_bytes(layout)).div_ceil(4)
}

/// The literal 2B of a fixed-point format's bias ([`Scaling::Biased`]); `None` for the
/// float formats.
pub fn twice_bias(format: StorageFormat) -> Option<&'static str> {
    match format {
        StorageFormat::Fixed16 => Some("16842752.0f"),
        StorageFormat::Fixed8 => Some("16777472.0f"),
        _ => None,
    }
}

/// The decoder `decode_<fmt>(raw bits) → real` of a narrow format and, when `encoder`
/// (the spinor format, written by the output store), `encode_<fmt>(value, c) → bits`.
///
/// * f16: v = the binary16 value (`cvt.f32.f16`, exact); encode `cvt.rn.f16.f32`;
/// * bf16: v = the bits << 16 as an f32 (exact); encode `cvt.rn.bf16.f32`;
/// * fixed16/fixed8: decode gives the integer q (exact in f32) without the quarter-rate
///   integer conversion: q + 2^(b−1) (the bits with the sign bit flipped) as the low
///   mantissa bits of 2^23, minus 2^23 + 2^(b−1), both steps exact; the caller multiplies by
///   the scale (s = fl(norm·fl(1/Q)) for fermions, fl(1/Q) for links, with
///   `inv_q_<fmt>()` = fl(1/Q) in the compute type, `f64_compute`); encode
///   q = round_half_even(v·c) clamped to ±Q, c = Q/norm.
pub fn cuda_codec(format: StorageFormat, encoder: bool, f64_compute: bool) -> String {
    let name = format.name();
    let (decode, encode) = match format {
        StorageFormat::F16 => (
            "float v; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(v) : \"h\"((unsigned short)bits)); return (real)v;",
            "unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"((float)v)); return h;",
        ),
        StorageFormat::BF16 => (
            "return (real)__uint_as_float(bits << 16);",
            "unsigned short h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"((float)v)); return h;",
        ),
        StorageFormat::Fixed16 => (
            "return (real)(__uint_as_float(0x4b000000u | (bits ^ 0x8000u)) - 8421376.0f);",
            "return (unsigned)max(-32767, min(32767, __float2int_rn((float)v * c)));",
        ),
        StorageFormat::Fixed8 => (
            "return (real)(__uint_as_float(0x4b000000u | (bits ^ 0x80u)) - 8388736.0f);",
            "return (unsigned)max(-127, min(127, __float2int_rn((float)v * c)));",
        ),
        StorageFormat::F64 | StorageFormat::F32 => return String::new(),
        StorageFormat::Packed20 => return packed::cuda(PackedWidth::Bits20, encoder),
        StorageFormat::Packed30 => return packed::cuda(PackedWidth::Bits30, encoder),
    };
    let mut s = format!(
        "// {name}: raw bits -> value{}\n__device__ __forceinline__ real decode_{name}(unsigned bits) {{ {decode} }}\n",
        if fixed_q(format).is_some() { " (the integer q; times the scale)" } else { "" }
    );
    if let Some(q) = fixed_q(format) {
        s.push_str(&fixed_word_decoder(format));
        let inv = if f64_compute {
            format!("{:e}", 1.0 / f64::from(q))
        } else {
            format!("{:e}f", 1.0 / q as f32)
        };
        s.push_str(&format!(
            "__device__ __forceinline__ real inv_q_{name}() {{ return {inv}; }} // fl(1/{q})\n"
        ));
    }
    if encoder {
        s.push_str(&format!(
            "// {name}: value -> raw bits{}\n__device__ __forceinline__ unsigned encode_{name}(real v, float c) {{ {encode} }}\n",
            if fixed_q(format).is_some() { " (q = round_half_even(v c), c = Q / norm)" } else { " (c unused)" }
        ));
    }
    s
}

/// The word-at-a-time decoder `decode_q_<fmt><N>(q, w)` of a fixed-point record: the
/// integers q of its first N reals, as `decode_<fmt>` gives them, in fewer instructions:
/// each 32-bit word gets its sign bits flipped once (one `xor` for 2 or 4 reals), then a
/// byte permute puts real j's byte(s) under the exponent bits 0x4b (2^23) and one subtract
/// of 2^23 + 2^(b−1) leaves q, exactly.
fn fixed_word_decoder(format: StorageFormat) -> String {
    let name = format.name();
    let (per_word, flip, selector, offset) = match format {
        StorageFormat::Fixed16 => (
            2,
            "0x80008000u",
            "(k % 2 == 0 ? 0x7610 : 0x7632)",
            "8421376.0f",
        ),
        _ => (4, "0x80808080u", "(0x7540 | (k % 4))", "8388736.0f"),
    };
    format!(
        "// {name}: the integers q of reals 0..N-1 of a record held in words w (BIASED: q + {offset}).\n\
         template <int N, bool BIASED = false> __device__ __forceinline__ void decode_q_{name}(real* q, const unsigned* w) {{\n\
         #pragma unroll\n    \
         for (int k = 0; k < N; k++) {{ const float b = __uint_as_float(__byte_perm(w[k / {per_word}] ^ {flip}, 0x4b000000u, {selector})); q[k] = (real)(BIASED ? b : b - {offset}); }}\n\
         }}\n"
    )
}

/// The global scale s = max |entry| over every real of every link of `u` (1 for a field
/// of zeros, so that s > 0): with [`LinkScale::Global`] a fixed-point gauge field stores
/// q = round_half_even(v/s · Q), |q| ≤ Q, and the kernel decodes v̂ = s·q/Q (`s` the
/// kernel argument `scale_<field>`), so that |v̂ − v| ≤ s/(2Q) plus the roundings of the
/// decode. One definition for the CPU path, the device upload and `qdsl check`.
pub fn global_link_scale<T: Real>(u: &GaugeField<T>) -> f64 {
    let s = u
        .links()
        .iter()
        .map(|l| l.max_abs_component().to_f64())
        .fold(0.0, f64::max);
    if s > 0.0 {
        s
    } else {
        1.0
    }
}

/// Q = 2^(b−1) − 1 of a fixed-point format, `None` for the float formats.
pub fn fixed_q(format: StorageFormat) -> Option<i32> {
    match format {
        StorageFormat::Fixed16 => Some(FixedWidth::Bits16.max_int()),
        StorageFormat::Fixed8 => Some(FixedWidth::Bits8.max_int()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed device chunks (the runtime's rule: W the largest of 16, 8, 4, 2, 1
    /// dividing the record's bytes): Wilson fixed16 48 B = 3 × uint4; staggered fixed16
    /// 12 B = 3 × 4 B; staggered fixed8 6 B = 3 × 2 B; fixed16 recon 18 36 B = 9 × 4 B;
    /// fixed16 recon 12 24 B = 3 × uint2; f16 recon 8 16 B = 1 × uint4; fixed8 recon 8
    /// 8 B = 1 × uint2; fixed8 recon 18 18 B = 9 × 2 B; f32 keeps SoaLayout (6 float4).
    #[test]
    fn device_chunks_by_hand() {
        let cases = [
            (24, StorageFormat::Fixed16, 16, 3, "uint4"),
            (6, StorageFormat::Fixed16, 4, 3, "unsigned"),
            (6, StorageFormat::Fixed8, 2, 3, "unsigned short"),
            (18, StorageFormat::Fixed16, 4, 9, "unsigned"),
            (12, StorageFormat::Fixed16, 8, 3, "uint2"),
            (8, StorageFormat::F16, 16, 1, "uint4"),
            (8, StorageFormat::Fixed8, 8, 1, "uint2"),
            (18, StorageFormat::Fixed8, 2, 9, "unsigned short"),
            (24, StorageFormat::BF16, 16, 3, "uint4"),
            (24, StorageFormat::F32, 16, 6, "float4"),
            // Packed: Wilson packed20 4 groups = 64 B = 4 × uint4, packed30 96 B =
            // 6 × uint4; staggered packed30 24 B = 3 × uint2, packed20 16 B = 1 × uint4.
            (24, StorageFormat::Packed20, 16, 4, "uint4"),
            (24, StorageFormat::Packed30, 16, 6, "uint4"),
            (6, StorageFormat::Packed30, 8, 3, "uint2"),
            (6, StorageFormat::Packed20, 16, 1, "uint4"),
        ];
        for (reals, format, w, c, ty) in cases {
            let l = SoaLayout::new(reals, format);
            assert_eq!(
                (chunk_bytes(&l), chunks(&l), chunk_type(&l)),
                (w, c, ty),
                "{reals} {format:?}"
            );
        }
        // Raw words: 3 × 16 B = 12 words; 3 × 2 B = 6 B → 2 words.
        assert_eq!(words(&SoaLayout::new(24, StorageFormat::Fixed16)), 12);
        assert_eq!(words(&SoaLayout::new(6, StorageFormat::Fixed8)), 2);
    }

    /// The fl(1/Q) literal in the source parses (as C does, to the nearest value) back to
    /// the constant qdsl_core::format multiplies by, in f32 and in f64.
    #[test]
    fn inv_q_literals_are_the_format_constants() {
        for (format, w) in [
            (StorageFormat::Fixed16, FixedWidth::Bits16),
            (StorageFormat::Fixed8, FixedWidth::Bits8),
        ] {
            for f64_compute in [false, true] {
                let src = cuda_codec(format, false, f64_compute);
                let lit = src
                    .split("return ")
                    .nth(2)
                    .and_then(|t| t.split(';').next())
                    .expect("inv_q body");
                if f64_compute {
                    assert_eq!(lit.parse::<f64>().unwrap(), w.inv_max::<f64>(), "{lit}");
                } else {
                    let lit = lit.strip_suffix('f').expect("an f32 literal");
                    assert_eq!(lit.parse::<f32>().unwrap(), w.inv_max::<f32>(), "{lit}");
                }
            }
        }
    }

    /// The exact integer decode of the source (`as_float(0x4b000000 | (bits ^ 2^(b−1)))
    /// − (2^23 + 2^(b−1))`), emulated in f32 for every 16-bit and 8-bit pattern, equals
    /// the two's-complement integer; and the emitted source holds exactly that expression.
    #[test]
    fn fixed_decode_identity_holds_for_every_pattern() {
        for bits in 0u32..=0xffff {
            let v = f32::from_bits(0x4b00_0000 | (bits ^ 0x8000)) - 8_421_376.0;
            assert_eq!(v, f32::from(bits as u16 as i16), "{bits:#x}");
        }
        for bits in 0u32..=0xff {
            let v = f32::from_bits(0x4b00_0000 | (bits ^ 0x80)) - 8_388_736.0;
            assert_eq!(v, f32::from(bits as u8 as i8), "{bits:#x}");
        }
        // The word decoder: __byte_perm(x, y, s) takes result byte n from byte s_n of
        // (y:x) (0–3 of x, 4–7 of y); emulated for both reals of every 32-bit pattern
        // whose halves run over all 16-bit values, and every byte of the 8-bit one.
        let byte_perm = |x: u32, y: u32, sel: u32| -> u32 {
            let bytes = (u64::from(y) << 32 | u64::from(x)).to_le_bytes();
            (0..4).fold(0, |r, n| {
                r | u32::from(bytes[((sel >> (4 * n)) & 7) as usize]) << (8 * n)
            })
        };
        for bits in 0u32..=0xffff {
            let w = bits | (bits.wrapping_mul(40503) & 0xffff) << 16;
            for (k, sel) in [(0, 0x7610), (1, 0x7632)] {
                let v = f32::from_bits(byte_perm(w ^ 0x8000_8000, 0x4b00_0000, sel)) - 8_421_376.0;
                assert_eq!(v, f32::from((w >> (16 * k)) as u16 as i16), "{w:#x} {k}");
            }
        }
        for bits in 0u32..=0xff {
            let w = bits | ((bits * 37) & 0xff) << 8 | (bits ^ 0x5a) << 16 | (0xff - bits) << 24;
            for k in 0..4 {
                let v = f32::from_bits(byte_perm(w ^ 0x8080_8080, 0x4b00_0000, 0x7540 | k))
                    - 8_388_736.0;
                assert_eq!(v, f32::from((w >> (8 * k)) as u8 as i8), "{w:#x} {k}");
            }
        }
        assert!(cuda_codec(StorageFormat::Fixed16, false, false).contains(
            "__byte_perm(w[k / 2] ^ 0x80008000u, 0x4b000000u, (k % 2 == 0 ? 0x7610 : 0x7632))); q[k] = (real)(BIASED ? b : b - 8421376.0f)"
        ));
        assert!(cuda_codec(StorageFormat::Fixed8, false, false).contains(
            "__byte_perm(w[k / 4] ^ 0x80808080u, 0x4b000000u, (0x7540 | (k % 4)))); q[k] = (real)(BIASED ? b : b - 8388736.0f)"
        ));
        assert!(cuda_codec(StorageFormat::Fixed16, false, false)
            .contains("__uint_as_float(0x4b000000u | (bits ^ 0x8000u)) - 8421376.0f"));
        assert!(cuda_codec(StorageFormat::Fixed8, false, false)
            .contains("__uint_as_float(0x4b000000u | (bits ^ 0x80u)) - 8388736.0f"));
    }

    /// The biased sums and differences of `Scaling::Biased` equal the integer ones in f32,
    /// over a grid of q pairs covering both extremes, for both widths.
    #[test]
    fn biased_pairs_are_exact() {
        for (bias, twice, qmax) in [
            (8_421_376.0f32, 16_842_752.0f32, 32767),
            (8_388_736.0, 16_777_472.0, 127),
        ] {
            assert_eq!(2.0 * bias, twice);
            let qs: Vec<i32> = (-qmax..=qmax)
                .step_by(97)
                .chain([-qmax, -1, 0, 1, qmax])
                .collect();
            for &x in &qs {
                for &y in &qs {
                    let (bx, by) = (x as f32 + bias, y as f32 + bias);
                    assert_eq!(bx - by, (x - y) as f32, "{x} - {y}");
                    assert_eq!(bx - (twice - by), (x + y) as f32, "{x} + {y}");
                }
            }
        }
        assert_eq!(twice_bias(StorageFormat::Fixed16), Some("16842752.0f"));
        assert_eq!(twice_bias(StorageFormat::Fixed8), Some("16777472.0f"));
        assert_eq!(twice_bias(StorageFormat::F16), None);
    }

    /// The one chunk rule, checked against its definition for every format and record of
    /// 1–64 reals: a narrow record in chunks of the largest W ∈ {16, 8, 4, 2, 1} dividing
    /// B (no tail, H·W = B); an f64/f32 record in 16-byte chunks and a tail of B mod 16
    /// (0 or 8 for an even count of reals); SoaLayout agrees.
    #[test]
    fn the_chunk_rule_by_its_definition() {
        for format in StorageFormat::EVERY {
            for reals in 1..=64 {
                let b = reals * format.bytes();
                let c = format.codec().chunking(reals);
                if format.is_native() {
                    assert_eq!(
                        (c.chunk_bytes, c.head_chunks, c.tail_bytes),
                        (16, b / 16, b % 16)
                    );
                    let soa = SoaLayout::new(reals, format);
                    assert_eq!(
                        (soa.head_chunks(), soa.tail_bytes()),
                        (c.head_chunks, c.tail_bytes)
                    );
                } else {
                    assert_eq!(c.tail_bytes, 0);
                    assert_eq!(c.head_chunks * c.chunk_bytes, b, "{format:?} {reals}");
                    let larger = [16, 8, 4, 2].into_iter().filter(|w| *w > c.chunk_bytes);
                    assert!(larger.clone().all(|w| b % w != 0), "{format:?} {reals}");
                }
            }
        }
    }

    /// The global link scale is the largest |entry| (a hand-made field: 8.3 at one real
    /// of one link, every other real smaller); a field of zeros gets 1; only fixed-point
    /// formats with the global knob take the `scale_<field>` argument.
    #[test]
    fn global_link_scale_is_the_largest_entry() {
        use crate::lattice::Lattice;
        use crate::math::ColourMatrix;
        use num_complex::Complex;
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let mut u = GaugeField::<f64>::random(lattice, 3);
        assert!(
            (global_link_scale(&u) - 1.0).abs() < 0.5,
            "SU(3) entries are ≤ 1"
        );
        u.link_mut(5, 2).0[1][2] = Complex::new(0.5, -8.3);
        assert_eq!(global_link_scale(&u), 8.3);
        for l in u.links_mut() {
            *l = ColourMatrix::zero();
        }
        assert_eq!(global_link_scale(&u), 1.0);
        for f in StorageFormat::EVERY {
            let fixed = f.codec().fixed_q().is_some();
            assert_eq!(
                f.codec().link_args(LinkScale::Global) == [ExtraArg::FieldScale],
                fixed
            );
            assert!(f.codec().link_args(LinkScale::Unit).is_empty());
        }
    }

    /// Each extra argument's name, declaration (the text the signature prints) and kind
    /// (what the launcher passes), by hand.
    #[test]
    fn extra_argument_declarations() {
        use ArgOwner::{Input, Output, XpayX};
        let norm = ExtraArg::SiteNorm;
        assert_eq!(
            norm.cuda_decl("out", Output),
            "float* __restrict__ norm_out"
        );
        assert_eq!(
            norm.cuda_decl("xpay_x", XpayX),
            "const float* __restrict__ norm_xpay_x"
        );
        assert_eq!(norm.kind(Output, Elem::F64), ParamKind::write(Elem::F32));
        assert_eq!(norm.kind(Input(2), Elem::F64), ParamKind::read(Elem::F32));
        let scale = ExtraArg::FieldScale;
        assert_eq!(scale.cuda_decl("fat", Input(1)), "const real scale_fat");
        assert_eq!(scale.kind(Input(1), Elem::F64), ParamKind::F64);
        assert_eq!(scale.kind(Input(1), Elem::F32), ParamKind::F32);
        assert_eq!(scale.param("fat", Input(1)).cuda_name(), "scale_fat");
        assert_eq!(norm.param("chi", Input(0)).cuda_name(), "norm_chi");
        // Site fields take the site arguments, gauge fields the link arguments.
        let fixed = StorageFormat::Fixed16.codec();
        assert_eq!(fixed.args(true, LinkScale::Global), [norm]);
        assert_eq!(fixed.args(false, LinkScale::Global), [scale]);
        assert!(fixed.args(false, LinkScale::Unit).is_empty());
    }

    /// Fixed-point spinors need their norms (and only they); the byte model counts them:
    /// a fixed16 Wilson site is 24 · 2 + 4 bytes, a recon-12 f16 link 12 · 2.
    #[test]
    fn extra_arguments_and_bytes() {
        for f in StorageFormat::SPINOR {
            let fixed = matches!(f, StorageFormat::Fixed16 | StorageFormat::Fixed8);
            assert_eq!(f.codec().site_args() == [ExtraArg::SiteNorm], fixed);
        }
        assert_eq!(StorageFormat::Fixed16.codec().site_bytes(24), 52);
        // Packed: ⌈24/6⌉ groups of 16 or 24 bytes, exponents inline (no argument); the
        // device record is the whole site.
        assert_eq!(StorageFormat::Packed20.codec().site_bytes(24), 64);
        assert_eq!(StorageFormat::Packed30.codec().site_bytes(24), 96);
        assert_eq!(StorageFormat::Packed30.codec().site_bytes(6), 24);
        assert_eq!(StorageFormat::Packed20.codec().record_bytes(24), 64);
        assert_eq!(StorageFormat::Packed20.compute(), StorageFormat::F32);
        assert_eq!(StorageFormat::Packed30.compute(), StorageFormat::F64);
        assert_eq!(StorageFormat::F16.codec().link_bytes(Recon::R12), 24);
    }
}
