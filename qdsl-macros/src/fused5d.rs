//! The `fused5d!` spec: header (doc, visibility, name, the hop binding, `ls`, `xpay`)
//! and the product of pieces → `qdsl_core::dsl::fused5d::Chain`, validated with errors
//! at the offending token, then the expansion.

use proc_macro2::TokenStream;
use qdsl_core::dsl::fused5d::{Chain, M5invMode, Piece, PieceOp, SOp, SPiece};
use qdsl_core::dsl::ir::camel_case;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{parenthesized, Attribute, Expr, Ident, LitInt, Path, Token, Visibility};

/// The names an s-local piece may be written as.
const S_NAMES: &str = "`M5` (or `M5mob`), `Mphi` (or `M5pre`), `M5inv`";

/// One factor as written: `Name`, `Name<Ls>`, either with `.dagger()`.
struct Factor {
    name: Ident,
    ls: Option<LitInt>,
    dagger: bool,
}

impl Parse for Factor {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let ls = if input.peek(Token![<]) {
            input.parse::<Token![<]>()?;
            let ls: LitInt = input.parse()?;
            input.parse::<Token![>]>()?;
            Some(ls)
        } else {
            None
        };
        let mut dagger = false;
        if input.peek(Token![.]) {
            input.parse::<Token![.]>()?;
            let m: Ident = input.parse()?;
            if m != "dagger" {
                return Err(syn::Error::new(
                    m.span(),
                    "a piece takes only `.dagger()` (its adjoint)",
                ));
            }
            let args;
            parenthesized!(args in input);
            if !args.is_empty() {
                return Err(args.error("`.dagger()` takes no arguments"));
            }
            dagger = true;
        }
        Ok(Factor { name, ls, dagger })
    }
}

/// One header item: `Dw = WilsonHop` (the hop), `ls = 12`, `xpay = M5`,
/// `m5inv = [sweep, dense, mma_f16, mma_bf16]` (the ways a variant may apply M5⁻¹),
/// `coeffs = real | complex` (complex: zMöbius).
enum HeaderItem {
    Hop { name: Ident, stencil: Path },
    Ls(LitInt),
    Xpay(Factor),
    M5inv(Vec<Ident>),
    Coeffs(Ident),
}

impl Parse for HeaderItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        Ok(if key == "ls" {
            HeaderItem::Ls(input.parse()?)
        } else if key == "m5inv" {
            let list;
            syn::bracketed!(list in input);
            HeaderItem::M5inv(
                list.parse_terminated(Ident::parse, Token![,])?
                    .into_iter()
                    .collect(),
            )
        } else if key == "coeffs" {
            HeaderItem::Coeffs(input.parse()?)
        } else if key == "xpay" {
            HeaderItem::Xpay(input.parse()?)
        } else {
            HeaderItem::Hop {
                name: key,
                stencil: input.parse()?,
            }
        })
    }
}

/// The spec as tokens.
struct Spec {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    header: Vec<HeaderItem>,
    factors: Vec<Factor>,
}

impl Parse for Spec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name = input.parse()?;
        let content;
        parenthesized!(content in input);
        let header = content
            .parse_terminated(HeaderItem::parse, Token![,])?
            .into_iter()
            .collect();
        input.parse::<Token![=]>()?;
        let mut factors = vec![input.parse::<Factor>()?];
        while input.peek(Token![*]) {
            input.parse::<Token![*]>()?;
            factors.push(input.parse()?);
        }
        input.parse::<Token![;]>()?;
        if !input.is_empty() {
            return Err(input.error(
                "unexpected tokens after the chain; one spec per `fused5d!`, ended by `;`",
            ));
        }
        Ok(Spec {
            attrs,
            vis,
            name,
            header,
            factors,
        })
    }
}

/// An s-local factor's piece, or an error at its name.
fn s_piece(f: &Factor, what: &str) -> syn::Result<SPiece> {
    match SOp::from_name(&f.name.to_string()) {
        Some(op) => Ok(SPiece {
            op,
            dagger: f.dagger,
        }),
        None => Err(syn::Error::new(
            f.name.span(),
            format!("unknown piece `{}`{what}; expected {S_NAMES}", f.name),
        )),
    }
}

fn ls_of(lit: &Option<LitInt>) -> syn::Result<Option<usize>> {
    lit.as_ref().map(|l| l.base10_parse()).transpose()
}

