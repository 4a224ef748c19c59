//! The iteration of a Möbius solve ([`super::mobius`]) on a lattice decomposed over
//! ranks (`qdsl solve --action mobius --grid Px,Py,Pz,Pt`, and `qdsl correlator`'s 12
//! solves): CGNR (CG on M̂†M̂; f64, or f32 with f64 reliable updates) through the same
//! solver code on each rank's distributed M̂, its 5D vectors on the rank's extended
//! lattice (faces of Ls slices). The source preparation, the reconstruction and the
//! recomputed 5D residual stay in f64 on the whole lattice ([`MobiusSolver::solve_with`]),
//! so only the even-odd iteration is distributed; its solution is gathered.
//!
//! MSPCG (`--solver mspcg --grid`, [`MobiusGrid::iterate_mspcg`]) runs the same outer
//! PCG on the distributed M̂†M̂; the whole lattice's `--blocks` are divided among the
//! ranks (each count a multiple of the grid's), and each rank applies the preconditioner
//! of its own blocks with no communication ([`RankLocal`] on the CPU, a rank-local
//! device context on the GPU), the pads' links exchanged once before the solve
//! ([`padded_block_links`]). The preconditioner is thereby the single-process one.
//!
//! | backend | ranks | operator |
//! |---|---|---|
//! | CPU | one thread each ([`ThreadComm`], faces through memory) | [`distributed_mobius`]: the host blocks with the halo exchange before each hop |
//! | CUDA | one thread each, GPUs and transport of [`GridTransport`] (`QDSL_GRID_TRANSPORT`) | [`DeviceOperator::mobius_distributed`]: the device hop over the interior and exterior boxes, faces spin-projected |

use super::mobius::MobiusSolver;
use super::mobius_device::run_pcg;
use super::mobius_mspcg::{host_preconditioner, MspcgConfig};
use super::mspcg_device::DevicePreconditioner;
use super::precision::Precision;
use super::solve::{
    grid_lattice, open_gpu_rank, prepare_solve, solve_fields, time_applications, Action,
    GridTransport, RankTransports, SolveBackend,
};
use qdsl_core::field::distributed::{gather, scatter};
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::{ExtendedLattice, ProcessGrid};
use qdsl_runtime::comm::{run_ranks, CommConfig, ThreadComm};
use qdsl_runtime::distributed::device::RankDistribution;
use qdsl_runtime::distributed::{
    distributed_mobius, fill_link_halos, padded_block_links, DistributedField, DistributedSchur,
    RankLocal, SharedComm,
};
use qdsl_runtime::linear::{LinearOperator, NormalForm, NormalOperator};
use qdsl_runtime::operator::mobius::MobiusBlocks;
use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double, Single,
};
use qdsl_runtime::solver::mspcg::{pcg, PaddedBlocks, PcgResult};
use qdsl_runtime::solver::{SolveResult, SolverError, SolverField, SolverKind, SolverOptions};
use std::fmt::Display;
use std::sync::Arc;

type F64 = ColourSpinorField<f64>;

/// Where the ranks of a decomposed Möbius iteration run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridRanks {
    /// One CPU thread per rank.
    Cpu,
    /// One thread per rank, each with its GPU and the transport.
    Gpu(GridTransport),
}

/// A decomposed Möbius iteration (module docs).
#[derive(Clone, Debug)]
pub struct MobiusGrid {
    ext: ExtendedLattice,
    ranks: GridRanks,
}

fn failed(e: impl Display) -> SolverError {
    SolverError::operator(std::io::Error::other(e.to_string()))
}

impl MobiusGrid {
    /// The iteration on `grid` over the lattice of `gauge`, on the ranks of `backend`
    /// iterating in `precision`: an error naming the value for a grid that does not
    /// divide the lattice (or leaves an odd local extent), a precision other than f64
    /// and f32, and on GPUs a transport the machine cannot run ([`check_gpu_grid`]).
    ///
    /// [`check_gpu_grid`]: super::solve::check_gpu_grid
    pub fn new(
        grid: ProcessGrid,
        gauge: &GaugeField<f64>,
        backend: &SolveBackend,
        precision: Precision,
    ) -> Result<Self, String> {
        if !matches!(precision, Precision::F64 | Precision::F32) {
            return Err(format!(
                "--grid {grid}: --action mobius iterates in f64 or f32 on a decomposed \
                 lattice, not {}",
                precision.name()
            ));
        }
        let ext = grid_lattice(grid, gauge, Action::Mobius).map_err(|e| e.to_string())?;
        let ranks = match backend {
            SolveBackend::Cpu => GridRanks::Cpu,
            SolveBackend::Cuda(_) => {
                let transport = GridTransport::from_env().map_err(|e| e.to_string())?;
                super::solve::check_gpu_grid(grid, transport).map_err(|e| e.to_string())?;
                GridRanks::Gpu(transport)
            }
        };
        Ok(Self { ext, ranks })
    }

