//! One statement's right-hand side → a `qdsl_core::dsl::ir::Term`, with every misuse
//! reported at its token.

use proc_macro2::Span;
use qdsl_core::dsl::ir::{FieldShape, Hop, LinkRef, SpinOp, Term};
use qdsl_core::dsl::lower::{dense_links, site_matrix_needs_dense};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, Lit};

/// What is in scope while parsing the body: the declared fields, the loop directions and
/// the output (once a statement has written it).
#[derive(Default)]
pub struct Scope {
    /// Declared fields, in order.
    pub fields: Vec<(Ident, FieldShape)>,
    /// Direction variables bound by enclosing loops (innermost last) and their values.
    pub dirs: Vec<(String, usize)>,
    /// The output field.
    pub output: Option<Ident>,
}

impl Scope {
    /// Declares a field; a second field of the same name is an error.
    pub fn declare(&mut self, name: &Ident, shape: FieldShape) -> syn::Result<()> {
        if self.fields.iter().any(|(n, _)| n == name) {
            return Err(syn::Error::new(
                name.span(),
                format!("duplicate field `{name}`: it is already declared"),
            ));
        }
        if name == "x" || name == "gamma" {
            return Err(syn::Error::new(
                name.span(),
                format!("`{name}` is reserved (the site `x`, the matrices `gamma`)"),
            ));
        }
        self.fields.push((name.clone(), shape));
        Ok(())
    }

    fn shape(&self, name: &Ident) -> syn::Result<FieldShape> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                let known: Vec<String> =
                    self.fields.iter().map(|(n, _)| format!("`{n}`")).collect();
                syn::Error::new(
                    name.span(),
                    format!(
                        "unknown field `{name}`; the fields are {}",
                        known.join(", ")
                    ),
                )
            })
    }

    /// Records `name` as the output of a statement.
    pub fn write(&mut self, name: &Ident) -> syn::Result<()> {
        let kind = match self.shape(name)? {
            shape if shape.is_site_matrix() => Some("site-matrix"),
            FieldShape::Gauge { .. } => Some("gauge"),
            FieldShape::Clover => Some("clover"),
            FieldShape::Spinor { .. } => None,
        };
        if let Some(kind) = kind {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "cannot write {kind} field `{name}`: the output must be a colour-spinor field"
                ),
            ));
        }
        match &self.output {
            Some(o) if o != name => Err(syn::Error::new(
                name.span(),
                format!("second output `{name}`: a stencil writes exactly one field, here `{o}`"),
            )),
            _ => {
                self.output = Some(name.clone());
                Ok(())
            }
        }
    }

    /// The value of a direction: a loop variable or a literal 0..3.
    fn direction(&self, e: &Expr) -> syn::Result<usize> {
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                self.dirs.iter().rev().find(|(n, _)| *n == id).map(|(_, v)| *v).ok_or_else(|| {
                    syn::Error::new(
                        e.span(),
                        format!("unknown direction `{id}`: a direction is a loop variable (`for {id} in 0..4`) or a literal 0..3"),
                    )
                })
            }
            Expr::Lit(syn::ExprLit {
                lit: Lit::Int(i), ..
            }) => {
                let v: usize = i.base10_parse()?;
                if v < 4 {
                    Ok(v)
                } else {
                    Err(syn::Error::new(
                        e.span(),
                        format!("direction {v} does not exist: directions are 0..3 (x, y, z, t)"),
                    ))
                }
            }
            _ => Err(syn::Error::new(
                e.span(),
                "expected a direction: a loop variable or a literal 0..3",
            )),
        }
    }

    /// An offset `x`, `x ± mu`, `x ± n * mu` → (direction, signed steps).
    fn offset(&self, e: &Expr) -> syn::Result<(Option<usize>, i32)> {
        self.offset_with_span(e).map(|(d, n, _)| (d, n))
    }

    /// [`Self::offset`], with the span of the displacement (`n * mu`, or `x`).
    fn offset_with_span(&self, e: &Expr) -> syn::Result<(Option<usize>, i32, Span)> {
        let bad = || {
            syn::Error::new(
                e.span(),
                "expected a site: `x`, `x + mu`, `x - mu`, `x + 3 * mu` or `x - 3 * mu`",
            )
        };
        let is_x = |e: &Expr| matches!(e, Expr::Path(p) if p.path.is_ident("x"));
        match e {
            _ if is_x(e) => Ok((None, 0, e.span())),
            Expr::Binary(b) if is_x(&b.left) => {
                let sign = match b.op {
                    BinOp::Add(_) => 1,
                    BinOp::Sub(_) => -1,
                    _ => return Err(bad()),
                };
                let (n, dir) = match &*b.right {
                    Expr::Binary(m) if matches!(m.op, BinOp::Mul(_)) => match &*m.left {
                        Expr::Lit(syn::ExprLit {
                            lit: Lit::Int(i), ..
                        }) => (i.base10_parse::<i32>()?, &*m.right),
                        _ => return Err(bad()),
                    },
                    other => (1, other),
                };
                let mu = self.direction(dir)?;
                Ok((Some(mu), sign * n, b.right.span()))
            }
            _ => Err(bad()),
        }
    }
}

