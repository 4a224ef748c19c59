//! The CUDA C++ of the chain rule back through a smearing's tree: the thin-link gradient
//! Ĝ of S given its gradient G with respect to the smeared links F (dS = Σ Re tr[G† dF]),
//! the device counterpart of [`super::fermion_force::pullback`].
//!
//! One thread per smeared link F_μ(x) walks the tree as the forward kernel does
//! ([`super::cuda`]) and passes its gradient A = G_μ(x) down:
//!
//! * a core P = W₁ ⋯ W_L with coefficient c gives the link at position k
//!   c (W₁ ⋯ W_{k−1})† A (W_{k+1} ⋯ W_L)†;
//! * a wrap V += W_in Q W_out† (W_in = W_s(x), Q = V_child(x + ŝ), W_out = W_s(x + nμ̂))
//!   gives W_in the gradient A W_out Q†, W_out the gradient A† W_in Q, and passes
//!   W_in† A W_out on to the child (Q recomputed by the forward node function);
//!
//! and the gradient B of a hop W_s(y) lands on U_d(y) for a forward step, B† on
//! U_d(y − d̂) for a backward one, added with `atomicAdd` (many paths share a link) into
//! `grad` in the host layout (18 reals at 4·cb + d). The kernel is
//! `<name>_pullback(grad, u, gs, c0.., L0..L3)`, `gs` the smeared-link gradient G in the
//! host layout, `u` the thin links in the forward kernel's device layout, `grad` zeroed
//! by the caller. Floating-point sums in another order than the CPU's: equal to rounding.
//!
//! Cost: each wrap recomputes its child's value, so a level at depth k is evaluated k + 1
//! times (asqtad: about 3× the forward tree's products); this is the correctness-first
//! form, not the staged one.
//!
//! **Byte and flop model.** Flops: 198 per matrix product, [`products_per_link`] per
//! smeared link. Memory: per smeared link 18 reals of G read once; the thin links each
//! path reads come from L1/L2 (the same ~1,000 links around a site serve all its
//! threads); and per hop gradient 18 `atomicAdd`s, read-modify-writes in L2 — about 250
//! hop gradients per asqtad fat link (two per wrap, one per core link), ~4,500 atomic
//! adds per link, ~1.9·10¹⁰ at 32⁴, against 4 · 32⁴ · 3 · 18 · 4 B ≈ 0.9 GB of DRAM
//! traffic in f32: the atomics and the recomputation bound it, not DRAM. ptxas (sm_90):
//! the f32 asqtad/fat7/HISQ-fat kernels fit 254–255 registers without spills, the f64
//! ones spill 444–508 B per thread. A backward function that returns the node's value
//! (no recomputation) was measured to spill more (f32 276–520 B, f64 ~1.7 kB), so it
//! is not used without a GPU timing. The way out is the staged reverse mode: the stored
//! staple levels of [`super::staged`], each level's gradient a field gathered by its
//! output site in reverse level order (no atomics), as MILC's and QUDA's HISQ force
//! kernels organise it.

use super::cuda::{prelude, real_elem};
use super::knobs::PathKnobs;
use super::spec::{Dir, Step};
use super::tree::{new_names, PathTree, TreeNode, Wrap};
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::DslError;
use crate::real::Real;
use std::fmt::Write;

/// Gradient helpers: the hop's gradient added atomically into the host-layout field.
const GRADIENT: &str = r#"// grad_d(y) += B for a forward hop W_{d,+}(y) = U_d(y); grad_d(y - d) += B^dagger for
// W_{d,-}(y) = U_d(y - d)^dagger (atomically: many paths share a link)
__device__ __forceinline__ void add_hop_gradient(real* grad, const geom& g, int y, int d, int o, const mat& b) {
    const mat m = o > 0 ? b : adjoint(b);
    real* q = grad + 18 * (4 * cb_index(g, o > 0 ? y : move(g, y, d, -1)) + d);
    for (int k = 0; k < 9; k++) { atomicAdd(q + 2 * k, m.re[k]); atomicAdd(q + 2 * k + 1, m.im[k]); }
}
__device__ __forceinline__ mat identity_mat() {
    mat m = zero_mat();
    m.re[0] = 1; m.re[4] = 1; m.re[8] = 1;
    return m;
}
__device__ __forceinline__ mat scale_mat(real s, const mat& a) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = s * a.re[k]; m.im[k] = s * a.im[k]; }
    return m;
}
"#;

