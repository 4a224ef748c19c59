//! Compressed long links (the `long_recon` knob): L = c·W, W ∈ U(3), stored as
//! [`crate::format::link::ScaledLinkFormat`] defines it, decoded inline.
//!
//! Device layout of a long field `f_<name>` in recon 13 (12 + sign, 9): the 12 (12, 8)
//! reals of W's rows 0, 1 (of V's rows 0, 1; of W's SU(3) part in recon 8) form a record
//! in the gauge format, chunked like a recon-12 (recon-12, recon-8) field; for recon 13
//! and 9 the phase t = arg(det W)/π of link μ at checkerboard site i is element
//! μ·stride + i of the separate array `phase_<name>` (one real in the gauge format:
//! `float`/`double`, or the raw 2- or 1-byte word of a narrow format), so the record keeps
//! its 16-byte chunks and no byte is padding; recon 12 + sign stores no phase. The scale
//! c is the kernel parameter `scale_<name>` (compute type). Kernel parameters, in this
//! order: `f_<name>`, `phase_<name>` (recon 13, 9), `scale_<name>` (in place of the
//! single pointer).
//!
//! Decode, in the compute type and the order of qdsl-core's `ScaledLinkFormat::decode`:
//!
//! ```text
//! recon 13:        rows 0, 1 = w0, w1; row 2 = (cos πt, sin πt)·conj(w0 × w1);  L = c·W
//! recon 9:         V = recon8(p);  W = (cos(πt/3), sin(πt/3))·V;                L = c·W
//! recon 12 + sign: rows 0, 1 = v0, v1; row 2 = conj(v0 × v1);                   L = (c·s)·V
//! ```
//!
//! except that the kernel keeps W (V) and multiplies by c (c·s) once per term, in the
//! accumulation (the transport is linear), instead of scaling the 18 reals. The sign s of
//! recon 12 + sign is `staggered_sign<μ, 3, a>(x, L3)` for the link at z = x + a·μ̂ of the
//! term at x (z differs from x in coordinate μ only, so η_μ(z) = η_μ(x) and only z_t needs
//! the wrap), the CUDA form of qdsl-core's `lattice::staggered_link_sign`: a few integer
//! operations of the term's own coordinates in place of a load.

use super::storage::fixed_factor;
use super::Src;
use crate::dsl::codec::chunk_type;
use crate::dsl::layout::SoaLayout;
use crate::dsl::long_links::LONG_LINK_STEPS;
use crate::dsl::variant::{LongRecon, StorageFormat};
use crate::format::link::ScaledCompression;

/// The parameters `f_<name>`, `phase_<name>` (recon 13, 9), `scale_<name>` of a long
/// field at `base` (`f_<name>`) with record layout `record`.
pub(super) fn pointer_params(
    base: &str,
    comp: ScaledCompression,
    record: &SoaLayout,
) -> Vec<String> {
    let mut params = vec![format!("const {}* __restrict__ {base}", chunk_type(record))];
    if comp.stores_phase() {
        params.push(format!(
            "const {}* __restrict__ {}",
            phase_type(record.format),
            phase_of(base)
        ));
    }
    params.push(format!("const real {}", scale_of(base)));
    params
}

/// The CUDA type of one stored phase in `format`.
fn phase_type(format: StorageFormat) -> &'static str {
    match format {
        StorageFormat::F64 => "double",
        StorageFormat::F32 => "float",
        _ if format.bytes() == 2 => "unsigned short",
        _ => "unsigned char",
    }
}

fn bare(base: &str) -> &str {
    base.strip_prefix("f_").unwrap_or(base)
}

/// `phase_<name>` of the field at `base`.
fn phase_of(base: &str) -> String {
    format!("phase_{}", bare(base))
}

/// `scale_<name>` of the field at `base`.
fn scale_of(base: &str) -> String {
    format!("scale_{}", bare(base))
}

/// After the record's reals `g` are loaded: rebuilds `m` (the `cplx m[3][3]` already
/// declared) = W = L/c for recon 13 and 9 (loading the phase of link `mu` at checkerboard
/// site `site`), V = L/(c·s) for recon 12 + sign; returns the factor the caller applies
/// once, in its accumulation (an expression of the term's scope): `scale_<name>`, times
/// for recon 12 + sign the staggered sign of the link at x + `at`·μ̂.
pub(super) fn unpack(
    s: &mut Src,
    indent: usize,
    base: &str,
    comp: ScaledCompression,
    format: StorageFormat,
    mu: usize,
    (site, at): (&str, i32),
) -> String {
    let f = match comp {
        ScaledCompression::Recon12 => {
            s.line(indent, "unpack_link<true>(m, g);");
            return format!(
                "staggered_sign<{mu}, {LONG_LINK_STEPS}, {at}>(x, L3) * {}",
                scale_of(base)
            );
        }
        ScaledCompression::Recon13 => "unpack_link13",
        ScaledCompression::Recon9 => "unpack_link9",
    };
    let stride = format!("stride_{}", bare(base));
    let raw = format!("{}[{mu} * {stride} + {site}]", phase_of(base));
    let t = if format.is_native() {
        format!("(real){raw}")
    } else {
        let inv_q = fixed_factor(format).map_or(String::new(), |f| format!(" * {f}"));
        format!("decode_{}((unsigned){raw}){inv_q}", format.name())
    };
    s.line(indent, &format!("{f}(m, g, {t});"));
    scale_of(base)
}

