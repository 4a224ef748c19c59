//! [`DeviceMultiSplitting`]: MSPCG's preconditioner on the GPU,
//!
//! z = Σ_s P_s CG_k(A_s; P_s r),
//!
//! every block at once: the blocks' padded local lattices stacked along t
//! ([`StackedBlocks`]), A_s of all blocks one application of the device M̂†M̂ on the
//! stacked lattice followed by the projection on the blocks (with the snake terms: the
//! fused M̂ and M̂† chains, nothing between the hops, each computed only where the next
//! stage reads it — M̂ on the whole padded lattice, M̂†'s first chain within one hop of
//! the blocks, its second on the blocks, [`StackedBlocks::reach_boxes`]; without: the
//! blocks one by one with the pads zeroed after each hop, [`super::local_operator`]),
//! and the k inner CG
//! iterations of all blocks as one batch whose slices fall into the blocks
//! ([`fixed_cg_grouped`]: each block its own α and β, as if it ran alone on its own
//! GPU). The inner vectors are stored in `P` (f32, fixed16 or fixed8; the kernels
//! compute in f32), M5⁻¹ as the operator's mode says (the sweep, or the tensor cores);
//! r and z are device vectors of any precision (gathered and scattered with conversion,
//! [`crate::solver::device::site_map`]).
//!
//! On a decomposed lattice each rank holds its share of the blocks
//! ([`PaddedBlocks::on_rank`]; r and z the rank's parts on its extended lattice), and
//! the inner vectors live in a rank-local twin of the solve's context
//! ([`DeviceContext::rank_local`]): their sums are the rank's blocks' own, never
//! global, so the application needs no communication. A failure recorded there ends
//! the application with its message.

use super::local_operator::complement_with_cuts;
use super::{fixed_cg_grouped, BlockGridError, PaddedBlocks, Preconditioner, Snake, StackedBlocks};
use crate::device::{DeviceError, DeviceField};
use crate::linear::{LinearOperator, SolverError, SolverField};
use crate::operator::device::{DeviceRun, OperatorError};
use crate::operator::mobius::{DeviceEvenOddMobius, MobiusParams};
use crate::solver::device::site_map::{DeviceSiteMap, SiteMap};
use crate::solver::device::{DeviceContext, DeviceOperator, DevicePrecision, DeviceVector};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{Parity, SiteBox};
use std::sync::Arc;

/// Why the device preconditioner cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum DeviceMspcgError {
    /// The block grid cannot be stacked.
    #[error(transparent)]
    Grid(#[from] BlockGridError),
    /// The stacked operator.
    #[error("the stacked blocks' Möbius operator: {0}")]
    Operator(#[from] OperatorError),
    /// Uploading the site maps.
    #[error("the stacked blocks' site maps: {0}")]
    Device(#[from] DeviceError),
}

/// MSPCG's preconditioner on the GPU (module docs), inner vectors in `P`.
#[derive(Debug)]
pub struct DeviceMultiSplitting<P> {
    ctx: Arc<DeviceContext>,
    stacked: StackedBlocks,
    /// M̂ on the stacked lattice (periodic: the blocks' links carry the boundary).
    op: DeviceOperator<P>,
    /// Per parity [even, odd]: stacked site → global site, −1 on the pads.
    maps: [DeviceSiteMap; 2],
    snake: Snake,
    inner: usize,
    /// Per block, the sites within one hop of it and the block itself: where M̂† of the
    /// local operator is computed (with the snake terms).
    near: Vec<SiteBox>,
    inside: Vec<SiteBox>,
}

impl<P: DevicePrecision> DeviceMultiSplitting<P> {
    /// The preconditioner of the even-odd Möbius M̂ on `grid`'s parity for links `gauge`
    /// (on the grid's link lattice: the whole lattice, or the rank's padded links),
    /// `params` and the fermions' time `boundary`: `grid`'s blocks stacked along t (t
    /// must be padded), with or without the snake terms, `inner` CG iterations per
    /// application, M5⁻¹ applied as `m5inv` says (the tensor-core modes need `P`
    /// narrower than f64), the inner vectors in a rank-local twin of `ctx`. The kernels
    /// are compiled here.
    #[allow(clippy::too_many_arguments)]
    pub fn mobius(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        params: &MobiusParams,
        boundary: TimeBoundary,
        grid: PaddedBlocks,
        snake: Snake,
        inner: usize,
        m5inv: M5invMode,
    ) -> Result<Self, DeviceMspcgError> {
        let ctx = &ctx.rank_local()?;
        let parity = grid.parity();
        let field_sites = grid.field_lattice().half_volume();
        let stacked = StackedBlocks::new(grid)?;
        let links = stacked.gauge(gauge, boundary);
        let op = DeviceOperator::<P>::mobius(
            ctx,
            &links,
            params.clone(),
            parity,
            TimeBoundary::Periodic,
            m5inv,
        )?;
        let maps = [Parity::Even, Parity::Odd]
            .map(|p| DeviceSiteMap::upload(ctx, stacked.global_sites(p), field_sites));
        let [even, odd] = maps;
        let (near, inside) = (stacked.reach_boxes(1), stacked.reach_boxes(0));
        Ok(Self {
            ctx: Arc::clone(ctx),
            stacked,
            op,
            maps: [even?, odd?],
            snake,
            inner,
            near,
            inside,
        })
    }

    /// The stacked blocks.
    pub fn stacked(&self) -> &StackedBlocks {
        &self.stacked
    }

    /// The inner iterations k.
    pub fn inner(&self) -> usize {
        self.inner
    }

    /// A_s of every block on the stacked lattice, as a solver operator.
    pub fn local_normal(&self) -> StackedNormal<'_, P> {
        StackedNormal { m: self }
    }

    /// The zero inner vector: Ls × N slices ([`StackedBlocks`]).
    fn zero_vector(&self) -> Result<DeviceVector<P>, DeviceError> {
        let p = self.stacked.grid().parity();
        let sites = self.stacked.layout(p).sites_per_slice() * self.stacked.grid().ls();
        DeviceVector::<P>::zeros(&self.ctx, 24, sites)?.with_sources(self.stacked.slices())
    }

    /// The stacked M̂ as the Schur complement of its blocks.
    fn complement(&self) -> &DeviceEvenOddMobius {
        self.op
            .mobius_complement()
            .expect("DeviceMultiSplitting builds a Möbius operator")
    }

    /// Applies `kind` with the map of parity `p`.
    fn map(
        &self,
        p: Parity,
        kind: SiteMap,
        y: &mut DeviceField,
        x: Option<&DeviceField>,
    ) -> Result<(), DeviceError> {
        self.maps[p as usize].apply(&self.ctx, kind, y, x)
    }
}

/// A_s of every block on the stacked lattice: out = P (M̂†M̂ x) for x zero on the pads
/// (module docs).
#[derive(Debug)]
pub struct StackedNormal<'a, P> {
    m: &'a DeviceMultiSplitting<P>,
}

