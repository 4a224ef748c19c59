//! The GPU side of `qdsl check`: each catalog kernel variant and each even-odd operator
//! run on the device and on the CPU, on the same inputs (rounded to the variant's
//! format first), compared component by component.

use super::reference::apply_cpu;
use super::report::{bound, relative_error, CheckRow, Outcome};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::ir::{FieldShape, Ir, Role};
use qdsl_core::dsl::long_links::{is_long, long_link_fields};
use qdsl_core::dsl::lower::{lower, Lowered, ReadSites};
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::storage::{divide_by_global_scale, round_gauge_field_for};
use qdsl_core::dsl::variant::{
    LinkScale, LongRecon, OutputSites, Recon, Slices, StorageFormat, TimeBoundary,
};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{
    CloverField, ColourSpinorField, GaugeField, RandomStream, SiteSubset, SpinorLayout,
    StreamDomain, CLOVER_BLOCK_DIM, CLOVER_BLOCK_REALS, CLOVER_SITE_REALS,
};
use qdsl_core::format::{LinkFormat, PackedWidth};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::{Complex, Real};
use qdsl_kernels::catalog::StencilEntry;
use qdsl_kernels::{fold_staggered_phases, AsqtadLong};
use qdsl_runtime::device::long_links::DeviceLongLinks;
use qdsl_runtime::device::{DeviceField, DeviceFormat, DeviceLayout, Gpu};
use qdsl_runtime::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use qdsl_runtime::operator::device::{
    clover_format, device_spinor, output_sites, DeviceStencil, StencilArgs,
};
use qdsl_runtime::operator::{DeviceRun, Schur};
use qdsl_runtime::solver::LinearOperator;
use qdsl_runtime::tune::{LaunchConfig, Tuner};
use std::path::{Path, PathBuf};

/// What `qdsl check` runs.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Lattice of the random-field runs.
    pub dims: [usize; 4],
    /// Seed of the random fields.
    pub seed: u64,
    /// Only kernels whose name contains this (all when `None`).
    pub filter: Option<String>,
    /// The directory holding `milc/lat.sample.l8`, `milc/fat.l8`, `milc/long.l8`.
    pub data_dir: PathBuf,
}

/// One data set: its name and the gauge fields (in the kernel's declaration order).
struct DataSet {
    name: String,
    links: Vec<GaugeField<f64>>,
}

pub(super) fn read(dir: &Path, file: &str, opts: &ReadOptions) -> Result<GaugeField<f64>, String> {
    read_gauge(dir.join(file), opts)
        .map(|g| g.field)
        .map_err(|e| format!("reading {file}: {e}"))
}

/// The real configuration of a kernel with `gauges` gauge fields: Wilson (one SU(3)
/// field) lat.sample.l8; staggered kernels MILC's fat (and long) links of it; a kernel
/// without gauge fields gets lat.sample.l8 for its lattice only.
fn real_links(dir: &Path, kernel: &str, gauges: usize) -> Result<DataSet, String> {
    let smeared = ReadOptions::smeared_links();
    let (name, links) = match (kernel.contains("staggered"), gauges) {
        (false, 0 | 1) => (
            "milc/lat.sample.l8",
            vec![read(dir, "milc/lat.sample.l8", &ReadOptions::default())?],
        ),
        (true, 1) => ("milc/fat.l8", vec![read(dir, "milc/fat.l8", &smeared)?]),
        (true, 2) => (
            "milc/fat.l8+long.l8",
            vec![
                read(dir, "milc/fat.l8", &smeared)?,
                read(dir, "milc/long.l8", &smeared)?,
            ],
        ),
        _ => {
            return Err(format!(
                "no real configuration for {kernel} ({gauges} gauge fields)"
            ))
        }
    };
    Ok(DataSet {
        name: name.into(),
        links,
    })
}

pub(super) fn as_c64<T: Real>(f: &ColourSpinorField<T>) -> Vec<Complex<f64>> {
    f.data()
        .iter()
        .map(|z| Complex::new(z.re.to_f64(), z.im.to_f64()))
        .collect()
}

pub(super) fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn link_format(v: &Variant) -> LinkFormat {
    LinkFormat::new(v.gauge.link_storage(), v.recon.compression())
}

