//! One term of a stencil as CUDA: the neighbour's index (with the wraps of an
//! antiperiodic time boundary), the source load, the spin projection to a half spinor
//! (or the twist), the link product rightmost first, the coefficient, and the
//! accumulation (reconstructing the projected rows).

use super::storage;
use super::{FieldInfo, Src};
use crate::dsl::ir::{FieldShape, LinkRef};
use crate::dsl::lower::{Lowered, LoweredTerm, ReadSites, SpinLowering};
use crate::dsl::spin::Phase;
use crate::dsl::variant::{TimeBoundary, Variant};
use crate::dsl::DslError;

/// What every term of one kernel shares.
pub(super) struct TermContext<'a> {
    pub lowered: &'a Lowered,
    pub variant: &'a Variant,
    pub fields: &'a [FieldInfo],
    /// The output parity (0, 1), or −1 for the full lattice.
    pub out_parity: i32,
    /// Spins of the spinor fields.
    pub ns: usize,
}

/// Emits the block of term `k`: acc += c · S · L · src(x + n μ̂).
pub(super) fn emit_term(
    s: &mut Src,
    cx: &TermContext<'_>,
    k: usize,
    t: &LoweredTerm,
) -> Result<(), DslError> {
    let (lowered, variant, fields) = (cx.lowered, cx.variant, cx.fields);
    let (out_parity, ns) = (cx.out_parity, cx.ns);
    let ir = &lowered.ir;
    let field = |n: &str| fields.iter().find(|f| f.name == n);
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
    shift_and_wrap(s, 2, "y", mu, steps, flip);
    // Dirichlet walls: the term is dropped where the hop leaves x's block.
    let walled = match variant.dirichlet {
        Some(d) if steps != 0 => Some(d.block[mu]),
        _ => None,
    };
    if let Some(b) = walled {
        s.line(
            2,
            &format!(
                "if (x[{mu}] / {b} == y[{mu}] / {b}) {{ // Dirichlet: the hop stays in x's block"
            ),
        );
        s.1 += 1;
    }
    // The source's slice s5 holds `half` sites (one parity) or 2 · half (full lattice).
    s.line(
        2,
        &format!("const int n = {};", source_index(reads, out_parity >= 0)),
    );
    let base = format!("f_{}", src.name);
    // Factors of the term applied once, in the accumulation: the source's fixed-point
    // scale, the links' (every step up to there is linear in each of them).
    // A projected source only enters pairwise sums and differences: fixed point may stay
    // biased (storage::Scaling::Biased), saving the decoder's subtract per real.
    let projected = matches!(t.spin, SpinLowering::Projected { .. });
    let bias = storage::twice_bias(src.layout.format).filter(|_| projected);
    let scaling = match bias {
        Some(_) => storage::Scaling::Biased,
        None => storage::Scaling::Deferred,
    };
    let mut factors: Vec<String> = storage::load_site(
        s,
        2,
        (&base, &src.layout),
        "n",
        "r",
        storage::Reads::Shared,
        scaling,
    )
    .into_iter()
    .collect();
    s.line(2, &format!("cplx v[{ns}][3];"));
    s.line(2, "#pragma unroll");
    s.line(
        2,
        &format!("for (int q = 0; q < {ns}; q++) {{ for (int a = 0; a < 3; a++) {{ v[q][a] = {{r[6 * q + 2 * a], r[6 * q + 2 * a + 1]}}; }} }}"),
    );
    let rows = match &t.spin {
        SpinLowering::Clover { field: name } => {
            let a = field(name).ok_or_else(|| DslError::InvalidSpec {
                kernel: ir.name.clone(),
                reason: format!("unknown clover field `{name}`"),
            })?;
            s.line(
                2,
                "// the clover matrix at this (output) site: index i in the output's sites",
            );
            let base = format!("f_{}", a.name);
            storage::load_site(
                s,
                2,
                (&base, &a.layout),
                "i",
                "ca",
                storage::Reads::Shared,
                storage::Scaling::Applied,
            );
            s.line(2, "clover_mul(v, ca);");
            "v"
        }
        &SpinLowering::Projected { plan, dagger_plan } => {
            let p = if variant.dagger { dagger_plan } else { plan };
            s.line(2, "cplx h[2][3];");
            for (r, &(c, ph)) in p.project.iter().enumerate() {
                s.line(2, "#pragma unroll");
                s.line(
                    2,
                    &format!(
                        "for (int a = 0; a < 3; a++) {{ h[{r}][a] = {}; }}",
                        match bias {
                            Some(k) => biased_phase_add(
                                &format!("v[{r}][a]"),
                                ph,
                                &format!("v[{c}][a]"),
                                k
                            ),
                            None =>
                                phase_add(&format!("v[{r}][a]"), ph, None, &format!("v[{c}][a]")),
                        }
                    ),
                );
            }
            "h"
        }
        SpinLowering::Twisted => {
            s.line(2, "// i gamma5 = diag(i, i, -i, -i)");
            s.line(2, "#pragma unroll");
            s.line(2, "for (int a = 0; a < 3; a++) {");
            s.line(
                3,
                "v[0][a] = cplx{-v[0][a].im, v[0][a].re}; v[1][a] = cplx{-v[1][a].im, v[1][a].re};",
            );
            s.line(
                3,
                "v[2][a] = cplx{v[2][a].im, -v[2][a].re}; v[3][a] = cplx{v[3][a].im, -v[3][a].re};",
            );
            s.line(2, "}");
            "v"
        }
        SpinLowering::Rows { .. } => "v",
    };
    let krows = if rows == "h" { 2 } else { ns };
    // Link product, rightmost link first.
    let reads = match term.links.len() {
        1 => storage::Reads::Once,
        _ => storage::Reads::Shared,
    };
    for l in term.links.iter().rev() {
        factors.extend(emit_link(s, l, fields, reads)?);
        s.line(3, &format!("transport<{krows}, {}>({rows}, m);", l.dagger));
        s.line(2, "}");
    }
    // Coefficient and boundary sign.
    let coeff = if variant.dagger {
        t.dagger_coeff
    } else {
        t.coeff
    };
    // acc += c · (sign) · tf · P w: a coefficient ±1 becomes the sign of the accumulation;
    // other coefficients, the boundary sign and the deferred scales form one factor tf of
    // the multiply-adds.
    let (acc_sign, scale) = if coeff.abs() == 1.0 {
        (coeff as i32, 1.0)
    } else {
        (1, coeff)
    };
    if signed {
        factors.insert(
            0,
            format!("(wraps ? {} : {})", literal(-scale), literal(scale)),
        );
    } else if scale != 1.0 {
        factors.insert(0, literal(scale));
    }
    let factor = (!factors.is_empty()).then(|| {
        s.line(2, &format!("const real tf = {};", factors.join(" * ")));
        "tf"
    });
    let one = Phase::ONE.times(acc_sign);
    s.line(2, "#pragma unroll");
    s.line(2, "for (int a = 0; a < 3; a++) {");
    match &t.spin {
        &SpinLowering::Projected { plan, dagger_plan } => {
            let p = if variant.dagger { dagger_plan } else { plan };
            for r in 0..2 {
                s.line(
                    3,
                    &format!(
                        "acc[{r}][a] = {};",
                        phase_add(&format!("acc[{r}][a]"), one, factor, &format!("h[{r}][a]"))
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
                        phase_add(&format!("acc[{sp}][a]"), ph, factor, &format!("h[{r}][a]"))
                    ),
                );
            }
        }
        SpinLowering::Rows { .. } | SpinLowering::Twisted | SpinLowering::Clover { .. } => {
            for q in 0..ns {
                s.line(
                    3,
                    &format!(
                        "acc[{q}][a] = {};",
                        phase_add(&format!("acc[{q}][a]"), one, factor, &format!("v[{q}][a]"))
                    ),
                );
            }
        }
    }
    s.line(2, "}");
    if walled.is_some() {
        s.1 -= 1;
        s.line(2, "}");
    }
    s.line(1, "}");
    Ok(())
}

