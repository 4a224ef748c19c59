//! The GPU side of `qdsl bench`: the copy roofline, then every case at every size.

use super::metrics::{copy_gbs, per_source_minimal_bytes, rates};
use super::report::{BenchCase, BenchKernel, BenchReport, BenchResult, CopyBandwidth, Skipped};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::variant::{LongRecon, OutputSites, Slices, StorageFormat};
use qdsl_core::dsl::{CompiledKernel, KernelInfo, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{
    fold_staggered_phases, AsqtadLong, ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop,
};
use qdsl_runtime::backend::Backend;
use qdsl_runtime::device::copy::copy_times;
use qdsl_runtime::device::long_links::DeviceLongLinks;
use qdsl_runtime::device::{DeviceError, DeviceField, Gpu};
use qdsl_runtime::operator::device::{device_spinor, DeviceStencil, OperatorError, StencilArgs};
use qdsl_runtime::tune::Tuner;
use std::time::Instant;

/// What `qdsl bench` runs.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Lattice extents L (L⁴ lattices).
    pub extents: Vec<usize>,
    /// The cases.
    pub cases: Vec<BenchCase>,
    /// Untimed launches before timing.
    pub warmup: usize,
    /// Timed launches (the median is reported).
    pub reps: usize,
    /// Bytes of the copy-bandwidth buffers.
    pub copy_bytes: usize,
    /// Seed of the random fields.
    pub seed: u64,
}

/// Launches per timed batch. Each timed sample is a batch of back-to-back launches
/// between two device events, divided by the batch size, so the host's per-launch work
/// (argument checks, binding) overlaps the previous launch instead of showing up as
/// idle GPU time inside the sample; the median is over `reps` batches.
pub const BATCH: usize = 10;

pub(super) fn as_driver(what: &str) -> impl Fn(OperatorError) -> DeviceError + '_ {
    move |e| DeviceError::Driver {
        what: what.to_string(),
        message: e.to_string(),
    }
}

/// Read + write bandwidth of cuMemcpyDtoD and of the float4 copy kernel.
pub fn copy_bandwidth(
    gpu: &Gpu,
    bytes: usize,
    warmup: usize,
    reps: usize,
) -> Result<CopyBandwidth, DeviceError> {
    let t = copy_times(gpu, bytes, warmup, reps)?;
    Ok(CopyBandwidth {
        bytes: t.bytes,
        memcpy_gbs: copy_gbs(t.bytes, t.memcpy_us),
        kernel_gbs: copy_gbs(t.bytes, t.kernel_us),
    })
}

/// The gauge fields of one lattice: random SU(3) links `u` (also standing in for fat
/// links: the timing does not depend on the values) and asqtad long links built from
/// other random thin links (MILC phases and antiperiodic time folded in, u0 = 1), which
/// every long-link compression can hold, recon 12 + sign included.
struct Links {
    lattice: Lattice,
    u: GaugeField<f64>,
    long: GaugeField<f64>,
}

fn variant_of(case: &BenchCase, parity: Parity, xpay: bool) -> Variant {
    // Periodic time boundary (the default): timing does not depend on it.
    Variant {
        sites: OutputSites::Parity(parity),
        xpay,
        spinor: case.format,
        // Packed spinors (spinor-only formats) beside links in their compute type.
        gauge: case.format.links_beside(),
        recon: case.recon,
        // Multi-RHS rows: the sources' slices inside the block, or walked.
        slices: match (case.sources, case.kernel) {
            (Some(_), BenchKernel::WilsonHopWalk) => Slices::Walk,
            (Some(_), _) => Slices::InBlock,
            (None, _) => Slices::Grid,
        },
        ..Variant::default()
    }
}

/// The hop stencil a bench kernel launches: the one place that knows which bench kernels
/// are hops (every other kind — smearings, forces, generation, Möbius chains, tensor-core
/// tiles — is dispatched to its own module before any hop source is built).
#[derive(Clone, Copy)]
enum HopStencil {
    Wilson,
    NaiveStaggered,
    ImprovedStaggered,
}

