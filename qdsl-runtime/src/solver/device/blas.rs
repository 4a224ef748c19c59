//! Launching the BLAS kernel of [`super::blas_source`] on device fields:
//! y ← [x] a·x + [y] b·y, with the launch the context's tuner chose
//! ([`crate::device::tuned`]: a cached winner of a full tuning, or the default blocks of
//! 256; a full tuning times the candidates on a scratch y, since the kernel reads y).

use super::blas_source::{blas_program, slice_blas_program, READ_X, READ_Y};
use super::context::DeviceContext;
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::tuned::tuned_launch;
use crate::device::{DeviceError, DeviceField, DeviceLayout, Gpu};
use crate::tune::{FirstUse, LaunchConfig};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::KernelProgram;
use qdsl_core::Complex;

/// The operands of one BLAS launch: y ← a·x + b·y, either term optional (absent terms
/// are not read: `Axpby { x: None, y: None }` sets y to zero).
#[derive(Clone, Copy, Debug)]
pub struct Axpby<'a> {
    /// (a, x): the x term, x of any vector format of y's shape.
    pub x: Option<(Complex<f64>, &'a DeviceField)>,
    /// b: the y term.
    pub y: Option<Complex<f64>>,
}

/// Queues y ← a·x + b·y on the context's stream (see [`Axpby`]); format errors set bits
/// of the context's status word (read at the next reduction).
pub fn axpby(ctx: &DeviceContext, y: &mut DeviceField, op: Axpby<'_>) -> Result<(), DeviceError> {
    let yl = *y.layout();
    let xl = op.x.map_or(yl, |(_, x)| *x.layout());
    let gpu = ctx.gpu();
    let (program, kernel) = blas_kernel(gpu, &yl, &xl)?;
    let work = [yl.sites, 1, 1];
    // Timing runs on a scratch y (the kernel reads y) and a scratch status word.
    let mut scratch: Option<(DeviceField, CudaSlice<i32>)> = None;
    let launch = tuned_launch(
        gpu,
        Some(ctx.tuner()),
        (&program).into(),
        &kernel,
        &format!("y={} x={}", yl.format, xl.format),
        work,
        FirstUse::CachedOnly,
        |cfg| {
            if scratch.is_none() {
                scratch = Some((
                    DeviceField::zeros(gpu, yl)?,
                    gpu.alloc::<i32>("a scratch status word", 1)?,
                ));
            }
            match scratch.as_mut() {
                Some((y, status)) => queue(gpu, &kernel, cfg, y, op, status),
                None => Err(DeviceError::Shape("no scratch vector to tune on".into())),
            }
        },
    )?;
    let mut status = ctx.status();
    queue(gpu, &kernel, &launch, y, op, &mut status)
}

/// Queues one launch `cfg` of the BLAS `kernel`: y ← a·x + b·y, format errors into
/// `status`.
fn queue(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    cfg: &LaunchConfig,
    y: &mut DeviceField,
    op: Axpby<'_>,
    status: &mut CudaSlice<i32>,
) -> Result<(), DeviceError> {
    let yl = *y.layout();
    let (a, b) = (
        op.x.map_or(Complex::new(0.0, 0.0), |(a, _)| a),
        op.y.unwrap_or(Complex::new(0.0, 0.0)),
    );
    let mode = if op.x.is_some() { READ_X } else { 0 } | if op.y.is_some() { READ_Y } else { 0 };
    let mut args = Args::new();
    args.read_or_null("x", op.x.map(|(_, x)| x.values() as _))
        .read_or_null("xn", op.x.and_then(|(_, x)| x.norms()).map(|n| n as _));
    let (values, norms) = y.buffers_mut();
    args.write("y", values)
        .write_or_null("yn", norms.map(|n| n as _))
        .real("a_re", a.re)
        .real("a_im", a.im)
        .real("b_re", b.re)
        .real("b_im", b.im)
        .int("mode", mode)
        .count("sites", yl.sites)
        .count("stride", yl.stride)
        .write("status", status);
    // x and y have the same sites and stride (checked by blas_source); unread pointers
    // are null and not dereferenced (mode).
    kernel.launch_with(gpu, [yl.sites, 1, 1], cfg, args)
}

/// The BLAS program of (y, x) layouts and its kernel (compiled and loaded once per pair
/// by the GPU's module cache).
fn blas_kernel(
    gpu: &Gpu,
    y: &DeviceLayout,
    x: &DeviceLayout,
) -> Result<(KernelProgram, LoadedKernel), DeviceError> {
    let program = blas_program(y, x)?;
    let kernel = load_program(gpu, &program)?
        .pop()
        .ok_or_else(|| DeviceError::Shape(format!("{} defines no kernel", program.name)))?;
    Ok((program, kernel))
}

/// Queues y_s ← a_s·x_s + b_s·y_s for each of the `sources` slices of y (N right-hand
/// sides; `coefficients` = (a_re, a_im, b_re, b_im) per slice, uploaded first) with the
/// per-slice BLAS kernel ([`slice_blas_program`], blocks of 256); format errors set bits
/// of the context's status word.
pub fn slice_axpby(
    ctx: &DeviceContext,
    y: &mut DeviceField,
    x: &DeviceField,
    coefficients: &[f64],
    sources: usize,
) -> Result<(), DeviceError> {
    let (yl, xl) = (*y.layout(), *x.layout());
    if sources == 0 || !yl.sites.is_multiple_of(sources) || coefficients.len() != 4 * sources {
        return Err(DeviceError::Shape(format!(
            "{} coefficients for {sources} slices of {} sites",
            coefficients.len(),
            yl.sites
        )));
    }
    let gpu = ctx.gpu();
    let program = slice_blas_program(&yl, &xl)?;
    let kernel = load_program(gpu, &program)?
        .pop()
        .ok_or_else(|| DeviceError::Shape(format!("{} defines no kernel", program.name)))?;
    let coeffs = gpu
        .backend()
        .stream()
        .clone_htod(coefficients)
        .map_err(driver("uploading per-slice coefficients"))?;
    let mut status = ctx.status();
    let mut args = Args::new();
    args.read("x", x.values())
        .read_or_null("xn", x.norms().map(|n| n as _));
    let (values, norms) = y.buffers_mut();
    args.write("y", values)
        .write_or_null("yn", norms.map(|n| n as _))
        .read("coeffs", &coeffs)
        .count("slice_sites", yl.sites / sources)
        .int("mode", READ_X | READ_Y)
        .count("sites", yl.sites)
        .count("stride", yl.stride)
        .write("status", &mut *status);
    kernel.launch(gpu, [yl.sites, 1, 1], [256, 1, 1], args)
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
