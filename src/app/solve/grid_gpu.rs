//! `qdsl solve --grid Px,Py,Pz,Pt` on GPUs: every rank a thread of this process with its
//! own GPU context, the distributed device operators
//! ([`DeviceOperator::wilson_distributed`] and its clover and staggered siblings: faces
//! packed by generated kernels, exchanged, the interior overlapping the exchange) and
//! device vectors whose norms and dot products are rank-ordered global sums
//! ([`DeviceContext::distributed`]); the solver code is the single-GPU one.
//!
//! | transport ([`GRID_TRANSPORT_VAR`]) | ranks |
//! |---|---|
//! | `tuned` (the default) | rank r on GPU r; NCCL or peer copies, whichever the tuner measured faster on the run's operator ([`super::transport_choice`]; with tuning off, the grid runs' default, NCCL where it loads) |
//! | `peer` | rank r on GPU r, faces copied straight into the receiver's buffer (`cuMemcpyPeerAsync` on a copy stream, ordered by events: [`PeerTransport`]) |
//! | `nccl` | rank r on GPU r, NCCL on the device buffers: needs as many GPUs as ranks and libnccl.so.2 (`QDSL_NCCL_LIB`) |
//! | `host` | every rank on GPU 0, faces through the host (several ranks on ONE GPU: a correctness check, not a speed-up) |
//!
//! Launches are not tuned (default launch configurations) unless `QDSL_TUNE` asks for it:
//! then each rank tunes its own launches in its warm-up (the ranks' tuners share the
//! cache file through its lock; a rank's sub-box launches need no other rank).

use super::grid::check_gpu_count;
use super::system::{HostSystem, PARITY};
use super::Precision;
use super::{solve_fields, Setup, SolveConfig, SolveError, SolveReport};
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField};
use qdsl_core::lattice::{ExtendedLattice, Lattice, ProcessGrid};
use qdsl_runtime::comm::nccl::NcclLibrary;
use qdsl_runtime::comm::{run_ranks, CommConfig, ThreadComm};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::distributed::device::{
    global_sum, peer_access_between, DeviceTransport, HostStaged, NcclTransport, PeerTransport,
    RankDistribution, SharedTransport, EAGER_APPLICATIONS,
};
use qdsl_runtime::distributed::{fill_link_halos, unit_clover_on_halo_sites, SharedComm};
use qdsl_runtime::operator::cpu::StaggeredLinks;
use qdsl_runtime::operator::device::codegen_hash;
use qdsl_runtime::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double, Single,
};
use qdsl_runtime::solver::{LinearOperator, SolveResult, SolverField, SolverOptions};
use qdsl_runtime::tune::{default_path, TuneKey, TunePolicy, Tuner};
use std::fmt::Display;
use std::sync::Arc;

/// The environment variable choosing how the ranks of a GPU `--grid` solve exchange
/// faces: `nccl` (default), `peer` or `host` (module docs).
pub const GRID_TRANSPORT_VAR: &str = "QDSL_GRID_TRANSPORT";

/// The environment variable turning off (`0`) the CUDA graphs of NCCL ranks' hops
/// ([`RankDistribution::graphs`]), on by default.
pub const GRAPHS_VAR: &str = "QDSL_GRAPHS";

/// Whether NCCL ranks replay their hops from CUDA graphs: unless [`GRAPHS_VAR`] is `0`
/// (any other value, or none, is on).
pub fn graphs_from_env() -> bool {
    std::env::var(GRAPHS_VAR).map_or(true, |v| v.trim() != "0")
}

/// How the ranks of a GPU `--grid` solve exchange faces (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridTransport {
    /// Rank r on GPU r, NCCL or direct peer copies as the tuner chose
    /// ([`super::transport_choice`]).
    Tuned,
    /// Rank r on GPU r, direct peer copies.
    Peer,
    /// Rank r on GPU r, NCCL.
    Nccl,
    /// Every rank on GPU 0, faces through the host.
    HostOnOneGpu,
}