/// Under `#if QDSL_PREFETCH` (the tuner's prefetch build, `-DQDSL_PREFETCH`): asks L2
/// for term `k`'s source record (and norm; not in the links-only build,
/// `-DQDSL_PREFETCH_LINKS_ONLY`) and link records, a term ahead of their loads, so that
/// more of the kernel's reads are in flight; nothing is read into registers.
pub(super) fn emit_prefetch(s: &mut Src, cx: &TermContext<'_>, k: usize, t: &LoweredTerm) {
    let field = |n: &str| cx.fields.iter().find(|f| f.name == n);
    let term = &t.term;
    let Some(src) = field(&term.source) else {
        return;
    };
    let reads = cx
        .lowered
        .input(&term.source)
        .map(|i| i.reads)
        .unwrap_or(ReadSites::Both);
    s.0.push_str(
        "#if QDSL_PREFETCH
",
    );
    s.line(1, &format!("{{ // term {k}'s records into L2"));
    s.0.push_str("#if !QDSL_PREFETCH_LINKS_ONLY\n");
    s.line(2, "{");
    s.line(3, "int y[4] = {x[0], x[1], x[2], x[3]};");
    shift_and_wrap(s, 3, "y", term.hop.mu, term.hop.steps, "");
    s.line(
        3,
        &format!("const int n = {};", source_index(reads, cx.out_parity >= 0)),
    );
    storage::prefetch_site(s, 3, (&format!("f_{}", src.name), &src.layout), "n");
    s.line(2, "}");
    s.0.push_str("#endif\n");
    for l in &term.links {
        let Some(f) = field(&l.field) else { continue };
        s.line(2, "{");
        link_site(s, 3, "const int ln", l);
        storage::prefetch_link(s, 3, (&format!("f_{}", f.name), &f.layout), l.mu, "ln");
        s.line(2, "}");
    }
    s.line(1, "}");
    s.0.push_str(
        "#endif
",
    );
}