/// The output layout of `v` on `lat` and random colour-spinor operands on it: the source
/// on the sites the kernel's colour-spinor input is read at (as the CPU context checks;
/// Gaussian, seed `seed`) and the xpay x on the output's sites (seed `seed + 1`).
pub(super) fn random_spinors<T: Real>(
    lowered: &Lowered,
    v: &Variant,
    lat: Lattice,
    seed: u64,
) -> Result<(SpinorLayout, ColourSpinorField<T>, ColourSpinorField<T>), String> {
    let out_subset = match v.sites {
        OutputSites::Parity(p) => SiteSubset::Single(p),
        OutputSites::Full => SiteSubset::Full,
    };
    let out_layout =
        SpinorLayout::new(lat, 1, out_subset, lowered.nspin, lowered.ncolour).map_err(err)?;
    let spinor = lowered
        .inputs
        .iter()
        .find(|i| matches!(i.decl.shape, FieldShape::Spinor { .. }))
        .ok_or("the kernel has no colour-spinor input")?;
    let src_subset = match (out_subset, spinor.reads) {
        (SiteSubset::Single(p), ReadSites::OtherParity) => SiteSubset::Single(p.opposite()),
        (SiteSubset::Single(p), ReadSites::SameParity) => SiteSubset::Single(p),
        _ => SiteSubset::Full,
    };
    let src =
        ColourSpinorField::<f64>::gaussian(out_layout.with_subset(src_subset), seed).cast::<T>();
    let x = ColourSpinorField::<f64>::gaussian(out_layout, seed + 1).cast::<T>();
    Ok((out_layout, src, x))
}

