//! The CUDA source of the conversion and reduction kernels of device fields: ONE
//! generator, parameterised by the storage format ([`DeviceLayout`]) and the host
//! precision ([`HostReal`]).
//!
//! Upload: the host field is copied as a plain `double` (or `float`) array in host order
//! (site-major: record r of site i at `(i·subs + r)·reals`), and the encode kernel writes
//! the device layout. Download: the decode kernel writes the plain array back. One thread
//! per site (grid-stride loop).
//!
//! The arithmetic is qdsl-core's, operation for operation (`qdsl_core::format`), compiled
//! with `--fmad=false` so that no product is fused into an addition:
//!
//! * float widths: round to nearest even (`cvt.rn.f16.f64`, `cvt.rn.bf16.f64`, the C cast
//!   for f32); decode is exact, then rounded into the host type;
//! * fixed-point fermions: m = max|v_k| (in f64), norm = the smallest f32 ≥ m
//!   (`__double2float_ru`), c = fl(Q/norm) (0 for norm 0), q_k = round_half_even(fl(v_k·c));
//!   decode s = fl(T(norm)·fl(1/Q)), v = fl(T(q)·s);
//! * fixed-point links: q = round_half_even(fl(v·Q)) for |v·Q| < Q + ½; decode
//!   v = fl(T(q)·fl(1/Q));
//! * recon 12: rows 0 and 1 stored; decode row 2 = conj(a_i b_j − a_j b_i), (i, j) =
//!   (1, 2), (2, 0), (0, 1), complex products expanded as (re·re − im·im, re·im + im·re).
//!   Links are taken with sign +1 (Wilson links; staggered signs must be folded in).
//! * recon 8: QUDA's parametrisation as qdsl-core's, with the encoder's SU(3) check
//!   (the `recon8` submodule); sign +1 as for recon 12.
//! * packed20/packed30 fermions: groups of 6 reals with a shared power-of-two scale,
//!   round half even, the exponent rule and word layout of qdsl-core (the `packed`
//!   submodule); every product is by an exact power of two, so the result is bit-exact.
//!
//! Errors are reported through a status word (bits [`STATUS_NON_FINITE`], …) that the
//! host checks after the kernel: the device cannot return a `Result`.

use super::format::{DeviceFormat, HostReal, StoredReal};
use super::layout::DeviceLayout;
use qdsl_core::dsl::{
    Elem, Extents, Geometry, KernelInterface, KernelProgram, LaunchSpace, ParamDecl, ParamKind,
};
use qdsl_core::format::{Compression, FixedWidth, FloatWidth};
use std::fmt::Write;

/// Status bit: a NaN or ±∞ given to a fixed-point format.
pub const STATUS_NON_FINITE: u32 = 1;
/// Status bit: a finite value beyond the format's range.
pub const STATUS_OVERFLOW: u32 = 2;
/// Status bit: a fixed-point link real beyond ±(Q + ½)/Q.
pub const STATUS_OUT_OF_RANGE: u32 = 4;
/// Status bit: stored data no encoder writes (a negative norm, the integer −2^(b−1)).
pub const STATUS_CORRUPT: u32 = 8;
/// Status bit: a link given to recon 8 that is not SU(3) to
/// [`SuCheck::DEFAULT_TOLERANCE`](qdsl_core::format::SuCheck::DEFAULT_TOLERANCE)
/// (‖V†V − 1‖_F or |det V − 1| beyond it, or not finite).
pub const STATUS_NOT_SU3: u32 = 16;

/// The NVRTC options of every conversion kernel: no fused multiply-add.
pub const OPTIONS: [&str; 1] = ["--fmad=false"];

/// Which way a conversion goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host-order plain reals → device layout.
    Encode,
    /// Device layout → host-order plain reals.
    Decode,
}

/// Block size the reduction kernels are written for.
pub const REDUCTION_BLOCK: u32 = 256;

