//! Gauge-field observables and utilities.
//!
//! | item | what it is |
//! |---|---|
//! | [`plaquette`], [`rectangle`], [`polyakov_loop`], [`link_trace`] | gauge-invariant loops (1 for unit links) |
//! | [`unitarity_report`], [`reunitarize`] | distance from SU(3), and projection back |
//! | [`clover_field`], [`clover_field_with`], [`invert_clover`], [`invert_twisted_clover`], [`field_strength`] | the clover term A = (m + 4) + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν (trace of F̂ kept or removed: [`FieldStrengthTrace`]), A⁻¹ and (A + iμγ5)⁻¹ |
//! | [`SfBoundaryFields`] | openQCD's SF boundary gauge fields C (x0 = 0), C' (x0 = T): constant abelian links; the clover field that sees them |
//! | [`OpenBoundary`] | openQCD's open and SF time boundaries of Wilson(-clover) quarks: the hop links, the c_F-improved clover field, the projection of quark fields |
//! | [`generate`] | gauge-field generation: quenched heatbath + over-relaxation, HMC with nested time scales |
//! | [`GaugeTransform`] | g(x) ∈ SU(3): U_μ(x) → g(x) U_μ(x) g†(x+μ̂), ψ(x) → g(x) ψ(x) |

mod clover;
mod error;
pub mod generate;
#[cfg(test)]
mod invariance_tests;
mod loops;
mod open_boundary;
#[cfg(test)]
mod open_boundary_tests;
mod polyakov;
mod sf_boundary;
mod transform;
mod unitarity;

pub use clover::{
    clover_field, clover_field_with, clover_leaves, field_strength, invert_clover,
    invert_twisted_clover, CloverError, FieldStrengthTrace, TwistedCloverInverse,
};
pub use error::GaugeError;
pub use loops::{link_trace, plaquette, rectangle, PlaquetteSummary};
pub use open_boundary::{OpenBoundary, OpenBoundaryError, OpenBoundaryKind};
pub use polyakov::polyakov_loop;
pub use sf_boundary::{abelian_link, SfBoundaryFields};
pub use transform::GaugeTransform;
pub use unitarity::{reunitarize, unitarity_report, UnitarityReport};