    /// The ranks' extended lattice.
    pub fn extended(&self) -> &ExtendedLattice {
        &self.ext
    }

    /// Where the ranks run.
    pub fn ranks(&self) -> GridRanks {
        self.ranks
    }

    /// One line for reports: the grid, the local lattice and where the ranks run.
    pub fn describe(&self) -> String {
        let grid = self.ext.decomposition().grid();
        let how = match self.ranks {
            GridRanks::Cpu => "CPU, one thread each".to_string(),
            GridRanks::Gpu(t) => format!("CUDA, {}", t.describe()),
        };
        format!(
            "{} ranks (grid {grid}, local {}, {how})",
            grid.size(),
            self.ext.local()
        )
    }

    /// CGNR on M̂ x = b (b on M̂'s parity of the whole lattice, x = 0 first) with the
    /// operator of `solver` distributed over the ranks: rank 0's result (every rank must
    /// report the same iterations) and the gathered x.
    pub fn iterate(
        &self,
        solver: &MobiusSolver,
        b: &F64,
    ) -> Result<(SolveResult, F64), SolverError> {
        self.on_ranks(
            solver.options(),
            |r: &SolveResult| r.iterations,
            |comm, opts| match self.ranks {
                GridRanks::Cpu => cpu_rank(solver, b, self.ext, comm, opts),
                GridRanks::Gpu(t) => gpu_rank(solver, b, self.ext, comm, t, opts),
            },
        )
    }

    /// The whole lattice's MSPCG blocks `blocks` divided among the ranks: an error naming
    /// both when a count is not a multiple of the grid's.
    pub fn rank_blocks(&self, blocks: [usize; 4]) -> Result<[usize; 4], String> {
        let grid = self.ext.decomposition().grid();
        let dims = grid.dims();
        if (0..4).any(|mu| blocks[mu] == 0 || !blocks[mu].is_multiple_of(dims[mu])) {
            return Err(format!(
                "--blocks {} --grid {grid}: each rank holds whole blocks, so every block count \
                 must be a multiple of the grid's",
                blocks.map(|b| b.to_string()).join(",")
            ));
        }
        Ok(std::array::from_fn(|mu| blocks[mu] / dims[mu]))
    }

    /// MSPCG on M̂†M̂ x = M̂†b (b on M̂'s parity of the whole lattice, x = 0 first) with
    /// the operator of `solver` distributed over the ranks and each rank applying the
    /// preconditioner of its share of `config`'s blocks (module docs): rank 0's outcome
    /// (every rank must report the same iterations) and the gathered x.
    pub fn iterate_mspcg(
        &self,
        solver: &MobiusSolver,
        b: &F64,
        config: &MspcgConfig,
    ) -> Result<(RankPcg, F64), SolverError> {
        let blocks = self.rank_blocks(config.blocks).map_err(failed)?;
        let mspcg = RankMspcg { config, blocks };
        self.on_ranks(
            &config.options(solver),
            |r: &RankPcg| r.outcome.result.iterations,
            |comm, opts| match self.ranks {
                GridRanks::Cpu => cpu_rank_mspcg(solver, b, self.ext, comm, opts, &mspcg),
                GridRanks::Gpu(t) => gpu_rank_mspcg(solver, b, self.ext, comm, t, opts, &mspcg),
            },
        )
    }

