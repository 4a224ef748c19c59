//! The device conversion of the bit-packed fermion formats (`packed20`, `packed30`),
//! operation for operation as `qdsl_core::format` defines them.
//!
//! A site of N reals is G = ⌈N/6⌉ groups; each group is 4 (packed20) or 6 (packed30)
//! little-endian 32-bit words, the stored units of the device layout (word j of the site
//! at `qdsl_offset(site, sub, j, stride)`), moved a whole chunk (`uint4`, `uint2`,
//! `unsigned`) at a time. Per group, with Q = 2^(b−1) − 1:
//!
//! ```text
//! m = max_i |x_i|          (x_i = 0 in the padding slots of the last group)
//! k = −126                                   if m ≤ Q·2^−126
//!   = ⌊log2 m⌋ − b + 2, plus 1 if Q·2^k < m  otherwise      (overflow if k > 127)
//! e = k + 127 (e = 0 and q = 0 for m = 0),  q_i = round_half_even(x_i · 2^−k)
//! decode: v_i = T(q_i) · T(2^(e−127))  (the f32 with exponent field e and zero
//!         significand, +0 for e = 0)
//! ```
//!
//! 2^−k and 2^k are exact f64 powers of two built from their bits, so every product is
//! exact and the device reproduces the host bit for bit. packed20: real i in bits
//! [20i, 20i + 20) of the 128-bit group (a funnel shift where it straddles two words),
//! e in bits [120, 128); packed30: real i in bits [0, 30) of word i, e's bits [2i, 2i + 2)
//! in bits [30, 32) of words 0…3, words 4 and 5 with zero top bits.

use super::super::layout::DeviceLayout;
use super::constant;
use crate::device::format::{HostReal, PACKED_WORD_BYTES};
use qdsl_core::format::fermion::GROUP_REALS;
use qdsl_core::format::PackedWidth;
use std::fmt::Write;

/// Stored exponent bias, e = k + 127 (as in `qdsl_core::format`).
const BIAS: i32 = 127;
/// Smallest scale exponent k.
const MIN_K: i32 = -126;
/// Largest scale exponent k (e = 254).
const MAX_K: i32 = 127;

/// 32-bit words of one group (4 or 6).
pub(super) fn group_words(w: PackedWidth) -> usize {
    w.group_bytes() / PACKED_WORD_BYTES
}

/// `qdsl_pack(q, e, w)` and `qdsl_unpack(w, q, bad) → e` for one group of width `w`.
fn group_codec(w: PackedWidth) -> String {
    match w {
        PackedWidth::Bits20 => "// packed20: real i in bits [20i, 20i+20) of w[0..4] (little-endian), e in bits [120, 128).\n\
             __device__ __forceinline__ void qdsl_pack(const int* q, unsigned e, unsigned* w) {\n    \
             w[0] = 0u; w[1] = 0u; w[2] = 0u; w[3] = e << 24;\n\
             #pragma unroll\n    \
             for (int i = 0; i < 6; i++) {\n        \
             const unsigned f = (unsigned)q[i] & 0xfffffu;\n        \
             const int j = (20 * i) / 32, sh = (20 * i) % 32;\n        \
             w[j] |= f << sh;\n        \
             if (sh > 12) w[j + 1] |= f >> (32 - sh);\n    }\n}\n\
             __device__ __forceinline__ unsigned qdsl_unpack(const unsigned* w, int* q, int* bad) {\n\
             #pragma unroll\n    \
             for (int i = 0; i < 6; i++) {\n        \
             const int j = (20 * i) / 32, sh = (20 * i) % 32;\n        \
             const unsigned f = __funnelshift_r(w[j], j < 3 ? w[j + 1] : 0u, sh) & 0xfffffu;\n        \
             q[i] = ((int)(f << 12)) >> 12;\n    }\n    \
             return w[3] >> 24;\n}\n"
            .to_string(),
        PackedWidth::Bits30 => "// packed30: real i in bits [0, 30) of w[i]; bits [2i, 2i+2) of e in bits [30, 32) of w[i], i < 4.\n\
             __device__ __forceinline__ void qdsl_pack(const int* q, unsigned e, unsigned* w) {\n\
             #pragma unroll\n    \
             for (int i = 0; i < 6; i++) w[i] = ((unsigned)q[i] & 0x3fffffffu) | ((i < 4 ? (e >> (2 * i)) & 3u : 0u) << 30);\n}\n\
             __device__ __forceinline__ unsigned qdsl_unpack(const unsigned* w, int* q, int* bad) {\n    \
             unsigned e = 0u;\n\
             #pragma unroll\n    \
             for (int i = 0; i < 6; i++) {\n        \
             q[i] = ((int)(w[i] << 2)) >> 2;\n        \
             if (i < 4) e |= (w[i] >> 30) << (2 * i);\n    }\n    \
             if ((w[4] | w[5]) >> 30) *bad |= QDSL_CORRUPT;\n    \
             return e;\n}\n"
            .to_string(),
    }
}

