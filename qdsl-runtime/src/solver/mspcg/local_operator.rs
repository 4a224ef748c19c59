//! [`LocalNormal`]: the block-local normal operator A_s of the even-odd M̂†M̂ — the
//! preconditioner's operator of MSPCG (Tu, Clark, Jung, Mawhinney) — by the padded-field
//! construction, with or without the snake terms.
//!
//! # The operator
//!
//! With the even-odd blocks D_rr (site-local) and D_rs = h K_rs of an operator
//! ([`EvenOddBlocks`]; Möbius: D_rr = M5, h = −½, K_rs = H_rs M_φ), the Schur complement
//! on parity p is M̂ = D_pp − h² K_pq D_qq⁻¹ K_qp, and the normal operator
//!
//! A = M̂†M̂,  M̂† = D_pp† − h'² K'_pq (D_qq†)⁻¹ K'_qp,
//!
//! has four hops. P_s projects onto the sites of block s.
//!
//! * [`Snake::Include`]: A_s = P_s A P_s, the block of A — every term of A that starts and
//!   ends in the block, including the *snake terms*, paths that leave the block and come
//!   back within the four hops. Computed on the padded local lattice
//!   ([`super::PaddedBlocks`], two pad sites on each side of a cut direction): x = P_s x
//!   in the block and zero in the pads, then
//!
//!   t = D_qq⁻¹ K_qp x (exact within 1 site of the block),
//!   y = D_pp x − h² K_pq t = M̂ x (exact within 2 sites),
//!   u = (D_qq†)⁻¹ K'_qp y (exact within 1 site),
//!   A_s x = P_s (D_pp† y − h'² K'_pq u).
//!
//!   Each stage needs its input exact one site further out than its own output; the
//!   local lattice's wrap joins the outer pad layers, which only the stages' outermost
//!   layers read and no later stage needs. So A_s equals the block of the dense A,
//!   provided no four-hop path runs around the lattice from the block back into it
//!   (L_μ − b_μ ≥ 4 in each cut direction; on smaller lattices such wrap-around paths
//!   are in A but not in A_s — A_s is then still Hermitian positive definite).
//! * [`Snake::Exclude`]: plain Dirichlet: every hop that leaves the block is dropped at
//!   each hop, K_rs → P_s K_rs P_s:
//!
//!   M̂_D = D_pp − h² P_s K_pq P_s D_qq⁻¹ P_s K_qp P_s,  A_s = P_s M̂_D† M̂_D P_s,
//!
//!   computed on the same padded field by zeroing the pads after every hop.
//!
//! Both are Hermitian and positive definite on the block (M̂ and M̂_D are invertible for
//! a positive quark mass); the test module checks both equalities against dense
//! matrices of the global operator on a tiny lattice, hermiticity, positivity and
//! block-diagonality.

use super::PaddedBlocks;
use crate::linear::{LinearOperator, SolverError};
use crate::operator::even_odd::{BlockFlops, EvenOddBlocks, Xpay};
use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::Parity;
use qdsl_core::Real;

/// Whether A_s keeps the snake terms (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snake {
    /// A_s = P_s M̂†M̂ P_s (the block of the global normal operator).
    Include,
    /// A_s = P_s M̂_D†M̂_D P_s, every hop leaving the block dropped.
    Exclude,
}

/// A_s of one block on the padded local fields of its parity (module docs). `B` are the
/// even-odd blocks of the operator on the block's padded local lattice (periodic, the
/// time boundary's sign folded into the links: [`PaddedBlocks::local_gauge`]).
#[derive(Debug)]
pub struct LocalNormal<'g, B> {
    blocks: &'g B,
    grid: &'g PaddedBlocks,
    snake: Snake,
}

impl<'g, T: Real, B> LocalNormal<'g, B>
where
    B: for<'c> EvenOddBlocks<Field = ColourSpinorField<T>, Error = SolverError, Context<'c> = ()>,
{
    /// A_s for the local operator `blocks` on `grid`'s padded lattice.
    pub fn new(blocks: &'g B, grid: &'g PaddedBlocks, snake: Snake) -> Self {
        Self {
            blocks,
            grid,
            snake,
        }
    }

    /// The local even-odd blocks.
    pub fn blocks(&self) -> &B {
        self.blocks
    }

    /// y = M̂ x (dagger: M̂† x) on the padded field, with the Dirichlet cut after each hop
    /// for [`Snake::Exclude`].
    fn complement(
        &self,
        y: &mut ColourSpinorField<T>,
        x: &ColourSpinorField<T>,
        dagger: bool,
    ) -> Result<(), SolverError> {
        complement_with_cuts(self.blocks, (), y, x, dagger, &mut |field, r| {
            if self.snake == Snake::Exclude {
                self.grid.zero_pad(field, r);
            }
            Ok(())
        })
    }
}

/// What [`complement_with_cuts`] applies to each hop's output on its parity.
pub(crate) type Cut<'a, B> = dyn FnMut(&mut <B as EvenOddBlocks>::Field, Parity) -> Result<(), <B as EvenOddBlocks>::Error>
    + 'a;

/// y = M̂ x (dagger: M̂† x) = D_pp x − h² K_pq D_qq⁻¹ K_qp x by the blocks one by one, on
/// host or device fields, with `cut` applied to the output of each hop (the pads
/// zeroed for [`Snake::Exclude`], nothing for [`Snake::Include`]).
pub(crate) fn complement_with_cuts<B: EvenOddBlocks>(
    b: &B,
    cx: B::Context<'_>,
    y: &mut B::Field,
    x: &B::Field,
    dagger: bool,
    cut: &mut Cut<'_, B>,
) -> Result<(), B::Error> {
    let (p, q) = (b.parity(), b.parity().opposite());
    let h = b.hop_coefficient(dagger);
    let mut t = b.zeros(cx, q)?;
    b.hop(cx, q, &mut t, x, dagger, None)?;
    cut(&mut t, q)?;
    let mut u = b.zeros(cx, q)?;
    b.apply_diagonal_inverse(cx, q, &mut u, &t, dagger)?;
    let mut d = b.zeros(cx, p)?;
    b.apply_diagonal(cx, p, &mut d, x, dagger)?;
    let xpay = Xpay {
        a: 1.0,
        x: &d,
        b: -h * h,
    };
    b.hop(cx, p, y, &u, dagger, Some(xpay))?;
    cut(y, p)
}

impl<T: Real, B> LinearOperator<ColourSpinorField<T>> for LocalNormal<'_, B>
where
    B: for<'c> EvenOddBlocks<Field = ColourSpinorField<T>, Error = SolverError, Context<'c> = ()>,
{
    /// out = A_s x (x must vanish in the pads, as [`PaddedBlocks::gather`] leaves it).
    fn apply(
        &self,
        out: &mut ColourSpinorField<T>,
        x: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        let mut y = x.clone();
        self.complement(&mut y, x, false)?;
        self.complement(out, &y, true)?;
        self.grid.zero_pad(out, self.blocks.parity());
        Ok(())
    }

    /// A_s is Hermitian.
    fn apply_dagger(
        &self,
        out: &mut ColourSpinorField<T>,
        x: &ColourSpinorField<T>,
    ) -> Result<(), SolverError> {
        self.apply(out, x)
    }

    /// Four hops and the local terms on every site of the padded lattice.
    fn flops_per_apply(&self) -> u64 {
        let BlockFlops {
            hop,
            hop_xpay,
            diagonal,
            inverse,
        } = self.blocks.flops_per_site();
        (2 * (hop + hop_xpay + diagonal + inverse) * self.blocks.sites()) as u64
    }
}
