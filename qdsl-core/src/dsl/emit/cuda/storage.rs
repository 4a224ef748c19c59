//! How fields are read and written: the chunked structure-of-arrays loads and stores
//! ([`crate::dsl::layout`]), the decoding and encoding of the narrow storage formats and
//! the inline gauge reconstruction.
//!
//! f64/f32 fields are read in [`SoaLayout`] chunks of the compute type. A narrow field
//! (f16, bf16, fixed16, fixed8) is read as raw bits in the device layout of the runtime's
//! fields (qdsl-runtime `device::layout`): a record of R reals of b bytes is cut into
//! chunks of W bytes, W the largest of 16, 8, 4, 2, 1 dividing R·b (`uint4`, `uint2`,
//! `unsigned`, `unsigned short`, `unsigned char`), chunk c of site i at c·stride + i.
//! Each real is then decoded exactly as [`crate::format`] defines it, computing in the
//! kernel's `real` (f32 for every narrow spinor format):
//!
//! * f16, bf16: v = the stored value (exact conversion);
//! * fixed-point fermions: v_k = q_k · s, s = fl(norm · fl(1/Q)), one f32 norm per site
//!   from the separate array `norm_<field>`;
//! * fixed-point links: v = q · fl(1/Q) (no norm);
//! * recon 12: row 2 = conj(row 0 × row 1); recon 8: QUDA's parametrisation
//!   ([`crate::format::Compression::Recon8`]).
//!
//! A stencil term defers the fixed-point scales ([`Scaling::Deferred`]): its source and
//! links stay the stored integers, and s·fl(1/Q) (times a long link's scale) multiplies
//! once, in the accumulation's multiply-adds — the same value to f32 rounding, a
//! multiply per real fewer.
//!
//! The output is encoded on store: fixed point with norm = max_k |v_k| (an f32, so the
//! smallest f32 ≥ the max is the max itself), c = Q/norm, q_k = round_half_even(v_k·c);
//! f16/bf16 rounded to nearest even. The arithmetic is the compute type's, so a stored
//! integer may differ by one step from the host encoding where v_k·c lies within an f32
//! rounding of a half-integer; f16 overflow stores ±∞ (the device cannot return an error).

use super::Src;
pub(super) use crate::dsl::codec::twice_bias;
use crate::dsl::codec::{chunk_type, chunks, cuda_codec, fixed_q, words};
use crate::dsl::kernel_ir::{Reads, Scaling};
use crate::dsl::layout::SoaLayout;
use crate::dsl::variant::{LongRecon, Recon, StorageFormat};
use crate::format::link::ScaledCompression;

/// The load/store/unpack helpers every kernel source includes after the arithmetic.
pub(super) fn storage_helpers(src: &mut Src) {
    src.0.push_str(
        r#"// Chunk c of site i is element c * stride + i (qdsl_core::dsl::layout). STREAM loads
// (links: each is read once per launch) go through the evict-first cache path (__ldcs), so
// that L1 and L2 keep the neighbour sites that several threads read.
template <bool STREAM, typename V> __device__ __forceinline__ V ld(const V* __restrict__ p) { return STREAM ? __ldcs(p) : *p; }
// Asks L2 for the line holding *p (a hint: no register is written).
template <typename T> __device__ __forceinline__ void prefetch_l2(const T* p) { asm volatile("prefetch.global.L2 [%0];" :: "l"(p)); }
template <int N, bool STREAM = false> __device__ __forceinline__ void load(real* r, const float4* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float4 v = ld<STREAM>(p + c * stride + i); r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load(real* r, const float2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float2 v = ld<STREAM>(p + c * stride + i); r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load(real* r, const double2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const double2 v = ld<STREAM>(p + c * stride + i); r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load(real* r, const double* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { r[c] = ld<STREAM>(p + c * stride + i); }
}
template <int N> __device__ __forceinline__ void store(float4* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_float4(r[4 * c], r[4 * c + 1], r[4 * c + 2], r[4 * c + 3]); }
}
template <int N> __device__ __forceinline__ void store(float2* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_float2(r[2 * c], r[2 * c + 1]); }
}
template <int N> __device__ __forceinline__ void store(double2* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_double2(r[2 * c], r[2 * c + 1]); }
}
template <int N> __device__ __forceinline__ void store(double* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = r[c]; }
}

// Link U (3 x 3, row-major) from its stored reals; recon 12 rebuilds row 2 = conj(row 0 x row 1).
template <bool RECON12> __device__ __forceinline__ void unpack_link(cplx (&m)[3][3], const real* g) {
#pragma unroll
    for (int a = 0; a < (RECON12 ? 2 : 3); a++) {
#pragma unroll
        for (int b = 0; b < 3; b++) { m[a][b] = {g[6 * a + 2 * b], g[6 * a + 2 * b + 1]}; }
    }
    if (RECON12) {
#pragma unroll
        for (int b = 0; b < 3; b++) {
            const int b1 = (b + 1) % 3, b2 = (b + 2) % 3;
            const cplx x = c_sub(c_mul(m[0][b1], m[1][b2]), c_mul(m[0][b2], m[1][b1]));
            m[2][b] = {x.re, -x.im};
        }
    }
}

"#,
    );
}