/// Whether `variant`'s long links need the recon-8 helpers (`sincos_pi`, `unpack_link8`):
/// recon 13 and 9, which decode a stored phase.
pub(super) fn needs_recon8_helpers(long_recon: LongRecon) -> bool {
    matches!(long_recon, LongRecon::R13 | LongRecon::R9)
}

/// The device functions of the long-link decode, for variants with compressed long links
/// (after the recon-8 helpers, which recon 9 calls).
pub(super) fn helpers(src: &mut Src, long_recon: LongRecon) {
    match long_recon {
        LongRecon::R18 => {}
        LongRecon::R12 => src.0.push_str(STAGGERED_SIGN),
        LongRecon::R13 | LongRecon::R9 => src.0.push_str(SCALED),
    }
}

const SCALED: &str = r#"// Long links L = c W, W in U(3): recon 13 = rows 0, 1 of W and t = arg(det W)/pi, row 2 =
// e^{i pi t} conj(w0 x w1); recon 9 = recon 8 of V = e^{-i pi t/3} W and t, W = e^{i pi t/3} V.
// Both rebuild W; the caller applies c.
__device__ __forceinline__ void unpack_link13(cplx (&m)[3][3], const real* g, real t) {
    unpack_link<true>(m, g);
    real s, co;
    sincos_pi(t, &s, &co);
#pragma unroll
    for (int b = 0; b < 3; b++) { m[2][b] = c_mul(cplx{co, s}, m[2][b]); }
}
__device__ __forceinline__ void unpack_link9(cplx (&m)[3][3], const real* g, real t) {
    unpack_link8(m, g);
    real s, co;
    sincos_pi(t / real(3), &s, &co);
#pragma unroll
    for (int a = 0; a < 3; a++) {
#pragma unroll
        for (int b = 0; b < 3; b++) { m[a][b] = c_mul(cplx{co, s}, m[a][b]); }
    }
}
"#;

const STAGGERED_SIGN: &str = r#"// Long links L = (c s) V, V in SU(3) (recon 12 + sign): s = +-1 is the sign MILC's staggered
// phases and antiperiodic time give the N-step link in direction MU from z = x + AT mu:
// eta_MU(z)^N times -1 per link of the path on the last time slice, floor((z_t + N) / L_t)
// of them (MU = t); eta_x = (-1)^t, eta_y = (-1)^(t+x), eta_z = (-1)^(t+x+y), eta_t = 1.
// z differs from x in coordinate MU only: eta_MU(z) = eta_MU(x), and z_t is x_t + AT wrapped.
template <int MU, int N, int AT> __device__ __forceinline__ real staggered_sign(const int (&x)[4], int LT) {
    int e = (N % 2 == 0) ? 0 : (MU == 0) ? x[3] : (MU == 1) ? x[3] + x[0] : (MU == 2) ? x[3] + x[0] + x[1] : 0;
    if (MU == 3) {
        int zt = x[3] + AT;
#pragma unroll
        for (int k = 0; k < (AT < 0 ? -AT : AT); k++) { zt += (zt < 0) ? LT : (zt >= LT) ? -LT : 0; }
#pragma unroll
        for (int k = 1; k <= N; k++) { e += (zt + N >= k * LT); }
    }
    return (e & 1) ? real(-1) : real(1);
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 recon 13 keeps the 48-byte recon-12 record (3 × float4) plus a float phase;
    /// f32 recon 12 + sign the same record and no phase; fixed16 recon 9: a 16-byte
    /// record (1 × uint4) plus a 2-byte phase.
    #[test]
    fn parameters_and_records_by_hand() {
        let c13 = ScaledCompression::Recon13;
        let l13 = SoaLayout::new(c13.record_reals(), StorageFormat::F32);
        assert_eq!(l13.reals, 12);
        assert_eq!(
            pointer_params("f_long", c13, &l13),
            [
                "const float4* __restrict__ f_long",
                "const float* __restrict__ phase_long",
                "const real scale_long"
            ]
        );
        let c12 = ScaledCompression::Recon12;
        let l12 = SoaLayout::new(c12.record_reals(), StorageFormat::F32);
        assert_eq!(l12, l13);
        assert_eq!(
            pointer_params("f_long", c12, &l12),
            ["const float4* __restrict__ f_long", "const real scale_long"]
        );
        let c9 = ScaledCompression::Recon9;
        let l9 = SoaLayout::new(c9.record_reals(), StorageFormat::Fixed16);
        assert_eq!(l9.reals, 8);
        assert_eq!(chunk_type(&l9), "uint4");
        assert_eq!(
            pointer_params("f_long", c9, &l9)[1],
            "const unsigned short* __restrict__ phase_long"
        );
    }

    /// Recon 12 + sign loads no phase: the factor is the computed sign of the link at
    /// x + a·μ̂ times the scale; recon 13 reads `phase_long` at the link's site.
    #[test]
    fn unpack_factors_by_hand() {
        let mut s = Src(String::new(), 0);
        let f = unpack(
            &mut s,
            0,
            "f_long",
            ScaledCompression::Recon12,
            StorageFormat::F32,
            2,
            ("ln", -3),
        );
        assert_eq!(f, "staggered_sign<2, 3, -3>(x, L3) * scale_long");
        assert_eq!(s.0.trim(), "unpack_link<true>(m, g);");
        let mut s = Src(String::new(), 0);
        let f = unpack(
            &mut s,
            0,
            "f_long",
            ScaledCompression::Recon13,
            StorageFormat::F32,
            1,
            ("ln", 0),
        );
        assert_eq!(f, "scale_long");
        assert_eq!(
            s.0.trim(),
            "unpack_link13(m, g, (real)phase_long[1 * stride_long + ln]);"
        );
    }
}
