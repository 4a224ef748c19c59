//! The `mma_tile!` spec: `key: value,` items → `qdsl_core::dsl::mma::MmaSpec`, validated
//! with errors at the offending token, then the expansion (a unit struct implementing
//! `qdsl_core::dsl::mma::MmaTile`).

use proc_macro2::{Span, TokenStream};
use qdsl_core::dsl::ir::camel_case;
use qdsl_core::dsl::mma::{
    Accumulator, Fragments, Input, Instruction, Item, MmaSpec, Operand, Problem, Scaling, Shape,
    Split, Staging,
};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{braced, bracketed, parenthesized, Attribute, Expr, Ident, LitInt, Token, Visibility};

/// One item's value as written.
enum Value {
    /// A word: `inner`, `none`, `cp_async`, `ldmatrix`.
    Word(Ident),
    /// A number: `3`.
    Int(LitInt),
    /// `m16n8k16(bf16 -> f32)`, `simt(f32 -> f32)`.
    Mma {
        shape: Ident,
        operand: Ident,
        accumulator: Ident,
    },
    /// `[a, b, …]` of numbers or words.
    List(Vec<ListElem>, Span),
}

enum ListElem {
    Int(LitInt),
    Word(Ident),
}

impl ListElem {
    fn span(&self) -> Span {
        match self {
            ListElem::Int(l) => l.span(),
            ListElem::Word(w) => w.span(),
        }
    }
}

impl Parse for Value {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(syn::token::Bracket) {
            let content;
            let b = bracketed!(content in input);
            let mut elems = Vec::new();
            while !content.is_empty() {
                elems.push(if content.peek(LitInt) {
                    ListElem::Int(content.parse()?)
                } else {
                    ListElem::Word(content.parse()?)
                });
                if content.is_empty() {
                    break;
                }
                content.parse::<Token![,]>()?;
            }
            return Ok(Value::List(elems, b.span.join()));
        }
        if input.peek(LitInt) {
            return Ok(Value::Int(input.parse()?));
        }
        let word: Ident = input.parse()?;
        if input.peek(syn::token::Paren) {
            let content;
            parenthesized!(content in input);
            let operand = content.parse()?;
            content.parse::<Token![->]>()?;
            let accumulator = content.parse()?;
            if !content.is_empty() {
                return Err(
                    content.error("expected `(operand -> accumulator)`, e.g. `(bf16 -> f32)`")
                );
            }
            return Ok(Value::Mma {
                shape: word,
                operand,
                accumulator,
            });
        }
        Ok(Value::Word(word))
    }
}

impl Value {
    fn span(&self) -> Span {
        match self {
            Value::Word(w) => w.span(),
            Value::Int(l) => l.span(),
            Value::Mma { shape, .. } => shape.span(),
            Value::List(_, s) => *s,
        }
    }
}

/// The spec as tokens.
struct Spec {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    items: Vec<(Ident, Value)>,
}

impl Parse for Spec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name = input.parse()?;
        let content;
        braced!(content in input);
        let mut items = Vec::new();
        while !content.is_empty() {
            let key: Ident = content.parse()?;
            content.parse::<Token![:]>()?;
            let value = content.parse()?;
            items.push((key, value));
            if content.is_empty() {
                break;
            }
            content.parse::<Token![,]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the spec; one spec per `mma_tile!`"));
        }
        Ok(Spec {
            attrs,
            vis,
            name,
            items,
        })
    }
}

fn word<'a>(v: &'a Value, what: &str) -> syn::Result<&'a Ident> {
    match v {
        Value::Word(w) => Ok(w),
        other => Err(syn::Error::new(other.span(), format!("expected {what}"))),
    }
}

fn one_of<T: Copy>(v: &Value, options: &[(&str, T)]) -> syn::Result<T> {
    let names: Vec<String> = options.iter().map(|(n, _)| format!("`{n}`")).collect();
    let expected = names.join(", ");
    let w = word(v, &format!("one of {expected}"))?;
    options
        .iter()
        .find(|(n, _)| w == n)
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            syn::Error::new(
                w.span(),
                format!("unknown value `{w}`; expected one of {expected}"),
            )
        })
}