/// The CUDA type of one chunk of W bytes of words.
fn chunk_type(layout: &DeviceLayout) -> (&'static str, usize) {
    match layout.chunk_bytes {
        16 => ("uint4", 4),
        8 => ("uint2", 2),
        _ => ("unsigned", 1),
    }
}

/// The components of a chunk variable of `words` words.
const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

/// Lines moving the site's words between `w[]` and the device layout, a chunk at a time
/// (`load`: from `in`; else to `out`).
fn move_words(layout: &DeviceLayout, load: bool) -> String {
    let (ty, per) = chunk_type(layout);
    let mut s = String::new();
    for c in 0..layout.chunks() {
        let at = format!("qdsl_offset(site, sub, {}, stride)", c * per);
        let parts: Vec<String> = (0..per).map(|p| format!("w[{}]", c * per + p)).collect();
        if load {
            if per == 1 {
                let _ = writeln!(s, "    w[{c}] = *(const unsigned*)(in + {at});");
            } else {
                let _ = write!(s, "    {{ const {ty} t = *(const {ty}*)(in + {at});");
                for (p, part) in parts.iter().enumerate() {
                    let _ = write!(s, " {part} = t.{};", COMPONENTS[p]);
                }
                s += " }\n";
            }
        } else if per == 1 {
            let _ = writeln!(s, "    *(unsigned*)(out + {at}) = w[{c}];");
        } else {
            let _ = writeln!(
                s,
                "    *({ty}*)(out + {at}) = make_{ty}({});",
                parts.join(", ")
            );
        }
    }
    s
}

/// Groups per record, ⌈N/6⌉.
fn groups(layout: &DeviceLayout) -> usize {
    layout.host_reals.div_ceil(GROUP_REALS)
}

/// The group helpers, to be placed before `qdsl_encode_record`/`qdsl_decode_record`.
pub(super) fn helpers(w: PackedWidth) -> String {
    group_codec(w)
}

/// The body of `qdsl_encode_record` (after `v` = the host reals) for packed width `w`.
pub(super) fn encode_body(w: PackedWidth, layout: &DeviceLayout) -> String {
    let (n, g, gw) = (layout.host_reals, groups(layout), group_words(w));
    let b = w.bits() as i32;
    let q = w.max_int();
    let q_min = constant(q as f64 * 2f64.powi(MIN_K), HostReal::F64);
    let mut s = format!("    unsigned w[{}];\n", g * gw);
    let _ = write!(
        s,
        "    for (int g = 0; g < {g}; g++) {{\n        \
         double x[6];\n        double m = 0.0;\n        \
         for (int i = 0; i < 6; i++) {{\n            \
         const int k = 6 * g + i;\n            \
         x[i] = k < {n} ? v[k] : 0.0;\n            \
         if (!isfinite(x[i])) *bad |= QDSL_NON_FINITE;\n            \
         else m = fmax(m, fabs(x[i]));\n        }}\n        \
         int q[6] = {{0, 0, 0, 0, 0, 0}};\n        \
         unsigned e = 0u;\n        \
         if (m > 0.0) {{\n            \
         // k = max(-126, the smallest integer with Q 2^k >= m); 2^k, 2^-k from their bits (exact).\n            \
         int kk = {MIN_K};\n            \
         if (m > {q_min}) {{\n                \
         kk = (int)((__double_as_longlong(m) >> 52) & 0x7ff) - 1023 - {b} + 2;\n                \
         if ({q}.0 * __longlong_as_double((long long)(1023 + kk) << 52) < m) kk += 1;\n            }}\n            \
         if (kk > {MAX_K}) {{ *bad |= QDSL_OVERFLOW; kk = {MAX_K}; }}\n            \
         e = (unsigned)(kk + {BIAS});\n            \
         const double down = __longlong_as_double((long long)(1023 - kk) << 52);\n            \
         const host_t s = (host_t)__int_as_float((int)(e << 23));\n            \
         for (int i = 0; i < 6; i++) {{\n                \
         q[i] = (int)fmax(-{q}.0, fmin({q}.0, rint(x[i] * down)));  // rint: round half even\n                \
         if (isinf((host_t)q[i] * s)) *bad |= QDSL_OVERFLOW;\n            }}\n        }}\n        \
         qdsl_pack(q, e, w + {gw} * g);\n    }}\n"
    );
    s += &move_words(layout, false);
    s
}

