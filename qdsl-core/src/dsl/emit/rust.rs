//! The CPU Rust emitter: a lowered spec → the tokens of an inherent method
//!
//! ```text
//! pub fn apply_cpu<T: Real>(&self, variant: &Variant, out: &mut ColourSpinorField<T>,
//!                           <inputs in declaration order>, xpay: Option<Xpay<'_, T>>)
//!     -> Result<(), DslError>
//! ```
//!
//! Colour-spinor inputs are `&ColourSpinorField<T>` (4D, or 5D with the output's Ls: each
//! slice runs the 4D stencil), gauge inputs `&GaugeField<T>`, clover
//! inputs `&CloverField<T>` (read at the output site: the output's parity). The
//! body checks every field against the variant, binds each term of the spec to its
//! fields ([`crate::dsl::cpu::Term`]: source, neighbour-table column of the hop, links,
//! spin structure, coefficient with the dagger knob resolved) and hands the list to the
//! lane engine ([`crate::dsl::cpu::Context::run_terms`]: rayon over chunks of output
//! sites, SIMD lanes of sites). The knobs are run-time values here.
//! Narrow storage formats are emulated: inputs are read, and the output written, rounded
//! through [`crate::format`] ([`crate::dsl::storage`]).

use crate::dsl::ir::{FieldShape, Role};
use crate::dsl::long_links::is_long;
use crate::dsl::lower::{Lowered, ReadSites, SpinLowering};
use crate::dsl::spin::ProjectorPlan;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

