//! The CUDA C++ emitter of a [`PathTree`]: one `extern "C"` kernel per spec, one thread
//! per link, the whole tree evaluated in registers:
//!
//! * `<name>_links(out, u, c0..c{T−1}, L0..L3)`: thread i of 4V computes the link
//!   μ = i / V at checkerboard site cb = i mod V (a warp shares μ, so the direction loops
//!   run in step), F_μ(x) = V_root(x) of [`super::tree`], c_t = the term coefficients
//!   with their tadpole factors;
//! * `<name>_to_device_layout(out, in, L0..L3)`: host-layout links rewritten in the
//!   device layout the first kernel reads ([`device_layout`]).
//!
//! Each tree node is one `__device__` function, inlined where its parent wraps it; a
//! wrap binding a new direction is a loop over the directions not yet used (by rank, so
//! the trip count is the same for every μ) and both orientations, not unrolled: the
//! source and the PTX grow with the tree, not with the number of paths. A site is
//! carried as its four coordinates packed in one 32-bit word (8 bits each, so extents up
//! to 256; [`check_extents`]); the input links are read in the device layout of
//! [`device_layout`] (each real component-major over the sites, so coalesced; 18 reals,
//! or the 14-real recon 12 + phase records of [`super::knobs`] rebuilt inline), the output
//! written in the host layout of [`crate::field::GaugeField`] (18 reals at `4·cb + μ`). Same tree and
//! precision → byte-identical source.

use super::knobs::PathKnobs;
use super::spec::{Dir, Step};
use super::tree::{new_names, PathTree, TreeNode, Wrap};
use crate::dsl::emit::cuda::library;
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::variant::Recon;
use crate::dsl::DslError;
use crate::real::Real;
use std::fmt::Write;

/// The largest lattice extent the packed site coordinates hold.
pub const MAX_EXTENT: usize = 256;

/// Site arithmetic on packed coordinates and the oriented link W_{d,o}.
const SITES: &str = r#"// a site: coordinates packed 8 bits each; lm1: the extents minus 1, packed alike
struct geom { int lm1, L0, L1, L2, half; };
__device__ __forceinline__ geom make_geom(int L0, int L1, int L2, int L3) {
    geom g;
    g.lm1 = (int)((unsigned)(L0 - 1) | ((unsigned)(L1 - 1) << 8) | ((unsigned)(L2 - 1) << 16) | ((unsigned)(L3 - 1) << 24));
    g.L0 = L0; g.L1 = L1; g.L2 = L2; g.half = L0 * L1 * L2 * L3 / 2;
    return g;
}
// the site p + o d (periodic)
__device__ __forceinline__ int move(const geom& g, int p, int d, int o) {
    const int sh = 8 * d;
    const int m = (g.lm1 >> sh) & 255;
    int c = ((p >> sh) & 255) + o;
    c = c < 0 ? m : (c > m ? 0 : c);
    return (int)(((unsigned)p & ~(255u << sh)) | ((unsigned)c << sh));
}
__device__ __forceinline__ int cb_index(const geom& g, int p) {
    const int c0 = p & 255, c1 = (p >> 8) & 255, c2 = (p >> 16) & 255, c3 = (p >> 24) & 255;
    const int lex = c0 + g.L0 * (c1 + g.L1 * (c2 + g.L2 * c3));
    return ((c0 + c1 + c2 + c3) & 1) * g.half + (lex >> 1);
}
__device__ __forceinline__ int pack(const int c[4]) {
    return (int)((unsigned)c[0] | ((unsigned)c[1] << 8) | ((unsigned)c[2] << 16) | ((unsigned)c[3] << 24));
}
// link d of site cb in the device layout (real k at (d * LINK_REALS + k) * volume + cb:
// a warp of neighbouring sites reads each real coalesced), decoded by the input codec
__device__ __forceinline__ mat link_at(const real* __restrict__ u, const geom& g, int cb, int d) {
    real r[LINK_REALS];
    for (int k = 0; k < LINK_REALS; k++) r[k] = u[(d * LINK_REALS + k) * (2 * g.half) + cb];
    return load_link(r, 0);
}
// W_{d,o}(p): U_d(p) for o > 0, U_d(p - d)^dagger for o < 0
__device__ __forceinline__ mat wlink(const real* __restrict__ u, const geom& g, int p, int d, int o) {
    const mat m = link_at(u, g, cb_index(g, o > 0 ? p : move(g, p, d, -1)), d);
    return o > 0 ? m : adjoint(m);
}
// the k-th direction (k = 0, 1, ...) not in the bit mask used
__device__ __forceinline__ int nth_free(int used, int k) {
    int d = 0;
    for (int j = 0; j < 4; j++) if (!((used >> j) & 1)) { if (k == 0) { d = j; break; } k--; }
    return d;
}
__device__ __forceinline__ mat zero_mat() {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = 0; m.im[k] = 0; }
    return m;
}
// v + c q
__device__ __forceinline__ mat axpy(real c, const mat& q, const mat& v) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = v.re[k] + c * q.re[k]; m.im[k] = v.im[k] + c * q.im[k]; }
    return m;
}
"#;