/// An exact CUDA expression for `x` in `host`'s type (by its bits, no decimal rounding).
fn constant(x: f64, host: HostReal) -> String {
    match host {
        HostReal::F64 => format!("__longlong_as_double(0x{:016x}ULL)", x.to_bits()),
        HostReal::F32 => format!("__int_as_float(0x{:08x})", (x as f32).to_bits()),
    }
}

/// A name fragment for the format: letters, digits and `_`.
fn format_tag(format: &DeviceFormat) -> String {
    format.name().replace('/', "_")
}

/// The kernel name of a conversion, e.g. `qdsl_encode_fixed16_24_f64`,
/// `qdsl_decode_f16_recon12_f32`.
pub fn conversion_name(layout: &DeviceLayout, host: HostReal, direction: Direction) -> String {
    let dir = match direction {
        Direction::Encode => "encode",
        Direction::Decode => "decode",
    };
    let host = match host {
        HostReal::F64 => "f64",
        HostReal::F32 => "f32",
    };
    format!(
        "qdsl_{dir}_{}_{}_{host}",
        format_tag(&layout.format),
        layout.host_reals
    )
}

/// The reduction kernels' base name (`<name>_partial`, `<name>_final`).
pub fn reduction_name(layout: &DeviceLayout) -> String {
    format!(
        "qdsl_reduce_{}_{}",
        format_tag(&layout.format),
        layout.host_reals
    )
}

/// The shared prelude: constants, status bits and the offset function of the layout.
fn prelude(layout: &DeviceLayout, host: HostReal, what: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// qdsl device field {what}: format {}, {} host reals per record, {} records per site,\n\
         // {} stored reals of {} bytes in chunks of {} bytes. Generated by qdsl-runtime.",
        layout.format,
        layout.host_reals,
        layout.subs,
        layout.stored_reals,
        layout.real_bytes,
        layout.chunk_bytes
    );
    let _ = writeln!(s, "typedef {} host_t;", host.cuda_type());
    for (name, v) in [
        ("NON_FINITE", STATUS_NON_FINITE),
        ("OVERFLOW", STATUS_OVERFLOW),
        ("OUT_OF_RANGE", STATUS_OUT_OF_RANGE),
        ("CORRUPT", STATUS_CORRUPT),
        ("NOT_SU3", STATUS_NOT_SU3),
    ] {
        let _ = writeln!(s, "#define QDSL_{name} {v}");
    }
    let _ = writeln!(
        s,
        "// Byte offset of stored real k of record (site, sub), DeviceLayout::byte_offset: the head\n\
         // ((sub*H + k/P)*stride + site)*W + (k%P)*B for k < H*P, then the tail\n\
         // S*H*stride*W + (sub*stride + site)*T + (k - H*P)*B.\n\
         __device__ __forceinline__ unsigned long long qdsl_offset(int site, int sub, int k, int stride) {{\n    \
         if (k < {hp}) return ((unsigned long long)(sub * {h} + k / {p}) * (unsigned long long)stride + site) * {w}ULL + (unsigned long long)((k % {p}) * {b});\n    \
         return {sh}ULL * (unsigned long long)stride * {w}ULL + ((unsigned long long)sub * (unsigned long long)stride + site) * {t}ULL + (unsigned long long)((k - {hp}) * {b});\n}}",
        h = layout.head_chunks(),
        hp = layout.head_chunks() * layout.reals_per_chunk(),
        sh = layout.subs * layout.head_chunks(),
        p = layout.reals_per_chunk(),
        w = layout.chunk_bytes,
        t = layout.tail_bytes,
        b = layout.real_bytes
    );
    s
}

