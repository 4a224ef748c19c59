//! The GPU solve: device vectors and operators in every iteration precision, the
//! solution downloaded.

use super::system::HostSystem;
use super::{solve_fields, SolveConfig, SolveError};
use crate::app::precision::DeviceIteration;
use qdsl_core::field::{ColourSpinorField, SpinorLayout};
use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double,
};
use qdsl_runtime::solver::{
    ConvertFrom, LinearOperator, SolveResult, SolverError, SolverField, SolverOptions,
};
use std::sync::Arc;

/// Applies `op` and its adjoint once to `x` (results discarded), so that the kernels are
/// compiled and tuned before the solve is timed: that is set-up, not solve time.
pub(crate) fn warm_up<F: SolverField>(
    op: &(dyn LinearOperator<F> + Send + Sync),
    x: &F,
) -> Result<(), SolverError> {
    let mut out = x.zeros_like();
    op.apply(&mut out, x)?;
    op.apply_dagger(&mut out, x)?;
    Ok(())
}

/// The set-up a device solve finishes before its timed iterations, once its operators
/// `high` (f64) and `low` (iterating in `P`) exist: the vector kernels of `b`'s layout and
/// of its `P` twin compiled and loaded, then each operator applied once each way
/// ([`warm_up`]). Without the first, a first solve in a fresh JIT cache compiles its
/// vector kernels inside its iterations: the decomposed 8⁴ asqtad CG on 2 × H200 took
/// 0.17–0.41 s in the first process of a session and 0.07–0.11 s after (BENCHMARKS.md
/// 2026-11-29 (e)); with this set-up the first takes what the next do (0.075 against
/// 0.074–0.081 s, 2026-11-29 (f)).
pub(crate) fn prepare_solve<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &(dyn LinearOperator<DeviceVector<Double>> + Send + Sync),
    low: &(dyn LinearOperator<DeviceVector<P>> + Send + Sync),
    b: &DeviceVector<Double>,
) -> Result<(), SolverError> {
    let l = *b.layout();
    let layouts = [
        l,
        DeviceVector::<P>::layout_of(l.host_reals, l.sites).map_err(device_error)?,
    ];
    ctx.preload_vector_kernels(&layouts).map_err(device_error)?;
    warm_up(high, b)?;
    warm_up(low, &DeviceVector::<P>::converted(b))
}

/// A device error as a solver error (the operator's failure).
pub(crate) fn device_error(e: impl std::fmt::Display) -> SolverError {
    SolverError::operator(std::io::Error::other(e.to_string()))
}

/// The device solve with f64 operator `high` and iteration operator `low` (their vector
/// kernels loaded, see [`set_up`]); returns the
/// result and the downloaded solution. Both operators are applied once first
/// ([`warm_up`]), so that the result's time is the solve's only. A failure recorded in the context (see
/// [`qdsl_runtime::solver::device::context`]) is an error, not a result.
fn device_run<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &(dyn LinearOperator<DeviceVector<P>> + Send + Sync),
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let device = |e: qdsl_runtime::device::DeviceError| SolveError::Device(e.to_string());
    let b_dev = DeviceVector::<Double>::upload(ctx, b).map_err(device)?;
    let mut x_dev =
        DeviceVector::<Double>::zeros(ctx, b_dev.layout().host_reals, b_dev.layout().sites)
            .map_err(device)?;
    warm_up(high, &b_dev)?;
    warm_up(low, &DeviceVector::<P>::converted(&b_dev))?;
    if let Some(e) = ctx.take_error() {
        return Err(SolveError::Device(e));
    }
    let outcome =
        solve_fields::<_, DeviceVector<P>>(high, low, config.solver, &b_dev, &mut x_dev, opts);
    if let Some(e) = ctx.take_error() {
        return Err(SolveError::Device(e));
    }
    let (result, _) = outcome?;
    let x = x_dev.download(*b.layout()).map_err(device)?;
    Ok((result, x))
}