impl GridTransport {
    /// The transport named by `text` (`peer`, `nccl`, `host`), or an error naming the value.
    pub fn parse(text: &str) -> Result<Self, SolveError> {
        match text.trim() {
            "tuned" => Ok(Self::Tuned),
            "peer" => Ok(Self::Peer),
            "nccl" => Ok(Self::Nccl),
            "host" => Ok(Self::HostOnOneGpu),
            other => Err(SolveError::Grid(format!(
                "{GRID_TRANSPORT_VAR}={other:?}: expected `tuned` (one rank per GPU, NCCL \
                 or direct copies as the tuner chooses), `peer` (one rank per GPU, direct \
                 copies), `nccl` (one rank per GPU, NCCL) or `host` (every rank on GPU 0)"
            ))),
        }
    }

    /// The transport of [`GRID_TRANSPORT_VAR`]; where unset, `tuned` (whose untuned
    /// default is NCCL: measured faster than the direct peer copies on 2 × H100, a 3 MiB
    /// face exchange in 101 µs against 240 µs, BENCHMARKS.md 2026-11-27 (f)).
    pub fn from_env() -> Result<Self, SolveError> {
        match std::env::var(GRID_TRANSPORT_VAR) {
            Ok(t) => Self::parse(&t),
            Err(_) => Ok(Self::Tuned),
        }
    }

    /// The transports a run with this one may use, the default first: for `tuned`,
    /// NCCL where libnccl loads and peer copies where every pair of the GPUs of `size`
    /// ranks has peer access; otherwise itself.
    pub fn candidates(self, size: usize) -> Vec<GridTransport> {
        if self != Self::Tuned {
            return vec![self];
        }
        let mut out = Vec::new();
        if NcclLibrary::get().is_ok() {
            out.push(Self::Nccl);
        }
        let ordinals: Vec<usize> = (0..size).collect();
        if peer_access_between(&ordinals).unwrap_or(false) {
            out.push(Self::Peer);
        }
        out
    }

    /// The GPU of `rank`.
    pub fn ordinal(self, rank: usize) -> usize {
        match self {
            Self::Tuned | Self::Peer | Self::Nccl => rank,
            Self::HostOnOneGpu => 0,
        }
    }

    /// The name [`Self::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tuned => "tuned",
            Self::Peer => "peer",
            Self::Nccl => "nccl",
            Self::HostOnOneGpu => "host",
        }
    }

    /// The ranks and the transport, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Tuned => "one GPU each, NCCL or direct peer copies as tuned",
            Self::Peer => "one GPU each, direct peer copies",
            Self::Nccl => "one GPU each, NCCL",
            Self::HostOnOneGpu => "all on GPU 0, faces through the host",
        }
    }

    /// This rank's transport on `gpu` (its [`Self::ordinal`]): the ranks of `comm`'s
    /// group (`size` of them) call it together (NCCL's unique id is shared through
    /// `comm`); the exchange runs on a stream of the highest priority.
    pub fn open(
        self,
        gpu: &Gpu,
        comm: &SharedComm<ThreadComm>,
        size: usize,
        config: CommConfig,
    ) -> Result<Box<dyn DeviceTransport + Send>, String> {
        Ok(match self {
            Self::Tuned => {
                return Err(format!(
                    "{GRID_TRANSPORT_VAR}=tuned names a choice, not a transport: open the \
                     candidates ({}) and let the tuner choose (open_gpu_rank)",
                    Self::Tuned.describe()
                ))
            }
            Self::Peer => Box::new(PeerTransport::new(comm.clone())),
            Self::Nccl => Box::new(
                NcclTransport::among(gpu, &mut *comm.lock(), size, config)
                    .map_err(|e| e.to_string())?,
            ),
            Self::HostOnOneGpu => Box::new(HostStaged::new(comm.clone())),
        })
    }
}

