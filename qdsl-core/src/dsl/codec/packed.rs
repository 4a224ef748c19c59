//! The packed20/packed30 codec on the device: a colour-spinor site of N reals as
//! ⌈N/6⌉ groups of 6 b-bit integers (b = 20, 30) sharing a power-of-two scale, the
//! format [`crate::format`] defines (`format::fermion::packed`; the CPU path rounds
//! through that definition, [`crate::dsl::storage::round_spinor_field`]). Per group,
//! Q = 2^(b−1) − 1:
//!
//! ```text
//! m = max_i |v_i|          (v_i = 0 in the padding slots of the last group)
//! k = −126                                   if m ≤ Q·2^−126
//!   = ⌊log2 m⌋ − b + 2, plus 1 if Q·2^k < m  otherwise      (at most 127)
//! e = k + 127 (e = 0 and q = 0 for m = 0),  q_i = round_half_even(v_i · 2^−k)
//! decode: v_i = real(q_i) · real(2^(e−127))  (the f32 with exponent field e, +0 for e = 0)
//! ```
//!
//! 2^k and 2^−k are built from their f64 bits, so every product is exact: the kernel
//! stores the integers the host encoder gives for the same values, and decodes exactly
//! (q of 20 bits in f32, of 30 bits in f64: packed20 computes in f32, packed30 in f64,
//! [`crate::dsl::variant::StorageFormat::compute`]). The device cannot report an error:
//! k is clamped at 127 and q at ±Q (the host refuses such values). The words of a
//! record are the device layout's stored units (qdsl-runtime `device::layout`), 4
//! (packed20) or 6 (packed30) little-endian 32-bit words per group: packed20 holds real
//! i in bits [20i, 20i + 20) of its 128-bit group and e in bits [120, 128); packed30
//! real i in bits [0, 30) of word i and e's bits [2i, 2i + 2) in bits [30, 32) of words
//! 0…3.

use crate::format::PackedWidth;

/// 32-bit words of one group (4 or 6).
pub fn group_words(w: PackedWidth) -> usize {
    w.group_bytes() / 4
}

/// Bytes of a site of `reals` reals, ⌈reals/6⌉ groups.
pub fn record_bytes(w: PackedWidth, reals: usize) -> usize {
    reals.div_ceil(crate::format::fermion::GROUP_REALS) * w.group_bytes()
}

/// `unpack_<fmt>(w, q) → e` and `pack_<fmt>(q, e, w)`: one group's integers and exponent
/// from and to its words.
fn group_codec(w: PackedWidth) -> &'static str {
    match w {
        PackedWidth::Bits20 => {
            r#"// packed20: real i of a group in bits [20i, 20i+20) of its words w[0..4] (little-endian), e in bits [120, 128).
__device__ __forceinline__ unsigned unpack_packed20(const unsigned* w, int* q) {
#pragma unroll
    for (int i = 0; i < 6; i++) {
        const int j = (20 * i) / 32, sh = (20 * i) % 32;
        const unsigned f = __funnelshift_r(w[j], j < 3 ? w[j + 1] : 0u, sh);
        q[i] = ((int)(f << 12)) >> 12;
    }
    return w[3] >> 24;
}
__device__ __forceinline__ void pack_packed20(const int* q, unsigned e, unsigned* w) {
    w[0] = 0u; w[1] = 0u; w[2] = 0u; w[3] = e << 24;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        const unsigned f = (unsigned)q[i] & 0xfffffu;
        const int j = (20 * i) / 32, sh = (20 * i) % 32;
        w[j] |= f << sh;
        if (sh > 12) w[j + 1] |= f >> (32 - sh);
    }
}
"#
        }
        PackedWidth::Bits30 => {
            r#"// packed30: real i of a group in bits [0, 30) of w[i]; bits [2i, 2i+2) of e in bits [30, 32) of w[i], i < 4.
__device__ __forceinline__ unsigned unpack_packed30(const unsigned* w, int* q) {
    unsigned e = 0u;
#pragma unroll
    for (int i = 0; i < 6; i++) {
        q[i] = ((int)(w[i] << 2)) >> 2;
        if (i < 4) e |= (w[i] >> 30) << (2 * i);
    }
    return e;
}
__device__ __forceinline__ void pack_packed30(const int* q, unsigned e, unsigned* w) {
#pragma unroll
    for (int i = 0; i < 6; i++) w[i] = ((unsigned)q[i] & 0x3fffffffu) | ((i < 4 ? (e >> (2 * i)) & 3u : 0u) << 30);
}
"#
        }
    }
}