/// Whether a site field (colour spinor, xpay x) in `layout` carries per-site norms.
fn has_norm(layout: &SoaLayout) -> bool {
    layout
        .format
        .codec()
        .site_args()
        .contains(&crate::dsl::codec::ExtraArg::SiteNorm)
}

/// The declaration of a field's chunk pointer `<base>` (its codec's extra arguments,
/// such as the norms of a fixed-point colour spinor, follow it:
/// [`crate::dsl::codec::ExtraArg::cuda_decl`]; the stride parameter `stride_<…>` comes
/// with the other integers).
pub(super) fn pointer_param(base: &str, layout: &SoaLayout, output: bool) -> String {
    let ty = chunk_type(layout);
    let constness = if output { "" } else { "const " };
    format!("{constness}{ty}* __restrict__ {base}")
}

/// The name without the `f_` prefix of field pointers (`f_psi` → `psi`, `xpay_x` →
/// `xpay_x`).
fn bare(base: &str) -> &str {
    base.strip_prefix("f_").unwrap_or(base)
}

/// The stride parameter of the field whose pointer is `base` (`f_psi` → `stride_psi`,
/// `xpay_x` → `stride_xpay_x`).
fn stride_of(base: &str) -> String {
    format!("stride_{}", bare(base))
}

/// The norm parameter of the field whose pointer is `base` (`f_psi` → `norm_psi`).
fn norm_of(base: &str) -> String {
    format!("norm_{}", bare(base))
}

/// The template arguments after the chunk count of a load through the cache path
/// `reads`: none (the default path, for neighbour sites read by several threads), or
/// `, true` (STREAM: `__ldcs`, evict first, for records read once per launch).
fn template_args(reads: Reads) -> &'static str {
    match reads {
        Reads::Shared => "",
        Reads::Once => ", true",
    }
}

/// The tail array of an f64/f32 field at `base` with `subs` sub-records per site: the
/// element pointer `reinterpret_cast<T*>(base + S·H·stride)` ([`SoaLayout`]; the tail
/// of sub-record μ of site i is element μ·stride + i of it); `None` without a tail.
fn tail_array(base: &str, layout: &SoaLayout, subs: usize, constness: &str) -> Option<String> {
    (layout.tail_bytes() > 0).then(|| {
        format!(
            "reinterpret_cast<{constness}{}*>({base} + {} * {})",
            layout.tail_type(),
            subs * layout.head_chunks(),
            stride_of(base)
        )
    })
}

