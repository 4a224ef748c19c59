//! The CPU Rust emitter of dense specs ([`Lowered::dense`]): the `apply_cpu` method
//!
//! ```text
//! pub fn apply_cpu<T: Real>(&self, variant: &Variant, out: &mut ColourSpinorField<T>,
//!                           <inputs in declaration order>, xpay: Option<Xpay<'_, T>>)
//!     -> Result<(), DslError>
//! ```
//!
//! with colour-spinor inputs `&ColourSpinorField<T>` (N = N_s · N_c components per
//! site, 4D or 5D) and link and site-matrix inputs `&DenseLinkField<T>` (N × N, of
//! [`crate::field::DenseKind::Links`] or [`crate::field::DenseKind::SiteMatrix`]; a
//! site matrix is its term's link at x, μ = 0: X(x) = `link_at(x, 0)`). The body checks the
//! variant ([`crate::dsl::dense::check_dense_variant`]: f64/f32, recon 18) and every
//! field, then runs rayon over output sites ([`crate::dsl::dense::run`]) with one block
//! per term: the hop and its boundary factor ([`crate::dsl::dense::Geometry`]), then acc += c · Y φ (or Y† φ, or φ without
//! a link) by the dense product [`crate::field::dense_mul_add`]. The generated locals
//! are prefixed `qdsl_` so that no field name of a spec shadows them (or is shadowed).

use crate::dsl::ir::{FieldShape, Role};
use crate::dsl::lower::{Lowered, ReadSites};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// The `apply_cpu` method of a dense lowered spec (see the module docs).
pub fn emit(lowered: &Lowered) -> TokenStream {
    let kernel = &lowered.ir.name;
    let (nspin, ncolour) = (lowered.nspin, lowered.ncolour);
    let n = nspin * ncolour;
    let out = ident(&lowered.output.name);
    let params = lowered.ir.fields.iter().map(|f| {
        let name = ident(&f.name);
        match (f.role, f.shape) {
            (Role::Out, _) => quote!(#name: &mut ::qdsl_core::field::ColourSpinorField<T>),
            (Role::In, FieldShape::Gauge { .. }) => {
                quote!(#name: &::qdsl_core::field::DenseLinkField<T>)
            }
            // Lowering admits only spinor and dense link inputs in a dense spec.
            (Role::In, _) => quote!(#name: &::qdsl_core::field::ColourSpinorField<T>),
        }
    });
    let checks = lowered.inputs.iter().map(|i| {
        let (f, name) = (ident(&i.decl.name), &i.decl.name);
        let reads = match i.reads {
            ReadSites::SameParity => quote!(SameParity),
            ReadSites::OtherParity => quote!(OtherParity),
            ReadSites::Both => quote!(Both),
            ReadSites::Gauge => {
                let kind = if i.decl.shape.is_site_matrix() {
                    quote!(SiteMatrix)
                } else {
                    quote!(Links)
                };
                return quote! {
                    ::qdsl_core::dsl::dense::check_links(#kernel, #name, #f, #out.layout().lattice(), #n,
                        ::qdsl_core::field::DenseKind::#kind)?;
                };
            }
        };
        quote!(qdsl_ctx.check_spinor(#name, #f.layout(), ::qdsl_core::dsl::lower::ReadSites::#reads)?;)
    });
    let terms = lowered.terms.iter().map(|t| {
        let src = ident(&t.term.source);
        let (mu, steps) = (t.term.hop.mu, t.term.hop.steps as isize);
        let (c, cd) = (t.coeff, t.dagger_coeff);
        let coeff = if c == cd {
            quote!(#c)
        } else {
            quote!(if qdsl_dagger { #cd } else { #c })
        };
        let product = match t.term.links.first() {
            Some(l) => {
                let (y, at, dag) = (ident(&l.field), l.at as isize, l.dagger);
                quote! {
                    ::qdsl_core::field::dense_mul_add(
                        qdsl_acc, #y.link_at(qdsl_geo.shift(qdsl_x, #mu, #at), #mu), #dag, qdsl_v, qdsl_coeff);
                }
            }
            None => quote!(::qdsl_core::dsl::dense::add_scaled(qdsl_acc, qdsl_v, qdsl_coeff);),
        };
        quote! {
            {
                let (qdsl_y, qdsl_sign) = qdsl_geo.hop::<T>(qdsl_x, #mu, #steps);
                let qdsl_coeff = qdsl_sign * T::from_f64(#coeff);
                let qdsl_v = qdsl_geo.site(#src, qdsl_s, qdsl_y);
                #product
            }
        }
    });
    let doc = format!(
        "Applies `{kernel}` on the CPU (rayon over output sites, dense {n} × {n} link \
         products): `{}` = the spec's sum (or a·x + b·sum with the xpay knob); the variant \
         and the fields are checked first.",
        lowered.output.name
    );
    let body = quote! {
        #(#checks)*
        let qdsl_geo = ::qdsl_core::dsl::dense::Geometry::new(*#out.layout().lattice(), variant);
        #[allow(unused_variables)]
        let qdsl_dagger = variant.dagger;
        ::qdsl_core::dsl::dense::run(#out, xpay, |qdsl_s, qdsl_x, qdsl_acc| {
            #(#terms)*
        });
        Ok(())
    };
    let prelude = quote!(::qdsl_core::dsl::dense::check_dense_variant(#kernel, #n, variant)?;);
    super::rust::apply_cpu_method(lowered, &doc, params, prelude, body)
}
