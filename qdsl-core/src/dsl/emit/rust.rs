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
//! body checks every field against the variant, then runs rayon over output sites with
//! one straight-line block per term (hop and boundary sign, link product, projection or
//! rows, reconstruction), calling [`crate::dsl::cpu`]. The knobs are run-time values here.
//! Narrow storage formats are emulated: inputs are read, and the output written, rounded
//! through [`crate::format`] ([`crate::dsl::storage`]).

use crate::dsl::ir::{FieldShape, Role};
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

/// The `apply_cpu` method of a lowered spec (see the module docs).
pub fn emit(lowered: &Lowered) -> TokenStream {
    if lowered.dense.is_some() {
        return super::dense_rust::emit(lowered);
    }
    let kernel = &lowered.ir.name;
    let (nspin, ncolour) = (lowered.nspin, lowered.ncolour);
    let out = ident(&lowered.output.name);
    let dagger_supported = lowered.dagger_supported;
    let knobs = lowered.ir.knobs.rebuild_tokens();
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
            ReadSites::Gauge => return quote!(ctx.check_gauge(#name, #n)?;),
        };
        if i.decl.shape == FieldShape::Clover {
            return quote!(ctx.check_clover(#name, #n, ::qdsl_core::dsl::lower::ReadSites::#reads)?;);
        }
        quote!(ctx.check_spinor(#name, #n.layout(), ::qdsl_core::dsl::lower::ReadSites::#reads)?;)
    });
    // Inputs as the variant stores them (narrow formats: rounded copies). Clover fields
    // are stored in the compute precision: read as they are.
    let stored = lowered
        .inputs
        .iter()
        .filter(|i| i.decl.shape != FieldShape::Clover)
        .map(|i| {
            let (n, name) = (ident(&i.decl.name), &i.decl.name);
            let kept = ident(&format!("{}_stored", i.decl.name));
            match i.reads {
                ReadSites::Gauge => quote! {
                    let #kept = ctx.stored_gauge(#name, #n)?;
                    let #n: &::qdsl_core::field::GaugeField<T> = &#kept;
                },
                _ => quote! {
                    let #kept = ctx.stored_spinor(#name, #n)?;
                    let #n: &::qdsl_core::field::ColourSpinorField<T> = &#kept;
                },
            }
        });
    let out_name = &lowered.output.name;
    let terms = lowered.terms.iter().map(|t| {
        let src = ident(&t.term.source);
        let (mu, steps) = (t.term.hop.mu, t.term.hop.steps as isize);
        let (c, cd) = (t.coeff, t.dagger_coeff);
        let coeff = if c == cd {
            quote!(#c)
        } else {
            quote!(if dagger { #cd } else { #c })
        };
        let links: Vec<TokenStream> = t
            .term
            .links
            .iter()
            .map(|l| {
                let (f, lmu, at, dag) = (ident(&l.field), l.mu, l.at as isize, l.dagger);
                quote!(ctx.link(#f, ctx.shift(x, #lmu, #at), #lmu, #dag))
            })
            .collect();
        let transport = match links.as_slice() {
            [] => quote!(),
            [first, rest @ ..] => quote! {
                let m = #first #(* #rest)*;
                let h = ::qdsl_core::dsl::cpu::transport(&m, h);
            },
        };
        let body = match &t.spin {
            SpinLowering::Clover { field } => {
                let a = ident(field);
                quote! {
                    let h = ::qdsl_core::dsl::cpu::clover(
                        ctx.clover_site(#a, y),
                        ::qdsl_core::dsl::cpu::rows::<T, 4>(ctx.site(#src, s, y)));
                    ::qdsl_core::dsl::cpu::add_rows(acc, &h, coeff);
                }
            }
            SpinLowering::Projected { plan, dagger_plan } => {
                let (p, pd) = (plan_tokens(plan), plan_tokens(dagger_plan));
                quote! {
                    const P: ::qdsl_core::dsl::spin::ProjectorPlan = #p;
                    const PD: ::qdsl_core::dsl::spin::ProjectorPlan = #pd;
                    let plan = if dagger { &PD } else { &P };
                    let h = ::qdsl_core::dsl::cpu::project(
                        &::qdsl_core::dsl::cpu::rows::<T, 4>(ctx.site(#src, s, y)), plan);
                    #transport
                    ::qdsl_core::dsl::cpu::reconstruct_add(acc, &h, plan, coeff);
                }
            }
            SpinLowering::Twisted => quote! {
                let h = ::qdsl_core::dsl::cpu::twist_gamma5(
                    ::qdsl_core::dsl::cpu::rows::<T, 4>(ctx.site(#src, s, y)));
                #transport
                ::qdsl_core::dsl::cpu::add_rows(acc, &h, coeff);
            },
            &SpinLowering::Rows { nspin } => quote! {
                let h = ::qdsl_core::dsl::cpu::rows::<T, #nspin>(ctx.site(#src, s, y));
                #transport
                ::qdsl_core::dsl::cpu::add_rows(acc, &h, coeff);
            },
        };
        quote! {
            {
                let (y, sign) = ctx.hop::<T>(x, #mu, #steps);
                let coeff = sign * T::from_f64(#coeff);
                #body
            }
        }
    });
    let doc = format!(
        "Applies `{kernel}` on the CPU (rayon over output sites): `{}` = the spec's sum \
         (or a·x + b·sum with the xpay knob), for any variant; fields are checked \
         against the variant first.",
        lowered.output.name
    );
    quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments, clippy::needless_borrow, clippy::unnecessary_cast)]
        pub fn apply_cpu<T: ::qdsl_core::Real>(
            &self,
            variant: &::qdsl_core::dsl::Variant,
            #(#params,)*
            xpay: ::core::option::Option<::qdsl_core::dsl::cpu::Xpay<'_, T>>,
        ) -> ::core::result::Result<(), ::qdsl_core::dsl::DslError> {
            let ctx = ::qdsl_core::dsl::cpu::Context::new(
                #kernel, variant, #out.layout(), (#nspin, #ncolour), xpay.as_ref(), #dagger_supported, &#knobs)?;
            #(#checks)*
            #[allow(unused_variables)]
            let dagger = variant.dagger;
            #(#stored)*
            ctx.run::<T, #nspin>(#out_name, #out, xpay, |s, x, acc| {
                #(#terms)*
            })
        }
    }
}