/// Where the f64/f32 record of sub-record `sub` (of `subs`: 4 links per site, else 1)
/// lies in the field at `base` ([`SoaLayout`]): the pointer to its first head chunk (the
/// head's H chunks are `stride` apart; `None` if H = 0), and the pointer to its 8-byte
/// tail in [`tail_array`] (`None` without a tail); `constness` for the casts.
fn native_parts(
    base: &str,
    layout: &SoaLayout,
    (sub, subs): (usize, usize),
    constness: &str,
) -> (Option<String>, Option<String>) {
    let (h, stride) = (layout.head_chunks(), stride_of(base));
    let head = (h > 0).then(|| match subs {
        1 => base.to_string(),
        _ => format!("{base} + {sub} * {h} * {stride}"),
    });
    let tail = tail_array(base, layout, subs, constness).map(|t| format!("{t} + {sub} * {stride}"));
    (head, tail)
}

/// How [`native_record`] moves an f64/f32 record: loaded through a cache path, or stored.
#[derive(Clone, Copy)]
enum Access {
    Load(Reads),
    Store,
}

/// Moves the f64/f32 record [`native_parts`] locates between the field and the reals
/// `reals` (`load<H>`/`store<H>` of the head, `load<1>`/`store<1>` of the tail).
fn native_record(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    subs: (usize, usize),
    (site, reals): (&str, &str),
    access: Access,
) {
    let (op, stream, constness) = match access {
        Access::Load(reads) => ("load", template_args(reads), "const "),
        Access::Store => ("store", "", ""),
    };
    let (head, tail) = native_parts(base, layout, subs, constness);
    let (h, stride) = (layout.head_chunks(), stride_of(base));
    // (reals, pointer) for a load, (pointer, reals) for a store.
    let args = |ptr: &str, at: usize| {
        let r = if at == 0 {
            reals.to_string()
        } else {
            format!("{reals} + {at}")
        };
        match access {
            Access::Load(_) => format!("{r}, {ptr}"),
            Access::Store => format!("{ptr}, {r}"),
        }
    };
    if let Some(p) = head {
        s.line(
            indent,
            &format!("{op}<{h}{stream}>({}, {site}, {stride});", args(&p, 0)),
        );
    }
    if let Some(t) = tail {
        let at = h * layout.reals_per_chunk();
        s.line(
            indent,
            &format!("{op}<1{stream}>({}, {site}, {stride});", args(&t, at)),
        );
    }
}

/// `prefetch_l2` of every chunk of the f64/f32 record [`native_parts`] locates.
fn native_prefetch(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    subs: (usize, usize),
    site: &str,
) {
    // One integer offset per address (chunk index · stride + site): a chain of pointer
    // additions keeps 64-bit intermediates alive (the f64 Wilson prefetch build spilled).
    let (h, stride) = (layout.head_chunks(), stride_of(base));
    let (sub, n) = subs;
    for c in 0..h {
        s.line(
            indent,
            &format!("prefetch_l2({base} + {} * {stride} + {site});", sub * h + c),
        );
    }
    if let Some(t) = tail_array(base, layout, n, "const ") {
        s.line(
            indent,
            &format!("prefetch_l2({t} + ({sub} * {stride} + {site}));"),
        );
    }
}

/// Declares `unsigned w<dest>[…]` and loads the raw record of site `site` (chunk
/// pointer expression `ptr`) into it.
#[allow(clippy::too_many_arguments)]
fn load_raw(
    s: &mut Src,
    indent: usize,
    ptr: &str,
    stride: &str,
    layout: &SoaLayout,
    site: &str,
    w: &str,
    reads: Reads,
) {
    s.line(indent, &format!("unsigned {w}[{}];", words(layout)));
    s.line(
        indent,
        &format!(
            "load_words<{}{}>({w}, {ptr}, {site}, {stride});",
            chunks(layout),
            template_args(reads)
        ),
    );
}

