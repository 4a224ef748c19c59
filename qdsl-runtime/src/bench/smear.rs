//! The link-path bench cases, rated with MILC's and QUDA's flop counts:
//!
//! * asqtad fat7 + Naik links (the [`AsqtadFat`] and [`AsqtadLong`] schedules, one after
//!   the other) on the whole lattice, [`MILC_ASQTAD_FLOPS_PER_SITE`] = 62,640 flops per
//!   site; bytes per site: the four thin links read once and the four fat and four long
//!   links written once, 12 · 18 reals;
//! * the tree-level Symanzik gauge force ([`SymanzikGauge`] through [`GpuGaugeForce`]:
//!   staple schedule, then F = −(β/3) TA[U Σ†]),
//!   [`MILC_SYMANZIK_FORCE_FLOPS_PER_SITE`] = 153,004 flops per site; bytes per site: the
//!   four links read once and the four force matrices written once, 8 · 18 reals.
//!
//! Both byte models alike; the node buffers of the schedules are intermediate traffic and
//! not counted. Sites are all V sites (both parities). Time: the median of up to
//! [`MAX_REPS`] whole constructions after up to [`MAX_WARMUP`].

use super::metrics::rates;
use super::report::{BenchCase, BenchResult, CopyBandwidth};
use crate::device::{DeviceError, Gpu};
use crate::smear::{GpuGaugeForce, GpuReal, GpuSmearer};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::paths::force::MILC_SYMANZIK_FORCE_FLOPS_PER_SITE;
use qdsl_core::dsl::paths::info::MILC_ASQTAD_FLOPS_PER_SITE;
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::field::GaugeField;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, SymanzikGauge};
use std::time::Instant;

/// Tadpole factor of the bench (MILC's value for lat.sample.l8; timing does not depend
/// on it).
const U0: f64 = 0.502;

/// At most this many untimed constructions before timing.
pub const MAX_WARMUP: usize = 3;

/// At most this many timed constructions (the median is reported).
pub const MAX_REPS: usize = 20;

/// Coupling of the force bench (timing does not depend on it).
const BETA: f64 = 5.7;

/// Bytes per site of `links` links of 18 reals of `bytes` each, in both models.
fn link_bytes(links: usize, bytes: usize) -> ByteModels {
    let b = links * 18 * bytes;
    ByteModels {
        quda: b,
        minimal: b,
    }
}

/// Bytes per site of the asqtad case: 12 links of 18 reals of `bytes` each.
pub fn asqtad_bytes_per_site(bytes: usize) -> ByteModels {
    link_bytes(12, bytes)
}

/// Bytes per site of the gauge-force case: 8 matrices (4 links in, 4 forces out).
pub fn force_bytes_per_site(bytes: usize) -> ByteModels {
    link_bytes(8, bytes)
}

/// The result of a case timed at `time_us` on the lattice of `u`.
fn result(
    case: &BenchCase,
    u: &GaugeField<f64>,
    time_us: f64,
    flops_per_site: usize,
    bytes: ByteModels,
    copy: &CopyBandwidth,
    jit_ms: f64,
) -> BenchResult {
    let sites = u.lattice().volume();
    BenchResult {
        label: case.label(),
        extent: u.lattice().dims()[0],
        sites,
        time_us,
        flops_per_site,
        bytes,
        rates: rates(sites, flops_per_site, bytes, time_us, Some(copy.kernel_gbs)),
        launch: "one thread per site, 128 per block".into(),
        jit_ms,
        tune_ms: 0.0,
    }
}

fn run<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let v = fold_staggered_phases(&u.cast::<T>());
    let t0 = Instant::now();
    let fat = GpuSmearer::<T>::new::<AsqtadFat>(gpu).map_err(shape)?;
    let long = GpuSmearer::<T>::new::<AsqtadLong>(gpu).map_err(shape)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut fat_bufs = fat.buffers(gpu, u.lattice())?;
    let mut long_bufs = long.buffers(gpu, u.lattice())?;
    fat.upload(gpu, &mut fat_bufs, &v)?;
    long.upload(gpu, &mut long_bufs, &v)?;
    // One construction per sample: each is hundreds of launches and milliseconds long,
    // so there is no per-launch host gap to hide, and the sample counts are capped.
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), || {
        fat.enqueue(gpu, &mut fat_bufs, U0)?;
        long.enqueue(gpu, &mut long_bufs, U0)
    })?;
    Ok(result(
        case,
        u,
        time_us,
        MILC_ASQTAD_FLOPS_PER_SITE,
        asqtad_bytes_per_site(T::BYTES),
        copy,
        jit_ms,
    ))
}

