//! [`Schur`]: the even-odd Schur complement M̂ = D_pp − D_pq D_qq⁻¹ D_qp of any
//! [`EvenOddBlocks`], with its adjoint, source preparation and solution reconstruction
//! (equations in the [module docs](super)).

use super::{Diagonal, EvenOddBlocks, Xpay};
use crate::linear::{LinearOperator, SolverError, SolverField};
use qdsl_core::lattice::Parity;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

/// Which operator on parity p a [`Schur`] applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchurForm {
    /// The Schur complement M̂ = D_pp − D_pq D_qq⁻¹ D_qp.
    Complement,
    /// The normal form d M̂ = d² − D_pq D_qp of blocks with the scalar diagonal
    /// D_pp = D_qq = d (staggered: MILC's A = 4m² − D_pq D_qp = (M†M)_pp).
    TimesDqq,
    /// The symmetric form D_pp⁻¹ M̂ = 1 − D_pp⁻¹ D_pq D_qq⁻¹ D_qp (QUDA's symmetric
    /// MatPC), for blocks with a local diagonal that apply D_rr⁻¹ with xpay; its source is
    /// D_pp⁻¹ b̂, its reconstruction that of M̂.
    Symmetric,
}

/// What the Schur layer itself refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchurError {
    /// [`SchurForm::TimesDqq`] needs a scalar diagonal D_qq = d·1.
    #[error("the normal form d·M̂ needs blocks with a scalar diagonal D_qq = d")]
    NotScalarDiagonal,
    /// The blocks do not hold a block the operation needs.
    #[error("these even-odd blocks do not hold {0}")]
    MissingBlock(&'static str),
}

/// Spare fields of each parity, reused between applications.
struct Scratch<F> {
    /// [even, odd]
    fields: [Vec<F>; 2],
}

fn slot(r: Parity) -> usize {
    match r {
        Parity::Even => 0,
        Parity::Odd => 1,
    }
}

/// The even-odd preconditioned operator of blocks B on parity p:
///
/// M̂ ψ_p = D_pp ψ_p − D_pq D_qq⁻¹ D_qp ψ_p
///
/// ([`SchurForm::Complement`]), or d M̂ = d² − D_pq D_qp for a scalar diagonal d
/// ([`SchurForm::TimesDqq`]). M̂† = D†_pp − D†_pq (D†_qq)⁻¹ D†_qp. One application
/// is two hops (K_qp, then K_pq with xpay) and, for a local diagonal, D_qq⁻¹ and D_pp;
/// the intermediates live in fields kept between applications.
pub struct Schur<B: EvenOddBlocks> {
    blocks: B,
    form: SchurForm,
    scratch: Mutex<Scratch<B::Field>>,
}

impl<B: EvenOddBlocks + fmt::Debug> fmt::Debug for Schur<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schur")
            .field("blocks", &self.blocks)
            .field("form", &self.form)
            .finish()
    }
}

impl<B: EvenOddBlocks + Clone> Clone for Schur<B> {
    /// The same operator with empty scratch.
    fn clone(&self) -> Self {
        Self::with_form(self.blocks.clone(), self.form)
    }
}

impl<B: EvenOddBlocks> Schur<B> {
    /// The Schur complement M̂ of `blocks` on their parity.
    pub fn complement(blocks: B) -> Self {
        Self::with_form(blocks, SchurForm::Complement)
    }

    /// The normal form d M̂ = d² − D_pq D_qp; an error unless the diagonal is a scalar d.
    pub fn normal_form(blocks: B) -> Result<Self, SchurError> {
        match blocks.diagonal() {
            Diagonal::Scalar(_) => Ok(Self::with_form(blocks, SchurForm::TimesDqq)),
            Diagonal::Local => Err(SchurError::NotScalarDiagonal),
        }
    }

    /// `form` of `blocks`; [`SchurForm::TimesDqq`] only for blocks with a scalar diagonal
    /// (else its applications are errors).
    pub(crate) fn with_form(blocks: B, form: SchurForm) -> Self {
        Self {
            blocks,
            form,
            scratch: Mutex::new(Scratch {
                fields: [Vec::new(), Vec::new()],
            }),
        }
    }

    /// The blocks and the form (the scratch dropped).
    pub(crate) fn into_parts(self) -> (B, SchurForm) {
        (self.blocks, self.form)
    }

    /// The blocks.
    pub fn blocks(&self) -> &B {
        &self.blocks
    }

    /// The form applied.
    pub fn form(&self) -> SchurForm {
        self.form
    }

    /// The parity p M̂ acts on.
    pub fn parity(&self) -> Parity {
        self.blocks.parity()
    }

