//! [`GpuGaugeForce`]: the gauge force of a `link_paths!` action on the GPU.
//!
//! The staple sums Σ_μ(x) run as an ordinary smearing schedule ([`GpuSmearer`] of the
//! action's staple plan, tadpole factor 1) into a links buffer, then one kernel per site
//! writes F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] for the four μ
//! ([`qdsl_core::dsl::paths::force`] states the convention).

use super::runner::{config, download_links, int, load_module, GpuReal, GpuSmearer};
use super::runner::{SmearBuffers, SmearGpuError, REALS};
use crate::device::gpu::driver;
use crate::device::{DeviceError, Gpu};
use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use qdsl_core::dsl::paths::force::force_cuda;
use qdsl_core::dsl::paths::{ForcePlan, GaugeAction};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;

/// The staple schedule and the force kernel of one action, compiled for `T`.
#[derive(Debug)]
pub struct GpuGaugeForce<T> {
    plan: ForcePlan,
    staples: GpuSmearer<T>,
    force: CudaFunction,
}

/// Device memory of one force computation: the links, the staple sums (in the smearing
/// buffers) and the force.
#[derive(Debug)]
pub struct ForceBuffers<T> {
    staples: SmearBuffers<T>,
    force: CudaSlice<T>,
}

impl<T: GpuReal> GpuGaugeForce<T> {
    /// Compiles the force of action `A` for `T` (one NVRTC program holding the staple
    /// kernels and `<action>_force`).
    pub fn new<A: GaugeAction>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        let plan = A::force_plan()?;
        let source = force_cuda::<T>(&plan)?;
        let program = format!("{}_force_{}", plan.action.name, T::NAME);
        let module = load_module(gpu, &program, &source)?;
        let staples = GpuSmearer::from_module(plan.staples.clone(), &module, &program)?;
        let full = format!("{}_force", plan.action.name);
        let force = module
            .load_function(&full)
            .map_err(driver(format!("finding {full} in {program}")))?;
        Ok(Self {
            plan,
            staples,
            force,
        })
    }

    /// The force plan.
    pub fn plan(&self) -> &ForcePlan {
        &self.plan
    }

    /// Device memory for a lattice.
    pub fn buffers(&self, gpu: &Gpu, lat: &Lattice) -> Result<ForceBuffers<T>, DeviceError> {
        Ok(ForceBuffers {
            staples: self.staples.buffers(gpu, lat)?,
            force: gpu.alloc::<T>("the gauge force", 4 * lat.volume() * REALS)?,
        })
    }

    /// Copies the links `u` to the GPU.
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut ForceBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), DeviceError> {
        self.staples.upload(gpu, &mut bufs.staples, u)
    }

    /// Queues the staple schedule and the force kernel with coupling `beta` (no
    /// synchronisation).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut ForceBuffers<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        self.staples.enqueue(gpu, &mut bufs.staples, 1.0)?;
        let lat = bufs.staples.lattice;
        let dims = lat.dims();
        let [l0, l1, l2, l3] = [
            int(dims[0], "L0")?,
            int(dims[1], "L1")?,
            int(dims[2], "L2")?,
            int(dims[3], "L3")?,
        ];
        let c = T::from_f64(-beta / 3.0);
        let stream = gpu.backend().stream();
        let mut b = stream.launch_builder(&self.force);
        b.arg(&mut bufs.force)
            .arg(&bufs.staples.input)
            .arg(&bufs.staples.output)
            .arg(&c);
        b.arg(&l0).arg(&l1).arg(&l2).arg(&l3);
        // SAFETY: (real* force, const real* u, const real* staples, real c, int L0..L3);
        // the three buffers hold 4·V·18 reals.
        unsafe { b.launch(config(lat.volume())?) }
            .map_err(driver(format!("launching {}_force", self.plan.action.name)))?;
        Ok(())
    }

    /// Copies the force back into a host field (one su(3) matrix per link).
    pub fn download(
        &self,
        gpu: &Gpu,
        bufs: &ForceBuffers<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        download_links(gpu, &bufs.force, bufs.staples.lattice, "the gauge force")
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