/// Device functions storing and loading one real of a float width.
fn float_codec(w: FloatWidth) -> &'static str {
    match w {
        FloatWidth::F64 => {
            "__device__ __forceinline__ void qdsl_put(unsigned char* p, double x, int* bad) { *(double*)p = x; }\n\
             __device__ __forceinline__ double qdsl_get(const unsigned char* p) { return *(const double*)p; }\n"
        }
        FloatWidth::F32 => {
            "__device__ __forceinline__ void qdsl_put(unsigned char* p, double x, int* bad) {\n    \
             const float f = (float)x;\n    if (isfinite(x) && isinf(f)) *bad |= QDSL_OVERFLOW;\n    *(float*)p = f;\n}\n\
             __device__ __forceinline__ double qdsl_get(const unsigned char* p) { return (double)*(const float*)p; }\n"
        }
        FloatWidth::F16 => {
            "__device__ __forceinline__ void qdsl_put(unsigned char* p, double x, int* bad) {\n    \
             unsigned short h;\n    asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(h) : \"d\"(x));\n    \
             if (isfinite(x) && (h & 0x7fffu) == 0x7c00u) *bad |= QDSL_OVERFLOW;\n    *(unsigned short*)p = h;\n}\n\
             __device__ __forceinline__ double qdsl_get(const unsigned char* p) {\n    \
             double x;\n    asm(\"cvt.f64.f16 %0, %1;\" : \"=d\"(x) : \"h\"(*(const unsigned short*)p));\n    return x;\n}\n"
        }
        FloatWidth::BF16 => {
            "__device__ __forceinline__ void qdsl_put(unsigned char* p, double x, int* bad) {\n    \
             unsigned short h;\n    asm(\"cvt.rn.bf16.f64 %0, %1;\" : \"=h\"(h) : \"d\"(x));\n    \
             if (isfinite(x) && (h & 0x7fffu) == 0x7f80u) *bad |= QDSL_OVERFLOW;\n    *(unsigned short*)p = h;\n}\n\
             __device__ __forceinline__ double qdsl_get(const unsigned char* p) {\n    \
             return (double)__int_as_float(((int)*(const unsigned short*)p) << 16);\n}\n"
        }
    }
}

/// The C type of a fixed-point integer.
fn fixed_type(w: FixedWidth) -> &'static str {
    match w {
        FixedWidth::Bits16 => "short",
        FixedWidth::Bits8 => "signed char",
    }
}

/// `qdsl_encode_record`: the stored reals of one record from its host reals `r`.
fn encode_record(layout: &DeviceLayout) -> Result<String, super::format::UnsupportedFormat> {
    let mut s = String::new();
    let n = layout.host_reals;
    let stored = layout.stored_reals;
    s += "__device__ __forceinline__ void qdsl_encode_record(const double* r, unsigned char* out, float* norms, int site, int sub, int stride, int* bad) {\n";
    // v: the reals to store (the host reals, or the recon-8 parameters).
    if is_recon8(&layout.format) {
        s.insert_str(0, &recon8::params_source());
        s += "    double v[8];\n    qdsl_recon8_params(r, v, bad);\n";
    } else {
        s += "    const double* v = r;\n";
    }
    match (layout.format.stored_real()?, layout.format.has_norm()) {
        (StoredReal::Float(w), _) => {
            s.insert_str(0, float_codec(w));
            let _ = writeln!(s, "    for (int k = 0; k < {stored}; k++) qdsl_put(out + qdsl_offset(site, sub, k, stride), v[k], bad);");
        }
        (StoredReal::Fixed(w), true) => {
            let q = w.max_int();
            let t = fixed_type(w);
            let _ = writeln!(
                s,
                "    double m = 0.0;\n    \
                 for (int k = 0; k < {n}; k++) {{ if (!isfinite(r[k])) *bad |= QDSL_NON_FINITE; m = fmax(m, fabs(r[k])); }}\n    \
                 const float norm = __double2float_ru(m);  // the smallest f32 >= m\n    \
                 if (isinf(norm)) *bad |= QDSL_OVERFLOW;\n    \
                 const double c = norm > 0.0f ? {q}.0 / (double)norm : 0.0;\n    \
                 norms[site] = norm;\n    \
                 for (int k = 0; k < {stored}; k++) {{\n        \
                 const int i = max(-{q}, min({q}, __double2int_rn(v[k] * c)));\n        \
                 *({t}*)(out + qdsl_offset(site, sub, k, stride)) = ({t})i;\n    }}"
            );
        }
        (StoredReal::Packed(w), _) => {
            s.insert_str(0, &packed::helpers(w));
            s += &packed::encode_body(w, layout);
        }
        (StoredReal::Fixed(w), false) => {
            let q = w.max_int();
            let t = fixed_type(w);
            let _ = writeln!(
                s,
                "    for (int k = 0; k < {n}; k++) if (!isfinite(r[k])) *bad |= QDSL_NON_FINITE;\n    \
                 for (int k = 0; k < {stored}; k++) {{\n        \
                 const double x = v[k] * {q}.0;\n        \
                 if (!(fabs(x) < {q}.5)) {{ *bad |= QDSL_OUT_OF_RANGE; continue; }}\n        \
                 *({t}*)(out + qdsl_offset(site, sub, k, stride)) = ({t})__double2int_rn(x);\n    }}"
            );
        }
    }
    s += "}\n";
    Ok(s)
}

