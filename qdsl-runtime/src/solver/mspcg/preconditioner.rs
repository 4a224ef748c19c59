//! The preconditioner of MSPCG: [`Preconditioner`] (z ≈ A⁻¹ r, any field type),
//! [`fixed_cg`] (a fixed number of CG iterations from a zero guess) and
//! [`MultiSplitting`], the block-Jacobi sum of inner CG solves on the local normal
//! operators A_s,
//!
//! z = Σ_s P_s CG_k(A_s; P_s r),
//!
//! each block's CG with its own α, β (no communication between blocks), in the local
//! fields' precision (f32 for the study), from any outer precision.

use super::{LocalNormal, PaddedBlocks, Snake};
use crate::linear::real;
use crate::linear::{LinearOperator, SolverError, SolverField};
use crate::operator::even_odd::EvenOddBlocks;
use crate::operator::mobius::{MobiusBlocks, MobiusError, MobiusParams};
use crate::solver::SourceBatch;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::Parity;
use qdsl_core::Complex;
use qdsl_core::Real;

/// z ≈ A⁻¹ r: a (possibly nonlinear) preconditioner of a Hermitian positive-definite A.
pub trait Preconditioner<F> {
    /// z ← the preconditioner applied to r.
    fn apply(&self, z: &mut F, r: &F) -> Result<(), SolverError>;

    /// Flops of one application (for rates; vector operations not counted).
    fn flops_per_apply(&self) -> u64;
}

/// The identity z = r (PCG is then CG with Polak–Ribière β).
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl<F: SolverField> Preconditioner<F> for Identity {
    fn apply(&self, z: &mut F, r: &F) -> Result<(), SolverError> {
        z.copy_from(r)
    }

    fn flops_per_apply(&self) -> u64 {
        0
    }
}

/// x ← k iterations of CG on A x = b from x₀ = 0 (textbook recurrence, Fletcher–Reeves
/// β = ‖r_{j+1}‖²/‖r_j‖²); stops early only on r = 0 or ⟨p, A p⟩ ≤ 0 or not finite
/// (x is then the last iterate; a non-finite x is left for the caller to detect).
/// Returns the iterations done.
pub fn fixed_cg<F: SolverField, O: LinearOperator<F> + ?Sized>(
    op: &O,
    b: &F,
    x: &mut F,
    k: usize,
) -> Result<usize, SolverError> {
    x.set_zero();
    let mut r = b.zeros_like();
    r.copy_from(b)?;
    let mut p = b.zeros_like();
    p.copy_from(b)?;
    let mut ap = b.zeros_like();
    let mut rr = r.norm_sqr()?;
    for j in 0..k {
        if rr == 0.0 {
            return Ok(j);
        }
        op.apply(&mut ap, &p)?;
        let pap = p.dot(&ap)?.re;
        if !(pap.is_finite() && pap > 0.0) {
            return Ok(j);
        }
        let alpha = rr / pap;
        x.axpy(real(alpha), &p)?;
        r.axpy(real(-alpha), &ap)?;
        let rr_new = r.norm_sqr()?;
        p.xpay(&r, real(rr_new / rr))?;
        rr = rr_new;
    }
    Ok(k)
}

/// [`fixed_cg`] on `groups` independent systems at once: the slices of the batch
/// ([`SourceBatch`]) fall into groups, slice j into group j mod `groups`, and A must not
/// couple groups (MSPCG's blocks on the stacked lattice: slice s₅·N + s is block s,
/// [`super::StackedBlocks`]). Every group runs its own recurrence — α_g = ‖r_g‖²/⟨p_g,
/// A p_g⟩ and β_g = ‖r_g'‖²/‖r_g‖², the sums over the group's slices — as if it were
/// solved alone; a group whose r vanishes or whose ⟨p, A p⟩ is not positive and finite
/// stops there (α = 0 from then on), as [`fixed_cg`] would. Returns the iterations done
/// (all groups stopped ends the loop early).
pub fn fixed_cg_grouped<F: SourceBatch, O: LinearOperator<F> + ?Sized>(
    op: &O,
    b: &F,
    x: &mut F,
    k: usize,
    groups: usize,
) -> Result<usize, SolverError> {
    let slices = b.sources();
    if groups == 0 || !slices.is_multiple_of(groups) {
        return Err(SolverError::field(std::io::Error::other(format!(
            "{slices} slices do not fall into {groups} equal groups"
        ))));
    }
    let sum = |per_slice: Vec<f64>| -> Vec<f64> {
        let mut g = vec![0.0; groups];
        for (j, v) in per_slice.into_iter().enumerate() {
            g[j % groups] += v;
        }
        g
    };
    let spread = |per_group: &[f64]| -> Vec<Complex<f64>> {
        (0..slices).map(|j| real(per_group[j % groups])).collect()
    };
    x.set_zero();
    let mut r = b.zeros_like();
    r.copy_from(b)?;
    let mut p = b.zeros_like();
    p.copy_from(b)?;
    let mut ap = b.zeros_like();
    let mut rr = sum(r.norm_sqr_each());
    let mut active: Vec<bool> = rr.iter().map(|&v| v > 0.0 && v.is_finite()).collect();
    for j in 0..k {
        if !active.iter().any(|&a| a) {
            return Ok(j);
        }
        op.apply(&mut ap, &p)?;
        let pap = sum(p.dot_each(&ap)?.into_iter().map(|z| z.re).collect());
        let alpha: Vec<f64> = (0..groups)
            .map(|g| {
                active[g] &= pap[g].is_finite() && pap[g] > 0.0;
                if active[g] {
                    rr[g] / pap[g]
                } else {
                    0.0
                }
            })
            .collect();
        x.axpy_each(&spread(&alpha), &p)?;
        let minus: Vec<f64> = alpha.iter().map(|a| -a).collect();
        r.axpy_each(&spread(&minus), &ap)?;
        let rr_new = sum(r.norm_sqr_each());
        let beta: Vec<f64> = (0..groups)
            .map(|g| if active[g] { rr_new[g] / rr[g] } else { 0.0 })
            .collect();
        p.xpay_each(&r, &spread(&beta))?;
        for g in 0..groups {
            active[g] &= rr_new[g] > 0.0 && rr_new[g].is_finite();
        }
        rr = rr_new;
    }
    Ok(k)
}