/// GPU versus CPU for one kernel variant on one data set, in compute type T.
fn compare_kernel<T: Real>(
    gpu: &Gpu,
    entry: &StencilEntry,
    v: &Variant,
    data: &DataSet,
    seed: u64,
) -> Result<f64, String> {
    let ir = (entry.ir)();
    let lowered = lower(&ir).map_err(err)?;
    let lat = *data
        .links
        .first()
        .ok_or("the data set has no gauge field to take the lattice from")?
        .lattice();
    let (out_layout, src, x) = random_spinors::<T>(&lowered, v, lat, seed)?;
    // The multi-RHS variants run on MULTI_RHS_SOURCES sources (slices) at once.
    let sources = match v.slices {
        Slices::InBlock | Slices::Walk => MULTI_RHS_SOURCES,
        Slices::Grid => 1,
    };
    let (out_layout, src, x) = match sources {
        1 => (out_layout, src, x),
        n => {
            let batch = |l: SpinorLayout| {
                SpinorLayout::new(lat, n, l.subset(), l.nspin(), l.ncolour()).map_err(err)
            };
            let (out, src_layout) = (batch(out_layout)?, batch(*src.layout())?);
            (
                out,
                ColourSpinorField::<f64>::gaussian(src_layout, seed).cast::<T>(),
                ColourSpinorField::<f64>::gaussian(out, seed + 1).cast::<T>(),
            )
        }
    };
    let out_subset = out_layout.subset();
    let gauges = ir
        .fields
        .iter()
        .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
        .count();
    // A gauge-free kernel's data set carries one field for its lattice only.
    let links: Vec<GaugeField<T>> = data.links[..gauges.min(data.links.len())]
        .iter()
        .map(|g| g.cast::<T>())
        .collect();
    // Compressed long fields: the CPU reference rounds them through the compression
    // itself (its scale search checks every link), the GPU reads them encoded.
    let names = gauge_names(&ir);
    let long_at = |k: usize| names.get(k).is_some_and(|n| is_long(&ir, n));
    let link_refs: Vec<&GaugeField<T>> = links.iter().collect();
    let has_clover = ir.fields.iter().any(|f| f.shape == FieldShape::Clover);
    let clover = random_clover(lat, out_subset, seed + 2).cast::<T>();
    let (a, b) = (0.75, -0.375);
    // CPU reference.
    let mut cpu = ColourSpinorField::<T>::zeros(out_layout);
    let xpay = v.xpay.then_some(Xpay {
        a: T::from_f64(a),
        x: &x,
        b: T::from_f64(b),
    });
    apply_cpu(
        &ir.name,
        v,
        &mut cpu,
        &src,
        &link_refs,
        has_clover.then_some(&clover),
        xpay,
    )
    .map_err(err)?;
    // GPU.
    let kernel = (entry.compiled)(v).map_err(err)?;
    let info = (entry.info)(v).map_err(err)?;
    let stencil = DeviceStencil::new(gpu, ir.clone(), v, kernel, info).map_err(err)?;
    let d_src = DeviceField::from_spinor(gpu, &src, v.spinor.fermion_format()).map_err(err)?;
    let mut d_long = Vec::new();
    let mut d_links = Vec::new();
    // Globally scaled links: U/s uploaded in the unit-scale format, s passed to the kernel.
    let mut link_scales = Vec::new();
    let scaled = v.gauge.codec().scales_links(v.link_scale);
    for (k, g) in links.iter().enumerate() {
        match long_at(k).then(|| DeviceLongLinks::upload_for(gpu, g, v)) {
            Some(Ok(Some(l))) => d_long.push(l),
            Some(Err(e)) => return Err(e.to_string()),
            Some(Ok(None)) | None if scaled => {
                let mut unit = g.clone();
                link_scales.push(divide_by_global_scale(&mut unit));
                d_links.push(DeviceField::from_gauge(gpu, &unit, link_format(v)).map_err(err)?)
            }
            Some(Ok(None)) | None => {
                d_links.push(DeviceField::from_gauge(gpu, g, link_format(v)).map_err(err)?)
            }
        }
    }
    let d_x = DeviceField::from_spinor(gpu, &x, v.spinor.fermion_format()).map_err(err)?;
    let d_clover = if has_clover {
        let format = DeviceFormat::Fermion(clover_format(v).fermion_format());
        let layout = DeviceLayout::new(format, CLOVER_SITE_REALS, clover.sites()).map_err(err)?;
        Some(DeviceField::upload(gpu, layout, clover.data()).map_err(err)?)
    } else {
        None
    };
    let n_out = output_sites(v, &lat);
    let mut d_out = device_spinor(
        gpu,
        v.spinor,
        2 * lowered.nspin * lowered.ncolour,
        sources * n_out,
    )
    .map_err(err)?;
    // Several sources: the map's default (all sources of a site in one block, or the
    // walk's tile of rows); one source: the default launch.
    let launch = match sources {
        1 => LaunchConfig::default_for(n_out),
        n => stencil.default_launch(&lat, n),
    };
    let mut inputs: Vec<&DeviceField> = Vec::new();
    let mut next_link = d_links.iter();
    let mut next_long = d_long.iter();
    for f in ir.fields.iter().filter(|f| f.role != Role::Out) {
        match f.shape {
            FieldShape::Spinor { .. } => inputs.push(&d_src),
            FieldShape::Gauge { .. } if is_long(&ir, &f.name) && !d_long.is_empty() => inputs.push(
                next_long
                    .next()
                    .ok_or("more long fields than data")?
                    .record(),
            ),
            FieldShape::Gauge { .. } => {
                inputs.push(next_link.next().ok_or("more gauge fields than data")?)
            }
            FieldShape::Clover => inputs.push(d_clover.as_ref().ok_or("no clover field")?),
        }
    }
    let long_args: Vec<_> = d_long.iter().map(DeviceLongLinks::args).collect();
    let xp = qdsl_runtime::operator::DeviceXpay { a, x: &d_x, b };
    stencil
        .launch(
            gpu,
            &lat,
            stencil.untuned(launch),
            StencilArgs::new(&mut d_out, &inputs)
                .long(&long_args)
                .xpay(v.xpay.then_some(&xp))
                .link_scales(&link_scales),
        )
        .map_err(err)?;
    let gpu_out = d_out.to_spinor::<T>(gpu, out_layout).map_err(err)?;
    Ok(relative_error(&as_c64(&gpu_out), &as_c64(&cpu)))
}

/// A random hermitian clover field on `subset`: every packed site (72 reals: the real
/// diagonal, then the strictly-lower entries) is a hermitian pair of 6 × 6 blocks by
/// construction; Gaussian entries of width 0.3 around a diagonal of 4.2 (a Wilson-clover
/// mass term's size).
fn random_clover(lat: Lattice, subset: SiteSubset, seed: u64) -> CloverField<f64> {
    let mut a = CloverField::zeros(lat, subset);
    for i in 0..a.sites() {
        let mut s = RandomStream::new(seed, StreamDomain::User(13), i as u64);
        for (k, r) in a.site_mut(i).iter_mut().enumerate() {
            let diagonal = k % CLOVER_BLOCK_REALS < CLOVER_BLOCK_DIM;
            *r = 0.3 * s.gaussian_pair().0 + if diagonal { 4.2 } else { 0.0 };
        }
    }
    a
}