/// What the kernel writes per link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Epilogue {
    /// The smeared link F_μ(x) (`<name>_links(out, u, c…, L…)`).
    Links,
    /// The gauge force c_F · TA[U_μ(x) Σ_μ(x)†] of the staple sum Σ the tree computes
    /// (`<kernel>(out, u, c…, cf, L…)`, kernel named by the caller).
    Force,
    /// The real number Re tr[U_μ(x) Σ_μ(x)†] of each link, written at the thread's index
    /// μ·V + cb (`<kernel>(out, u, c…, L…)`, kernel named by the caller): summed over the
    /// links, the action's loops ([`crate::gauge::generate::TermTraces`]).
    Trace,
}

/// The entry name of a spec's smearing kernel.
pub fn links_kernel(name: &str) -> String {
    format!("{name}_links")
}

/// The interface of the kernel `kernel` of a tree with `terms` coefficients: `out`, `u`,
/// `c0..`, (`cf` for the force), `L0..L3`, one thread per link (4V).
pub fn interface(kernel: &str, terms: usize, real: Elem, epilogue: Epilogue) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("out", ParamKind::write(real)),
        p("u", ParamKind::read(real)),
    ];
    params.extend((0..terms).map(|k| p(&format!("c{k}"), ParamKind::real(real))));
    if epilogue == Epilogue::Force {
        params.push(p("cf", ParamKind::real(real)));
    }
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: kernel.to_string(),
        params,
        geometry: Geometry::linear(),
    }
}

/// The interface of [`layout_kernel_name`]: `out`, `in`, `L0..L3`, one thread per link.
pub fn layout_interface(name: &str, real: Elem) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("out", ParamKind::write(real)),
        p("in", ParamKind::read(real)),
    ];
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: layout_kernel_name(name),
        params,
        geometry: Geometry::linear(),
    }
}

/// Errors unless every extent of `dims` fits the packed coordinates (≤ [`MAX_EXTENT`])
/// and the kernels' 32-bit real indices (4 · 18 · V < 2³¹).
pub fn check_extents(kernel: &str, dims: [usize; 4]) -> Result<(), DslError> {
    let err = |reason: String| DslError::UnsupportedVariant {
        kernel: kernel.to_string(),
        knob: "lattice",
        reason,
    };
    if let Some(l) = dims.iter().find(|&&l| l == 0 || l > MAX_EXTENT) {
        return Err(err(format!(
            "expected extents 1..={MAX_EXTENT}, found {l} in {dims:?}"
        )));
    }
    let volume: usize = dims.iter().product();
    if 4 * 18 * volume > i32::MAX as usize {
        return Err(err(format!(
            "expected at most {} sites (32-bit indices), found {volume} in {dims:?}",
            i32::MAX as usize / 72
        )));
    }
    Ok(())
}

/// [`emit_with`]'s source as the program `program` with its kernel's interface.
pub fn program<T: Real>(
    tree: &PathTree,
    knobs: &PathKnobs,
    program: &str,
) -> Result<KernelProgram, DslError> {
    let source = emit_with::<T>(tree, knobs)?;
    let real = real_elem::<T>(&tree.spec.name)?;
    Ok(KernelProgram {
        name: program.to_string(),
        source,
        options: Vec::new(),
        kernels: vec![
            interface(
                &links_kernel(&tree.spec.name),
                tree.spec.terms.len(),
                real,
                Epilogue::Links,
            ),
            layout_interface(&tree.spec.name, real),
        ],
    })
}

