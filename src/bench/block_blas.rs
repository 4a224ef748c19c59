//! `qdsl bench` rows of the tensor-core block inner products (`mma_tile!`,
//! [`qdsl_kernels::block_blas`]): c_ij = ⟨a_i, b_j⟩ for two sets of n spinor fields
//! (12 complex components per site of the L⁴ lattice, all sites) in each mode — f64
//! DMMA, 3×TF32, bf16, 3×BF16 — for n = 16, 32, 64 (the case's `sources`).
//!
//! Rates per lattice site: 8 n² · 12 useful flops (four real products of 2 flops per
//! complex product; the split modes execute 3× as many on the tensor cores), and the
//! minimal bytes: both sets read once, 2 n · 24 reals (QUDA's model is the same).
//!
//! The block axpy rows (`block_axpy_<mode> <format> vectors<N>`): y_j += Σ_i x_i A_ij for
//! n = m vectors, 8 n² · 12 useful flops per site, bytes: x read, y read and written,
//! 3 n · 24 reals per site.

use super::metrics::rates;
use super::report::{BenchCase, BenchKernel, BenchResult, CopyBandwidth};
use super::run::BATCH;
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_runtime::device::block_blas::{
    upload_copies, BlockAxpy, BlockInner, VectorBuffer, VectorReal, VectorSet,
};
use qdsl_runtime::device::{DeviceError, Gpu};
use qdsl_runtime::tune::Tuner;
use std::time::Instant;

/// Complex components per site of a Wilson spinor.
const COMPONENTS: usize = 12;

/// `count` vectors of `len` complex values in one device buffer (stride 2 len): one
/// pseudo-random host vector, each copy's first component set from its index (the timing
/// does not depend on the values).
fn vector_set<T: VectorReal>(
    gpu: &Gpu,
    count: usize,
    len: usize,
    seed: u64,
    conv: fn(f64) -> T,
) -> Result<VectorBuffer<T>, DeviceError> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let host: Vec<T> = (0..2 * len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            conv(2.0 * ((x >> 11) as f64 / (1u64 << 53) as f64) - 1.0)
        })
        .collect();
    upload_copies(gpu, &host, count, |i| conv(i as f64 / count as f64))
}

/// Times the block inner product of `case` (mode from the kernel, n = `case.sources`,
/// vectors stored as `case.format`: f32 or f64) on an L⁴ lattice.
pub(super) fn bench_block_dot(
    gpu: &Gpu,
    tuner: &Tuner,
    extent: usize,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    match case.format {
        StorageFormat::F32 => {
            run::<f32>(gpu, tuner, extent, case, copy, (warmup, reps), |x| x as f32)
        }
        StorageFormat::F64 => run::<f64>(gpu, tuner, extent, case, copy, (warmup, reps), |x| x),
        f => Err(format!(
            "block inner products read f32 or f64 vectors, not {}",
            f.name()
        )),
    }
}