pub(super) fn outcome(format: StorageFormat, r: Result<f64, String>) -> Outcome {
    match r {
        Ok(error) => Outcome::Compared {
            error,
            bound: bound(format) + storage_step(format),
        },
        Err(e) => Outcome::Failed(e),
    }
}

/// One storage step of a narrow output format relative to the site's scale: f16 2⁻¹⁰,
/// bf16 2⁻⁷ (the spacing at 1), fixed point 1/Q, packed 1/Q of a group's max (Q =
/// 2¹⁹ − 1, 2²⁹ − 1); 0 for f64/f32. The GPU and the CPU
/// both round the output through the format, so their results differ where the f32
/// values before rounding straddle a rounding boundary: then by one step, at a few
/// components (a wrong term gives O(1)).
fn storage_step(format: StorageFormat) -> f64 {
    match format {
        StorageFormat::F64 | StorageFormat::F32 => 0.0,
        StorageFormat::F16 => 2f64.powi(-10),
        StorageFormat::BF16 => 2f64.powi(-7),
        StorageFormat::Fixed16 => 1.0 / f64::from(i16::MAX),
        StorageFormat::Fixed8 => 1.0 / f64::from(i8::MAX),
        StorageFormat::Packed20 => 1.0 / PackedWidth::Bits20.max_int() as f64,
        StorageFormat::Packed30 => 1.0 / PackedWidth::Bits30.max_int() as f64,
    }
}

/// An operator row's outcome: the host operator computes on the unrounded input in the
/// compute type, the device one in a narrow format rounds the input and each of its two
/// hops' outputs through it (three roundings of at most one step each, far from the
/// O(1) of a wrong term): the bound plus 4 steps (0 for f64/f32).
pub(super) fn operator_outcome(format: StorageFormat, r: Result<f64, String>) -> Outcome {
    match r {
        Ok(error) => Outcome::Compared {
            error,
            bound: bound(format) + 4.0 * storage_step(format),
        },
        Err(e) => Outcome::Failed(e),
    }
}

/// Why the links of `data` cannot be stored as `v` stores them (unit-scale fixed-point
/// links beyond ±1, compressed links that are not SU(3)), if so; a global link scale
/// stores any finite links.
fn unstorable(v: &Variant, data: &DataSet) -> Option<String> {
    let format = link_format(v);
    data.links.iter().find_map(|g| {
        let mut copy = g.cast::<f32>();
        round_gauge_field_for(v, &mut copy)
            .err()
            .map(|e| format!("the links cannot be stored as {}: {e}", format.name()))
    })
}

fn compare_kernel_any(
    gpu: &Gpu,
    entry: &StencilEntry,
    v: &Variant,
    data: &DataSet,
    seed: u64,
) -> Outcome {
    match v.spinor {
        StorageFormat::F64 => outcome(v.spinor, compare_kernel::<f64>(gpu, entry, v, data, seed)),
        StorageFormat::F32 => outcome(v.spinor, compare_kernel::<f32>(gpu, entry, v, data, seed)),
        // Narrow formats compute in their compute type (f32; packed30 f64), on both sides.
        narrow => match unstorable(v, data) {
            Some(why) => Outcome::Skipped(why),
            None if narrow.compute() == StorageFormat::F64 => {
                outcome(narrow, compare_kernel::<f64>(gpu, entry, v, data, seed))
            }
            None => outcome(narrow, compare_kernel::<f32>(gpu, entry, v, data, seed)),
        },
    }
}

