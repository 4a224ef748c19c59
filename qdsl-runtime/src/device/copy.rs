//! The memory roofline: read + write time of a device-to-device copy, by the driver's
//! cuMemcpyDtoD and by a float4 grid-stride copy kernel. Bandwidth-bound kernels are
//! judged against these times (`qdsl bench`).

use super::gpu::driver;
use super::{DeviceError, Gpu};
use crate::tune::LaunchConfig;
use cudarc::driver::PushKernelArg;

/// The float4 grid-stride copy kernel of the roofline.
const COPY_SOURCE: &str = "extern \"C\" __global__ void qdsl_bench_copy(const float4* __restrict__ x, float4* __restrict__ y, long n) {\n    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = x[i];\n}\n";

/// Median times of copying `bytes` (rounded up to whole 16-byte elements).
#[derive(Clone, Copy, Debug)]
pub struct CopyTimes {
    /// Bytes copied (read once and written once).
    pub bytes: usize,
    /// cuMemcpyDtoD, µs.
    pub memcpy_us: f64,
    /// The float4 copy kernel, µs.
    pub kernel_us: f64,
}

/// Times cuMemcpyDtoD and the float4 copy kernel on `bytes`, `warmup` untimed and the
/// median of `reps` timed runs each.
pub fn copy_times(
    gpu: &Gpu,
    bytes: usize,
    warmup: usize,
    reps: usize,
) -> Result<CopyTimes, DeviceError> {
    let n4 = (bytes / 16).max(1);
    let x = gpu.alloc::<f32>("the copy source", 4 * n4)?;
    let mut y = gpu.alloc::<f32>("the copy destination", 4 * n4)?;
    let stream = gpu.backend().stream().clone();
    let memcpy_us = gpu.time_us(warmup, reps, || {
        stream
            .memcpy_dtod(&x, &mut y)
            .map_err(driver("cuMemcpyDtoD"))
    })?;
    let f = gpu.function("qdsl_bench_copy", COPY_SOURCE, &[])?;
    let n = n4 as i64;
    let cfg = LaunchConfig::covering(n4, 256, 0);
    let launch = cudarc::driver::LaunchConfig {
        grid_dim: (cfg.grid, 1, 1),
        block_dim: (cfg.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let kernel_us = gpu.time_us(warmup, reps, || {
        let mut b = stream.launch_builder(&f);
        b.arg(&x).arg(&mut y).arg(&n);
        // SAFETY: (const float4*, float4*, long n) with n float4 elements in each buffer.
        unsafe { b.launch(launch) }
            .map(|_| ())
            .map_err(driver("launching the copy kernel"))
    })?;
    Ok(CopyTimes {
        bytes: 16 * n4,
        memcpy_us,
        kernel_us,
    })
}