impl HopStencil {
    fn of(kernel: BenchKernel) -> Option<Self> {
        match kernel {
            BenchKernel::WilsonHop
            | BenchKernel::WilsonHopWalk
            | BenchKernel::WilsonEo
            | BenchKernel::CloverEo
            | BenchKernel::TwistedMassEo => Some(HopStencil::Wilson),
            BenchKernel::NaiveStaggeredHop => Some(HopStencil::NaiveStaggered),
            BenchKernel::ImprovedStaggeredHop => Some(HopStencil::ImprovedStaggered),
            _ => None,
        }
    }

    fn ir(self) -> qdsl_core::dsl::Ir {
        match self {
            HopStencil::Wilson => WilsonHop::ir(),
            HopStencil::NaiveStaggered => NaiveStaggeredHop::ir(),
            HopStencil::ImprovedStaggered => ImprovedStaggeredHop::ir(),
        }
    }
}

/// The hop stencil of `kernel`, or why it cannot run as a hop.
fn hop_stencil(kernel: BenchKernel) -> Result<HopStencil, String> {
    HopStencil::of(kernel).ok_or_else(|| format!("{} is not a hop kernel", kernel.name()))
}

/// The kernel and info of a hop case, or why it cannot run.
fn hop_source(case: &BenchCase, v: &Variant) -> Result<(CompiledKernel, KernelInfo), String> {
    let r = match hop_stencil(case.kernel)? {
        HopStencil::Wilson => WilsonHop::compiled(v).and_then(|s| Ok((s, WilsonHop::info(v)?))),
        HopStencil::NaiveStaggered => {
            NaiveStaggeredHop::compiled(v).and_then(|s| Ok((s, NaiveStaggeredHop::info(v)?)))
        }
        HopStencil::ImprovedStaggered => {
            ImprovedStaggeredHop::compiled(v).and_then(|s| Ok((s, ImprovedStaggeredHop::info(v)?)))
        }
    };
    r.map_err(|e| e.to_string())
}

/// The long-link compressions benched for `case`: recon 18 always; 13, 12 + sign and 9
/// as well for the improved staggered hop in narrow (f32, fixed-point) formats (not beside
/// packed spinors).
fn long_recons(case: &BenchCase) -> &'static [LongRecon] {
    if case.sources.is_some() {
        return &LongRecon::EVERY[..1];
    }
    match (case.kernel, case.format) {
        (BenchKernel::ImprovedStaggeredHop, f) if f != StorageFormat::F64 && !f.spinor_only() => {
            &LongRecon::EVERY
        }
        _ => &LongRecon::EVERY[..1],
    }
}

/// The row label of `case` with `long_recon`: the case's label, then ` long<N>` for
/// compressed long links.
fn row_label(case: &BenchCase, long_recon: LongRecon) -> String {
    match long_recon {
        LongRecon::R18 => case.label(),
        l => format!("{} long{}", case.label(), l.reals()),
    }
}