/// MSPCG's preconditioner z = Σ_s P_s CG_k(A_s; P_s r) (module docs), for even-odd
/// blocks `B` of the local lattices on fields of precision `T`.
#[derive(Debug)]
pub struct MultiSplitting<B> {
    grid: PaddedBlocks,
    locals: Vec<B>,
    snake: Snake,
    inner: usize,
}

impl<B> MultiSplitting<B> {
    /// From the grid, one local operator per block (in block order), the snake choice
    /// and the inner iterations k.
    pub fn new(grid: PaddedBlocks, locals: Vec<B>, snake: Snake, inner: usize) -> Self {
        assert_eq!(
            locals.len(),
            grid.num_blocks(),
            "one local operator per block"
        );
        Self {
            grid,
            locals,
            snake,
            inner,
        }
    }

    /// The block grid.
    pub fn grid(&self) -> &PaddedBlocks {
        &self.grid
    }

    /// The local operators' blocks, in block order.
    pub fn locals(&self) -> &[B] {
        &self.locals
    }

    /// The inner iterations k.
    pub fn inner(&self) -> usize {
        self.inner
    }

    /// With or without snake terms.
    pub fn snake(&self) -> Snake {
        self.snake
    }
}

impl<T: Real> MultiSplitting<MobiusBlocks<T>> {
    /// The Möbius preconditioner for the even-odd M̂ on `parity` (asymmetric form) of
    /// links `gauge`, `params` and the fermions' time boundary: `blocks[μ]` blocks per
    /// direction, the inner CG in precision `T`.
    pub fn mobius<H: Real>(
        gauge: &GaugeField<H>,
        params: &MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
        grid: PaddedBlocks,
        snake: Snake,
        inner: usize,
    ) -> Result<Self, MobiusError> {
        let gauge = gauge.cast::<T>();
        let locals = (0..grid.num_blocks())
            .map(|s| {
                let links = grid.local_gauge(&gauge, boundary, s);
                MobiusBlocks::new(links, params.clone(), parity, TimeBoundary::Periodic)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(grid, locals, snake, inner))
    }
}

impl<T: Real, H: Real, B> Preconditioner<ColourSpinorField<H>> for MultiSplitting<B>
where
    B: for<'c> EvenOddBlocks<Field = ColourSpinorField<T>, Error = SolverError, Context<'c> = ()>,
{
    /// z = Σ_s P_s CG_k(A_s; P_s r).
    fn apply(
        &self,
        z: &mut ColourSpinorField<H>,
        r: &ColourSpinorField<H>,
    ) -> Result<(), SolverError> {
        let layout = self.grid.local_layout(self.grid.parity());
        let mut b = ColourSpinorField::<T>::zeros(layout);
        let mut x = ColourSpinorField::<T>::zeros(layout);
        z.set_zero();
        for (s, local) in self.locals.iter().enumerate() {
            let a_s = LocalNormal::new(local, &self.grid, self.snake);
            self.grid.gather(s, r, &mut b);
            fixed_cg(&a_s, &b, &mut x, self.inner)?;
            self.grid.scatter(s, &x, z);
        }
        Ok(())
    }

    fn flops_per_apply(&self) -> u64 {
        self.locals
            .first()
            .map(|local| LocalNormal::new(local, &self.grid, self.snake).flops_per_apply())
            .unwrap_or(0)
            * (self.inner * self.locals.len()) as u64
    }
}
