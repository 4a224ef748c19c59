//! The logic of `qdsl solve`: build the even-odd preconditioned operator of an action
//! from thin gauge links, make a source on one parity and solve M̂ x = b.
//!
//! * Wilson: M̂ = 1 − κ² H_eo H_oe on the even sites.
//! * Naive staggered, asqtad and HISQ: MILC's A = 4m² − D_eo D_oe on the even sites,
//!   the staggered phases and the time boundary folded into the links;
//!   asqtad smears the thin links with tadpole factor u0 (default u0 = P^{1/4}, P the
//!   average plaquette, MILC's convention); HISQ builds its links with
//!   [`hisq_links`] (no tadpole factor, u0 = 1) and the Naik correction ε.
//! * Clover and twisted mass: M̂ = D_ee − ¼ H_eo D_oo⁻¹ H_oe with
//!   D = (m + 4) + (c_sw/2)σ·F + iμγ5, m = 1/(2κ) − 4
//!   ([`EvenOddClover`]). Its normalisation is the mass one: at c_sw = μ = 0 it is
//!   (m + 4) times the Wilson M̂ above, so its solution is the Wilson one divided by
//!   (m + 4).
//!
//! The fermions' time boundary is [`SolveConfig::boundary`]: periodic or antiperiodic,
//! or openQCD's open or SF boundaries ([`FermionBoundary::Open`]) for the Wilson-like
//! actions, which then solve the clover system of
//! [`qdsl_core::gauge::OpenBoundary::clover_fields`] (Wilson as clover with c_sw = 0, in
//! mass normalisation) with the source set to zero on the slices where the quark fields
//! vanish (openQCD's convention; a source with nothing left is an error).
//! [`SolveConfig`] names the [`Action`] and carries its parameters (κ or m, u0, c_sw, μ,
//! ε); [`solve_on`] checks that the action gets exactly the ones it uses.
//! [`solve_full_on`] solves the full system M ψ = η for a source on every site.
//!
//! Backends ([`SolveBackend`]): the CPU (host fields, the generated Rust operators) or
//! the GPU (device vectors and operators of [`qdsl_runtime::solver::device`]); the same
//! solvers run on both through [`solve_fields`]. Whatever the backend, the residual
//! ‖b − M̂ x‖/‖b‖ of the report is recomputed at the end on the CPU in f64, with the
//! host operator, from the (downloaded) solution: an independent check of a GPU solve.
//!
//! Precisions: the solution and the true residual are f64; the iteration runs in a
//! [`Precision`] of the registry ([`crate::app::precision`]): on the CPU by
//! [`Precision::solve`] (the narrow formats emulated by [`QuantizedField`](qdsl_runtime::solver::QuantizedField)), on the GPU
//! by [`Precision::on_device`] (vectors stored in the format).
//!
//! | module | holds |
//! |---|---|
//! | [`action`] | [`Action`], with its names |
//! | [`config`] | [`SolveConfig`], [`Source`]; the check of the parameters |
//! | [`error`] | [`SolveError`] |
//! | [`backend`] | [`SolveBackend`]: `cpu`, `cuda` or `auto` |
//! | [`system`] | the action's system on the host, from which both backends build operators |
//! | [`cuda`] | the GPU solve in every precision |
//! | [`full`] | [`solve_full_on`]: the full system M ψ = η through the Schur complement |
//! | [`grid`] | [`solve_on_grid`]: the solve on a lattice decomposed over ranks (`--grid`) |
//! | [`grid_gpu`] | the decomposed solve on GPUs (NCCL, or every rank on GPU 0) |
//! | [`source`] | [`FullSource`]: point, wall, Z2, Gaussian or file sources on every site |

mod action;
mod backend;
mod config;
mod cuda;
mod error;
mod full;
#[cfg(test)]
mod gpu_tests;
mod grid;
mod grid_gpu;
mod source;
mod sources;
mod system;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
pub mod transport_choice;

pub use crate::app::precision::Precision;
pub use action::Action;
pub use backend::SolveBackend;
pub use config::{check_hisq_u0, FermionBoundary, SolveConfig, Source};
pub(crate) use cuda::{device_error, prepare_solve, set_up};
pub use error::SolveError;
pub use full::{full_layout, solve_full_on, solve_full_on_grid, FullSolveReport};
pub use grid::{check_gpu_count, grid_lattice, halo_depth, solve_on_grid};
pub use grid_gpu::{
    check_gpu_grid, open_gpu_rank, time_applications, GridTransport, RankTransports,
    GRID_TRANSPORT_VAR,
};
pub use source::FullSource;
pub use sources::{solve_sources_on, SourceLine, SourceSet, SourcesReport};

use config::{check_parameters, describe, Parameters};
use cuda::device_solve;
use system::HostSystem;

use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::gauge::plaquette;
use qdsl_core::lattice::Lattice;
use qdsl_runtime::solver::{
    ConvertFrom, LinearOperator, ProgressCallback, SolveResult, SolverError, SolverField,
    SolverKind, SolverOptions,
};
use std::time::{Duration, Instant};