fn run_force<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, DeviceError> {
    let v = u.cast::<T>();
    let t0 = Instant::now();
    let force = GpuGaugeForce::<T>::new::<SymanzikGauge>(gpu).map_err(shape)?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut bufs = force.buffers(gpu, u.lattice())?;
    force.upload(gpu, &mut bufs, &v)?;
    let time_us = gpu.time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), || {
        force.enqueue(gpu, &mut bufs, BETA)
    })?;
    Ok(result(
        case,
        u,
        time_us,
        MILC_SYMANZIK_FORCE_FLOPS_PER_SITE,
        force_bytes_per_site(T::BYTES),
        copy,
        jit_ms,
    ))
}

fn shape(e: crate::smear::SmearGpuError) -> DeviceError {
    match e {
        crate::smear::SmearGpuError::Device(d) => d,
        other => DeviceError::Shape(other.to_string()),
    }
}

/// Times the asqtad fat + long link construction of `u` in the case's precision (f32 or
/// f64; other formats are refused with the reason).
pub fn bench_asqtad_links(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    match case.format {
        StorageFormat::F64 => run::<f64>(gpu, u, case, copy, warmup, reps),
        StorageFormat::F32 => run::<f32>(gpu, u, case, copy, warmup, reps),
        other => return Err(refused("asqtad link smearing", other)),
    }
    .map_err(|e| e.to_string())
}

/// Times the tree-level Symanzik gauge force of `u` in the case's precision (f32 or f64;
/// other formats are refused with the reason).
pub fn bench_symanzik_force(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    match case.format {
        StorageFormat::F64 => run_force::<f64>(gpu, u, case, copy, warmup, reps),
        StorageFormat::F32 => run_force::<f32>(gpu, u, case, copy, warmup, reps),
        other => return Err(refused("the Symanzik gauge force", other)),
    }
    .map_err(|e| e.to_string())
}

/// Why a format is refused.
fn refused(what: &str, format: StorageFormat) -> String {
    format!("{what} runs in f64/f32, not {}", format.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 12 links × 18 reals: 864 bytes in f32, 1728 in f64; 24⁴ sites in 1 ms at 62,640
    /// flops per site: 331,776 · 62,640 / (10⁻³ s · 10⁹) = 20,782.44864 GFLOP/s.
    #[test]
    fn bytes_and_rate_of_the_asqtad_case() {
        assert_eq!(asqtad_bytes_per_site(4).minimal, 864);
        assert_eq!(asqtad_bytes_per_site(8).quda, 1728);
        let r = rates(
            24usize.pow(4),
            MILC_ASQTAD_FLOPS_PER_SITE,
            asqtad_bytes_per_site(4),
            1000.0,
            None,
        );
        assert!((r.gflops - 20_782.448_64).abs() < 1e-6, "{}", r.gflops);
    }

    /// 8 matrices × 18 reals: 576 bytes in f32, 1152 in f64; 32⁴ sites in 2 ms at 153,004
    /// flops per site: 1,048,576 · 153,004 / (2·10⁻³ s · 10⁹) = 80,218.161152 GFLOP/s.
    #[test]
    fn bytes_and_rate_of_the_force_case() {
        assert_eq!(force_bytes_per_site(4).minimal, 576);
        assert_eq!(force_bytes_per_site(8).quda, 1152);
        let r = rates(
            32usize.pow(4),
            MILC_SYMANZIK_FORCE_FLOPS_PER_SITE,
            force_bytes_per_site(8),
            2000.0,
            None,
        );
        assert!((r.gflops - 80_218.161_152).abs() < 1e-6, "{}", r.gflops);
    }
}
