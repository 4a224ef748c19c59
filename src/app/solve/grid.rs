//! `qdsl solve --grid Px,Py,Pz,Pt`: the even-odd solve on a lattice decomposed over
//! ranks, through the same solvers.
//!
//! The gauge configuration is read once; the host system (links smeared, clover term)
//! is built once on the whole lattice and every rank takes its part
//! ([`qdsl_core::field::distributed::scatter`]); the source too. Each rank builds its
//! [`qdsl_runtime::distributed`] operator (halos of the links filled once, the fermion
//! halos exchanged before every hop) and runs the unchanged solver on
//! [`DistributedField`]s, whose norms and inner products are deterministic all-reduces:
//! every rank takes the same branches and reports the same result. The solution is
//! gathered and its residual recomputed with the single-process f64 operator — an
//! independent check of the distributed solve.
//!
//! Transport: the CPU backend runs one thread per rank ([`ThreadComm`]). On the CUDA
//! backend one rank per GPU, threads of this process with NCCL between them (or every
//! rank on GPU 0 through the host): [`super::grid_gpu`].

use super::action::Action;
use super::config::{describe, SolveConfig};
use super::grid_gpu::{check_gpu_grid, GridTransport};
use super::system::{HostSystem, PARITY};
use super::Precision;
use super::{
    even_source, relative_residual, Setup, SolveBackend, SolveError, SolveReport, SolveTimes,
};
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::decomposition::{NAIK_DEPTH, ONE_HOP_DEPTH};
use qdsl_core::lattice::{Decomposition, ExtendedLattice, Lattice, ProcessGrid};
use qdsl_runtime::comm::{run_ranks, CommConfig, ThreadComm};
use qdsl_runtime::distributed::{
    distributed_clover, distributed_staggered, distributed_wilson, DistributedError,
    DistributedField, SharedComm,
};
use qdsl_runtime::operator::cpu::StaggeredLinks;
use qdsl_runtime::solver::{
    LinearOperator, ProgressCallback, SolveResult, SolverField, SolverOptions,
};
use std::time::Duration;

type Field<T> = DistributedField<T, ThreadComm>;

/// The halo depth `action`'s hop needs: 3 with the Naik term (asqtad, HISQ), else 1.
pub fn halo_depth(action: Action) -> usize {
    match action {
        Action::Asqtad | Action::Hisq => NAIK_DEPTH,
        _ => ONE_HOP_DEPTH,
    }
}

/// Each rank's extended lattice for `grid` on `lattice` and `action`: an error naming
/// the direction and the values when the grid does not divide the lattice, leaves an odd
/// local extent, or a local extent shorter than the halo (the Naik term's 3).
pub fn grid_lattice(
    grid: ProcessGrid,
    gauge: &GaugeField<f64>,
    action: Action,
) -> Result<ExtendedLattice, SolveError> {
    let depth = halo_depth(action);
    let refuse = |e: qdsl_core::lattice::DecompositionError| {
        SolveError::Grid(format!(
            "--grid {grid} on the {} lattice ({action}): {e}",
            gauge.lattice()
        ))
    };
    let decomposition =
        Decomposition::with_halo_depth(*gauge.lattice(), grid, depth).map_err(refuse)?;
    ExtendedLattice::new(decomposition, depth).map_err(refuse)
}