/// Rows for every variant of one catalog kernel on one data set, then the narrow storage
/// formats (each with recon 18 and 12, with and without xpay, even sites), and recon 8.
fn check_kernel(gpu: &Gpu, entry: &StencilEntry, data: &DataSet, seed: u64) -> Vec<CheckRow> {
    let ir = (entry.ir)();
    let row = |v: &Variant, outcome| CheckRow {
        kernel: entry.name.clone(),
        variant: v.canonical(),
        data: data.name.clone(),
        outcome,
    };
    let mut rows = Vec::new();
    for v in Variant::all() {
        if ir.knobs.check(&ir.name, &v).is_err() {
            continue;
        }
        let outcome = match (entry.cuda)(&v) {
            Err(e) => Outcome::Skipped(e.to_string()),
            Ok(_) => compare_kernel_any(gpu, entry, &v, data, seed),
        };
        rows.push(row(&v, outcome));
    }
    // Formats and compressions beyond the generated ones: one note each.
    let base = Variant::default();
    let mut extra: Vec<Variant> = Vec::new();
    for &f in StorageFormat::EVERY
        .iter()
        .filter(|f| !StorageFormat::ALL.contains(f))
    {
        for recon in Recon::ALL {
            for xpay in [false, true] {
                extra.push(Variant {
                    spinor: f,
                    gauge: f,
                    recon,
                    xpay,
                    ..base
                });
            }
        }
    }
    extra.extend(
        Recon::EVERY
            .iter()
            .filter(|r| !Recon::ALL.contains(r))
            .map(|&r| {
                let mut v = base;
                v.recon = r;
                v
            }),
    );
    extra.extend(long_recon_variants(&ir));
    extra.extend(packed_variants());
    extra.extend(link_scale_variants(&ir));
    extra.extend(multi_rhs_variants());
    for v in extra {
        // The walk is a thread map of one-hop stencils: others refuse it, and are not
        // listed as skipped for it.
        let refused_walk = v.slices == Slices::Walk && (entry.cuda)(&v).is_err();
        if ir.knobs.check(&ir.name, &v).is_err() || refused_walk {
            continue;
        }
        let outcome = match (entry.cuda)(&v) {
            Err(e) => Outcome::Skipped(e.to_string()),
            Ok(_) => compare_kernel_any(gpu, entry, &v, data, seed),
        };
        rows.push(row(&v, outcome));
    }
    rows
}

/// Sources of the multi-RHS rows: the slices of one field, all in one block.
const MULTI_RHS_SOURCES: usize = 4;

/// The multi-right-hand-side variants (checked on [`MULTI_RHS_SOURCES`] sources, the
/// slices of one field): the slices inside the block, and walked by each thread of a
/// tile ([`Slices::Walk`], one-hop stencils); f32 recon 12 and f64 recon 18, plain (even
/// sites) and with odd sites, dagger, xpay and antiperiodic time.
pub(super) fn multi_rhs_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for (format, recon, slices) in [
        (StorageFormat::F32, Recon::R12, Slices::InBlock),
        (StorageFormat::F64, Recon::R18, Slices::InBlock),
        (StorageFormat::F32, Recon::R12, Slices::Walk),
        (StorageFormat::F64, Recon::R18, Slices::Walk),
    ] {
        let plain = Variant {
            spinor: format,
            gauge: format,
            recon,
            slices,
            ..Variant::default()
        };
        out.push(plain);
        out.push(Variant {
            sites: OutputSites::Parity(Parity::Odd),
            dagger: true,
            xpay: true,
            boundary: TimeBoundary::Antiperiodic,
            ..plain
        });
    }
    out
}

/// The packed-spinor variants (spinor-only formats: packed20 computed in f32, packed30 in
/// f64), with links in the compute type, recon 18 and 12 (a spec's knobs may exclude
/// 12), plain (even sites) and with odd sites, dagger, xpay and antiperiodic time.
pub(super) fn packed_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for spinor in [StorageFormat::Packed20, StorageFormat::Packed30] {
        for recon in Recon::ALL {
            let plain = Variant {
                spinor,
                gauge: spinor.compute(),
                recon,
                ..Variant::default()
            };
            out.push(plain);
            out.push(Variant {
                sites: OutputSites::Parity(Parity::Odd),
                dagger: true,
                xpay: true,
                boundary: TimeBoundary::Antiperiodic,
                ..plain
            });
        }
    }
    out
}

/// The compressed long-link variants of a kernel with long links (none for the others):
/// long recon 13, 12 + sign and 9, each in f64, f32 and fixed16, with three settings of
/// the other knobs (even; odd, dagger, xpay; full lattice, xpay, antiperiodic).
fn long_recon_variants(ir: &Ir) -> Vec<Variant> {
    if long_link_fields(ir).is_empty() {
        return Vec::new();
    }
    let knobs = [
        (
            OutputSites::Parity(Parity::Even),
            false,
            false,
            TimeBoundary::Periodic,
        ),
        (
            OutputSites::Parity(Parity::Odd),
            true,
            true,
            TimeBoundary::Periodic,
        ),
        (OutputSites::Full, false, true, TimeBoundary::Antiperiodic),
    ];
    let mut out = Vec::new();
    for long_recon in LongRecon::EVERY
        .into_iter()
        .filter(|&l| l != LongRecon::R18)
    {
        for format in [
            StorageFormat::F64,
            StorageFormat::F32,
            StorageFormat::Fixed16,
        ] {
            for (sites, dagger, xpay, boundary) in knobs {
                out.push(Variant {
                    sites,
                    dagger,
                    xpay,
                    spinor: format,
                    gauge: format,
                    boundary,
                    long_recon,
                    ..Variant::default()
                });
            }
        }
    }
    out
}

