//! `qdsl bench --grid Px,Py,Pz,Pt [--grid …] [--weak | --strong-and-weak] [--transports
//! peer,nccl] [--sizes 32] [--lattice 48,48,48,96]`: strong and weak scaling of the
//! distributed device hops (Wilson hop f32 and fixed16 recon 12, faces whole or
//! spin-projected; improved staggered hop f32) over the ranks of each process grid, for
//! every grid, lattice and transport in one call — rank r on
//! GPU r (direct peer copies or NCCL), or with `host` every rank on GPU 0 (a correctness
//! run: the times then measure the host path).
//!
//! Strong scaling keeps each lattice global; weak scaling makes it every rank's local
//! lattice (the global one is the grid times it).
//!
//! Per case, one parity, random links and source:
//!
//! * `1 GPU`: the whole-parity hop on GPU 0 over the global lattice (strong scaling) or
//!   over one rank's local lattice (weak);
//! * `overlap` / `grouped` / `serial`: one distributed application (packs, exchange,
//!   interior, exteriors, the transport's wait included), the median over the timed
//!   repetitions, the slowest rank — interior during the exchange with each direction's
//!   exteriors waiting only for its faces (NCCL), the same with one exchange group
//!   before all exteriors, and no overlap;
//! * `graph`: the overlapped per-direction application captured once into a CUDA graph
//!   and replayed ([`DeviceDistributedHop::with_graphs`]; NCCL only, the ranks' GPUs
//!   opened with streams of their own; `—` elsewhere): one graph launch per application
//!   instead of ~10 launches and NCCL calls; `capt. ms`: the capture and instantiation;
//! * `pack`, `exchange` (post, complete and unpacks), `interior`, `exterior`: the same
//!   application with every phase synchronised ([`DeviceDistributedHop::set_timing`]),
//!   mean per application, the slowest rank;
//! * `GPU: packed`, `interior`, `delivered`, `done`: the overlapped per-direction
//!   application's own schedule on the GPU (timing events, nothing synchronised; µs
//!   after the GPU reached the first pack; [`DeviceDistributedHop::set_timeline`]):
//!   when the packs, the interior, the last delivery (NCCL's stream) and the last
//!   exterior were done — `overlap` minus `done` is the host's share (launches, NCCL
//!   calls, waits); the median over the timed repetitions, the slowest rank;
//! * GFLOP/s per GPU = flops per site × output sites per rank / time (overlap on);
//!   efficiency = T₁ / (P · T_P) (strong) or T₁ / T_P (weak), of `overlap` and of
//!   `graph`.

use crate::app::solve::GridTransport;
use qdsl_core::dsl::halo_spin::HaloProjections;
use qdsl_core::dsl::variant::{OutputSites, Recon, Region, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::decomposition::{NAIK_DEPTH, ONE_HOP_DEPTH};
use qdsl_core::lattice::{
    BoundaryConditions, Decomposition, ExtendedLattice, Lattice, Parity, ProcessGrid,
};
use qdsl_kernels::{ImprovedStaggeredHop, WilsonHop};
use qdsl_runtime::comm::{run_ranks, CommConfig};
use qdsl_runtime::device::{DeviceField, Gpu};
use qdsl_runtime::distributed::device::{
    DeviceDistributedHop, DeviceTransport, PhaseTimes, EAGER_APPLICATIONS,
};
use qdsl_runtime::distributed::{fill_link_halos, SharedComm};
use qdsl_runtime::operator::device::{device_spinor, DeviceStencil, StencilArgs, StencilLaunch};
use qdsl_runtime::tune::LaunchConfig;
use std::time::{Duration, Instant};

/// What a Wilson hop's faces carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Faces {
    /// Whole sites (24 reals).
    Whole,
    /// Spin-projected half spinors (12 reals: [`qdsl_core::dsl::halo_spin`]).
    Projected,
}

