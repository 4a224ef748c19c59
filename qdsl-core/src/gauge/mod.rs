//! Gauge-field observables and utilities.

mod loops;

pub use loops::{link_trace, plaquette, PlaquetteSummary};
