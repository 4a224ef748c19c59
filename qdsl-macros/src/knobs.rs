//! `#[knobs(name = [value, …], …)]`: the knob values a spec allows.

use proc_macro2::Span;
use qdsl_core::dsl::knobs::KnobSet;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, Attribute, Ident, Token};

/// One `name = [values]` entry.
struct KnobArg {
    name: Ident,
    values: Vec<(String, Span)>,
}

impl Parse for KnobArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let content;
        bracketed!(content in input);
        let mut values = Vec::new();
        while !content.is_empty() {
            let value = if content.peek(syn::Lit) {
                match content.parse::<syn::Lit>()? {
                    syn::Lit::Int(i) => (i.base10_digits().to_string(), i.span()),
                    syn::Lit::Bool(b) => (b.value.to_string(), b.span),
                    other => return Err(syn::Error::new(other.span(), "expected a knob value")),
                }
            } else {
                let id: Ident = content.parse()?;
                (id.to_string(), id.span())
            };
            values.push(value);
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        Ok(KnobArg { name, values })
    }
}

/// The knob set of a `#[knobs(...)]` attribute.
pub fn parse_knobs(attr: &Attribute) -> syn::Result<KnobSet> {
    let args = attr.parse_args_with(Punctuated::<KnobArg, Token![,]>::parse_terminated)?;
    let mut set = KnobSet::default();
    let mut seen: Vec<String> = Vec::new();
    for arg in args {
        let name = arg.name.to_string();
        let Some(&(_, spellings)) = KnobSet::VALUES.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = KnobSet::VALUES.iter().map(|(n, _)| *n).collect();
            return Err(syn::Error::new(
                arg.name.span(),
                format!("unknown knob `{name}`; the knobs are {}", known.join(", ")),
            ));
        };
        if seen.contains(&name) {
            return Err(syn::Error::new(
                arg.name.span(),
                format!("knob `{name}` is listed twice"),
            ));
        }
        seen.push(name.clone());
        if arg.values.is_empty() {
            return Err(syn::Error::new(
                arg.name.span(),
                format!("knob `{name}` must allow at least one value"),
            ));
        }
        let mut allowed = vec![false; spellings.len()];
        for (value, span) in &arg.values {
            let k = spellings.iter().position(|s| s == value).ok_or_else(|| {
                syn::Error::new(
                    *span,
                    format!(
                        "{name} = {value} does not exist; {name} is one of {}",
                        spellings.join(", ")
                    ),
                )
            })?;
            allowed[k] = true;
        }
        if let Some(flags) = set.flags_mut(&name) {
            flags.copy_from_slice(&allowed);
        }
    }
    Ok(set)
}
