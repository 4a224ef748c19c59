//! The CUDA C++ emitter: a lowered spec and a [`Variant`] → the source of one
//! `extern "C" __global__` kernel, for NVRTC.
//!
//! The generated kernel runs one thread per output site with 32-bit indices. The thread
//! computes its coordinates from its checkerboard index (no neighbour tables), then for
//! each term (all unrolled): the neighbour's index, the source load in 16-byte chunks
//! (the [`crate::dsl::layout`] structure of arrays, coalesced across a warp), the spin
//! projection to a half spinor where the term has 1 ± γ_μ, the link product on the 12
//! reals (links reconstructed inline for recon 12: row 2 = conj(row 0 × row 1)), and the
//! reconstruction into the accumulator, times the boundary sign for hops that wrap an
//! antiperiodic time boundary. Every knob is resolved while generating: the source holds
//! them as compile-time constants only. Same lowered spec and variant → byte-identical
//! source.
//!
//! Kernel parameters, in order: the fields in declaration order (chunk pointers named
//! `f_<field>`, so that no field name collides with a C++ keyword), then for xpay `x, a, b`, then `L0, L1, L2, L3` (the lattice
//! extents), `n_out` (number of output sites), and one stride per field (output, inputs,
//! x) in chunk units ([`crate::dsl::layout`]).

use crate::dsl::info::flops_per_site;
use crate::dsl::ir::{FieldShape, LinkRef, Role};
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::{Lowered, ReadSites, SpinLowering};
use crate::dsl::spin::Phase;
use crate::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary, Variant};
use crate::dsl::DslError;
use crate::lattice::Parity;

/// The kernel's `extern "C"` name: `<name>_<16 hex digits of the variant's stable hash>`.
pub fn kernel_name(name: &str, variant: &Variant) -> String {
    format!("{name}_{:016x}", variant.stable_hash())
}

/// Source text being built, one indented line at a time.
struct Src(String);

impl Src {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.0.push_str("    ");
        }
        self.0.push_str(text);
        self.0.push('\n');
    }
}

/// The fixed helpers every kernel source starts with (complex arithmetic and chunk
/// loads/stores for each chunk type), for compute type `real`.
fn preamble(src: &mut Src) {
    src.0.push_str(
        r#"struct cplx { real re, im; };
__device__ __forceinline__ cplx c_add(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ cplx c_sub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }
__device__ __forceinline__ cplx c_scale(real s, cplx a) { return {s * a.re, s * a.im}; }
// a b
__device__ __forceinline__ cplx c_mul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
// conj(a) b
__device__ __forceinline__ cplx c_conj_mul(cplx a, cplx b) { return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re}; }
// acc + a b
__device__ __forceinline__ cplx c_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re - a.im * b.im, acc.im + a.re * b.im + a.im * b.re}; }
// acc + conj(a) b
__device__ __forceinline__ cplx c_conj_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re + a.im * b.im, acc.im + a.re * b.im - a.im * b.re}; }