    /// Runs `rank` on every rank (its communicator and `options`, progress on rank 0
    /// only), checks that the ranks agree on the `iterations`, and returns rank 0's
    /// outcome with the gathered solution.
    fn on_ranks<R: Send>(
        &self,
        options: &SolverOptions,
        iterations: impl Fn(&R) -> usize,
        rank: impl Fn(SharedComm<ThreadComm>, &SolverOptions) -> Result<(R, F64), SolverError> + Sync,
    ) -> Result<(R, F64), SolverError> {
        let size = self.ext.decomposition().size();
        let config = CommConfig::from_env().map_err(failed)?;
        let outcomes = run_ranks(size, config, |comm| {
            let comm = SharedComm::new(comm);
            let mut opts = options.clone();
            if comm.rank() != 0 {
                opts.progress = None;
            }
            rank(comm, &opts)
        });
        let mut results = Vec::with_capacity(size);
        let mut parts = Vec::with_capacity(size);
        for outcome in outcomes {
            let (result, part) = outcome?;
            results.push(result);
            parts.push(part);
        }
        let result = results.swap_remove(0);
        if let Some(other) = results
            .iter()
            .find(|r| iterations(r) != iterations(&result))
        {
            return Err(failed(format!(
                "the ranks disagree: rank 0 ran {} iterations, another {} (their global \
                 sums must be identical)",
                iterations(&result),
                iterations(other)
            )));
        }
        let x = gather(&parts, &self.ext).map_err(failed)?;
        Ok((result, x))
    }
}

/// This rank's part of the links, halos filled (a collective).
fn rank_links(
    solver: &MobiusSolver,
    ext: &ExtendedLattice,
    comm: &SharedComm<ThreadComm>,
) -> Result<GaugeField<f64>, SolverError> {
    let mut links =
        scatter(solver.operator().blocks().gauge(), ext, comm.rank()).map_err(failed)?;
    fill_link_halos(comm, &mut links, ext).map_err(failed)?;
    Ok(links)
}

/// One CPU rank's distributed M̂ in f64 and f32.
type CpuOperators = (
    DistributedSchur<MobiusBlocks<f64>, ThreadComm>,
    DistributedSchur<MobiusBlocks<f32>, ThreadComm>,
);

/// One CPU rank's host distributed M̂ in f64 and f32 (a collective: the links' halos).
fn cpu_operators(
    solver: &MobiusSolver,
    ext: ExtendedLattice,
    comm: &SharedComm<ThreadComm>,
) -> Result<CpuOperators, SolverError> {
    let blocks = solver.operator().blocks();
    let (params, boundary, parity) = (
        blocks.params(),
        blocks.boundary(),
        solver.operator().parity(),
    );
    // Scattered with zero halos: distributed_mobius fills them.
    let links = scatter(blocks.gauge(), &ext, comm.rank()).map_err(failed)?;
    let low_links = links.cast::<f32>();
    let high = distributed_mobius(links, params.clone(), parity, boundary, ext, comm.clone())
        .map_err(failed)?;
    let low = distributed_mobius(
        low_links,
        params.clone(),
        parity,
        boundary,
        ext,
        comm.clone(),
    )
    .map_err(failed)?;
    Ok((high, low))
}

/// One CPU rank: the host distributed M̂ in f64 and f32, CGNR, this rank's part of x.
fn cpu_rank(
    solver: &MobiusSolver,
    b: &F64,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    opts: &SolverOptions,
) -> Result<(SolveResult, F64), SolverError> {
    type Field<T> = DistributedField<T, ThreadComm>;
    let (high, low) = cpu_operators(solver, ext, &comm)?;
    let b = Field::scatter(b, ext, comm).map_err(failed)?;
    let mut x = b.zeros_like();
    let result = match solver.precision() {
        Precision::F64 => {
            SolverKind::Cgnr.solve::<_, Field<f64>, _, _>(&high, &high, &b, &mut x, opts)?
        }
        _ => SolverKind::Cgnr.solve::<_, Field<f32>, _, _>(&high, &low, &b, &mut x, opts)?,
    };
    Ok((result, x.part().clone()))
}

/// A rank's MSPCG outcome.
#[derive(Debug)]
pub struct RankPcg {
    /// The outer PCG's outcome.
    pub outcome: PcgResult,
    /// The bytes the rank sends per outer iteration (GPU ranks: the iteration
    /// operator's faces, four hops of M̂†M̂); `None` on CPU ranks.
    pub face_bytes_per_iteration: Option<usize>,
}

/// What a rank of a decomposed MSPCG solve needs beyond the solver: the configuration
/// and this rank's share of the blocks.
struct RankMspcg<'a> {
    config: &'a MspcgConfig,
    blocks: [usize; 4],
}