/// `qdsl_decode_record`: the host reals `r` of one record, computed in `host_t`.
fn decode_record(
    layout: &DeviceLayout,
    host: HostReal,
) -> Result<String, super::format::UnsupportedFormat> {
    let mut s = String::new();
    let stored = layout.stored_reals;
    s += "__device__ __forceinline__ void qdsl_decode_record(const unsigned char* in, const float* norms, int site, int sub, int stride, host_t* r, int* bad) {\n";
    match layout.format.stored_real()? {
        StoredReal::Float(w) => {
            s.insert_str(0, float_codec(w));
            let _ = writeln!(s, "    for (int k = 0; k < {stored}; k++) r[k] = (host_t)qdsl_get(in + qdsl_offset(site, sub, k, stride));");
        }
        StoredReal::Packed(w) => {
            s.insert_str(0, &packed::helpers(w));
            s += &packed::decode_body(w, layout);
        }
        StoredReal::Fixed(w) => {
            let t = fixed_type(w);
            let min = -(w.max_int() + 1);
            let inv = match host {
                HostReal::F64 => w.inv_max::<f64>(),
                HostReal::F32 => f64::from(w.inv_max::<f32>()),
            };
            let _ = writeln!(
                s,
                "    const host_t inv_q = {};  // fl(1/Q) in host_t",
                constant(inv, host)
            );
            if layout.format.has_norm() {
                s += "    const float norm = norms[site];\n    \
                      if (!(norm >= 0.0f && isfinite(norm))) *bad |= QDSL_CORRUPT;\n    \
                      const host_t scale = (host_t)norm * inv_q;\n";
            } else {
                s += "    const host_t scale = inv_q;\n";
            }
            let _ = writeln!(
                s,
                "    for (int k = 0; k < {stored}; k++) {{\n        \
                 const int q = *(const {t}*)(in + qdsl_offset(site, sub, k, stride));\n        \
                 if (q == {min}) *bad |= QDSL_CORRUPT;\n        \
                 r[k] = (host_t)q * scale;\n    }}"
            );
        }
    }
    if let DeviceFormat::Link(l) = layout.format {
        if l.compression == Compression::Recon12 {
            s += "    // Row 2 = conj(a_i b_j - a_j b_i), (i, j) = (1, 2), (2, 0), (0, 1); a = row 0, b = row 1.\n";
            for (k, (i, j)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
                let _ = writeln!(
                    s,
                    "    {{\n        \
                     const host_t pr = r[{ar}] * r[{bjr}] - r[{ai}] * r[{bji}], pi = r[{ar}] * r[{bji}] + r[{ai}] * r[{bjr}];\n        \
                     const host_t qr = r[{ajr}] * r[{bir}] - r[{aji}] * r[{bii}], qi = r[{ajr}] * r[{bii}] + r[{aji}] * r[{bir}];\n        \
                     r[{o}] = pr - qr;\n        r[{o1}] = -(pi - qi);\n    }}",
                    ar = 2 * i,
                    ai = 2 * i + 1,
                    bjr = 6 + 2 * j,
                    bji = 6 + 2 * j + 1,
                    ajr = 2 * j,
                    aji = 2 * j + 1,
                    bir = 6 + 2 * i,
                    bii = 6 + 2 * i + 1,
                    o = 12 + 2 * k,
                    o1 = 12 + 2 * k + 1
                );
            }
        }
    }
    if is_recon8(&layout.format) {
        s.insert_str(0, &recon8::rebuild_source(host));
        s += "    qdsl_recon8_rebuild(r);\n";
    }
    s += "}\n";
    Ok(s)
}

