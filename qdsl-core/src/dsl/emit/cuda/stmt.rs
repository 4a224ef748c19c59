//! The kernel IR's statements as CUDA: one arm per [`Stmt`], each printing exactly what
//! the IR says (the passes made the decisions). Loads go through the storage codec
//! printers ([`super::storage`], [`super::long_link`]); the factor a load leaves out is
//! kept by value until the accumulation that names it.

use super::storage::{self, LinkField};
use super::term::{biased_phase_add, link_site, literal, phase_add, shift_and_wrap, source_index};
use super::Src;
use crate::dsl::kernel_ir::{
    Accumulate, BuildFlag, ChiralRow, ChiralSolve, Cond, KernelIr, Load, LoadAt, Reads,
    Reconstruct, RowDest, RowReach, Rows, Stmt, Value,
};
use crate::dsl::layout::SoaLayout;
use crate::dsl::spin::Phase;

/// The factors the loads of the enclosing stage left out, by value.
#[derive(Default)]
struct Deferred(Vec<(Value, String)>);

/// Prints the statements of a stage body at indentation `d`.
pub(super) fn print_body(s: &mut Src, d: usize, body: &[Stmt], k: &KernelIr) {
    let mut deferred = Deferred::default();
    stmts(s, d, body, k, &mut deferred);
}

fn stmts(s: &mut Src, d: usize, body: &[Stmt], k: &KernelIr, f: &mut Deferred) {
    for st in body {
        stmt(s, d, st, k, f);
    }
}