impl RankMspcg<'_> {
    /// This rank's block grid and the links it reads (the pads' from the neighbours: a
    /// collective).
    fn grid(
        &self,
        solver: &MobiusSolver,
        ext: ExtendedLattice,
        comm: &SharedComm<ThreadComm>,
    ) -> Result<(PaddedBlocks, GaugeField<f64>), SolverError> {
        let blocks = solver.operator().blocks();
        let (link_ext, links) = padded_block_links(blocks.gauge(), &ext, comm).map_err(failed)?;
        let grid = PaddedBlocks::on_rank(
            ext,
            link_ext,
            comm.rank(),
            blocks.params().ls(),
            self.blocks,
            solver.operator().parity(),
        )
        .map_err(failed)?;
        Ok((grid, links))
    }
}

/// One CPU rank of MSPCG: the host distributed M̂ in f64 and f32, this rank's blocks
/// (f32 inner iterations), the outer PCG on M̂†M̂, this rank's part of x.
fn cpu_rank_mspcg(
    solver: &MobiusSolver,
    b: &F64,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    opts: &SolverOptions,
    mspcg: &RankMspcg<'_>,
) -> Result<(RankPcg, F64), SolverError> {
    type Field<T> = DistributedField<T, ThreadComm>;
    let (high, low) = cpu_operators(solver, ext, &comm)?;
    let (grid, links) = mspcg.grid(solver, ext, &comm)?;
    let precond =
        RankLocal(host_preconditioner(solver, mspcg.config, grid, &links).map_err(failed)?);
    let b = Field::scatter(b, ext, comm).map_err(failed)?;
    let mut rhs = b.zeros_like();
    high.apply_dagger(&mut rhs, &b)?;
    let a_high = NormalOperator::new(&high, NormalForm::MdagM);
    let mut x = b.zeros_like();
    let outcome = match solver.precision() {
        Precision::F64 => {
            pcg::<Field<f64>, Field<f64>, _, _, _>(&a_high, &a_high, &precond, &rhs, &mut x, opts)?
        }
        _ => {
            let a_low = NormalOperator::new(&low, NormalForm::MdagM);
            pcg::<Field<f64>, Field<f32>, _, _, _>(&a_high, &a_low, &precond, &rhs, &mut x, opts)?
        }
    };
    let rank = RankPcg {
        outcome,
        face_bytes_per_iteration: None,
    };
    Ok((rank, x.part().clone()))
}

/// One GPU rank: its GPU, transport and context, the device distributed M̂ in f64 (and
/// f32), CGNR on device vectors, this rank's part of x downloaded.
fn gpu_rank(
    solver: &MobiusSolver,
    b: &F64,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    transport: GridTransport,
    opts: &SolverOptions,
) -> Result<(SolveResult, F64), SolverError> {
    let opened = OpenedRank::open(solver, b, ext, &comm, transport)?;
    let device = |e: &dyn Display| opened.failed(e);
    let (ctx, b) = (&opened.ctx, &opened.b);
    let rank = opened.solve(solver);
    let (outcome, x_dev) = match solver.precision() {
        Precision::F64 => {
            let (high, _, b_dev) = rank.set_up::<Double>(false).map_err(|e| device(&e))?;
            let mut x_dev = b_dev.zeros_like();
            (run_on(ctx, &high, &high, &b_dev, &mut x_dev, opts), x_dev)
        }
        _ => {
            let (high, low, b_dev) = rank.set_up::<Single>(true).map_err(|e| device(&e))?;
            let low = low.expect("set_up(true) builds the iteration operator");
            let mut x_dev = b_dev.zeros_like();
            (run_on(ctx, &high, &low, &b_dev, &mut x_dev, opts), x_dev)
        }
    };
    if let Some(e) = ctx.take_error() {
        return Err(device(&e));
    }
    let result = outcome?;
    let x = x_dev.download(*b.layout()).map_err(|e| device(&e))?;
    Ok((result, x))
}

/// What a GPU rank opens before it iterates (collectives: every rank together): its
/// context, its links (halos filled), its part of b and its distribution through the
/// transport the ranks agree on.
struct OpenedRank {
    rank: usize,
    ctx: Arc<DeviceContext>,
    links: GaugeField<f64>,
    b: F64,
    dist: RankDistribution,
}