/// Whether `format` is a recon-8 link format.
fn is_recon8(format: &DeviceFormat) -> bool {
    matches!(format, DeviceFormat::Link(l) if l.compression == Compression::Recon8)
}

/// The conversion kernel of [`conversion_source`] with its interface (a grid-stride
/// loop; `norms` null unless the format has norms); knob space: 1-D blocks, 256 by
/// default, no occupancy throttling.
pub fn conversion_program(
    layout: &DeviceLayout,
    host: HostReal,
    direction: Direction,
) -> Result<KernelProgram, super::format::UnsupportedFormat> {
    let name = conversion_name(layout, host, direction);
    let host_elem = match host {
        HostReal::F64 => Elem::F64,
        HostReal::F32 => Elem::F32,
    };
    let params = match direction {
        Direction::Encode => vec![
            ParamDecl::new("in", ParamKind::read(host_elem)),
            ParamDecl::new("out", ParamKind::write(Elem::U8)),
            ParamDecl::new("norms", ParamKind::write(Elem::F32).or_null()),
        ],
        Direction::Decode => vec![
            ParamDecl::new("in", ParamKind::read(Elem::U8)),
            ParamDecl::new("norms", ParamKind::read(Elem::F32).or_null()),
            ParamDecl::new("out", ParamKind::write(host_elem)),
        ],
    };
    Ok(KernelProgram {
        source: conversion_source(layout, host, direction)?,
        options: options(),
        kernels: vec![KernelInterface {
            name: name.clone(),
            params: params.into_iter().chain(site_params()).collect(),
            geometry: Geometry::linear()
                .with_max_grid_x(u32::MAX >> 1)
                .with_launch_space(LaunchSpace::linear(256).without_throttle()),
        }],
        name,
    })
}

/// `sites`, `stride`, `status` (the last parameters of the conversion and BLAS kernels).
pub fn site_params() -> [ParamDecl; 3] {
    [
        ParamDecl::new("sites", ParamKind::I32),
        ParamDecl::new("stride", ParamKind::I32),
        ParamDecl::new("status", ParamKind::write(Elem::I32)),
    ]
}

/// [`OPTIONS`] as NVRTC wants them.
pub fn options() -> Vec<String> {
    OPTIONS.iter().map(|s| s.to_string()).collect()
}