/// The device code of packed width `w`: the group codec, `decode_<fmt><N>(r, w)` (the N
/// reals of a site from its words) and, with `encoder`, `encode_<fmt><N>(w, v)` (see
/// the module doc).
pub fn cuda(w: PackedWidth, encoder: bool) -> String {
    let (name, b, q, gw) = (w.name(), w.bits(), w.max_int(), group_words(w));
    // Q·2^−126, exact in f64 (the bound below which k = −126).
    let q_min = format!("{:e}", q as f64 * 2f64.powi(-126));
    let mut s = group_codec(w).to_string();
    s.push_str(&format!(
        "// {name}: reals 0..N-1 of a site from its words w (group g at w[{gw} g]): v = q 2^(e-127), exact.\n\
         template <int N> __device__ __forceinline__ void decode_{name}(real* r, const unsigned* w) {{\n\
         #pragma unroll\n    \
         for (int g = 0; g < (N + 5) / 6; g++) {{\n        \
         int q[6];\n        \
         const real s = (real)__int_as_float((int)(unpack_{name}(w + {gw} * g, q) << 23));\n\
         #pragma unroll\n        \
         for (int i = 0; i < 6; i++) {{ if (6 * g + i < N) r[6 * g + i] = (real)q[i] * s; }}\n    \
         }}\n}}\n"
    ));
    if encoder {
        s.push_str(&format!(
            "// {name}: the words of a site of N reals v (k = max(-126, the smallest integer with Q 2^k >= m), at most 127;\n\
             // q = round_half_even(v 2^-k) clamped to +-Q; 2^k, 2^-k from their f64 bits, every product exact).\n\
             template <int N> __device__ __forceinline__ void encode_{name}(unsigned* w, const real* v) {{\n\
             #pragma unroll\n    \
             for (int g = 0; g < (N + 5) / 6; g++) {{\n        \
             double x[6], m = 0.0;\n\
             #pragma unroll\n        \
             for (int i = 0; i < 6; i++) {{ x[i] = 6 * g + i < N ? (double)v[6 * g + i] : 0.0; m = fmax(m, fabs(x[i])); }}\n        \
             int q[6] = {{0, 0, 0, 0, 0, 0}};\n        \
             unsigned e = 0u;\n        \
             if (m > 0.0) {{\n            \
             int k = -126;\n            \
             if (m > {q_min}) {{\n                \
             k = (int)((__double_as_longlong(m) >> 52) & 0x7ff) - 1023 - {b} + 2;\n                \
             if ({q}.0 * __longlong_as_double((long long)(1023 + k) << 52) < m) k += 1;\n            \
             }}\n            \
             k = min(k, 127);\n            \
             e = (unsigned)(k + 127);\n            \
             const double down = __longlong_as_double((long long)(1023 - k) << 52);\n\
             #pragma unroll\n            \
             for (int i = 0; i < 6; i++) q[i] = (int)fmax(-{q}.0, fmin({q}.0, rint(x[i] * down)));\n        \
             }}\n        \
             pack_{name}(q, e, w + {gw} * g);\n    \
             }}\n}}\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FermionFormat;

    /// The packed20 positions of the source (real i at bit 20i: word ⌊20i/32⌋, shift
    /// 20i mod 32, straddling where the shift exceeds 12), replayed on the host, give
    /// the bytes qdsl_core::format's encoder writes for a group, and the funnel shift
    /// and sign extension of the decoder read its integers back; packed30 likewise
    /// (words of 30 bits, e's bit pairs on top of words 0…3).
    #[test]
    fn word_positions_match_the_host_format() {
        // A group whose integers take every sign and the extremes: m = 1 → k with
        // Q 2^k ≥ 1, values q·2^k.
        for w in [PackedWidth::Bits20, PackedWidth::Bits30] {
            let q = w.max_int();
            let k = w.scale_exponent(1.0).unwrap();
            let ints = [-q, q, -1, 1, 0, q / 3];
            let values: Vec<f64> = ints.iter().map(|&i| i as f64 * 2f64.powi(k)).collect();
            let mut bytes = vec![0u8; w.group_bytes()];
            FermionFormat::Packed(w)
                .encode(&values, &mut bytes)
                .unwrap();
            let words: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let e = (k + 127) as u32;
            // The device packing, replayed.
            let mut packed = vec![0u32; group_words(w)];
            match w {
                PackedWidth::Bits20 => {
                    packed[3] = e << 24;
                    for (i, &qi) in ints.iter().enumerate() {
                        let f = (qi as u32) & 0xf_ffff;
                        let (j, sh) = (20 * i / 32, 20 * i % 32);
                        packed[j] |= f << sh;
                        if sh > 12 {
                            packed[j + 1] |= f >> (32 - sh);
                        }
                    }
                }
                PackedWidth::Bits30 => {
                    for (i, &qi) in ints.iter().enumerate() {
                        let top = if i < 4 { (e >> (2 * i)) & 3 } else { 0 };
                        packed[i] = ((qi as u32) & 0x3fff_ffff) | top << 30;
                    }
                }
            }
            assert_eq!(packed, words, "{}", w.name());
            // The device unpacking, replayed.
            for (i, &qi) in ints.iter().enumerate() {
                let got = match w {
                    PackedWidth::Bits20 => {
                        let (j, sh) = (20 * i / 32, 20 * i % 32);
                        let hi = if j < 3 { words[j + 1] } else { 0 };
                        let f = ((u64::from(hi) << 32 | u64::from(words[j])) >> sh) as u32;
                        ((f << 12) as i32) >> 12
                    }
                    PackedWidth::Bits30 => ((words[i] << 2) as i32) >> 2,
                };
                assert_eq!(i64::from(got), qi, "{} real {i}", w.name());
            }
        }
    }

    /// The source carries the format's constants: b in the exponent rule, ±Q in the
    /// clamp, Q·2^−126 (parsed back to the exact f64), the group's words.
    #[test]
    fn sources_carry_the_format_constants() {
        let s = cuda(PackedWidth::Bits20, true);
        assert!(s.contains("- 1023 - 20 + 2"), "{s}");
        assert!(s.contains("fmin(524287.0"), "{s}");
        assert!(s.contains("pack_packed20(q, e, w + 4 * g)"), "{s}");
        let lit = s
            .split("if (m > ")
            .nth(2)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        assert_eq!(lit.parse::<f64>().unwrap(), 524_287.0 * 2f64.powi(-126));
        let s = cuda(PackedWidth::Bits30, false);
        assert!(s.contains("unpack_packed30(w + 6 * g, q)"), "{s}");
        assert!(!s.contains("encode_packed30"), "no encoder asked for");
        assert_eq!(record_bytes(PackedWidth::Bits20, 24), 64);
        assert_eq!(record_bytes(PackedWidth::Bits30, 6), 24);
        assert_eq!(record_bytes(PackedWidth::Bits20, 4), 16);
    }
}
