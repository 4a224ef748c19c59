//! The CUDA C++ emitter for a [`PathPlan`]: four `extern "C"` kernels named after the
//! spec, run in the order of [`schedule`], one thread per site, 32-bit indices:
//!
//! * `<name>_path(out, u, steps, nsteps, L0..L3)`: out(x) = the ordered product of links
//!   along a step list (each step `2·d + (o < 0)`);
//! * `<name>_staple(out, inner, u, mu, n, d, o, L0..L3)`:
//!   out(x) = W_s(x) · inner(x + ŝ) · W_s(x + nμ̂)†, s = (d, o);
//! * `<name>_sum(out, a, b, nreals)`: out = a + b;
//! * `<name>_accumulate(links, node, c, mu, first, L0..L3)`: F_μ(x) = [F_μ(x) +] c · node(x).
//!
//! Gauge fields use the host layout of [`crate::field::GaugeField`]: site-major in
//! checkerboard order, `(4·cb + μ)·18` reals per link, 3 × 3 row-major (re, im). Node
//! buffers hold 18 reals per site. The spec lives in the schedule (which nodes, steps and
//! coefficients), so one source serves every μ. Same plan and precision → byte-identical
//! source.

use super::plan::{Node, PathPlan};
use super::spec::ConcreteStep;
use crate::dsl::DslError;
use crate::real::Real;

/// One kernel launch of the schedule (buffers are node buffer slots).
#[derive(Clone, Debug, PartialEq)]
pub enum Launch {
    /// `<name>_path` into buffer `out` along `steps`.
    Path {
        /// Output buffer.
        out: usize,
        /// The concrete steps.
        steps: Vec<ConcreteStep>,
    },
    /// `<name>_staple` into `out` from `inner`.
    Staple {
        /// Output buffer.
        out: usize,
        /// Inner buffer.
        inner: usize,
        /// Link direction.
        mu: usize,
        /// Displacement along μ.
        n: usize,
        /// Wrapping step.
        step: ConcreteStep,
    },
    /// `<name>_sum`: out = a + b.
    Sum {
        /// Output buffer.
        out: usize,
        /// First operand buffer.
        a: usize,
        /// Second operand buffer.
        b: usize,
    },
    /// `<name>_accumulate` of buffer `node` into direction μ of the output links with
    /// coefficient c_t · u0^(−(length − 1)).
    Accumulate {
        /// Node buffer.
        node: usize,
        /// Link direction.
        mu: usize,
        /// Coefficient before the tadpole factor.
        coeff: f64,
        /// Path length (tadpole power + 1).
        length: usize,
        /// Whether this launch overwrites instead of adding.
        first: bool,
    },
}

/// The launch schedule: per μ, the nodes in dependency order (node i of direction μ in
/// buffer i; buffers are reused across directions), then the accumulation of the terms.
pub fn schedule(plan: &PathPlan) -> Vec<Launch> {
    let mut out = Vec::new();
    for d in &plan.directions {
        for (i, node) in d.nodes.iter().enumerate() {
            out.push(match node {
                Node::Path(steps) => Launch::Path {
                    out: i,
                    steps: steps.clone(),
                },
                Node::Staple { step, inner } => Launch::Staple {
                    out: i,
                    inner: *inner,
                    mu: d.mu,
                    n: plan.displacement,
                    step: *step,
                },
                Node::Sum(a, b) => Launch::Sum {
                    out: i,
                    a: *a,
                    b: *b,
                },
            });
        }
        let mut first = true;
        for t in &d.terms {
            for &node in &t.nodes {
                out.push(Launch::Accumulate {
                    node,
                    mu: d.mu,
                    coeff: t.coeff,
                    length: t.length,
                    first,
                });
                first = false;
            }
        }
    }
    out
}

/// Node buffers the schedule needs (the largest node count of one direction).
pub fn buffer_count(plan: &PathPlan) -> usize {
    plan.directions
        .iter()
        .map(|d| d.nodes.len())
        .max()
        .unwrap_or(0)
}

