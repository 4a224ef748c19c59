//! The CUDA C++ emitter for a [`PathPlan`]: five `extern "C"` kernels named after the
//! spec, run in the order of [`schedule`], one thread per site, 32-bit indices:
//!
//! * `<name>_path(out, u, steps, nsteps, L0..L3)`: out(x) = the ordered product of links
//!   along a step list (each step `2·d + (o < 0)`);
//! * `<name>_staple(out, inner, u, mu, n, d, o, L0..L3)`:
//!   out(x) = W_s(x) · inner(x + ŝ) · W_s(x + nμ̂)†, s = (d, o);
//! * `<name>_staple_pair(out, inner0, inner1, u, mu, n, d, o, L0..L3)`: the staple of
//!   inner0 for s = (d, o) plus the staple of inner1 for s' = (d, −o), summed in registers;
//! * `<name>_sum(out, a, b, nreals)`: out = a + b;
//! * `<name>_accumulate(links, n0..n7, c0..c7, count, mu, first, L0..L3)`:
//!   F_μ(x) = [F_μ(x) +] Σ_{k < count} c_k · n_k(x), added in order k = 0, 1, ….
//!
//! Gauge fields use the host layout of [`crate::field::GaugeField`]: site-major in
//! checkerboard order, `(4·cb + μ)·18` reals per link, 3 × 3 row-major (re, im); with the
//! input knob recon 12 ([`emit_with`], [`super::knobs`]) the input links are 14-real records
//! at `(4·cb + μ)·14`, rebuilt inline where `hop` reads them. Node
//! buffers hold 18 reals per site. The spec lives in the schedule (which nodes, steps and
//! coefficients), so one source serves every μ. Same plan and precision → byte-identical
//! source.

use super::knobs::PathKnobs;
use super::plan::PathPlan;
pub use super::schedule::{buffer_count, schedule, Launch, ACCUMULATE_WIDTH};
use crate::dsl::emit::cuda::library;
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::variant::Recon;
use crate::dsl::DslError;
use crate::real::Real;

/// `hop`, the link W_s(y) from y to y + ŝ (link i of `u` read by the input codec's
/// `load_link`, [`library::LINK18`] or [`library::LINK12`]); then `staple_at`,
/// W_s(x) N(x + ŝ) W_s(x + nμ̂)†, built on it.
const HOP: &str = r#"// the link W_s(y) from y to y + s for s = (d, o), moving y to y + s
__device__ __forceinline__ mat hop(const lattice& lat, const real* u, int c[4], int d, int o) {
    if (o > 0) { mat w = load_link(u, 4 * cb_of(lat, c) + d); shift(lat, c, d, 1); return w; }
    shift(lat, c, d, -1);
    return adjoint(load_link(u, 4 * cb_of(lat, c) + d));
}
// the staple W_s(x) inner(x + s) W_s(x + n mu)^dagger for s = (d, o)
__device__ __forceinline__ mat staple_at(const lattice& lat, const real* inner, const real* u, const int x[4], int mu, int n, int d, int o) {
    int y[4], e[4];
    for (int k = 0; k < 4; k++) { y[k] = x[k]; e[k] = x[k]; }
    shift(lat, e, mu, n);
    mat w_in = hop(lat, u, y, d, o);
    mat w_out = hop(lat, u, e, d, o);
    return mul(mul(w_in, load(inner + 18 * cb_of(lat, y))), adjoint(w_out));
}
"#;

/// The interfaces of the five kernels of [`emit_with`] for spec `name` and real type
/// `real` (parameters in signature order, one thread per site or per real: a tunable
/// 1-D block).
pub fn interfaces(name: &str, real: Elem) -> Vec<KernelInterface> {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let (read, write, scalar) = (
        ParamKind::read(real),
        ParamKind::write(real),
        ParamKind::real(real),
    );
    let lattice = || (0..4).map(|k| ParamDecl::new(format!("L{k}"), ParamKind::I32));
    let staple = || {
        ["mu", "n", "d", "o"]
            .map(|n| ParamDecl::new(n, ParamKind::I32))
            .into_iter()
    };
    let kernel = |suffix: &str, params: Vec<ParamDecl>| KernelInterface {
        name: format!("{name}_{suffix}"),
        params,
        geometry: Geometry::linear(),
    };
    let nodes = (0..ACCUMULATE_WIDTH).map(|k| p(&format!("n{k}"), read));
    let coeffs = (0..ACCUMULATE_WIDTH).map(|k| p(&format!("c{k}"), scalar));
    vec![
        kernel(
            "path",
            [
                p("out", write),
                p("u", read),
                p("steps", ParamKind::read(Elem::I32)),
            ]
            .into_iter()
            .chain([p("nsteps", ParamKind::I32)])
            .chain(lattice())
            .collect(),
        ),
        kernel(
            "staple",
            [p("out", write), p("inner", read), p("u", read)]
                .into_iter()
                .chain(staple())
                .chain(lattice())
                .collect(),
        ),
        kernel(
            "sum",
            vec![
                p("out", write),
                p("a", read),
                p("b", read),
                p("nreals", ParamKind::I32),
            ],
        ),
        kernel(
            "staple_pair",
            [
                p("out", write),
                p("inner0", read),
                p("inner1", read),
                p("u", read),
            ]
            .into_iter()
            .chain(staple())
            .chain(lattice())
            .collect(),
        ),
        kernel(
            "accumulate",
            std::iter::once(p("links", write))
                .chain(nodes)
                .chain(coeffs)
                .chain(["count", "mu", "first"].map(|n| p(n, ParamKind::I32)))
                .chain(lattice())
                .collect(),
        ),
    ]
}

