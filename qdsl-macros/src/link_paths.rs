//! `link_paths!`: tokens → `qdsl_core::dsl::paths::PathSpec` (smeared links) or
//! `qdsl_core::dsl::paths::ActionSpec` (`action`: closed loops), validated term by term
//! with errors at the offending token, then the expansion (a unit struct implementing
//! `qdsl_core::dsl::paths::LinkPaths` or `qdsl_core::dsl::paths::GaugeAction`).

use proc_macro2::{Span, TokenStream};
use qdsl_core::dsl::ir::camel_case;
use qdsl_core::dsl::paths::{ActionSpec, Dir, PathSpec, PathTerm, Step};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{braced, bracketed, parenthesized, Attribute, Ident, Token, Visibility};

/// One parsed term: name, coefficient, steps (sign, name) and spans.
struct TermTokens {
    name: Ident,
    coeff: f64,
    path: Vec<(bool, Ident)>,
    path_span: Span,
}

/// The whole spec: `/// doc  pub name(u: Gauge) -> out { terms }` (smeared links) or
/// `/// doc  pub action name(u: Gauge) { terms }` (a gauge action of closed loops).
struct SpecTokens {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    input: Ident,
    /// The output field of a smearing spec; `None` for an action.
    output: Option<Ident>,
    terms: Vec<TermTokens>,
}

/// A coefficient: `[-] int [/ int]` or `[-] float`.
fn parse_coeff(input: ParseStream) -> syn::Result<f64> {
    let negative = input.peek(Token![-]);
    if negative {
        input.parse::<Token![-]>()?;
    }
    let lit: syn::Lit = input.parse()?;
    let mut value = match &lit {
        syn::Lit::Int(i) => i.base10_parse::<u64>()? as f64,
        syn::Lit::Float(f) => f.base10_parse::<f64>()?,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "expected a number as the coefficient (`5/8`, `-1/16`, `0.25`)",
            ))
        }
    };
    if input.peek(Token![/]) {
        input.parse::<Token![/]>()?;
        let den: syn::LitInt = input.parse()?;
        let d = den.base10_parse::<u64>()?;
        if d == 0 {
            return Err(syn::Error::new(
                den.span(),
                "expected a nonzero denominator, found 0",
            ));
        }
        value /= d as f64;
    }
    Ok(if negative { -value } else { value })
}

impl Parse for TermTokens {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![:]>()?;
        let coeff = parse_coeff(input)?;
        if !input.peek(Token![*]) {
            return Err(syn::Error::new(
                input.span(),
                format!("term `{name}`: expected `* [path]` after the coefficient, found no path"),
            ));
        }
        input.parse::<Token![*]>()?;
        let content;
        let brackets = bracketed!(content in input);
        let steps = Punctuated::<(bool, Ident), Token![,]>::parse_terminated_with(&content, |s| {
            let forward = if s.peek(Token![+]) {
                s.parse::<Token![+]>()?;
                true
            } else if s.peek(Token![-]) {
                s.parse::<Token![-]>()?;
                false
            } else {
                return Err(s.error("expected a signed direction (`+mu`, `-nu`)"));
            };
            Ok((forward, s.parse::<Ident>()?))
        })?;
        input.parse::<Token![;]>()?;
        Ok(TermTokens {
            name,
            coeff,
            path: steps.into_iter().collect(),
            path_span: brackets.span.join(),
        })
    }
}

impl Parse for SpecTokens {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let is_action = input.peek2(Ident)
            && input
                .fork()
                .parse::<Ident>()
                .is_ok_and(|keyword| keyword == "action");
        if is_action {
            input.parse::<Ident>()?;
        }
        let name: Ident = input.parse()?;
        let params;
        parenthesized!(params in input);
        let in_name: Ident = params.parse()?;
        params.parse::<Token![:]>()?;
        let ty: Ident = params.parse()?;
        if ty != "Gauge" {
            return Err(syn::Error::new(
                ty.span(),
                format!("expected `Gauge`, found `{ty}`"),
            ));
        }
        if !params.is_empty() {
            return Err(params.error("expected one input, `u: Gauge`"));
        }
        let output = if is_action {
            None
        } else {
            input.parse::<Token![->]>()?;
            Some(input.parse::<Ident>()?)
        };
        let body;
        braced!(body in input);
        let mut terms = Vec::new();
        while !body.is_empty() {
            terms.push(body.parse::<TermTokens>()?);
        }
        if terms.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                "expected at least one path term",
            ));
        }
        Ok(SpecTokens {
            attrs,
            vis,
            name,
            input: in_name,
            output,
            terms,
        })
    }
}