/// One rank per GPU: an error naming both counts when the grid has more ranks than the
/// machine has GPUs.
pub fn check_gpu_count(grid: ProcessGrid, gpus: usize) -> Result<(), SolveError> {
    if grid.size() > gpus {
        return Err(SolveError::Grid(format!(
            "--grid {grid} has {} ranks, one per GPU, but this machine has {gpus} GPU{}",
            grid.size(),
            if gpus == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

fn distributed(e: DistributedError) -> SolveError {
    SolveError::Grid(e.to_string())
}

/// [`super::solve_on`] on the lattice decomposed by `grid` (module docs). A one-rank
/// grid is the single-process solve itself.
pub fn solve_on_grid(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    grid: ProcessGrid,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    if grid.size() == 1 {
        return super::solve_on(backend, gauge, config, progress);
    }
    let ext = check_grid(backend, gauge, config, grid)?;
    let setup = Setup::new(gauge, config, progress)?;
    let (_, layout) = setup.system.cpu_operator::<f64>();
    let b = even_source(config, layout)?;
    setup.solve_on_ranks(backend, config, *gauge.lattice(), ext, b)
}

/// Each rank's extended lattice, after the checks of a decomposed solve of `config` on
/// `backend`: the precision (f64 or f32), the grid against the lattice and the action's
/// halo, and on GPUs the transport's needs ([`check_gpu_grid`]: GPU count and NCCL).
pub(super) fn check_grid(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    grid: ProcessGrid,
) -> Result<ExtendedLattice, SolveError> {
    if !matches!(config.precision, Precision::F64 | Precision::F32) {
        return Err(SolveError::Grid(format!(
            "--grid {grid} iterates in f64 or f32, not {} (the CPU emulates the narrow \
             formats on whole f64 fields, which are not distributed)",
            config.precision.describe()
        )));
    }
    let ext = grid_lattice(grid, gauge, config.action)?;
    if let SolveBackend::Cuda(_) = backend {
        check_gpu_grid(grid, GridTransport::from_env()?)?;
    }
    Ok(ext)
}

impl Setup {
    /// The decomposed solve on `backend`: the CPU's threads, or the GPUs
    /// ([`Self::solve_decomposed_on_gpus`] with the transport of
    /// [`super::GRID_TRANSPORT_VAR`]).
    pub(super) fn solve_on_ranks(
        &self,
        backend: &SolveBackend,
        config: &SolveConfig,
        lattice: Lattice,
        ext: ExtendedLattice,
        b: ColourSpinorField<f64>,
    ) -> Result<SolveReport, SolveError> {
        match backend {
            SolveBackend::Cpu => self.solve_decomposed(config, lattice, ext, b),
            SolveBackend::Cuda(_) => {
                let transport = GridTransport::from_env()?;
                self.solve_decomposed_on_gpus(config, lattice, ext, b, transport)
            }
        }
    }

    /// Solves M̂ x = b (b on the system's parity, the whole lattice) on the ranks of
    /// `ext` (checked by [`check_grid`]) and reports; the solution is gathered and its
    /// residual recomputed with the single-process f64 operator.
    pub(super) fn solve_decomposed(
        &self,
        config: &SolveConfig,
        lattice: Lattice,
        ext: ExtendedLattice,
        b: ColourSpinorField<f64>,
    ) -> Result<SolveReport, SolveError> {
        let grid = *ext.decomposition().grid();
        let comm_config = CommConfig::from_env().map_err(|e| SolveError::Grid(e.to_string()))?;
        let ranks = run_ranks(grid.size(), comm_config, |comm| {
            let comm = SharedComm::new(comm);
            let mut opts = self.opts.clone();
            if comm.rank() != 0 {
                opts.progress = None;
            }
            solve_rank(&self.system, config, &b, ext, comm, &opts)
        });
        let backend = format!(
            "CPU, {} ranks (grid {grid}, local {}, one thread each)",
            grid.size(),
            ext.local()
        );
        self.report_decomposed(config, lattice, ext, b, ranks, backend)
    }

    /// The report of a decomposed solve from every rank's outcome (in rank order): the
    /// ranks must agree on the iterations; the solution is gathered and its residual
    /// recomputed with the single-process f64 operator.
    pub(super) fn report_decomposed(
        &self,
        config: &SolveConfig,
        lattice: Lattice,
        ext: ExtendedLattice,
        b: ColourSpinorField<f64>,
        ranks: Vec<Result<(SolveResult, ColourSpinorField<f64>), SolveError>>,
        backend: String,
    ) -> Result<SolveReport, SolveError> {
        let mut results = Vec::with_capacity(ranks.len());
        let mut parts = Vec::with_capacity(ranks.len());
        for outcome in ranks {
            let (result, part) = outcome?;
            results.push(result);
            parts.push(part);
        }
        let result = results.swap_remove(0);
        if let Some(other) = results.iter().find(|r| r.iterations != result.iterations) {
            return Err(SolveError::Grid(format!(
                "the ranks disagree: rank 0 ran {} iterations, another {} (their global \
                 sums must be identical)",
                result.iterations, other.iterations
            )));
        }
        let x = qdsl_core::field::distributed::gather(&parts, &ext)
            .map_err(|e| distributed(e.into()))?;
        let through_solve = self.start.elapsed();
        let (high, _) = self.system.cpu_operator::<f64>();
        let recomputed_residual = relative_residual(high.as_ref(), &b, &x)?;
        let seconds = result.elapsed.max(Duration::from_nanos(1)).as_secs_f64();
        Ok(SolveReport {
            action: config.action,
            parameters: describe(config.action, &self.parameters, self.u0, config.boundary),
            lattice,
            backend,
            solver: config.solver,
            precision: config.precision,
            tolerance: config.tolerance,
            gflops: result.operator_flops as f64 / seconds / 1e9,
            times: SolveTimes {
                setup: through_solve.saturating_sub(result.elapsed),
                solve: result.elapsed,
                ..SolveTimes::default()
            },
            result,
            recomputed_residual,
            source: b,
            solution: x,
        })
    }
}

/// One rank's part of the solve: its operators (f64, and f32 for the iteration), its
/// part of b, the solver; returns the result and its part of x.
fn solve_rank(
    system: &HostSystem,
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let rank = comm.rank();
    let part = |u: &GaugeField<f64>| scatter(u, &ext, rank).map_err(|e| distributed(e.into()));
    match system {
        HostSystem::Wilson {
            gauge,
            kappa,
            boundary,
        } => {
            let links = part(gauge)?;
            let low = links.cast::<f32>();
            let c = comm.clone();
            let high = distributed_wilson(links, *kappa, PARITY, *boundary, ext, c)
                .map_err(distributed)?;
            let low = distributed_wilson(low, *kappa, PARITY, *boundary, ext, comm.clone())
                .map_err(distributed)?;
            iterate(&high, &low, b, ext, comm, config, opts)
        }
        HostSystem::Staggered { links, mass } => {
            let links = match links {
                StaggeredLinks::Naive(u) => StaggeredLinks::Naive(part(u)?),
                StaggeredLinks::Improved { fat, long } => StaggeredLinks::Improved {
                    fat: part(fat)?,
                    long: part(long)?,
                },
            };
            let low = links.cast::<f32>();
            let high = distributed_staggered(links, *mass, PARITY, ext, comm.clone())
                .map_err(distributed)?;
            let low = distributed_staggered(low, *mass, PARITY, ext, comm.clone())
                .map_err(distributed)?;
            iterate(&high, &low, b, ext, comm, config, opts)
        }
        HostSystem::Clover {
            gauge,
            clover,
            mu,
            boundary,
            ..
        } => {
            let links = part(gauge)?;
            let a = scatter(clover, &ext, rank).map_err(|e| distributed(e.into()))?;
            let (links_low, a_low) = (links.cast::<f32>(), a.cast::<f32>());
            let c = comm.clone();
            let high = distributed_clover(links, a, *mu, PARITY, *boundary, ext, c)
                .map_err(distributed)?;
            let c = comm.clone();
            let low = distributed_clover(links_low, a_low, *mu, PARITY, *boundary, ext, c)
                .map_err(distributed)?;
            iterate(&high, &low, b, ext, comm, config, opts)
        }
    }
}

/// The solve on this rank: x = 0, the solver of `config` iterating in f64 or f32.
fn iterate<OH, OL>(
    high: &OH,
    low: &OL,
    b: &ColourSpinorField<f64>,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    config: &SolveConfig,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError>
where
    OH: LinearOperator<Field<f64>>,
    OL: LinearOperator<Field<f32>>,
{
    let b = Field::scatter(b, ext, comm).map_err(distributed)?;
    let mut x = b.zeros_like();
    let result = match config.precision {
        Precision::F64 => config
            .solver
            .solve::<_, Field<f64>, _, _>(high, high, &b, &mut x, opts)?,
        _ => config
            .solver
            .solve::<_, Field<f32>, _, _>(high, low, &b, &mut x, opts)?,
    };
    Ok((result, x.part().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One rank per GPU: a grid of 4 ranks on 2 GPUs is refused naming both counts; 2 on 2
    /// is accepted.
    #[test]
    fn more_ranks_than_gpus_are_refused_naming_both_counts() {
        let grid = ProcessGrid::parse("1,1,2,2").unwrap();
        let e = check_gpu_count(grid, 2).unwrap_err().to_string();
        assert!(
            e.contains("--grid 1,1,2,2 has 4 ranks") && e.contains("has 2 GPUs"),
            "{e}"
        );
        let e = check_gpu_count(grid, 1).unwrap_err().to_string();
        assert!(e.contains("has 1 GPU"), "{e}");
        assert!(check_gpu_count(ProcessGrid::parse("1,1,1,2").unwrap(), 2).is_ok());
    }

    /// The Naik term needs halos of 3 layers, the one-hop actions 1: 8⁴ cut into 4 in t
    /// (local 2) is refused for asqtad and HISQ only, naming the extent and the depth.
    #[test]
    fn the_naik_term_needs_local_extents_of_three() {
        let gauge = GaugeField::<f64>::unit(qdsl_core::lattice::Lattice::new([8; 4]).unwrap());
        let grid = ProcessGrid::parse("1,1,1,4").unwrap();
        for action in [Action::Asqtad, Action::Hisq] {
            let e = grid_lattice(grid, &gauge, action).unwrap_err().to_string();
            assert!(
                e.contains("Lt/Pt = 8/4 = 2") && e.contains("halo depth 3"),
                "{e}"
            );
        }
        for action in [Action::Wilson, Action::Clover, Action::Staggered] {
            let ext = grid_lattice(grid, &gauge, action).unwrap();
            assert_eq!(ext.local().dims(), [8, 8, 8, 2]);
            assert_eq!(ext.depth(), 1);
        }
    }
}