fn stmt(s: &mut Src, d: usize, st: &Stmt, k: &KernelIr, f: &mut Deferred) {
    match st {
        Stmt::Scope { comment, body } => {
            match comment {
                Some(c) => s.line(d, &format!("{{ // {c}")),
                None => s.line(d, "{"),
            }
            stmts(s, d + 1, body, k, f);
            s.line(d, "}");
        }
        Stmt::Build { flag, body } => {
            s.0.push_str(match flag {
                BuildFlag::Prefetch => "#if QDSL_PREFETCH\n",
                BuildFlag::NotLinksOnly => "#if !QDSL_PREFETCH_LINKS_ONLY\n",
            });
            stmts(s, d, body, k, f);
            s.0.push_str("#endif\n");
        }
        Stmt::If { cond, body } => {
            let Cond::SameDirichletBlock { mu, block: b } = *cond;
            s.line(
                d,
                &format!(
                    "if (x[{mu}] / {b} == y[{mu}] / {b}) {{ // Dirichlet: the hop stays in x's block"
                ),
            );
            stmts(s, d + 1, body, k, f);
            s.line(d, "}");
        }
        Stmt::Comment(c) => s.line(d, &format!("// {c}")),
        &Stmt::Neighbour {
            mu,
            steps,
            tracks_wraps,
        } => {
            s.line(d, "int y[4] = {x[0], x[1], x[2], x[3]};");
            if tracks_wraps {
                s.line(
                    d,
                    "bool wraps = false; // an odd number of wraps of the antiperiodic t boundary",
                );
            }
            let flip = if tracks_wraps { " wraps = !wraps;" } else { "" };
            shift_and_wrap(s, d, "y", mu, steps, flip);
        }
        &Stmt::SourceIndex {
            reads,
            parity_output,
        } => s.line(
            d,
            &format!("const int n = {};", source_index(reads, parity_output)),
        ),
        Stmt::LinkSite(l) => link_site(s, d, "const int ln", l),
        &Stmt::WalkSource { term, tracks_wraps } => {
            s.line(
                d,
                &format!("const int n = {};", super::walk::place_name(term)),
            );
            if tracks_wraps {
                s.line(
                    d,
                    &format!("const bool wraps = {};", super::walk::wraps_name(term)),
                );
            }
        }
        &Stmt::WalkLink { term, link } => {
            s.line(d, "cplx m[3][3];");
            s.line(
                d,
                &format!(
                    "unpack_link<RECON12>(m, {});",
                    super::walk::link_name(term, link)
                ),
            );
        }
        Stmt::Load(load) => {
            if let Some(factor) = print_load(s, d, load, k) {
                f.0.push((load.value, factor));
            }
        }
        &Stmt::Spinor { spins } => {
            s.line(d, &format!("cplx v[{spins}][3];"));
            s.line(d, "#pragma unroll");
            s.line(
                d,
                &format!("for (int q = 0; q < {spins}; q++) {{ for (int a = 0; a < 3; a++) {{ v[q][a] = {{r[6 * q + 2 * a], r[6 * q + 2 * a + 1]}}; }} }}"),
            );
        }
        Stmt::Project { .. } | Stmt::Twist | Stmt::CloverMul => spin(s, d, st),
        Stmt::SharedStore { .. } | Stmt::SharedLoad { .. } | Stmt::AddReals { .. } => {
            shared(s, d, st)
        }
        &Stmt::Transport { rows, dagger } => {
            let (name, n) = rows_of(rows);
            s.line(d, &format!("transport<{n}, {dagger}>({name}, m);"));
        }
        Stmt::Accumulate(a) => accumulate(s, d, a, f),
        Stmt::PrefetchSite { field } => {
            if let Some(x) = k.field(field) {
                storage::prefetch_site(s, d, (&format!("f_{field}"), &x.layout), "n");
            }
        }
        Stmt::PrefetchLink { field, mu } => {
            if let Some(x) = k.field(field) {
                storage::prefetch_link(s, d, (&format!("f_{field}"), &x.layout), *mu, "ln");
            }
        }
        Stmt::Mma(op) => {
            for line in crate::dsl::mma::cuda::print_op(op) {
                s.line(d, &line);
            }
        }
        Stmt::Barrier => s.line(d, "__syncthreads();"),
        Stmt::SharedStoreAcc { buffer, spins } => {
            s.line(d, "#pragma unroll");
            s.line(
                d,
                &format!("for (int q = 0; q < {spins}; q++) {{ for (int a = 0; a < 3; a++) {{ real* const c = {buffer} + {THIS_THREAD} + (6 * q + 2 * a) * block_threads; c[0] = acc[q][a].re; c[block_threads] = acc[q][a].im; }} }}"),
            );
        }
        Stmt::ChiralRow(r) => chiral_row(s, d, r),
        Stmt::ChiralSolve(r) => chiral_solve(s, d, r),
        Stmt::ChiralMma(r) => super::chiral_mma::print(s, d, r),
        Stmt::SharedLoadAcc { buffer, spins } => {
            s.line(d, "#pragma unroll");
            s.line(
                d,
                &format!("for (int q = 0; q < {spins}; q++) {{ for (int a = 0; a < 3; a++) {{ const real* const c = {buffer} + {THIS_THREAD} + (6 * q + 2 * a) * block_threads; acc[q][a] = cplx{{c[0], c[block_threads]}}; }} }}"),
            );
        }
    }
}