/// [`emit_with`]'s source as the program `program` with the interfaces of its kernels
/// ([`interfaces`]).
pub fn program<T: Real>(
    plan: &PathPlan,
    knobs: &PathKnobs,
    program: &str,
) -> Result<KernelProgram, DslError> {
    let source = emit_with::<T>(plan, knobs)?;
    let real = Elem::real(T::BYTES).ok_or_else(|| DslError::UnsupportedVariant {
        kernel: plan.spec.name.clone(),
        knob: "precision",
        reason: format!("expected a 4- or 8-byte real, found {} bytes", T::BYTES),
    })?;
    Ok(KernelProgram {
        name: program.to_string(),
        source,
        options: Vec::new(),
        kernels: interfaces(&plan.spec.name, real),
    })
}

/// The CUDA C++ source of a plan for real type `T` (`float` or `double`), links
/// uncompressed.
pub fn emit<T: Real>(plan: &PathPlan) -> Result<String, DslError> {
    emit_with::<T>(plan, &PathKnobs::default())
}

/// The CUDA C++ source of a plan for real type `T` with the input links stored as
/// `knobs.input` says: recon 18 reads 18 reals per link, recon 12 the 14-real records of
/// [`super::knobs`] rebuilt inline in `hop` (the node buffers and the output stay 18 reals).
/// Errors for knob values that do not apply ([`PathKnobs::validate`]).
pub fn emit_with<T: Real>(plan: &PathPlan, knobs: &PathKnobs) -> Result<String, DslError> {
    knobs.validate(&plan.spec.name)?;
    let real = match T::BYTES {
        4 => "float",
        8 => "double",
        other => {
            return Err(DslError::UnsupportedVariant {
                kernel: plan.spec.name.clone(),
                knob: "precision",
                reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
            })
        }
    };
    let name = &plan.spec.name;
    let mut s = String::new();
    s.push_str(&format!(
        "// link_paths! `{name}`: {} terms, displacement {}, {} nodes per direction at most\n",
        plan.spec.terms.len(),
        plan.displacement,
        buffer_count(plan)
    ));
    if knobs.input == Recon::R12 {
        s.push_str("// input links: recon 12 + phase, 14 reals per link\n");
    }
    s.push_str(&format!("typedef {real} real;\n"));
    s.push_str(library::MATRIX);
    s.push_str(library::LATTICE);
    s.push_str(match knobs.input {
        Recon::R12 => library::LINK12,
        _ => library::LINK18,
    });
    s.push_str(HOP);
    let dims = "int L0, int L1, int L2, int L3";
    let setup = "    lattice lat = {{L0, L1, L2, L3}};\n    int cb = blockIdx.x * blockDim.x + threadIdx.x;\n    if (cb >= L0 * L1 * L2 * L3) return;\n";
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_path(real* out, const real* u, const int* steps, int nsteps, {dims}) {{\n{setup}    int c[4];\n    coords_of_cb(lat, cb, c);\n    mat p = hop(lat, u, c, steps[0] >> 1, (steps[0] & 1) ? -1 : 1);\n    for (int k = 1; k < nsteps; k++) p = mul(p, hop(lat, u, c, steps[k] >> 1, (steps[k] & 1) ? -1 : 1));\n    store(out + 18 * cb, p);\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_staple(real* out, const real* inner, const real* u, int mu, int n, int d, int o, {dims}) {{\n{setup}    int x[4];\n    coords_of_cb(lat, cb, x);\n    store(out + 18 * cb, staple_at(lat, inner, u, x, mu, n, d, o));\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_sum(real* out, const real* a, const real* b, int nreals) {{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < nreals) out[i] = a[i] + b[i];\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_staple_pair(real* out, const real* inner0, const real* inner1, const real* u, int mu, int n, int d, int o, {dims}) {{\n{setup}    int x[4];\n    coords_of_cb(lat, cb, x);\n    store(out + 18 * cb, add(staple_at(lat, inner0, u, x, mu, n, d, o), staple_at(lat, inner1, u, x, mu, n, d, -o)));\n}}\n"
    ));
    let nodes = (0..ACCUMULATE_WIDTH)
        .map(|k| format!("n{k}"))
        .collect::<Vec<_>>();
    let coeffs = (0..ACCUMULATE_WIDTH)
        .map(|k| format!("c{k}"))
        .collect::<Vec<_>>();
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_accumulate(real* links, {}, {}, int count, int mu, int first, {dims}) {{\n{setup}    const real* node[{ACCUMULATE_WIDTH}] = {{{}}};\n    const real c[{ACCUMULATE_WIDTH}] = {{{}}};\n    for (int k = 0; k < 18; k++) {{\n        real v = first ? (real)0 : links[(4 * cb + mu) * 18 + k];\n        for (int t = 0; t < count; t++) v += c[t] * node[t][18 * cb + k];\n        links[(4 * cb + mu) * 18 + k] = v;\n    }}\n}}\n",
        nodes.iter().map(|n| format!("const real* {n}")).collect::<Vec<_>>().join(", "),
        coeffs.iter().map(|c| format!("real {c}")).collect::<Vec<_>>().join(", "),
        nodes.join(", "),
        coeffs.join(", "),
    ));
    Ok(s)
}
