//! `qdsl bench --grid Px,Py,Pz,Pt --smear [--lattice X,Y,Z,T | --sizes L]`: decomposed
//! asqtad smearing over the ranks of each grid against one GPU, in f32 and f64, both
//! ways of Shi et al.: the extended volume ([`qdsl_runtime::distributed::smear`]) and
//! the "standard" exchange per staple level ([`StandardSmearing`]).
//!
//! Per row, random thin links (phases folded in), u0 = 0.9, fat and long links, halos as
//! deep as asqtad's paths reach (2: Lepage, Naik):
//!
//! * `1 GPU`: the staged kernels of both smearings on GPU 0 over the global lattice
//!   (median of the timed repetitions, kernels only: the links stay on the GPU);
//! * `exchange`: the one exchange of the thin links (faces and corners, through the
//!   host), the slowest rank, median;
//! * `device exch.`: the same exchange on the device ([`DeviceLinkHalo`] through NCCL,
//!   the links resident on the GPU; only where every rank has a GPU of its own), the
//!   slowest rank, median;
//! * `kernels`: both smearings on each rank's extended lattice, the slowest rank, median;
//! * `standard`: both smearings over each rank's own sites with the staple fields'
//!   halos exchanged between the passes through NCCL (after the same thin-link
//!   exchange; where every rank has a GPU), the slowest rank, median; `field MiB`: the
//!   fields' bytes each rank receives per fat + long smearing; `overlapped`: the same
//!   with each kernel's interior computed while the fields' halos travel (NCCL, where
//!   x is not cut; else as `standard`); `own sites`: the same
//!   kernels with the fields' halos left alone (their arithmetic without the exchanges);
//! * `halo KiB`: thin links each rank receives; `work`: extended ÷ local sites (the
//!   redundant smearing of the halo);
//! * efficiency = T₁ / (P · (exchange + kernels)), with the host's exchange (`eff.`), the
//!   device's (`eff. dev.`), and for the standard smearing T₁ / (P · (device exch. +
//!   the faster of standard and overlapped)) (`eff. std.`).
//!
//! Rank r runs on GPU r mod the GPU count.

use super::scaling::median;
use crate::app::solve::GridTransport;
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{Decomposition, ExtendedLattice, Lattice, ProcessGrid};
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};
use qdsl_runtime::comm::nccl::NcclLibrary;
use qdsl_runtime::comm::{run_ranks, CommConfig, ThreadComm};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::distributed::device::{DeviceLinkHalo, DeviceTransport, StandardSmearing};
use qdsl_runtime::distributed::smear::{
    check_smearing_depth, exchange_thin_links, path_reach, ExtendedSmearCost,
};
use qdsl_runtime::distributed::SharedComm;
use qdsl_runtime::smear::{upload_links, GpuReal, GpuSmearer, NoHooks};
use std::time::Instant;

const U0: f64 = 0.9;

/// One row: a precision, a lattice and a grid.
#[derive(Clone, Debug)]
pub struct GridSmearRow {
    /// "f32" or "f64".
    pub real: &'static str,
    /// The global lattice.
    pub global: Lattice,
    /// The grid.
    pub grid: ProcessGrid,
    /// µs of both smearings on one GPU over the global lattice.
    pub single_us: f64,
    /// µs of the thin links' exchange (slowest rank).
    pub exchange_us: f64,
    /// µs of the thin links' exchange on the device through NCCL (slowest rank; `None`
    /// where the ranks outnumber the GPUs).
    pub device_exchange_us: Option<f64>,
    /// µs of both smearings on the extended lattice (slowest rank).
    pub kernels_us: f64,
    /// µs of both standard smearings, the fields' exchanges included (slowest rank;
    /// `None` where the ranks outnumber the GPUs).
    pub standard_us: Option<f64>,
    /// µs of both standard smearings with the interior computed while the fields'
    /// halos travel (where the transport and the boxes allow it, else as `standard_us`).
    pub overlapped_us: Option<f64>,
    /// µs of the standard smearings' kernels alone, without the fields' exchanges
    /// (slowest rank; `None` where the ranks outnumber the GPUs).
    pub own_sites_us: Option<f64>,
    /// Bytes of staple fields each rank receives per standard fat + long smearing.
    pub field_bytes: usize,
    /// Bytes of thin links each rank receives.
    pub halo_bytes: usize,
    /// Extended ÷ local sites.
    pub work_ratio: f64,
    /// T₁ / (P · (exchange + kernels)).
    pub efficiency: f64,
}

