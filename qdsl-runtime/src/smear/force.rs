//! [`GpuGaugeForce`]: the gauge force of a `link_paths!` action on the GPU.
//!
//! One kernel, one thread per link: the staple sum Σ_μ(x) of the action's staple tree
//! ([`qdsl_core::dsl::paths::tree`], tadpole factor 1) in registers, then
//! F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] ([`qdsl_core::dsl::paths::force`] states the
//! convention).

use super::runner::{download_links, find, launch_tree, GpuReal, SmearGpuError, REALS};
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, LoadedKernel};
use crate::device::tuned::{ProgramRef, Source};
use crate::device::{DeviceError, Gpu};
use crate::tune::Tuner;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::cuda::{check_extents, device_layout, interface, Epilogue};
use qdsl_core::dsl::paths::force::{force_cuda, force_kernel};
use qdsl_core::dsl::paths::{ForcePlan, GaugeAction};
use qdsl_core::dsl::KernelProgram;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;

/// The force kernel of one action, compiled for `T`.
#[derive(Debug)]
pub struct GpuGaugeForce<T> {
    plan: ForcePlan,
    program: String,
    source_hash: u64,
    kernel: LoadedKernel,
    _real: std::marker::PhantomData<T>,
}

/// The program of [`force_cuda`]: `<action>_force(out, u, c0.., cf, L0..L3)`.
pub fn force_program<T: GpuReal>(plan: &ForcePlan) -> Result<KernelProgram, SmearGpuError> {
    Ok(KernelProgram {
        name: format!("{}_force_{}", plan.action.name, T::NAME),
        source: force_cuda::<T>(plan)?,
        options: Vec::new(),
        kernels: vec![interface(
            &force_kernel(&plan.action.name),
            plan.tree.spec.terms.len(),
            T::ELEM,
            Epilogue::Force,
        )],
    })
}

/// Device memory of one force computation: the links and the force.
#[derive(Debug)]
pub struct ForceBuffers<T> {
    lattice: Lattice,
    links: CudaSlice<T>,
    force: CudaSlice<T>,
}

impl<T: GpuReal> GpuGaugeForce<T> {
    /// Compiles the force of action `A` for `T` (one NVRTC program, one kernel).
    pub fn new<A: GaugeAction>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        Self::from_plan(gpu, A::force_plan()?)
    }

    /// Compiles the force of `plan` (any action spec, e.g. one level's terms) for `T`.
    pub fn from_plan(gpu: &Gpu, plan: ForcePlan) -> Result<Self, SmearGpuError> {
        let program = force_program::<T>(&plan)?;
        let kernels = load_program(gpu, &program)?;
        let kernel = find(&kernels, &force_kernel(&plan.action.name), &program.name)?;
        Ok(Self {
            plan,
            program: program.name.clone(),
            source_hash: program.source_hash(),
            kernel,
            _real: std::marker::PhantomData,
        })
    }

    /// The force plan.
    pub fn plan(&self) -> &ForcePlan {
        &self.plan
    }

    /// Device memory for a lattice.
    pub fn buffers(&self, gpu: &Gpu, lat: &Lattice) -> Result<ForceBuffers<T>, DeviceError> {
        check_extents(&self.plan.action.name, lat.dims())
            .map_err(|e| DeviceError::Shape(e.to_string()))?;
        Ok(ForceBuffers {
            lattice: *lat,
            links: gpu.alloc::<T>("the gauge links", 4 * lat.volume() * REALS)?,
            force: gpu.alloc::<T>("the gauge force", 4 * lat.volume() * REALS)?,
        })
    }

    /// Copies the links `u` to the GPU, in the kernel's device layout
    /// ([`device_layout`]).
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut ForceBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), DeviceError> {
        if *u.lattice() != bufs.lattice {
            return Err(DeviceError::Shape(format!(
                "links on {} given, buffers allocated for {}",
                u.lattice(),
                bufs.lattice
            )));
        }
        let links: Vec<T> = u.links().iter().flat_map(|l| l.to_reals()).collect();
        let host =
            device_layout(&links, REALS, bufs.lattice.volume()).map_err(DeviceError::Shape)?;
        gpu.backend()
            .stream()
            .memcpy_htod(&host, &mut bufs.links)
            .map_err(driver("copying the gauge links to the GPU"))
    }

    /// Queues the force kernel with coupling `beta` (no synchronisation; the default
    /// launch).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut ForceBuffers<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        self.enqueue_with(gpu, None, bufs, beta)
    }

    /// [`Self::enqueue`] with the launch from `tuner` ([`crate::device::tuned`]).
    pub fn enqueue_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut ForceBuffers<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        let program = ProgramRef {
            name: &self.program,
            source: Source::Hash(self.source_hash),
        };
        launch_tree(
            gpu,
            tuner,
            &self.kernel,
            program,
            &bufs.lattice,
            &bufs.links,
            &mut bufs.force,
            &self.plan.tree.coefficients(1.0),
            Some(-beta / 3.0),
        )
    }

    /// Queues the force kernel on device memory the caller owns: `force` (host layout,
    /// 18 reals per link) ← the force of `links` (device layout, [`device_layout`]) at
    /// coupling `beta` on `lattice`, default launch.
    pub fn enqueue_on(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        links: &CudaSlice<T>,
        force: &mut CudaSlice<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        let program = ProgramRef {
            name: &self.program,
            source: Source::Hash(self.source_hash),
        };
        launch_tree(
            gpu,
            None,
            &self.kernel,
            program,
            lattice,
            links,
            force,
            &self.plan.tree.coefficients(1.0),
            Some(-beta / 3.0),
        )
    }

    /// Copies the force back into a host field (one su(3) matrix per link).
    pub fn download(
        &self,
        gpu: &Gpu,
        bufs: &ForceBuffers<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        download_links(gpu, &bufs.force, bufs.lattice, "the gauge force")
    }

    /// The force of links `u` at coupling `beta`: upload, run, download.
    pub fn force(
        &self,
        gpu: &Gpu,
        u: &GaugeField<T>,
        beta: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u)?;
        self.enqueue(gpu, &mut bufs, beta)?;
        self.download(gpu, &bufs)
    }
}
