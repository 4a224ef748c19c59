//! [`GpuHisqForce`]: the pull-back through the HISQ link construction on the GPU — the
//! smearing part of the HISQ fermion force, every stage on the device.
//!
//! Forward (as [`super::hisq`]): V = fat7(U'), W = V(V†V)^{−1/2},
//! X = `HisqFat`(W) + (ε/8) W, L = (1 + ε) `AsqtadLong`(W). Backward, from the gradients
//! G_X, G_L of S with respect to the fat and long links (dS = Σ Re tr[G† dF]):
//!
//! 1. G_W = HisqFat*(G_X) + (1 + ε) AsqtadLong*(G_L): two pullback launches
//!    ([`GpuPullback::enqueue_on`]) adding into one field, the ε terms as term
//!    coefficients ([`naik_epsilon_coefficients`]: ε/8 on the one-link term, 1 + ε on
//!    every Naik term);
//! 2. G_V = G_W R + V̂(M + M†) link by link (`u3_project_pullback`, the closed form of
//!    [`qdsl_core::dsl::paths::fermion_force::polar`]);
//! 3. Ĝ = fat7*(G_V) (u0 = 1).
//!
//! The thin-link gradient Ĝ is the one `rhmc::StaggeredSmearing::pullback` computes on
//! the host (with respect to the phased links U'); the force is F = TA[U' Ĝ†]. The
//! forward levels (fat7, a copy of V, the projection, W's layout rewrite), three clears
//! and the pull-backs' gather plans ([`GpuPullback`]: 21 launches for `HisqFat`, 1 for
//! `AsqtadLong`, 20 for `Fat7`; the two chains share one scratch). The pull-backs
//! accumulate into their outputs, so every kernel runs at its default launch (a tuner's
//! trial launches would add a gradient several times).

use super::hisq::{HisqBuffers, HisqGpu};
use super::pullback::{gpu_pullback_program, GpuPullback};
use super::runner::{download_links, find, GpuReal, SmearGpuError, BLOCK, REALS};
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::Gpu;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::project::{
    project_pullback_source, singular_threshold, PROJECT_PULLBACK_KERNEL,
};
use qdsl_core::dsl::paths::PathKnobs;
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{naik_epsilon_coefficients, AsqtadLong, Fat7, HisqFat};

/// The U(3) projection's derivative for `T`:
/// `u3_project_pullback(grad_v, links, grad_w, bad, nlinks, threshold)`, one thread per
/// link.
pub fn projection_pullback_program<T: GpuReal>() -> Result<KernelProgram, SmearGpuError> {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let real = T::ELEM;
    Ok(KernelProgram {
        name: format!("{PROJECT_PULLBACK_KERNEL}_{}", T::NAME),
        source: project_pullback_source::<T>()?,
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: PROJECT_PULLBACK_KERNEL.to_string(),
            params: vec![
                p("grad_v", ParamKind::write(real)),
                p("links", ParamKind::read(real)),
                p("grad_w", ParamKind::read(real)),
                p("bad", ParamKind::write(Elem::I32)),
                p("nlinks", ParamKind::I32),
                p("threshold", ParamKind::real(real)),
            ],
            geometry: Geometry::linear(),
        }],
    })
}

/// The HISQ construction's kernels and the pullbacks of its stages, compiled for `T`.
pub struct GpuHisqForce<T> {
    hisq: HisqGpu<T>,
    fat7_back: GpuPullback<T>,
    fat_back: GpuPullback<T>,
    long_back: GpuPullback<T>,
    project_back: LoadedKernel,
}

/// Device memory of one HISQ pull-back: the forward levels ([`HisqBuffers`]: U' in the
/// device layout, W, the projection flags), a copy of V, and the gradients G_X, G_L,
/// G_W, G_V and Ĝ (host layout, 18 reals per link).
pub struct HisqForceBuffers<T> {
    levels: HisqBuffers<T>,
    v: CudaSlice<T>,
    grad_fat: CudaSlice<T>,
    grad_long: CudaSlice<T>,
    grad_w: CudaSlice<T>,
    grad_v: CudaSlice<T>,
    gradient: CudaSlice<T>,
}

