//! The terms of a spec as the generated CPU code hands them to the lane engine
//! ([`super::engine`]): one [`Term`] per term of the lowered spec, with its fields bound
//! and its knobs (dagger, coefficients) resolved for the call.
//!
//! A term adds, at every output site x,
//!
//! ```text
//! acc(x) += c · f(x, d) · S [ L_1 L_2 ⋯ L_k ] src(x + d),     d = n · μ̂ (the hop),
//! ```
//!
//! with f(x, d) the hop's boundary factor from the neighbour table (0 across a Dirichlet
//! wall, −1 across an antiperiodic boundary, else 1), L_i the links ([`LinkRead`]) and
//! S the spin structure ([`TermSpin`]); for a projected term the link product acts on the
//! two projected rows and the result is reconstructed.

use crate::dsl::spin::ProjectorPlan;
use crate::field::{CloverField, ColourSpinorField, GaugeField};
use crate::Real;

/// One link of a term's link product: U_μ(x + d) or its adjoint, d the displacement of
/// the neighbour-table column `at`.
#[derive(Clone, Copy, Debug)]
pub struct LinkRead<'a, T: Real> {
    /// The gauge field.
    pub field: &'a GaugeField<T>,
    /// The neighbour-table column of the site the link lives on.
    pub at: usize,
    /// The direction μ of the link.
    pub mu: usize,
    /// Whether the term reads U_μ(x + d)†.
    pub dagger: bool,
}

/// The spin structure S of a term.
#[derive(Clone, Copy, Debug)]
pub enum TermSpin<'a, T: Real> {
    /// S = 1 on every row of the source (any number of spins).
    Rows,
    /// S = i γ5 (DeGrand–Rossi: rows 0, 1 times i, rows 2, 3 times −i); 4 spins.
    Twisted,
    /// S = 1 ± γ_μ through its [`ProjectorPlan`]: project to two rows, link product,
    /// reconstruct; 4 spins.
    Projected(ProjectorPlan),
    /// S = A(x), the site-local clover matrix (both chiral 6 × 6 blocks); 4 spins, no
    /// hop and no links. The field holds the output's sites.
    Clover(&'a CloverField<T>),
}

/// One term of a spec, bound to its fields (see the module docs).
#[derive(Clone, Debug)]
pub struct Term<'a, T: Real> {
    /// The source field (its subset and Ls checked against the hop and the output).
    pub source: &'a ColourSpinorField<T>,
    /// The neighbour-table column of the hop x → x + d.
    pub hop: usize,
    /// The link product L_1 ⋯ L_k along the hop (empty: none).
    pub links: Vec<LinkRead<'a, T>>,
    /// The spin structure.
    pub spin: TermSpin<'a, T>,
    /// The coefficient c (already the dagger one where the dagger knob is on).
    pub coeff: T,
}