/// The global-link-scale variants of a kernel with gauge fields (none for the others):
/// fixed16 and fixed8 links under f32 spinors and under spinors of the link format, even
/// sites, and odd sites with dagger and xpay; for kernels with long links also with long
/// recon 12 + sign (long links in their own scale c).
pub(super) fn link_scale_variants(ir: &Ir) -> Vec<Variant> {
    if gauge_names(ir).is_empty() {
        return Vec::new();
    }
    let longs: &[LongRecon] = if long_link_fields(ir).is_empty() {
        &[LongRecon::R18]
    } else {
        &[LongRecon::R18, LongRecon::R12]
    };
    let mut out = Vec::new();
    for gauge in [StorageFormat::Fixed16, StorageFormat::Fixed8] {
        for spinor in [StorageFormat::F32, gauge] {
            for &long_recon in longs {
                for (sites, on) in [
                    (OutputSites::Parity(Parity::Even), false),
                    (OutputSites::Parity(Parity::Odd), true),
                ] {
                    out.push(Variant {
                        sites,
                        dagger: on,
                        xpay: on,
                        spinor,
                        gauge,
                        long_recon,
                        link_scale: LinkScale::Global,
                        ..Variant::default()
                    });
                }
            }
        }
    }
    out
}

/// GPU M̂ (Wilson) or A (staggered) against the host operator, in compute type T.
fn compare_operator<T: Real>(
    gpu: &Gpu,
    tuner: &Tuner,
    links: &[GaugeField<f64>],
    format: StorageFormat,
    recon: Recon,
    dagger: bool,
) -> Result<f64, String> {
    let lat = *links[0].lattice();
    let host: Vec<GaugeField<T>> = links.iter().map(|g| g.cast::<T>()).collect();
    // Spinor-only formats (packed) keep their links in the compute type.
    let gauge_format = format.links_beside();
    let lf = LinkFormat::new(gauge_format.link_storage(), recon.compression());
    let d_links = host
        .iter()
        .map(|g| DeviceField::from_gauge(gpu, g, lf))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let parity = Parity::Even;
    let wilson = links.len() == 1;
    let (cpu_out, layout, gpu_out) = if wilson {
        let kappa = 0.12;
        let boundary = TimeBoundary::Antiperiodic;
        let op = EvenOddWilson::new(host[0].clone(), kappa, parity, boundary);
        let layout = op.layout();
        let psi = ColourSpinorField::<f64>::gaussian(layout, 31).cast::<T>();
        let mut cpu = ColourSpinorField::<T>::zeros(layout);
        if dagger {
            op.apply_dagger(&mut cpu, &psi).map_err(err)?;
        } else {
            op.apply(&mut cpu, &psi).map_err(err)?;
        }
        let gauge = d_links.into_iter().next().ok_or("no links")?;
        let v = Variant {
            spinor: format,
            gauge: gauge_format,
            recon,
            boundary,
            ..Variant::default()
        };
        let dop = Schur::wilson(gpu, gauge, lat, kappa, parity, &v).map_err(err)?;
        let d_psi = DeviceField::from_spinor(gpu, &psi, format.fermion_format()).map_err(err)?;
        let mut d_out = device_spinor(gpu, format, 24, lat.half_volume()).map_err(err)?;
        dop.apply_in(DeviceRun::new(gpu, tuner), &mut d_out, &d_psi, dagger)
            .map_err(err)?;
        (cpu, layout, d_out)
    } else {
        let mass = 0.05;
        let sl = StaggeredLinks::Improved {
            fat: host[0].clone(),
            long: host[1].clone(),
        };
        let op = EvenOddStaggered::new(sl, mass, parity);
        let layout = op.layout();
        let psi = ColourSpinorField::<f64>::gaussian(layout, 32).cast::<T>();
        let mut cpu = ColourSpinorField::<T>::zeros(layout);
        op.apply(&mut cpu, &psi).map_err(err)?;
        let formats = Variant {
            spinor: format,
            gauge: gauge_format,
            ..Variant::default()
        };
        let dop = Schur::staggered(gpu, d_links, lat, mass, parity, &formats).map_err(err)?;
        let d_psi = DeviceField::from_spinor(gpu, &psi, format.fermion_format()).map_err(err)?;
        let mut d_out = device_spinor(gpu, format, 6, lat.half_volume()).map_err(err)?;
        dop.apply_in(DeviceRun::new(gpu, tuner), &mut d_out, &d_psi, false)
            .map_err(err)?;
        (cpu, layout, d_out)
    };
    let g = gpu_out.to_spinor::<T>(gpu, layout).map_err(err)?;
    Ok(relative_error(&as_c64(&g), &as_c64(&cpu_out)))
}