/// The result of [`solve`].
#[derive(Clone, Debug)]
pub struct SolveReport {
    /// The action solved.
    pub action: Action,
    /// The lattice.
    pub lattice: Lattice,
    /// What the operator's parameters were, e.g. "κ = 0.12" or "m = 0.05, u0 = 0.8677"
    /// (clover and twisted mass: also their normalisation).
    pub parameters: String,
    /// The backend that ran it ("CPU" or "cuda (<GPU name>)").
    pub backend: String,
    /// The solver.
    pub solver: SolverKind,
    /// The iteration precision.
    pub precision: Precision,
    /// The tolerance asked for.
    pub tolerance: f64,
    /// The solver's result.
    pub result: SolveResult,
    /// ‖b − M̂ x‖/‖b‖ recomputed after the solve with one more f64 application of the
    /// CPU operator (a GPU solution is downloaded first).
    pub recomputed_residual: f64,
    /// Operator flops per second over the solve's iterations only (set-up excluded), in
    /// GFLOP/s.
    pub gflops: f64,
    /// Set-up and solve times apart.
    pub times: SolveTimes,
    /// The source b (even sites).
    pub source: ColourSpinorField<f64>,
    /// The solution x (even sites).
    pub solution: ColourSpinorField<f64>,
}

/// Wall-clock times of a solve, the set-up apart from the iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveTimes {
    /// Reading the gauge file: set by the caller that read it (zero otherwise).
    pub file_read: Duration,
    /// [`solve_on`] up to the end of the solve, less the solver's own time: checking the
    /// parameters, smearing the links, the clover term, building and uploading the
    /// operators, compiling (JIT) and tuning their kernels (the warm-up application of
    /// the GPU operators), the source, downloading the solution.
    pub setup: Duration,
    /// The solver's iterations ([`SolveResult::elapsed`]): what GFLOP/s counts.
    pub solve: Duration,
    /// Part of the set-up (GPU): NVRTC compilations (PTX-cache hits excluded) and their
    /// summed time.
    pub jit: qdsl_runtime::jit::Work,
    /// Part of the set-up (GPU): modules loaded (the driver assembling their PTX) and
    /// the time.
    pub loads: qdsl_runtime::jit::Work,
    /// Part of the set-up (GPU): kernels tuned (cache answers excluded) and the time.
    pub tuning: qdsl_runtime::jit::Work,
}

