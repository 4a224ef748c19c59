//! Applications built on the operators and solvers, kept apart from their command-line
//! front ends so that tests and other programs can call them.
//!
//! | module | holds |
//! |---|---|
//! | [`solve`] | `qdsl solve`: build an even-odd operator from a gauge configuration and solve |
//! | [`history`] | a solve's convergence history as JSON and as an SVG plot |

pub mod history;
pub mod solve;