fn plan_tokens(p: &ProjectorPlan) -> TokenStream {
    let (mu, sign) = (p.mu, p.sign);
    quote!(::qdsl_core::dsl::spin::ProjectorPlan::new(#mu, #sign))
}

/// The column of displacement `d` = (μ, n) from the output site x in the neighbour table
/// ([`crate::dsl::cpu::NeighbourTable`]): its position in `columns`, appended on first
/// use (each term's hop and the sites x + at · μ̂ of its links share one list, so each
/// displacement is looked up once per output site).
fn column(columns: &mut Vec<(usize, isize)>, d: (usize, isize)) -> usize {
    match columns.iter().position(|&c| c == d) {
        Some(k) => k,
        None => {
            columns.push(d);
            columns.len() - 1
        }
    }
}

/// The `apply_cpu` method of a lowered spec (see the module docs).
pub fn emit(lowered: &Lowered) -> TokenStream {
    if lowered.dense.is_some() {
        return super::dense_rust::emit(lowered);
    }
    let kernel = &lowered.ir.name;
    let out = ident(&lowered.output.name);
    let params = lowered.ir.fields.iter().map(|f| {
        let n = ident(&f.name);
        match (f.role, f.shape) {
            (Role::Out, _) => quote!(#n: &mut ::qdsl_core::field::ColourSpinorField<T>),
            (Role::In, FieldShape::Spinor { .. }) => {
                quote!(#n: &::qdsl_core::field::ColourSpinorField<T>)
            }
            (Role::In, FieldShape::Gauge { .. }) => quote!(#n: &::qdsl_core::field::GaugeField<T>),
            (Role::In, FieldShape::Clover) => quote!(#n: &::qdsl_core::field::CloverField<T>),
        }
    });
    let checks = lowered.inputs.iter().map(|i| {
        let (n, name) = (ident(&i.decl.name), &i.decl.name);
        let reads = match i.reads {
            ReadSites::SameParity => quote!(SameParity),
            ReadSites::OtherParity => quote!(OtherParity),
            ReadSites::Both => quote!(Both),
            ReadSites::Gauge => return quote!(qdsl_ctx.check_gauge(#name, #n)?;),
        };
        if i.decl.shape == FieldShape::Clover {
            return quote!(qdsl_ctx.check_clover(#name, #n, ::qdsl_core::dsl::lower::ReadSites::#reads)?;);
        }
        quote!(qdsl_ctx.check_spinor(#name, #n.layout(), ::qdsl_core::dsl::lower::ReadSites::#reads)?;)
    });
    // Inputs as the variant stores them (narrow formats and compressed long links: rounded
    // copies). Clover fields are stored in the compute precision: read as they are.
    let stored = lowered
        .inputs
        .iter()
        .filter(|i| i.decl.shape != FieldShape::Clover)
        .map(|i| {
            let (n, name) = (ident(&i.decl.name), &i.decl.name);
            let kept = ident(&format!("{}_stored", i.decl.name));
            match i.reads {
                ReadSites::Gauge if is_long(&lowered.ir, name) => quote! {
                    let #kept = qdsl_ctx.stored_long_gauge(#name, #n)?;
                    let #n: &::qdsl_core::field::GaugeField<T> = &#kept;
                },
                ReadSites::Gauge => quote! {
                    let #kept = qdsl_ctx.stored_gauge(#name, #n)?;
                    let #n: &::qdsl_core::field::GaugeField<T> = &#kept;
                },
                _ => quote! {
                    let #kept = qdsl_ctx.stored_spinor(#name, #n)?;
                    let #n: &::qdsl_core::field::ColourSpinorField<T> = &#kept;
                },
            }
        });
    let out_name = &lowered.output.name;
    let mut columns = Vec::new();
    let mut slot = |mu: usize, steps: i32| column(&mut columns, (mu, steps as isize));
    let terms: Vec<TokenStream> = lowered
        .terms
        .iter()
        .map(|t| {
            let src = ident(&t.term.source);
            let hop = slot(t.term.hop.mu, t.term.hop.steps);
            let (c, cd) = (t.coeff, t.dagger_coeff);
            let coeff = if c == cd {
                quote!(#c)
            } else {
                quote!(if qdsl_dagger { #cd } else { #c })
            };
            let links = t.term.links.iter().map(|l| {
                let (f, mu, dagger) = (ident(&l.field), l.mu, l.dagger);
                let at = slot(l.mu, l.at);
                quote!(::qdsl_core::dsl::cpu::LinkRead { field: #f, at: #at, mu: #mu, dagger: #dagger })
            });
            let spin = match &t.spin {
                SpinLowering::Clover { field } => {
                    let a = ident(field);
                    quote!(::qdsl_core::dsl::cpu::TermSpin::Clover(#a))
                }
                SpinLowering::Projected { plan, dagger_plan } => {
                    let (p, pd) = (plan_tokens(plan), plan_tokens(dagger_plan));
                    quote!(::qdsl_core::dsl::cpu::TermSpin::Projected(if qdsl_dagger { #pd } else { #p }))
                }
                SpinLowering::Twisted => quote!(::qdsl_core::dsl::cpu::TermSpin::Twisted),
                SpinLowering::Rows { .. } => quote!(::qdsl_core::dsl::cpu::TermSpin::Rows),
            };
            quote! {
                ::qdsl_core::dsl::cpu::Term {
                    source: #src,
                    hop: #hop,
                    links: vec![#(#links),*],
                    spin: #spin,
                    coeff: T::from_f64(#coeff),
                }
            }
        })
        .collect();
    let table = columns.iter().map(|(mu, n)| quote!((#mu, #n)));
    let doc = format!(
        "Applies `{kernel}` on the CPU (the lane engine: rayon over chunks of output sites, SIMD lanes of sites): `{}` = the spec's sum \
         (or a·x + b·sum with the xpay knob), for any variant; fields are checked \
         against the variant first.",
        lowered.output.name
    );
    let body = quote! {
        #(#checks)*
        #[allow(unused_variables)]
        let qdsl_dagger = variant.dagger;
        #(#stored)*
        const DISPLACEMENTS: &[::qdsl_core::dsl::cpu::Displacement] = &[#(#table),*];
        let qdsl_terms = [#(#terms),*];
        qdsl_ctx.run_terms(#out_name, #out, xpay, DISPLACEMENTS, &qdsl_terms)
    };
    apply_cpu_method(lowered, &doc, params, quote!(), body)
}

/// The `apply_cpu` method around `body`: the signature (the output and inputs as
/// `params`, then the xpay operands), `prelude` (checks of the generator's own), the call
/// context `qdsl_ctx` (the variant against the spec's knobs, the output and the xpay
/// operands against the variant: [`crate::dsl::cpu::Context::new`]), then `body`, which
/// returns the result. Generated locals start with `qdsl_`, so spec fields of any name
/// do not clash with them. Shared by the 3-colour and the dense generators.
pub(super) fn apply_cpu_method(
    lowered: &Lowered,
    doc: &str,
    params: impl Iterator<Item = TokenStream>,
    prelude: TokenStream,
    body: TokenStream,
) -> TokenStream {
    let kernel = &lowered.ir.name;
    let (nspin, ncolour) = (lowered.nspin, lowered.ncolour);
    let out = ident(&lowered.output.name);
    let dagger_supported = lowered.dagger_supported;
    let knobs = lowered.ir.knobs.rebuild_tokens();
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments, clippy::needless_borrow, clippy::unnecessary_cast)]
        pub fn apply_cpu<T: ::qdsl_core::Real>(
            &self,
            variant: &::qdsl_core::dsl::Variant,
            #(#params,)*
            xpay: ::core::option::Option<::qdsl_core::dsl::cpu::Xpay<'_, T>>,
        ) -> ::core::result::Result<(), ::qdsl_core::dsl::DslError> {
            #prelude
            let qdsl_ctx = ::qdsl_core::dsl::cpu::Context::new(
                #kernel, variant, #out.layout(), (#nspin, #ncolour), xpay.as_ref(), #dagger_supported, &#knobs)?;
            #body
        }
    }
}