/// The interface element of `T`, or an error naming `kernel`.
pub fn real_elem<T: Real>(kernel: &str) -> Result<Elem, DslError> {
    Elem::real(T::BYTES).ok_or_else(|| DslError::UnsupportedVariant {
        kernel: kernel.to_string(),
        knob: "precision",
        reason: format!("expected a 4- or 8-byte real, found {} bytes", T::BYTES),
    })
}

/// The CUDA C++ source of a tree for real type `T`, links uncompressed.
pub fn emit<T: Real>(tree: &PathTree) -> Result<String, DslError> {
    emit_with::<T>(tree, &PathKnobs::default())
}

/// The CUDA C++ source of a tree for real type `T` with the input links stored as
/// `knobs.input` says (the output stays 18 reals). Errors for knob values that do not
/// apply ([`PathKnobs::validate`]).
pub fn emit_with<T: Real>(tree: &PathTree, knobs: &PathKnobs) -> Result<String, DslError> {
    let mut s = prelude::<T>(tree, knobs)?;
    s.push_str(&kernel(
        tree,
        &links_kernel(&tree.spec.name),
        Epilogue::Links,
    ));
    s.push_str(&layout_kernel(&tree.spec.name));
    Ok(s)
}

/// The entry name of a spec's layout kernel.
pub fn layout_kernel_name(name: &str) -> String {
    format!("{name}_to_device_layout")
}

/// `<name>_to_device_layout(out, in, L0..L3)`: links in the host layout (`LINK_REALS`
/// reals at `(4·cb + d)·LINK_REALS`) rewritten in the device layout of [`device_layout`],
/// one thread per link (for links made on the device, HISQ's W).
fn layout_kernel(name: &str) -> String {
    format!(
        r#"extern "C" __global__ void {}(real* __restrict__ out, const real* __restrict__ in, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int d = i / volume, cb = i - d * volume;
    for (int k = 0; k < LINK_REALS; k++) out[(d * LINK_REALS + k) * volume + cb] = in[(4 * cb + d) * LINK_REALS + k];
}}
"#,
        layout_kernel_name(name)
    )
}

/// Links in the host layout (`reals` per link, link `4·cb + d`, [`crate::field::GaugeField`]'s
/// order) rewritten in the kernels' device layout: real k of link (cb, d) at
/// `(d·reals + k)·V + cb`, so that a warp of neighbouring sites reads each real of its
/// links in one coalesced access. Errors unless `host` holds 4V links of `reals` reals.
pub fn device_layout<T: Copy>(host: &[T], reals: usize, volume: usize) -> Result<Vec<T>, String> {
    if reals == 0 || host.len() != 4 * volume * reals {
        return Err(format!(
            "expected 4 · {volume} links of {reals} reals ({} reals), found {}",
            4 * volume * reals,
            host.len()
        ));
    }
    let mut out = Vec::with_capacity(host.len());
    for d in 0..4 {
        for k in 0..reals {
            out.extend((0..volume).map(|cb| host[(4 * cb + d) * reals + k]));
        }
    }
    Ok(out)
}

/// The inverse of [`device_layout`]: links in the device layout (real k of link (cb, d) at
/// `(d·reals + k)·V + cb`) rewritten in the host layout (link `4·cb + d`). Errors unless
/// `device` holds 4V links of `reals` reals.
pub fn host_layout<T: Copy>(device: &[T], reals: usize, volume: usize) -> Result<Vec<T>, String> {
    if reals == 0 || device.len() != 4 * volume * reals {
        return Err(format!(
            "expected 4 · {volume} links of {reals} reals ({} reals), found {}",
            4 * volume * reals,
            device.len()
        ));
    }
    let mut out = Vec::with_capacity(device.len());
    for cb in 0..volume {
        for d in 0..4 {
            out.extend((0..reals).map(|k| device[(d * reals + k) * volume + cb]));
        }
    }
    Ok(out)
}

