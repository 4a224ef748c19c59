//! The CUDA C++ of a [`ReversePlan`]: the smearing's pull-back without atomics (the
//! equations and the launch order are in [`super::reverse`]).
//!
//! * `<name>_rlevel<b>(f, u, c.., mu, L0..L3)`, b = B − 1 … 1: one thread per slot D of
//!   level b (C(3, b) per μ) and site, K_b(x; D) into the scratch of one μ;
//! * `<name>_radjoint<b>(f, u, gs, c.., mu, L0..L3)`, b = 1 … B − 1: Ā_b(y; D), gathered
//!   from the parents Ā_{b−1} (G_μ, read from `gs`, for b = 1);
//! * `<name>_rgather(grad, f, u, gs, c.., mu, L0..L3)`: one thread per thin link (d, z),
//!   4V, adds the chain's contributions of this μ to its own Ĝ_d(z) (the cores of U_μ,
//!   Ā_B summed inline; the four wraps over U_d(z) per level and slot);
//! * `<name>_rloose(grad, u, gs, c.., L0..L3)`: one thread per thin link, adds the loose
//!   terms' contributions of every μ (each as the loop R, one running matrix).
//!
//! `u` holds the thin links in the forward kernels' device layout (the input codec of
//! the knobs), `gs` the smeared-link gradient G and `grad` the thin-link gradient Ĝ in
//! the host layout (18 reals at 4·cb + d), `f` the scratch of one μ
//! ([`ReversePlan::slots`] slots of 18 reals per site, component-major). Every thread
//! writes only its own slot or its own link: no atomics, and the sums run in a fixed
//! order (the CPU emulation [`super::reverse::pullback_cpu`] uses the same one).

use super::cuda::{library_prelude, pass_interface, real_elem};
use super::knobs::PathKnobs;
use super::reverse::ReversePlan;
use super::spec::Dir;
use super::staged::slots_per_mu;
use crate::dsl::interface::{
    entry_guard, Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind,
};
use crate::dsl::DslError;
use crate::real::Real;
use std::fmt::Write;

/// Helpers of the reverse kernels.
const REVERSE: &str = r#"// G_mu(p) from the host-layout smeared-link gradient
__device__ __forceinline__ mat grad_at(const real* __restrict__ gs, const geom& g, int p, int mu) {
    return load(gs + 18 * (4 * cb_index(g, p) + mu));
}
__device__ __forceinline__ mat scale_mat(real s, const mat& a) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = s * a.re[k]; m.im[k] = s * a.im[k]; }
    return m;
}
"#;

/// The entry name of the level-b kernel.
pub fn level_kernel(name: &str, b: usize) -> String {
    format!("{name}_rlevel{b}")
}

/// The entry name of the adjoint-b kernel.
pub fn adjoint_kernel(name: &str, b: usize) -> String {
    format!("{name}_radjoint{b}")
}

/// The entry name of the chain gather (per μ).
pub fn gather_kernel(name: &str) -> String {
    format!("{name}_rgather")
}

/// The entry name of the loose gather (all μ).
pub fn loose_kernel(name: &str) -> String {
    format!("{name}_rloose")
}

