//! The IR of a `stencil!` spec: the operator as data.
//!
//! A stencil computes, for every output site x,
//!
//! out(x) = Σ_k c_k · S_k · L_k(x) · src_k(x + n_k μ̂_k),
//!
//! a sum of [`Term`]s, each a real coefficient c, a spin operator S ([`SpinOp`]: 1, a
//! projector 1 ± γ_μ, the twist i γ5, or a site-local clover matrix A(x)), a product of gauge links L along the hop ([`LinkRef`]), and a source
//! field read at a displacement of n ∈ {0, ±1, ±3} sites in direction μ ([`Hop`]).
//! Loops such as `for mu in 0..4` are already expanded: every term has concrete
//! directions.

use super::knobs::KnobSet;
use proc_macro2::TokenStream;
use quote::quote;

/// A whole spec: the kernel's name, its documentation, its fields and its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Ir {
    /// The kernel name in snake case (`wilson_hop`), as written in the spec.
    pub name: String,
    /// The doc comment of the spec (the operator's equation).
    pub doc: String,
    /// The fields, in declaration order (this is the order of kernel parameters).
    pub fields: Vec<FieldDecl>,
    /// The terms summed into the output, in spec order.
    pub terms: Vec<Term>,
    /// The knob values the spec allows (`#[knobs(...)]`; all by default).
    pub knobs: KnobSet,
}

/// A field parameter of the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDecl {
    /// The name used in the spec body.
    pub name: String,
    /// What a site of the field holds.
    pub shape: FieldShape,
    /// Whether the kernel writes or reads it.
    pub role: Role,
}

/// What one site of a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldShape {
    /// ψ_{σ a}: `nspin` spins × `ncolour` colours (Wilson 4 × 3, staggered 1 × 3).
    Spinor { nspin: usize, ncolour: usize },
    /// `per_site` matrices of `ncolour` × `ncolour` per site: four links U_μ(x) ∈ SU(N_c)
    /// (or U(N_c) for smeared links), μ = 0..4 (`per_site` = 4: `Gauge`, `Gauge<N>`), or
    /// one dense site-local matrix X(x) acting on the whole spin-colour vector of a
    /// dense spec (`per_site` = 1: `SiteMatrix<N>`, [`crate::field::DenseKind`]). A term
    /// reads a site matrix as the single [`LinkRef`] X(x) (μ = 0, at = 0) of a site-local
    /// term: X(x) φ(x), written `xm(x) * phi(x)`.
    Gauge { ncolour: usize, per_site: usize },
    /// A clover (or inverse-clover) matrix A(x) per site: a hermitian 12 × 12 matrix,
    /// block diagonal in the chiral spin pairs {0, 1}, {2, 3}, stored as two packed 6 × 6
    /// blocks ([`crate::field::CloverField`], 72 reals per site). It acts on 4 × 3 spinors.
    Clover,
}

impl FieldShape {
    /// Four `n` × `n` links per site (`Gauge` for n = 3, else `Gauge<N>`).
    pub const fn links(n: usize) -> Self {
        FieldShape::Gauge {
            ncolour: n,
            per_site: 4,
        }
    }

    /// One dense `n` × `n` site matrix per site (`SiteMatrix<N>`).
    pub const fn site_matrix(n: usize) -> Self {
        FieldShape::Gauge {
            ncolour: n,
            per_site: 1,
        }
    }

    /// Whether the field is a site matrix (one matrix per site, read at x).
    pub fn is_site_matrix(&self) -> bool {
        matches!(self, FieldShape::Gauge { per_site: 1, .. })
    }