/// Declares `real <dest>[reals]` and loads site `site` of the site field at `base` into
/// it, in the compute type (narrow formats decoded, fixed point with the site's norm);
/// `reads` chooses the cache path of the record's loads. With [`Scaling::Deferred`], a
/// fixed-point record is left as its integers and the factor `<dest>_scale` (declared
/// here) is returned: the values are `dest[k]·<dest>_scale`.
pub(super) fn load_site(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    site: &str,
    dest: &str,
    reads: Reads,
    scaling: Scaling,
) -> Option<String> {
    s.line(indent, &format!("real {dest}[{}];", layout.reals));
    if layout.format.is_native() {
        native_record(
            s,
            indent,
            (base, layout),
            (0, 1),
            (site, dest),
            Access::Load(reads),
        );
        return None;
    }
    let name = layout.format.name();
    if layout.format.codec().whole_records() {
        // A record decoded whole (packed: groups of 6 sharing an exponent), exactly.
        s.line(indent, "{");
        load_raw(
            s,
            indent + 1,
            base,
            &stride_of(base),
            layout,
            site,
            &format!("{dest}_w"),
            reads,
        );
        s.line(
            indent + 1,
            &format!("decode_{name}<{}>({dest}, {dest}_w);", layout.reals),
        );
        s.line(indent, "}");
        return None;
    }
    let deferred = (has_norm(layout) && scaling != Scaling::Applied).then(|| {
        let f = format!("{dest}_scale");
        s.line(
            indent,
            &format!(
                "const real {f} = (real){}[{site}] * inv_q_{name}();",
                norm_of(base)
            ),
        );
        f
    });
    s.line(indent, "{");
    let w = format!("{dest}_w");
    load_raw(
        s,
        indent + 1,
        base,
        &stride_of(base),
        layout,
        site,
        &w,
        reads,
    );
    let scale = if has_norm(layout) && deferred.is_none() {
        s.line(
            indent + 1,
            &format!(
                "const real scale = (real){}[{site}] * inv_q_{name}();",
                norm_of(base)
            ),
        );
        "scale"
    } else {
        ""
    };
    let biased = scaling == Scaling::Biased;
    decode_loop(s, indent + 1, layout, (&w, dest), scale, biased);
    s.line(indent, "}");
    deferred
}

/// `dest[k] = decode(real k of w)·scale` for every real of the record (no factor when
/// `scale` is empty); fixed point a word at a time (`decode_q_<fmt>`, left `biased` on
/// request), then the factor.
fn decode_loop(
    s: &mut Src,
    indent: usize,
    layout: &SoaLayout,
    (w, dest): (&str, &str),
    scale: &str,
    biased: bool,
) {
    let (n, name) = (layout.reals, layout.format.name());
    if fixed_q(layout.format).is_some() {
        let bias = if biased { ", true" } else { "" };
        s.line(indent, &format!("decode_q_{name}<{n}{bias}>({dest}, {w});"));
        if !scale.is_empty() {
            s.line(indent, "#pragma unroll");
            s.line(
                indent,
                &format!("for (int k = 0; k < {n}; k++) {{ {dest}[k] *= {scale}; }}"),
            );
        }
        return;
    }
    let scale = if scale.is_empty() {
        String::new()
    } else {
        format!(" * {scale}")
    };
    s.line(indent, "#pragma unroll");
    s.line(
        indent,
        &format!(
            "for (int k = 0; k < {n}; k++) {{ {dest}[k] = decode_{name}(raw_real<{}>({w}, k)){scale}; }}",
            layout.format.bytes()
        ),
    );
}

/// `prefetch_l2` of every chunk (and the norm) of site `site` of the site field at `base`.
pub(super) fn prefetch_site(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    site: &str,
) {
    if layout.format.is_native() {
        native_prefetch(s, indent, (base, layout), (0, 1), site);
        return;
    }
    let stride = stride_of(base);
    for c in 0..chunks(layout) {
        s.line(
            indent,
            &format!("prefetch_l2({base} + {c} * {stride} + {site});"),
        );
    }
    if has_norm(layout) {
        s.line(indent, &format!("prefetch_l2({} + {site});", norm_of(base)));
    }
}