/// The checks of a GPU `--grid` solve with `transport`: a GPU at all; for NCCL one GPU
/// per rank ([`check_gpu_count`]) and the NCCL library, each refusal naming the value.
pub fn check_gpu_grid(grid: ProcessGrid, transport: GridTransport) -> Result<(), SolveError> {
    let gpus = qdsl_runtime::backend::gpu_count().map_err(SolveError::Backend)?;
    if gpus == 0 {
        return Err(SolveError::Grid(format!(
            "--grid {grid} on GPUs: no GPU found"
        )));
    }
    if transport != GridTransport::HostOnOneGpu {
        check_gpu_count(grid, gpus)?;
    }
    if transport == GridTransport::Tuned && transport.candidates(grid.size()).is_empty() {
        let nccl = NcclLibrary::get()
            .err()
            .map_or(String::new(), |e| format!(" ({e})"));
        return Err(SolveError::Grid(format!(
            "--grid {grid} on GPUs: neither NCCL{nccl} nor peer access between the GPUs \
             (or set {GRID_TRANSPORT_VAR}=host to run every rank on GPU 0)"
        )));
    }
    if transport == GridTransport::Nccl {
        NcclLibrary::get().map_err(|e| {
            SolveError::Grid(format!(
                "--grid {grid} on GPUs: {e} (or set {GRID_TRANSPORT_VAR}=host to run every \
                 rank on GPU 0)"
            ))
        })?;
    }
    Ok(())
}

impl Setup {
    /// Solves M̂ x = b on the ranks of `ext` (checked by [`super::grid`]'s checks and
    /// [`check_gpu_grid`]) on GPUs, and reports like the CPU decomposed solve.
    pub(super) fn solve_decomposed_on_gpus(
        &self,
        config: &SolveConfig,
        lattice: Lattice,
        ext: ExtendedLattice,
        b: ColourSpinorField<f64>,
        transport: GridTransport,
    ) -> Result<SolveReport, SolveError> {
        let grid = *ext.decomposition().grid();
        let comm_config = CommConfig::from_env().map_err(|e| SolveError::Grid(e.to_string()))?;
        let ranks = run_ranks(grid.size(), comm_config, |comm| {
            let comm = SharedComm::new(comm);
            let mut opts = self.opts.clone();
            if comm.rank() != 0 {
                opts.progress = None;
            }
            gpu_rank(&self.system, config, &b, ext, comm, transport, &opts)
        });
        let how = transport.describe();
        let backend = format!(
            "CUDA, {} ranks (grid {grid}, local {}, {how})",
            grid.size(),
            ext.local()
        );
        self.report_decomposed(config, lattice, ext, b, ranks, backend)
    }
}

/// One rank's links, clover term and parameters on its extended lattice.
enum RankSystem {
    Wilson {
        links: GaugeField<f64>,
        kappa: f64,
        boundary: qdsl_core::dsl::variant::TimeBoundary,
    },
    Staggered {
        links: StaggeredLinks<f64>,
        mass: f64,
    },
    Clover {
        links: GaugeField<f64>,
        clover: CloverField<f64>,
        mu: f64,
        boundary: qdsl_core::dsl::variant::TimeBoundary,
    },
}

impl RankSystem {
    /// This rank's part of `system`: links scattered with their halos filled (a
    /// collective), the clover term scattered with a unit term on the halo sites.
    fn of(
        system: &HostSystem,
        ext: &ExtendedLattice,
        comm: &SharedComm<ThreadComm>,
    ) -> Result<Self, SolveError> {
        let rank = comm.rank();
        let grid = |e: &dyn Display| SolveError::Grid(format!("rank {rank}: {e}"));
        let links = |u: &GaugeField<f64>| -> Result<GaugeField<f64>, SolveError> {
            let mut part = scatter(u, ext, rank).map_err(|e| grid(&e))?;
            fill_link_halos(comm, &mut part, ext).map_err(|e| grid(&e))?;
            Ok(part)
        };
        Ok(match system {
            HostSystem::Wilson {
                gauge,
                kappa,
                boundary,
            } => Self::Wilson {
                links: links(gauge)?,
                kappa: *kappa,
                boundary: *boundary,
            },
            HostSystem::Staggered { links: l, mass } => Self::Staggered {
                links: match l {
                    StaggeredLinks::Naive(u) => StaggeredLinks::Naive(links(u)?),
                    StaggeredLinks::Improved { fat, long } => StaggeredLinks::Improved {
                        fat: links(fat)?,
                        long: links(long)?,
                    },
                },
                mass: *mass,
            },
            HostSystem::Clover {
                gauge,
                clover,
                mu,
                boundary,
                ..
            } => {
                let mut a = scatter(clover, ext, rank).map_err(|e| grid(&e))?;
                unit_clover_on_halo_sites(&mut a, ext);
                Self::Clover {
                    links: links(gauge)?,
                    clover: a,
                    mu: *mu,
                    boundary: *boundary,
                }
            }
        })
    }

