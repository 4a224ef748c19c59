//! Krylov solvers, generic over the field type and the operator, so that the same code
//! drives host fields on the CPU and device fields on the GPU.
//!
//! | item | what it is |
//! |---|---|
//! | [`SolverField`], [`ConvertFrom`] | the vector space a solver needs, and precision conversion |
//! | [`LinearOperator`] | M, M† and M†M on one field type; products [`Chain`] and [`Adjoint`] |
//! | [`cg`] | CG on a Hermitian positive-definite A, mixed precision with reliable updates |
//! | [`block_cg`], [`block_cgnr`], [`SourceBatch`] | CG on N right-hand sides at once (the slices of one field, one operator application per iteration for all), per-source scalars and convergence |
//! | [`cgnr`], [`cgne`] | CG on the normal equations M†M x = M†b, M M† y = b |
//! | [`multishift_cg`] | (A + σ_i) x_i = b for many shifts in one Krylov space, refined per shift |
//! | [`mspcg`] | multi-splitting preconditioned CG for Möbius M̂†M̂ (block-local A_s with snake terms) |
//! | [`gcr()`], [`Preconditioner`] | flexible GCR(n_kv) with restarts, right-preconditioned (e.g. by [`sap::Sap`]), mixed precision |
//! | [`sap`] | Lüscher's Schwarz alternating procedure, static or adaptive, as a preconditioner of the full Wilson-clover operator |
//! | [`posit_round`] | posit(n, es) rounding, and posit8/16/32 storage for the precision study |
//! | [`bicgstab`] | BiCGStab on a general M, mixed precision with reliable updates |
//! | [`SolverKind`] | a single-shift solver chosen by name ("cg", "cgnr", "cgne", "bicgstab") |
//! | [`QuantizedField`], [`QuantizedOperator`] | fields rounded through a storage format (f16, bf16, tf32, fixed16/8, packed20/30): the low precision of a CPU mixed-precision study |
//! | [`SolverOptions`] | tolerance, iteration limit, reliable-update δ, Polak–Ribière, progress |
//! | [`SolveResult`] | how the solve ended, iterations, true residual, time, history |
//! | [`device`] | device Krylov vectors and operators: the same solvers on the GPU |
//!
//! Mixed precision: the solution and the true residual live in a high precision H
//! (f64), the iteration runs in a low one L (f32, …); every solver takes one operator
//! per precision. A pure solve passes the same type and operator twice.
//!
//! # Example
//!
//! ```
//! use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
//! use qdsl_core::lattice::Lattice;
//! use qdsl_core::{Complex, Real};
//! use qdsl_runtime::solver::{cg, LinearOperator, SolverError, SolverField, SolverOptions};
//!
//! /// M ψ = m ψ, for any precision.
//! struct Mass(f64);
//!
//! impl<T: Real> LinearOperator<ColourSpinorField<T>> for Mass {
//!     fn apply(
//!         &self,
//!         out: &mut ColourSpinorField<T>,
//!         psi: &ColourSpinorField<T>,
//!     ) -> Result<(), SolverError> {
//!         out.copy_from(psi)?;
//!         out.scale(Complex::new(self.0, 0.0));
//!         Ok(())
//!     }
//!     fn apply_dagger(
//!         &self,
//!         out: &mut ColourSpinorField<T>,
//!         psi: &ColourSpinorField<T>,
//!     ) -> Result<(), SolverError> {
//!         self.apply(out, psi)
//!     }
//!     fn flops_per_apply(&self) -> u64 {
//!         0
//!     }
//! }
//!
//! let layout = SpinorLayout::wilson(Lattice::new([2; 4])?, SiteSubset::Full);
//! let b = ColourSpinorField::<f64>::gaussian(layout, 1);
//! let mut x = b.zeros_like();
//! // Solution and true residual in f64, iteration in f32, reliable updates.
//! let opts = SolverOptions::with_tolerance(1e-12);
//! let result = cg::<_, ColourSpinorField<f32>, _, _>(&Mass(2.0), &Mass(2.0), &b, &mut x, &opts)?;
//! assert!(result.is_converged() && result.true_residual <= 1e-12);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bicgstab;
mod block_cg;
mod cg;
pub mod device;
mod driver;
pub mod gcr;
mod kind;
pub mod mspcg;
mod multishift;
mod normal;
mod options;
mod posit;
mod quantized;
mod result;
pub mod sap;
mod spinor_field;

pub use crate::linear::{
    Adjoint, Chain, ConvertFrom, LinearOperator, NormalForm, NormalOperator, ShiftedOperator,
    SolverError, SolverField,
};
pub use bicgstab::bicgstab;
pub use block_cg::{block_cg, SourceBatch, SourceCountMismatch};
pub use cg::cg;
pub use gcr::{gcr, GcrResult, Identity, Preconditioner};
pub use kind::{SolverKind, UnknownSolver};
pub use multishift::{multishift_cg, MultiShiftResult};
pub use normal::{block_cgnr, cgne, cgnr};
pub use options::{
    Progress, ProgressCallback, SolverOptions, DEFAULT_RELIABLE_DELTA, TOLERANCE_FLOOR_IN_ROUNDOFF,
};
pub use posit::{posit_round, Posit16, Posit16Es2, Posit32, Posit8, Posit8Es2};
pub use quantized::{
    round_through, BFloat16, Fixed16, Fixed8, Half, Packed20, Packed30, QuantizedField,
    QuantizedOperator, SpinorStorage, Tf32,
};
pub use result::{Breakdown, Convergence, ResidualKind, ResidualRecord, SolveResult};