impl<T: GpuReal> GpuHisqForce<T> {
    /// Compiles the forward kernels, the three pullbacks and the projection's derivative.
    pub fn new(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        let program = projection_pullback_program::<T>()?;
        // Every kernel compiled in one parallel batch first.
        let mut programs = HisqGpu::<T>::programs(PathKnobs::default())?;
        programs.extend([
            program.clone(),
            gpu_pullback_program::<Fat7, T>()?,
            gpu_pullback_program::<HisqFat, T>()?,
            gpu_pullback_program::<AsqtadLong, T>()?,
        ]);
        gpu.preload_programs(&programs)?;
        let kernels = load_program(gpu, &program)?;
        let fat7_back = GpuPullback::new::<Fat7>(gpu)?;
        let mut fat_back = GpuPullback::new::<HisqFat>(gpu)?;
        // The two chains run one after the other on one stream: one scratch.
        fat_back.share_scratch(&fat7_back);
        Ok(Self {
            hisq: HisqGpu::new(gpu)?,
            fat7_back,
            fat_back,
            long_back: GpuPullback::new::<AsqtadLong>(gpu)?,
            project_back: find(&kernels, PROJECT_PULLBACK_KERNEL, &program.name)?,
        })
    }

    /// Device memory for a lattice.
    pub fn buffers(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
    ) -> Result<HisqForceBuffers<T>, SmearGpuError> {
        let n = 4 * lattice.volume() * REALS;
        Ok(HisqForceBuffers {
            levels: self.hisq.buffers(gpu, lattice)?,
            v: gpu.alloc::<T>("the fat7 links", n)?,
            grad_fat: gpu.alloc::<T>("the fat-link gradient", n)?,
            grad_long: gpu.alloc::<T>("the long-link gradient", n)?,
            grad_w: gpu.alloc::<T>("the projected-link gradient", n)?,
            grad_v: gpu.alloc::<T>("the fat7-link gradient", n)?,
            gradient: gpu.alloc::<T>("the thin-link gradient", n)?,
        })
    }

