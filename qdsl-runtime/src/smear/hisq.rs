//! HISQ fat and long links on the GPU ([`hisq_links_gpu`], built from the reusable
//! [`HisqGpu`]), the recipe of `qdsl_kernels::hisq_links`: phases and the time boundary
//! folded in on the host, then on the GPU V = fat7(U) (u0 = 1), W = V(V†V)^(−1/2) link
//! by link ([`qdsl_core::dsl::paths::project`]), X = `HisqFat`(W) and L = `AsqtadLong`(W),
//! W passed from one schedule to the next without leaving the device; the ε terms
//! X += (ε/8) W and L ← (1 + ε) L are applied on the host to the downloaded fields.

use super::runner::SmearGpuError;
use super::runner::{config, download_links, int, load_module, GpuReal, GpuSmearer};
use super::SmearBuffers;
use crate::device::gpu::driver;
use crate::device::Gpu;
use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use qdsl_core::dsl::paths::project::{project_source, singular_threshold, PROJECT_KERNEL};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{fold_staggered_phases, AsqtadLong, Fat7, HisqFat};

/// The compiled U(3) projection kernel for `T`.
fn projection<T: GpuReal>(gpu: &Gpu) -> Result<CudaFunction, SmearGpuError> {
    let program = format!("{PROJECT_KERNEL}_{}", T::NAME);
    let module = load_module(gpu, &program, &project_source::<T>()?)?;
    Ok(module
        .load_function(PROJECT_KERNEL)
        .map_err(driver(format!("finding {PROJECT_KERNEL} in {program}")))?)
}

/// The three schedules (fat7, `HisqFat`, `AsqtadLong`) and the U(3) projection of the
/// HISQ link construction, compiled for `T`.
pub(crate) struct HisqGpu<T> {
    fat7: GpuSmearer<T>,
    fat: GpuSmearer<T>,
    long: GpuSmearer<T>,
    project: CudaFunction,
}

/// Device memory of one HISQ construction: the buffers of the three schedules and one
/// projection flag per link.
pub(crate) struct HisqBuffers<T> {
    level1: SmearBuffers<T>,
    fat: SmearBuffers<T>,
    long: SmearBuffers<T>,
    bad: CudaSlice<i32>,
}

impl<T: GpuReal> HisqGpu<T> {
    /// Compiles (or loads) the three schedules and the projection kernel.
    pub(crate) fn new(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        Ok(HisqGpu {
            fat7: GpuSmearer::<T>::new::<Fat7>(gpu)?,
            fat: GpuSmearer::<T>::new::<HisqFat>(gpu)?,
            long: GpuSmearer::<T>::new::<AsqtadLong>(gpu)?,
            project: projection::<T>(gpu)?,
        })
    }

    /// Device memory for a construction on `lattice`, zeroed.
    pub(crate) fn buffers(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
    ) -> Result<HisqBuffers<T>, SmearGpuError> {
        Ok(HisqBuffers {
            level1: self.fat7.buffers(gpu, lattice)?,
            fat: self.fat.buffers(gpu, lattice)?,
            long: self.long.buffers(gpu, lattice)?,
            bad: gpu.alloc::<i32>("the projection flags", 4 * lattice.volume())?,
        })
    }

    /// Copies the thin links `u` (without phases: they are folded in here) to the GPU.
    pub(crate) fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), SmearGpuError> {
        Ok(self
            .fat7
            .upload(gpu, &mut bufs.level1, &fold_staggered_phases(u))?)
    }

    /// Queues the whole construction on the GPU's stream (no host transfer, no
    /// synchronisation): the flags cleared, V = fat7(U), W = V(V†V)^(−1/2) in place, W
    /// copied into the inputs of the second level, X = `HisqFat`(W), L = `AsqtadLong`(W).
    pub(crate) fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqBuffers<T>,
    ) -> Result<(), SmearGpuError> {
        let stream = gpu.backend().stream();
        stream
            .memset_zeros(&mut bufs.bad)
            .map_err(driver("clearing the projection flags"))?;
        self.fat7.enqueue(gpu, &mut bufs.level1, 1.0)?;
        let nlinks = 4 * bufs.level1.lattice.volume();
        let n = int(nlinks, "links")?;
        let threshold = T::from_f64(singular_threshold::<T>());
        let mut b = stream.launch_builder(&self.project);
        b.arg(&mut bufs.level1.output)
            .arg(&mut bufs.bad)
            .arg(&n)
            .arg(&threshold);
        // SAFETY: (real* links, int* bad, int nlinks, real threshold); links hold
        // nlinks·18 reals, bad nlinks ints.
        unsafe { b.launch(config(nlinks)?) }
            .map_err(driver(format!("launching {PROJECT_KERNEL}")))?;
        for level2 in [&mut bufs.fat, &mut bufs.long] {
            stream
                .memcpy_dtod(&bufs.level1.output, &mut level2.input)
                .map_err(driver("copying the projected links on the GPU"))?;
        }
        self.fat.enqueue(gpu, &mut bufs.fat, 1.0)?;
        self.long.enqueue(gpu, &mut bufs.long, 1.0)?;
        Ok(())
    }

    /// After [`HisqGpu::enqueue`]: checks the projection flags, downloads W, X and L and
    /// applies the ε terms, X += (ε/8) W and L ← (1 + ε) L, ε = `epsilon_naik`.
    ///
    /// Errors: copying; a fat7 link the projection rejected
    /// ([`SmearGpuError::Projection`], the first one in link order).
    pub(crate) fn finish(
        &self,
        gpu: &Gpu,
        bufs: &HisqBuffers<T>,
        epsilon_naik: f64,
    ) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
        let flags = gpu
            .backend()
            .stream()
            .clone_dtoh(&bufs.bad)
            .map_err(driver("copying the projection flags to the host"))?;
        if let Some(i) = flags.iter().position(|&f| f != 0) {
            return Err(SmearGpuError::Projection {
                cb: i / 4,
                mu: i % 4,
            });
        }
        let lat = bufs.level1.lattice;
        let w = download_links(gpu, &bufs.level1.output, lat, "the projected links")?;
        let mut x = self.fat.download(gpu, &bufs.fat)?;
        let mut l = self.long.download(gpu, &bufs.long)?;
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
    let hisq = HisqGpu::<T>::new(gpu)?;
    let mut bufs = hisq.buffers(gpu, u.lattice())?;
    hisq.upload(gpu, &mut bufs, u)?;
    hisq.enqueue(gpu, &mut bufs)?;
    hisq.finish(gpu, &bufs, epsilon_naik)
}