impl SolveTimes {
    /// File read plus set-up.
    pub fn total_setup(&self) -> Duration {
        self.file_read + self.setup
    }
}
/// Solves M̂ x = b with x₀ = 0 for operators in precisions H (solution, true residual)
/// and L (iteration); returns the result and ‖b − M̂ x‖/‖b‖ recomputed with `high`.
/// Backend-independent: any field type implementing [`SolverField`] will do.
pub fn solve_fields<H, L>(
    high: &(dyn LinearOperator<H> + Send + Sync),
    low: &(dyn LinearOperator<L> + Send + Sync),
    solver: SolverKind,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<(SolveResult, f64), SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
{
    x.set_zero();
    let result = solver.solve(high, low, b, x, opts)?;
    Ok((result, relative_residual(high, b, x)?))
}

/// The bare mass m = 1/(2κ) − 4 of hopping parameter κ.
pub fn wilson_mass(kappa: f64) -> f64 {
    0.5 / kappa - 4.0
}

/// The tadpole factor the asqtad smearing uses: `u0`, else P^{1/4}.
pub fn tadpole_factor(gauge: &GaugeField<f64>, u0: Option<f64>) -> f64 {
    u0.unwrap_or_else(|| plaquette(gauge).average.powf(0.25))
}

/// The relative residual ‖b − M x‖/‖b‖ (‖b − M x‖ for b = 0) with the operator `op`.
fn relative_residual<F: SolverField, O: LinearOperator<F> + ?Sized>(
    op: &O,
    b: &F,
    x: &F,
) -> Result<f64, SolverError> {
    let mut r = b.zeros_like();
    op.apply(&mut r, x)?;
    r.xpay(b, qdsl_core::Complex::new(-1.0, 0.0))?;
    let (b2, r2) = (b.norm_sqr()?, r.norm_sqr()?);
    Ok(if b2 == 0.0 {
        r2.sqrt()
    } else {
        (r2 / b2).sqrt()
    })
}
/// Checks the configuration, builds the even-odd operator of `config.action` from the
/// thin links `gauge` on the CPU backend, makes the source on the even sites and solves
/// M̂ x = b from x₀ = 0, calling `progress` after every iteration
/// ([`solve_on`] with [`SolveBackend::Cpu`]).
///
/// A solve that does not converge is still a report (see
/// [`SolveResult::is_converged`]); errors are bad parameters and refused options.
pub fn solve(
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    solve_on(&SolveBackend::Cpu, gauge, config, progress)
}

/// [`solve`] on `backend`. On the GPU the links and the source are uploaded, the solve
/// runs on device vectors, and the solution is downloaded; the report's recomputed
/// residual then comes from the CPU f64 operator (an independent check). Errors also
/// include GPU failures ([`SolveError::Device`]).
pub fn solve_on(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    let setup = Setup::new(gauge, config, progress)?;
    let (_, layout) = setup.system.cpu_operator::<f64>();
    let b = even_source(config, layout)?;
    setup.solve(backend, config, *gauge.lattice(), b)
}

/// The source b of `config` on the even sites of `layout` (with open or SF boundaries,
/// zero on the slices where the quark fields vanish; an error if nothing is left).
fn even_source(
    config: &SolveConfig,
    layout: qdsl_core::field::SpinorLayout,
) -> Result<ColourSpinorField<f64>, SolveError> {
    let mut b = match config.source {
        Source::Gaussian { seed } => ColourSpinorField::gaussian(layout, seed),
        Source::Point => ColourSpinorField::point_source(layout, 0, [0; 4], 0, 0)?,
    };
    if let FermionBoundary::Open(open) = config.boundary {
        open.project(&mut b);
        if b.data().iter().all(|z| z.norm_sqr() == 0.0) {
            return Err(SolveError::OpenBoundary(format!(
                "the source lies entirely on time slices where the quark fields vanish \
                 ({open}): the origin's slice x0 = 0 is one; use a Gaussian source or \
                 --source point --source-site x,y,z,t with 0 < t < L_t − 1"
            )));
        }
    }
    Ok(b)
}

/// What every solve builds before its source: the checked parameters, the tadpole
/// factor, the host system and the solver options.
pub(super) struct Setup {
    /// When the set-up began: everything until the solver's iterations is set-up time.
    start: Instant,
    parameters: Parameters,
    u0: f64,
    system: HostSystem,
    opts: SolverOptions,
}

impl Setup {
    /// Checks `config` and builds the system of its action from the thin links `gauge`.
    pub(super) fn new(
        gauge: &GaugeField<f64>,
        config: &SolveConfig,
        progress: Option<ProgressCallback>,
    ) -> Result<Self, SolveError> {
        let start = Instant::now();
        let action = config.action;
        let parameters = check_parameters(config)?;
        let opts = SolverOptions {
            max_iterations: config.max_iterations,
            progress,
            polak_ribiere: config.precision.is_mixed(),
            ..SolverOptions::with_tolerance(config.tolerance)
        };
        let u0 = match parameters {
            Parameters::Staggered { u0, .. } if action == Action::Asqtad => {
                tadpole_factor(gauge, u0)
            }
            _ => 1.0,
        };
        let system = HostSystem::new(
            gauge,
            &parameters,
            action,
            u0,
            config.boundary,
            config.clover_trace,
        )?;
        Ok(Self {
            start,
            parameters,
            u0,
            system,
            opts,
        })
    }

    /// Solves M̂ x = b (b on the system's parity) on `backend` and reports.
    pub(super) fn solve(
        &self,
        backend: &SolveBackend,
        config: &SolveConfig,
        lattice: Lattice,
        b: ColourSpinorField<f64>,
    ) -> Result<SolveReport, SolveError> {
        let (action, system, opts) = (config.action, &self.system, &self.opts);
        let (high, _) = system.cpu_operator::<f64>();
        let mut work = [qdsl_runtime::jit::Work::default(); 3];
        let (result, x, recomputed_residual, through_solve) = match backend {
            SolveBackend::Cpu => {
                let (low, _) = system.cpu_operator::<f32>();
                let mut x = b.zeros_like();
                let result = config.precision.solve(
                    config.solver,
                    high.as_ref(),
                    low.as_ref(),
                    &b,
                    &mut x,
                    opts,
                )?;
                let through_solve = self.start.elapsed();
                let residual = relative_residual(high.as_ref(), &b, &x)?;
                (result, x, residual, through_solve)
            }
            SolveBackend::Cuda(ctx) => {
                let (gpu, tuner) = (ctx.gpu(), ctx.tuner());
                let before = [gpu.jit().nvrtc_work(), gpu.load_work(), tuner.work()];
                let (result, x) = device_solve(ctx, system, config, &b, opts)?;
                let after = [gpu.jit().nvrtc_work(), gpu.load_work(), tuner.work()];
                for k in 0..3 {
                    work[k] = after[k].since(before[k]);
                }
                let through_solve = self.start.elapsed();
                let residual = relative_residual(high.as_ref(), &b, &x)?;
                (result, x, residual, through_solve)
            }
        };
        let times = SolveTimes {
            file_read: Duration::ZERO,
            setup: through_solve.saturating_sub(result.elapsed),
            solve: result.elapsed,
            jit: work[0],
            loads: work[1],
            tuning: work[2],
        };
        let seconds = result.elapsed.max(Duration::from_nanos(1)).as_secs_f64();
        Ok(SolveReport {
            action,
            parameters: describe(action, &self.parameters, self.u0, config.boundary),
            lattice,
            backend: backend.describe(),
            solver: config.solver,
            precision: config.precision,
            tolerance: config.tolerance,
            gflops: result.operator_flops as f64 / seconds / 1e9,
            times,
            result,
            recomputed_residual,
            source: b,
            solution: x,
        })
    }
}
