//! The memory roofline: read + write time of a device-to-device copy, by the driver's
//! cuMemcpyDtoD and by a float4 grid-stride copy kernel. Bandwidth-bound kernels are
//! judged against these times (`qdsl bench`).

use super::gpu::driver;
use super::kernel::{load_program, Args};
use super::{DeviceError, Gpu};
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};

/// The float4 grid-stride copy kernel of the roofline.
const COPY_SOURCE: &str = "extern \"C\" __global__ void qdsl_bench_copy(const float4* __restrict__ x, float4* __restrict__ y, long n) {\n    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = x[i];\n}\n";

/// [`COPY_SOURCE`] with its interface (x, y: f32 buffers holding float4 groups; n: the
/// number of float4 groups).
fn copy_program() -> KernelProgram {
    KernelProgram {
        name: "qdsl_bench_copy".into(),
        source: COPY_SOURCE.into(),
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: "qdsl_bench_copy".into(),
            params: vec![
                ParamDecl::new("x", ParamKind::read(Elem::F32)),
                ParamDecl::new("y", ParamKind::write(Elem::F32)),
                ParamDecl::new("n", ParamKind::I64),
            ],
            geometry: Geometry::linear(),
        }],
    }
}

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
    let copy = load_program(gpu, &copy_program())?;
    let kernel_us = gpu.time_us(warmup, reps, || {
        let mut args = Args::new();
        args.read("x", &x).write("y", &mut y).int("n", n4 as i64);
        // n float4 groups (4 f32 each) in each buffer.
        copy[0].launch(gpu, [n4, 1, 1], [256, 1, 1], args)
    })?;
    Ok(CopyTimes {
        bytes: 16 * n4,
        memcpy_us,
        kernel_us,
    })
}