/// Parses, validates and expands a spec.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let spec: Spec = syn::parse2(input)?;
    let mut doc = Vec::new();
    let mut docs = Vec::new();
    for a in &spec.attrs {
        if !a.path().is_ident("doc") {
            return Err(syn::Error::new(
                a.span(),
                "a fused5d spec takes only doc comments as attributes (the knobs are the hop's)",
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
        docs.push(a);
    }
    let (mut hop, mut ls, mut xpay) = (None::<(Ident, Path)>, None, None);
    let (mut modes, mut mode_tokens, mut zmobius) = (Vec::new(), Vec::new(), false);
    for item in &spec.header {
        match item {
            HeaderItem::Hop { name, stencil } => {
                if hop.is_some() {
                    return Err(syn::Error::new(
                        name.span(),
                        "a second hop bound: a fused kernel has at most one 4D hop",
                    ));
                }
                if SOp::from_name(&name.to_string()).is_some() {
                    return Err(syn::Error::new(
                        name.span(),
                        format!("`{name}` names an s-local piece; bind the hop to another name (e.g. `Dw`)"),
                    ));
                }
                hop = Some((name.clone(), stencil.clone()));
            }
            HeaderItem::Ls(l) => ls = Some(l.base10_parse::<usize>()?),
            HeaderItem::M5inv(list) => {
                if list.is_empty() {
                    return Err(syn::Error::new(
                        spec.name.span(),
                        "`m5inv = [...]` lists at least one of `sweep`, `dense`, `mma_f16`, `mma_bf16`",
                    ));
                }
                for m in list {
                    let mode = M5invMode::from_name(&m.to_string()).ok_or_else(|| {
                        syn::Error::new(
                            m.span(),
                            format!(
                                "unknown M5inv mode `{m}`; expected `sweep`, `dense`, `mma_f16` or `mma_bf16`"
                            ),
                        )
                    })?;
                    modes.push(mode);
                    mode_tokens.push(m.clone());
                }
            }
            HeaderItem::Coeffs(c) => {
                zmobius = match c.to_string().as_str() {
                    "real" => false,
                    "complex" => true,
                    _ => {
                        return Err(syn::Error::new(
                            c.span(),
                            format!("`coeffs = {c}`: expected `real` or `complex` (zMöbius)"),
                        ))
                    }
                }
            }
            HeaderItem::Xpay(f) => {
                if f.ls.is_some() {
                    return Err(syn::Error::new(
                        f.name.span(),
                        "write Ls on the chain's pieces or in `ls = …`",
                    ));
                }
                xpay = Some(s_piece(f, " for the xpay operand")?)
            }
        }
    }
    let hop_name = hop.as_ref().map(|(n, _)| n.to_string());
    let mut pieces = Vec::new();
    for f in &spec.factors {
        let op = if Some(f.name.to_string()) == hop_name {
            PieceOp::Hop
        } else {
            let hop_hint = match &hop_name {
                Some(h) => format!(" or the hop `{h}`"),
                None => " (or a hop bound in the header, `Dw = WilsonHop`)".into(),
            };
            match SOp::from_name(&f.name.to_string()) {
                Some(op) => PieceOp::S(op),
                None => {
                    return Err(syn::Error::new(
                        f.name.span(),
                        format!("unknown piece `{}`; expected {S_NAMES}{hop_hint}", f.name),
                    ))
                }
            }
        };
        pieces.push(Piece {
            op,
            dagger: f.dagger,
            ls: ls_of(&f.ls)?,
        });
    }
    let chain = Chain {
        name: spec.name.to_string(),
        doc: doc.join("\n"),
        hop_name: hop_name.clone(),
        ls,
        pieces,
        xpay,
        m5inv: modes,
        zmobius,
    };
    chain.validate().map_err(|e| {
        let span = match e.mode.and_then(|k| mode_tokens.get(k)) {
            Some(m) => m.span(),
            None => e
                .piece
                .and_then(|k| spec.factors.get(k))
                .map_or(spec.name.span(), |f| {
                    f.ls.as_ref().map_or(f.name.span(), |l| l.span())
                }),
        };
        syn::Error::new(span, e.reason)
    })?;
    if let (Some((name, _)), None) = (&hop, chain.hop_position()) {
        return Err(syn::Error::new(
            name.span(),
            format!("the hop `{name}` is bound but the chain does not use it"),
        ));
    }
    Ok(expansion(
        &spec,
        &docs,
        &chain,
        hop.as_ref().map(|(_, p)| p),
    ))
}

fn option<T: quote::ToTokens>(x: Option<T>) -> TokenStream {
    match x {
        Some(x) => quote!(::core::option::Option::Some(#x)),
        None => quote!(::core::option::Option::None),
    }
}

fn s_op_tokens(op: SOp) -> TokenStream {
    match op {
        SOp::M5 => quote!(::qdsl_core::dsl::fused5d::SOp::M5),
        SOp::MPhi => quote!(::qdsl_core::dsl::fused5d::SOp::MPhi),
        SOp::M5Inv => quote!(::qdsl_core::dsl::fused5d::SOp::M5Inv),
    }
}

fn chain_tokens(chain: &Chain) -> TokenStream {
    let (name, doc) = (&chain.name, &chain.doc);
    let hop_name = option(
        chain
            .hop_name
            .as_ref()
            .map(|h| quote!(::std::string::String::from(#h))),
    );
    let ls = option(chain.ls);
    let pieces = chain.pieces.iter().map(|p| {
        let op = match p.op {
            PieceOp::Hop => quote!(::qdsl_core::dsl::fused5d::PieceOp::Hop),
            PieceOp::S(op) => {
                let op = s_op_tokens(op);
                quote!(::qdsl_core::dsl::fused5d::PieceOp::S(#op))
            }
        };
        let (dagger, ls) = (p.dagger, option(p.ls));
        quote!(::qdsl_core::dsl::fused5d::Piece { op: #op, dagger: #dagger, ls: #ls })
    });
    let xpay = option(chain.xpay.map(|p| {
        let (op, dagger) = (s_op_tokens(p.op), p.dagger);
        quote!(::qdsl_core::dsl::fused5d::SPiece { op: #op, dagger: #dagger })
    }));
    let modes = chain.m5inv.iter().map(|m| {
        let v = format_ident!(
            "{}",
            match m {
                M5invMode::Sweep => "Sweep",
                M5invMode::Dense => "Dense",
                M5invMode::MmaF16 => "MmaF16",
                M5invMode::MmaBf16 => "MmaBf16",
            }
        );
        quote!(::qdsl_core::dsl::fused5d::M5invMode::#v)
    });
    let zmobius = chain.zmobius;
    quote! {
        ::qdsl_core::dsl::fused5d::Chain {
            name: ::std::string::String::from(#name),
            doc: ::std::string::String::from(#doc),
            hop_name: #hop_name,
            ls: #ls,
            pieces: ::std::vec![#(#pieces),*],
            xpay: #xpay,
            m5inv: ::std::vec![#(#modes),*],
            zmobius: #zmobius,
        }
    }
}

fn expansion(spec: &Spec, docs: &[&Attribute], chain: &Chain, hop: Option<&Path>) -> TokenStream {
    let ty = format_ident!("{}", camel_case(&chain.name), span = spec.name.span());
    let vis = &spec.vis;
    let rebuild = chain_tokens(chain);
    let csf = quote!(::qdsl_core::field::ColourSpinorField<T>);
    let (hop_ir, gauge_param, hop_call) = match hop {
        Some(path) => (
            quote!(::core::option::Option::Some(<#path as ::qdsl_core::dsl::Stencil>::ir())),
            quote!(u: &::qdsl_core::field::GaugeField<T>,),
            quote! {
                let mut qdsl_hop = |v: &::qdsl_core::dsl::Variant, o: &mut #csf, s: &#csf| #path.apply_cpu(v, o, s, u, ::core::option::Option::None);
                let qdsl_hop: ::core::option::Option<&mut ::qdsl_core::dsl::fused5d::cpu::HopFn<'_, T>> = ::core::option::Option::Some(&mut qdsl_hop);
            },
        ),
        None => (
            quote!(::core::option::Option::None),
            quote!(),
            quote!(let qdsl_hop: ::core::option::Option<&mut ::qdsl_core::dsl::fused5d::cpu::HopFn<'_, T>> = ::core::option::Option::None;),
        ),
    };
    let doc = format!(
        "Applies `{}` = {} on the CPU ([`::qdsl_core::dsl::fused5d::cpu::apply`]): the \
         reference of the generated kernel, for any variant; `matrices` gives each s-local \
         piece's A± for the variant's Ls.",
        chain.name,
        chain.describe()
    );
    quote! {
        #(#docs)*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        #vis struct #ty;

        impl ::qdsl_core::dsl::fused5d::Fused5d for #ty {
            fn chain() -> ::qdsl_core::dsl::fused5d::Chain {
                #rebuild
            }

            fn hop() -> ::core::option::Option<::qdsl_core::dsl::Ir> {
                #hop_ir
            }
        }

        impl #ty {
            #[doc = #doc]
            pub fn apply_cpu<T: ::qdsl_core::Real>(
                &self,
                variant: &::qdsl_core::dsl::fused5d::FusedVariant,
                matrices: &dyn Fn(::qdsl_core::dsl::fused5d::SPiece) -> ::qdsl_core::dsl::fused5d::ChiralMatrices,
                out: &mut #csf,
                psi: &#csf,
                #gauge_param
                xpay: ::core::option::Option<::qdsl_core::dsl::cpu::Xpay<'_, T>>,
            ) -> ::core::result::Result<(), ::qdsl_core::dsl::DslError> {
                #hop_call
                ::qdsl_core::dsl::fused5d::cpu::apply(
                    &<Self as ::qdsl_core::dsl::fused5d::Fused5d>::chain(),
                    variant,
                    matrices,
                    qdsl_hop,
                    out,
                    psi,
                    xpay,
                )
            }
        }
    }
}