    /// The shape's name as the spec writes it (`Spinor`, `ColourVector`, `Gauge`, or the
    /// general `Spinor<NS, NC>`, `Gauge<N>`, `SiteMatrix<N>`).
    pub fn spec_name(&self) -> String {
        match *self {
            FieldShape::Spinor {
                nspin: 4,
                ncolour: 3,
            } => "Spinor".into(),
            FieldShape::Spinor {
                nspin: 1,
                ncolour: 3,
            } => "ColourVector".into(),
            FieldShape::Spinor { nspin, ncolour } => format!("Spinor<{nspin}, {ncolour}>"),
            FieldShape::Gauge {
                ncolour: 3,
                per_site: 4,
            } => "Gauge".into(),
            FieldShape::Gauge {
                ncolour,
                per_site: 1,
            } => format!("SiteMatrix<{ncolour}>"),
            FieldShape::Gauge { ncolour, .. } => format!("Gauge<{ncolour}>"),
            FieldShape::Clover => "Clover".into(),
        }
    }
}

/// Whether a field is written (the sum's left-hand side) or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Read only.
    In,
    /// Written: out(x) = Σ_k terms (or a·x + b·Σ_k terms with the xpay knob).
    Out,
}

/// The displacement of a term's source: x + steps · μ̂ (steps = 0: a site-local term).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hop {
    /// Direction μ = 0..4 (x, y, z, t); 0 for site-local terms.
    pub mu: usize,
    /// Signed number of sites: 0, ±1 or ±3.
    pub steps: i32,
}

/// One gauge-link factor of a term: U_μ(x + at · μ̂), or its adjoint.
///
/// The links of a term form a path from x to the source site: a forward link
/// U_μ(x + p μ̂) moves the path from p to p + 1, an adjoint U_μ†(x + (p−1) μ̂) from p to
/// p − 1. A single link on a hop of three sites is a *long* link (a field such as asqtad's
/// Naik links whose U_μ(x) already spans x → x + 3μ̂). The site matrix X(x) of a dense
/// site-local term X(x) φ(x) is the single `LinkRef` { its `SiteMatrix<N>` field, μ = 0,
/// at = 0, no adjoint } of a term without hop: it does not move the path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinkRef {
    /// The gauge field's name.
    pub field: String,
    /// Direction μ of the link.
    pub mu: usize,
    /// The link's site is x + at · μ̂.
    pub at: i32,
    /// Whether the adjoint U† is taken.
    pub dagger: bool,
}

/// A spin operator acting on the source's spin index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SpinOp {
    /// The identity.
    Identity,
    /// The projector-like (1 + sign · γ_μ), sign = ±1 (rank 2 for 4-spin fields).
    Projector { mu: usize, sign: i32 },
    /// The twist i γ5 = diag(i, i, −i, −i) (DeGrand–Rossi γ5 = diag(1, 1, −1, −1)), for
    /// twisted-mass terms c · i γ5 ψ(x); 4-spin fields only. Written `(i * gamma(5))`.
    TwistGamma5,
    /// The clover matrix of the [`FieldShape::Clover`] field `field` at the output site:
    /// (A ψ)_{σ a}(x) = Σ_{σ' b} A_{(σ a),(σ' b)}(x) ψ_{σ' b}(x), a site-local term on
    /// 4 × 3 sources (no links, no hop). Written `a(x) * psi(x)`.
    Clover { field: String },
}

/// One term: c · S · L₁ L₂ … · src(x + steps μ̂), added into `output`.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// The field the term is added into.
    pub output: String,
    /// The real coefficient c (−1 for a `-=` statement).
    pub coeff: f64,
    /// The spin operator S.
    pub spin: SpinOp,
    /// The link path L, leftmost first.
    pub links: Vec<LinkRef>,
    /// The source field's name.
    pub source: String,
    /// Where the source is read.
    pub hop: Hop,
}

impl Ir {
    /// The declaration of the field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDecl> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The output field (the first field with role [`Role::Out`]).
    pub fn output(&self) -> Option<&FieldDecl> {
        self.fields.iter().find(|f| f.role == Role::Out)
    }

