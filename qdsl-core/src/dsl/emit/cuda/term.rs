//! The text of a term's pieces, shared by the kernel-IR printer ([`super::stmt`]) and
//! the dense emitter: neighbour coordinates with their wraps, site indices, phase
//! arithmetic, literals, and the comments describing terms and links.

use super::Src;
use crate::dsl::ir::LinkRef;
use crate::dsl::lower::{LoweredTerm, ReadSites, SpinLowering};
use crate::dsl::spin::Phase;

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
pub(super) fn phase_add(a: &str, p: Phase, f: Option<&str>, b: &str) -> String {
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
pub(super) fn biased_phase_add(a: &str, p: Phase, b: &str, twice: &str) -> String {
    let (re, im) = match (p.re, p.im) {
        (1, 0) => (format!("({twice} - {b}.re)"), format!("({twice} - {b}.im)")),
        (-1, 0) => (format!("{b}.re"), format!("{b}.im")),
        (0, 1) => (format!("{b}.im"), format!("({twice} - {b}.re)")),
        _ => (format!("({twice} - {b}.im)"), format!("{b}.re")),
    };
    format!("cplx{{{a}.re - {re}, {a}.im - {im}}}")
}

/// A real literal for the compute type.
pub(super) fn literal(x: f64) -> String {
    format!("real({x:?})")
}

/// A one-line description of a term as generated, for the source's comments.
pub(crate) fn describe_term(t: &LoweredTerm, dagger: bool) -> String {
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
        .map(|l| format!("{} * ", describe_link(l)))
        .collect();
    let site = displaced(term.hop.steps, term.hop.mu);
    format!("{coeff:+} * {spin}{links}{}({site})", term.source)
}

/// A link as the spec writes it, for the source's comments: `u[0](x + mu0).dagger()`.
pub(crate) fn describe_link(l: &LinkRef) -> String {
    format!(
        "{}[{}]({}){}",
        l.field,
        l.mu,
        displaced(l.at, l.mu),
        if l.dagger { ".dagger()" } else { "" }
    )
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