/// The C expression of level b's coefficient c_b (the sum of its terms' coefficients).
fn level_coeff(plan: &ReversePlan, b: usize) -> String {
    match plan.chain.get(b).map(|ts| ts.as_slice()) {
        None | Some([]) => "(real)0".to_string(),
        Some(ts) => format!(
            "({})",
            ts.iter()
                .map(|t| format!("c.c[{t}]"))
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    }
}

/// The C expression of K_b at site `site` for the used set `used` (a field load, or
/// c_B U_μ at the deepest level).
fn level_expr(plan: &ReversePlan, b: usize, used: &str, site: &str) -> String {
    if Some(b) == plan.depth() {
        format!(
            "scale_mat({}, wlink(u, g, {site}, mu, 1))",
            level_coeff(plan, b)
        )
    } else {
        format!(
            "field_load(f, g, {} + field_slot(mu, {used}, {b}), {site})",
            plan.level_slot(b)
        )
    }
}

/// The C expression of Ā_b at `site` for the used set `used`: G_μ for b = 0, a field
/// load for the stored levels, the deepest level's function at B.
fn adjoint_expr(plan: &ReversePlan, b: usize, used: &str, site: &str) -> String {
    let name = &plan.spec.name;
    if b == 0 {
        format!("grad_at(gs, g, {site}, mu)")
    } else if Some(b) == plan.depth() {
        format!("{name}_adjoint{b}(f, u, gs, g, c, {site}, mu, {used})")
    } else {
        format!(
            "field_load(f, g, {} + field_slot(mu, {used}, {b}), {site})",
            plan.adjoint_slot(b)
        )
    }
}

/// The thread prologue: `threads` per site (a slot or a direction index `lane`), the
/// site `p`, the coefficients `c`.
fn prologue(threads: &str, lane: &str, terms: usize) -> String {
    let coeff_list: Vec<String> = (0..terms).map(|k| format!("c{k}")).collect();
    format!(
        r#"    const int volume = L0 * L1 * L2 * L3;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= {threads} * volume) return;
    int {lane}, cb;
    lane_site(i, {threads}, volume, {lane}, cb);
    const lattice lat = {{{{L0, L1, L2, L3}}}};
    const geom g = make_geom(L0, L1, L2, L3);
    int xc[4];
    coords_of_cb(lat, cb, xc);
    const int p = pack(xc);
    const coeffs c = {{{{{}}}}};
"#,
        coeff_list.join(", ")
    )
}

/// The CUDA C++ source of the gather plan of `plan` for real type `T`, the thin links
/// read as `knobs.input` says (errors for a knob value that does not apply).
pub fn reverse_source<T: Real>(plan: &ReversePlan, knobs: &PathKnobs) -> Result<String, DslError> {
    let name = &plan.spec.name;
    let terms = plan.spec.terms.len();
    let header = format!(
        "link_paths! `{name}`: the pull-back's gather plan, {} launches, {} matrix products per site, {} scratch slots of one mu, no atomics",
        plan.launches(),
        plan.products_per_site(),
        plan.slots()
    );
    let mut s = library_prelude::<T>(name, &header, terms, knobs, true)?;
    s.push_str(REVERSE);
    let coeff_params: String = (0..terms).map(|k| format!(", real c{k}")).collect();
    let dims = "int L0, int L1, int L2, int L3";
    if let Some(depth) = plan.depth() {
        // The deepest adjoint as a device function (summed inline by the gather).
        if depth >= 1 {
            let _ = write!(
                s,
                "__device__ __forceinline__ mat {name}_adjoint{depth}(const real* __restrict__ f, const real* __restrict__ u, const real* __restrict__ gs, const geom& g, const coeffs& c, int p, int mu, int used) {{\n{}    return v;\n}}\n",
                adjoint_body(plan, depth)
            );
        }
        for b in plan.stored_levels().rev() {
            let mut k = String::new();
            let _ = write!(
                k,
                r#"extern "C" __global__ void {}(real* __restrict__ f, const real* __restrict__ u{coeff_params}, int mu, {dims}) {{
{}    const int used = slot_used(slot, {b}, mu);
    mat v = scale_mat({}, wlink(u, g, p, mu, 1));
    #pragma unroll 1
    for (int r = 0; r < 4 - __popc(used); r++) {{
        const int d = nth_free(used, r);
        #pragma unroll 1
        for (int o = 1; o >= -1; o -= 2) {{
            mat q = {};
            q = mul(wlink(u, g, p, d, o), q);
            q = mul(q, adjoint(wlink(u, g, move(g, p, mu, 1), d, o)));
            v = add(v, q);
        }}
    }}
    field_store(f, volume, {} + slot, cb, v);
}}
"#,
                level_kernel(name, b),
                prologue(&slots_per_mu(b).to_string(), "slot", terms),
                level_coeff(plan, b),
                level_expr(plan, b + 1, "used | (1 << d)", "move(g, p, d, o)"),
                plan.level_slot(b),
            );
            s.push_str(&entry_guard(&level_kernel(name, b), &k));
        }
        for b in plan.stored_levels() {
            let mut k = String::new();
            let _ = write!(
                k,
                r#"extern "C" __global__ void {}(real* __restrict__ f, const real* __restrict__ u, const real* __restrict__ gs{coeff_params}, int mu, {dims}) {{
{}    const int used = slot_used(slot, {b}, mu);
{}    field_store(f, volume, {} + slot, cb, v);
}}
"#,
                adjoint_kernel(name, b),
                prologue(&slots_per_mu(b).to_string(), "slot", terms),
                adjoint_body(plan, b),
                plan.adjoint_slot(b),
            );
            s.push_str(&entry_guard(&adjoint_kernel(name, b), &k));
        }
        s.push_str(&entry_guard(
            &gather_kernel(name),
            &gather_text(plan, depth, &coeff_params, dims),
        ));
    }
    if !plan.loose.is_empty() {
        s.push_str(&entry_guard(
            &loose_kernel(name),
            &loose_text(plan, &coeff_params, dims),
        ));
    }
    Ok(s)
}