    /// Rust tokens that rebuild this IR value (`::qdsl_core::dsl::ir::Ir { … }`): the
    /// macro emits them so that a kernel carries its spec as data.
    pub fn rebuild_tokens(&self) -> TokenStream {
        let name = &self.name;
        let doc = &self.doc;
        let knobs = self.knobs.rebuild_tokens();
        let fields = self.fields.iter().map(|f| {
            let n = &f.name;
            let shape = match f.shape {
                FieldShape::Spinor { nspin, ncolour } => {
                    quote!(::qdsl_core::dsl::ir::FieldShape::Spinor { nspin: #nspin, ncolour: #ncolour })
                }
                FieldShape::Gauge { ncolour, per_site } => {
                    quote!(::qdsl_core::dsl::ir::FieldShape::Gauge { ncolour: #ncolour, per_site: #per_site })
                }
                FieldShape::Clover => quote!(::qdsl_core::dsl::ir::FieldShape::Clover),
            };
            let role = match f.role {
                Role::In => quote!(::qdsl_core::dsl::ir::Role::In),
                Role::Out => quote!(::qdsl_core::dsl::ir::Role::Out),
            };
            quote!(::qdsl_core::dsl::ir::FieldDecl { name: #n.to_string(), shape: #shape, role: #role })
        });
        let terms = self.terms.iter().map(|t| {
            let (output, coeff, source) = (&t.output, t.coeff, &t.source);
            let spin = match &t.spin {
                SpinOp::Identity => quote!(::qdsl_core::dsl::ir::SpinOp::Identity),
                SpinOp::Projector { mu, sign } => {
                    quote!(::qdsl_core::dsl::ir::SpinOp::Projector { mu: #mu, sign: #sign })
                }
                SpinOp::TwistGamma5 => quote!(::qdsl_core::dsl::ir::SpinOp::TwistGamma5),
                SpinOp::Clover { field } => {
                    quote!(::qdsl_core::dsl::ir::SpinOp::Clover { field: #field.to_string() })
                }
            };
            let links = t.links.iter().map(|l| {
                let (field, mu, at, dagger) = (&l.field, l.mu, l.at, l.dagger);
                quote!(::qdsl_core::dsl::ir::LinkRef { field: #field.to_string(), mu: #mu, at: #at, dagger: #dagger })
            });
            let (mu, steps) = (t.hop.mu, t.hop.steps);
            quote!(::qdsl_core::dsl::ir::Term {
                output: #output.to_string(),
                coeff: #coeff,
                spin: #spin,
                links: ::std::vec![#(#links),*],
                source: #source.to_string(),
                hop: ::qdsl_core::dsl::ir::Hop { mu: #mu, steps: #steps },
            })
        });
        quote!(::qdsl_core::dsl::ir::Ir {
            name: #name.to_string(),
            doc: #doc.to_string(),
            fields: ::std::vec![#(#fields),*],
            terms: ::std::vec![#(#terms),*],
            knobs: #knobs,
        })
    }
}

/// The kernel name in CamelCase (`wilson_hop` → `WilsonHop`): the generated type's name.
pub fn camel_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_of_kernel_names() {
        assert_eq!(camel_case("wilson_hop"), "WilsonHop");
        assert_eq!(camel_case("improved_staggered_hop"), "ImprovedStaggeredHop");
        assert_eq!(camel_case("a3_b"), "A3B");
    }

    #[test]
    fn shape_names_match_the_spec_syntax() {
        assert_eq!(
            FieldShape::Spinor {
                nspin: 4,
                ncolour: 3
            }
            .spec_name(),
            "Spinor"
        );
        assert_eq!(
            FieldShape::Spinor {
                nspin: 1,
                ncolour: 3
            }
            .spec_name(),
            "ColourVector"
        );
        assert_eq!(
            FieldShape::Spinor {
                nspin: 2,
                ncolour: 24
            }
            .spec_name(),
            "Spinor<2, 24>"
        );
        assert_eq!(FieldShape::links(3).spec_name(), "Gauge");
        assert_eq!(FieldShape::links(48).spec_name(), "Gauge<48>");
        assert_eq!(FieldShape::site_matrix(48).spec_name(), "SiteMatrix<48>");
        assert!(FieldShape::site_matrix(48).is_site_matrix());
        assert!(!FieldShape::links(48).is_site_matrix());
        assert_eq!(FieldShape::Clover.spec_name(), "Clover");
    }
}