    /// The operator's name (the transport choice's tune key).
    fn name(&self) -> &'static str {
        match self {
            Self::Wilson { .. } => "wilson",
            Self::Staggered { .. } => "staggered",
            Self::Clover { .. } => "clover",
        }
    }

    /// The distributed device operator on vectors of `P`.
    fn operator<P: DevicePrecision>(
        &self,
        ctx: &Arc<DeviceContext>,
        rank: &RankDistribution,
    ) -> Result<DeviceOperator<P>, SolveError> {
        match self {
            Self::Wilson {
                links,
                kappa,
                boundary,
            } => DeviceOperator::wilson_distributed(ctx, rank, links, *kappa, PARITY, *boundary),
            Self::Staggered { links, mass } => {
                DeviceOperator::staggered_distributed(ctx, rank, links, *mass, PARITY)
            }
            Self::Clover {
                links,
                clover,
                mu,
                boundary,
            } => DeviceOperator::clover_distributed(
                ctx,
                rank,
                (links, clover),
                *mu,
                PARITY,
                *boundary,
            ),
        }
        .map_err(|e| SolveError::Device(e.to_string()))
    }
}

/// One rank's GPU (its [`GridTransport::ordinal`]), its transports (opened with the
/// other ranks of `comm`'s group: a collective; for `tuned` each candidate) and its
/// device context, whose global sums go through the first; untuned launches (every
/// rank's tuner would share one cache file) unless `QDSL_TUNE` asks. GPUs of NCCL
/// candidates are opened with streams of their own, and NCCL ranks replay their hops
/// from CUDA graphs ([`graphs_from_env`]). [`RankTransports::choose`] then gives the
/// distribution over the one transport, or over the tuner's choice.
pub fn open_gpu_rank(
    ext: ExtendedLattice,
    comm: &SharedComm<ThreadComm>,
    transport: GridTransport,
) -> Result<(Arc<DeviceContext>, RankTransports), SolveError> {
    let rank = comm.rank();
    let device = |e: &dyn Display| SolveError::Device(format!("rank {rank}: {e}"));
    let size = ext.decomposition().size();
    let candidates = transport.candidates(size);
    let graphs = candidates.contains(&GridTransport::Nccl) && graphs_from_env();
    let gpu = match graphs {
        true => Gpu::open_capturable(transport.ordinal(rank)),
        false => Gpu::open(transport.ordinal(rank)),
    }
    .map_err(|e| device(&e))?;
    let comm_config = CommConfig::from_env().map_err(|e| device(&e))?;
    let mut opened = Vec::new();
    for t in candidates {
        let shared: SharedTransport = Arc::new(std::sync::Mutex::new(
            t.open(&gpu, comm, size, comm_config)
                .map_err(|e| device(&e))?,
        ));
        opened.push((t, shared));
    }
    let Some((_, first)) = opened.first() else {
        return Err(device(&format!(
            "{GRID_TRANSPORT_VAR}={}: no transport can run here",
            transport.name()
        )));
    };
    let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()))
        .with_default_policy(TunePolicy::Off)
        .with_progress(false);
    let ctx = DeviceContext::distributed(gpu, tuner, global_sum(Arc::clone(first)))
        .map_err(|e| device(&e))?;
    Ok((
        ctx,
        RankTransports {
            ext,
            candidates: opened,
            graphs,
        },
    ))
}