/// Matrix products the pullback kernel computes per smeared link: per core path of
/// length L, L − 1 suffix products, L − 1 prefix products and 2 per position; per wrap,
/// the child's forward value, 6 products and the child's own pullback.
pub fn products_per_link(tree: &PathTree) -> usize {
    fn node(n: &TreeNode, used: usize) -> usize {
        let free = 4 - used;
        let cores: usize = n
            .cores
            .iter()
            .map(|c| {
                let own = new_names(&c.steps, c.bound);
                let choices: usize = (0..own).map(|j| 2 * free.saturating_sub(j)).product();
                let len = c.steps.len();
                choices * (2 * (len - 1) + 2 * len)
            })
            .sum();
        let children: usize = n
            .children
            .iter()
            .map(|(w, child)| match w {
                Wrap::New(_) => free * 2 * (6 + child.products(used + 1) + node(child, used + 1)),
                Wrap::Tied { .. } => 6 + child.products(used) + node(child, used),
            })
            .sum();
        cores + children
    }
    node(&tree.root, 1)
}

/// The entry name of a spec's pullback kernel.
pub fn pullback_kernel(name: &str) -> String {
    format!("{name}_pullback")
}

/// The CUDA C++ source of the pullback kernel of `tree` for real type `T`, the thin links
/// read as `knobs.input` says.
pub fn pullback_source<T: Real>(tree: &PathTree, knobs: &PathKnobs) -> Result<String, DslError> {
    let mut s = prelude::<T>(tree, knobs)?;
    s.push_str(GRADIENT);
    let mut out = Vec::new();
    back_node(tree, &tree.root, 0, &mut out, &mut 0);
    for f in out.iter().rev() {
        s.push_str(f);
    }
    let terms = tree.spec.terms.len();
    let coeff_params: Vec<String> = (0..terms).map(|k| format!("real c{k}")).collect();
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    let _ = write!(
        s,
        r#"extern "C" __global__ void {}(real* __restrict__ grad, const real* __restrict__ u, const real* __restrict__ gs, {}, int L0, int L1, int L2, int L3) {{
    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 4 * volume) return;
    const int mu = i / volume, cb = i - mu * volume;
    const lattice lat = {{{{L0, L1, L2, L3}}}};
    const geom g = make_geom(L0, L1, L2, L3);
    int x[4];
    coords_of_cb(lat, cb, x);
    const coeffs c = {{{{{}}}}};
    {}_back0(u, g, c, pack(x), mu, 1 << mu, load(gs + 18 * (4 * cb + mu)), grad);
}}
"#,
        pullback_kernel(&tree.spec.name),
        coeff_params.join(", "),
        coeff_list.join(", "),
        tree.spec.name
    );
    Ok(s)
}

/// The pullback program (`program` names it): its source and the kernel's interface.
pub fn pullback_program<T: Real>(
    tree: &PathTree,
    knobs: &PathKnobs,
    program: &str,
) -> Result<KernelProgram, DslError> {
    let real = real_elem::<T>(&tree.spec.name)?;
    Ok(KernelProgram {
        name: program.to_string(),
        source: pullback_source::<T>(tree, knobs)?,
        options: Vec::new(),
        kernels: vec![pullback_interface(
            &pullback_kernel(&tree.spec.name),
            tree.spec.terms.len(),
            real,
        )],
    })
}

/// `grad` (written, accumulated), `u`, `gs`, `c0..`, `L0..L3`; one thread per link.
fn pullback_interface(kernel: &str, terms: usize, real: Elem) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let mut params = vec![
        p("grad", ParamKind::write(real)),
        p("u", ParamKind::read(real)),
        p("gs", ParamKind::read(real)),
    ];
    params.extend((0..terms).map(|k| p(&format!("c{k}"), ParamKind::real(real))));
    params.extend((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)));
    KernelInterface {
        name: kernel.to_string(),
        params,
        geometry: Geometry::linear(),
    }
}

/// The C expressions (direction, orientation) of a step.
fn step_expr(s: &Step) -> (String, String) {
    let (d, o) = match s.dir {
        Dir::Mu => ("mu".to_string(), "1".to_string()),
        Dir::Free(k) => (format!("d{k}"), format!("o{k}")),
    };
    (d, if s.forward { o } else { format!("-{o}") })
}

