//! The gauge-generation bench cases, quenched Wilson action on the GPU in f64, links kept
//! on the device, on the bench's links:
//!
//! * `wilson_heatbath`: one heatbath sweep ([`GpuHeatbath`]: 4 directions × 2
//!   checkerboard colours, one launch each, every link updated once by the three
//!   Cabibbo–Marinari subgroups, Kennedy–Pendleton / Creutz draws from the Philox
//!   streams). Rated with the Wilson force's count
//!   [`ForcePlan::flops_per_site`](qdsl_core::dsl::paths::ForcePlan::flops_per_site) (the
//!   staple sums and the four U Σ† products, which the heatbath computes too; the
//!   subgroup updates, the rejection loops and the random numbers are not counted, so the
//!   GFLOP/s is a lower bound); bytes per site: the four links read once and written
//!   once, 8 · 18 reals ([`force_bytes_per_site`]).
//! * `wilson_hmc`: one whole HMC trajectory ([`GpuHmc::trajectory`]: Omelyan, τ = 1,
//!   [`HMC_STEPS`] steps, so 2 · steps + 1 force evaluations; momenta, H twice with its
//!   reductions, Metropolis). Rated as that many force evaluations (flops and bytes of
//!   the force; the drifts, the exponentials and the reductions are not counted).
//!
//! Time: the median of up to [`MAX_REPS`] sweeps or trajectories after up to
//! [`MAX_WARMUP`] (each with its own sweep or trajectory number).

use super::report::{BenchCase, BenchResult, CopyBandwidth};
use super::smear::{force_bytes_per_site, MAX_REPS, MAX_WARMUP};
use qdsl_core::dsl::paths::GaugeAction;
use qdsl_core::dsl::variant::{Recon, StorageFormat};
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::generate::{Hmc, Integrator, Level};
use qdsl_kernels::WilsonGauge;
use qdsl_runtime::device::Gpu;
use qdsl_runtime::generate::{DeviceGauge, GpuHeatbath, GpuHmc};
use std::time::Instant;

/// β of the bench (the heatbath's acceptance, hence its time, depends on it mildly: the
/// middle of the scaling window).
const BETA: f64 = 6.0;

/// Omelyan steps of the bench trajectory (τ = 1).
pub const HMC_STEPS: usize = 10;

/// Generation runs in f64 with recon-18 links: any other case is an error naming `what`
/// and the case's format.
fn require_f64_recon18(case: &BenchCase, what: &str) -> Result<(), String> {
    if case.format != StorageFormat::F64 || case.recon != Recon::R18 {
        return Err(format!(
            "{what} runs in f64 with recon18 links, not {:?} recon{}",
            case.format,
            case.recon.reals()
        ));
    }
    Ok(())
}

/// Times one Wilson heatbath sweep of `u` on the GPU (f64, recon 18 only).
pub fn bench_heatbath(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    require_f64_recon18(case, "the heatbath")?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let lat = *u.lattice();
    let t0 = Instant::now();
    let hb = GpuHeatbath::new(gpu, &WilsonGauge::spec(), BETA, lat).map_err(|e| err(&e))?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut links = DeviceGauge::upload(gpu, u).map_err(|e| err(&e))?;
    let mut sweep = 0u64;
    let time_us = gpu
        .time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), || {
            sweep += 1;
            hb.heatbath_sweep(gpu, &mut links, 1, sweep)
                .map_err(|e| qdsl_runtime::device::DeviceError::Shape(e.to_string()))
        })
        .map_err(|e| err(&e))?;
    let flops = WilsonGauge::force_plan()
        .map_err(|e| err(&e))?
        .flops_per_site();
    let sites = lat.volume();
    let bytes = force_bytes_per_site(8);
    Ok(BenchResult {
        label: case.label(),
        extent: lat.dims()[0],
        sites,
        time_us,
        flops_per_site: flops,
        bytes,
        rates: super::metrics::rates(sites, flops, bytes, time_us, Some(copy.kernel_gbs)),
        compile: "-".into(),
        launch: "one thread per site, 8 launches (4 directions × 2 colours), 128 threads".into(),
        jit_ms,
        tune_ms: 0.0,
    })
}

/// Times one Wilson HMC trajectory from `u` on the GPU (f64, recon 18 only).
pub fn bench_hmc(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    require_f64_recon18(case, "HMC")?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let lat = *u.lattice();
    let level = Level::new(&WilsonGauge::spec(), BETA, HMC_STEPS, Integrator::Omelyan)
        .map_err(|e| err(&e))?;
    let cpu = Hmc::new(vec![level], 1.0).map_err(|e| err(&e))?;
    let t0 = Instant::now();
    let hmc = GpuHmc::new(gpu, &cpu, lat).map_err(|e| err(&e))?;
    let jit_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut links = DeviceGauge::upload(gpu, u).map_err(|e| err(&e))?;
    let mut trajectory = 0u64;
    let time_us = gpu
        .time_us(warmup.min(MAX_WARMUP), reps.min(MAX_REPS), || {
            trajectory += 1;
            hmc.trajectory(gpu, &mut links, 1, trajectory)
                .map(|_| ())
                .map_err(|e| qdsl_runtime::device::DeviceError::Shape(e.to_string()))
        })
        .map_err(|e| err(&e))?;
    let evaluations = 2 * HMC_STEPS + 1;
    let flops = evaluations
        * WilsonGauge::force_plan()
            .map_err(|e| err(&e))?
            .flops_per_site();
    let one = force_bytes_per_site(8);
    let bytes = qdsl_core::dsl::info::ByteModels {
        minimal: evaluations * one.minimal,
        quda: evaluations * one.quda,
    };
    let sites = lat.volume();
    Ok(BenchResult {
        label: case.label(),
        extent: lat.dims()[0],
        sites,
        time_us,
        flops_per_site: flops,
        bytes,
        rates: super::metrics::rates(sites, flops, bytes, time_us, Some(copy.kernel_gbs)),
        compile: "-".into(),
        launch: format!(
            "Omelyan, {HMC_STEPS} steps, tau 1: {evaluations} force evaluations, default launches"
        ),
        jit_ms,
        tune_ms: 0.0,
    })
}