/// The factors of a product a * b * c.
fn factors(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Binary(b) if matches!(b.op, BinOp::Mul(_)) => {
            let mut v = factors(&b.left);
            v.push(&b.right);
            v
        }
        _ => vec![e],
    }
}

/// A constant coefficient expression, evaluated in f64 as Rust would: numeric literals
/// combined with unary `-`, parentheses and the binary operators `+ - * /` (e.g.
/// `1.0 / 24.0`, `-(9.0 / 8.0)`). `Ok(None)` when `e` is not such an expression (then it
/// is a projector, a link or a source); an error at the offending token for a division
/// by zero or a non-finite result.
fn number(e: &Expr) -> syn::Result<Option<f64>> {
    let value = match e {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>()?,
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>()?,
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match number(&u.expr)? {
            Some(x) => -x,
            None => return Ok(None),
        },
        Expr::Paren(p) => return number(&p.expr),
        Expr::Binary(b) => {
            let (Some(l), Some(r)) = (number(&b.left)?, number(&b.right)?) else {
                return Ok(None);
            };
            match b.op {
                BinOp::Add(_) => l + r,
                BinOp::Sub(_) => l - r,
                BinOp::Mul(_) => l * r,
                BinOp::Div(_) if r == 0.0 => {
                    return Err(syn::Error::new(
                        b.right.span(),
                        "division by zero in a coefficient",
                    ))
                }
                BinOp::Div(_) => l / r,
                _ => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    if value.is_finite() {
        Ok(Some(value))
    } else {
        Err(syn::Error::new(
            e.span(),
            format!("the coefficient evaluates to {value}; it must be finite"),
        ))
    }
}

/// Whether `e` is the twist `(i * gamma(5))`, i.e. i γ5.
fn is_twist(e: &Expr) -> bool {
    let Expr::Paren(p) = e else { return false };
    let Expr::Binary(b) = &*p.expr else {
        return false;
    };
    let is_i = matches!(&*b.left, Expr::Path(q) if q.path.is_ident("i"));
    let is_gamma5 = matches!(&*b.right, Expr::Call(c)
        if matches!(&*c.func, Expr::Path(f) if f.path.is_ident("gamma"))
            && c.args.len() == 1
            && matches!(&c.args[0], Expr::Lit(syn::ExprLit { lit: Lit::Int(n), .. }) if n.base10_digits() == "5"));
    matches!(b.op, BinOp::Mul(_)) && is_i && is_gamma5
}

/// `(1 ± gamma(mu))` → (μ, sign).
fn projector(e: &Expr, scope: &Scope) -> syn::Result<(usize, i32)> {
    let bad = || {
        syn::Error::new(
            e.span(),
            "expected a spin projector `(1 + gamma(mu))` or `(1 - gamma(mu))`",
        )
    };
    let Expr::Paren(p) = e else { return Err(bad()) };
    let Expr::Binary(b) = &*p.expr else {
        return Err(bad());
    };
    let sign = match b.op {
        BinOp::Add(_) => 1,
        BinOp::Sub(_) => -1,
        _ => return Err(bad()),
    };
    if number(&b.left)? != Some(1.0) {
        return Err(syn::Error::new(
            b.left.span(),
            "a spin projector is `1 ± gamma(mu)`: the identity part must be `1`",
        ));
    }
    let Expr::Call(c) = &*b.right else {
        return Err(bad());
    };
    if !matches!(&*c.func, Expr::Path(f) if f.path.is_ident("gamma")) || c.args.len() != 1 {
        return Err(syn::Error::new(b.right.span(), "expected `gamma(mu)`"));
    }
    Ok((scope.direction(&c.args[0])?, sign))
}

/// A link `u[mu](site)` or `u[mu](site).dagger()` → (the link, its span). `at` is the
/// step of its site along the link's direction.
fn link(e: &Expr, scope: &Scope) -> syn::Result<Option<(LinkRef, Span)>> {
    let (call, dagger) = match e {
        Expr::MethodCall(m) => {
            if m.method != "dagger" || !m.args.is_empty() {
                return Err(syn::Error::new(
                    m.method.span(),
                    format!(
                        "unknown link method `{}`; the adjoint of a link is written `.dagger()`",
                        m.method
                    ),
                ));
            }
            match &*m.receiver {
                Expr::Call(c) => (c, true),
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "`.dagger()` applies to a link `u[mu](x)`",
                    ))
                }
            }
        }
        Expr::Call(c) if matches!(&*c.func, Expr::Index(_)) => (c, false),
        _ => return Ok(None),
    };
    let Expr::Index(ix) = &*call.func else {
        return Err(syn::Error::new(
            call.func.span(),
            "`.dagger()` applies to a link `u[mu](x)`",
        ));
    };
    let field = match &*ix.expr {
        Expr::Path(p) => p.path.get_ident().cloned(),
        _ => None,
    }
    .ok_or_else(|| syn::Error::new(ix.expr.span(), "expected a gauge field's name"))?;
    match scope.shape(&field)? {
        shape if shape.is_site_matrix() => return Err(syn::Error::new(field.span(), format!("`{field}` is a site matrix, not a gauge field: it is site-local, written `{field}(x) * psi(x)`"))),
        FieldShape::Gauge { .. } => {}
        FieldShape::Spinor { .. } => return Err(syn::Error::new(field.span(), format!("`{field}` is a colour-spinor field, not a gauge field; only gauge fields take a direction `[mu]`"))),
        FieldShape::Clover => return Err(syn::Error::new(field.span(), format!("`{field}` is a clover field, not a gauge field: it is site-local, written `{field}(x) * psi(x)`"))),
    }
    let mu = scope.direction(&ix.index)?;
    if call.args.len() != 1 {
        return Err(syn::Error::new(
            call.span(),
            "a link takes one site: `u[mu](x)`",
        ));
    }
    let (dir, at) = scope.offset(&call.args[0])?;
    if let Some(d) = dir {
        if d != mu {
            return Err(syn::Error::new(
                call.args[0].span(),
                "a link's site must be displaced along the link's own direction",
            ));
        }
    }
    Ok(Some((
        LinkRef {
            field: field.to_string(),
            mu,
            at,
            dagger,
        },
        e.span(),
    )))
}