/// The set-up of a solve iterating in precision `P` on vectors of `layout`: what `high`
/// builds (the f64 operator) here and what `low` builds (the iteration operator) in
/// another thread, at the same time as the vector kernels (BLAS, reductions,
/// conversions) of f64 and `P` are compiled and loaded. Each of the three compiles its
/// kernels in parallel threads, so that the first run waits for the slowest compilation
/// once rather than once per stage. `fail` makes an error of a message (a device error,
/// a panicked thread). Used by the one-GPU solves and by each rank of a decomposed one.
pub(crate) fn set_up<P: DevicePrecision, H, L: Send, E: Send>(
    ctx: &Arc<DeviceContext>,
    layout: &SpinorLayout,
    fail: impl Fn(String) -> E,
    high: impl FnOnce() -> Result<H, E>,
    low: impl FnOnce() -> Result<L, E> + Send,
) -> Result<(H, L), E> {
    let device = |e: qdsl_runtime::device::DeviceError| fail(e.to_string());
    let (reals, sites) = (
        2 * layout.site_len(),
        layout.ls() * layout.sites_per_slice(),
    );
    let layouts = [
        DeviceVector::<Double>::layout_of(reals, sites).map_err(device)?,
        DeviceVector::<P>::layout_of(reals, sites).map_err(device)?,
    ];
    std::thread::scope(|scope| {
        let vectors = scope.spawn(|| ctx.preload_vector_kernels(&layouts));
        let low = scope.spawn(low);
        let high = high();
        let joined = |what: &str| fail(format!("the set-up thread building {what} panicked"));
        let low = low.join().map_err(|_| joined("the iteration operator"))?;
        vectors
            .join()
            .map_err(|_| joined("the vector kernels"))?
            .map_err(device)?;
        Ok((high?, low?))
    })
}

/// The GPU solve in `config.precision`: (result, downloaded solution); an error for a
/// precision GPUs do not iterate in.
pub(super) fn device_solve(
    ctx: &Arc<DeviceContext>,
    system: &HostSystem,
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let job = DeviceSolve {
        ctx,
        system,
        config,
        b,
        opts,
    };
    config.precision.on_device(job).unwrap_or_else(|| {
        Err(SolveError::Device(format!(
            "the GPU does not iterate in {}",
            config.precision.describe()
        )))
    })
}

/// The GPU solve as a [`DeviceIteration`]: f64 alone, or the f64 operator with the
/// iteration operator of `P` (packed vectors too: their kernels read and write them
/// directly, packed20 computed in f32 and packed30 in f64, no conversion around each
/// application).
struct DeviceSolve<'a> {
    ctx: &'a Arc<DeviceContext>,
    system: &'a HostSystem,
    config: &'a SolveConfig,
    b: &'a ColourSpinorField<f64>,
    opts: &'a SolverOptions,
}

impl DeviceIteration for DeviceSolve<'_> {
    type Output = Result<(SolveResult, ColourSpinorField<f64>), SolveError>;

    fn pure(self) -> Self::Output {
        let Self {
            ctx,
            system,
            config,
            b,
            opts,
        } = self;
        let (high, ()) = set_up::<Double, _, _, _>(
            ctx,
            b.layout(),
            SolveError::Device,
            || system.device_operator::<Double>(ctx),
            || Ok(()),
        )?;
        device_run(ctx, &high, &high, config, b, opts)
    }

    fn mixed<P: DevicePrecision>(self) -> Self::Output {
        let Self {
            ctx,
            system,
            config,
            b,
            opts,
        } = self;
        let (high, low) = set_up::<P, _, _, _>(
            ctx,
            b.layout(),
            SolveError::Device,
            || system.device_operator::<Double>(ctx),
            || system.device_operator::<P>(ctx),
        )?;
        device_run::<P>(ctx, &high, &low, config, b, opts)
    }
}