/// The reduction kernels of [`reduction_source`] with their interfaces: `<name>_partial`
/// and `<name>_final`, blocks of [`REDUCTION_BLOCK`] fixed by the source, the partial
/// pass on at most [`REDUCTION_PARTIALS`] blocks (a grid-stride loop) — its knob space
/// is the grid: 64 to [`REDUCTION_PARTIALS`] blocks in powers of two (the default, the
/// most, when tuning is off or nothing is cached).
pub fn reduction_program(
    layout: &DeviceLayout,
) -> Result<KernelProgram, super::format::UnsupportedFormat> {
    let name = reduction_name(layout);
    // Blocks fixed by the source, no occupancy throttling; the partial pass's grid is
    // its knob.
    let fixed = Geometry::linear()
        .with_launch_space(LaunchSpace::linear(REDUCTION_BLOCK).without_throttle())
        .with_fixed_block(REDUCTION_BLOCK);
    let tuned_grid =
        fixed.with_launch_space(fixed.knobs.launch.with_grid_x(Extents::PowersOfTwo {
            min: 64,
            max: REDUCTION_PARTIALS,
        }));
    let partial = KernelInterface {
        name: format!("{name}_partial"),
        params: vec![
            ParamDecl::new("x", ParamKind::read(Elem::U8)),
            ParamDecl::new("xn", ParamKind::read(Elem::F32).or_null()),
            ParamDecl::new("y", ParamKind::read(Elem::U8)),
            ParamDecl::new("yn", ParamKind::read(Elem::F32).or_null()),
            ParamDecl::new("sites", ParamKind::I32),
            ParamDecl::new("stride", ParamKind::I32),
            ParamDecl::new("dot", ParamKind::I32),
            ParamDecl::new("partials", ParamKind::write(Elem::F64)),
            ParamDecl::new("status", ParamKind::write(Elem::I32)),
        ],
        geometry: tuned_grid.with_max_grid_x(REDUCTION_PARTIALS),
    };
    let fin = KernelInterface {
        name: format!("{name}_final"),
        params: vec![
            ParamDecl::new("partials", ParamKind::read(Elem::F64)),
            ParamDecl::new("blocks", ParamKind::I32),
            ParamDecl::new("result", ParamKind::write(Elem::F64)),
        ],
        geometry: fixed.with_max_grid_x(1),
    };
    Ok(KernelProgram {
        source: reduction_source(layout)?,
        options: options(),
        kernels: vec![partial, fin],
        name,
    })
}

/// The most blocks of a reduction's partial pass (each writes one partial sum).
pub const REDUCTION_PARTIALS: u32 = 1024;

/// The CUDA source of one conversion kernel (see the module doc), named
/// [`conversion_name`]. Signatures:
///
/// * encode: `(const host_t* in, unsigned char* out, float* norms, int sites, int stride, int* status)`;
/// * decode: `(const unsigned char* in, const float* norms, host_t* out, int sites, int stride, int* status)`.
pub fn conversion_source(
    layout: &DeviceLayout,
    host: HostReal,
    direction: Direction,
) -> Result<String, super::format::UnsupportedFormat> {
    let name = conversion_name(layout, host, direction);
    let n = layout.host_reals;
    let subs = layout.subs;
    let mut s = prelude(layout, host, "conversion");
    let body = match direction {
        Direction::Encode => {
            s += &encode_record(layout)?;
            format!(
                "extern \"C\" __global__ void {name}(const host_t* __restrict__ in, unsigned char* __restrict__ out, float* __restrict__ norms, int sites, int stride, int* status) {{\n    \
                 int bad = 0;\n    \
                 for (int site = blockIdx.x * blockDim.x + threadIdx.x; site < sites; site += gridDim.x * blockDim.x) {{\n        \
                 for (int sub = 0; sub < {subs}; sub++) {{\n            \
                 double r[{n}];\n            \
                 for (int k = 0; k < {n}; k++) r[k] = (double)in[((unsigned long long)site * {subs} + sub) * {n} + k];\n            \
                 qdsl_encode_record(r, out, norms, site, sub, stride, &bad);\n        }}\n    }}\n    \
                 if (bad) atomicOr(status, bad);\n}}\n"
            )
        }
        Direction::Decode => {
            s += &decode_record(layout, host)?;
            format!(
                "extern \"C\" __global__ void {name}(const unsigned char* __restrict__ in, const float* __restrict__ norms, host_t* __restrict__ out, int sites, int stride, int* status) {{\n    \
                 int bad = 0;\n    \
                 for (int site = blockIdx.x * blockDim.x + threadIdx.x; site < sites; site += gridDim.x * blockDim.x) {{\n        \
                 for (int sub = 0; sub < {subs}; sub++) {{\n            \
                 host_t r[{n}];\n            \
                 qdsl_decode_record(in, norms, site, sub, stride, r, &bad);\n            \
                 for (int k = 0; k < {n}; k++) out[((unsigned long long)site * {subs} + sub) * {n} + k] = r[k];\n        }}\n    }}\n    \
                 if (bad) atomicOr(status, bad);\n}}\n"
            )
        }
    };
    s += &body;
    Ok(s)
}