    fn scratch(&self) -> MutexGuard<'_, Scratch<B::Field>> {
        // Poisoning only means an earlier application panicked: spare fields hold no
        // invariant.
        self.scratch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A spare field on parity r (its content is overwritten by its first use).
    fn take(&self, cx: B::Context<'_>, r: Parity) -> Result<B::Field, B::Error> {
        match self.scratch().fields[slot(r)].pop() {
            Some(f) => Ok(f),
            None => self.blocks.zeros(cx, r),
        }
    }

    fn give_back(&self, r: Parity, fields: impl IntoIterator<Item = B::Field>) {
        self.scratch().fields[slot(r)].extend(fields);
    }

    /// `f` with a spare field on parity r (its content arbitrary), kept for later use.
    pub(crate) fn with_spare<R>(
        &self,
        cx: B::Context<'_>,
        r: Parity,
        f: impl FnOnce(&mut B::Field) -> Result<R, B::Error>,
    ) -> Result<R, B::Error> {
        let mut t = self.take(cx, r)?;
        let result = f(&mut t);
        self.give_back(r, [t]);
        result
    }

    /// The scalar diagonal d of the normal form.
    fn scalar_diagonal(&self) -> Result<f64, B::Error> {
        match self.blocks.diagonal() {
            Diagonal::Scalar(d) => Ok(d),
            Diagonal::Local => Err(SchurError::NotScalarDiagonal.into()),
        }
    }