/// `prefetch_l2` of every chunk of the record of link `mu` at checkerboard site `site` of
/// the gauge field at `base` (of a long link its record; a phase is left).
pub(super) fn prefetch_link(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    mu: usize,
    site: &str,
) {
    if layout.format.is_native() {
        native_prefetch(s, indent, (base, layout), (mu, 4), site);
        return;
    }
    let (stride, c) = (stride_of(base), chunks(layout));
    for k in 0..c {
        s.line(
            indent,
            &format!("prefetch_l2({base} + {} * {stride} + {site});", mu * c + k),
        );
    }
}

/// A gauge field as a kernel reads it: the pointer `base`, the layout of its link
/// records, for a compressed long field its compression ([`super::long_link`]), and
/// whether its fixed-point reals are in units of s/Q, s = `scale_<name>` (the global
/// link scale).
#[derive(Clone, Copy)]
pub(super) struct LinkField<'a> {
    pub base: &'a str,
    pub layout: &'a SoaLayout,
    pub long: Option<ScaledCompression>,
    pub global_scale: bool,
}

/// Loads into the caller's `real <dest>[reals]` the stored reals of link μ at
/// checkerboard site `site` of the f32/f64 gauge field at `base` (streaming: read once
/// per launch), to be unpacked later ([`crate::dsl::kernel_ir::walk`]: the links a walking
/// kernel keeps in registers for every slice).
pub(super) fn load_link_reals(
    s: &mut Src,
    indent: usize,
    (base, layout): (&str, &SoaLayout),
    mu: usize,
    (site, dest): (&str, &str),
) {
    native_record(
        s,
        indent,
        (base, layout),
        (mu, 4),
        (site, dest),
        Access::Load(Reads::Once),
    );
}

/// Declares `cplx m[3][3]` and loads into it the link U_μ at checkerboard site `site`
/// (the term's site x + `at`·μ̂) of `field`, decoding narrow formats and reconstructing
/// compressed links (recon 12 or 8, by the layout's reals; long links in recon 13,
/// 12 + sign or 9 from their 12- or 8-real record and phase or sign,
/// [`super::long_link`]); `reads` chooses the cache path of the record's loads. With
/// [`Scaling::Deferred`] the link may come back as m = U / f with the factor f returned
/// (an expression of kernel constants, parameters and coordinates): fixed-point recon
/// 18/12 links stay in units of fl(1/Q) (recon 12's rebuilt row brought back to them),
/// long links leave their scale c (c·s) to the caller, and so do links with a global
/// scale s (m = U/s, or U/(s·fl(1/Q)) deferred; returned whatever the scaling). Recon 8
/// needs the true values and is always decoded whole.
pub(super) fn load_link(
    s: &mut Src,
    indent: usize,
    field: LinkField<'_>,
    mu: usize,
    (site, at): (&str, i32),
    reads: Reads,
    scaling: Scaling,
) -> Option<String> {
    let LinkField {
        base,
        layout,
        long,
        global_scale,
    } = field;
    let recon8 = layout.reals == Recon::R8.reals();
    // Whether the fixed-point reals stay integers (the factor fl(1/Q) deferred).
    let in_q = fixed_q(layout.format).is_some() && scaling != Scaling::Applied && !recon8;
    if layout.format.is_native() {
        s.line(indent, &format!("real g[{}];", layout.reals));
        native_record(
            s,
            indent,
            (base, layout),
            (mu, 4),
            (site, "g"),
            Access::Load(reads),
        );
    } else {
        let (stride, c) = (stride_of(base), chunks(layout));
        let ptr = format!("{base} + {mu} * {c} * {stride}");
        s.line(indent, &format!("real g[{}];", layout.reals));
        s.line(indent, "{");
        load_raw(s, indent + 1, &ptr, &stride, layout, site, "gw", reads);
        let scale = if in_q {
            String::new()
        } else {
            fixed_factor(layout.format).unwrap_or_default()
        };
        decode_loop(s, indent + 1, layout, ("gw", "g"), &scale, false);
        s.line(indent, "}");
    }
    s.line(indent, "cplx m[3][3];");
    let mut factors = Vec::new();
    if let Some(comp) = long {
        let scale = super::long_link::unpack(s, indent, base, comp, layout.format, mu, (site, at));
        factors.push(scale);
    } else if recon8 {
        s.line(indent, "unpack_link8(m, g);");
    } else {
        s.line(indent, "unpack_link<RECON12>(m, g);");
    }
    if global_scale {
        factors.push(format!("scale_{}", base.strip_prefix("f_").unwrap_or(base)));
    }
    if in_q {
        let inv_q = fixed_factor(layout.format).expect("a fixed-point format");
        if layout.reals == Recon::R12.reals() {
            s.line(
                indent,
                "// row 2 = conj(row 0 x row 1) is in units of fl(1/Q)^2: back to fl(1/Q)",
            );
            s.line(indent, "#pragma unroll");
            s.line(
                indent,
                &format!("for (int b = 0; b < 3; b++) {{ m[2][b] = c_scale({inv_q}, m[2][b]); }}"),
            );
        }
        factors.push(inv_q);
    }
    (!factors.is_empty()).then(|| factors.join(" * "))
}