/// A rank's opened transports: one, or the candidates of the tuned transport
/// ([`open_gpu_rank`]).
pub struct RankTransports {
    ext: ExtendedLattice,
    candidates: Vec<(GridTransport, SharedTransport)>,
    graphs: bool,
}

impl RankTransports {
    /// The distribution over the one transport, or over the one the ranks agree on
    /// ([`super::transport_choice`]): rank 0's tuner answers from its cache or each
    /// candidate is timed through `time` (µs per application of the run's operator on
    /// the candidate's distribution: [`time_applications`]); `operator` names the
    /// operator in the tune key. Every rank calls it together. Returns the transport
    /// used with the distribution.
    pub fn choose(
        self,
        ctx: &Arc<DeviceContext>,
        comm: &SharedComm<ThreadComm>,
        operator: &str,
        time: &mut dyn FnMut(&RankDistribution) -> Result<f64, String>,
    ) -> Result<(RankDistribution, GridTransport), SolveError> {
        let dist = |(t, shared): &(GridTransport, SharedTransport)| {
            let mut d = RankDistribution::new(self.ext, Arc::clone(shared));
            d.graphs = self.graphs && *t == GridTransport::Nccl;
            d
        };
        let names: Vec<&str> = self.candidates.iter().map(|(t, _)| t.name()).collect();
        let gpu = ctx.gpu().fingerprint(&codegen_hash());
        let key = TuneKey::new(
            super::transport_choice::TRANSPORT_KERNEL,
            qdsl_core::dsl::variant::fnv1a(operator.as_bytes()),
            0,
            self.ext.local().volume(),
            &format!(
                "grid={} local={} op={operator}",
                self.ext.decomposition().grid(),
                self.ext.local()
            ),
            &format!("{} {}", gpu.gpu_name, gpu.sm),
        );
        let choice = super::transport_choice::agree_on_transport(
            comm,
            ctx.tuner(),
            &key,
            &names,
            &mut |i| time(&dist(&self.candidates[i])),
        )
        .map_err(|e| SolveError::Grid(format!("rank {}: {e}", comm.rank())))?;
        if comm.rank() == 0 && self.candidates.len() > 1 {
            let how = match (choice.time_us, choice.from_cache) {
                (Some(t), true) => format!("{t:.1} µs per application, from the tune cache"),
                (Some(t), false) => format!("{t:.1} µs per application, timed"),
                (None, _) => "untuned".to_string(),
            };
            eprintln!(
                "qdsl: grid transport: {} ({how}; candidates {})",
                names[choice.index],
                names.join(", ")
            );
        }
        let chosen = &self.candidates[choice.index];
        Ok((dist(chosen), chosen.0))
    }
}

/// µs per application of `op` to `x`: warmed up (first-use JIT, and the applications a
/// replayed hop runs eagerly before its capture), then [`TIMED_APPLICATIONS`] timed to
/// the GPU's completion.
///
/// [`TIMED_APPLICATIONS`]: super::transport_choice::TIMED_APPLICATIONS
pub fn time_applications<F: SolverField>(
    ctx: &DeviceContext,
    op: &(dyn LinearOperator<F> + Send + Sync),
    x: &F,
) -> Result<f64, String> {
    let mut y = x.zeros_like();
    let stream = ctx.gpu().backend().stream();
    for _ in 0..EAGER_APPLICATIONS + 2 {
        op.apply(&mut y, x).map_err(|e| e.to_string())?;
    }
    stream.synchronize().map_err(|e| e.to_string())?;
    let runs = super::transport_choice::TIMED_APPLICATIONS;
    let start = std::time::Instant::now();
    for _ in 0..runs {
        op.apply(&mut y, x).map_err(|e| e.to_string())?;
    }
    stream.synchronize().map_err(|e| e.to_string())?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / runs as f64)
}