/// One case of the scaling bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalingCase {
    /// The Wilson hop in a spinor format (recon 12 below f64), faces in that format,
    /// whole or spin-projected.
    WilsonHop(StorageFormat, Faces),
    /// The improved staggered hop (fat and long links f32; Naik faces of depth 3).
    StaggeredHop(StorageFormat),
}

impl ScalingCase {
    /// Every case.
    pub const ALL: [ScalingCase; 5] = [
        ScalingCase::WilsonHop(StorageFormat::F32, Faces::Projected),
        ScalingCase::WilsonHop(StorageFormat::F32, Faces::Whole),
        ScalingCase::WilsonHop(StorageFormat::Fixed16, Faces::Projected),
        ScalingCase::WilsonHop(StorageFormat::Fixed16, Faces::Whole),
        ScalingCase::StaggeredHop(StorageFormat::F32),
    ];

    /// "wilson_hop f32 half-faces", "wilson_hop f32", …
    pub fn label(&self) -> String {
        match self {
            Self::WilsonHop(f, Faces::Whole) => format!("wilson_hop {}", f.name()),
            Self::WilsonHop(f, Faces::Projected) => format!("wilson_hop {} half-faces", f.name()),
            Self::StaggeredHop(f) => format!("staggered_hop {}", f.name()),
        }
    }

    /// The projections of the hop's halos, of the operator and of its dagger.
    fn projections(&self) -> [HaloProjections; 2] {
        match self {
            Self::WilsonHop(_, Faces::Projected) => {
                [false, true].map(|dagger| HaloProjections::of(&WilsonHop::ir(), dagger))
            }
            _ => [HaloProjections::default(); 2],
        }
    }

    fn variant(&self) -> Variant {
        let (spinor, gauge) = match *self {
            Self::WilsonHop(f, _) => (f, f),
            Self::StaggeredHop(f) => (f, StorageFormat::F32),
        };
        Variant {
            sites: OutputSites::Parity(Parity::Odd),
            spinor,
            gauge,
            recon: match self {
                Self::WilsonHop(..) if spinor != StorageFormat::F64 => Recon::R12,
                _ => Recon::R18,
            },
            boundary: match self {
                Self::WilsonHop(..) => TimeBoundary::Antiperiodic,
                Self::StaggeredHop(_) => TimeBoundary::Periodic,
            },
            ..Variant::default()
        }
    }

    fn depth(&self) -> usize {
        match self {
            Self::WilsonHop(..) => ONE_HOP_DEPTH,
            Self::StaggeredHop(_) => NAIK_DEPTH,
        }
    }

    /// Spins of the fields and link fields of the hop.
    fn shape(&self) -> (usize, usize) {
        match self {
            Self::WilsonHop(..) => (4, 1),
            Self::StaggeredHop(_) => (1, 2),
        }
    }

    fn flops_per_site(&self) -> Result<usize, String> {
        let v = self.variant();
        let info = match self {
            Self::WilsonHop(..) => WilsonHop::info(&v),
            Self::StaggeredHop(_) => ImprovedStaggeredHop::info(&v),
        };
        Ok(info.map_err(|e| e.to_string())?.flops_per_site)
    }

    fn stencil(&self, gpu: &Gpu, v: &Variant) -> Result<DeviceStencil, String> {
        match self {
            Self::WilsonHop(..) => DeviceStencil::of::<WilsonHop>(gpu, v),
            Self::StaggeredHop(_) => DeviceStencil::of::<ImprovedStaggeredHop>(gpu, v),
        }
        .map_err(|e| e.to_string())
    }
}

/// What the scaling bench runs.
#[derive(Clone, Debug)]
pub struct ScalingOptions {
    /// The lattices: each the global lattice (strong) or every rank's local one (weak).
    pub lattices: Vec<[usize; 4]>,
    /// The process grids, each in turn (e.g. 1,1,1,2 then 1,1,1,4 and 1,1,2,2: 1 → 2 →
    /// 4 GPUs in one call; every row has its one-GPU time).
    pub grids: Vec<ProcessGrid>,
    /// The kinds of scaling run, in order: `false` strong (the lattice global), `true`
    /// weak (the lattice local).
    pub weak: Vec<bool>,
    /// How the ranks exchange, each transport in turn.
    pub transports: Vec<GridTransport>,
    /// Untimed applications.
    pub warmup: usize,
    /// Timed applications.
    pub reps: usize,
    /// The cases.
    pub cases: Vec<ScalingCase>,
}