// Chunk c of site i is element c * stride + i (qdsl_core::dsl::layout).
template <int N> __device__ __forceinline__ void load(real* r, const float4* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float4 v = p[c * stride + i]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
}
template <int N> __device__ __forceinline__ void load(real* r, const float2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float2 v = p[c * stride + i]; r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N> __device__ __forceinline__ void load(real* r, const double2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const double2 v = p[c * stride + i]; r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N> __device__ __forceinline__ void load(real* r, const double* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { r[c] = p[c * stride + i]; }
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

// v <- U v (DAGGER: v <- U^dagger v) for each of K rows.
template <int K, bool DAGGER> __device__ __forceinline__ void transport(cplx (&v)[K][3], const cplx (&m)[3][3]) {
#pragma unroll
    for (int k = 0; k < K; k++) {
        cplx w[3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            w[a] = DAGGER ? c_conj_mul(m[0][a], v[k][0]) : c_mul(m[a][0], v[k][0]);
#pragma unroll
            for (int b = 1; b < 3; b++) { w[a] = DAGGER ? c_conj_fma(w[a], m[b][a], v[k][b]) : c_fma(w[a], m[a][b], v[k][b]); }
        }
#pragma unroll
        for (int a = 0; a < 3; a++) { v[k][a] = w[a]; }
    }
}
"#,
    );
}

/// `a + p b` for a phase p ∈ {±1, ±i}, as exact complex code.
fn phase_add(a: &str, p: Phase, b: &str) -> String {
    match (p.re, p.im) {
        (1, 0) => format!("c_add({a}, {b})"),
        (-1, 0) => format!("c_sub({a}, {b})"),
        (0, 1) => format!("cplx{{{a}.re - {b}.im, {a}.im + {b}.re}}"),
        _ => format!("cplx{{{a}.re + {b}.im, {a}.im - {b}.re}}"),
    }
}

/// A real literal for the compute type.
fn literal(x: f64) -> String {
    format!("real({x:?})")
}

struct FieldInfo {
    name: String,
    layout: SoaLayout,
    shape: FieldShape,
}

/// The CUDA source of one variant (see the module docs). Errors for knobs the spec does
/// not support (dagger on a spec without Γ D Γ).
pub fn emit(lowered: &Lowered, variant: &Variant) -> Result<String, DslError> {
    let ir = &lowered.ir;
    ir.knobs.check(&ir.name, variant)?;
    if variant.dagger && !lowered.dagger_supported {
        return Err(DslError::UnsupportedVariant {
            kernel: ir.name.clone(),
            knob: "dagger",
            reason:
                "Γ D Γ is defined for 4-spin fields and for 1-spin fields without spin operators"
                    .into(),
        });
    }
    for (knob, generated) in [
        ("spinor", variant.spinor.is_native()),
        ("gauge", variant.gauge.is_native()),
        ("recon", variant.recon != Recon::R8),
    ] {
        if !generated {
            return Err(DslError::UnsupportedVariant {
                kernel: ir.name.clone(),
                knob,
                reason: format!(
                    "the CUDA emitter generates f64/f32 storage with recon 18/12 only; \
                     `{}` runs on the CPU path (apply_cpu)",
                    variant.canonical()
                ),
            });
        }
    }
    let name = kernel_name(&ir.name, variant);
    let (ns, nc) = (lowered.nspin, lowered.ncolour);
    let spinor_reals = 2 * ns * nc;
    let fields: Vec<FieldInfo> = ir
        .fields
        .iter()
        .map(|f| {
            let layout = match f.shape {
                FieldShape::Spinor { .. } => SoaLayout::new(spinor_reals, variant.spinor),
                FieldShape::Gauge { .. } => SoaLayout::new(variant.recon.reals(), variant.gauge),
            };
            FieldInfo {
                name: f.name.clone(),
                layout,
                shape: f.shape,
            }
        })
        .collect();
    let field = |n: &str| fields.iter().find(|f| f.name == n);
    let out_layout = SoaLayout::new(spinor_reals, variant.spinor);
    let real = match variant.spinor {
        StorageFormat::F64 => "double",
        _ => "float",
    };
    let mut s = Src(String::new());
    s.line(0, &format!("// {name}"));
    s.line(
        0,
        &format!(
            "// Generated by qdsl from the stencil spec `{}`. Do not edit.",
            ir.name
        ),
    );
    for l in ir.doc.lines() {
        s.line(0, &format!("//{}", l.trim_end()));
    }
    s.line(0, &format!("// variant: {}", variant.canonical()));
    s.line(
        0,
        &format!(
            "// flops per site: {}",
            flops_per_site(lowered, variant.xpay)
        ),
    );
    s.line(0, &format!("typedef {real} real;"));
    preamble(&mut s);
    s.line(0, "");
    // Knobs as compile-time constants.
    s.line(
        0,
        "// The variant's knobs (already resolved in the code below).",
    );
    let out_parity = match variant.sites {
        OutputSites::Parity(Parity::Even) => 0,
        OutputSites::Parity(Parity::Odd) => 1,
        OutputSites::Full => -1,
    };
    s.line(
        0,
        &format!("constexpr int OUT_PARITY = {out_parity}; // -1: full lattice"),
    );
    s.line(0, &format!("constexpr bool DAGGER = {};", variant.dagger));
    s.line(0, &format!("constexpr bool XPAY = {};", variant.xpay));
    s.line(
        0,
        &format!("constexpr bool RECON12 = {};", variant.recon == Recon::R12),
    );
    s.line(
        0,
        &format!(
            "constexpr bool ANTIPERIODIC_T = {};",
            variant.boundary == TimeBoundary::Antiperiodic
        ),
    );
    s.line(0, "");
    // Signature.
    let mut params = Vec::new();
    for f in &fields {
        let ty = f.layout.cuda_type();
        let decl = ir.field(&f.name).map(|d| d.role);
        if decl == Some(Role::Out) {
            params.push(format!("{ty}* __restrict__ f_{}", f.name));
        } else {
            params.push(format!("const {ty}* __restrict__ f_{}", f.name));
        }
    }
    if variant.xpay {
        params.push(format!(
            "const {}* __restrict__ xpay_x",
            out_layout.cuda_type()
        ));
        params.push("const real xpay_a".into());
        params.push("const real xpay_b".into());
    }
    params.push("const int L0, const int L1, const int L2, const int L3".into());
    params.push("const int n_out".into());
    for f in &fields {
        params.push(format!("const int stride_{}", f.name));
    }
    if variant.xpay {
        params.push("const int stride_xpay_x".into());
    }
    s.line(0, &format!("extern \"C\" __global__ void {name}("));
    for (k, p) in params.iter().enumerate() {
        let end = if k + 1 == params.len() { ")" } else { "," };
        s.line(1, &format!("{p}{end}"));
    }
    s.line(0, "{");
    s.line(1, "const int i = blockIdx.x * blockDim.x + threadIdx.x;");
    s.line(1, "if (i >= n_out) return;");
    s.line(1, "const int L[4] = {L0, L1, L2, L3};");
    s.line(1, "const int half = (L0 * L1 * L2 * L3) >> 1;");
    if out_parity < 0 {
        s.line(1, "const int parity = i >= half ? 1 : 0;");
        s.line(1, "const int idx = i - parity * half;");
    } else {
        s.line(1, "const int parity = OUT_PARITY;");
        s.line(1, "const int idx = i;");
    }
    s.line(
        1,
        "// Coordinates: lex = 2 idx or 2 idx + 1, whichever has this parity (L0 is even).",
    );
    s.line(1, "int x[4];");
    s.line(1, "{");
    s.line(2, "int r = 2 * idx;");
    s.line(
        2,
        "x[0] = r % L0; r /= L0; x[1] = r % L1; r /= L1; x[2] = r % L2; x[3] = r / L2;",
    );
    s.line(2, "x[0] += (x[0] + x[1] + x[2] + x[3] + parity) & 1;");
    s.line(1, "}");
    if lowered
        .terms
        .iter()
        .any(|t| t.term.links.iter().any(|l| l.at == 0))
    {
        s.line(
            1,
            "const int cb = parity * half + idx; // this site's checkerboard index",
        );
    }
    s.line(1, &format!("cplx acc[{ns}][3];"));
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int s = 0; s < {ns}; s++) {{ acc[s][0] = acc[s][1] = acc[s][2] = cplx{{0, 0}}; }}"));
    for (k, t) in lowered.terms.iter().enumerate() {
        let term = &t.term;
        let src = field(&term.source).ok_or_else(|| DslError::InvalidSpec {
            kernel: ir.name.clone(),
            reason: format!("unknown source `{}`", term.source),
        })?;
        let reads = lowered
            .input(&term.source)
            .map(|i| i.reads)
            .unwrap_or(ReadSites::Both);
        let (mu, steps) = (term.hop.mu, term.hop.steps);
        s.line(
            1,
            &format!("{{ // term {k}: {}", describe(t, variant.dagger)),
        );
        // Neighbour coordinates and wraps.
        let signed = variant.boundary == TimeBoundary::Antiperiodic && mu == 3 && steps != 0;
        s.line(2, "int y[4] = {x[0], x[1], x[2], x[3]};");
        if signed {
            s.line(
                2,
                "bool wraps = false; // an odd number of wraps of the antiperiodic t boundary",
            );
        }
        let flip = if signed { " wraps = !wraps;" } else { "" };
        if steps > 0 {
            s.line(2, &format!("y[{mu}] += {steps};"));
            s.line(
                2,
                &format!("while (y[{mu}] >= L[{mu}]) {{ y[{mu}] -= L[{mu}];{flip} }}"),
            );
        } else if steps < 0 {
            s.line(2, &format!("y[{mu}] -= {};", -steps));
            s.line(
                2,
                &format!("while (y[{mu}] < 0) {{ y[{mu}] += L[{mu}];{flip} }}"),
            );
        }
        let src_index = match (reads, out_parity) {
            (ReadSites::OtherParity | ReadSites::SameParity, p) if p >= 0 => {
                "(y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]))) >> 1".to_string()
            }
            _ => "((y[0] + y[1] + y[2] + y[3]) & 1) * half + ((y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]))) >> 1)".to_string(),
        };
        s.line(2, &format!("const int n = {src_index};"));
        s.line(2, &format!("real r[{}];", spinor_reals));
        s.line(
            2,
            &format!(
                "load<{}>(r, f_{}, n, stride_{});",
                src.layout.chunks(),
                src.name,
                src.name
            ),
        );
        s.line(2, &format!("cplx v[{ns}][3];"));
        s.line(2, "#pragma unroll");
        s.line(
            2,
            &format!("for (int q = 0; q < {ns}; q++) {{ for (int a = 0; a < 3; a++) {{ v[q][a] = {{r[6 * q + 2 * a], r[6 * q + 2 * a + 1]}}; }} }}"),
        );
        let rows = match t.spin {
            SpinLowering::Projected { plan, dagger_plan } => {
                let p = if variant.dagger { dagger_plan } else { plan };
                s.line(2, "cplx h[2][3];");
                for (r, &(c, ph)) in p.project.iter().enumerate() {
                    s.line(2, "#pragma unroll");
                    s.line(
                        2,
                        &format!(
                            "for (int a = 0; a < 3; a++) {{ h[{r}][a] = {}; }}",
                            phase_add(&format!("v[{r}][a]"), ph, &format!("v[{c}][a]"))
                        ),
                    );
                }
                "h"
            }
            SpinLowering::Twisted => {
                s.line(2, "// i gamma5 = diag(i, i, -i, -i)");
                s.line(2, "#pragma unroll");
                s.line(2, "for (int a = 0; a < 3; a++) {");
                s.line(3, "v[0][a] = cplx{-v[0][a].im, v[0][a].re}; v[1][a] = cplx{-v[1][a].im, v[1][a].re};");
                s.line(3, "v[2][a] = cplx{v[2][a].im, -v[2][a].re}; v[3][a] = cplx{v[3][a].im, -v[3][a].re};");
                s.line(2, "}");
                "v"
            }
            SpinLowering::Rows { .. } => "v",
        };
        let krows = if rows == "h" { 2 } else { ns };
        // Link product, rightmost link first.
        for l in term.links.iter().rev() {
            emit_link(&mut s, l, &fields)?;
            s.line(3, &format!("transport<{krows}, {}>({rows}, m);", l.dagger));
            s.line(2, "}");
        }
        // Coefficient and boundary sign.
        let coeff = if variant.dagger {
            t.dagger_coeff
        } else {
            t.coeff
        };
        // acc += c · (sign) · P w: a coefficient ±1 becomes the sign of the accumulation,
        // others (and the boundary sign) scale w first.
        let (acc_sign, scale) = if coeff.abs() == 1.0 {
            (coeff as i32, 1.0)
        } else {
            (1, coeff)
        };
        let factor = if signed {
            Some(format!(
                "(wraps ? {} : {})",
                literal(-scale),
                literal(scale)
            ))
        } else {
            (scale != 1.0).then(|| literal(scale))
        };
        if let Some(f) = &factor {
            s.line(2, &format!("const real coeff = {f};"));
            s.line(2, "#pragma unroll");
            s.line(
                2,
                &format!("for (int q = 0; q < {krows}; q++) {{ for (int a = 0; a < 3; a++) {{ {rows}[q][a] = c_scale(coeff, {rows}[q][a]); }} }}"),
            );
        }
        let one = Phase::ONE.times(acc_sign);
        s.line(2, "#pragma unroll");
        s.line(2, "for (int a = 0; a < 3; a++) {");
        match t.spin {
            SpinLowering::Projected { plan, dagger_plan } => {
                let p = if variant.dagger { dagger_plan } else { plan };
                for r in 0..2 {
                    s.line(
                        3,
                        &format!(
                            "acc[{r}][a] = {};",
                            phase_add(&format!("acc[{r}][a]"), one, &format!("h[{r}][a]"))
                        ),
                    );
                }
                for (k2, &(r, ph)) in p.reconstruct.iter().enumerate() {
                    let sp = 2 + k2;
                    let ph = ph.times(acc_sign);
                    s.line(
                        3,
                        &format!(
                            "acc[{sp}][a] = {};",
                            phase_add(&format!("acc[{sp}][a]"), ph, &format!("h[{r}][a]"))
                        ),
                    );
                }
            }
            SpinLowering::Rows { .. } | SpinLowering::Twisted => {
                for q in 0..ns {
                    s.line(
                        3,
                        &format!(
                            "acc[{q}][a] = {};",
                            phase_add(&format!("acc[{q}][a]"), one, &format!("v[{q}][a]"))
                        ),
                    );
                }
            }
        }
        s.line(2, "}");
        s.line(1, "}");
    }
    // Store.
    let out = &lowered.output.name;
    s.line(1, &format!("real o[{spinor_reals}];"));
    if variant.xpay {
        s.line(1, &format!("real xr[{spinor_reals}];"));
        s.line(
            1,
            &format!(
                "load<{}>(xr, xpay_x, i, stride_xpay_x);",
                out_layout.chunks()
            ),
        );
    }
    s.line(1, "#pragma unroll");
    s.line(1, &format!("for (int q = 0; q < {ns}; q++) {{"));
    s.line(2, "#pragma unroll");
    s.line(2, "for (int a = 0; a < 3; a++) {");
    if variant.xpay {
        s.line(
            3,
            "o[6 * q + 2 * a] = xpay_a * xr[6 * q + 2 * a] + xpay_b * acc[q][a].re;",
        );
        s.line(
            3,
            "o[6 * q + 2 * a + 1] = xpay_a * xr[6 * q + 2 * a + 1] + xpay_b * acc[q][a].im;",
        );
    } else {
        s.line(3, "o[6 * q + 2 * a] = acc[q][a].re;");
        s.line(3, "o[6 * q + 2 * a + 1] = acc[q][a].im;");
    }
    s.line(2, "}");
    s.line(1, "}");
    s.line(
        1,
        &format!(
            "store<{}>(f_{out}, o, i, stride_{out});",
            out_layout.chunks()
        ),
    );
    s.line(0, "}");
    Ok(s.0)
}