fn run<T: VectorReal>(
    gpu: &Gpu,
    tuner: &Tuner,
    extent: usize,
    case: &BenchCase,
    copy: &CopyBandwidth,
    (warmup, reps): (usize, usize),
    conv: fn(f64) -> T,
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let BenchKernel::BlockDot(mode) = case.kernel else {
        return Err(format!(
            "{} is not a block inner product",
            case.kernel.name()
        ));
    };
    let n = case
        .sources
        .ok_or("a block inner product row needs its number of vectors")?;
    let sites = extent.pow(4);
    let len = sites * COMPONENTS;
    let a = vector_set(gpu, n, len, 41, conv).map_err(|e| err(&e))?;
    let b = vector_set(gpu, n, len, 42, conv).map_err(|e| err(&e))?;
    let set = |values| VectorSet {
        values,
        count: n,
        len,
        stride: 2 * len,
    };
    let t0 = Instant::now();
    let mut op = BlockInner::new(gpu, Some(tuner), mode, set(&a), set(&b)).map_err(|e| err(&e))?;
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let time_us = gpu
        .time_us(warmup, reps, || {
            for _ in 0..BATCH {
                op.queue(gpu, set(&a), set(&b))?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    let flops_per_site = 8 * n * n * COMPONENTS;
    let bytes_per_site = 2 * n * 2 * COMPONENTS * std::mem::size_of::<T>();
    let bytes = ByteModels {
        quda: bytes_per_site,
        minimal: bytes_per_site,
    };
    Ok(BenchResult {
        label: case.label(),
        extent,
        sites,
        time_us,
        flops_per_site,
        bytes,
        rates: rates(sites, flops_per_site, bytes, time_us, Some(copy.best_gbs())),
        compile: op.plan.variant.canonical(),
        launch: format!(
            "block {} grid {}",
            op.launch().block[0],
            op.launch().grid[0]
        ),
        // Program build (JIT or PTX cache) and tuning together.
        jit_ms: setup_ms,
        tune_ms: 0.0,
    })
}

/// Times the block axpy of `case` (mode from the kernel, m = n = `case.sources`, vectors
/// stored as `case.format`: f32 or f64) on an L⁴ lattice.
pub(super) fn bench_block_axpy(
    gpu: &Gpu,
    extent: usize,
    case: &BenchCase,
    copy: &CopyBandwidth,
    warmup: usize,
    reps: usize,
) -> Result<BenchResult, String> {
    match case.format {
        StorageFormat::F32 => {
            run_axpy::<f32>(gpu, extent, case, copy, (warmup, reps), |x| x as f32)
        }
        StorageFormat::F64 => run_axpy::<f64>(gpu, extent, case, copy, (warmup, reps), |x| x),
        f => Err(format!(
            "block axpy reads f32 or f64 vectors, not {}",
            f.name()
        )),
    }
}

fn run_axpy<T: VectorReal>(
    gpu: &Gpu,
    extent: usize,
    case: &BenchCase,
    copy: &CopyBandwidth,
    (warmup, reps): (usize, usize),
    conv: fn(f64) -> T,
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let BenchKernel::BlockAxpy(mode) = case.kernel else {
        return Err(format!("{} is not a block axpy", case.kernel.name()));
    };
    let n = case
        .sources
        .ok_or("a block axpy row needs its number of vectors")?;
    let sites = extent.pow(4);
    let len = sites * COMPONENTS;
    let x = vector_set(gpu, n, len, 43, conv).map_err(|e| err(&e))?;
    let mut y = vector_set(gpu, n, len, 44, conv).map_err(|e| err(&e))?;
    // A small (|A_ij| ≤ 1/n): y stays bounded over the repetitions.
    let a: Vec<_> = qdsl_kernels::block_blas::random_vectors(n, n, 45)
        .into_iter()
        .map(|z| z / n as f64)
        .collect();
    let t0 = Instant::now();
    let op = BlockAxpy::new::<T>(gpu, mode, (n, n, len), &a).map_err(|e| err(&e))?;
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let set = VectorSet {
        values: &x,
        count: n,
        len,
        stride: 2 * len,
    };
    let time_us = gpu
        .time_us(warmup, reps, || {
            for _ in 0..BATCH {
                op.queue(gpu, set, &mut y, 2 * len)?;
            }
            Ok(())
        })
        .map_err(|e| err(&e))?
        / BATCH as f64;
    let flops_per_site = 8 * n * n * COMPONENTS;
    let bytes_per_site = 3 * n * 2 * COMPONENTS * std::mem::size_of::<T>();
    let bytes = ByteModels {
        quda: bytes_per_site,
        minimal: bytes_per_site,
    };
    Ok(BenchResult {
        label: case.label(),
        extent,
        sites,
        time_us,
        flops_per_site,
        bytes,
        rates: rates(sites, flops_per_site, bytes, time_us, Some(copy.best_gbs())),
        compile: op.plan.variant.canonical(),
        launch: "default".into(),
        jit_ms: setup_ms,
        tune_ms: 0.0,
    })
}