/// The helpers shared by the four kernels: complex 3 × 3 products, site indexing.
const HELPERS: &str = r#"struct mat { real re[9], im[9]; };
__device__ __forceinline__ mat load(const real* p) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = p[2 * k]; m.im[k] = p[2 * k + 1]; }
    return m;
}
__device__ __forceinline__ void store(real* p, const mat& m) {
    for (int k = 0; k < 9; k++) { p[2 * k] = m.re[k]; p[2 * k + 1] = m.im[k]; }
}
__device__ __forceinline__ mat adjoint(const mat& a) {
    mat m;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) { m.re[3 * i + j] = a.re[3 * j + i]; m.im[3 * i + j] = -a.im[3 * j + i]; }
    return m;
}
// a b: 27 complex multiply-adds (198 flops)
__device__ __forceinline__ mat mul(const mat& a, const mat& b) {
    mat m;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            real re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += a.re[3 * i + k] * b.re[3 * k + j] - a.im[3 * i + k] * b.im[3 * k + j];
                im += a.re[3 * i + k] * b.im[3 * k + j] + a.im[3 * i + k] * b.re[3 * k + j];
            }
            m.re[3 * i + j] = re;
            m.im[3 * i + j] = im;
        }
    return m;
}
struct lattice { int L[4]; };
// coordinates of checkerboard index cb (even sites first, lexicographic x fastest)
__device__ __forceinline__ void coords_of_cb(const lattice& lat, int cb, int c[4]) {
    int half = lat.L[0] * lat.L[1] * lat.L[2] * lat.L[3] / 2;
    int parity = cb >= half;
    int lex = 2 * (cb - parity * half);
    int r = lex;
    for (int d = 0; d < 4; d++) { c[d] = r % lat.L[d]; r /= lat.L[d]; }
    if (((c[0] + c[1] + c[2] + c[3]) & 1) != parity) c[0] += 1;
}
__device__ __forceinline__ int cb_of(const lattice& lat, const int c[4]) {
    int half = lat.L[0] * lat.L[1] * lat.L[2] * lat.L[3] / 2;
    int lex = c[0] + lat.L[0] * (c[1] + lat.L[1] * (c[2] + lat.L[2] * c[3]));
    return ((c[0] + c[1] + c[2] + c[3]) & 1) * half + lex / 2;
}
__device__ __forceinline__ void shift(const lattice& lat, int c[4], int d, int s) {
    c[d] = ((c[d] + s) % lat.L[d] + lat.L[d]) % lat.L[d];
}
// the link W_s(y) from y to y + s for s = (d, o), moving y to y + s
__device__ __forceinline__ mat hop(const lattice& lat, const real* u, int c[4], int d, int o) {
    if (o > 0) { mat w = load(u + (4 * cb_of(lat, c) + d) * 18); shift(lat, c, d, 1); return w; }
    shift(lat, c, d, -1);
    return adjoint(load(u + (4 * cb_of(lat, c) + d) * 18));
}
"#;

/// The CUDA C++ source of a plan for real type `T` (`float` or `double`).
pub fn emit<T: Real>(plan: &PathPlan) -> Result<String, DslError> {
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
    s.push_str(&format!("typedef {real} real;\n"));
    s.push_str(HELPERS);
    let dims = "int L0, int L1, int L2, int L3";
    let setup = "    lattice lat = {{L0, L1, L2, L3}};\n    int cb = blockIdx.x * blockDim.x + threadIdx.x;\n    if (cb >= L0 * L1 * L2 * L3) return;\n";
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_path(real* out, const real* u, const int* steps, int nsteps, {dims}) {{\n{setup}    int c[4];\n    coords_of_cb(lat, cb, c);\n    mat p = hop(lat, u, c, steps[0] >> 1, (steps[0] & 1) ? -1 : 1);\n    for (int k = 1; k < nsteps; k++) p = mul(p, hop(lat, u, c, steps[k] >> 1, (steps[k] & 1) ? -1 : 1));\n    store(out + 18 * cb, p);\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_staple(real* out, const real* inner, const real* u, int mu, int n, int d, int o, {dims}) {{\n{setup}    int x[4], e[4];\n    coords_of_cb(lat, cb, x);\n    for (int k = 0; k < 4; k++) e[k] = x[k];\n    shift(lat, e, mu, n);\n    mat w_in = hop(lat, u, x, d, o);\n    mat w_out = hop(lat, u, e, d, o);\n    store(out + 18 * cb, mul(mul(w_in, load(inner + 18 * cb_of(lat, x))), adjoint(w_out)));\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_sum(real* out, const real* a, const real* b, int nreals) {{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < nreals) out[i] = a[i] + b[i];\n}}\n"
    ));
    s.push_str(&format!(
        "extern \"C\" __global__ void {name}_accumulate(real* links, const real* node, real c, int mu, int first, {dims}) {{\n{setup}    for (int k = 0; k < 18; k++) {{\n        real v = c * node[18 * cb + k];\n        links[(4 * cb + mu) * 18 + k] = first ? v : links[(4 * cb + mu) * 18 + k] + v;\n    }}\n}}\n"
    ));
    Ok(s)
}