/// Opens a block that loads the link `l` into `m` (the caller closes it).
fn emit_link(s: &mut Src, l: &LinkRef, fields: &[FieldInfo]) -> Result<(), DslError> {
    let f = fields
        .iter()
        .find(|f| f.name == l.field && matches!(f.shape, FieldShape::Gauge { .. }))
        .ok_or_else(|| DslError::InvalidSpec {
            kernel: String::new(),
            reason: format!("`{}` is not a gauge field", l.field),
        })?;
    let mu = l.mu;
    s.line(
        2,
        &format!(
            "{{ // {}[{mu}]({}){}",
            l.field,
            displaced(l.at, mu),
            if l.dagger { ".dagger()" } else { "" }
        ),
    );
    if l.at == 0 {
        s.line(3, "const int ln = cb;");
    } else {
        s.line(3, "int z[4] = {x[0], x[1], x[2], x[3]};");
        if l.at > 0 {
            s.line(3, &format!("z[{mu}] += {};", l.at));
            s.line(
                3,
                &format!("while (z[{mu}] >= L[{mu}]) z[{mu}] -= L[{mu}];"),
            );
        } else {
            s.line(3, &format!("z[{mu}] -= {};", -l.at));
            s.line(3, &format!("while (z[{mu}] < 0) z[{mu}] += L[{mu}];"));
        }
        s.line(
            3,
            "const int ln = ((z[0] + z[1] + z[2] + z[3]) & 1) * half + ((z[0] + L0 * (z[1] + L1 * (z[2] + L2 * z[3]))) >> 1);",
        );
    }
    s.line(
        3,
        &format!(
            "real g[{}];",
            f.layout.chunks() * f.layout.reals_per_chunk()
        ),
    );
    s.line(
        3,
        &format!(
            "load<{c}>(g, f_{n} + {mu} * {c} * stride_{n}, ln, stride_{n});",
            c = f.layout.chunks(),
            n = f.name
        ),
    );
    s.line(3, "cplx m[3][3];");
    s.line(3, "unpack_link<RECON12>(m, g);");
    Ok(())
}