/// The type definitions, the library and the node functions of a tree.
pub(crate) fn prelude<T: Real>(tree: &PathTree, knobs: &PathKnobs) -> Result<String, DslError> {
    knobs.validate(&tree.spec.name)?;
    let real = match T::BYTES {
        4 => "float",
        8 => "double",
        other => {
            return Err(DslError::UnsupportedVariant {
                kernel: tree.spec.name.clone(),
                knob: "precision",
                reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
            })
        }
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// link_paths! `{}`: {} terms, displacement {}, {} matrix products per link, one thread per link",
        tree.spec.name,
        tree.spec.terms.len(),
        tree.displacement,
        tree.products_per_link()
    );
    if knobs.input == Recon::R12 {
        s.push_str("// input links: recon 12 + phase, 14 reals per link\n");
    }
    let _ = writeln!(s, "typedef {real} real;");
    s.push_str(library::MATRIX);
    s.push_str(library::LATTICE);
    s.push_str(match knobs.input {
        Recon::R12 => library::LINK12,
        _ => library::LINK18,
    });
    let _ = writeln!(s, "constexpr int LINK_REALS = {};", knobs.input_reals());
    s.push_str(SITES);
    let _ = writeln!(s, "struct coeffs {{ real c[{}]; }};", tree.spec.terms.len());
    let mut nodes = Vec::new();
    emit_node(tree, &tree.root, 0, &mut nodes);
    // A child's id is above its parent's: define the children first.
    for n in nodes.iter().rev() {
        s.push_str(n);
    }
    Ok(s)
}

/// The kernel `kernel` of a tree (after [`prelude`]).
pub(crate) fn kernel(tree: &PathTree, kernel: &str, epilogue: Epilogue) -> String {
    let terms = tree.spec.terms.len();
    let coeff_params: Vec<String> = (0..terms).map(|k| format!("real c{k}")).collect();
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    let force_param = match epilogue {
        Epilogue::Force => ", real cf",
        Epilogue::Links | Epilogue::Trace => "",
    };
    let write = match epilogue {
        Epilogue::Links => "    store(out + 18 * (4 * cb + mu), v);\n".to_string(),
        Epilogue::Force => "    store(out + 18 * (4 * cb + mu), scaled_ta(mul(link_at(u, g, cb, mu), adjoint(v)), cf));\n".to_string(),
        Epilogue::Trace => "    const mat w = link_at(u, g, cb, mu);\n    real t = 0;\n    for (int k = 0; k < 9; k++) t += w.re[k] * v.re[k] + w.im[k] * v.im[k];\n    out[i] = t;\n".to_string(),
    };
    format!(
        r#"extern "C" __global__ void {kernel}(real* __restrict__ out, const real* __restrict__ u, {}{force_param}, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int mu = i / volume, cb = i - mu * volume;
    const lattice lat = {{{{L0, L1, L2, L3}}}};
    const geom g = make_geom(L0, L1, L2, L3);
    int x[4];
    coords_of_cb(lat, cb, x);
    const coeffs c = {{{{{}}}}};
    const mat v = {}_node0(u, g, c, pack(x), mu, 1 << mu);
{write}}}
"#,
        coeff_params.join(", "),
        coeff_list.join(", "),
        tree.spec.name,
    )
}

/// The C expression pair (direction, orientation) of a step: `mu`, a bound name's `dK`,
/// `oK`, sign applied.
fn step_expr(s: &Step) -> (String, String) {
    let (d, o) = match s.dir {
        Dir::Mu => ("mu".to_string(), "1".to_string()),
        Dir::Free(k) => (format!("d{k}"), format!("o{k}")),
    };
    (d, if s.forward { o } else { format!("-{o}") })
}