    /// out = M̂ ψ (dagger: M̂† ψ), both on parity p.
    pub fn apply_in(
        &self,
        cx: B::Context<'_>,
        out: &mut B::Field,
        psi: &B::Field,
        dagger: bool,
    ) -> Result<(), B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        b.expect_field(p, psi)?;
        b.expect_field(p, out)?;
        let h = b.hop_coefficient(dagger);
        if self.form == SchurForm::Symmetric {
            return self.apply_symmetric(cx, out, psi, h, dagger);
        }
        if self.form == SchurForm::Complement && b.fuses_complement() {
            let (mut t, mut u) = (self.take(cx, q)?, self.take(cx, p)?);
            let result = b.apply_complement_fused(cx, out, psi, (&mut t, &mut u), dagger);
            self.give_back(q, [t]);
            self.give_back(p, [u]);
            return result;
        }
        // t = K_qp ψ.
        let mut t = self.take(cx, q)?;
        let result = b.hop(cx, q, &mut t, psi, dagger, None).and_then(|()| {
            match (self.form, b.diagonal()) {
                // D_pp ψ − h² K_pq D_qq⁻¹ t.
                (SchurForm::Complement, Diagonal::Local) => {
                    self.local_terms(cx, out, psi, &t, -(h * h), dagger)
                }
                // d − (h²/d) K_pq t.
                (SchurForm::Complement, Diagonal::Scalar(d)) => {
                    let xpay = Xpay {
                        a: d,
                        x: psi,
                        b: -(h * h) / d,
                    };
                    b.hop(cx, p, out, &t, dagger, Some(xpay))
                }
                (SchurForm::Symmetric, _) => unreachable!("applied by apply_symmetric"),
                // d² − h² K_pq t.
                (SchurForm::TimesDqq, _) => {
                    let d = self.scalar_diagonal()?;
                    let xpay = Xpay {
                        a: d * d,
                        x: psi,
                        b: -(h * h),
                    };
                    b.hop(cx, p, out, &t, dagger, Some(xpay))
                }
            }
        });
        self.give_back(q, [t]);
        result
    }

    /// The symmetric form: out = ψ − h² D_pp⁻¹ K_pq D_qq⁻¹ K_qp ψ; dagger:
    /// out = ψ − h'² K'_pq (D†_qq)⁻¹ K'_qp (D†_pp)⁻¹ ψ (the adjoint reverses the order).
    fn apply_symmetric(
        &self,
        cx: B::Context<'_>,
        out: &mut B::Field,
        psi: &B::Field,
        h: f64,
        dagger: bool,
    ) -> Result<(), B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        if b.diagonal() != Diagonal::Local {
            return Err(SchurError::MissingBlock("a local diagonal (the symmetric form)").into());
        }
        let (mut t, mut u, mut w) = (self.take(cx, q)?, self.take(cx, q)?, self.take(cx, p)?);
        let xpay = Xpay {
            a: 1.0,
            x: psi,
            b: -(h * h),
        };
        let result = if dagger {
            b.apply_diagonal_inverse(cx, p, &mut w, psi, true)
                .and_then(|()| b.hop(cx, q, &mut t, &w, true, None))
                .and_then(|()| b.apply_diagonal_inverse(cx, q, &mut u, &t, true))
                .and_then(|()| b.hop(cx, p, out, &u, true, Some(xpay)))
        } else {
            b.hop(cx, q, &mut t, psi, false, None)
                .and_then(|()| b.apply_diagonal_inverse(cx, q, &mut u, &t, false))
                .and_then(|()| b.hop(cx, p, &mut w, &u, false, None))
                .and_then(|()| b.apply_diagonal_inverse_xpay(cx, p, out, &w, false, xpay))
        };
        self.give_back(q, [t, u]);
        self.give_back(p, [w]);
        result
    }

    /// out = D_pp ψ + c K_pq D_qq⁻¹ t (dagger: the adjoint blocks), t on q.
    fn local_terms(
        &self,
        cx: B::Context<'_>,
        out: &mut B::Field,
        psi: &B::Field,
        t: &B::Field,
        c: f64,
        dagger: bool,
    ) -> Result<(), B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        let (mut u, mut v) = (self.take(cx, q)?, self.take(cx, p)?);
        let result = b
            .apply_diagonal_inverse(cx, q, &mut u, t, dagger)
            .and_then(|()| b.apply_diagonal(cx, p, &mut v, psi, dagger))
            .and_then(|()| {
                let xpay = Xpay {
                    a: 1.0,
                    x: &v,
                    b: c,
                };
                b.hop(cx, p, out, &u, dagger, Some(xpay))
            });
        self.give_back(q, [u]);
        self.give_back(p, [v]);
        result
    }

    /// The source of M̂ ψ_p = b̂ for M ψ = η: b̂ = η_p − D_pq D_qq⁻¹ η_q (the normal form:
    /// d b̂ = d η_p − D_pq η_q; the symmetric form: D_pp⁻¹ b̂).
    pub fn prepare_source_in(
        &self,
        cx: B::Context<'_>,
        eta_p: &B::Field,
        eta_q: &B::Field,
    ) -> Result<B::Field, B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        b.expect_field(p, eta_p)?;
        b.expect_field(q, eta_q)?;
        let h = b.hop_coefficient(false);
        let mut out = b.zeros(cx, p)?;
        match (self.form, b.diagonal()) {
            (SchurForm::Complement, Diagonal::Scalar(d)) => {
                let xpay = Xpay {
                    a: 1.0,
                    x: eta_p,
                    b: -h / d,
                };
                b.hop(cx, p, &mut out, eta_q, false, Some(xpay))?;
            }
            (SchurForm::TimesDqq, _) => {
                let d = self.scalar_diagonal()?;
                let xpay = Xpay {
                    a: d,
                    x: eta_p,
                    b: -h,
                };
                b.hop(cx, p, &mut out, eta_q, false, Some(xpay))?;
            }
            (SchurForm::Complement | SchurForm::Symmetric, Diagonal::Local) => {
                let mut u = self.take(cx, q)?;
                b.apply_diagonal_inverse(cx, q, &mut u, eta_q, false)?;
                let xpay = Xpay {
                    a: 1.0,
                    x: eta_p,
                    b: -h,
                };
                let result = b.hop(cx, p, &mut out, &u, false, Some(xpay));
                self.give_back(q, [u]);
                result?;
                if self.form == SchurForm::Symmetric {
                    let mut symmetric = b.zeros(cx, p)?;
                    b.apply_diagonal_inverse(cx, p, &mut symmetric, &out, false)?;
                    return Ok(symmetric);
                }
            }
            (SchurForm::Symmetric, Diagonal::Scalar(_)) => {
                return Err(
                    SchurError::MissingBlock("a local diagonal (the symmetric form)").into(),
                );
            }
        }
        Ok(out)
    }

    /// The other parity of the solution of M ψ = η from ψ_p:
    /// ψ_q = D_qq⁻¹ (η_q − D_qp ψ_p).
    pub fn reconstruct_in(
        &self,
        cx: B::Context<'_>,
        psi_p: &B::Field,
        eta_q: &B::Field,
    ) -> Result<B::Field, B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        b.expect_field(p, psi_p)?;
        b.expect_field(q, eta_q)?;
        let h = b.hop_coefficient(false);
        let mut out = b.zeros(cx, q)?;
        match b.diagonal() {
            Diagonal::Scalar(d) => {
                let xpay = Xpay {
                    a: 1.0 / d,
                    x: eta_q,
                    b: -h / d,
                };
                b.hop(cx, q, &mut out, psi_p, false, Some(xpay))?;
            }
            Diagonal::Local => {
                let mut rhs = self.take(cx, q)?;
                let xpay = Xpay {
                    a: 1.0,
                    x: eta_q,
                    b: -h,
                };
                let result = b
                    .hop(cx, q, &mut rhs, psi_p, false, Some(xpay))
                    .and_then(|()| b.apply_diagonal_inverse(cx, q, &mut out, &rhs, false));
                self.give_back(q, [rhs]);
                result?;
            }
        }
        Ok(out)
    }

    /// The unpreconditioned operator from the blocks, (out_p, out_q) = M (ψ_p, ψ_q)
    /// (dagger: M†): out_r = D_rr ψ_r + h K_rs ψ_s.
    pub fn apply_full_in(
        &self,
        cx: B::Context<'_>,
        out: (&mut B::Field, &mut B::Field),
        psi: (&B::Field, &B::Field),
        dagger: bool,
    ) -> Result<(), B::Error> {
        let b = &self.blocks;
        let (p, q) = (b.parity(), b.parity().opposite());
        let h = b.hop_coefficient(dagger);
        for (r, out, psi_r, psi_s) in [(p, out.0, psi.0, psi.1), (q, out.1, psi.1, psi.0)] {
            b.expect_field(r, psi_r)?;
            b.expect_field(r, out)?;
            match b.diagonal() {
                Diagonal::Scalar(d) => {
                    let xpay = Xpay {
                        a: d,
                        x: psi_r,
                        b: h,
                    };
                    b.hop(cx, r, out, psi_s, dagger, Some(xpay))?;
                }
                Diagonal::Local => {
                    let mut v = self.take(cx, r)?;
                    let xpay = |v| Xpay { a: 1.0, x: v, b: h };
                    let result = b
                        .apply_diagonal(cx, r, &mut v, psi_r, dagger)
                        .and_then(|()| b.hop(cx, r, out, psi_s, dagger, Some(xpay(&v))));
                    self.give_back(r, [v]);
                    result?;
                }
            }
        }
        Ok(())
    }

    /// Flops of one application of M̂ (or M̂†): (V/2)(f_hop + f_hop,xpay) for a scalar
    /// diagonal, plus D_pp and D_qq⁻¹ per site for a local one.
    pub fn flops_per_apply(&self) -> u64 {
        let f = self.blocks.flops_per_site();
        let local = match (self.form, self.blocks.diagonal()) {
            (SchurForm::Complement, Diagonal::Local) => f.diagonal + f.inverse,
            (SchurForm::Symmetric, _) => 2 * f.inverse,
            _ => 0,
        };
        (self.blocks.sites() * (f.hop + f.hop_xpay + local)) as u64
    }
}