impl GridSmearRow {
    /// T₁ / (P · (device exchange + kernels)).
    pub fn device_efficiency(&self) -> Option<f64> {
        self.device_exchange_us
            .map(|x| self.single_us / (self.grid.size() as f64 * (x + self.kernels_us)))
    }

    /// T₁ / (P · (device exchange + standard smearings)), the faster of the serial and
    /// the overlapped runs.
    pub fn standard_efficiency(&self) -> Option<f64> {
        let s = match self.overlapped_us {
            Some(o) => o.min(self.standard_us?),
            None => self.standard_us?,
        };
        Some(self.single_us / (self.grid.size() as f64 * (self.device_exchange_us? + s)))
    }
}

/// Both smearers of `T` on `gpu`.
fn smearers<T: GpuReal>(gpu: &Gpu) -> Result<[GpuSmearer<T>; 2], String> {
    Ok([
        GpuSmearer::<T>::new::<AsqtadFat>(gpu).map_err(|e| e.to_string())?,
        GpuSmearer::<T>::new::<AsqtadLong>(gpu).map_err(|e| e.to_string())?,
    ])
}

/// The median µs of both smearings of `links` (on their lattice) on `gpu`, kernels
/// only, after `warmup` untimed runs.
fn time_kernels<T: GpuReal>(
    gpu: &Gpu,
    links: &GaugeField<T>,
    (warmup, reps): (usize, usize),
) -> Result<f64, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let smearers = smearers::<T>(gpu)?;
    let mut bufs = Vec::new();
    for s in &smearers {
        let mut b = s.buffers(gpu, links.lattice()).map_err(|x| e(&x))?;
        s.upload(gpu, &mut b, links).map_err(|x| e(&x))?;
        bufs.push(b);
    }
    let stream = gpu.backend().stream();
    let mut samples = Vec::new();
    for k in 0..warmup + reps {
        let start = Instant::now();
        for (s, b) in smearers.iter().zip(bufs.iter_mut()) {
            s.enqueue_with(gpu, None, b, U0).map_err(|x| e(&x))?;
        }
        stream.synchronize().map_err(|x| e(&x))?;
        if k >= warmup {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(median(samples))
}

/// The device side of a row on one rank, through NCCL: the median µs of the thin
/// links' exchange (this rank's part of `ext`'s, uploaded once), then of both standard
/// smearings from the exchanged links, and of their kernels alone (no field exchange),
/// each after `warmup` untimed runs (JIT, NCCL's first contact); and the fields' bytes
/// received per fat + long standard smearing.
/// Every rank calls it together.
fn time_device<T: GpuReal>(
    gpu: &Gpu,
    comm: &SharedComm<ThreadComm>,
    part: &GaugeField<T>,
    ext: &ExtendedLattice,
    config: CommConfig,
    (warmup, reps): (usize, usize),
) -> Result<DeviceTimes, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut transport = GridTransport::Nccl.open(gpu, comm, ext.decomposition().size(), config)?;
    let mut links = upload_links(gpu, part, "thin links").map_err(|x| e(&x))?;
    let mut halo = DeviceLinkHalo::<T>::new(gpu, *ext).map_err(|x| e(&x))?;
    let stream = gpu.backend().stream();
    let mut timed = |run: &mut dyn FnMut(&mut dyn DeviceTransport) -> Result<(), String>| {
        let mut samples = Vec::new();
        for k in 0..warmup.max(1) + reps {
            let start = Instant::now();
            run(&mut *transport)?;
            stream.synchronize().map_err(|x| e(&x))?;
            if k >= warmup.max(1) {
                samples.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
        Ok::<f64, String>(median(samples))
    };
    let exchange = timed(&mut |t| halo.exchange(gpu, t, &mut links).map_err(|x| e(&x)))?;
    let smearers = smearers::<T>(gpu)?;
    let mut standard =
        StandardSmearing::new(gpu, *ext, &[&smearers[0], &smearers[1]]).map_err(|x| e(&x))?;
    let mut bufs = Vec::new();
    for s in &smearers {
        let mut b = s.buffers(gpu, ext.extended()).map_err(|x| e(&x))?;
        s.encode_device_links(gpu, &links, &mut b)
            .map_err(|x| e(&x))?;
        bufs.push(b);
    }
    let field_bytes = smearers.iter().map(|s| standard.field_traffic(s).1).sum();
    let mut standard_timed = |overlap: bool| {
        timed(&mut |t| {
            for (s, b) in smearers.iter().zip(bufs.iter_mut()) {
                standard
                    .enqueue(gpu, None, t, s, b, U0, overlap)
                    .map_err(|x| e(&x))?;
            }
            Ok(())
        })
    };
    let serial = standard_timed(false)?;
    let overlapped = standard_timed(true)?;
    // The same kernels over the own sites with the fields' halos left alone (wrong
    // links at the boundary): the standard smearing's arithmetic without its exchanges.
    let sites = *standard.sites();
    let own = timed(&mut |_| {
        for (s, b) in smearers.iter().zip(bufs.iter_mut()) {
            s.enqueue_boxed_with(gpu, None, b, &[sites], U0, &mut NoHooks)
                .map_err(|x| e(&x))?;
        }
        Ok(())
    })?;
    Ok(DeviceTimes {
        exchange,
        serial,
        overlapped,
        own,
        field_bytes,
    })
}

/// One rank's device times (µs) of [`time_device`] and the fields' bytes it received.
#[derive(Clone, Copy, Debug)]
struct DeviceTimes {
    /// The thin links' exchange.
    exchange: f64,
    /// Both standard smearings, each field exchange completed before the next kernel.
    serial: f64,
    /// Both standard smearings, the interior computed while the fields' halos travel.
    overlapped: f64,
    /// Their kernels alone.
    own: f64,
    /// Fields' bytes received per fat + long smearing.
    field_bytes: usize,
}

/// One rank's part of a row: the host exchange, the extended kernels, the thin links'
/// bytes and, with NCCL, [`time_device`]'s.
type Rank = (f64, f64, usize, Option<DeviceTimes>);

/// One row of real type `T`.
fn row<T: GpuReal>(
    real: &'static str,
    global: Lattice,
    grid: ProcessGrid,
    (warmup, reps): (usize, usize),
) -> Result<GridSmearRow, String> {
    let specs = [
        <AsqtadFat as qdsl_core::dsl::paths::LinkPaths>::spec(),
        <AsqtadLong as qdsl_core::dsl::paths::LinkPaths>::spec(),
    ];
    let depth = specs.iter().map(path_reach).max().unwrap_or(1);
    let dec = Decomposition::with_halo_depth(global, grid, depth).map_err(|e| e.to_string())?;
    let ext = ExtendedLattice::new(dec, depth).map_err(|e| e.to_string())?;
    check_smearing_depth(&ext, &specs).map_err(|e| e.to_string())?;
    let v = fold_staggered_phases(&GaugeField::<f64>::random(global, 17)).cast::<T>();
    let gpu0 = Gpu::open(0).map_err(|e| e.to_string())?;
    let single_us = time_kernels(&gpu0, &v, (warmup, reps))?;
    drop(gpu0);
    let gpus = qdsl_runtime::backend::gpu_count()?.max(1);
    let config = CommConfig::from_env().map_err(|e| e.to_string())?;
    let device_exchange = gpus >= dec.size() && NcclLibrary::get().is_ok();
    let ranks: Vec<Rank> = run_ranks(dec.size(), config, |comm| {
        let comm = SharedComm::new(comm);
        let rank = comm.rank();
        let e = |x: &dyn std::fmt::Display| format!("rank {rank}: {x}");
        let gpu = Gpu::open(rank % gpus).map_err(|x| e(&x))?;
        let mut exchanges = Vec::new();
        let mut part = scatter(&v, &ext, rank).map_err(|x| e(&x))?;
        let mut bytes = 0;
        for k in 0..warmup.min(3) + reps.min(20) {
            part = scatter(&v, &ext, rank).map_err(|x| e(&x))?;
            let start = Instant::now();
            bytes = exchange_thin_links(&comm, &mut part, &ext).map_err(|x| e(&x))?;
            if k >= warmup.min(3) {
                exchanges.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
        let kernels = time_kernels(&gpu, &part, (warmup, reps)).map_err(|x| e(&x))?;
        let device = match device_exchange {
            true => Some(
                time_device(&gpu, &comm, &part, &ext, config, (warmup, reps)).map_err(|x| e(&x))?,
            ),
            false => None,
        };
        Ok((median(exchanges), kernels, bytes, device))
    })
    .into_iter()
    .collect::<Result<_, String>>()?;
    let slowest = |f: &dyn Fn(&Rank) -> f64| ranks.iter().map(f).fold(0.0, f64::max);
    let (exchange_us, kernels_us) = (slowest(&|r| r.0), slowest(&|r| r.1));
    let device = |pick: fn(&DeviceTimes) -> f64| {
        device_exchange.then(|| slowest(&|r| r.3.as_ref().map_or(f64::NAN, pick)))
    };
    let device_exchange_us = device(|d| d.exchange);
    let standard_us = device(|d| d.serial);
    let overlapped_us = device(|d| d.overlapped);
    let own_sites_us = device(|d| d.own);
    let field_bytes = ranks
        .iter()
        .filter_map(|r| r.3.map(|d| d.field_bytes))
        .max()
        .unwrap_or(0);
    let cost = ExtendedSmearCost::of(&ext);
    Ok(GridSmearRow {
        real,
        global,
        grid,
        single_us,
        exchange_us,
        device_exchange_us,
        kernels_us,
        standard_us,
        overlapped_us,
        own_sites_us,
        field_bytes,
        halo_bytes: ranks.iter().map(|r| r.2).max().unwrap_or(0),
        work_ratio: cost.work_ratio(),
        efficiency: single_us / (grid.size() as f64 * (exchange_us + kernels_us)),
    })
}

/// Every row: each lattice, grid, f32 then f64; `notice` gets progress lines.
pub fn run_grid_smear(
    lattices: &[[usize; 4]],
    grids: &[ProcessGrid],
    (warmup, reps): (usize, usize),
    notice: &mut dyn FnMut(&str),
) -> Result<Vec<GridSmearRow>, String> {
    let mut rows = Vec::new();
    for dims in lattices {
        let global = Lattice::new(*dims).map_err(|e| e.to_string())?;
        for &grid in grids {
            notice(&format!(
                "decomposed asqtad smearing on {global}, grid {grid}"
            ));
            rows.push(row::<f32>("f32", global, grid, (warmup, reps))?);
            rows.push(row::<f64>("f64", global, grid, (warmup, reps))?);
        }
    }
    Ok(rows)
}

/// The table of `rows`.
pub fn render_grid_smear(rows: &[GridSmearRow]) -> String {
    let mut s = String::from(
        "decomposed asqtad smearing, fat + long (µs; halo 2): the extended volume (thin links exchanged once, the halo smeared too) and the standard way (own sites only, the staple fields exchanged between the passes)\n",
    );
    s.push_str(&format!(
        "{:<5} {:<14} {:<9} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>10} {:>6} {:>9} {:>9}\n",
        "real",
        "global",
        "grid",
        "1 GPU",
        "exchange",
        "device exch.",
        "kernels",
        "standard",
        "overlapped",
        "own sites",
        "field MiB",
        "halo KiB",
        "work",
        "total",
        "eff.",
        "eff. dev.",
        "eff. std."
    ));
    let or_dash = |x: Option<String>| x.unwrap_or_else(|| "—".to_string());
    let percent = |x: Option<f64>| or_dash(x.map(|x| format!("{:.0}%", 100.0 * x)));
    for r in rows {
        s.push_str(&format!(
            "{:<5} {:<14} {:<9} {:>10.1} {:>10.1} {:>12} {:>10.1} {:>10} {:>10} {:>10} {:>10.1} {:>10.1} {:>6.2} {:>10.1} {:>5.0}% {:>9} {:>9}\n",
            r.real,
            r.global.to_string(),
            r.grid.to_string(),
            r.single_us,
            r.exchange_us,
            or_dash(r.device_exchange_us.map(|x| format!("{x:.1}"))),
            r.kernels_us,
            or_dash(r.standard_us.map(|x| format!("{x:.1}"))),
            or_dash(r.overlapped_us.map(|x| format!("{x:.1}"))),
            or_dash(r.own_sites_us.map(|x| format!("{x:.1}"))),
            r.field_bytes as f64 / (1024.0 * 1024.0),
            r.halo_bytes as f64 / 1024.0,
            r.work_ratio,
            r.exchange_us + r.kernels_us,
            100.0 * r.efficiency,
            percent(r.device_efficiency()),
            percent(r.standard_efficiency()),
        ));
    }
    s
}

/// The rows as JSON.
pub fn grid_smear_json(rows: &[GridSmearRow]) -> serde_json::Value {
    serde_json::json!({
        "extended_volume_smearing": rows.iter().map(|r| serde_json::json!({
            "real": r.real,
            "global": r.global.dims(),
            "grid": r.grid.dims(),
            "single_us": r.single_us,
            "exchange_us": r.exchange_us,
            "device_exchange_us": r.device_exchange_us,
            "device_efficiency": r.device_efficiency(),
            "kernels_us": r.kernels_us,
            "standard_us": r.standard_us,
            "overlapped_us": r.overlapped_us,
            "own_sites_us": r.own_sites_us,
            "standard_efficiency": r.standard_efficiency(),
            "field_bytes": r.field_bytes,
            "halo_bytes": r.halo_bytes,
            "work_ratio": r.work_ratio,
            "efficiency": r.efficiency,
        })).collect::<Vec<_>>(),
    })
}