impl OpenedRank {
    fn open(
        solver: &MobiusSolver,
        b: &F64,
        ext: ExtendedLattice,
        comm: &SharedComm<ThreadComm>,
        transport: GridTransport,
    ) -> Result<Self, SolverError> {
        let rank = comm.rank();
        let (ctx, transports) = open_gpu_rank(ext, comm, transport).map_err(failed)?;
        let links = rank_links(solver, &ext, comm)?;
        let b = scatter(b, &ext, rank).map_err(|e| failed(format!("rank {rank}: {e}")))?;
        let dist = choose_transport(solver, &ctx, comm, transports, &links, &b)?;
        Ok(Self {
            rank,
            ctx,
            links,
            b,
            dist,
        })
    }

    /// What the rank's operators are built from.
    fn solve<'a>(&'a self, solver: &'a MobiusSolver) -> RankSolve<'a> {
        RankSolve {
            solver,
            ctx: &self.ctx,
            dist: &self.dist,
            links: &self.links,
            b: &self.b,
        }
    }

    /// A failure of this rank, named.
    fn failed(&self, e: &dyn Display) -> SolverError {
        failed(format!("rank {}: {e}", self.rank))
    }
}

/// The rank's distribution through the transport the ranks agree on (the tuner's
/// choice where `tuned`: each candidate's f32 M̂ timed).
fn choose_transport(
    solver: &MobiusSolver,
    ctx: &Arc<DeviceContext>,
    comm: &SharedComm<ThreadComm>,
    transports: RankTransports,
    links: &GaugeField<f64>,
    b: &F64,
) -> Result<RankDistribution, SolverError> {
    let (dist, _) = transports
        .choose(ctx, comm, "mobius", &mut |dist| {
            let candidate = RankSolve {
                solver,
                ctx,
                dist,
                links,
                b,
            };
            let op = candidate.operator::<Single>().map_err(|e| e.to_string())?;
            let x = DeviceVector::<Single>::upload(ctx, b).map_err(|e| e.to_string())?;
            time_applications(ctx, &op, &x)
        })
        .map_err(failed)?;
    Ok(dist)
}

/// One GPU rank of MSPCG: its GPU, transport and context, the device distributed M̂ in
/// f64 (and f32), this rank's blocks with the inner vectors in a rank-local context,
/// the outer PCG on M̂†M̂ on device vectors, this rank's part of x downloaded.
fn gpu_rank_mspcg(
    solver: &MobiusSolver,
    b: &F64,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    transport: GridTransport,
    opts: &SolverOptions,
    mspcg: &RankMspcg<'_>,
) -> Result<(RankPcg, F64), SolverError> {
    let opened = OpenedRank::open(solver, b, ext, &comm, transport)?;
    let device = |e: &dyn Display| opened.failed(e);
    let (ctx, b) = (&opened.ctx, &opened.b);
    let solve = opened.solve(solver);
    let (grid, block_links) = mspcg.grid(solver, ext, &comm)?;
    let precond = DevicePreconditioner::on_blocks(solver, ctx, mspcg.config, grid, &block_links)
        .map_err(|e| device(&e))?;
    let high = solve.operator::<Double>().map_err(|e| device(&e))?;
    // M̂†M̂: M̂ and M̂† per outer iteration.
    let (outcome, face_bytes) = match solver.precision() {
        Precision::F64 => {
            let faces = 2 * high.face_bytes_per_apply();
            (run_pcg(ctx, &high, &high, &precond, b, opts), faces)
        }
        _ => {
            let low = solve.operator::<Single>().map_err(|e| device(&e))?;
            let faces = 2 * low.face_bytes_per_apply();
            (run_pcg(ctx, &high, &low, &precond, b, opts), faces)
        }
    };
    if let Some(e) = ctx.take_error() {
        return Err(device(&e));
    }
    let (outcome, x) = outcome?;
    let rank = RankPcg {
        outcome,
        face_bytes_per_iteration: Some(face_bytes),
    };
    Ok((rank, x))
}

/// A rank's f64 M̂, its iteration M̂ (if any) and b on the device.
type RankOperators<P> = (
    DeviceOperator<Double>,
    Option<DeviceOperator<P>>,
    DeviceVector<Double>,
);