/// Stores the reals `src` (compute type) to site `site` of the site field at `base`,
/// encoding narrow formats (fixed point: the site's norm to `norm_<field>`).
pub(super) fn store_site(
    s: &mut Src,
    indent: usize,
    base: &str,
    layout: &SoaLayout,
    site: &str,
    src: &str,
) {
    let stride = stride_of(base);
    if layout.format.is_native() {
        native_record(
            s,
            indent,
            (base, layout),
            (0, 1),
            (site, src),
            Access::Store,
        );
        return;
    }
    let name = layout.format.name();
    let n = layout.reals;
    s.line(indent, "{");
    if layout.format.codec().whole_records() {
        s.line(indent + 1, &format!("unsigned ow[{}];", words(layout)));
        s.line(indent + 1, &format!("encode_{name}<{n}>(ow, {src});"));
        s.line(
            indent + 1,
            &format!(
                "store_words<{}>({base}, ow, {site}, {stride});",
                chunks(layout)
            ),
        );
        s.line(indent, "}");
        return;
    }
    match fixed_q(layout.format) {
        Some(q) => {
            s.line(indent + 1, "float norm = 0.0f;");
            s.line(indent + 1, "#pragma unroll");
            s.line(
                indent + 1,
                &format!("for (int k = 0; k < {n}; k++) {{ norm = fmaxf(norm, fabsf((float){src}[k])); }}"),
            );
            s.line(indent + 1, &format!("{}[{site}] = norm;", norm_of(base)));
            s.line(
                indent + 1,
                &format!("const float c = norm > 0.0f ? {q}.0f / norm : 0.0f;"),
            );
        }
        None => s.line(indent + 1, "const float c = 0.0f;"),
    }
    s.line(indent + 1, &format!("unsigned ow[{}];", words(layout)));
    s.line(indent + 1, "#pragma unroll");
    s.line(
        indent + 1,
        &format!(
            "for (int k = 0; k < {}; k++) {{ ow[k] = 0u; }}",
            words(layout)
        ),
    );
    s.line(indent + 1, "#pragma unroll");
    s.line(
        indent + 1,
        &format!(
            "for (int k = 0; k < {n}; k++) {{ put_raw_real<{}>(ow, k, encode_{name}({src}[k], c)); }}",
            layout.format.bytes()
        ),
    );
    s.line(
        indent + 1,
        &format!(
            "store_words<{}>({base}, ow, {site}, {stride});",
            chunks(layout)
        ),
    );
    s.line(indent, "}");
}

