//! Launching the BLAS kernel of [`super::blas_source`] on device fields:
//! y ← [x] a·x + [y] b·y.

use super::blas_source::{blas_name, blas_source, READ_X, READ_Y};
use super::context::DeviceContext;
use crate::device::codegen::OPTIONS;
use crate::device::gpu::driver;
use crate::device::{DeviceError, DeviceField};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use qdsl_core::Complex;

/// Threads per block of the BLAS kernel.
const BLAS_BLOCK: u32 = 256;

/// The operands of one BLAS launch: y ← a·x + b·y, either term optional (absent terms
/// are not read: `Axpby { x: None, y: None }` sets y to zero).
#[derive(Clone, Copy, Debug)]
pub struct Axpby<'a> {
    /// (a, x): the x term, x of any vector format of y's shape.
    pub x: Option<(Complex<f64>, &'a DeviceField)>,
    /// b: the y term.
    pub y: Option<Complex<f64>>,
}

fn int_arg(x: usize, what: &str) -> Result<i32, DeviceError> {
    i32::try_from(x)
        .map_err(|_| DeviceError::Shape(format!("{what} = {x} exceeds the kernels' 32-bit index")))
}

/// Queues y ← a·x + b·y on the context's stream (see [`Axpby`]); format errors set bits
/// of the context's status word (read at the next reduction).
pub fn axpby(ctx: &DeviceContext, y: &mut DeviceField, op: Axpby<'_>) -> Result<(), DeviceError> {
    let yl = *y.layout();
    let xl = op.x.map_or(yl, |(_, x)| *x.layout());
    let gpu = ctx.gpu();
    let name = blas_name(&yl, &xl);
    let source = blas_source(&yl, &xl)?;
    let opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
    let f = gpu.function(&name, &source, &opts)?;
    let (a, b) = (
        op.x.map_or(Complex::new(0.0, 0.0), |(a, _)| a),
        op.y.unwrap_or(Complex::new(0.0, 0.0)),
    );
    let mode = if op.x.is_some() { READ_X } else { 0 } | if op.y.is_some() { READ_Y } else { 0 };
    let (sites, stride) = (int_arg(yl.sites, "sites")?, int_arg(yl.stride, "stride")?);
    let blocks =
        u32::try_from(yl.sites.div_ceil(BLAS_BLOCK as usize).clamp(1, 65_535)).unwrap_or(65_535);
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLAS_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let null = 0u64;
    let mut status = ctx.status();
    let stream = gpu.backend().stream();
    let mut builder = stream.launch_builder(&f);
    match op.x {
        Some((_, x)) => {
            builder.arg(x.values());
            match x.norms() {
                Some(n) => builder.arg(n),
                None => builder.arg(&null),
            };
        }
        None => {
            builder.arg(&null).arg(&null);
        }
    }
    let (values, norms) = y.buffers_mut();
    builder.arg(values);
    match norms {
        Some(n) => builder.arg(n),
        None => builder.arg(&null),
    };
    builder
        .arg(&a.re)
        .arg(&a.im)
        .arg(&b.re)
        .arg(&b.im)
        .arg(&mode)
        .arg(&sites)
        .arg(&stride)
        .arg(&mut *status);
    // SAFETY: the arguments match the generated signature (const uchar*, const float*,
    // uchar*, float*, 4 doubles, 3 ints, int*); x and y have the same sites and stride
    // (checked by blas_source), unread pointers are null and not dereferenced (mode).
    unsafe { builder.launch(cfg) }.map_err(driver(format!("launching {name}")))?;
    Ok(())
}

/// Queues y ← x as a byte copy (values and norms) on the context's stream: exact for
/// every format (re-encoding a fixed-point site need not reproduce its integers). An
/// error if the layouts differ.
pub fn copy(ctx: &DeviceContext, y: &mut DeviceField, x: &DeviceField) -> Result<(), DeviceError> {
    if x.layout() != y.layout() {
        return Err(DeviceError::Shape(format!(
            "copy between layouts {:?} and {:?}",
            x.layout(),
            y.layout()
        )));
    }
    let stream = ctx.gpu().backend().stream();
    let (values, norms) = y.buffers_mut();
    stream
        .memcpy_dtod(x.values(), values)
        .map_err(driver("copying a device vector"))?;
    if let (Some(dst), Some(src)) = (norms, x.norms()) {
        stream
            .memcpy_dtod(src, dst)
            .map_err(driver("copying the norms of a device vector"))?;
    }
    Ok(())
}
