//! The GPU iteration of a Möbius solve ([`super::mobius`]): CGNR (CG on M̂†M̂) on the
//! device asymmetric M̂ ([`DeviceOperator::mobius`], the fused `fused5d!` chains) with
//! 5D device vectors — in f64, or in f32 or 16-bit fixed point with f64 reliable
//! updates (the runtime's mixed-precision solver, as every device solve). The source
//! preparation and the reconstruction stay on the host in f64, as for the 4D actions'
//! full solves ([`super::solve`]); the device operator's own
//! ([`qdsl_runtime::operator::mobius::DeviceEvenOddMobius`]) are tested against them.

use super::mobius::MobiusSolver;
use super::mspcg_device::DevicePreconditioner;
use super::precision::{self, DeviceIteration, Precision};
use super::solve::{device_error, prepare_solve, solve_fields};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::Parity;
use qdsl_runtime::linear::{LinearOperator, NormalForm, NormalOperator, SolverField};
use qdsl_runtime::operator::mobius::MobiusParams;
use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double,
};
use qdsl_runtime::solver::mspcg::{pcg, PcgResult, Preconditioner};
use qdsl_runtime::solver::{ConvertFrom, SolveResult, SolverError, SolverKind, SolverOptions};
use std::sync::Arc;

type F64 = ColourSpinorField<f64>;

/// The iteration operator of a mixed solve, on device vectors of its precision.
trait IterationOperator: Send + Sync {
    /// The name of the vectors' storage format.
    fn format(&self) -> &'static str;

    /// CGNR on M̂ x = b (x = 0 first) with `high` for the solution and the true residual
    /// and this operator for the iteration: the result and the downloaded x.
    fn solve(
        &self,
        ctx: &Arc<DeviceContext>,
        high: &DeviceOperator<Double>,
        b: &F64,
        opts: &SolverOptions,
    ) -> Result<(SolveResult, F64), SolverError>;

    /// MSPCG on M̂†M̂ x = M̂†b (x = 0 first) with `high` for the solution and the true
    /// residual, this operator for the outer iteration and `precond`: the outcome and
    /// the downloaded x.
    fn pcg(
        &self,
        ctx: &Arc<DeviceContext>,
        high: &DeviceOperator<Double>,
        precond: &DevicePreconditioner,
        b: &F64,
        opts: &SolverOptions,
    ) -> Result<(PcgResult, F64), SolverError>;
}

impl<P: DevicePrecision> IterationOperator for DeviceOperator<P> {
    fn format(&self) -> &'static str {
        P::FORMAT.name()
    }

    fn solve(
        &self,
        ctx: &Arc<DeviceContext>,
        high: &DeviceOperator<Double>,
        b: &F64,
        opts: &SolverOptions,
    ) -> Result<(SolveResult, F64), SolverError> {
        run(ctx, high, self, b, opts)
    }

    fn pcg(
        &self,
        ctx: &Arc<DeviceContext>,
        high: &DeviceOperator<Double>,
        precond: &DevicePreconditioner,
        b: &F64,
        opts: &SolverOptions,
    ) -> Result<(PcgResult, F64), SolverError> {
        run_pcg(ctx, high, self, precond, b, opts)
    }
}

impl std::fmt::Debug for dyn IterationOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceOperator<{}>", self.format())
    }
}

/// The device operators of a Möbius solve.
#[derive(Debug)]
pub struct MobiusDevice {
    ctx: Arc<DeviceContext>,
    high: DeviceOperator<Double>,
    /// The iteration operator of a mixed solve; `None` for pure f64 (`high` iterates).
    low: Option<Box<dyn IterationOperator>>,
}

/// Builds the iteration operator of a precision ([`DeviceIteration`]).
struct BuildIteration<'a> {
    ctx: &'a Arc<DeviceContext>,
    gauge: &'a GaugeField<f64>,
    params: &'a MobiusParams,
    parity: Parity,
    boundary: TimeBoundary,
    m5inv: M5invMode,
}