/// The narrow-format helpers a variant needs, appended after [`storage_helpers`]:
/// raw-word loads and stores for the chunk types of the device layout, the decoder (and,
/// for the spinor format, the encoder) of each narrow format in use, and the recon-8
/// reconstruction. Nothing is appended for f64/f32 with recon 18/12.
pub(super) fn narrow_helpers(
    src: &mut Src,
    spinor: StorageFormat,
    gauge: StorageFormat,
    recon: Recon,
    long_recon: LongRecon,
) {
    let narrow: Vec<StorageFormat> =
        [spinor, gauge]
            .into_iter()
            .filter(|f| !f.is_native())
            .fold(Vec::new(), |mut v, f| {
                if !v.contains(&f) {
                    v.push(f);
                }
                v
            });
    if !narrow.is_empty() {
        src.0.push_str(RAW_WORDS);
    }
    for f in &narrow {
        src.0.push_str(&cuda_codec(
            *f,
            *f == spinor,
            spinor.compute() == StorageFormat::F64,
        ));
    }
    if recon == Recon::R8 || super::long_link::needs_recon8_helpers(long_recon) {
        src.0.push_str(RECON8);
    }
    super::long_link::helpers(src, long_recon);
}

/// Loads and stores of raw 32-bit words: chunk c of a record of `W`-byte chunks covers
/// bytes [c·W, (c + 1)·W) of the record, little-endian, so word k holds bytes 4k … 4k + 3.
const RAW_WORDS: &str = r#"// Narrow formats: a record is moved as raw little-endian 32-bit words w[] (byte 4k + j of
// the record is bits 8j..8j+7 of w[k]); chunk c of site i is element c * stride + i.
template <int N, bool STREAM = false> __device__ __forceinline__ void load_words(unsigned* w, const uint4* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const uint4 v = ld<STREAM>(p + c * stride + i); w[4 * c] = v.x; w[4 * c + 1] = v.y; w[4 * c + 2] = v.z; w[4 * c + 3] = v.w; }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load_words(unsigned* w, const uint2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const uint2 v = ld<STREAM>(p + c * stride + i); w[2 * c] = v.x; w[2 * c + 1] = v.y; }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load_words(unsigned* w, const unsigned* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { w[c] = ld<STREAM>(p + c * stride + i); }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load_words(unsigned* w, const unsigned short* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const unsigned v = ld<STREAM>(p + c * stride + i); w[c / 2] = (c % 2 == 0) ? v : (w[c / 2] | (v << 16)); }
}
template <int N, bool STREAM = false> __device__ __forceinline__ void load_words(unsigned* w, const unsigned char* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const unsigned v = ld<STREAM>(p + c * stride + i); w[c / 4] = (c % 4 == 0) ? v : (w[c / 4] | (v << (8 * (c % 4)))); }
}
template <int N> __device__ __forceinline__ void store_words(uint4* __restrict__ p, const unsigned* w, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_uint4(w[4 * c], w[4 * c + 1], w[4 * c + 2], w[4 * c + 3]); }
}
template <int N> __device__ __forceinline__ void store_words(uint2* __restrict__ p, const unsigned* w, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_uint2(w[2 * c], w[2 * c + 1]); }
}
template <int N> __device__ __forceinline__ void store_words(unsigned* __restrict__ p, const unsigned* w, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = w[c]; }
}
template <int N> __device__ __forceinline__ void store_words(unsigned short* __restrict__ p, const unsigned* w, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = (unsigned short)(w[c / 2] >> (16 * (c % 2))); }
}
template <int N> __device__ __forceinline__ void store_words(unsigned char* __restrict__ p, const unsigned* w, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = (unsigned char)(w[c / 4] >> (8 * (c % 4))); }
}
// The B-byte real k of a record held in words w (B = 1, 2), as its raw bits.
template <int B> __device__ __forceinline__ unsigned raw_real(const unsigned* w, int k) {
    return (w[k * B / 4] >> (8 * ((k * B) % 4))) & (B == 2 ? 0xffffu : 0xffu);
}
// Adds the raw bits of B-byte real k to words w (which start at zero).
template <int B> __device__ __forceinline__ void put_raw_real(unsigned* w, int k, unsigned bits) {
    w[k * B / 4] |= (bits & (B == 2 ? 0xffffu : 0xffu)) << (8 * ((k * B) % 4));
}
"#;