/// The body computing `v` = Ā_b(p; used) from the parents (ending without a return).
fn adjoint_body(plan: &ReversePlan, b: usize) -> String {
    format!(
        r#"    mat v = zero_mat();
    #pragma unroll 1
    for (int d = 0; d < 4; d++) {{
        if (d == mu || !((used >> d) & 1)) continue;
        #pragma unroll 1
        for (int o = 1; o >= -1; o -= 2) {{
            // the parent at x = p - o d wraps this level with W_{{d,o}}
            const int x = move(g, p, d, -o);
            const mat a = {};
            v = add(v, mul(adjoint_mul(wlink(u, g, x, d, o), a), wlink(u, g, move(g, x, mu, 1), d, o)));
        }}
    }}
"#,
        adjoint_expr(plan, b - 1, "used & ~(1 << d)", "x")
    )
}

/// `<name>_rgather`: the chain's contributions of one μ to every thin link.
fn gather_text(plan: &ReversePlan, depth: usize, coeff_params: &str, dims: &str) -> String {
    let name = &plan.spec.name;
    let mut cores = format!(
        "        acc = scale_mat({}, grad_at(gs, g, p, mu));\n",
        level_coeff(plan, 0)
    );
    for b in 1..=depth {
        let _ = write!(
            cores,
            "        #pragma unroll 1\n        for (int s = 0; s < {}; s++) acc = add(acc, scale_mat({}, {}));\n",
            slots_per_mu(b),
            level_coeff(plan, b),
            adjoint_expr(plan, b, "slot_used(s, BVAL, mu)", "p").replace("BVAL", &b.to_string())
        );
    }
    let mut wraps = String::new();
    for b in 0..depth {
        let a = |site: &str| {
            if b == 0 {
                format!("grad_at(gs, g, {site}, mu)")
            } else {
                format!("field_load(f, g, {} + s, {site})", plan.adjoint_slot(b))
            }
        };
        let q = |site: &str| level_expr(plan, b + 1, "child", site);
        // The four wraps over U_d(z), one per iteration (one set of operands live):
        // k = 0: +d W_in at x = z,           A(z) W Q(z + d)^dagger
        // k = 1: +d W_out at x = z - mu,     A(x)^dagger W Q(x + d)
        // k = 2: -d W_in at x = z + d,       Q(z) W A(x)^dagger
        // k = 3: -d W_out at x = z - mu + d, Q(z - mu)^dagger W A(x)
        // with W = U_d(base), base = z + mu for k = 0, 2 and z - mu for k = 1, 3.
        let _ = write!(
            wraps,
            r#"        // level {b}: the wraps of direction d around level {}
        #pragma unroll 1
        for (int s = 0; s < {}; s++) {{
            const int used = slot_used(s, {b}, mu);
            if ((used >> d) & 1) continue;
            const int child = used | (1 << d);
            #pragma unroll 1
            for (int k = 0; k < 4; k++) {{
                const int at = (k & 1) ? zm : p, side = move(g, at, d, 1);
                mat l, r;
                if (k < 2) {{ l = {}; r = {}; }} else {{ l = {}; r = {}; }}
                const mat w = wlink(u, g, (k & 1) ? zm : zp, d, 1);
                acc = add(acc, (k & 1) ? mul(adjoint_mul(l, w), r) : mul(mul(l, w), adjoint(r)));
            }}
        }}
"#,
            b + 1,
            slots_per_mu(b),
            a("at"),
            q("side"),
            q("at"),
            a("side"),
        );
    }
    format!(
        r#"extern "C" __global__ void {}(real* __restrict__ grad, const real* __restrict__ f, const real* __restrict__ u, const real* __restrict__ gs{coeff_params}, int mu, {dims}) {{
{}    mat acc = zero_mat();
    if (d == mu) {{
        // the cores U_mu of every level: sum_b c_b sum_D A_b(z; D)
{cores}    }} else {{
        const int zp = move(g, p, mu, 1), zm = move(g, p, mu, -1);
{wraps}    }}
    real* q = grad + 18 * (4 * cb + d);
    store(q, add(load(q), acc));
}}
"#,
        gather_kernel(name),
        prologue("4", "d", plan.spec.terms.len()),
    )
}