/// What one GPU rank's solve is set up from: the solver (parameters, parity, boundary),
/// the rank's context and distribution, its links (halos filled) and its part of b.
struct RankSolve<'a> {
    solver: &'a MobiusSolver,
    ctx: &'a std::sync::Arc<qdsl_runtime::solver::device::DeviceContext>,
    dist: &'a RankDistribution,
    links: &'a GaugeField<f64>,
    b: &'a F64,
}

impl RankSolve<'_> {
    /// The f64 M̂, the iteration M̂ of `P` if `with_low`, and b on the device, built while
    /// the vector kernels (BLAS, reductions, conversions) of f64 and `P` compile in other
    /// threads: every kernel of the iteration is loaded before it starts, each compiled
    /// once for all ranks (the JIT's per-artifact lock), so the solve's time is the
    /// iteration's.
    fn set_up<P: DevicePrecision>(&self, with_low: bool) -> Result<RankOperators<P>, String> {
        let (high, low) = crate::app::solve::set_up::<P, _, _, _>(
            self.ctx,
            self.b.layout(),
            |message| message,
            || self.operator::<Double>().map_err(|e| e.to_string()),
            || {
                with_low
                    .then(|| self.operator::<P>())
                    .transpose()
                    .map_err(|e| e.to_string())
            },
        )?;
        let b = DeviceVector::<Double>::upload(self.ctx, self.b).map_err(|e| e.to_string())?;
        Ok((high, low, b))
    }

    /// The rank's device M̂ on vectors of `P`.
    fn operator<P: DevicePrecision>(
        &self,
    ) -> Result<DeviceOperator<P>, qdsl_runtime::operator::device::OperatorError> {
        let blocks = self.solver.operator().blocks();
        DeviceOperator::<P>::mobius_distributed(
            self.ctx,
            self.dist,
            self.links,
            blocks.params().clone(),
            self.solver.operator().parity(),
            blocks.boundary(),
        )
    }
}