/// The operator rows: Wilson M̂ and M̂† on lat.sample.l8 (f64 recon 18, f32 recon 18
/// and 12, packed20 and packed30 spinors with links in their compute type), MILC's
/// asqtad A on fat.l8/long.l8 (f64, f32, packed20, packed30), and the open- and
/// SF-boundary Wilson and clover M̂ on openQCD's file ([`super::open_boundary`]).
/// The tuner of the operator rows: the default cache, tuning off (default launches).
fn check_tuner(gpu: &Gpu) -> Tuner {
    Tuner::new(
        &qdsl_runtime::tune::default_path(),
        gpu.fingerprint(&qdsl_runtime::operator::device::codegen_hash()),
    )
    .with_enabled(false)
    .with_progress(false)
}

fn check_operators(gpu: &Gpu, dir: &Path) -> Vec<CheckRow> {
    let tuner = check_tuner(gpu);
    let mut rows = Vec::new();
    let mut push = |kernel: &str, variant: String, data: &str, outcome| {
        rows.push(CheckRow {
            kernel: kernel.into(),
            variant,
            data: data.into(),
            outcome,
        })
    };
    let run =
        |links: &[GaugeField<f64>], f: StorageFormat, r: Recon, dagger: bool| match f.compute() {
            StorageFormat::F64 => {
                operator_outcome(f, compare_operator::<f64>(gpu, &tuner, links, f, r, dagger))
            }
            _ => operator_outcome(f, compare_operator::<f32>(gpu, &tuner, links, f, r, dagger)),
        };
    match read(dir, "milc/lat.sample.l8", &ReadOptions::default()) {
        Ok(u) => {
            let links = [u];
            for (f, r) in [
                (StorageFormat::F64, Recon::R18),
                (StorageFormat::F32, Recon::R18),
                (StorageFormat::F32, Recon::R12),
                (StorageFormat::Packed20, Recon::R18),
                (StorageFormat::Packed30, Recon::R18),
            ] {
                for dagger in [false, true] {
                    let name = if dagger {
                        "wilson_eo M̂†"
                    } else {
                        "wilson_eo M̂"
                    };
                    let settings =
                        format!("even κ=0.12 antiperiodic {} recon={}", f.name(), r.reals());
                    push(
                        name,
                        settings,
                        "milc/lat.sample.l8",
                        run(&links, f, r, dagger),
                    );
                }
            }
        }
        Err(e) => push(
            "wilson_eo M̂",
            "-".into(),
            "milc/lat.sample.l8",
            Outcome::Failed(e),
        ),
    }
    let smeared = ReadOptions::smeared_links();
    match (
        read(dir, "milc/fat.l8", &smeared),
        read(dir, "milc/long.l8", &smeared),
    ) {
        (Ok(fat), Ok(long)) => {
            let links = [fat, long];
            for f in [
                StorageFormat::F64,
                StorageFormat::F32,
                StorageFormat::Packed20,
                StorageFormat::Packed30,
            ] {
                let settings = format!("even m=0.05 {} recon=18", f.name());
                push(
                    "asqtad_eo 4m²−D_eo D_oe",
                    settings,
                    "milc/fat.l8+long.l8",
                    run(&links, f, Recon::R18, false),
                );
            }
        }
        (Err(e), _) | (_, Err(e)) => push(
            "asqtad_eo 4m²−D_eo D_oe",
            "-".into(),
            "milc/fat.l8+long.l8",
            Outcome::Failed(e),
        ),
    }
    rows.extend(super::open_boundary::check_open_boundary_operators(
        gpu, &tuner, dir,
    ));
    rows
}