impl DeviceIteration for BuildIteration<'_> {
    type Output = Result<Option<Box<dyn IterationOperator>>, String>;

    fn pure(self) -> Self::Output {
        Ok(None)
    }

    fn mixed<P: DevicePrecision>(self) -> Self::Output {
        let low = DeviceOperator::<P>::mobius(
            self.ctx,
            self.gauge,
            self.params.clone(),
            self.parity,
            self.boundary,
            self.m5inv,
        )
        .map_err(|e| format!("the device Möbius operator: {e}"))?;
        Ok(Some(Box::new(low)))
    }
}

impl MobiusDevice {
    /// The f64 operator and the iteration operator of `precision` (one of
    /// [`MobiusSolver::PRECISIONS`]) on parity `parity` for links `gauge`, `params` and
    /// the time `boundary`, the iteration operator's M5⁻¹ applied as `m5inv` says (the
    /// tensor cores need a mixed precision; the f64 operator sweeps); the kernels are
    /// compiled here.
    pub fn new(
        ctx: &Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
        params: &MobiusParams,
        parity: Parity,
        boundary: TimeBoundary,
        (precision, m5inv): (Precision, M5invMode),
    ) -> Result<Self, String> {
        let refused = || {
            format!(
                "--action mobius on the GPU iterates in {}, not {}",
                precision::list(&MobiusSolver::PRECISIONS),
                precision.name()
            )
        };
        if !MobiusSolver::PRECISIONS.contains(&precision) {
            return Err(refused());
        }
        super::mobius::refuse_m5inv_in_f64(precision, m5inv)?;
        let high = DeviceOperator::<Double>::mobius(
            ctx,
            gauge,
            params.clone(),
            parity,
            boundary,
            M5invMode::Sweep,
        )
        .map_err(|e| format!("the device Möbius operator: {e}"))?;
        let build = BuildIteration {
            ctx,
            gauge,
            params,
            parity,
            boundary,
            m5inv,
        };
        let low = precision.on_device(build).ok_or_else(refused)??;
        Ok(Self {
            ctx: Arc::clone(ctx),
            high,
            low,
        })
    }

    /// The context.
    pub fn context(&self) -> &Arc<DeviceContext> {
        &self.ctx
    }

    /// MSPCG on M̂†M̂ x = M̂†b from x = 0 on the device ([`IterationOperator::pcg`]): the
    /// outcome and the downloaded x.
    pub fn pcg(
        &self,
        b: &F64,
        precond: &DevicePreconditioner,
        opts: &SolverOptions,
    ) -> Result<(PcgResult, F64), SolverError> {
        match &self.low {
            None => run_pcg(&self.ctx, &self.high, &self.high, precond, b, opts),
            Some(low) => low.pcg(&self.ctx, &self.high, precond, b, opts),
        }
    }

    /// CGNR on M̂ x = b from x = 0 on the device: the result and the downloaded x.
    pub fn solve(&self, b: &F64, opts: &SolverOptions) -> Result<(SolveResult, F64), SolverError> {
        match &self.low {
            None => run(&self.ctx, &self.high, &self.high, b, opts),
            Some(low) => low.solve(&self.ctx, &self.high, b, opts),
        }
    }
}

/// b uploaded (one source: the vector's Ls slices are the fifth dimension), a zero x,
/// and the set-up that is not iteration: the vector kernels (BLAS, reductions,
/// conversions) of f64 and P compiled in parallel, and both operators applied once
/// each way (their kernels tuned), so that a result's time is the iteration's.
fn set_up<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &DeviceOperator<P>,
    b: &F64,
) -> Result<(DeviceVector<Double>, DeviceVector<Double>), SolverError> {
    let b_dev = DeviceVector::<Double>::upload(ctx, b)
        .and_then(|v| v.with_sources(1))
        .map_err(device_error)?;
    let l = *b_dev.layout();
    let x = DeviceVector::<Double>::zeros(ctx, l.host_reals, l.sites).map_err(device_error)?;
    prepare_solve(ctx, high, low, &b_dev)?;
    Ok((b_dev, x))
}

/// The context's sticky error, else x downloaded in `b`'s layout.
fn finish(ctx: &DeviceContext, x: &DeviceVector<Double>, b: &F64) -> Result<F64, SolverError> {
    if let Some(e) = ctx.take_error() {
        return Err(device_error(e));
    }
    x.download(*b.layout()).map_err(device_error)
}

