//! The GPU iteration of a Möbius solve ([`super::mobius`]): CGNR (CG on M̂†M̂) on the
//! device asymmetric M̂ ([`DeviceOperator::mobius`], the fused `fused5d!` chains) with
//! 5D device vectors — in f64, or in f32 or 16-bit fixed point with f64 reliable
//! updates (the runtime's mixed-precision solver, as every device solve). The source
//! preparation and the reconstruction stay on the host in f64, as for the 4D actions'
//! full solves ([`super::solve`]); the device operator's own
//! ([`qdsl_runtime::operator::mobius::DeviceEvenOddMobius`]) are tested against them.

use super::low_precision::LowPrecision;
use super::solve::solve_fields;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::Parity;
use qdsl_runtime::operator::mobius::MobiusParams;
use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double, Single,
};
use qdsl_runtime::solver::{Fixed16, SolveResult, SolverError, SolverKind, SolverOptions};
use std::sync::Arc;

type F64 = ColourSpinorField<f64>;

/// The iteration operator of a mixed solve.
#[derive(Debug)]
enum Iteration {
    /// Pure f64: the f64 operator itself.
    F64,
    F32(DeviceOperator<Single>),
    Fixed16(DeviceOperator<Fixed16>),
}

/// The device operators of a Möbius solve.
#[derive(Debug)]
pub struct MobiusDevice {
    ctx: Arc<DeviceContext>,
    high: DeviceOperator<Double>,
    low: Iteration,
}

fn device_error(e: impl std::fmt::Display) -> SolverError {
    SolverError::operator(std::io::Error::other(e.to_string()))
}

impl MobiusDevice {
    /// The f64 operator and the iteration operator of `precision` (f64, f32 or fixed16)
    /// on parity `parity` for links `gauge`, `params` and the time `boundary`; the
    /// kernels are compiled here.
    pub fn new(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        params: &MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
        precision: LowPrecision,
    ) -> Result<Self, String> {
        let op = |e: qdsl_runtime::operator::device::OperatorError| {
            format!("the device Möbius operator: {e}")
        };
        let high = DeviceOperator::<Double>::mobius(ctx, gauge, params.clone(), parity, boundary)
            .map_err(op)?;
        let low = match precision {
            LowPrecision::F64 => Iteration::F64,
            LowPrecision::F32 => Iteration::F32(
                DeviceOperator::mobius(ctx, gauge, params.clone(), parity, boundary)
                    .map_err(op)?,
            ),
            LowPrecision::Fixed16 => Iteration::Fixed16(
                DeviceOperator::mobius(ctx, gauge, params.clone(), parity, boundary)
                    .map_err(op)?,
            ),
            other => {
                return Err(format!(
                    "--action mobius on the GPU iterates in f64, f32 or fixed16, not {}",
                    other.name()
                ))
            }
        };
        Ok(Self {
            ctx: Arc::clone(ctx),
            high,
            low,
        })
    }

    /// CGNR on M̂ x = b from x = 0 on the device: the result and the downloaded x.
    pub fn solve(&self, b: &F64, opts: &SolverOptions) -> Result<(SolveResult, F64), SolverError> {
        match &self.low {
            Iteration::F64 => self.run::<Double>(&self.high, b, opts),
            Iteration::F32(low) => self.run(low, b, opts),
            Iteration::Fixed16(low) => self.run(low, b, opts),
        }
    }

    fn run<P: DevicePrecision>(
        &self,
        low: &DeviceOperator<P>,
        b: &F64,
        opts: &SolverOptions,
    ) -> Result<(SolveResult, F64), SolverError>
    where
        DeviceVector<Double>: qdsl_runtime::solver::ConvertFrom<DeviceVector<P>>,
        DeviceVector<P>: qdsl_runtime::solver::ConvertFrom<DeviceVector<Double>>,
    {
        // One source: the vector's Ls slices are the fifth dimension, not sources.
        let b_dev = DeviceVector::<Double>::upload(&self.ctx, b)
            .and_then(|v| v.with_sources(1))
            .map_err(device_error)?;
        let l = *b_dev.layout();
        let mut x = DeviceVector::<Double>::zeros(&self.ctx, l.host_reals, l.sites)
            .map_err(device_error)?;
        let outcome = solve_fields(&self.high, low, SolverKind::Cgnr, &b_dev, &mut x, opts);
        if let Some(e) = self.ctx.take_error() {
            return Err(device_error(e));
        }
        let (result, _) = outcome?;
        let x = x.download(*b.layout()).map_err(device_error)?;
        Ok((result, x))
    }
}