/// Blocks that need no launch context (host fields): the methods without a context.
impl<B> Schur<B>
where
    B: EvenOddBlocks,
    B::Context<'static>: Default,
{
    /// b̂ = η_p − D_pq D_qq⁻¹ η_q ([`Self::prepare_source_in`]).
    pub fn prepare_source(&self, eta_p: &B::Field, eta_q: &B::Field) -> Result<B::Field, B::Error> {
        self.prepare_source_in(Default::default(), eta_p, eta_q)
    }

    /// ψ_q = D_qq⁻¹ (η_q − D_qp ψ_p) ([`Self::reconstruct_in`]).
    pub fn reconstruct(&self, psi_p: &B::Field, eta_q: &B::Field) -> Result<B::Field, B::Error> {
        self.reconstruct_in(Default::default(), psi_p, eta_q)
    }

    /// (out_p, out_q) = M (ψ_p, ψ_q) (dagger: M†) ([`Self::apply_full_in`]).
    pub fn apply_full(
        &self,
        out: (&mut B::Field, &mut B::Field),
        psi: (&B::Field, &B::Field),
        dagger: bool,
    ) -> Result<(), B::Error> {
        self.apply_full_in(Default::default(), out, psi, dagger)
    }
}

impl<B> LinearOperator<B::Field> for Schur<B>
where
    B: EvenOddBlocks<Error = SolverError>,
    B::Field: SolverField,
    B::Context<'static>: Default,
{
    /// out = M̂ ψ.
    fn apply(&self, out: &mut B::Field, input: &B::Field) -> Result<(), SolverError> {
        self.apply_in(Default::default(), out, input, false)
    }

    /// out = M̂† ψ.
    fn apply_dagger(&self, out: &mut B::Field, input: &B::Field) -> Result<(), SolverError> {
        self.apply_in(Default::default(), out, input, true)
    }

    fn flops_per_apply(&self) -> u64 {
        Schur::flops_per_apply(self)
    }
}

impl From<SchurError> for SolverError {
    fn from(e: SchurError) -> Self {
        SolverError::operator(e)
    }
}