    /// Copies the thin links `u` (without phases: folded in here) and the gradients
    /// `grad_fat` = G_X, `grad_long` = G_L to the GPU.
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqForceBuffers<T>,
        u: &GaugeField<T>,
        grad_fat: &GaugeField<T>,
        grad_long: &GaugeField<T>,
    ) -> Result<(), SmearGpuError> {
        let lattice = bufs.levels.lattice;
        for (what, f) in [
            ("fat-link gradient", grad_fat),
            ("long-link gradient", grad_long),
        ] {
            if *f.lattice() != lattice {
                return Err(SmearGpuError::Device(crate::device::DeviceError::Shape(
                    format!(
                        "the {what} on {} given, buffers allocated for {lattice}",
                        f.lattice()
                    ),
                )));
            }
        }
        self.hisq.upload(gpu, &mut bufs.levels, u)?;
        let stream = gpu.backend().stream();
        let reals =
            |f: &GaugeField<T>| -> Vec<T> { f.links().iter().flat_map(|l| l.to_reals()).collect() };
        stream
            .memcpy_htod(&reals(grad_fat), &mut bufs.grad_fat)
            .map_err(driver("copying the fat-link gradient to the GPU"))?;
        stream
            .memcpy_htod(&reals(grad_long), &mut bufs.grad_long)
            .map_err(driver("copying the long-link gradient to the GPU"))?;
        Ok(())
    }

    /// Queues the forward levels and the backward sweep with the Naik correction
    /// `epsilon_naik` (no host transfer, no synchronisation): Ĝ in the buffers.
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut HisqForceBuffers<T>,
        epsilon_naik: f64,
    ) -> Result<(), SmearGpuError> {
        let (fat_coeffs, long_coeffs) = naik_epsilon_coefficients(epsilon_naik)?;
        let lattice = bufs.levels.lattice;
        let stream = gpu.backend().stream();
        // Forward: V (kept), W in place, W in the device layout.
        stream
            .memset_zeros(&mut bufs.levels.bad)
            .map_err(driver("clearing the projection flags"))?;
        let levels = &mut bufs.levels;
        self.hisq
            .fat7
            .enqueue_with(gpu, None, &mut levels.thin, 1.0)?;
        stream
            .memcpy_dtod(&levels.thin.output, &mut bufs.v)
            .map_err(driver("keeping the fat7 links"))?;
        self.hisq.enqueue_projection(gpu, levels)?;
        self.hisq
            .fat
            .enqueue_layout(gpu, &lattice, &levels.thin.output, &mut levels.w)?;
        // G_W = HisqFat*(G_X) + (1 + ε) AsqtadLong*(G_L).
        stream
            .memset_zeros(&mut bufs.grad_w)
            .map_err(driver("clearing the projected-link gradient"))?;
        self.fat_back.enqueue_on(
            gpu,
            &lattice,
            &levels.w,
            &bufs.grad_fat,
            &mut bufs.grad_w,
            &fat_coeffs,
        )?;
        self.long_back.enqueue_on(
            gpu,
            &lattice,
            &levels.w,
            &bufs.grad_long,
            &mut bufs.grad_w,
            &long_coeffs,
        )?;
        // G_V from G_W through the projection's derivative.
        let nlinks = 4 * lattice.volume();
        let mut args = Args::new();
        args.write("grad_v", &mut bufs.grad_v)
            .read("links", &bufs.v)
            .read("grad_w", &bufs.grad_w)
            .write("bad", &mut levels.bad)
            .count("nlinks", nlinks)
            .real("threshold", singular_threshold::<T>());
        // grad_v, links and grad_w hold nlinks·18 reals, bad nlinks ints.
        self.project_back.launch(gpu, [nlinks, 1, 1], BLOCK, args)?;
        // Ĝ = fat7*(G_V) on the thin links (device layout, as fat7 read them).
        stream
            .memset_zeros(&mut bufs.gradient)
            .map_err(driver("clearing the thin-link gradient"))?;
        let coeffs = self.fat7_back.coefficients(1.0);
        self.fat7_back.enqueue_on(
            gpu,
            &lattice,
            &levels.thin.input,
            &bufs.grad_v,
            &mut bufs.gradient,
            &coeffs,
        )?;
        Ok(())
    }

    /// After [`Self::enqueue`]: checks the projection flags and downloads Ĝ.
    ///
    /// Errors: copying; a fat7 link the projection (or its derivative) rejected
    /// ([`SmearGpuError::Projection`], the first one in link order).
    pub fn finish(
        &self,
        gpu: &Gpu,
        bufs: &HisqForceBuffers<T>,
    ) -> Result<GaugeField<T>, SmearGpuError> {
        HisqGpu::check_projection_flags(gpu, &bufs.levels)?;
        Ok(download_links(
            gpu,
            &bufs.gradient,
            bufs.levels.lattice,
            "the thin-link gradient",
        )?)
    }

    /// Ĝ (with respect to the phased thin links) of thin links `u` without phases and
    /// the fat- and long-link gradients: upload, run, download.
    pub fn pullback(
        &self,
        gpu: &Gpu,
        u: &GaugeField<T>,
        epsilon_naik: f64,
        grad_fat: &GaugeField<T>,
        grad_long: &GaugeField<T>,
    ) -> Result<GaugeField<T>, SmearGpuError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u, grad_fat, grad_long)?;
        self.enqueue(gpu, &mut bufs, epsilon_naik)?;
        self.finish(gpu, &bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::{ptxas, Arch};
    use qdsl_kernels::AsqtadFat;

    /// NVRTC compiles the projection's derivative and the pullbacks of the HISQ and
    /// asqtad force for sm_90 in f32 and f64 (the gather plans and the first, atomic
    /// kernels); ptxas reports their registers and spills (`--nocapture` prints them). The
    /// derivative kernel (one link per thread, six matrices live) must not spill in f32,
    /// the gather plans' kernels in neither precision.
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn the_force_kernels_compile_and_report_their_registers() {
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        ptxas::find_ptxas().expect("ptxas (the build found it)");
        fn programs<T: GpuReal>() -> Vec<KernelProgram> {
            vec![
                projection_pullback_program::<T>().unwrap(),
                super::super::gpu_pullback_program::<Fat7, T>().unwrap(),
                super::super::gpu_pullback_program::<HisqFat, T>().unwrap(),
                super::super::gpu_pullback_program::<AsqtadLong, T>().unwrap(),
                super::super::gpu_pullback_program::<AsqtadFat, T>().unwrap(),
                super::super::pullback::gpu_atomic_pullback_program::<AsqtadFat, T>().unwrap(),
                super::super::pullback::gpu_atomic_pullback_program::<Fat7, T>().unwrap(),
            ]
        }
        let mut all = programs::<f32>();
        all.extend(programs::<f64>());
        for p in &all {
            let ptx = jit
                .compile(&p.name, &p.source, Arch::SM_90, &[])
                .unwrap()
                .ptx;
            for r in ptxas::report(&ptx, Arch::SM_90).unwrap() {
                eprintln!(
                    "{}: {} registers, spill stores {} B, loads {} B, stack {} B",
                    r.function, r.registers, r.spill_stores, r.spill_loads, r.stack_frame
                );
                if p.name == format!("{PROJECT_PULLBACK_KERNEL}_f32")
                    || p.name.contains("_reverse_")
                {
                    assert_eq!(r.spill_stores + r.spill_loads, 0, "{}", p.name);
                }
            }
        }
    }
}