/// A site-local matrix factor `a(x)`: a clover matrix or a dense site matrix.
enum SiteLocal {
    /// A [`FieldShape::Clover`] field.
    Clover(String),
    /// A `SiteMatrix<N>` field ([`FieldShape::site_matrix`]) and its N.
    Matrix(String, usize),
}

/// A site-local factor `a(x)` (a call of a clover or site-matrix field) → (it, its
/// span); `Ok(None)` for anything else, an error for such a field read away from `x`.
fn site_local(e: &Expr, scope: &Scope) -> syn::Result<Option<(SiteLocal, Span)>> {
    let Expr::Call(c) = e else { return Ok(None) };
    let Expr::Path(p) = &*c.func else {
        return Ok(None);
    };
    let Some(name) = p.path.get_ident() else {
        return Ok(None);
    };
    let (local, what) = match scope.fields.iter().find(|(n, _)| n == name) {
        Some((_, FieldShape::Clover)) => (SiteLocal::Clover(name.to_string()), "clover matrix"),
        Some((_, shape @ FieldShape::Gauge { ncolour, .. })) if shape.is_site_matrix() => {
            (SiteLocal::Matrix(name.to_string(), *ncolour), "site matrix")
        }
        _ => return Ok(None),
    };
    let at_x = c.args.len() == 1 && matches!(&c.args[0], Expr::Path(q) if q.path.is_ident("x"));
    if !at_x {
        return Err(syn::Error::new(
            c.span(),
            format!("the {what} is site-local: write `{name}(x)`"),
        ));
    }
    Ok(Some((local, e.span())))
}

