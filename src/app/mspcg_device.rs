//! MSPCG with its preconditioner on the GPU ([`DevicePreconditioner`]): the blocks'
//! inner CG solves all at once on the stacked padded lattice
//! ([`qdsl_runtime::solver::mspcg::DeviceMultiSplitting`]), inner vectors in f32,
//! fixed16 or fixed8 (computed in f32), M5⁻¹ swept or on the tensor cores; the outer
//! flexible PCG on device vectors in the solve's precision with f64 reliable updates
//! ([`super::mobius_device::MobiusDevice::pcg`]).

use super::mobius::MobiusSolver;
use super::mobius_mspcg::MspcgConfig;
use super::precision::{self, Precision};
use qdsl_core::field::GaugeField;
use qdsl_runtime::solver::device::{DeviceContext, DevicePrecision, DeviceVector, Single};
use qdsl_runtime::solver::mspcg::{DeviceMultiSplitting, PaddedBlocks, Preconditioner};
use qdsl_runtime::solver::{Fixed16, Fixed8, SolverError, SolverField};
use std::sync::Arc;

/// The preconditioner of a device MSPCG solve, by the inner vectors' precision; or the
/// identity (the study's baseline: the same outer iteration, plain CG).
#[derive(Debug)]
pub enum DevicePreconditioner {
    /// z = r.
    Identity,
    /// Inner vectors in f32.
    F32(DeviceMultiSplitting<Single>),
    /// Inner vectors in 16-bit fixed point.
    Fixed16(DeviceMultiSplitting<Fixed16>),
    /// Inner vectors in 8-bit fixed point.
    Fixed8(DeviceMultiSplitting<Fixed8>),
}

impl DevicePreconditioner {
    /// The precisions the inner vectors can be stored in.
    pub const INNER_PRECISIONS: [Precision; 3] =
        [Precision::F32, Precision::Fixed16, Precision::Fixed8];

    /// MSPCG's preconditioner for `solver`'s operator on the GPU of `ctx`: `config`'s
    /// blocks (stacked along t: t must be cut), inner iterations, snake terms, inner
    /// precision and M5⁻¹ mode.
    pub fn mspcg(
        solver: &MobiusSolver,
        ctx: &Arc<DeviceContext>,
        config: &MspcgConfig,
    ) -> Result<Self, String> {
        let high = solver.operator();
        let b = high.blocks();
        let grid = PaddedBlocks::new(
            *b.gauge().lattice(),
            b.params().ls(),
            config.blocks,
            high.parity(),
        )
        .map_err(|e| e.to_string())?;
        Self::on_blocks(solver, ctx, config, grid, b.gauge())
    }

    /// The preconditioner of `config` on the blocks of `grid` (the whole lattice's, or a
    /// rank's share: [`PaddedBlocks::on_rank`]) with the links `links` of the grid's
    /// link lattice, for `solver`'s parameters, parity and boundary.
    pub fn on_blocks(
        solver: &MobiusSolver,
        ctx: &Arc<DeviceContext>,
        config: &MspcgConfig,
        grid: PaddedBlocks,
        links: &GaugeField<f64>,
    ) -> Result<Self, String> {
        fn build<P: DevicePrecision>(
            ctx: &Arc<DeviceContext>,
            solver: &MobiusSolver,
            grid: PaddedBlocks,
            links: &GaugeField<f64>,
            config: &MspcgConfig,
        ) -> Result<DeviceMultiSplitting<P>, String> {
            let b = solver.operator().blocks();
            DeviceMultiSplitting::<P>::mobius(
                ctx,
                links,
                b.params(),
                b.boundary(),
                grid,
                config.snake,
                config.inner,
                config.m5inv,
            )
            .map_err(|e| format!("the GPU preconditioner of --solver mspcg: {e}"))
        }
        Ok(match config.inner_precision {
            Precision::F32 => Self::F32(build(ctx, solver, grid, links, config)?),
            Precision::Fixed16 => Self::Fixed16(build(ctx, solver, grid, links, config)?),
            Precision::Fixed8 => Self::Fixed8(build(ctx, solver, grid, links, config)?),
            other => {
                return Err(format!(
                    "--inner-precision {}: the inner vectors are stored in {}",
                    other.name(),
                    precision::list(&Self::INNER_PRECISIONS)
                ))
            }
        })
    }
}

impl<Q: DevicePrecision> Preconditioner<DeviceVector<Q>> for DevicePreconditioner {
    fn apply(&self, z: &mut DeviceVector<Q>, r: &DeviceVector<Q>) -> Result<(), SolverError> {
        match self {
            Self::Identity => z.copy_from(r),
            Self::F32(m) => m.apply(z, r),
            Self::Fixed16(m) => m.apply(z, r),
            Self::Fixed8(m) => m.apply(z, r),
        }
    }

    fn flops_per_apply(&self) -> u64 {
        match self {
            Self::Identity => 0,
            Self::F32(m) => Preconditioner::<DeviceVector<Q>>::flops_per_apply(m),
            Self::Fixed16(m) => Preconditioner::<DeviceVector<Q>>::flops_per_apply(m),
            Self::Fixed8(m) => Preconditioner::<DeviceVector<Q>>::flops_per_apply(m),
        }
    }
}
