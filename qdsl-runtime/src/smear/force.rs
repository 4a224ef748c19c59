//! [`GpuGaugeForce`]: the gauge force of a `link_paths!` action on the GPU.
//!
//! The staple sums Σ_μ(x) run as an ordinary smearing schedule ([`GpuSmearer`] of the
//! action's staple plan, tadpole factor 1) into a links buffer, then one kernel per site
//! writes F_μ(x) = −(β/3) TA[U_μ(x) Σ_μ(x)†] for the four μ
//! ([`qdsl_core::dsl::paths::force`] states the convention).

use super::runner::{download_links, find, lattice_args, GpuReal, GpuSmearer, BLOCK};
use super::runner::{SmearBuffers, SmearGpuError, REALS};
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, Gpu};
use crate::tune::Tuner;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::cuda::interfaces;
use qdsl_core::dsl::paths::force::force_cuda;
use qdsl_core::dsl::paths::{ForcePlan, GaugeAction};
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;

/// The staple schedule and the force kernel of one action, compiled for `T`.
#[derive(Debug)]
pub struct GpuGaugeForce<T> {
    plan: ForcePlan,
    staples: GpuSmearer<T>,
    force: LoadedKernel,
}

/// `<action>_force(real* force, const real* u, const real* staples, real c, int L0..L3)`
/// of [`force_cuda`], one thread per site.
fn force_interface(action: &str, real: Elem) -> KernelInterface {
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    KernelInterface {
        name: format!("{action}_force"),
        params: [
            p("force", ParamKind::write(real)),
            p("u", ParamKind::read(real)),
            p("staples", ParamKind::read(real)),
            p("c", ParamKind::real(real)),
        ]
        .into_iter()
        .chain((0..4).map(|k| p(&format!("L{k}"), ParamKind::I32)))
        .collect(),
        geometry: Geometry::linear(),
    }
}

/// The program of [`force_cuda`]: the staple kernels and the force kernel.
pub fn force_program<T: GpuReal>(plan: &ForcePlan) -> Result<KernelProgram, SmearGpuError> {
    let mut kernels = interfaces(&plan.staples.spec.name, T::ELEM);
    kernels.push(force_interface(&plan.action.name, T::ELEM));
    Ok(KernelProgram {
        name: format!("{}_force_{}", plan.action.name, T::NAME),
        source: force_cuda::<T>(plan)?,
        options: Vec::new(),
        kernels,
    })
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
        let program = force_program::<T>(&plan)?;
        let kernels = load_program(gpu, &program)?;
        let staples = GpuSmearer::from_kernels(plan.staples.clone(), &kernels, &program)?;
        let force = find(
            &kernels,
            &format!("{}_force", plan.action.name),
            &program.name,
        )?;
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
    /// synchronisation; default launches).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut ForceBuffers<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        self.enqueue_with(gpu, None, bufs, beta)
    }

    /// [`Self::enqueue`] with the staple schedule's launches from `tuner`
    /// ([`GpuSmearer::enqueue_with`]).
    pub fn enqueue_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut ForceBuffers<T>,
        beta: f64,
    ) -> Result<(), DeviceError> {
        self.staples
            .enqueue_with(gpu, tuner, &mut bufs.staples, 1.0)?;
        let lat = bufs.staples.lattice;
        let mut args = Args::new();
        lattice_args(&mut args, &lat);
        args.write("force", &mut bufs.force)
            .read("u", &bufs.staples.input)
            .read("staples", &bufs.staples.output)
            .real("c", -beta / 3.0);
        // The three buffers hold 4·V·18 reals.
        self.force.launch(gpu, [lat.volume(), 1, 1], BLOCK, args)
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