/// The in-place cyclic bidiagonal solve of [`ChiralSolve`]: thread s5 of a site takes
/// the complex components k = s5, s5 + Ls, … < 12 (P₊: k < 6); along the sweep n the
/// slice is s = n (off-diagonal at s − 1) or Ls − 1 − n (at s + 1), so both directions
/// run the same code. The coefficients 1/d_n, e_n, q_n and 1/(1 − q_last) come from the
/// host after the operand's matrices
/// ([`crate::dsl::fused5d::ChiralMatrices::sweep_reals`]): multiply-adds only.
fn chiral_solve(s: &mut Src, d: usize, r: &ChiralSolve) {
    let (b, m) = (&r.buffer, &r.matrix);
    let lower = if r.dagger { "chi == 1" } else { "chi == 0" };
    for (depth, line) in [
        (0, format!("{{ // {}: column <- {m}^-1 column, one sweep per complex component (cyclic bidiagonal)", r.piece)),
        (1, format!("real* const base = {b} + threadIdx.x + blockDim.x * blockDim.y * threadIdx.z; // slice s at + blockDim.x * s")),
        (1, "for (int k = s5; k < 12; k += LS) {".into()),
        (2, "const int chi = k / 6; // P+ for k < 6 (reals 0-11), else P-".into()),
        (2, format!("const bool lower = {lower}; // the off-diagonal at s - 1, else at s + 1")),
        (2, format!("const real* const w = {m} + 4 * LS * LS + chi * (6 * LS + 2); // [1/d_n, e_n, q_n] per n, then 1/(1 - q_last)")),
        (2, "real* const c_re = base + (2 * k) * block_threads; real* const c_im = c_re + block_threads;".into()),
        (2, "cplx p = {0, 0};".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int n = 0; n < LS; n++) { // p_n = (x_n - e_n p_(n-1)) / d_n over x_n in the column".into()),
        (3, "const int sl = lower ? n : LS - 1 - n;".into()),
        (3, "const cplx di = {w[6 * n], w[6 * n + 1]}, e = {w[6 * n + 2], w[6 * n + 3]};".into()),
        (3, "const cplx x = {c_re[blockDim.x * sl], c_im[blockDim.x * sl]};".into()),
        (3, "p = c_mul(di, n == 0 ? x : c_sub(x, c_mul(e, p)));".into()),
        (3, "c_re[blockDim.x * sl] = p.re; c_im[blockDim.x * sl] = p.im;".into()),
        (2, "}".into()),
        (2, "const cplx y_last = c_mul(p, cplx{w[6 * LS], w[6 * LS + 1]}); // Y = p_last / (1 - q_last)".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int n = 0; n < LS; n++) { // y_n = p_n + q_n Y".into()),
        (3, "const int sl = lower ? n : LS - 1 - n;".into()),
        (3, "const cplx y = c_fma(cplx{c_re[blockDim.x * sl], c_im[blockDim.x * sl]}, cplx{w[6 * n + 4], w[6 * n + 5]}, y_last);".into()),
        (3, "c_re[blockDim.x * sl] = y.re; c_im[blockDim.x * sl] = y.im;".into()),
        (2, "}".into()),
        (1, "}".into()),
        (0, "}".into()),
    ] {
        s.line(d + depth, &line);
    }
}

/// This thread's index in its block. Shared buffers are component-major — real k of
/// thread t at `buffer[k * block_threads + t]` — so a warp's 32 threads touch 32
/// consecutive words of one component: no bank conflicts (a thread-major record of 24
/// reals would put 8 threads of a warp on each bank).
const THIS_THREAD: &str = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))";

/// One row of an s-local piece on the block's s-column (see [`ChiralRow`]): t = Σ_s'
/// A₊(s5, s') P₊ column[s'] + A₋(s5, s') P₋ column[s'] over the row's reach, then t
/// written over the destination.
fn chiral_row(s: &mut Src, d: usize, r: &ChiralRow) {
    let (b, m) = (&r.buffer, &r.matrix);
    let (count, slice, reach) = match r.reach {
        RowReach::Dense => ("LS", "j", "every s'"),
        RowReach::Neighbours => ("3", "(s5 + LS - 1 + j) % LS", "s' = s5 - 1, s5, s5 + 1"),
    };
    s.line(
        d,
        &format!(
            "{{ // {}: sum over {reach} of A+(s5, s') P+ {b}[s'] + A-(s5, s') P- {b}[s']",
            r.piece
        ),
    );
    s.line(d + 1, "real t[24];");
    s.line(d + 1, "#pragma unroll");
    s.line(d + 1, "for (int k = 0; k < 24; k++) { t[k] = 0; }");
    s.line(d + 1, "#pragma unroll");
    s.line(d + 1, &format!("for (int j = 0; j < {count}; j++) {{"));
    s.line(d + 2, &format!("const int sp = {slice};"));
    s.line(
        d + 2,
        &format!("const real* const c = {b} + threadIdx.x + blockDim.x * (sp + blockDim.y * threadIdx.z); // c[k * block_threads]: real k"),
    );
    s.line(
        d + 2,
        &format!("const real* const ap = {m} + 2 * (s5 * LS + sp); // A+(s5, s')"),
    );
    s.line(
        d + 2,
        &format!("const real* const am = {m} + 2 * ((LS + s5) * LS + sp); // A-(s5, s')"),
    );
    s.line(d + 2, "#pragma unroll");
    s.line(d + 2, "for (int k = 0; k < 12; k += 2) {");
    s.line(
        d + 3,
        "const real pr = c[k * block_threads], pi = c[(k + 1) * block_threads];",
    );
    s.line(
        d + 3,
        "const real mr = c[(12 + k) * block_threads], mi = c[(13 + k) * block_threads];",
    );
    s.line(d + 3, "t[k] += ap[0] * pr - ap[1] * pi;");
    s.line(d + 3, "t[k + 1] += ap[0] * pi + ap[1] * pr;");
    s.line(d + 3, "t[12 + k] += am[0] * mr - am[1] * mi;");
    s.line(d + 3, "t[13 + k] += am[0] * mi + am[1] * mr;");
    s.line(d + 2, "}");
    s.line(d + 1, "}");
    match r.dest {
        RowDest::Reals(dest) => {
            s.line(d + 1, "#pragma unroll");
            s.line(
                d + 1,
                &format!("for (int k = 0; k < 24; k++) {{ {dest}[k] = t[k]; }}"),
            );
        }
        RowDest::Accumulator => {
            s.line(d + 1, "#pragma unroll");
            s.line(
                d + 1,
                "for (int q = 0; q < 4; q++) { for (int a = 0; a < 3; a++) { acc[q][a] = cplx{t[6 * q + 2 * a], t[6 * q + 2 * a + 1]}; } }",
            );
        }
    }
    s.line(d, "}");
}

