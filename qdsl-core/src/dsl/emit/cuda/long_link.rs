//! Compressed long links (the `long_recon` knob): L = c·W, W ∈ U(3), stored as
//! [`crate::format::link::ScaledLinkFormat`] defines it, decoded inline.
//!
//! Device layout of a long field `f_<name>` in recon 13 (9): the 12 (8) reals of W's rows
//! 0, 1 (W's SU(3) part in recon 8) form a record in the gauge format, chunked like a
//! recon-12 (recon-8) field; the phase t = arg(det W)/π of link μ at checkerboard site i
//! is element μ·stride + i of the separate array `phase_<name>` (one real in the gauge
//! format: `float`/`double`, or the raw 2- or 1-byte word of a narrow format), so the
//! record keeps its 16-byte chunks and no byte is padding; the scale c is the kernel
//! parameter `scale_<name>` (compute type). Kernel parameters, in this order:
//! `f_<name>`, `phase_<name>`, `scale_<name>` (in place of the single pointer).
//!
//! Decode, in the compute type and the order of qdsl-core's `ScaledLinkFormat::decode`:
//!
//! ```text
//! recon 13: rows 0, 1 = w0, w1; row 2 = (cos πt, sin πt)·conj(w0 × w1);  L = c·W
//! recon 9:  V = recon8(p);  W = (cos(πt/3), sin(πt/3))·V;                L = c·W
//! ```
//!
//! except that the kernel keeps W and multiplies by c once per term, in the accumulation
//! (the transport is linear), instead of scaling W's 18 reals.

use super::storage::{chunk_type, fixed_factor};
use super::Src;
use crate::dsl::layout::SoaLayout;
use crate::dsl::variant::{LongRecon, StorageFormat, Variant};
use crate::format::link::ScaledCompression;

/// The compression and the record layout (12 or 8 reals) of a long field whose layout
/// has [`ScaledCompression::reals`] reals; `None` for every other layout.
pub(super) fn scaled(layout: &SoaLayout) -> Option<(ScaledCompression, SoaLayout)> {
    let comp = ScaledCompression::ALL
        .into_iter()
        .find(|c| c.reals() == layout.reals)?;
    Some((comp, SoaLayout::new(comp.reals() - 1, layout.format)))
}

/// The parameters `f_<name>`, `phase_<name>`, `scale_<name>` of a long field at `base`
/// (`f_<name>`), `None` when `layout` is not a scaled compression.
pub(super) fn pointer_params(base: &str, layout: &SoaLayout) -> Option<Vec<String>> {
    let (_, record) = scaled(layout)?;
    Some(vec![
        format!("const {}* __restrict__ {base}", chunk_type(&record)),
        format!(
            "const {}* __restrict__ {}",
            phase_type(layout.format),
            phase_of(base)
        ),
        format!("const real {}", scale_of(base)),
    ])
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
pub(super) fn scale_of(base: &str) -> String {
    format!("scale_{}", bare(base))
}

/// After the record's reals `g` are loaded: loads the phase of link `mu` at `site` and
/// rebuilds `m` = W = L/c (the `cplx m[3][3]` already declared); the caller multiplies by
/// the scale c = `scale_<name>` ([`scale_of`]) once, in its accumulation.
pub(super) fn unpack(
    s: &mut Src,
    indent: usize,
    base: &str,
    comp: ScaledCompression,
    format: StorageFormat,
    mu: usize,
    site: &str,
) {
    let stride = format!("stride_{}", bare(base));
    let raw = format!("{}[{mu} * {stride} + {site}]", phase_of(base));
    let t = if format.is_native() {
        format!("(real){raw}")
    } else {
        let inv_q = fixed_factor(format).map_or(String::new(), |f| format!(" * {f}"));
        format!("decode_{}((unsigned){raw}){inv_q}", format.name())
    };
    let f = match comp {
        ScaledCompression::Recon13 => "unpack_link13",
        ScaledCompression::Recon9 => "unpack_link9",
    };
    s.line(indent, &format!("{f}(m, g, {t});"));
}

/// The device functions of the long-link decode, for variants with compressed long links
/// (after the recon-8 helpers, which recon 9 calls).
pub(super) fn helpers(src: &mut Src, variant: &Variant) {
    if variant.long_recon != LongRecon::R18 {
        src.0.push_str(SCALED);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// f32 recon 13 keeps the 48-byte recon-12 record (3 × float4) plus a float phase;
    /// fixed16 recon 9: a 16-byte record (1 × uint4) plus a 2-byte phase; recon 18/12/8
    /// layouts are not long-link layouts.
    #[test]
    fn parameters_and_records_by_hand() {
        let l13 = SoaLayout::new(13, StorageFormat::F32);
        assert_eq!(
            pointer_params("f_long", &l13).unwrap(),
            [
                "const float4* __restrict__ f_long",
                "const float* __restrict__ phase_long",
                "const real scale_long"
            ]
        );
        let l9 = SoaLayout::new(9, StorageFormat::Fixed16);
        let (comp, record) = scaled(&l9).unwrap();
        assert_eq!((comp, record.reals), (ScaledCompression::Recon9, 8));
        assert_eq!(chunk_type(&record), "uint4");
        assert_eq!(
            pointer_params("f_long", &l9).unwrap()[1],
            "const unsigned short* __restrict__ phase_long"
        );
        for reals in [18, 12, 8] {
            assert!(scaled(&SoaLayout::new(reals, StorageFormat::F32)).is_none());
        }
    }
}