/// CGNR with `high` (solution, true residual) and `low` (iteration), after the solve's
/// set-up ([`prepare_solve`]: the vector kernels loaded, each operator applied once each
/// way; first-use compiles and tuning count as set-up).
fn run_on<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &DeviceOperator<P>,
    b: &DeviceVector<Double>,
    x: &mut DeviceVector<Double>,
    opts: &SolverOptions,
) -> Result<SolveResult, SolverError> {
    prepare_solve(ctx, high, low, b)?;
    let (result, _) = solve_fields::<_, DeviceVector<P>>(high, low, SolverKind::Cgnr, b, x, opts)?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::mobius::tests::sample_l4;
    use crate::app::mobius::MobiusSolution;
    use crate::app::mobius_mspcg::{solve_mspcg, MspcgSolution};
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_runtime::linear::SolverField;
    use qdsl_runtime::operator::mobius::MobiusParams;

    /// Ls = 4, b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.3, antiperiodic t, tolerance 1e-8.
    fn solver(u: &GaugeField<f64>, precision: Precision) -> MobiusSolver {
        let params = MobiusParams::mobius(4, 1.5, 0.5, 1.8, 0.3).unwrap();
        let opts = SolverOptions::with_tolerance(1e-8);
        MobiusSolver::new(u, params, TimeBoundary::Antiperiodic, precision, opts).unwrap()
    }

    fn grid(text: &str) -> ProcessGrid {
        ProcessGrid::parse(text).unwrap()
    }

    /// The decomposed solve reached one rank's iterations (±1), a 5D residual below ten
    /// times the tolerance and the same ψ (to 1e-6 relative: the roundings differ only in the
    /// order of the global sums).
    fn assert_same_solve(d: &MobiusSolution, s: &MobiusSolution, what: &str) {
        assert!(d.result.is_converged() && s.result.is_converged(), "{what}");
        assert!(
            d.result.iterations.abs_diff(s.result.iterations) <= 1,
            "{what}: {} iterations decomposed, {} on one rank",
            d.result.iterations,
            s.result.iterations
        );
        assert!(d.residual < 1e-7, "{what}: ‖η − Dψ‖/‖η‖ = {:e}", d.residual);
        let mut diff = d.psi.clone();
        SolverField::axpy(&mut diff, qdsl_core::Complex::new(-1.0, 0.0), &s.psi).unwrap();
        let rel = (diff.norm_sqr() / s.psi.norm_sqr()).sqrt();
        assert!(rel < 1e-6, "{what}: ψ differs by {rel:e}");
        eprintln!(
            "{what}: {} / {} iterations, ‖Δψ‖/‖ψ‖ = {rel:.1e}",
            d.result.iterations, s.result.iterations
        );
    }

    /// `qdsl solve --action mobius --grid` on CPU threads: the 5D solve of MILC's 4⁴
    /// configuration (CGNR) in f64 on 2 ranks (t cut: the antiperiodic sign on the
    /// faces) and in f64–f32 on 4 (x and t cut) reaches one rank's iterations (±1) and
    /// solution.
    #[test]
    fn decomposed_mobius_solves_match_one_rank() {
        let u = sample_l4();
        for (precision, g) in [(Precision::F64, "1,1,1,2"), (Precision::F32, "2,1,1,2")] {
            let one = solver(&u, precision);
            let eta = ColourSpinorField::gaussian(one.layout(), 7);
            let single = one.solve(&eta).unwrap();
            let on = MobiusGrid::new(grid(g), &u, &SolveBackend::Cpu, precision).unwrap();
            assert_eq!(on.ranks(), GridRanks::Cpu);
            assert_eq!(on.extended().decomposition().size(), grid(g).size());
            let d = solver(&u, precision).on_grid(on).solve(&eta).unwrap();
            assert_same_solve(&d, &single, &format!("{} --grid {g}", precision.name()));
        }
    }

    /// The MSPCG configuration of the decomposed tests: `blocks`, 4 inner f32 iterations
    /// (swept M5⁻¹), the snake terms, FCG(4).
    fn mspcg(blocks: [usize; 4], inner_precision: Precision) -> MspcgConfig {
        MspcgConfig {
            blocks,
            inner: 4,
            snake: qdsl_runtime::solver::mspcg::Snake::Include,
            inner_precision,
            m5inv: qdsl_core::dsl::fused5d::M5invMode::Sweep,
            directions: 4,
        }
    }

    /// The decomposed MSPCG reached the single-process MSPCG's outer iterations (±1), a
    /// 5D residual below ten times the tolerance and the same ψ (to 1e-6 relative), with
    /// no breakdown.
    fn assert_same_mspcg(d: &MspcgSolution, s: &MspcgSolution, what: &str) {
        assert!(
            d.pcg.breakdown.is_none() && s.pcg.breakdown.is_none(),
            "{what}"
        );
        assert_same_solve(&d.solution, &s.solution, what);
    }

    /// `qdsl solve --action mobius --solver mspcg --grid` on CPU threads: MILC's 4⁴
    /// configuration, blocks 1,1,2,2 (f64 outer) on grids 1,1,1,2 (two blocks per rank,
    /// the pads' links across the antiperiodic boundary from the neighbour) and 1,1,2,2
    /// (one block per rank), blocks 2,1,1,2 (f64–f32 outer) on 2,1,1,2 (x cut by the
    /// grid, local x extent 2): the decomposed solve is the single-process MSPCG's.
    #[test]
    fn decomposed_mspcg_solves_match_one_process() {
        let u = sample_l4();
        for (precision, blocks, grids) in [
            (Precision::F64, [1, 1, 2, 2], &["1,1,1,2", "1,1,2,2"][..]),
            (Precision::F32, [2, 1, 1, 2], &["2,1,1,2"][..]),
        ] {
            let one = solver(&u, precision);
            let eta = ColourSpinorField::gaussian(one.layout(), 7);
            let config = mspcg(blocks, Precision::F32);
            let single = solve_mspcg(&one, &eta, &config).unwrap();
            for g in grids {
                let on = MobiusGrid::new(grid(g), &u, &SolveBackend::Cpu, precision).unwrap();
                let d = solve_mspcg(&solver(&u, precision).on_grid(on), &eta, &config).unwrap();
                let what = format!("MSPCG {} blocks {blocks:?} --grid {g}", precision.name());
                assert_same_mspcg(&d, &single, &what);
            }
        }
    }

    /// Blocks that do not fall into whole blocks per rank are refused naming both.
    #[test]
    fn mspcg_blocks_must_fall_whole_onto_the_ranks() {
        let u = sample_l4();
        let on = MobiusGrid::new(grid("1,1,2,2"), &u, &SolveBackend::Cpu, Precision::F64).unwrap();
        let e = on.rank_blocks([1, 1, 1, 2]).unwrap_err();
        assert!(e.contains("--blocks 1,1,1,2 --grid 1,1,2,2"), "{e}");
        assert_eq!(on.rank_blocks([2, 1, 2, 4]).unwrap(), [2, 1, 1, 2]);
        let s = solver(&u, Precision::F64).on_grid(on);
        let eta = ColourSpinorField::gaussian(s.layout(), 7);
        let e = solve_mspcg(&s, &eta, &mspcg([1, 1, 1, 2], Precision::F32)).unwrap_err();
        assert!(e.contains("whole blocks"), "{e}");
    }

    /// On 2 GPUs (`QDSL_GRID_TRANSPORT` as in the CGNR test, or `host` on one GPU): the
    /// decomposed device MSPCG (f64–f32 outer; inner f32 and fixed16) on grids 1,1,1,2
    /// and 2,1,1,1 reaches the single-GPU MSPCG's outer iterations (±1) and solution.
    #[test]
    #[ignore = "needs 2 CUDA GPUs (or QDSL_GRID_TRANSPORT=host): run with --include-ignored on a GPU machine"]
    fn multi_gpu_decomposed_device_mspcg_solves_match_one_gpu() {
        let (ctx, _dir) = qdsl_runtime::testing::context();
        let u = sample_l4();
        let backend = SolveBackend::Cuda(std::sync::Arc::clone(&ctx));
        let precision = Precision::F32;
        let one = solver(&u, precision).on_device(&ctx).unwrap();
        let eta = ColourSpinorField::gaussian(one.layout(), 7);
        for inner in [Precision::F32, Precision::Fixed16] {
            let config = mspcg([2, 1, 1, 2], inner);
            let single = solve_mspcg(&one, &eta, &config).unwrap();
            for g in ["1,1,1,2", "2,1,1,1"] {
                let on = MobiusGrid::new(grid(g), &u, &backend, precision).unwrap();
                let d = solve_mspcg(&solver(&u, precision).on_grid(on), &eta, &config).unwrap();
                let what = format!("GPU MSPCG inner {} --grid {g}", inner.name());
                assert_same_mspcg(&d, &single, &what);
            }
        }
    }

    /// A grid that does not divide the lattice and a narrow iteration format are refused
    /// naming the value.
    #[test]
    fn bad_grids_and_precisions_are_refused_naming_the_value() {
        let u = GaugeField::<f64>::unit(qdsl_core::lattice::Lattice::new([4; 4]).unwrap());
        let e =
            MobiusGrid::new(grid("1,1,1,3"), &u, &SolveBackend::Cpu, Precision::F64).unwrap_err();
        assert!(e.contains("1,1,1,3"), "{e}");
        let e = MobiusGrid::new(grid("1,1,1,2"), &u, &SolveBackend::Cpu, Precision::Fixed16)
            .unwrap_err();
        assert!(e.contains("fixed16") && e.contains("f64 or f32"), "{e}");
    }

    /// On 2 GPUs (`QDSL_GRID_TRANSPORT`: `tuned` by default, NCCL untuned, libnccl.so.2
    /// from `QDSL_NCCL_LIB`; `peer`; or `host`, both ranks on GPU 0): the decomposed device
    /// solve (f64 and f64–f32) reaches the single-GPU solve's iterations (±1) and solution.
    #[test]
    #[ignore = "needs 2 CUDA GPUs (or QDSL_GRID_TRANSPORT=host): run with --include-ignored on a GPU machine"]
    fn multi_gpu_decomposed_device_mobius_solves_match_one_gpu() {
        let (ctx, _dir) = qdsl_runtime::testing::context();
        let u = sample_l4();
        let backend = SolveBackend::Cuda(std::sync::Arc::clone(&ctx));
        for precision in [Precision::F64, Precision::F32] {
            let one = solver(&u, precision).on_device(&ctx).unwrap();
            let eta = ColourSpinorField::gaussian(one.layout(), 7);
            let single = one.solve(&eta).unwrap();
            for g in ["1,1,1,2", "2,1,1,1"] {
                let on = MobiusGrid::new(grid(g), &u, &backend, precision).unwrap();
                assert!(matches!(on.ranks(), GridRanks::Gpu(_)), "{:?}", on.ranks());
                let d = solver(&u, precision).on_grid(on).solve(&eta).unwrap();
                assert_same_solve(&d, &single, &format!("GPU {} --grid {g}", precision.name()));
            }
        }
    }
}
