//! HISQ fat and long links on the GPU ([`hisq_links_gpu`], built from the reusable
//! [`HisqGpu`]): the chain of `qdsl_kernels::hisq_chain`, written once for host and
//! device, run on device stages ([`DeviceHisq`]): phases and the time boundary folded in
//! on the host, then on the GPU V = fat7(U) (u0 = 1), W = V(V†V)^(−1/2) link by link
//! ([`qdsl_core::dsl::paths::project`]), X = `HisqFat`(W) + (ε/8) W and
//! L = (1 + ε) `AsqtadLong`(W) — W rewritten in the kernels' device layout once for the
//! last two (encoded as their input knob says: 18 reals, or the 14-real recon 12 + phase
//! records built on the device), the ε terms inside their kernels as term coefficients
//! (`qdsl_kernels::naik_epsilon_coefficients`). In the default staged plan fat7 and
//! `HisqFat` run per link direction and share one scratch.

use super::runner::SmearGpuError;
use super::runner::{download_links, find, GpuReal, GpuSmearer, BLOCK, REALS};
use super::SmearBuffers;
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::Gpu;
use crate::tune::Tuner;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::project::{project_source, singular_threshold, PROJECT_KERNEL};
use qdsl_core::dsl::paths::{PathKnobs, PlanKind};
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{
    fold_staggered_phases, hisq_chain, naik_epsilon_coefficients, AsqtadLong, Fat7, HisqFat,
    HisqStages,
};

/// The U(3) projection program for `T`:
/// `u3_project(real* links, int* bad, int nlinks, real threshold)`, one thread per link.
pub fn projection_program<T: GpuReal>() -> Result<KernelProgram, SmearGpuError> {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let real = T::ELEM;
    Ok(KernelProgram {
        name: format!("{PROJECT_KERNEL}_{}", T::NAME),
        source: project_source::<T>()?,
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: PROJECT_KERNEL.to_string(),
            params: vec![
                p("links", ParamKind::write(real)),
                p("bad", ParamKind::write(Elem::I32)),
                p("nlinks", ParamKind::I32),
                p("threshold", ParamKind::real(real)),
            ],
            geometry: Geometry::linear(),
        }],
    })
}

/// The compiled U(3) projection kernel for `T`.
fn projection<T: GpuReal>(gpu: &Gpu) -> Result<LoadedKernel, SmearGpuError> {
    let program = projection_program::<T>()?;
    let kernels = load_program(gpu, &program)?;
    Ok(find(&kernels, PROJECT_KERNEL, &program.name)?)
}

/// The three smearing kernels (fat7, `HisqFat`, `AsqtadLong`) and the U(3) projection of
/// the HISQ link construction, compiled for `T`.
pub struct HisqGpu<T> {
    pub(super) fat7: GpuSmearer<T>,
    pub(super) fat: GpuSmearer<T>,
    long: GpuSmearer<T>,
    project: LoadedKernel,
}

/// Device memory of one HISQ construction: the thin links, V (then W in place), W in the
/// kernels' device layout, X, L and one projection flag per link.
pub struct HisqBuffers<T> {
    pub(super) lattice: Lattice,
    pub(super) thin: SmearBuffers<T>,
    pub(super) w: CudaSlice<T>,
    fat: CudaSlice<T>,
    long: CudaSlice<T>,
    pub(super) bad: CudaSlice<i32>,
}

impl<T: GpuReal> HisqGpu<T> {
    /// Compiles (or loads) the three smearing kernels and the projection kernel, the
    /// smearings in the default plan ([`PlanKind::Staged`]).
    pub fn new(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        Self::with_plan(gpu, PlanKind::default())
    }

    /// [`Self::new`] with the smearings' GPU plan `plan` (the staged plan stores the
    /// fat7 and `HisqFat` staple levels as fields; the Naik link has none).
    pub fn with_plan(gpu: &Gpu, plan: PlanKind) -> Result<Self, SmearGpuError> {
        Self::with_knobs(gpu, PathKnobs::default().with_plan(plan))
    }

    /// [`Self::new`] with the smearings' plan `knobs.plan` and every level's input links
    /// stored as `knobs.input` (recon 18, or recon 12 + phase: the thin links encoded on
    /// the host, W encoded on the device from the projection's output,
    /// [`GpuSmearer::enqueue_encode`]). The fat7 and `HisqFat` passes run one after the
    /// other on one stream and share one scratch (6 slots of one μ).
    pub fn with_knobs(gpu: &Gpu, knobs: PathKnobs) -> Result<Self, SmearGpuError> {
        // Every kernel of the chain compiled in one parallel batch first.
        gpu.preload_programs(&Self::programs(knobs)?)?;
        let fat7 = GpuSmearer::<T>::with_knobs::<Fat7>(gpu, knobs)?;
        let mut fat = GpuSmearer::<T>::with_knobs::<HisqFat>(gpu, knobs)?;
        fat.share_scratch(&fat7);
        Ok(HisqGpu {
            fat7,
            fat,
            long: GpuSmearer::<T>::with_knobs::<AsqtadLong>(gpu, knobs)?,
            project: projection::<T>(gpu)?,
        })
    }