/// The spin statements: projection to a half spinor, the twist, the clover product.
fn spin(s: &mut Src, d: usize, st: &Stmt) {
    match st {
        Stmt::Project { rows, biased } => {
            s.line(d, "cplx h[2][3];");
            let twice = biased.and_then(storage::twice_bias);
            for (r, &(c, ph)) in rows.iter().enumerate() {
                let (a, b) = (format!("v[{r}][a]"), format!("v[{c}][a]"));
                let sum = match twice {
                    Some(t) => biased_phase_add(&a, ph, &b, t),
                    None => phase_add(&a, ph, None, &b),
                };
                s.line(d, "#pragma unroll");
                s.line(
                    d,
                    &format!("for (int a = 0; a < 3; a++) {{ h[{r}][a] = {sum}; }}"),
                );
            }
        }
        Stmt::Twist => {
            s.line(d, "// i gamma5 = diag(i, i, -i, -i)");
            s.line(d, "#pragma unroll");
            s.line(d, "for (int a = 0; a < 3; a++) {");
            s.line(
                d + 1,
                "v[0][a] = cplx{-v[0][a].im, v[0][a].re}; v[1][a] = cplx{-v[1][a].im, v[1][a].re};",
            );
            s.line(
                d + 1,
                "v[2][a] = cplx{v[2][a].im, -v[2][a].re}; v[3][a] = cplx{v[3][a].im, -v[3][a].re};",
            );
            s.line(d, "}");
        }
        Stmt::CloverMul => s.line(d, "clover_mul(v, ca);"),
        _ => {}
    }
}

/// The shared-memory statements and the addition of a record into the accumulator.
fn shared(s: &mut Src, d: usize, st: &Stmt) {
    match st {
        Stmt::SharedStore { buffer, src, reals } => {
            s.line(d, "#pragma unroll");
            s.line(
                d,
                &format!("for (int k = 0; k < {reals}; k++) {{ {buffer}[k * block_threads + {THIS_THREAD}] = {src}[k]; }}"),
            );
        }
        Stmt::SharedLoad {
            buffer,
            dest,
            reals,
            dy,
        } => {
            s.line(d, &format!("real {dest}[{reals}];"));
            s.line(d, "{");
            s.line(
                d + 1,
                &format!(
                    "const int ty = (threadIdx.y + blockDim.y {} {}) % blockDim.y; // slice s5 {dy:+}, periodic in the block",
                    if *dy < 0 { '-' } else { '+' },
                    dy.abs()
                ),
            );
            s.line(d + 1, "#pragma unroll");
            s.line(
                d + 1,
                &format!("for (int k = 0; k < {reals}; k++) {{ {dest}[k] = {buffer}[k * block_threads + threadIdx.x + blockDim.x * (ty + blockDim.y * threadIdx.z)]; }}"),
            );
            s.line(d, "}");
        }
        &Stmt::AddReals { src, coeff, spins } => {
            s.line(d, "#pragma unroll");
            s.line(
                d,
                &format!("for (int q = 0; q < {spins}; q++) {{ for (int a = 0; a < 3; a++) {{ acc[q][a] = c_add(acc[q][a], c_scale({}, cplx{{{src}[6 * q + 2 * a], {src}[6 * q + 2 * a + 1]}})); }} }}", literal(coeff)),
            );
        }
        _ => {}
    }
}