/// Opens a block that loads the link `l` into `m` (the caller closes it); returns the
/// factor the link was left without ([`storage::Scaling::Deferred`]).
fn emit_link(
    s: &mut Src,
    l: &LinkRef,
    fields: &[FieldInfo],
    reads: storage::Reads,
) -> Result<Option<String>, DslError> {
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
    link_site(s, 3, "const int ln", l);
    let base = format!("f_{}", f.name);
    let field = storage::LinkField {
        base: &base,
        layout: &f.layout,
        long: f.long,
    };
    Ok(storage::load_link(
        s,
        3,
        field,
        mu,
        ("ln", l.at),
        reads,
        storage::Scaling::Deferred,
    ))
}

/// `<lhs> = ` the checkerboard index of the link's site x + at · μ̂ (`cb` itself for
/// at = 0; else through a wrapped copy `z` of x).
pub(super) fn link_site(s: &mut Src, indent: usize, lhs: &str, l: &LinkRef) {
    if l.at == 0 {
        s.line(indent, &format!("{lhs} = cb;"));
        return;
    }
    s.line(indent, "int z[4] = {x[0], x[1], x[2], x[3]};");
    shift_and_wrap(s, indent, "z", l.mu, l.at, "");
    s.line(
        indent,
        &format!("{lhs} = ((z[0] + z[1] + z[2] + z[3]) & 1) * half + ((z[0] + L0 * (z[1] + L1 * (z[2] + L2 * z[3]))) >> 1);"),
    );
}

/// Emits `c[mu] += steps` and its periodic wrap as |steps| conditional corrections (a
/// coordinate moved by n sites from [0, L) is back in range after at most n corrections
/// of ±L, for any L ≥ 1); each correction also runs `on_wrap`. Straight-line selects, no
/// loop: a `while` wrap cost the fixed16 Wilson hop 8% on the H100.
pub(super) fn shift_and_wrap(
    s: &mut Src,
    indent: usize,
    c: &str,
    mu: usize,
    steps: i32,
    on_wrap: &str,
) {
    if steps == 0 {
        return;
    }
    let (op, test, fix) = if steps > 0 {
        ("+=", format!("{c}[{mu}] >= L[{mu}]"), "-=")
    } else {
        ("-=", format!("{c}[{mu}] < 0"), "+=")
    };
    s.line(indent, &format!("{c}[{mu}] {op} {};", steps.abs()));
    for _ in 0..steps.abs() {
        s.line(
            indent,
            &format!("if ({test}) {{ {c}[{mu}] {fix} L[{mu}];{on_wrap} }}"),
        );
    }
}