/// One rank: its GPU, transport and context, its operators, its part of b, the solve;
/// returns the result and its part of x.
fn gpu_rank(
    system: &HostSystem,
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    ext: ExtendedLattice,
    comm: SharedComm<ThreadComm>,
    transport: GridTransport,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let rank = comm.rank();
    let device = |e: &dyn Display| SolveError::Device(format!("rank {rank}: {e}"));
    let (ctx, transports) = open_gpu_rank(ext, &comm, transport)?;
    let local = RankSystem::of(system, &ext, &comm)?;
    let b = scatter(b, &ext, rank).map_err(|e| device(&e))?;
    let (dist, _) = transports.choose(&ctx, &comm, local.name(), &mut |dist| {
        let op = local
            .operator::<Single>(&ctx, dist)
            .map_err(|e| e.to_string())?;
        let x = DeviceVector::<Single>::upload(&ctx, &b).map_err(|e| e.to_string())?;
        time_applications(&ctx, &op, &x)
    })?;
    let high = local.operator::<Double>(&ctx, &dist)?;
    match config.precision {
        Precision::F64 => run::<Double>(&ctx, &high, &high, config, &b, opts),
        Precision::F32 => {
            let low = local.operator::<Single>(&ctx, &dist)?;
            run::<Single>(&ctx, &high, &low, config, &b, opts)
        }
        p => Err(SolveError::Grid(format!(
            "--grid iterates in f64 or f32, not {}",
            p.describe()
        ))),
    }
}

/// The rank's solve iterating in `P` after its set-up ([`super::cuda::prepare_solve`]: the
/// vector kernels loaded, each operator applied once each way; first-use JIT is set-up);
/// the solution part downloaded. A failure recorded in the context is an error.
fn run<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &(dyn LinearOperator<DeviceVector<P>> + Send + Sync),
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let device = |e: qdsl_runtime::device::DeviceError| SolveError::Device(e.to_string());
    let b_dev = DeviceVector::<Double>::upload(ctx, b).map_err(device)?;
    let mut x_dev = b_dev.zeros_like();
    super::cuda::prepare_solve(ctx, high, low, &b_dev)?;
    let outcome =
        solve_fields::<_, DeviceVector<P>>(high, low, config.solver, &b_dev, &mut x_dev, opts);
    if let Some(e) = ctx.take_error() {
        return Err(SolveError::Device(e));
    }
    let (result, _) = outcome?;
    let x = x_dev.download(*b.layout()).map_err(device)?;
    Ok((result, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transport variable accepts `tuned`, `peer`, `nccl` and `host` and names a
    /// wrong value.
    #[test]
    fn transport_names_are_parsed_and_bad_ones_named() {
        assert_eq!(GridTransport::parse("nccl").unwrap(), GridTransport::Nccl);
        assert_eq!(GridTransport::parse("peer").unwrap(), GridTransport::Peer);
        assert_eq!(GridTransport::Peer.ordinal(2), 2);
        assert_eq!(GridTransport::parse("tuned").unwrap(), GridTransport::Tuned);
        assert_eq!(GridTransport::Tuned.ordinal(1), 1);
        for t in [
            GridTransport::Tuned,
            GridTransport::Peer,
            GridTransport::Nccl,
            GridTransport::HostOnOneGpu,
        ] {
            assert_eq!(GridTransport::parse(t.name()).unwrap(), t);
        }
        assert_eq!(
            GridTransport::parse(" host ").unwrap(),
            GridTransport::HostOnOneGpu
        );
        let e = GridTransport::parse("mpi").unwrap_err().to_string();
        assert!(
            e.contains("QDSL_GRID_TRANSPORT=\"mpi\"")
                && e.contains("`host`")
                && e.contains("`peer`")
                && e.contains("`tuned`"),
            "{e}"
        );
        assert_eq!(GridTransport::Nccl.ordinal(3), 3);
        assert_eq!(GridTransport::HostOnOneGpu.ordinal(3), 0);
    }
}