/// A one-line description of a term as generated, for the source's comments.
fn describe(t: &crate::dsl::lower::LoweredTerm, dagger: bool) -> String {
    let term = &t.term;
    let coeff = if dagger { t.dagger_coeff } else { t.coeff };
    let spin = match t.spin {
        SpinLowering::Projected { plan, dagger_plan } => {
            let p = if dagger { dagger_plan } else { plan };
            format!(
                "(1 {} gamma({})) * ",
                if p.sign > 0 { '+' } else { '-' },
                p.mu
            )
        }
        SpinLowering::Twisted => "(i * gamma(5)) * ".to_string(),
        SpinLowering::Rows { .. } => String::new(),
    };
    let links: String = term
        .links
        .iter()
        .map(|l| {
            let site = displaced(l.at, l.mu);
            format!(
                "{}[{}]({site}){} * ",
                l.field,
                l.mu,
                if l.dagger { ".dagger()" } else { "" }
            )
        })
        .collect();
    let site = displaced(term.hop.steps, term.hop.mu);
    format!("{coeff:+} * {spin}{links}{}({site})", term.source)
}

/// The site x + n μ̂ as the spec writes it, with the direction as a literal: `x`,
/// `x + mu0`, `x - 3 * mu2`.
fn displaced(n: i32, mu: usize) -> String {
    match n {
        0 => "x".to_string(),
        1 => format!("x + mu{mu}"),
        -1 => format!("x - mu{mu}"),
        n => format!("x {} {} * mu{mu}", if n > 0 { '+' } else { '-' }, n.abs()),
    }
}