impl<P: DevicePrecision> LinearOperator<DeviceVector<P>> for StackedNormal<'_, P> {
    fn apply(&self, out: &mut DeviceVector<P>, x: &DeviceVector<P>) -> Result<(), SolverError> {
        let m = self.m;
        let field = SolverError::field;
        let p = m.stacked.grid().parity();
        let mut y = x.zeros_like();
        match m.snake {
            // M̂ everywhere (its output is needed up to two hops from the blocks: the
            // whole padded lattice), M̂† only where the result needs it.
            Snake::Include => {
                m.op.apply(&mut y, x)?;
                let cx = DeviceRun::new(m.ctx.gpu(), m.ctx.tuner());
                let (of, yf) = (out.field_mut().map_err(field)?, y.field().map_err(field)?);
                m.complement()
                    .apply_dagger_within(cx, of, yf, (&m.near, &m.inside))
                    .map_err(SolverError::operator)?;
            }
            Snake::Exclude => {
                let schur = m.complement();
                let cx = DeviceRun::new(m.ctx.gpu(), m.ctx.tuner());
                let mut cut = |f: &mut DeviceField, r: Parity| {
                    m.map(r, SiteMap::Mask, f, None)
                        .map_err(OperatorError::from)
                };
                let (yf, xf) = (y.field_mut().map_err(field)?, x.field().map_err(field)?);
                complement_with_cuts(schur.blocks(), cx, yf, xf, false, &mut cut)
                    .map_err(SolverError::operator)?;
                let (of, yf) = (out.field_mut().map_err(field)?, y.field().map_err(field)?);
                complement_with_cuts(schur.blocks(), cx, of, yf, true, &mut cut)
                    .map_err(SolverError::operator)?;
            }
        }
        m.map(p, SiteMap::Mask, out.field_mut().map_err(field)?, None)
            .map_err(field)
    }

    /// A_s is Hermitian.
    fn apply_dagger(
        &self,
        out: &mut DeviceVector<P>,
        x: &DeviceVector<P>,
    ) -> Result<(), SolverError> {
        self.apply(out, x)
    }

    /// M̂ on every site of the stacked lattice; with the snake terms M̂†'s two chains
    /// on the sites within one hop of the blocks and on the blocks (counted as half of
    /// M̂†'s flops each, scaled by the sites), without them M̂† on every site.
    fn flops_per_apply(&self) -> u64 {
        let m = self.m;
        let full = m.op.flops_per_apply();
        match m.snake {
            Snake::Exclude => 2 * full,
            Snake::Include => {
                let volume = |boxes: &[SiteBox]| boxes.iter().map(SiteBox::volume).sum::<usize>();
                let stacked = m.stacked.lattice().volume();
                let share = (volume(&m.near) + volume(&m.inside)) as f64 / (2 * stacked) as f64;
                full + (full as f64 * share) as u64
            }
        }
    }
}

impl<P: DevicePrecision, Q: DevicePrecision> Preconditioner<DeviceVector<Q>>
    for DeviceMultiSplitting<P>
{
    /// z = Σ_s P_s CG_k(A_s; P_s r): r gathered onto the stacked blocks (rounded to `P`),
    /// k CG iterations per block, the blocks' solutions scattered into z (every site of
    /// z is some block's).
    fn apply(&self, z: &mut DeviceVector<Q>, r: &DeviceVector<Q>) -> Result<(), SolverError> {
        let field = SolverError::field;
        let p = self.stacked.grid().parity();
        let mut b = self.zero_vector().map_err(field)?;
        self.map(
            p,
            SiteMap::Gather,
            b.field_mut().map_err(field)?,
            Some(r.field().map_err(field)?),
        )
        .map_err(field)?;
        let mut x = b.zeros_like();
        fixed_cg_grouped(
            &self.local_normal(),
            &b,
            &mut x,
            self.inner,
            self.stacked.num_blocks(),
        )?;
        self.map(
            p,
            SiteMap::Scatter,
            z.field_mut().map_err(field)?,
            Some(x.field().map_err(field)?),
        )
        .map_err(field)?;
        match self.ctx.take_error() {
            None => Ok(()),
            Some(e) => Err(SolverError::field(std::io::Error::other(format!(
                "MSPCG's inner solves: {e}"
            )))),
        }
    }

    /// k applications of A_s on the stacked lattice.
    fn flops_per_apply(&self) -> u64 {
        self.inner as u64 * self.local_normal().flops_per_apply()
    }
}
