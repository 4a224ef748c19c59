//! The interfaces between operators and solvers: the vector space a solver works in
//! ([`SolverField`], [`ConvertFrom`]), the linear operator it inverts ([`LinearOperator`]
//! and the operators derived from one: [`Chain`], [`Adjoint`], [`NormalOperator`],
//! [`ShiftedOperator`]) and the error both report ([`SolverError`]).
//!
//! Operators (`crate::operator`) implement these and solvers (`crate::solver`, which
//! re-exports them) are written against them, so neither imports the other's internals.

mod error;
mod field;
mod operator;

pub use error::SolverError;
pub(crate) use field::real;
pub use field::{ConvertFrom, SolverField};
pub use operator::{Adjoint, Chain, LinearOperator, NormalForm, NormalOperator, ShiftedOperator};
