//! Gauge-field observables and utilities.
//!
//! | item | what it is |
//! |---|---|
//! | [`plaquette`], [`rectangle`], [`polyakov_loop`], [`link_trace`] | gauge-invariant loops (1 for unit links) |
//! | [`unitarity_report`], [`reunitarize`] | distance from SU(3), and projection back |
//! | [`GaugeTransform`] | g(x) ∈ SU(3): U_μ(x) → g(x) U_μ(x) g†(x+μ̂), ψ(x) → g(x) ψ(x) |

mod error;
#[cfg(test)]
mod invariance_tests;
mod loops;
mod polyakov;
mod transform;
mod unitarity;

pub use error::GaugeError;
pub use loops::{link_trace, plaquette, rectangle, PlaquetteSummary};
pub use polyakov::polyakov_loop;
pub use transform::GaugeTransform;
pub use unitarity::{reunitarize, unitarity_report, UnitarityReport};