/// One row: a case on a grid.
#[derive(Clone, Debug)]
pub struct ScalingRow {
    /// The case's label.
    pub case: String,
    /// Weak scaling (else strong).
    pub weak: bool,
    /// The transport.
    pub transport: GridTransport,
    /// The global lattice.
    pub global: Lattice,
    /// The grid.
    pub grid: ProcessGrid,
    /// µs of the hop on one GPU (global lattice: strong; local: weak).
    pub single_us: f64,
    /// µs of one distributed application, interior overlapping the exchange.
    pub overlap_us: f64,
    /// µs with overlap but the faces exchanged as one group before every exterior (the
    /// same as `overlap_us` where the transport has no per-direction exchange).
    pub grouped_us: f64,
    /// µs without overlap.
    pub serial_us: f64,
    /// µs of the overlapped application replayed from a CUDA graph (NaN where the
    /// transport cannot be captured).
    pub graph_us: f64,
    /// ms the graph's capture and instantiation took (the slowest rank; NaN without).
    pub capture_ms: f64,
    /// The phases (synchronised), µs per application.
    pub phases_us: [f64; 4],
    /// The GPU timeline of the overlapped application: packed, interior, delivered,
    /// done (µs; module docs).
    pub timeline_us: [f64; 4],
    /// Bytes each rank sends per application.
    pub face_bytes: usize,
    /// GFLOP/s per GPU (overlap on).
    pub gflops_per_gpu: f64,
    /// Parallel efficiency (module docs).
    pub efficiency: f64,
    /// Parallel efficiency of the graph replays (NaN without them).
    pub graph_efficiency: f64,
}