/// The names of the gauge fields of `ir`, in declaration order (the order of a data
/// set's links).
fn gauge_names(ir: &Ir) -> Vec<&str> {
    ir.fields
        .iter()
        .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
        .map(|f| f.name.as_str())
        .collect()
}

/// The random data set of a kernel with `gauges` gauge fields on `lat`: Haar-random SU(3)
/// links, except that a long (Naik) field holds asqtad long links built from random thin
/// links (MILC phases and antiperiodic time folded in, u0 = 1), so that every long-link
/// compression, recon 12 + sign included, can store it. A gauge-free kernel still takes
/// its lattice from one field.
fn random_links(lat: Lattice, ir: &Ir, gauges: usize, seed: u64) -> Result<DataSet, String> {
    let names = gauge_names(ir);
    let links = (0..gauges.max(1))
        .map(|k| {
            let u = GaugeField::random(lat, seed + 100 + k as u64);
            match names.get(k).filter(|n| is_long(ir, n)) {
                Some(_) => AsqtadLong::smear_cpu(&fold_staggered_phases(&u), 1.0)
                    .map_err(|e| format!("building asqtad long links: {e}")),
                None => Ok(u),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(DataSet {
        name: "random".into(),
        links,
    })
}

/// Every supported variant of every catalog kernel (random fields on `opts.dims`, then
/// the real configuration), then the operators; `progress` receives each finished row.
pub fn run_check(
    gpu: &Gpu,
    opts: &CheckOptions,
    progress: &mut dyn FnMut(&CheckRow),
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let mut emit = |new: Vec<CheckRow>, rows: &mut Vec<CheckRow>| {
        for r in new {
            progress(&r);
            rows.push(r);
        }
    };
    let wanted = |name: &str| opts.filter.as_deref().is_none_or(|f| name.contains(f));
    for entry in qdsl_kernels::catalog::stencils()
        .iter()
        .filter(|e| wanted(&e.name))
    {
        // Dense-link kernels (the coarse hop): random fields only, no real configuration.
        if lower(&(entry.ir)()).is_ok_and(|l| l.dense.is_some()) {
            let dense = super::dense::check_dense_kernel(gpu, entry, opts.dims, opts.seed);
            emit(dense, &mut rows);
            continue;
        }
        let gauges = (entry.ir)()
            .fields
            .iter()
            .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
            .count();
        let random = Lattice::new(opts.dims)
            .map_err(|e| e.to_string())
            .and_then(|lat| random_links(lat, &(entry.ir)(), gauges, opts.seed));
        match random {
            Ok(random) => emit(check_kernel(gpu, entry, &random, opts.seed), &mut rows),
            Err(e) => emit(
                vec![CheckRow {
                    kernel: entry.name.clone(),
                    variant: "-".into(),
                    data: "random".into(),
                    outcome: Outcome::Failed(e),
                }],
                &mut rows,
            ),
        }
        match real_links(&opts.data_dir, &entry.name, gauges) {
            Ok(data) => emit(check_kernel(gpu, entry, &data, opts.seed), &mut rows),
            Err(e) => emit(
                vec![CheckRow {
                    kernel: entry.name.clone(),
                    variant: "-".into(),
                    data: "real configuration".into(),
                    outcome: Outcome::Failed(e),
                }],
                &mut rows,
            ),
        }
    }
    if ["wilson_eo", "asqtad_eo", "clover_eo"]
        .iter()
        .any(|k| wanted(k))
    {
        emit(check_operators(gpu, &opts.data_dir), &mut rows);
    }
    emit(
        super::mobius::check_mobius(
            gpu,
            &check_tuner(gpu),
            opts.dims,
            opts.seed,
            &opts.data_dir,
            &wanted,
        ),
        &mut rows,
    );
    emit(
        super::smear::check_smearing(gpu, &opts.data_dir, &wanted),
        &mut rows,
    );
    emit(
        super::block_blas::check_block_dot(gpu, opts.dims.iter().product(), opts.seed, &wanted),
        &mut rows,
    );
    emit(
        super::block_blas::check_block_axpy(gpu, opts.dims.iter().product(), opts.seed, &wanted),
        &mut rows,
    );
    emit(
        super::coarse::check_coarse(gpu, opts.seed, &wanted),
        &mut rows,
    );
    rows
}

#[cfg(test)]
#[path = "gpu_tests.rs"]
mod gpu_tests;
