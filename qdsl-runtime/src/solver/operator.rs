//! The operator a solver inverts: [`LinearOperator`], and the derived operators the
//! solvers build from it ([`NormalOperator`], [`ShiftedOperator`]).
//!
//! Even-odd preconditioning is the operator's business: a solver sees only M̂ (e.g.
//! M̂ = 1 − κ² H_eo H_oe on the even sites) and never asks how it was built.

use super::{field::real, SolverError, SolverField};
use std::sync::Mutex;

/// A linear operator M acting on fields of type `F` (one storage precision, one backend).
pub trait LinearOperator<F: SolverField> {
    /// out ← M in.
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError>;

    /// out ← M† in.
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError>;

    /// out ← M†M in. The default applies M then M† through a temporary; operators with
    /// a fused kernel override it.
    fn apply_normal(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        let mut tmp = input.zeros_like();
        self.apply(&mut tmp, input)?;
        self.apply_dagger(out, &tmp)
    }

    /// Floating-point operations of one application of M (or M†), for reporting
    /// flop rates.
    fn flops_per_apply(&self) -> u64;
}

impl<F: SolverField, O: LinearOperator<F> + ?Sized> LinearOperator<F> for &O {
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        (**self).apply(out, input)
    }
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        (**self).apply_dagger(out, input)
    }
    fn apply_normal(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        (**self).apply_normal(out, input)
    }
    fn flops_per_apply(&self) -> u64 {
        (**self).flops_per_apply()
    }
}

/// Which Hermitian positive (semi-)definite product a [`NormalOperator`] forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormalForm {
    /// A = M†M (CGNR: M†M x = M† b).
    MdagM,
    /// A = M M† (CGNE: M M† y = b, x = M† y).
    MMdag,
}

/// The Hermitian operator A = M†M or A = M M† of an operator M (A† = A).
pub struct NormalOperator<'a, F, O: ?Sized> {
    op: &'a O,
    form: NormalForm,
    scratch: Mutex<Option<F>>,
}

impl<'a, F: SolverField, O: LinearOperator<F> + ?Sized> NormalOperator<'a, F, O> {
    /// A = M†M or M M† for M = `op`.
    pub fn new(op: &'a O, form: NormalForm) -> Self {
        Self {
            op,
            form,
            scratch: Mutex::new(None),
        }
    }
}

impl<F: SolverField, O: LinearOperator<F> + ?Sized> LinearOperator<F> for NormalOperator<'_, F, O> {
    /// out ← A in (A = M†M or M M†).
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        match self.form {
            NormalForm::MdagM => self.op.apply_normal(out, input),
            NormalForm::MMdag => {
                // One temporary, kept between calls (poisoning only means a previous
                // call panicked mid-way: the scratch holds no invariant).
                let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
                let tmp = guard.get_or_insert_with(|| input.zeros_like());
                self.op.apply_dagger(tmp, input)?;
                self.op.apply(out, tmp)
            }
        }
    }

    /// A is Hermitian: A† = A.
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.apply(out, input)
    }

    /// Two applications of M.
    fn flops_per_apply(&self) -> u64 {
        2 * self.op.flops_per_apply()
    }
}

/// The shifted operator A + σ (σ real), as multi-shift refinement solves it.
pub struct ShiftedOperator<'a, O: ?Sized> {
    op: &'a O,
    shift: f64,
}

impl<'a, O: ?Sized> ShiftedOperator<'a, O> {
    /// A + σ for A = `op`, σ = `shift`.
    pub fn new(op: &'a O, shift: f64) -> Self {
        Self { op, shift }
    }
}

impl<F: SolverField, O: LinearOperator<F> + ?Sized> LinearOperator<F> for ShiftedOperator<'_, O> {
    /// out ← (A + σ) in.
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.op.apply(out, input)?;
        out.axpy(real(self.shift), input)
    }

    /// out ← (A† + σ) in.
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.op.apply_dagger(out, input)?;
        out.axpy(real(self.shift), input)
    }

    /// Those of A (the shift is a vector operation, counted with the solver's).
    fn flops_per_apply(&self) -> u64 {
        self.op.flops_per_apply()
    }
}