/// Emits node `n` (id = its index in `out` order of first visit) and its children,
/// children first; returns the node's id. `bound` names are parameters `dK, oK`.
fn emit_node(tree: &PathTree, n: &TreeNode, bound: usize, out: &mut Vec<String>) -> usize {
    let id = out.len();
    out.push(String::new());
    let name = &tree.spec.name;
    let bound_params: String = (0..bound)
        .map(|k| format!(", int d{k}, int o{k}"))
        .collect();
    let mut body = String::new();
    body.push_str("    mat v = zero_mat();\n");
    for core in &n.cores {
        let own = new_names(&core.steps, core.bound);
        let _ = writeln!(
            body,
            "    {{ // term `{}`: c{} [{}]",
            tree.spec.terms[core.term].name,
            core.term,
            core.steps
                .iter()
                .map(|s| {
                    let (d, o) = step_expr(s);
                    format!("({d}, {o})")
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let mut used = "used".to_string();
        let mut indent = "        ".to_string();
        for k in core.bound..core.bound + own {
            let _ = writeln!(
                body,
                "{indent}#pragma unroll 1\n{indent}for (int r{k} = 0; r{k} < 4 - __popc({used}); r{k}++) {{\n{indent}const int d{k} = nth_free({used}, r{k});\n{indent}#pragma unroll 1\n{indent}for (int o{k} = 1; o{k} >= -1; o{k} -= 2) {{"
            );
            used = format!("({used} | (1 << d{k}))");
            indent.push_str("    ");
        }
        let _ = writeln!(body, "{indent}int y = p;");
        for (j, s) in core.steps.iter().enumerate() {
            let (d, o) = step_expr(s);
            let w = format!("wlink(u, g, y, {d}, {o})");
            if j == 0 {
                let _ = writeln!(body, "{indent}mat q = {w};");
            } else {
                let _ = writeln!(body, "{indent}q = mul(q, {w});");
            }
            if j + 1 < core.steps.len() {
                let _ = writeln!(body, "{indent}y = move(g, y, {d}, {o});");
            }
        }
        let _ = writeln!(body, "{indent}v = axpy(c.c[{}], q, v);", core.term);
        for _ in 0..own {
            indent.truncate(indent.len() - 4);
            let _ = writeln!(body, "{indent}}}}}");
        }
        body.push_str("    }\n");
    }
    let n_mu = tree.displacement;
    for (w, child) in &n.children {
        let (header, footer, child_bound, child_used, d, o) = match *w {
            Wrap::New(k) => (
                format!("    #pragma unroll 1\n    for (int r{k} = 0; r{k} < 4 - __popc(used); r{k}++) {{\n    const int d{k} = nth_free(used, r{k});\n    #pragma unroll 1\n    for (int o{k} = 1; o{k} >= -1; o{k} -= 2) {{\n"),
                "    }}\n".to_string(),
                bound + 1,
                format!("used | (1 << d{k})"),
                format!("d{k}"),
                format!("o{k}"),
            ),
            Wrap::Tied { name: k, same } => (
                "    {\n".to_string(),
                "    }\n".to_string(),
                bound,
                "used".to_string(),
                format!("d{k}"),
                if same { format!("o{k}") } else { format!("-o{k}") },
            ),
        };
        let child_id = emit_node(tree, child, child_bound, out);
        let child_args: String = (0..child_bound).map(|k| format!(", d{k}, o{k}")).collect();
        let _ = write!(
            body,
            "{header}        // wrap {w:?}: W(x) V{child_id}(x + s) W(x + {n_mu} mu)^dagger\n        mat q = {name}_node{child_id}(u, g, c, move(g, p, {d}, {o}), mu, {child_used}{child_args});\n        q = mul(wlink(u, g, p, {d}, {o}), q);\n        int e = p;\n        for (int k = 0; k < {n_mu}; k++) e = move(g, e, mu, 1);\n        q = mul(q, adjoint(wlink(u, g, e, {d}, {o})));\n        v = add(v, q);\n{footer}"
        );
    }
    body.push_str("    return v;\n");
    out[id] = format!(
        "__device__ __forceinline__ mat {name}_node{id}(const real* __restrict__ u, const geom& g, const coeffs& c, int p, int mu, int used{bound_params}) {{\n{body}}}\n"
    );
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real k of link (cb, d) moves from (4·cb + d)·R + k to (d·R + k)·V + cb.
    #[test]
    fn device_layout_is_component_major() {
        let (volume, reals) = (3, 2);
        let host: Vec<usize> = (0..4 * volume * reals).collect();
        let dev = device_layout(&host, reals, volume).unwrap();
        for cb in 0..volume {
            for d in 0..4 {
                for k in 0..reals {
                    assert_eq!(
                        dev[(d * reals + k) * volume + cb],
                        host[(4 * cb + d) * reals + k]
                    );
                }
            }
        }
        assert_eq!(host_layout(&dev, reals, volume).unwrap(), host);
        let e = device_layout(&host[1..], reals, volume).unwrap_err();
        assert!(e.contains("found 23"), "{e}");
    }

    #[test]
    fn extents_beyond_the_packed_coordinates_are_refused() {
        assert!(check_extents("k", [256, 2, 4, 8]).is_ok());
        let e = check_extents("k", [4, 258, 4, 4]).unwrap_err().to_string();
        assert!(e.contains("258") && e.contains("1..=256"), "{e}");
        let e = check_extents("k", [256, 256, 256, 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("33554432"), "{e}");
    }
}