/// The index of the source site y in its field: `s5 * half + lex/2` when the source
/// holds one parity (read at one parity for a one-parity output), else the full
/// checkerboard index in slice s5.
pub(super) fn source_index(reads: ReadSites, parity_output: bool) -> &'static str {
    match reads {
        ReadSites::OtherParity | ReadSites::SameParity if parity_output => {
            "s5 * half + ((y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]))) >> 1)"
        }
        _ => "s5 * 2 * half + ((y[0] + y[1] + y[2] + y[3]) & 1) * half + ((y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]))) >> 1)",
    }
}

/// `a + p b` for a phase p ∈ {±1, ±i}, as exact complex code; with a factor f,
/// `a + p f b` (one multiply-add per real).
fn phase_add(a: &str, p: Phase, f: Option<&str>, b: &str) -> String {
    let Some(f) = f else {
        return match (p.re, p.im) {
            (1, 0) => format!("c_add({a}, {b})"),
            (-1, 0) => format!("c_sub({a}, {b})"),
            (0, 1) => format!("cplx{{{a}.re - {b}.im, {a}.im + {b}.re}}"),
            _ => format!("cplx{{{a}.re + {b}.im, {a}.im - {b}.re}}"),
        };
    };
    let (re, im) = match (p.re, p.im) {
        (1, 0) => (("", "re"), ("", "im")),
        (-1, 0) => (("-", "re"), ("-", "im")),
        (0, 1) => (("-", "im"), ("", "re")),
        _ => (("", "im"), ("-", "re")),
    };
    // Explicit fma: with `a + f * b` the compiler shares f·b between the two rows a
    // projected row feeds, a multiply and two adds instead of two multiply-adds.
    let fma =
        |(sign, part): (&str, &str), acc: &str| format!("fma({sign}{f}, {b}.{part}, {a}.{acc})");
    format!("cplx{{{}, {}}}", fma(re, "re"), fma(im, "im"))
}

/// `a + p b` for a phase p ∈ {±1, ±i} of biased fixed-point values (x + B each, B the
/// bias; `twice` = 2B): a difference x − y is the biased one, a sum x + y is
/// a − (2B − b); exact (every operand and result an integer below 2^24).
fn biased_phase_add(a: &str, p: Phase, b: &str, twice: &str) -> String {
    let (re, im) = match (p.re, p.im) {
        (1, 0) => (format!("({twice} - {b}.re)"), format!("({twice} - {b}.im)")),
        (-1, 0) => (format!("{b}.re"), format!("{b}.im")),
        (0, 1) => (format!("{b}.im"), format!("({twice} - {b}.re)")),
        _ => (format!("({twice} - {b}.im)"), format!("{b}.re")),
    };
    format!("cplx{{{a}.re - {re}, {a}.im - {im}}}")
}

/// A real literal for the compute type.
fn literal(x: f64) -> String {
    format!("real({x:?})")
}

/// A one-line description of a term as generated, for the source's comments.
fn describe(t: &crate::dsl::lower::LoweredTerm, dagger: bool) -> String {
    let term = &t.term;
    let coeff = if dagger { t.dagger_coeff } else { t.coeff };
    let spin = match &t.spin {
        &SpinLowering::Projected { plan, dagger_plan } => {
            let p = if dagger { dagger_plan } else { plan };
            format!(
                "(1 {} gamma({})) * ",
                if p.sign > 0 { '+' } else { '-' },
                p.mu
            )
        }
        SpinLowering::Twisted => "(i * gamma(5)) * ".to_string(),
        SpinLowering::Clover { field } => format!("{field}(x) * "),
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
pub(super) fn displaced(n: i32, mu: usize) -> String {
    match n {
        0 => "x".to_string(),
        1 => format!("x + mu{mu}"),
        -1 => format!("x - mu{mu}"),
        n => format!("x {} {} * mu{mu}", if n > 0 { '+' } else { '-' }, n.abs()),
    }
}