    /// The programs [`Self::with_knobs`] compiles (for preloading them with others in
    /// one parallel batch, [`Gpu::preload_programs`]).
    pub fn programs(knobs: PathKnobs) -> Result<Vec<KernelProgram>, SmearGpuError> {
        Ok(vec![
            GpuSmearer::<T>::program::<Fat7>(knobs)?,
            GpuSmearer::<T>::program::<HisqFat>(knobs)?,
            GpuSmearer::<T>::program::<AsqtadLong>(knobs)?,
            projection_program::<T>()?,
        ])
    }

    /// Bytes of device scratch the smearings take on `lattice` (the shared staged
    /// fields; 0 for the tree plan).
    pub fn scratch_bytes(&self, lattice: &Lattice) -> usize {
        self.fat7
            .scratch_bytes(lattice)
            .max(self.fat.scratch_bytes(lattice))
    }

    /// Device memory for a construction on `lattice`, zeroed.
    pub fn buffers(&self, gpu: &Gpu, lattice: &Lattice) -> Result<HisqBuffers<T>, SmearGpuError> {
        let links = 4 * lattice.volume() * REALS;
        Ok(HisqBuffers {
            lattice: *lattice,
            thin: self.fat7.buffers(gpu, lattice)?,
            w: gpu.alloc::<T>(
                "the projected links",
                4 * lattice.volume() * self.fat.knobs().input_reals(),
            )?,
            fat: gpu.alloc::<T>("the HISQ fat links", links)?,
            long: gpu.alloc::<T>("the HISQ long links", links)?,
            bad: gpu.alloc::<i32>("the projection flags", 4 * lattice.volume())?,
        })
    }

    /// Copies the thin links `u` (without phases: they are folded in here) to the GPU.
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), SmearGpuError> {
        Ok(self
            .fat7
            .upload(gpu, &mut bufs.thin, &fold_staggered_phases(u))?)
    }

    /// Queues the whole construction with the Naik correction `epsilon_naik` on the
    /// GPU's stream (no host transfer, no synchronisation): the stages of [`hisq_chain`]
    /// ([`DeviceHisq`]), each kernel at its default launch.
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqBuffers<T>,
        epsilon_naik: f64,
    ) -> Result<(), SmearGpuError> {
        self.enqueue_with(gpu, None, bufs, epsilon_naik)
    }

    /// [`Self::enqueue`] with the link-path kernels' launches from `tuner`
    /// ([`GpuSmearer::enqueue_with`]).
    pub fn enqueue_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut HisqBuffers<T>,
        epsilon_naik: f64,
    ) -> Result<(), SmearGpuError> {
        let (fat_coeffs, long_coeffs) = naik_epsilon_coefficients(epsilon_naik)?;
        hisq_chain(&mut DeviceHisq {
            hisq: self,
            gpu,
            tuner,
            bufs,
            fat_coeffs,
            long_coeffs,
        })
    }

    /// Queues W = V(V†V)^(−1/2) in place on `bufs.thin.output` (the fat7 links V),
    /// flagging in `bufs.bad` each link it rejects.
    pub(super) fn enqueue_projection(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqBuffers<T>,
    ) -> Result<(), SmearGpuError> {
        let nlinks = 4 * bufs.lattice.volume();
        let mut args = Args::new();
        args.write("links", &mut bufs.thin.output)
            .write("bad", &mut bufs.bad)
            .count("nlinks", nlinks)
            .real("threshold", singular_threshold::<T>());
        // links hold nlinks·18 reals, bad nlinks ints.
        Ok(self.project.launch(gpu, [nlinks, 1, 1], BLOCK, args)?)
    }

    /// The first flagged link of `bufs.bad` as [`SmearGpuError::Projection`].
    pub(super) fn check_projection_flags(
        gpu: &Gpu,
        bufs: &HisqBuffers<T>,
    ) -> Result<(), SmearGpuError> {
        let flags = gpu
            .backend()
            .stream()
            .clone_dtoh(&bufs.bad)
            .map_err(driver("copying the projection flags to the host"))?;
        match flags.iter().position(|&f| f != 0) {
            Some(i) => Err(SmearGpuError::Projection {
                cb: i / 4,
                mu: i % 4,
            }),
            None => Ok(()),
        }
    }

    /// After [`HisqGpu::enqueue`]: checks the projection flags and downloads X and L.
    ///
    /// Errors: copying; a fat7 link the projection rejected
    /// ([`SmearGpuError::Projection`], the first one in link order).
    pub fn finish(
        &self,
        gpu: &Gpu,
        bufs: &HisqBuffers<T>,
    ) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
        Self::check_projection_flags(gpu, bufs)?;
        let x = download_links(gpu, &bufs.fat, bufs.lattice, "the HISQ fat links")?;
        let l = download_links(gpu, &bufs.long, bufs.lattice, "the HISQ long links")?;
        Ok((x, l))
    }
}