/// The CUDA source of the two-pass reductions of a fermion layout, decoded in f64 and
/// accumulated in f64:
///
/// * `<name>_partial(x, xn, y, yn, sites, stride, dot, partials)`: block b writes
///   `partials[2b]`, `partials[2b+1]` = the block's (Σ Re, Σ Im) of
///   x†x = Σ_k x_k² (`dot` = 0) or x†y = Σ (x_re y_re + x_im y_im) + i Σ (x_re y_im − x_im y_re)
///   (`dot` = 1), reals paired as (re, im);
/// * `<name>_final(partials, blocks, result)`: one block sums the partials in a fixed
///   order into `result[0]`, `result[1]`.
///
/// Both run with [`REDUCTION_BLOCK`] threads per block; the order of every sum depends
/// only on the launch, so results are reproducible bit for bit.
pub fn reduction_source(layout: &DeviceLayout) -> Result<String, super::format::UnsupportedFormat> {
    let name = reduction_name(layout);
    let n = layout.host_reals;
    let subs = layout.subs;
    let b = REDUCTION_BLOCK;
    let mut s = prelude(layout, HostReal::F64, "reduction");
    s += &decode_record(layout, HostReal::F64)?;
    let _ = write!(
        s,
        "__device__ void qdsl_block_sum(double re, double im, double* out) {{\n    \
         __shared__ double sre[{b}], sim[{b}];\n    \
         sre[threadIdx.x] = re; sim[threadIdx.x] = im;\n    __syncthreads();\n    \
         for (int h = {b} / 2; h > 0; h /= 2) {{\n        \
         if (threadIdx.x < h) {{ sre[threadIdx.x] += sre[threadIdx.x + h]; sim[threadIdx.x] += sim[threadIdx.x + h]; }}\n        \
         __syncthreads();\n    }}\n    \
         if (threadIdx.x == 0) {{ out[0] = sre[0]; out[1] = sim[0]; }}\n}}\n\
         extern \"C\" __global__ void {name}_partial(const unsigned char* __restrict__ x, const float* __restrict__ xn, const unsigned char* __restrict__ y, const float* __restrict__ yn, int sites, int stride, int dot, double* partials, int* status) {{\n    \
         double re = 0.0, im = 0.0;\n    int bad = 0;\n    \
         for (int site = blockIdx.x * blockDim.x + threadIdx.x; site < sites; site += gridDim.x * blockDim.x) {{\n        \
         for (int sub = 0; sub < {subs}; sub++) {{\n            \
         double a[{n}], c[{n}];\n            \
         qdsl_decode_record(x, xn, site, sub, stride, a, &bad);\n            \
         if (dot) qdsl_decode_record(y, yn, site, sub, stride, c, &bad);\n            \
         for (int k = 0; k + 1 < {n}; k += 2) {{\n                \
         if (dot) {{ re += a[k] * c[k] + a[k + 1] * c[k + 1]; im += a[k] * c[k + 1] - a[k + 1] * c[k]; }}\n                \
         else {{ re += a[k] * a[k] + a[k + 1] * a[k + 1]; }}\n            }}\n        }}\n    }}\n    \
         if (bad) atomicOr(status, bad);\n    \
         qdsl_block_sum(re, im, partials + 2 * blockIdx.x);\n}}\n\
         extern \"C\" __global__ void {name}_final(const double* __restrict__ partials, int blocks, double* result) {{\n    \
         double re = 0.0, im = 0.0;\n    \
         for (int i = threadIdx.x; i < blocks; i += blockDim.x) {{ re += partials[2 * i]; im += partials[2 * i + 1]; }}\n    \
         qdsl_block_sum(re, im, result);\n}}\n"
    );
    Ok(s)
}

mod packed;
mod recon8;
mod slices;
pub use slices::{
    slice_reduction_name, slice_reduction_program, slice_reduction_source, SLICE_PARTIALS,
};
#[cfg(test)]
mod tests;
