//! The operator a solver inverts: [`LinearOperator`], and the derived operators the
//! solvers build from it: products ([`Chain`], with [`Adjoint`]), the normal operators
//! ([`NormalOperator`]) and shifts ([`ShiftedOperator`]).
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

/// The product of two operators, A B (B applied first): DESIGN.md's Chain[A, B]; longer
/// chains nest (Chain[A, Chain[B, C]] = A B C). (A B)† = B† A†.
pub struct Chain<F, A, B> {
    a: A,
    b: B,
    /// The intermediate B ψ, kept between calls.
    scratch: Mutex<Option<F>>,
}

impl<F: SolverField, A: LinearOperator<F>, B: LinearOperator<F>> Chain<F, A, B> {
    /// The product A B.
    pub fn new(a: A, b: B) -> Self {
        Self {
            a,
            b,
            scratch: Mutex::new(None),
        }
    }

    /// out ← first (second in), through the kept intermediate.
    fn run(
        &self,
        out: &mut F,
        input: &F,
        first: impl FnOnce(&mut F, &F) -> Result<(), SolverError>,
        second: impl FnOnce(&mut F, &F) -> Result<(), SolverError>,
    ) -> Result<(), SolverError> {
        // Poisoning only means a previous call panicked mid-way: the scratch holds no
        // invariant.
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = guard.get_or_insert_with(|| input.zeros_like());
        second(tmp, input)?;
        first(out, tmp)
    }
}

impl<F: SolverField, A: LinearOperator<F>, B: LinearOperator<F>> LinearOperator<F>
    for Chain<F, A, B>
{
    /// out ← A (B in).
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.run(
            out,
            input,
            |o, t| self.a.apply(o, t),
            |t, i| self.b.apply(t, i),
        )
    }

    /// out ← B† (A† in).
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.run(
            out,
            input,
            |o, t| self.b.apply_dagger(o, t),
            |t, i| self.a.apply_dagger(t, i),
        )
    }

    /// Those of A and B.
    fn flops_per_apply(&self) -> u64 {
        self.a.flops_per_apply() + self.b.flops_per_apply()
    }
}

/// The adjoint M† of an operator M, as an operator of its own ((M†)† = M).
pub struct Adjoint<O>(pub O);

impl<F: SolverField, O: LinearOperator<F>> LinearOperator<F> for Adjoint<O> {
    /// out ← M† in.
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.0.apply_dagger(out, input)
    }

    /// out ← M in.
    fn apply_dagger(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        self.0.apply(out, input)
    }

    fn flops_per_apply(&self) -> u64 {
        self.0.flops_per_apply()
    }
}

/// The Hermitian operator A = M†M or A = M M† of an operator M (A† = A): M†M through M's
/// own `apply_normal` (fused where M has a fused kernel), M M† the [`Chain`] of M and
/// [`Adjoint`]`(M)`.
pub struct NormalOperator<'a, F, O: ?Sized> {
    op: &'a O,
    form: NormalForm,
    m_mdag: Chain<F, &'a O, Adjoint<&'a O>>,
}

impl<'a, F: SolverField, O: LinearOperator<F> + ?Sized> NormalOperator<'a, F, O> {
    /// A = M†M or M M† for M = `op`.
    pub fn new(op: &'a O, form: NormalForm) -> Self {
        Self {
            op,
            form,
            m_mdag: Chain::new(op, Adjoint(op)),
        }
    }
}

impl<F: SolverField, O: LinearOperator<F> + ?Sized> LinearOperator<F> for NormalOperator<'_, F, O> {
    /// out ← A in (A = M†M or M M†).
    fn apply(&self, out: &mut F, input: &F) -> Result<(), SolverError> {
        match self.form {
            NormalForm::MdagM => self.op.apply_normal(out, input),
            NormalForm::MMdag => self.m_mdag.apply(out, input),
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
