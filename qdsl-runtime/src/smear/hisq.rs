//! HISQ fat and long links on the GPU ([`hisq_links_gpu`]), the recipe of
//! `qdsl_kernels::hisq_links`: phases and the time boundary folded in on the host, then on
//! the GPU V = fat7(U) (u0 = 1), W = V(V†V)^(−1/2) link by link
//! ([`qdsl_core::dsl::paths::project`]), X = `HisqFat`(W) and L = `AsqtadLong`(W), W
//! passed from one schedule to the next without leaving the device; the ε terms
//! X += (ε/8) W and L ← (1 + ε) L are applied on the host to the downloaded fields.

use super::runner::SmearGpuError;
use super::runner::{config, download_links, int, load_module, GpuReal, GpuSmearer};
use crate::device::gpu::driver;
use crate::device::Gpu;
use cudarc::driver::{CudaFunction, PushKernelArg};
use qdsl_core::dsl::paths::project::{project_source, singular_threshold, PROJECT_KERNEL};
use qdsl_core::field::GaugeField;
use qdsl_kernels::{fold_staggered_phases, AsqtadLong, Fat7, HisqFat};

/// The compiled U(3) projection kernel for `T`.
fn projection<T: GpuReal>(gpu: &Gpu) -> Result<CudaFunction, SmearGpuError> {
    let program = format!("{PROJECT_KERNEL}_{}", T::NAME);
    let module = load_module(gpu, &program, &project_source::<T>()?)?;
    Ok(module
        .load_function(PROJECT_KERNEL)
        .map_err(driver(format!("finding {PROJECT_KERNEL} in {program}")))?)
}

/// HISQ fat and long links (X, L) of thin links `u` without phases, with the Naik-mass
/// correction `epsilon_naik`, on the GPU: the same fields as `qdsl_kernels::hisq_links`
/// (unit links give X = 9/8 + ε/8 and L = −(1 + ε)/24 times the phases).
///
/// Errors: compiling, allocating, copying or launching; a fat7 link the projection
/// rejects ([`SmearGpuError::Projection`], the first one in link order).
pub fn hisq_links_gpu<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<T>,
    epsilon_naik: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
    let lat = *u.lattice();
    let fat7 = GpuSmearer::<T>::new::<Fat7>(gpu)?;
    let fat = GpuSmearer::<T>::new::<HisqFat>(gpu)?;
    let long = GpuSmearer::<T>::new::<AsqtadLong>(gpu)?;
    let project = projection::<T>(gpu)?;
    let mut level1 = fat7.buffers(gpu, &lat)?;
    let mut fat_bufs = fat.buffers(gpu, &lat)?;
    let mut long_bufs = long.buffers(gpu, &lat)?;
    fat7.upload(gpu, &mut level1, &fold_staggered_phases(u))?;
    fat7.enqueue(gpu, &mut level1, 1.0)?;
    let nlinks = 4 * lat.volume();
    let mut bad = gpu.alloc::<i32>("the projection flags", nlinks)?;
    let stream = gpu.backend().stream();
    let n = int(nlinks, "links")?;
    let threshold = T::from_f64(singular_threshold::<T>());
    let mut b = stream.launch_builder(&project);
    b.arg(&mut level1.output)
        .arg(&mut bad)
        .arg(&n)
        .arg(&threshold);
    // SAFETY: (real* links, int* bad, int nlinks, real threshold); links hold
    // nlinks·18 reals, bad nlinks ints.
    unsafe { b.launch(config(nlinks)?) }.map_err(driver(format!("launching {PROJECT_KERNEL}")))?;
    let flags = stream
        .clone_dtoh(&bad)
        .map_err(driver("copying the projection flags to the host"))?;
    if let Some(i) = flags.iter().position(|&f| f != 0) {
        return Err(SmearGpuError::Projection {
            cb: i / 4,
            mu: i % 4,
        });
    }
    for bufs in [&mut fat_bufs, &mut long_bufs] {
        stream
            .memcpy_dtod(&level1.output, &mut bufs.input)
            .map_err(driver("copying the projected links on the GPU"))?;
    }
    fat.enqueue(gpu, &mut fat_bufs, 1.0)?;
    long.enqueue(gpu, &mut long_bufs, 1.0)?;
    let w = download_links(gpu, &level1.output, lat, "the projected links")?;
    let mut x = fat.download(gpu, &fat_bufs)?;
    let mut l = long.download(gpu, &long_bufs)?;
    let eps = T::from_f64(epsilon_naik / 8.0);
    for (xl, wl) in x.links_mut().iter_mut().zip(w.links()) {
        *xl += wl.scale(eps);
    }
    let factor = T::from_f64(1.0 + epsilon_naik);
    for link in l.links_mut() {
        *link = link.scale(factor);
    }
    Ok((x, l))
}