/// QUDA's recon-8 reconstruction, as `qdsl_core::format` defines it (order of operations
/// included; sin/cos through `sincospi`).
const RECON8: &str = r#"__device__ __forceinline__ void sincos_pi(float t, float* s, float* c) { sincospif(t, s, c); }
__device__ __forceinline__ void sincos_pi(double t, double* s, double* c) { sincospi(t, s, c); }
__device__ __forceinline__ cplx c_conj(cplx a) { return {a.re, -a.im}; }
// Recon 8: p = (arg v00/pi, arg v20/pi, v01, v02, v10). |v00| = sqrt(1 - r2), |v20| =
// sqrt(r2 - |v10|^2) with r2 = |v01|^2 + |v02|^2; the rest from unitarity and det = 1:
// v11 = -(conj(v20 v02) + a v01)/r2, v12 = (conj(v20 v01) - a v02)/r2,
// v21 = (conj(v10 v02) - b v01)/r2, v22 = -(conj(v10 v01) + b v02)/r2,
// a = conj(v00) v10, b = conj(v00) v20 (r2 = 0: v11 = conj(v00), v12 = v21 = 0, v22 = 1).
__device__ __forceinline__ void unpack_link8(cplx (&m)[3][3], const real* p) {
    const cplx v01 = {p[2], p[3]}, v02 = {p[4], p[5]}, v10 = {p[6], p[7]};
    const real r2 = p[2] * p[2] + p[3] * p[3] + p[4] * p[4] + p[5] * p[5];
    real s, c;
    sincos_pi(p[0], &s, &c);
    const cplx v00 = c_scale(sqrt(fmax(real(1) - r2, real(0))), cplx{c, s});
    sincos_pi(p[1], &s, &c);
    const cplx v20 = c_scale(sqrt(fmax(r2 - (p[6] * p[6] + p[7] * p[7]), real(0))), cplx{c, s});
    m[0][0] = v00; m[0][1] = v01; m[0][2] = v02; m[1][0] = v10; m[2][0] = v20;
    if (r2 == real(0)) {
        m[1][1] = c_conj(v00); m[1][2] = cplx{0, 0}; m[2][1] = cplx{0, 0}; m[2][2] = cplx{1, 0};
    } else {
        const real inv = real(1) / r2;
        const cplx a = c_conj_mul(v00, v10), b = c_conj_mul(v00, v20);
        m[1][1] = c_scale(-inv, c_add(c_conj(c_mul(v20, v02)), c_mul(a, v01)));
        m[1][2] = c_scale(inv, c_sub(c_conj(c_mul(v20, v01)), c_mul(a, v02)));
        m[2][1] = c_scale(inv, c_sub(c_conj(c_mul(v10, v02)), c_mul(b, v01)));
        m[2][2] = c_scale(-inv, c_add(c_conj(c_mul(v10, v01)), c_mul(b, v02)));
    }
}
"#;

/// The factor of a decoded fixed-point link real, `inv_q_<fmt>()` (links have no norm);
/// `None` for the float formats.
pub(super) fn fixed_factor(format: StorageFormat) -> Option<String> {
    fixed_q(format).map(|_| format!("inv_q_{}()", format.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pointer declarations: the chunk type of the layout, const for inputs.
    #[test]
    fn pointer_declarations() {
        let fixed = SoaLayout::new(24, StorageFormat::Fixed8);
        assert_eq!(
            pointer_param("f_out", &fixed, true),
            "uint2* __restrict__ f_out"
        );
        let link = SoaLayout::new(12, StorageFormat::Fixed16);
        assert_eq!(
            pointer_param("f_u", &link, false),
            "const uint2* __restrict__ f_u"
        );
        let f16 = SoaLayout::new(24, StorageFormat::F16);
        assert_eq!(
            pointer_param("f_psi", &f16, false),
            "const uint4* __restrict__ f_psi"
        );
    }
}