/// Emits `<name>_back<id>` for node `n` (id: its preorder index, which is the forward
/// node function's id as [`super::cuda`] numbers the tree plan) and its children.
fn back_node(
    tree: &PathTree,
    n: &TreeNode,
    bound: usize,
    out: &mut Vec<String>,
    next: &mut usize,
) -> usize {
    let id = *next;
    *next += 1;
    out.push(String::new());
    let slot = out.len() - 1;
    let name = &tree.spec.name;
    let bound_params: String = (0..bound)
        .map(|k| format!(", int d{k}, int o{k}"))
        .collect();
    let mut body = String::new();
    for core in &n.cores {
        let own = new_names(&core.steps, core.bound);
        let _ = writeln!(body, "    {{ // term c{}", core.term);
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
        let len = core.steps.len();
        let _ = writeln!(
            body,
            "{indent}int y[{len}]; mat w[{len}];\n{indent}int z = p;"
        );
        for (j, s) in core.steps.iter().enumerate() {
            let (d, o) = step_expr(s);
            let _ = writeln!(
                body,
                "{indent}y[{j}] = z; w[{j}] = wlink(u, g, z, {d}, {o}); z = move(g, z, {d}, {o});"
            );
        }
        // Suffix products R_k = W_{k+1} ⋯ W_L, then the left products on the way.
        let _ = writeln!(
            body,
            "{indent}mat right[{len}];\n{indent}right[{}] = identity_mat();",
            len - 1
        );
        if len >= 2 {
            let _ = writeln!(
                body,
                "{indent}for (int k = {}; k >= 0; k--) right[k] = mul(w[k + 1], right[k + 1]);",
                len - 2
            );
        }
        let _ = writeln!(
            body,
            "{indent}const mat ca = scale_mat(c.c[{}], a);\n{indent}mat left = identity_mat();",
            core.term
        );
        for (j, s) in core.steps.iter().enumerate() {
            let (d, o) = step_expr(s);
            let _ = writeln!(
                body,
                "{indent}add_hop_gradient(grad, g, y[{j}], {d}, {o}, mul(adjoint_mul(left, ca), adjoint(right[{j}])));"
            );
            if j + 1 < len {
                let _ = writeln!(body, "{indent}left = mul(left, w[{j}]);");
            }
        }
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
        let child_id = back_node(tree, child, child_bound, out, next);
        let child_args: String = (0..child_bound).map(|k| format!(", d{k}, o{k}")).collect();
        let _ = write!(
            body,
            "{header}        // wrap {w:?}: V += W_in V{child_id}(x + s) W_out^dagger\n        const int ps = move(g, p, {d}, {o});\n        const mat q = {name}_node{child_id}(u, g, c, ps, mu, {child_used}{child_args});\n        const mat win = wlink(u, g, p, {d}, {o});\n        int e = p;\n        for (int k = 0; k < {n_mu}; k++) e = move(g, e, mu, 1);\n        const mat wout = wlink(u, g, e, {d}, {o});\n        add_hop_gradient(grad, g, p, {d}, {o}, mul(a, mul(wout, adjoint(q))));\n        add_hop_gradient(grad, g, e, {d}, {o}, mul(adjoint(a), mul(win, q)));\n        {name}_back{child_id}(u, g, c, ps, mu, {child_used}{child_args}, mul(adjoint_mul(win, a), wout), grad);\n{footer}"
        );
    }
    out[slot] = format!(
        "__device__ void {name}_back{id}(const real* __restrict__ u, const geom& g, const coeffs& c, int p, int mu, int used{bound_params}, const mat& a, real* grad) {{\n{body}}}\n"
    );
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::paths::spec::{PathSpec, PathTerm};

    /// The Naik path [+mu, +mu, +mu]: 2 suffix + 2 prefix + 2 · 3 position products = 10;
    /// the source has the kernel, a back function per node and the atomic gradient.
    #[test]
    fn naik_pullback_products_and_source() {
        let spec = PathSpec {
            name: "long".into(),
            output: "long".into(),
            free_names: vec![],
            terms: vec![PathTerm {
                name: "naik".into(),
                coeff: -1.0 / 24.0,
                steps: vec![
                    Step {
                        dir: Dir::Mu,
                        forward: true
                    };
                    3
                ],
            }],
        };
        let tree = PathTree::new(&spec).unwrap();
        assert_eq!(products_per_link(&tree), 10);
        let src = pullback_source::<f64>(&tree, &PathKnobs::default()).unwrap();
        assert!(src.contains("extern \"C\" __global__ void long_pullback("));
        assert!(src.contains("__device__ void long_back0("));
        assert!(src.contains("atomicAdd"));
    }
}