/// CGNR on M̂ x = b from x = 0 with `high` (f64) and the iteration operator `low` on
/// device vectors of `P`: the result and the downloaded x.
fn run<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &DeviceOperator<P>,
    b: &F64,
    opts: &SolverOptions,
) -> Result<(SolveResult, F64), SolverError> {
    let (b_dev, mut x) = set_up(ctx, high, low, b)?;
    let outcome = solve_fields(high, low, SolverKind::Cgnr, &b_dev, &mut x, opts);
    let x = finish(ctx, &x, b)?;
    let (result, _) = outcome?;
    Ok((result, x))
}

/// MSPCG ([`pcg`]) on M̂†M̂ x = M̂†b from x = 0 with `high` (f64) for the solution and the
/// true residual, `low`'s normal operator for the outer iteration on device vectors of
/// `P` and `precond`: the outcome and the downloaded x. The preconditioner is applied
/// once to a vector of `P` before the iteration (its kernels compiled and tuned: set-up,
/// as for the operators), so that the result's time is the iteration's.
pub(crate) fn run_pcg<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &DeviceOperator<P>,
    precond: &DevicePreconditioner,
    b: &F64,
    opts: &SolverOptions,
) -> Result<(PcgResult, F64), SolverError> {
    let (b_dev, mut x) = set_up(ctx, high, low, b)?;
    let mut rhs = b_dev.zeros_like();
    high.apply_dagger(&mut rhs, &b_dev)?;
    let a_high = NormalOperator::new(high, NormalForm::MdagM);
    let a_low = NormalOperator::new(low, NormalForm::MdagM);
    let r = DeviceVector::<P>::converted(&rhs);
    let mut z = r.zeros_like();
    Preconditioner::<DeviceVector<P>>::apply(precond, &mut z, &r)?;
    let outcome = pcg(&a_high, &a_low, precond, &rhs, &mut x, opts);
    let x = finish(ctx, &x, b)?;
    Ok((outcome?, x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::io::{read_gauge, ReadOptions};

    /// GPU: a small Möbius solve (MILC's 4⁴ sample, Ls 8, b5 = 1.5, c5 = 0.5, M5 = 1.8,
    /// m_f = 0.1, tolerance 1e-9) with the iteration on the device reaches the host
    /// solve's accuracy: the residual recomputed on the unpreconditioned 5D D below
    /// 1e-8 in f64, f64–f32, f64–fixed16 and f64–fixed8; in f64 the iteration count equals the
    /// host's within 1 and the solutions agree to 1e-7 (‖Δψ‖/‖ψ‖).
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn the_device_solve_matches_the_host_solve() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/milc/lat.sample.l4444");
        let u = read_gauge(path, &ReadOptions::default()).unwrap().field;
        let params = MobiusParams::mobius(8, 1.5, 0.5, 1.8, 0.1).unwrap();
        let (ctx, _dir) = qdsl_runtime::testing::context();
        let solver = |precision| {
            MobiusSolver::new(
                &u,
                params.clone(),
                TimeBoundary::Antiperiodic,
                precision,
                SolverOptions::with_tolerance(1e-9),
            )
            .unwrap()
        };
        let host = solver(Precision::F64);
        let eta = ColourSpinorField::gaussian(host.layout(), 3);
        let want = host.solve(&eta).unwrap();
        for precision in MobiusSolver::PRECISIONS {
            let dev = solver(precision).on_device(&ctx).unwrap();
            assert!(dev.is_on_device());
            let got = dev.solve(&eta).unwrap();
            let r = &got.result;
            println!(
                "{}: {} iterations ({} reliable updates), true residual on M̂ {:.3e}, on D {:.3e} (host f64: {} iterations, {:.3e})",
                precision.name(),
                r.iterations,
                r.reliable_updates,
                r.true_residual,
                got.residual,
                want.result.iterations,
                want.residual
            );
            assert!(r.is_converged(), "{precision:?}: {:?}", r.convergence);
            assert!(got.residual < 1e-8, "{precision:?}: {:e}", got.residual);
            if precision == Precision::F64 {
                let d = r.iterations.abs_diff(want.result.iterations);
                assert!(
                    d <= 1,
                    "{} iterations against the host's {}",
                    r.iterations,
                    want.result.iterations
                );
                let diff = qdsl_runtime::testing::relative_distance(&got.psi, &want.psi);
                assert!(diff < 1e-7, "solutions differ by {diff:e}");
            }
        }
    }
    /// GPU: the iteration operator with M5⁻¹ on the tensor cores (`mma_f16`, `mma_bf16`;
    /// MILC's 4⁴ sample, Ls 12, b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.1) differs from the
    /// swept one by the operands' rounding — more than f32's and within the 16-bit
    /// formats' bound, so the mode is applied — and the f64–f32 and f64–fixed16 solves
    /// with it reach 1e−10 through reliable updates, the residual recomputed on the exact
    /// f64 D below 1e−9.
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn the_device_solve_with_the_tensor_core_m5_inverse_reaches_1e_10() {
        use qdsl_runtime::solver::device::Single;
        use qdsl_runtime::solver::{LinearOperator, SolverField};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/milc/lat.sample.l4444");
        let u = read_gauge(path, &ReadOptions::default()).unwrap().field;
        let params = MobiusParams::mobius(12, 1.5, 0.5, 1.8, 0.1).unwrap();
        let (ctx, _dir) = qdsl_runtime::testing::context();
        let (p, t) = (Parity::Even, TimeBoundary::Antiperiodic);
        let op =
            |mode| DeviceOperator::<Single>::mobius(&ctx, &u, params.clone(), p, t, mode).unwrap();
        let sweep = op(M5invMode::Sweep);
        let solver = |precision| {
            MobiusSolver::new(
                &u,
                params.clone(),
                t,
                precision,
                SolverOptions::with_tolerance(1e-10),
            )
            .unwrap()
        };
        let layout = solver(Precision::F32)
            .operator()
            .blocks()
            .layout(qdsl_core::field::SiteSubset::Single(p));
        let psi = ColourSpinorField::<f64>::gaussian(layout, 5);
        let d_psi = DeviceVector::<Single>::upload(&ctx, &psi).unwrap();
        let applied = |o: &DeviceOperator<Single>| {
            let mut out = d_psi.zeros_like();
            o.apply(&mut out, &d_psi).unwrap();
            out.download(layout).unwrap()
        };
        let exact = applied(&sweep);
        // The check rows' per-operand bounds (2⁻¹⁰, 2⁻⁷), four times over for the sums.
        for (mode, bound) in [(M5invMode::MmaF16, 4e-3), (M5invMode::MmaBf16, 3e-2)] {
            let diff = qdsl_runtime::testing::relative_distance(&applied(&op(mode)), &exact);
            println!("{}: M̂ψ differs from the sweep's by {diff:.3e}", mode.name());
            assert!(diff > 1e-6 && diff < bound, "{mode:?}: {diff:e}");
            for precision in [Precision::F32, Precision::Fixed16] {
                let dev = solver(precision)
                    .with_m5inv(mode)
                    .unwrap()
                    .on_device(&ctx)
                    .unwrap();
                let eta = ColourSpinorField::gaussian(dev.layout(), 11);
                let got = dev.solve(&eta).unwrap();
                let r = &got.result;
                println!(
                    "{} {}: {} iterations ({} reliable updates), true residual on M̂ {:.3e}, on D {:.3e}",
                    mode.name(),
                    precision.name(),
                    r.iterations,
                    r.reliable_updates,
                    r.true_residual,
                    got.residual
                );
                assert!(
                    r.is_converged(),
                    "{mode:?} {precision:?}: {:?}",
                    r.convergence
                );
                assert!(r.reliable_updates > 0, "{r:?}");
                assert!(
                    got.residual < 1e-9,
                    "{mode:?} {precision:?}: {:e}",
                    got.residual
                );
            }
        }
        let refused = solver(Precision::F64).with_m5inv(M5invMode::MmaF16);
        assert!(refused.unwrap_err().contains("--precision f32"));
    }
}