/// Checks a site-matrix factor `name(x)` (N = `n`, at `span`) of a term on `src` (of
/// `shape`, read `steps` sites away, with or without other factors): the term must be
/// X(x) φ(x) alone, on a dense spec whose N × N matrices match `n`.
fn check_site_matrix(
    (name, n, span): (&str, usize, Span),
    src: &Ident,
    shape: FieldShape,
    alone: bool,
    scope: &Scope,
) -> syn::Result<()> {
    if !alone {
        return Err(syn::Error::new(
            span,
            format!("the site matrix `{name}` is site-local: it takes no spin operator or links and its source is read at `x`"),
        ));
    }
    let FieldShape::Spinor { nspin, ncolour } = shape else {
        return Ok(());
    };
    match dense_links(nspin, ncolour, scope.fields.iter().map(|(_, s)| *s)) {
        None => Err(syn::Error::new(
            span,
            site_matrix_needs_dense(name, &shape.spec_name()),
        )),
        Some(d) if d != n => Err(syn::Error::new(
            span,
            format!(
                "`{name}` is SiteMatrix<{n}>, but `{src}` is a {} field of {d} components: declare `{name}: SiteMatrix<{d}>`",
                shape.spec_name()
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// Parses a term ([`term_of`]); returns it with the span of its source field, where
/// lowering's errors about the source are reported.
pub fn parse_term(e: &Expr, sign: f64, out: &Ident, scope: &Scope) -> syn::Result<(Term, Span)> {
    let term = term_of(e, sign, out, scope)?;
    let source = match factors(e).last() {
        Some(Expr::Call(c)) => c.func.span(),
        _ => e.span(),
    };
    Ok((term, source))
}

/// Parses `[number *] [(1 ± gamma(mu)) | clover(x) *] [link * …] source(site)`, or
/// `[number *] matrix(x) * source(x)` for a site matrix (the term's single link at x).
fn term_of(e: &Expr, sign: f64, out: &Ident, scope: &Scope) -> syn::Result<Term> {
    let fs = factors(e);
    let (last, rest) = fs
        .split_last()
        .ok_or_else(|| syn::Error::new(e.span(), "empty term"))?;
    let mut coeff = sign;
    let mut spin: Option<(SpinOp, Span)> = None;
    let mut links: Vec<(LinkRef, Span)> = Vec::new();
    let mut matrix: Option<(String, usize, Span)> = None;
    for f in rest {
        if let Some(c) = number(f)? {
            if spin.is_some() || !links.is_empty() || matrix.is_some() {
                return Err(syn::Error::new(
                    f.span(),
                    "write the numeric coefficient first",
                ));
            }
            coeff *= c;
        } else if let Some((local, span)) = site_local(f, scope)? {
            if spin.is_some() || !links.is_empty() || matrix.is_some() {
                return Err(syn::Error::new(
                    span,
                    "one spin operator per term (a projector, the twist or a clover matrix), before the links",
                ));
            }
            match local {
                SiteLocal::Clover(name) => spin = Some((SpinOp::Clover { field: name }, span)),
                SiteLocal::Matrix(name, n) => matrix = Some((name, n, span)),
            }
        } else if let Expr::Paren(_) = f {
            if spin.is_some() || !links.is_empty() {
                return Err(syn::Error::new(
                    f.span(),
                    "one spin projector per term, before the links",
                ));
            }
            let op = if is_twist(f) {
                SpinOp::TwistGamma5
            } else {
                let (mu, sign) = projector(f, scope)?;
                SpinOp::Projector { mu, sign }
            };
            spin = Some((op, f.span()));
        } else if let Some(l) = link(f, scope)? {
            links.push(l);
        } else {
            return Err(syn::Error::new(
                f.span(),
                "expected a coefficient, a spin projector `(1 ± gamma(mu))` or a link `u[mu](x)`",
            ));
        }
    }
    // The source.
    let Expr::Call(call) = last else {
        return Err(syn::Error::new(
            last.span(),
            "a term ends with a source field read at a site, e.g. `psi(x + mu)`",
        ));
    };
    let src = match &*call.func {
        Expr::Path(p) => p.path.get_ident().cloned(),
        _ => None,
    }
    .ok_or_else(|| {
        syn::Error::new(
            call.func.span(),
            "a term ends with a source field read at a site, e.g. `psi(x + mu)`",
        )
    })?;
    if src == "gamma" {
        return Err(syn::Error::new(
            src.span(),
            "`gamma(mu)` appears only in a spin projector `(1 ± gamma(mu))`",
        ));
    }
    // Whether the source is a colour-spinor input of the output's shape is checked once,
    // by lowering, and reported here at the source's token.
    let shape = scope.shape(&src)?;
    if call.args.len() != 1 {
        return Err(syn::Error::new(
            call.span(),
            "a source takes one site: `psi(x + mu)`",
        ));
    }
    let site = &call.args[0];
    let (dir, steps, step_span) = scope.offset_with_span(site)?;
    if ![0, 1, -1, 3, -3].contains(&steps) {
        return Err(syn::Error::new(
            step_span,
            format!("a hop of {} sites: the generator handles hops of 1 and 3 sites (and site-local terms)", steps.abs()),
        ));
    }
    if src == *out || shape != scope.shape(out)? {
        // Not a source lowering accepts: lowering says why, at the source's token (the
        // checks below assume a colour-spinor source of the output's shape).
        let mu = dir.or(links.first().map(|l| l.0.mu)).unwrap_or(0);
        return Ok(Term {
            output: out.to_string(),
            coeff,
            spin: spin.map_or(SpinOp::Identity, |(op, _)| op),
            links: links.into_iter().map(|(l, _)| l).collect(),
            source: src.to_string(),
            hop: Hop { mu, steps },
        });
    }
    if let Some((name, n, span)) = &matrix {
        let alone = spin.is_none() && links.is_empty() && steps == 0;
        check_site_matrix((name, *n, *span), &src, shape, alone, scope)?;
        return Ok(Term {
            output: out.to_string(),
            coeff,
            spin: SpinOp::Identity,
            links: vec![LinkRef {
                field: name.clone(),
                mu: 0,
                at: 0,
                dagger: false,
            }],
            source: src.to_string(),
            hop: Hop { mu: 0, steps: 0 },
        });
    }
    let mu = dir.or(links.first().map(|l| l.0.mu)).unwrap_or(0);
    if let Some((op, span)) = &spin {
        let span = *span;
        if let FieldShape::Spinor { nspin, .. } = shape {
            if nspin != 4 {
                let pmu = match op {
                    SpinOp::Projector { mu, .. } => format!("spin projector (1 ± γ_{mu})"),
                    SpinOp::Clover { field } => format!("clover matrix `{field}`"),
                    _ => "twist i γ5".to_string(),
                };
                return Err(syn::Error::new(
                    span,
                    format!(
                        "the {pmu} needs a 4-spin field, but `{src}` is a {}",
                        shape.spec_name()
                    ),
                ));
            }
        }
    }
    if let Some((SpinOp::Clover { field }, span)) = &spin {
        if steps != 0 || !links.is_empty() {
            return Err(syn::Error::new(
                *span,
                format!("the clover matrix `{field}` is site-local: it takes no links and its source is read at `x`"),
            ));
        }
    }
    // The links must form a path from x to the source.
    for (l, span) in &links {
        if l.mu != mu {
            return Err(syn::Error::new(
                *span,
                format!("link in direction {} on a hop in direction {mu}", l.mu),
            ));
        }
    }
    if steps.abs() == 3 && links.len() == 1 {
        let (l, span) = &links[0];
        let ok = if steps > 0 {
            !l.dagger && l.at == 0
        } else {
            l.dagger && l.at == -3
        };
        if !ok {
            return Err(syn::Error::new(*span, "the long link of a 3-site hop is `l[mu](x)` forward or `l[mu](x - 3 * mu).dagger()` backward"));
        }
    } else {
        let mut p = 0;
        for (l, span) in &links {
            p = match (l.dagger, l.at) {
                (false, at) if at == p => p + 1,
                (true, at) if at == p - 1 => p - 1,
                _ => {
                    return Err(syn::Error::new(
                        *span,
                        "this link does not continue the path from x to the source: forward links are `u[mu](x + k*mu)`, backward ones `u[mu](x - (k+1)*mu).dagger()`",
                    ))
                }
            };
        }
        if p != steps {
            return Err(syn::Error::new(
                step_span,
                format!("the links lead from x to x{p:+}μ̂ but the source is read at x{steps:+}μ̂: the product is not gauge covariant"),
            ));
        }
    }
    Ok(Term {
        output: out.to_string(),
        coeff,
        spin: spin.map_or(SpinOp::Identity, |(op, _)| op),
        links: links.into_iter().map(|(l, _)| l).collect(),
        source: src.to_string(),
        hop: Hop { mu, steps },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(src: &str) -> syn::Result<Option<f64>> {
        number(&syn::parse_str::<Expr>(src)?)
    }

    /// Coefficients are evaluated as Rust evaluates the same f64 expression.
    #[test]
    fn coefficient_expressions_evaluate_exactly() {
        assert_eq!(eval("1.0 / 24.0").unwrap(), Some(1.0 / 24.0));
        assert_eq!(eval("-1.0 / 24.0").unwrap(), Some(-1.0 / 24.0));
        assert_eq!(eval("-(9.0 / 8.0)").unwrap(), Some(-1.125));
        assert_eq!(eval("2 * 3 - 1").unwrap(), Some(5.0));
        assert_eq!(eval("(1 + 2) / 4").unwrap(), Some(0.75));
        assert_eq!(eval("1 - gamma(mu)").unwrap(), None);
        assert_eq!(eval("psi(x)").unwrap(), None);
        assert!(eval("1.0 / (2.0 - 2.0)").is_err());
    }
}
