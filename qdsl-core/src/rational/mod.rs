//! Rational approximations in partial-fraction form, the functions of RHMC:
//!
//! r(x) = α₀ + Σ_{i=1}^{n} α_i / (x + β_i),
//!
//! applied to a Hermitian positive-definite A as r(A) φ = α₀ φ + Σ α_i (A + β_i)⁻¹ φ with
//! one multi-shift solve.
//!
//! | module | holds |
//! |---|---|
//! | [`remez`] | the Remez exchange for x^p over [λ_min, λ_max] (relative error) |
//! | [`milc`] | reading and writing MILC's RHMC rational-function files |

pub mod milc;
pub mod remez;

pub use remez::{remez, RationalApprox, RemezError};

/// r(x) = α₀ + Σ_i α_i / (x + β_i): `norm` α₀, `residues` α_i, `shifts` β_i (the
/// shifts of the multi-shift solve; MILC's files call them poles).
#[derive(Clone, Debug, PartialEq)]
pub struct PartialFraction {
    /// α₀.
    pub norm: f64,
    /// α_i.
    pub residues: Vec<f64>,
    /// β_i.
    pub shifts: Vec<f64>,
}

impl PartialFraction {
    /// r(x).
    pub fn eval(&self, x: f64) -> f64 {
        self.norm
            + self
                .residues
                .iter()
                .zip(&self.shifts)
                .map(|(a, b)| a / (x + b))
                .sum::<f64>()
    }

    /// The number of terms n.
    pub fn order(&self) -> usize {
        self.residues.len()
    }

    /// The same function of x expressed in y = x + δ: β_i → β_i − δ (for an operator
    /// that already includes a shift δ, such as a mass term 4m²).
    pub fn in_shifted_variable(&self, delta: f64) -> Self {
        Self {
            norm: self.norm,
            residues: self.residues.clone(),
            shifts: self.shifts.iter().map(|b| b - delta).collect(),
        }
    }
}