/// `<name>_t<t>_step(j, mu, d0, o0, d1, o1, d2, o2, dir, orient)`: step j of loose term
/// t, its free names (in order of first appearance) bound to (dK, oK).
fn step_function(plan: &ReversePlan, t: usize) -> String {
    let term = &plan.spec.terms[t];
    let free = term.free_dirs();
    let mut cases = String::new();
    for (j, st) in term.steps.iter().enumerate() {
        let (d, o) = match st.dir {
            Dir::Mu => ("mu".to_string(), "1".to_string()),
            Dir::Free(k) => {
                let i = free.iter().position(|&f| f == k).unwrap_or(0);
                (format!("d{i}"), format!("o{i}"))
            }
        };
        let o = if st.forward { o } else { format!("-{o}") };
        let _ = writeln!(cases, "        case {j}: dir = {d}; orient = {o}; break;");
    }
    format!(
        r#"__device__ __forceinline__ void {}_t{t}_step(int j, int mu, int d0, int o0, int d1, int o1, int d2, int o2, int& dir, int& orient) {{
    switch (j) {{
{cases}        default: dir = mu; orient = 1;
    }}
}}
"#,
        plan.spec.name
    )
}

/// `<name>_rloose`: the loose terms' contributions of every μ to every thin link, each
/// path position in a loop of its own (one running matrix live).
fn loose_text(plan: &ReversePlan, coeff_params: &str, dims: &str) -> String {
    let name = &plan.spec.name;
    let n_mu = plan.displacement;
    let mut functions = String::new();
    let mut body = String::new();
    for &t in &plan.loose {
        functions.push_str(&step_function(plan, t));
        let term = &plan.spec.terms[t];
        let len = term.len();
        let _ = writeln!(body, "        {{ // term `{}`", term.name);
        let mut used = "(1 << mu)".to_string();
        let mut indent = "        ".to_string();
        let free = term.free_dirs();
        for i in 0..free.len() {
            let _ = writeln!(
                body,
                "{indent}#pragma unroll 1\n{indent}for (int r{i} = 0; r{i} < 4 - __popc({used}); r{i}++) {{\n{indent}const int d{i} = nth_free({used}, r{i});\n{indent}#pragma unroll 1\n{indent}for (int o{i} = 1; o{i} >= -1; o{i} -= 2) {{"
            );
            used = format!("({used} | (1 << d{i}))");
            indent.push_str("    ");
        }
        let names: String = (0..3)
            .map(|i| {
                if i < free.len() {
                    format!(", d{i}, o{i}")
                } else {
                    ", 0, 1".to_string()
                }
            })
            .collect();
        let step = format!("{name}_t{t}_step");
        let _ = write!(
            body,
            r#"{indent}#pragma unroll 1
{indent}for (int k = 0; k < {len}; k++) {{
{indent}    int dk, ok;
{indent}    {step}(k, mu{names}, dk, ok);
{indent}    if (dk != d) continue;
{indent}    // the loop R = W_(k+1) ... W_L G_mu(x)^dagger W_1 ... W_(k-1) from the end of the link
{indent}    int y = move(g, ok > 0 ? p : move(g, p, d, 1), d, ok);
{indent}    mat r = zero_mat();
{indent}    bool first = true;
{indent}    #pragma unroll 1
{indent}    for (int j = k + 1; j < {len}; j++) {{
{indent}        int dj, oj;
{indent}        {step}(j, mu{names}, dj, oj);
{indent}        const mat w = wlink(u, g, y, dj, oj);
{indent}        if (first) r = w; else r = mul(r, w);
{indent}        first = false;
{indent}        y = move(g, y, dj, oj);
{indent}    }}
{indent}    for (int m = 0; m < {n_mu}; m++) y = move(g, y, mu, -1);
{indent}    const mat gx = adjoint(grad_at(gs, g, y, mu));
{indent}    if (first) r = gx; else r = mul(r, gx);
{indent}    #pragma unroll 1
{indent}    for (int j = 0; j < k; j++) {{
{indent}        int dj, oj;
{indent}        {step}(j, mu{names}, dj, oj);
{indent}        r = mul(r, wlink(u, g, y, dj, oj));
{indent}        y = move(g, y, dj, oj);
{indent}    }}
{indent}    acc = axpy(c.c[{t}], ok > 0 ? adjoint(r) : r, acc);
{indent}}}
"#
        );
        for _ in &free {
            indent.truncate(indent.len() - 4);
            let _ = writeln!(body, "{indent}}}}}");
        }
        body.push_str("        }\n");
    }
    format!(
        r#"{functions}extern "C" __global__ void {}(real* __restrict__ grad, const real* __restrict__ u, const real* __restrict__ gs{coeff_params}, {dims}) {{
{}    mat acc = zero_mat();
    #pragma unroll 1
    for (int mu = 0; mu < 4; mu++) {{
{body}    }}
    real* q = grad + 18 * (4 * cb + d);
    store(q, add(load(q), acc));
}}
"#,
        loose_kernel(name),
        prologue("4", "d", plan.spec.terms.len()),
    )
}