/// The stages of [`hisq_chain`] on the device: each queues its kernel on the GPU's
/// stream, the links staying in the buffers.
struct DeviceHisq<'a, T> {
    hisq: &'a HisqGpu<T>,
    gpu: &'a Gpu,
    tuner: Option<&'a Tuner>,
    bufs: &'a mut HisqBuffers<T>,
    /// `HisqFat`'s coefficients with the ε/8 one-link term.
    fat_coeffs: Vec<f64>,
    /// `AsqtadLong`'s coefficients times 1 + ε.
    long_coeffs: Vec<f64>,
}

impl<T: GpuReal> HisqStages for DeviceHisq<'_, T> {
    type Error = SmearGpuError;

    /// The projection flags cleared, V = fat7(U) into the thin buffers' output.
    fn fat7(&mut self) -> Result<(), SmearGpuError> {
        self.gpu
            .backend()
            .stream()
            .memset_zeros(&mut self.bufs.bad)
            .map_err(driver("clearing the projection flags"))?;
        Ok(self
            .hisq
            .fat7
            .enqueue_with(self.gpu, self.tuner, &mut self.bufs.thin, 1.0)?)
    }

    /// W = V(V†V)^(−1/2) in place, a flag per link it rejects.
    fn project_u3(&mut self) -> Result<(), SmearGpuError> {
        self.hisq.enqueue_projection(self.gpu, self.bufs)
    }

    /// W in the kernels' device layout (encoded as their input knob says), X =
    /// `HisqFat`(W) + (ε/8) W.
    fn hisq_fat(&mut self) -> Result<(), SmearGpuError> {
        let bufs = &mut *self.bufs;
        let fat = &self.hisq.fat;
        fat.enqueue_encode(self.gpu, &bufs.lattice, &bufs.thin.output, &mut bufs.w)?;
        Ok(fat.enqueue_on(
            self.gpu,
            self.tuner,
            &bufs.lattice,
            &bufs.w,
            &mut bufs.fat,
            &self.fat_coeffs,
        )?)
    }

    /// L = (1 + ε) `AsqtadLong`(W).
    fn naik(&mut self) -> Result<(), SmearGpuError> {
        let bufs = &mut *self.bufs;
        Ok(self.hisq.long.enqueue_on(
            self.gpu,
            self.tuner,
            &bufs.lattice,
            &bufs.w,
            &mut bufs.long,
            &self.long_coeffs,
        )?)
    }
}

/// HISQ fat and long links (X, L) of thin links `u` without phases, with the Naik-mass
/// correction `epsilon_naik`, on the GPU: the same fields as `qdsl_kernels::hisq_links`
/// (unit links give X = 9/8 + ε/8 and L = −(1 + ε)/24 times the phases).
///
/// The link-path kernels launch as `tuner` decides (`None`: their default launches).
///
/// Errors: compiling, allocating, copying or launching; a fat7 link the projection
/// rejects ([`SmearGpuError::Projection`], the first one in link order).
pub fn hisq_links_gpu<T: GpuReal>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    u: &GaugeField<T>,
    epsilon_naik: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
    hisq_links_gpu_with(gpu, tuner, u, epsilon_naik, PlanKind::default())
}

/// [`hisq_links_gpu`] with the smearings' GPU plan `plan`.
pub fn hisq_links_gpu_with<T: GpuReal>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    u: &GaugeField<T>,
    epsilon_naik: f64,
    plan: PlanKind,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
    let hisq = HisqGpu::<T>::with_plan(gpu, plan)?;
    let mut bufs = hisq.buffers(gpu, u.lattice())?;
    hisq.upload(gpu, &mut bufs, u)?;
    hisq.enqueue_with(gpu, tuner, &mut bufs, epsilon_naik)?;
    hisq.finish(gpu, &bufs)
}