/// The median of `samples` (µs).
pub(crate) fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs every case on every lattice, kind of scaling and transport (see the module
/// docs); `notice` gets progress lines.
pub fn run_scaling(
    opts: &ScalingOptions,
    notice: &mut dyn FnMut(&str),
) -> Result<Vec<ScalingRow>, String> {
    let mut rows = Vec::new();
    for &weak in &opts.weak {
        for dims in &opts.lattices {
            for &grid in &opts.grids {
                let g = grid.dims();
                let global = match weak {
                    true => Lattice::new(std::array::from_fn(|mu| dims[mu] * g[mu])),
                    false => Lattice::new(*dims),
                }
                .map_err(|e| e.to_string())?;
                for case in &opts.cases {
                    for &transport in &opts.transports {
                        notice(&format!(
                            "{} on {global}, grid {grid}, {}",
                            case.label(),
                            transport.describe()
                        ));
                        rows.push(scaling_row(case, global, grid, weak, transport, opts)?);
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// One row: `case` on the global lattice `global` over the grid through `transport`.
fn scaling_row(
    case: &ScalingCase,
    global: Lattice,
    grid: ProcessGrid,
    weak: bool,
    transport: GridTransport,
    opts: &ScalingOptions,
) -> Result<ScalingRow, String> {
    let dec =
        Decomposition::with_halo_depth(global, grid, case.depth()).map_err(|e| e.to_string())?;
    let ext = ExtendedLattice::new(dec, case.depth()).map_err(|e| e.to_string())?;
    let reference = if weak { *ext.local() } else { global };
    let single_us = time_single(case, reference, opts)?;
    let ranks = time_ranks(case, global, ext, transport, opts)?;
    let slowest = |f: &dyn Fn(&RankTimes) -> f64| ranks.iter().map(f).fold(0.0, f64::max);
    let overlap_us = slowest(&|r| r.overlap_us);
    let graph_us = slowest(&|r| r.graph_us);
    let sites = ext.local().half_volume() as f64;
    let flops = case.flops_per_site()? as f64 * sites;
    Ok(ScalingRow {
        case: case.label(),
        weak,
        transport,
        global,
        grid,
        single_us,
        overlap_us,
        grouped_us: slowest(&|r| r.grouped_us),
        serial_us: slowest(&|r| r.serial_us),
        graph_us,
        capture_ms: slowest(&|r| r.capture_ms),
        phases_us: std::array::from_fn(|k| slowest(&|r| r.phases_us[k])),
        timeline_us: std::array::from_fn(|k| slowest(&|r| r.timeline_us[k])),
        face_bytes: ranks.iter().map(|r| r.face_bytes).max().unwrap_or(0),
        gflops_per_gpu: flops / overlap_us / 1e3,
        efficiency: efficiency(single_us, overlap_us, grid.size(), weak),
        graph_efficiency: efficiency(single_us, graph_us, grid.size(), weak),
    })
}

/// Parallel efficiency of P ranks taking `t_p` against one GPU's `t_1`: T₁ / (P · T_P)
/// for strong scaling (the same global lattice), T₁ / T_P for weak (the same local one).
fn efficiency(t_1: f64, t_p: f64, p: usize, weak: bool) -> f64 {
    match weak {
        true => t_1 / t_p,
        false => t_1 / (p as f64 * t_p),
    }
}

/// Random links of the case on `lattice`.
fn links(case: &ScalingCase, lattice: Lattice) -> Vec<GaugeField<f64>> {
    (0..case.shape().1)
        .map(|k| GaugeField::<f64>::random(lattice, 11 + k as u64))
        .collect()
}

fn source(case: &ScalingCase, lattice: Lattice) -> ColourSpinorField<f64> {
    let layout = SpinorLayout::new(
        lattice,
        1,
        SiteSubset::Single(Parity::Even),
        case.shape().0,
        3,
    )
    .expect("a valid layout");
    ColourSpinorField::gaussian(layout, 13)
}

fn upload_links(gpu: &Gpu, v: &Variant, u: &[GaugeField<f64>]) -> Result<Vec<DeviceField>, String> {
    let format = qdsl_core::format::LinkFormat::new(v.gauge.link_storage(), v.recon.compression());
    u.iter()
        .map(|u| DeviceField::from_gauge(gpu, u, format).map_err(|e| e.to_string()))
        .collect()
}

/// The median µs of the whole-parity hop on GPU 0 over `lattice`.
fn time_single(case: &ScalingCase, lattice: Lattice, opts: &ScalingOptions) -> Result<f64, String> {
    let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
    let v = case.variant();
    let stencil = case.stencil(&gpu, &v)?;
    let d_links = upload_links(&gpu, &v, &links(case, lattice))?;
    let psi = DeviceField::from_spinor(&gpu, &source(case, lattice), v.spinor.fermion_format())
        .map_err(|e| e.to_string())?;
    let reals = 6 * case.shape().0;
    let mut out =
        device_spinor(&gpu, v.spinor, reals, lattice.half_volume()).map_err(|e| e.to_string())?;
    let mut inputs: Vec<&DeviceField> = vec![&psi];
    inputs.extend(d_links.iter());
    let launch = StencilLaunch::default_build(LaunchConfig::default_for(lattice.half_volume()));
    let stream = gpu.backend().stream();
    let mut samples = Vec::new();
    for k in 0..opts.warmup + opts.reps {
        let start = Instant::now();
        stencil
            .launch(&gpu, &lattice, launch, StencilArgs::new(&mut out, &inputs))
            .map_err(|e| e.to_string())?;
        stream.synchronize().map_err(|e| e.to_string())?;
        if k >= opts.warmup {
            samples.push(us(start.elapsed()));
        }
    }
    Ok(median(samples))
}

/// `n` applications of a hop, each's µs.
type Repeat<'a> = dyn FnMut(&DeviceDistributedHop, usize) -> Result<Vec<f64>, String> + 'a;

/// One rank's times.
struct RankTimes {
    overlap_us: f64,
    grouped_us: f64,
    serial_us: f64,
    graph_us: f64,
    capture_ms: f64,
    phases_us: [f64; 4],
    timeline_us: [f64; 4],
    face_bytes: usize,
}

/// Every rank's times of the distributed hop of `case`.
fn time_ranks(
    case: &ScalingCase,
    global: Lattice,
    ext: ExtendedLattice,
    transport: GridTransport,
    opts: &ScalingOptions,
) -> Result<Vec<RankTimes>, String> {
    let size = ext.decomposition().size();
    let u = links(case, global);
    let psi = source(case, global);
    let comm_config = CommConfig::from_env().map_err(|e| e.to_string())?;
    run_ranks(size, comm_config, |comm| {
        let comm = SharedComm::new(comm);
        let rank = comm.rank();
        // NCCL's ranks on streams a graph can capture (the graph rows).
        let gpu = match transport {
            GridTransport::Nccl => Gpu::open_capturable(rank),
            _ => Gpu::open(transport.ordinal(rank)),
        }
        .map_err(|e| e.to_string())?;
        let mut transport = transport.open(&gpu, &comm, size, comm_config)?;
        rank_times(case, &gpu, &comm, &mut *transport, &u, &psi, ext, opts)
    })
    .into_iter()
    .collect()
}

/// This rank's parts, its distributed hop, and its times with overlap on, off, and the
/// phases.
#[allow(clippy::too_many_arguments)]
fn rank_times(
    case: &ScalingCase,
    gpu: &Gpu,
    comm: &SharedComm<qdsl_runtime::comm::ThreadComm>,
    transport: &mut dyn DeviceTransport,
    u: &[GaugeField<f64>],
    psi: &ColourSpinorField<f64>,
    ext: ExtendedLattice,
    opts: &ScalingOptions,
) -> Result<RankTimes, String> {
    let rank = comm.rank();
    let e = |e: &dyn std::fmt::Display| format!("rank {rank}: {e}");
    let whole = case.variant();
    let v = Variant {
        region: Region::SubBox,
        boundary: qdsl_runtime::distributed::kernel_boundary(&ext, whole.boundary),
        ..whole
    };
    let parts: Vec<GaugeField<f64>> = u
        .iter()
        .map(|u| {
            let mut part = scatter(u, &ext, rank).map_err(|x| e(&x))?;
            fill_link_halos(comm, &mut part, &ext).map_err(|x| e(&x))?;
            Ok(part)
        })
        .collect::<Result<_, String>>()?;
    let d_links = upload_links(gpu, &v, &parts)?;
    let src = scatter(psi, &ext, rank).map_err(|x| e(&x))?;
    let mut d_psi =
        DeviceField::from_spinor(gpu, &src, v.spinor.fermion_format()).map_err(|x| e(&x))?;
    let lattice = *ext.extended();
    let reals = 6 * case.shape().0;
    let mut out = device_spinor(gpu, v.spinor, reals, lattice.half_volume()).map_err(|x| e(&x))?;
    let stencil = case.stencil(gpu, &v)?;
    let mut hop = DeviceDistributedHop::projected(
        gpu,
        ext,
        (reals, v.spinor, v.spinor, 1),
        case.projections(),
    )
    .map_err(|x| e(&x))?;
    let bc = match whole.boundary {
        TimeBoundary::Periodic => BoundaryConditions::periodic(),
        TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
    };
    let face_bytes = hop.face_bytes();
    let stream = gpu.backend().stream();
    let capturable = transport.capturable();
    let mut run = |hop: &DeviceDistributedHop, n: usize| -> Result<Vec<f64>, String> {
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            // Key 0: every launch reads and writes the same buffers.
            hop.apply_replayed(
                gpu,
                &mut *transport,
                &bc,
                &mut d_psi,
                Parity::Even,
                false,
                Some(0),
                |b, psi| {
                    let mut inputs: Vec<&DeviceField> = vec![psi];
                    inputs.extend(d_links.iter());
                    stencil.launch(
                        gpu,
                        &lattice,
                        StencilLaunch::default_build(LaunchConfig::default_for(b.sites.threads())),
                        StencilArgs::new(&mut out, &inputs).within(b),
                    )
                },
            )
            .map_err(|x| e(&x))?;
            stream.synchronize().map_err(|x| e(&x))?;
            samples.push(us(start.elapsed()));
        }
        Ok(samples)
    };
    // The median of the timed repetitions after the warm-up.
    let (warmup, reps) = (opts.warmup, opts.reps);
    let timed = |run: &mut Repeat<'_>, hop: &DeviceDistributedHop| -> Result<f64, String> {
        run(hop, warmup)?;
        Ok(median(run(hop, reps)?))
    };
    hop = hop.with_overlap(true);
    let overlap_us = timed(&mut run, &hop)?;
    hop.set_timeline(true);
    let mut schedule: [Vec<f64>; 4] = Default::default();
    for k in 0..opts.warmup + opts.reps {
        run(&hop, 1)?;
        if let (Some(t), true) = (hop.timeline().map_err(|x| e(&x))?, k >= opts.warmup) {
            for (samples, v) in schedule
                .iter_mut()
                .zip([t.packed, t.interior, t.delivered, t.done])
            {
                samples.push(v);
            }
        }
    }
    hop.set_timeline(false);
    let timeline_us = schedule.map(|s| if s.is_empty() { 0.0 } else { median(s) });
    let (graph_us, capture_ms) = if capturable {
        hop = hop.with_graphs(true);
        // The first applications run eagerly, the next is captured.
        run(&hop, EAGER_APPLICATIONS + 1)?;
        let t = timed(&mut run, &hop)?;
        if hop.graphs_captured() != 1 {
            return Err(e(&format!(
                "{} graphs captured, 1 expected",
                hop.graphs_captured()
            )));
        }
        let capture_ms = hop.capture_time().as_secs_f64() * 1e3;
        hop = hop.with_graphs(false);
        (t, capture_ms)
    } else {
        (f64::NAN, f64::NAN)
    };
    hop = hop.with_per_direction(false);
    let grouped_us = timed(&mut run, &hop)?;
    hop = hop.with_overlap(false);
    let serial_us = timed(&mut run, &hop)?;
    hop.set_timing(true);
    timed(&mut run, &hop)?;
    let t = hop.phase_times().unwrap_or_default();
    let n = (opts.warmup + opts.reps).max(1) as f64;
    let PhaseTimes {
        pack,
        exchange,
        interior,
        exterior,
    } = t;
    Ok(RankTimes {
        overlap_us,
        grouped_us,
        serial_us,
        graph_us,
        capture_ms,
        phases_us: [pack, exchange, interior, exterior].map(|d| us(d) / n),
        timeline_us,
        face_bytes,
    })
}

/// The table of `rows`.
pub fn render_scaling(rows: &[ScalingRow]) -> String {
    let mut s = String::from(
        "scaling of the distributed hops (µs per application, one parity; phases synchronised)\n",
    );
    s.push_str(&format!(
        "{:<30} {:<6} {:<7} {:<14} {:<9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9} {:>10} {:>9} {:>6} {:>6} {:>8}\n",
        "case",
        "kind",
        "via",
        "global",
        "grid",
        "1 GPU",
        "overlap",
        "graph",
        "grouped",
        "serial",
        "pack",
        "exchange",
        "interior",
        "exterior",
        "GPU: packed",
        "interior",
        "delivered",
        "done",
        "face KiB",
        "GF/s/GPU",
        "eff.",
        "graph",
        "capt. ms"
    ));
    for r in rows {
        s.push_str(&format!(
            "{:<30} {:<6} {:<7} {:<14} {:<9} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>11.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>9.1} {:>5.0}% {:>5.0}% {:>8.2}\n",
            r.case,
            if r.weak { "weak" } else { "strong" },
            r.transport.name(),
            r.global.to_string(),
            r.grid.to_string(),
            r.single_us,
            r.overlap_us,
            r.graph_us,
            r.grouped_us,
            r.serial_us,
            r.phases_us[0],
            r.phases_us[1],
            r.phases_us[2],
            r.phases_us[3],
            r.timeline_us[0],
            r.timeline_us[1],
            r.timeline_us[2],
            r.timeline_us[3],
            r.face_bytes as f64 / 1024.0,
            r.gflops_per_gpu,
            100.0 * r.efficiency,
            100.0 * r.graph_efficiency,
            r.capture_ms
        ));
    }
    s
}

/// The rows as JSON.
pub fn scaling_json(rows: &[ScalingRow]) -> serde_json::Value {
    serde_json::json!({
        "rows": rows.iter().map(|r| serde_json::json!({
            "case": r.case,
            "scaling": if r.weak { "weak" } else { "strong" },
            "transport": r.transport.name(),
            "global": r.global.dims(),
            "grid": r.grid.dims(),
            "single_us": r.single_us,
            "overlap_us": r.overlap_us,
            "grouped_us": r.grouped_us,
            "serial_us": r.serial_us,
            "graph_us": if r.graph_us.is_nan() { serde_json::Value::Null } else { r.graph_us.into() },
            "pack_us": r.phases_us[0],
            "exchange_us": r.phases_us[1],
            "interior_us": r.phases_us[2],
            "exterior_us": r.phases_us[3],
            "gpu_packed_us": r.timeline_us[0],
            "gpu_interior_us": r.timeline_us[1],
            "gpu_delivered_us": r.timeline_us[2],
            "gpu_done_us": r.timeline_us[3],
            "face_bytes": r.face_bytes,
            "gflops_per_gpu": r.gflops_per_gpu,
            "efficiency": r.efficiency,
            "capture_ms": if r.capture_ms.is_nan() { serde_json::Value::Null } else { r.capture_ms.into() },
            "graph_efficiency": if r.graph_efficiency.is_nan() { serde_json::Value::Null } else { r.graph_efficiency.into() },
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases' labels, depths and flop counts (Wilson 1320, improved staggered 1146
    /// flops per site: the standard counts the bench reports elsewhere).
    #[test]
    fn cases_have_labels_depths_and_flops() {
        let [h32, w32, h16, w16, s32] = ScalingCase::ALL;
        assert_eq!(w32.label(), "wilson_hop f32");
        assert_eq!(h32.label(), "wilson_hop f32 half-faces");
        assert_eq!(w16.label(), "wilson_hop fixed16");
        assert_eq!(h16.label(), "wilson_hop fixed16 half-faces");
        assert!(w32.projections()[0].is_none() && s32.projections()[1].is_none());
        let h = h32.projections();
        assert!(h[0].by_side.iter().flatten().all(Option::is_some));
        assert_ne!(h[0], h[1], "the dagger flips the projectors");
        assert_eq!(s32.label(), "staggered_hop f32");
        assert_eq!((w32.depth(), s32.depth()), (1, 3));
        assert_eq!(w32.flops_per_site().unwrap(), 1320);
        assert_eq!(s32.flops_per_site().unwrap(), 1146);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }

    /// Strong: 4 ranks at a quarter of the time each is 100 %; weak: the same time per
    /// rank is 100 %.
    #[test]
    fn efficiency_is_t1_over_p_tp_strong_and_t1_over_tp_weak() {
        assert_eq!(efficiency(100.0, 25.0, 4, false), 1.0);
        assert_eq!(efficiency(100.0, 50.0, 4, false), 0.5);
        assert_eq!(efficiency(100.0, 125.0, 4, true), 0.8);
    }
}