/// The array a transport or accumulation works on, and its rows.
fn rows_of(rows: Rows) -> (&'static str, usize) {
    match rows {
        Rows::Half => ("h", 2),
        Rows::Full(n) => ("v", n),
    }
}

/// Prints a load through the field's codec; returns the factor the load left out.
pub(super) fn print_load(s: &mut Src, d: usize, load: &Load, k: &KernelIr) -> Option<String> {
    let field = k.field(&load.field)?;
    match load.at {
        LoadAt::Site { site, dest } => {
            // The xpay operand has the output's layout and its own pointer.
            let base = match load.value {
                Value::XpayX => "xpay_x".to_string(),
                _ => format!("f_{}", field.name),
            };
            let layout: &SoaLayout = &field.layout;
            storage::load_site(s, d, (&base, layout), site, dest, load.reads, load.scaling)
        }
        LoadAt::Staged { dest } => {
            let base = super::walk::stage_pointer(&field.name);
            storage::load_site(
                s,
                d,
                (&base, &field.layout),
                "n",
                dest,
                Reads::Shared,
                load.scaling,
            )
        }
        LoadAt::Link { mu, at } => {
            let base = format!("f_{}", field.name);
            let link = LinkField {
                base: &base,
                layout: &field.layout,
                long: field.long,
                global_scale: field
                    .extra
                    .contains(&crate::dsl::codec::ExtraArg::FieldScale),
            };
            storage::load_link(s, d, link, mu, ("ln", at), load.reads, load.scaling)
        }
    }
}

/// acc += sign · tf · rows, tf the product of the coefficient (or the boundary sign
/// times it) and the factors the named loads left out; the projected rows reconstructed.
fn accumulate(s: &mut Src, d: usize, a: &Accumulate, f: &Deferred) {
    let mut factors = Vec::new();
    if a.wraps {
        factors.push(format!(
            "(wraps ? {} : {})",
            literal(-a.scale),
            literal(a.scale)
        ));
    } else if a.scale != 1.0 {
        factors.push(literal(a.scale));
    }
    for v in &a.scaled_by {
        factors.extend(f.0.iter().filter(|(w, _)| w == v).map(|(_, x)| x.clone()));
    }
    let factor = (!factors.is_empty()).then(|| {
        s.line(d, &format!("const real tf = {};", factors.join(" * ")));
        "tf"
    });
    let one = Phase::ONE.times(a.sign);
    let add = |s: &mut Src, q: usize, ph: Phase, src: String| {
        s.line(
            d + 1,
            &format!(
                "acc[{q}][a] = {};",
                phase_add(&format!("acc[{q}][a]"), ph, factor, &src)
            ),
        );
    };
    s.line(d, "#pragma unroll");
    s.line(d, "for (int a = 0; a < 3; a++) {");
    match a.reconstruct {
        Reconstruct::Projected(p) => {
            for r in 0..2 {
                add(s, r, one, format!("h[{r}][a]"));
            }
            for (k2, &(r, ph)) in p.reconstruct.iter().enumerate() {
                add(s, 2 + k2, ph.times(a.sign), format!("h[{r}][a]"));
            }
        }
        Reconstruct::Rows(ns) => {
            for q in 0..ns {
                add(s, q, one, format!("v[{q}][a]"));
            }
        }
    }
    s.line(d, "}");
}
