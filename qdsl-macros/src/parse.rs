//! The `stencil!` spec: header (doc, visibility, name, fields) and body (loops and
//! statements) → `qdsl_core::dsl::ir::Ir`, then the expansion.

use crate::knobs::parse_knobs;
use crate::term::{parse_term, Scope};
use proc_macro2::{Span, TokenStream};
use qdsl_core::dsl::ir::{camel_case, FieldDecl, FieldShape, Ir, Role, Term};
use qdsl_core::dsl::{DslError, TermPart};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{braced, parenthesized, Attribute, Block, Expr, Ident, Stmt, Token, Type, Visibility};

/// One `name: Shape` parameter.
struct Param {
    name: Ident,
    ty: Type,
}

impl Parse for Param {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse()?;
        Ok(Param { name, ty })
    }
}

/// The spec as tokens.
struct Spec {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    params: Punctuated<Param, Token![,]>,
    body: Block,
}

impl Parse for Spec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name = input.parse()?;
        let content;
        parenthesized!(content in input);
        let params = content.parse_terminated(Param::parse, Token![,])?;
        let inner;
        let brace = braced!(inner in input);
        let stmts = inner.call(Block::parse_within)?;
        if !input.is_empty() {
            return Err(
                input.error("unexpected tokens after the stencil body; one spec per `stencil!`")
            );
        }
        Ok(Spec {
            attrs,
            vis,
            name,
            params,
            body: Block {
                brace_token: brace,
                stmts,
            },
        })
    }
}

/// The shape named by a parameter's type.
fn shape_of(ty: &Type) -> syn::Result<FieldShape> {
    let unknown = || {
        syn::Error::new(
            ty.span(),
            "unknown field shape; expected `Spinor` (4 spins × 3 colours), `ColourVector` \
             (1 × 3), `Spinor<NS, NC>`, `Gauge`, `Gauge<N>`, `Clover` or `SiteMatrix<N>`",
        )
    };
    let Type::Path(p) = ty else {
        return Err(unknown());
    };
    let seg = match p.path.segments.iter().collect::<Vec<_>>().as_slice() {
        [seg] => *seg,
        _ => return Err(unknown()),
    };
    let args: Vec<usize> = match &seg.arguments {
        syn::PathArguments::None => vec![],
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .map(|g| match g {
                syn::GenericArgument::Const(Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                })) => i.base10_parse::<usize>(),
                other => Err(syn::Error::new(
                    other.span(),
                    "expected an integer spin or colour count",
                )),
            })
            .collect::<syn::Result<_>>()?,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "unexpected arguments of a field shape",
            ))
        }
    };
    match (seg.ident.to_string().as_str(), args.as_slice()) {
        ("Spinor", []) => Ok(FieldShape::Spinor {
            nspin: 4,
            ncolour: 3,
        }),
        ("ColourVector", []) => Ok(FieldShape::Spinor {
            nspin: 1,
            ncolour: 3,
        }),
        ("Gauge", []) => Ok(FieldShape::links(3)),
        // `Gauge<N>`: links of N × N; with N = NS · NC ≠ NC they are dense in spin and
        // colour (multigrid coarse links, `qdsl_core::field::DenseLinkField`).
        ("Gauge", [n]) if *n > 0 => Ok(FieldShape::links(*n)),
        // `SiteMatrix<N>`: one dense N × N matrix per site, the site-local term X(x) of a
        // multigrid coarse operator (`qdsl_core::field::DenseKind::SiteMatrix`).
        ("SiteMatrix", [n]) if *n > 0 => Ok(FieldShape::site_matrix(*n)),
        ("SiteMatrix", _) => Err(syn::Error::new(
            seg.arguments.span(),
            "`SiteMatrix<N>` takes one positive dimension N = NS · NC",
        )),
        ("Clover", []) => Ok(FieldShape::Clover),
        ("Spinor", [ns, nc]) if *ns > 0 && *nc > 0 => Ok(FieldShape::Spinor {
            nspin: *ns,
            ncolour: *nc,
        }),
        ("Spinor", _) => Err(syn::Error::new(
            seg.arguments.span(),
            "`Spinor<NS, NC>` takes two positive counts: spins and colours",
        )),
        _ => Err(unknown()),
    }
}

/// Walks the body: loops bind direction variables, statements become terms.
/// A parsed term with the spans its errors are reported at.
struct TermSpans {
    term: Term,
    /// The whole term (the right-hand side of `out += …`).
    whole: Span,
    /// Its source field.
    source: Span,
}