/// The interfaces of the plan's kernels, in launch order within one μ (levels, adjoints,
/// gather), then the loose gather.
pub fn reverse_interfaces(plan: &ReversePlan, real: Elem) -> Vec<KernelInterface> {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let terms = plan.spec.terms.len();
    let coeffs = || (0..terms).map(move |k| ParamDecl::new(format!("c{k}"), ParamKind::real(real)));
    let dims = || (0..4).map(|k| ParamDecl::new(format!("L{k}"), ParamKind::I32));
    let name = &plan.spec.name;
    let mut out = Vec::new();
    if plan.depth().is_some() {
        for b in plan.stored_levels().rev() {
            out.push(pass_interface(&level_kernel(name, b), terms, real));
        }
        for b in plan.stored_levels() {
            let mut params = vec![
                p("f", ParamKind::write(real)),
                p("u", ParamKind::read(real)),
                p("gs", ParamKind::read(real)),
            ];
            params.extend(coeffs());
            params.push(p("mu", ParamKind::I32));
            params.extend(dims());
            out.push(KernelInterface {
                name: adjoint_kernel(name, b),
                params,
                geometry: Geometry::linear(),
            });
        }
        let mut params = vec![
            p("grad", ParamKind::write(real)),
            p("f", ParamKind::read(real)),
            p("u", ParamKind::read(real)),
            p("gs", ParamKind::read(real)),
        ];
        params.extend(coeffs());
        params.push(p("mu", ParamKind::I32));
        params.extend(dims());
        out.push(KernelInterface {
            name: gather_kernel(name),
            params,
            geometry: Geometry::linear(),
        });
    }
    if !plan.loose.is_empty() {
        let mut params = vec![
            p("grad", ParamKind::write(real)),
            p("u", ParamKind::read(real)),
            p("gs", ParamKind::read(real)),
        ];
        params.extend(coeffs());
        params.extend(dims());
        out.push(KernelInterface {
            name: loose_kernel(name),
            params,
            geometry: Geometry::linear(),
        });
    }
    out
}

/// The gather plan's program (`program` names it): its source and kernels.
pub fn reverse_program<T: Real>(
    plan: &ReversePlan,
    knobs: &PathKnobs,
    program: &str,
) -> Result<KernelProgram, DslError> {
    let real = real_elem::<T>(&plan.spec.name)?;
    Ok(KernelProgram {
        name: program.to_string(),
        source: reverse_source::<T>(plan, knobs)?,
        options: Vec::new(),
        kernels: reverse_interfaces(plan, real),
    })
}