fn numbers(v: &Value, key: &str) -> syn::Result<Vec<usize>> {
    match v {
        Value::List(elems, _) => elems
            .iter()
            .map(|e| match e {
                ListElem::Int(l) => l.base10_parse(),
                ListElem::Word(w) => {
                    Err(syn::Error::new(w.span(), format!("`{key}` lists numbers")))
                }
            })
            .collect(),
        Value::Int(l) => Ok(vec![l.base10_parse()?]),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{key}` takes a number or a list `[a, b]`"),
        )),
    }
}

fn inputs(v: &Value) -> syn::Result<Vec<Input>> {
    let one = |w: &Ident| match w.to_string().as_str() {
        "f32" => Ok(Input::F32),
        "f64" => Ok(Input::F64),
        _ => Err(syn::Error::new(
            w.span(),
            format!("unknown input precision `{w}`; expected `f32` or `f64`"),
        )),
    };
    match v {
        Value::List(elems, _) => elems
            .iter()
            .map(|e| match e {
                ListElem::Word(w) => one(w),
                ListElem::Int(l) => Err(syn::Error::new(l.span(), "expected `f32` or `f64`")),
            })
            .collect(),
        Value::Word(w) => Ok(vec![one(w)?]),
        other => Err(syn::Error::new(
            other.span(),
            "`input` takes `f32`, `f64` or a list of them",
        )),
    }
}

fn instruction(v: &Value) -> syn::Result<Instruction> {
    let Value::Mma {
        shape,
        operand,
        accumulator,
    } = v
    else {
        return Err(syn::Error::new(
            v.span(),
            "expected an instruction `shape(operand -> accumulator)`, e.g. `m16n8k16(bf16 -> f32)`",
        ));
    };
    let shape_of = Shape::from_name(&shape.to_string()).ok_or_else(|| {
        syn::Error::new(
            shape.span(),
            format!(
                "unknown MMA shape `{shape}`; expected `m16n8k16`, `m16n8k8`, `m8n8k4` or \
                 `simt` (f32 FMA on the CUDA cores)"
            ),
        )
    })?;
    let operand_of = Operand::from_name(&operand.to_string()).ok_or_else(|| {
        syn::Error::new(
            operand.span(),
            format!(
                "unknown operand type `{operand}`; expected `f16`, `bf16`, `tf32`, `f32` or `f64`"
            ),
        )
    })?;
    let accumulator_of = match accumulator.to_string().as_str() {
        "f32" => Accumulator::F32,
        "f64" => Accumulator::F64,
        _ => {
            return Err(syn::Error::new(
                accumulator.span(),
                format!("unknown accumulator type `{accumulator}`; expected `f32` or `f64`"),
            ))
        }
    };
    Ok(Instruction {
        shape: shape_of,
        operand: operand_of,
        accumulator: accumulator_of,
    })
}

/// Parses, validates and expands a spec.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let spec: Spec = syn::parse2(input)?;
    let mut doc = Vec::new();
    for a in &spec.attrs {
        if !a.path().is_ident("doc") {
            return Err(syn::Error::new(
                a.span(),
                "an mma_tile spec takes only doc comments as attributes",
            ));
        }
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
    }
    let mut found: Vec<(Item, &Ident, &Value)> = Vec::new();
    for (key, value) in &spec.items {
        let item = Item::from_key(&key.to_string()).ok_or_else(|| {
            let keys: Vec<&str> = Item::ALL.iter().map(|i| i.key()).collect();
            syn::Error::new(
                key.span(),
                format!("unknown item `{key}`; expected one of {}", keys.join(", ")),
            )
        })?;
        if found.iter().any(|(i, _, _)| *i == item) {
            return Err(syn::Error::new(
                key.span(),
                format!("`{key}` is given twice"),
            ));
        }
        found.push((item, key, value));
    }
    let get = |item: Item| {
        found
            .iter()
            .find(|(i, _, _)| *i == item)
            .map(|(_, _, v)| *v)
    };
    let required = |item: Item| {
        get(item).ok_or_else(|| {
            syn::Error::new(
                spec.name.span(),
                format!("the spec needs `{}: …`", item.key()),
            )
        })
    };
    let problem = one_of(
        required(Item::Problem)?,
        &[
            ("inner", Problem::Inner),
            ("complex_inner", Problem::ComplexInner),
            ("batched_complex_inner", Problem::BatchedComplexInner),
            ("complex_axpy", Problem::ComplexAxpy),
        ],
    )?;
    let instruction = instruction(required(Item::Mma)?)?;
    let split = match get(Item::Split) {
        None => Split::One,
        Some(Value::Int(l)) => match l.base10_parse::<usize>()? {
            1 => Split::One,
            3 => Split::Three,
            other => {
                return Err(syn::Error::new(
                    l.span(),
                    format!("split {other}: the modes are 1 (plain) and 3 (3×BF16, 3×TF32)"),
                ))
            }
        },
        Some(other) => return Err(syn::Error::new(other.span(), "`split` is 1 or 3")),
    };
    let scaling = get(Item::Scaling)
        .map(|v| {
            one_of(
                v,
                &[("none", Scaling::None), ("block_max", Scaling::BlockMax)],
            )
        })
        .transpose()?
        .unwrap_or(Scaling::None);
    let staging = get(Item::Staging)
        .map(|v| {
            one_of(
                v,
                &[("direct", Staging::Direct), ("cp_async", Staging::CpAsync)],
            )
        })
        .transpose()?
        .unwrap_or(Staging::CpAsync);
    let fragments = get(Item::Fragments)
        .map(|v| {
            one_of(
                v,
                &[
                    ("explicit", Fragments::Explicit),
                    ("ldmatrix", Fragments::Ldmatrix),
                ],
            )
        })
        .transpose()?
        .unwrap_or(Fragments::Explicit);
    let mma = MmaSpec {
        name: spec.name.to_string(),
        doc: doc.join("\n"),
        problem,
        instruction,
        split,
        scaling,
        staging,
        fragments,
        m: numbers(required(Item::M)?, "m")?,
        n: numbers(required(Item::N)?, "n")?,
        input: inputs(required(Item::Input)?)?,
        tile_k: numbers(required(Item::TileK)?, "tile_k")?,
        warps: numbers(required(Item::Warps)?, "warps")?,
        stages: numbers(required(Item::Stages)?, "stages")?,
    };
    mma.validate().map_err(|e| {
        // An item left out (e.g. f16 without `scaling`) is reported at the instruction.
        let span = match (get(e.item), e.index) {
            (Some(Value::List(elems, _)), Some(k)) if k < elems.len() => elems[k].span(),
            // The instruction's operand (1) or accumulator (2) type.
            (Some(Value::Mma { operand, .. }), Some(1)) => operand.span(),
            (Some(Value::Mma { accumulator, .. }), Some(2)) => accumulator.span(),
            (Some(v), _) => v.span(),
            (None, _) => get(Item::Mma).map_or(spec.name.span(), Value::span),
        };
        syn::Error::new(span, e.reason)
    })?;
    Ok(expansion(&spec, &mma))
}

fn expansion(spec: &Spec, m: &MmaSpec) -> TokenStream {
    let ty = format_ident!("{}", camel_case(&m.name), span = spec.name.span());
    let vis = &spec.vis;
    let docs = &spec.attrs;
    let p = quote!(::qdsl_core::dsl::mma);
    let (name, doc) = (&m.name, &m.doc);
    let problem = match m.problem {
        Problem::Inner => quote!(#p::Problem::Inner),
        Problem::ComplexInner => quote!(#p::Problem::ComplexInner),
        Problem::BatchedComplexInner => quote!(#p::Problem::BatchedComplexInner),
        Problem::ComplexAxpy => quote!(#p::Problem::ComplexAxpy),
    };
    let shape = match m.instruction.shape {
        Shape::M16N8K16 => quote!(#p::Shape::M16N8K16),
        Shape::M16N8K8 => quote!(#p::Shape::M16N8K8),
        Shape::M8N8K4 => quote!(#p::Shape::M8N8K4),
        Shape::Simt => quote!(#p::Shape::Simt),
    };
    let operand = match m.instruction.operand {
        Operand::F16 => quote!(#p::Operand::F16),
        Operand::Bf16 => quote!(#p::Operand::Bf16),
        Operand::Tf32 => quote!(#p::Operand::Tf32),
        Operand::F32 => quote!(#p::Operand::F32),
        Operand::F64 => quote!(#p::Operand::F64),
    };
    let accumulator = match m.instruction.accumulator {
        Accumulator::F32 => quote!(#p::Accumulator::F32),
        Accumulator::F64 => quote!(#p::Accumulator::F64),
    };
    let split = match m.split {
        Split::One => quote!(#p::Split::One),
        Split::Three => quote!(#p::Split::Three),
    };
    let scaling = match m.scaling {
        Scaling::None => quote!(#p::Scaling::None),
        Scaling::BlockMax => quote!(#p::Scaling::BlockMax),
    };
    let staging = match m.staging {
        Staging::Direct => quote!(#p::Staging::Direct),
        Staging::CpAsync => quote!(#p::Staging::CpAsync),
    };
    let fragments = match m.fragments {
        Fragments::Explicit => quote!(#p::Fragments::Explicit),
        Fragments::Ldmatrix => quote!(#p::Fragments::Ldmatrix),
    };
    let inputs = m.input.iter().map(|i| match i {
        Input::F32 => quote!(#p::Input::F32),
        Input::F64 => quote!(#p::Input::F64),
    });
    let (ms, ns, tk, warps, stages) = (&m.m, &m.n, &m.tile_k, &m.warps, &m.stages);
    quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #ty;

        impl #p::MmaTile for #ty {
            fn spec() -> #p::MmaSpec {
                #p::MmaSpec {
                    name: ::std::string::String::from(#name),
                    doc: ::std::string::String::from(#doc),
                    problem: #problem,
                    instruction: #p::Instruction {
                        shape: #shape,
                        operand: #operand,
                        accumulator: #accumulator,
                    },
                    split: #split,
                    scaling: #scaling,
                    staging: #staging,
                    fragments: #fragments,
                    m: ::std::vec![#(#ms),*],
                    n: ::std::vec![#(#ns),*],
                    input: ::std::vec![#(#inputs),*],
                    tile_k: ::std::vec![#(#tk),*],
                    warps: ::std::vec![#(#warps),*],
                    stages: ::std::vec![#(#stages),*],
                }
            }
        }
    }
}