fn collect_terms(stmts: &[Stmt], scope: &mut Scope, terms: &mut Vec<TermSpans>) -> syn::Result<()> {
    for stmt in stmts {
        let expr = match stmt {
            Stmt::Expr(e, _) => e,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected `out += term;`, `out -= term;` or `for mu in 0..4 { … }`",
                ))
            }
        };
        match expr {
            Expr::ForLoop(f) => {
                let var = match &*f.pat {
                    syn::Pat::Ident(p) => p.ident.clone(),
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "expected a direction variable, e.g. `mu`",
                        ))
                    }
                };
                let (lo, hi) = range_of(&f.expr)?;
                for mu in lo..hi {
                    scope.dirs.push((var.to_string(), mu));
                    let r = collect_terms(&f.body.stmts, scope, terms);
                    scope.dirs.pop();
                    r?;
                }
            }
            Expr::Binary(b) => {
                let coeff = match b.op {
                    syn::BinOp::AddAssign(_) => 1.0,
                    syn::BinOp::SubAssign(_) => -1.0,
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "a statement accumulates into the output: use `+=` or `-=`",
                        ))
                    }
                };
                let out = match &*b.left {
                    Expr::Path(p) if p.path.get_ident().is_some() => p.path.get_ident().cloned(),
                    _ => None,
                }
                .ok_or_else(|| {
                    syn::Error::new(b.left.span(), "expected the output field's name")
                })?;
                scope.write(&out)?;
                let (term, source) = parse_term(&b.right, coeff, &out, scope)?;
                terms.push(TermSpans {
                    term,
                    whole: b.right.span(),
                    source,
                });
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected `out += term;`, `out -= term;` or `for mu in 0..4 { … }`",
                ))
            }
        }
    }
    Ok(())
}

/// The bounds of `a..b` with 0 ≤ a < b ≤ 4.
fn range_of(e: &Expr) -> syn::Result<(usize, usize)> {
    let bad = || {
        syn::Error::new(
            e.span(),
            "a direction loop runs over `a..b` with 0 ≤ a < b ≤ 4, e.g. `0..4`",
        )
    };
    let Expr::Range(r) = e else { return Err(bad()) };
    if !matches!(r.limits, syn::RangeLimits::HalfOpen(_)) {
        return Err(bad());
    }
    let int = |x: &Option<Box<Expr>>| -> syn::Result<usize> {
        match x.as_deref() {
            Some(Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            })) => i.base10_parse(),
            _ => Err(bad()),
        }
    };
    let (lo, hi) = (int(&r.start)?, int(&r.end)?);
    if lo < hi && hi <= 4 {
        Ok((lo, hi))
    } else {
        Err(bad())
    }
}

/// Parses, validates and expands a spec.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let spec: Spec = syn::parse2(input)?;
    let mut doc = Vec::new();
    let mut knobs = None;
    let mut docs = Vec::new();
    for a in &spec.attrs {
        if a.path().is_ident("doc") {
            if let syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }),
                ..
            }) = &a.meta
            {
                doc.push(s.value());
            }
            docs.push(a);
        } else if a.path().is_ident("knobs") {
            if knobs.is_some() {
                return Err(syn::Error::new(a.span(), "one `#[knobs(...)]` per spec"));
            }
            knobs = Some(parse_knobs(a)?);
        } else {
            return Err(syn::Error::new(
                a.span(),
                "a stencil spec takes only doc comments and `#[knobs(...)]` as attributes",
            ));
        }
    }
    let mut scope = Scope::default();
    for p in &spec.params {
        let shape = shape_of(&p.ty)?;
        scope.declare(&p.name, shape)?;
    }
    let mut terms = Vec::new();
    collect_terms(&spec.body.stmts, &mut scope, &mut terms)?;
    let Some(output) = scope.output.clone() else {
        return Err(syn::Error::new(
            spec.name.span(),
            "missing output: no statement writes a field (write `out += …;`)",
        ));
    };
    if terms.is_empty() {
        return Err(syn::Error::new(
            spec.name.span(),
            "the stencil has no terms",
        ));
    }
    let fields = scope
        .fields
        .iter()
        .map(|(n, shape)| FieldDecl {
            name: n.to_string(),
            shape: *shape,
            role: if *n == output { Role::Out } else { Role::In },
        })
        .collect();
    let ir = Ir {
        name: spec.name.to_string(),
        doc: doc.join("\n"),
        fields,
        terms: terms.iter().map(|t| t.term.clone()).collect(),
        knobs: knobs.unwrap_or_default(),
    };
    // Lowering validates the spec once; its errors about one term are reported at that
    // term's token, the others at the spec's name.
    let lowered = qdsl_core::dsl::lower::lower(&ir).map_err(|e| match e {
        DslError::InvalidTerm {
            term, part, reason, ..
        } => {
            let span = match (terms.get(term), part) {
                (Some(t), TermPart::Source) => t.source,
                (Some(t), TermPart::Whole) => t.whole,
                (None, _) => spec.name.span(),
            };
            syn::Error::new(span, reason)
        }
        other => syn::Error::new(spec.name.span(), other.to_string()),
    })?;
    let apply = qdsl_core::dsl::emit::rust::emit(&lowered);
    let rebuild = ir.rebuild_tokens();
    let ty = format_ident!("{}", camel_case(&ir.name), span = spec.name.span());
    let vis = &spec.vis;
    Ok(quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #ty;

        impl ::qdsl_core::dsl::Stencil for #ty {
            fn ir() -> ::qdsl_core::dsl::Ir {
                #rebuild
            }
        }

        impl #ty {
            #apply
        }
    })
}