/// The reason of a core validation error, for a span-carrying macro error.
fn reason(e: qdsl_core::dsl::DslError) -> String {
    match e {
        qdsl_core::dsl::DslError::InvalidSpec { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// The terms as data, with the checks every form shares (a term defined twice, a field
/// used as a direction, a step that undoes the one before it), errors at the token.
/// In an action every name is free (`mu` included); in a smearing spec `mu` is the link.
fn lower_terms(spec: &SpecTokens) -> syn::Result<(Vec<String>, Vec<PathTerm>)> {
    let is_action = spec.output.is_none();
    let mut free_names: Vec<String> = Vec::new();
    let mut terms = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for t in &spec.terms {
        if seen.contains(&t.name.to_string()) {
            return Err(syn::Error::new(
                t.name.span(),
                format!("term `{}` is defined twice", t.name),
            ));
        }
        seen.push(t.name.to_string());
        let mut steps: Vec<Step> = Vec::new();
        for (forward, d) in &t.path {
            let name = d.to_string();
            if d == &spec.input || spec.output.as_ref() == Some(d) {
                return Err(syn::Error::new(
                    d.span(),
                    format!("expected a direction, found the field `{d}`"),
                ));
            }
            let dir = if name == "mu" && !is_action {
                Dir::Mu
            } else {
                let k = free_names
                    .iter()
                    .position(|n| *n == name)
                    .unwrap_or_else(|| {
                        free_names.push(name.clone());
                        free_names.len() - 1
                    });
                Dir::Free(k)
            };
            let step = Step {
                dir,
                forward: *forward,
            };
            if let Some(prev) = steps.last() {
                if prev.dir == step.dir && prev.forward != step.forward {
                    return Err(syn::Error::new(
                        d.span(),
                        format!(
                            "`{}{d}` undoes the step before it along the bound direction `{d}` (the same link back and forth)",
                            if *forward { '+' } else { '-' }
                        ),
                    ));
                }
            }
            steps.push(step);
        }
        terms.push(PathTerm {
            name: t.name.to_string(),
            coeff: t.coeff,
            steps,
        });
    }
    Ok((free_names, terms))
}

/// Checks each term of a smearing spec (and that all share one displacement).
fn validate_smearing(
    spec: &SpecTokens,
    free_names: &[String],
    terms: &[PathTerm],
) -> syn::Result<()> {
    let mut displacement = None;
    for (t, term) in spec.terms.iter().zip(terms) {
        let single = PathSpec {
            name: spec.name.to_string(),
            output: String::new(),
            free_names: free_names.to_vec(),
            terms: vec![term.clone()],
        };
        let n = single
            .validate()
            .map_err(|e| syn::Error::new(t.path_span, reason(e)))?;
        match displacement {
            Some(m) if m != n => {
                return Err(syn::Error::new(
                    t.path_span,
                    format!(
                    "expected a path from x to x + {m}·mu like the first term, found x + {n}·mu"
                ),
                ))
            }
            _ => displacement = Some(n),
        }
    }
    Ok(())
}

/// Checks each loop of an action spec (closed, no link twice), errors at the path.
fn validate_action(
    spec: &SpecTokens,
    free_names: &[String],
    terms: &[PathTerm],
) -> syn::Result<()> {
    let action = ActionSpec {
        name: spec.name.to_string(),
        free_names: free_names.to_vec(),
        terms: terms.to_vec(),
    };
    for (t, term) in spec.terms.iter().zip(terms) {
        action
            .classes(term)
            .map_err(|e| syn::Error::new(t.path_span, reason(e)))?;
    }
    Ok(())
}

/// The tokens building one term as data.
fn term_tokens(t: &PathTerm) -> TokenStream {
    let tname = &t.name;
    let coeff = t.coeff;
    let steps = t.steps.iter().map(|s| {
        let dir = match s.dir {
            Dir::Mu => quote!(::qdsl_core::dsl::paths::Dir::Mu),
            Dir::Free(k) => quote!(::qdsl_core::dsl::paths::Dir::Free(#k)),
        };
        let forward = s.forward;
        quote!(::qdsl_core::dsl::paths::Step { dir: #dir, forward: #forward })
    });
    quote! {
        ::qdsl_core::dsl::paths::PathTerm {
            name: ::std::string::String::from(#tname),
            coeff: #coeff,
            steps: ::std::vec![#(#steps),*],
        }
    }
}

/// Parses, validates and expands a `link_paths!` spec: a unit struct implementing
/// `LinkPaths` (smeared links) or `GaugeAction` (an `action` of closed loops).
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let spec: SpecTokens = syn::parse2(input)?;
    for a in &spec.attrs {
        if !a.path().is_ident("doc") {
            return Err(syn::Error::new(
                a.span(),
                "a link_paths spec takes only doc comments as attributes",
            ));
        }
    }
    let (free_names, terms) = lower_terms(&spec)?;
    let docs = &spec.attrs;
    let vis = &spec.vis;
    let ty = format_ident!("{}", camel_case(&spec.name.to_string()));
    let name = spec.name.to_string();
    let term_tokens = terms.iter().map(term_tokens);
    let free = quote!(::std::vec![#(::std::string::String::from(#free_names)),*]);
    let imp = match &spec.output {
        Some(output) => {
            validate_smearing(&spec, &free_names, &terms)?;
            let output = output.to_string();
            quote! {
                impl ::qdsl_core::dsl::paths::LinkPaths for #ty {
                    fn spec() -> ::qdsl_core::dsl::paths::PathSpec {
                        ::qdsl_core::dsl::paths::PathSpec {
                            name: ::std::string::String::from(#name),
                            output: ::std::string::String::from(#output),
                            free_names: #free,
                            terms: ::std::vec![#(#term_tokens),*],
                        }
                    }
                }
            }
        }
        None => {
            validate_action(&spec, &free_names, &terms)?;
            quote! {
                impl ::qdsl_core::dsl::paths::GaugeAction for #ty {
                    fn spec() -> ::qdsl_core::dsl::paths::ActionSpec {
                        ::qdsl_core::dsl::paths::ActionSpec {
                            name: ::std::string::String::from(#name),
                            free_names: #free,
                            terms: ::std::vec![#(#term_tokens),*],
                        }
                    }
                }
            }
        }
    };
    Ok(quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #vis struct #ty;

        #imp
    })
}