/// Measures one case on one lattice (long links compressed as `long_recon`).
fn bench_case(
    gpu: &Gpu,
    tuner: &Tuner,
    links: &Links,
    case: &BenchCase,
    long_recon: LongRecon,
    copy: &CopyBandwidth,
    opts: &BenchOptions,
) -> Result<BenchResult, String> {
    if matches!(
        case.kernel,
        BenchKernel::AsqtadLinks
            | BenchKernel::Fat7Links
            | BenchKernel::HisqLinks
            | BenchKernel::AsqtadLinksStaged
            | BenchKernel::Fat7LinksStaged
            | BenchKernel::HisqLinksStaged
            | BenchKernel::AsqtadPullback
            | BenchKernel::HisqPullback
    ) {
        return super::smear::bench_links(gpu, tuner, &links.u, case, copy, opts.warmup, opts.reps);
    }
    if let BenchKernel::Coarse(stage) = case.kernel {
        return super::coarse::bench_coarse(gpu, &links.u, stage, copy, (opts.warmup, opts.reps));
    }
    if matches!(case.kernel, BenchKernel::BlockAxpy(_)) {
        return super::block_blas::bench_block_axpy(
            gpu,
            links.lattice.dims()[0],
            case,
            copy,
            opts.warmup,
            opts.reps,
        );
    }
    if matches!(case.kernel, BenchKernel::BlockDot(_)) {
        return super::block_blas::bench_block_dot(
            gpu,
            tuner,
            links.lattice.dims()[0],
            case,
            copy,
            opts.warmup,
            opts.reps,
        );
    }
    if case.kernel.is_mobius() {
        return super::mobius::bench_chain(
            gpu,
            tuner,
            &links.u,
            case,
            copy,
            opts.warmup,
            opts.reps,
        );
    }
    if case.kernel == BenchKernel::WilsonHmc {
        return super::generate::bench_hmc(gpu, &links.u, case, copy, opts.warmup, opts.reps);
    }
    if case.kernel == BenchKernel::WilsonHeatbath {
        return super::generate::bench_heatbath(gpu, &links.u, case, copy, opts.warmup, opts.reps);
    }
    if case.kernel == BenchKernel::SymanzikForce {
        return super::smear::bench_symanzik_force(
            gpu,
            tuner,
            &links.u,
            case,
            copy,
            opts.warmup,
            opts.reps,
        );
    }
    let lat = links.lattice;
    let half = lat.half_volume();
    let v_odd = Variant {
        long_recon,
        ..variant_of(case, Parity::Odd, false)
    };
    let (kernel, info) = hop_source(case, &v_odd)?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let lf = LinkFormat::new(case.format.link_storage(), case.recon.compression());
    let d_u = DeviceField::from_gauge(gpu, &links.u, lf).map_err(|e| err(&e))?;
    let staggered = matches!(
        case.kernel,
        BenchKernel::NaiveStaggeredHop | BenchKernel::ImprovedStaggeredHop
    );
    let reals = if staggered { 6 } else { 24 };
    // N right-hand sides: N slices of the even sites, one 5D field.
    let sources = case.sources.unwrap_or(1);
    let spins = if staggered { 1 } else { 4 };
    let layout = SpinorLayout::new(lat, sources, SiteSubset::Single(Parity::Even), spins, 3)
        .map_err(|e| err(&e))?;
    let psi = ColourSpinorField::<f64>::gaussian(layout, opts.seed);
    let d_psi =
        DeviceField::from_spinor(gpu, &psi, case.format.fermion_format()).map_err(|e| err(&e))?;
    let mut d_out = device_spinor(gpu, case.format, reals, sources * half).map_err(|e| err(&e))?;
    if super::operators::is_operator(case.kernel) {
        if case.sources.is_some() {
            return Err("several right-hand sides are benched for the hops only".into());
        }
        let v_even = variant_of(case, Parity::Even, true);
        let (_, info_even) = hop_source(case, &v_even)?;
        let inputs = super::operators::OperatorInputs {
            d_u,
            u: &links.u,
            lattice: lat,
            psi: &d_psi,
            out: &mut d_out,
            variant: v_even,
            hops: [info, info_even],
        };
        return super::operators::bench_operator(gpu, tuner, case, inputs, copy, opts);
    }
    let t0 = Instant::now();
    let stencil = DeviceStencil::new(
        gpu,
        hop_stencil(case.kernel)?.ir(),
        &v_odd,
        kernel,
        info.clone(),
    )
    .map_err(|e| err(&e))?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    // Long links: plain (recon 18) or compressed (recon 13/12 + sign/9: record, phases
    // for 13/9, scale).
    let improved = case.kernel == BenchKernel::ImprovedStaggeredHop;
    let (d_long, d_long_scaled) = match improved {
        false => (None, None),
        true => match DeviceLongLinks::upload_for(gpu, &links.long, &v_odd).map_err(|e| err(&e))? {
            Some(l) => (None, Some(l)),
            None => (
                Some(DeviceField::from_gauge(gpu, &links.long, lf).map_err(|e| err(&e))?),
                None,
            ),
        },
    };
    let mut inputs: Vec<&DeviceField> = vec![&d_psi, &d_u];
    inputs.extend(d_long.as_ref());
    inputs.extend(d_long_scaled.as_ref().map(DeviceLongLinks::record));
    let long_args: Vec<_> = d_long_scaled.iter().map(DeviceLongLinks::args).collect();
    let t0 = Instant::now();
    let cfg = stencil
        .tuned_config(
            gpu,
            tuner,
            &lat,
            StencilArgs::new(&mut d_out, &inputs).long(&long_args),
        )
        .map_err(|e| err(&e))?;

    let tune_ms = t0.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu
        .time_us(opts.warmup, opts.reps, || {
            for _ in 0..BATCH {
                stencil
                    .launch(
                        gpu,
                        &lat,
                        cfg,
                        StencilArgs::new(&mut d_out, &inputs).long(&long_args),
                    )
                    .map_err(as_driver("launching a hop"))?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    // Per source: the time over N, the links' minimal bytes shared by the N sources.
    let time_us = time_us / sources as f64;
    let bytes = ByteModels {
        minimal: per_source_minimal_bytes(
            info.bytes.minimal,
            case.format.codec().site_bytes(reals),
            sources,
        ),
        ..info.bytes
    };
    Ok(BenchResult {
        label: row_label(case, long_recon),
        extent: lat.dims()[0],
        sites: half,
        time_us,
        flops_per_site: info.flops_per_site,
        bytes,
        rates: rates(
            half,
            info.flops_per_site,
            bytes,
            time_us,
            Some(copy.best_gbs()),
        ),
        compile: cfg.compile.to_string(),
        launch: cfg.launch.to_string(),
        jit_ms,
        tune_ms,
    })
}

/// The whole bench in one process: copy bandwidth first, then each case at each size
/// (one parity, median of `reps` device-event timings of [`BATCH`] launches each, after
/// `warmup` untimed batches); `progress`
/// receives a line per finished step.
pub fn run_bench(
    gpu: &Gpu,
    tuner: &Tuner,
    opts: &BenchOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<BenchReport, DeviceError> {
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let copy = copy_bandwidth(gpu, opts.copy_bytes, opts.warmup, opts.reps)?;
    progress(&format!(
        "copy: memcpy {:.0} GB/s, kernel {:.0} GB/s",
        copy.memcpy_gbs, copy.kernel_gbs
    ));
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for &extent in &opts.extents {
        let lattice = Lattice::new([extent; 4]).map_err(|e| DeviceError::Shape(e.to_string()))?;
        let thin = GaugeField::random(lattice, opts.seed + 2);
        let long = AsqtadLong::smear_cpu(&fold_staggered_phases(&thin), 1.0)
            .map_err(|e| DeviceError::Shape(format!("building asqtad long links: {e}")))?;
        let links = Links {
            lattice,
            u: GaugeField::random(lattice, opts.seed + 1),
            long,
        };
        for (case, &long_recon) in opts
            .cases
            .iter()
            .flat_map(|c| long_recons(c).iter().map(move |l| (c, l)))
        {
            match bench_case(gpu, tuner, &links, case, long_recon, &copy, opts) {
                Ok(r) => {
                    progress(&format!("{} {extent}⁴: {:.2} µs", r.label, r.time_us));
                    results.push(r);
                }
                Err(reason) => {
                    let label = row_label(case, long_recon);
                    progress(&format!("{label} {extent}⁴: skipped: {reason}"));
                    skipped.push(Skipped {
                        label,
                        extent,
                        reason,
                    });
                }
            }
        }
    }
    Ok(BenchReport {
        device: gpu.backend().describe(),
        unix_time,
        copy,
        results,
        skipped,
    })
}