/// The body of `qdsl_decode_record` for packed width `w`: r[k] in `host_t`, and the
/// status bit `QDSL_CORRUPT` for bytes no encoder writes (e = 255, q = −2^(b−1),
/// non-zero integers with e = 0 or in padding slots, non-zero packed30 padding bits).
pub(super) fn decode_body(w: PackedWidth, layout: &DeviceLayout) -> String {
    let (n, g, gw) = (layout.host_reals, groups(layout), group_words(w));
    let min = -(w.max_int() + 1);
    let mut s = format!("    unsigned w[{}];\n", g * gw);
    s += &move_words(layout, true);
    let _ = write!(
        s,
        "    for (int g = 0; g < {g}; g++) {{\n        \
         int q[6];\n        \
         const unsigned e = qdsl_unpack(w + {gw} * g, q, bad);\n        \
         if (e == 255u) *bad |= QDSL_CORRUPT;\n        \
         const host_t s = (host_t)__int_as_float((int)(e << 23));  // 2^(e-127), +0 for e = 0\n        \
         for (int i = 0; i < 6; i++) {{\n            \
         const int k = 6 * g + i;\n            \
         if (q[i] == {min} || (q[i] != 0 && (e == 0u || k >= {n}))) *bad |= QDSL_CORRUPT;\n            \
         if (k < {n}) r[k] = (host_t)q[i] * s;\n        }}\n    }}\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::format::DeviceFormat;
    use qdsl_core::format::FermionFormat;

    fn layout(f: FermionFormat, reals: usize) -> DeviceLayout {
        DeviceLayout::new(DeviceFormat::Fermion(f), reals, 40).unwrap()
    }

    /// Chunks by hand: packed20 Wilson (4 groups, 64 B) = 4 × uint4, one group each;
    /// packed30 Wilson (96 B) = 6 × uint4; packed30 staggered (24 B) = 3 × uint2;
    /// packed20 staggered (16 B) = 1 × uint4.
    #[test]
    fn words_move_in_whole_chunks() {
        let cases = [
            (FermionFormat::PACKED20, 24, 16, 4, 16),
            (FermionFormat::PACKED30, 24, 16, 6, 24),
            (FermionFormat::PACKED30, 6, 8, 3, 6),
            (FermionFormat::PACKED20, 6, 16, 1, 4),
        ];
        for (f, reals, w, chunks, words) in cases {
            let l = layout(f, reals);
            assert_eq!(
                (l.chunk_bytes, l.chunks(), l.stored_reals),
                (w, chunks, words),
                "{f} {reals}"
            );
        }
        let s = move_words(&layout(FermionFormat::PACKED30, 6), true);
        assert_eq!(s.matches("const uint2 t").count(), 3, "{s}");
        assert!(s.contains("w[4] = t.x; w[5] = t.y;"), "{s}");
    }

    /// The packed20 word positions of the source (bit 20i: word ⌊20i/32⌋, shift 20i mod
    /// 32, straddling where the shift exceeds 12), replayed on the host, give the
    /// 128-bit little-endian integer Σ (q_i mod 2^20)·2^(20i) + e·2^120 of the format's
    /// definition, for a pattern with every sign and the extreme integers; the source's
    /// sign extension and funnel shift read it back.
    #[test]
    fn packed20_word_positions_match_the_core_layout() {
        let q: [i64; 6] = [-524_287, 524_287, -1, 1, 0x5_5555, -0x2_aaaa];
        let e = 200u32;
        let mut words = [0u32, 0, 0, e << 24];
        for (i, &qi) in q.iter().enumerate() {
            let f = (qi as u32) & 0xf_ffff;
            let (j, sh) = (20 * i / 32, 20 * i % 32);
            words[j] |= f << sh;
            if sh > 12 {
                words[j + 1] |= f >> (32 - sh);
            }
        }
        let mut want = (e as u128) << 120;
        for (i, &qi) in q.iter().enumerate() {
            want |= ((qi as u64 & 0xf_ffff) as u128) << (20 * i);
        }
        let got = words
            .iter()
            .enumerate()
            .fold(0u128, |acc, (j, &wj)| acc | (wj as u128) << (32 * j));
        assert_eq!(got, want);
        for (i, &qi) in q.iter().enumerate() {
            let (j, sh) = (20 * i / 32, 20 * i % 32);
            let hi = if j < 3 { words[j + 1] } else { 0 };
            let funnel = ((((hi as u64) << 32) | words[j] as u64) >> sh) as u32;
            let f = funnel & 0xf_ffff;
            assert_eq!(i64::from(((f << 12) as i32) >> 12), qi, "real {i}");
        }
        assert_eq!(words[3] >> 24, e);
    }

    /// The encoder's constants: Q·2^−126 as an exact f64, b in the exponent rule, the
    /// clamp ±Q; the decoder checks −2^(b−1) and the 2 padding slots of a 4-real site.
    #[test]
    fn sources_carry_the_format_constants() {
        let l = layout(FermionFormat::PACKED20, 24);
        let enc = encode_body(PackedWidth::Bits20, &l);
        assert!(enc.contains(&constant(524_287.0 * 2f64.powi(-126), HostReal::F64)));
        assert!(enc.contains("- 1023 - 20 + 2"), "{enc}");
        assert!(enc.contains("fmin(524287.0"), "{enc}");
        assert!(enc.contains("if (kk > 127)"), "{enc}");
        let dec = decode_body(PackedWidth::Bits30, &layout(FermionFormat::PACKED30, 4));
        assert!(dec.contains("q[i] == -536870912"), "{dec}");
        assert!(dec.contains("k >= 4"), "{dec}");
        assert_eq!(group_words(PackedWidth::Bits30), 6);
    }
}
