//! [`GpuPullback`]: the chain rule back through a `link_paths!` smearing on the GPU — the
//! thin-link gradient Ĝ of S from its smeared-link gradient G (dS = Σ Re tr[G† dF]),
//! what `qdsl_core::dsl::paths::fermion_force::pullback` computes on the CPU, from the
//! kernel of [`qdsl_core::dsl::paths::pullback_cuda`] (one thread per smeared link, the
//! tree walked backwards, gradients added atomically). The fermion force of the smeared
//! action is then F = TA[U Ĝ†]
//! (`qdsl_core::dsl::paths::fermion_force::force_from_gradient`).
//!
//! The kernel accumulates into its output, so it runs at the default launch only (a
//! tuner's repeated trial launches would add the gradient several times).

use super::runner::{download_links, find, lattice_args, GpuReal, SmearGpuError, BLOCK, REALS};
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, Gpu};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::cuda::{check_extents, device_layout};
use qdsl_core::dsl::paths::pullback_cuda::{pullback_kernel, pullback_program};
use qdsl_core::dsl::paths::{LinkPaths, PathKnobs, PathTree};
use qdsl_core::dsl::KernelProgram;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;

/// The pullback kernel of one smearing spec, compiled for `T`.
#[derive(Debug)]
pub struct GpuPullback<T> {
    tree: PathTree,
    kernel: LoadedKernel,
    _real: std::marker::PhantomData<T>,
}

/// Device memory of one pullback: the thin links (device layout), the smeared-link
/// gradient G and the thin-link gradient Ĝ (host layout, 18 reals per link).
#[derive(Debug)]
pub struct PullbackBuffers<T> {
    lattice: Lattice,
    links: CudaSlice<T>,
    smeared_gradient: CudaSlice<T>,
    gradient: CudaSlice<T>,
}

/// The program of spec `S`'s pullback for `T`: `<name>_pullback(grad, u, gs, c0.., L0..L3)`.
pub fn gpu_pullback_program<S: LinkPaths, T: GpuReal>() -> Result<KernelProgram, SmearGpuError> {
    let tree = S::tree()?;
    Ok(pullback_program::<T>(
        &tree,
        &PathKnobs::default(),
        &format!("{}_pullback_{}", tree.spec.name, T::NAME),
    )?)
}

impl<T: GpuReal> GpuPullback<T> {
    /// Compiles the pullback of spec `S` for `T`.
    pub fn new<S: LinkPaths>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        let tree = S::tree()?;
        let program = gpu_pullback_program::<S, T>()?;
        let kernels = load_program(gpu, &program)?;
        let kernel = find(&kernels, &pullback_kernel(&tree.spec.name), &program.name)?;
        Ok(Self {
            tree,
            kernel,
            _real: std::marker::PhantomData,
        })
    }

    /// Device memory for a lattice.
    pub fn buffers(&self, gpu: &Gpu, lat: &Lattice) -> Result<PullbackBuffers<T>, DeviceError> {
        check_extents(&self.tree.spec.name, lat.dims())
            .map_err(|e| DeviceError::Shape(e.to_string()))?;
        let n = 4 * lat.volume() * REALS;
        Ok(PullbackBuffers {
            lattice: *lat,
            links: gpu.alloc::<T>("the thin links", n)?,
            smeared_gradient: gpu.alloc::<T>("the smeared-link gradient", n)?,
            gradient: gpu.alloc::<T>("the thin-link gradient", n)?,
        })
    }

    /// Copies the thin links `u` (phases folded in; device layout) and the smeared-link
    /// gradient `grad` (host layout) to the GPU.
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut PullbackBuffers<T>,
        u: &GaugeField<T>,
        grad: &GaugeField<T>,
    ) -> Result<(), DeviceError> {
        for (what, f) in [("links", u), ("gradient", grad)] {
            if *f.lattice() != bufs.lattice {
                return Err(DeviceError::Shape(format!(
                    "{what} on {} given, buffers allocated for {}",
                    f.lattice(),
                    bufs.lattice
                )));
            }
        }
        let reals =
            |f: &GaugeField<T>| -> Vec<T> { f.links().iter().flat_map(|l| l.to_reals()).collect() };
        let links =
            device_layout(&reals(u), REALS, bufs.lattice.volume()).map_err(DeviceError::Shape)?;
        let stream = gpu.backend().stream();
        stream
            .memcpy_htod(&links, &mut bufs.links)
            .map_err(driver("copying the thin links to the GPU"))?;
        stream
            .memcpy_htod(&reals(grad), &mut bufs.smeared_gradient)
            .map_err(driver("copying the smeared-link gradient to the GPU"))
    }

    /// Queues Ĝ ← 0, then the pullback with tadpole factor `u0` (default launch).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut PullbackBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        gpu.backend()
            .stream()
            .memset_zeros(&mut bufs.gradient)
            .map_err(driver("clearing the thin-link gradient"))?;
        let coeffs = self.tree.coefficients(u0);
        self.enqueue_on(
            gpu,
            &bufs.lattice,
            &bufs.links,
            &bufs.smeared_gradient,
            &mut bufs.gradient,
            &coeffs,
        )
    }

    /// The term coefficients at tadpole factor `u0` ([`PathTree::coefficients`]).
    pub fn coefficients(&self, u0: f64) -> Vec<f64> {
        self.tree.coefficients(u0)
    }

    /// Queues the pullback from device buffers, adding to `grad` (not cleared, so that
    /// several smearings of the same links accumulate one gradient): the thin links `u`
    /// in the device layout (as [`super::GpuSmearer::enqueue_layout`] writes them), the
    /// smeared-link gradient `gs` and `grad` in the host layout, with term coefficients
    /// `coeffs` (tadpole factors included, in term order; e.g. scaled by 1 + ε for
    /// HISQ's Naik term).
    pub fn enqueue_on(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        u: &CudaSlice<T>,
        gs: &CudaSlice<T>,
        grad: &mut CudaSlice<T>,
        coeffs: &[f64],
    ) -> Result<(), DeviceError> {
        if coeffs.len() != self.tree.spec.terms.len() {
            return Err(DeviceError::Shape(format!(
                "{} pullback: expected {} term coefficients, found {}",
                self.tree.spec.name,
                self.tree.spec.terms.len(),
                coeffs.len()
            )));
        }
        let mut args = Args::new();
        lattice_args(&mut args, lattice, &self.kernel.interface.name)?;
        args.write("grad", grad).read("u", u).read("gs", gs);
        for (k, c) in coeffs.iter().enumerate() {
            args.real(&format!("c{k}"), *c);
        }
        // grad and gs hold 4·V·18 reals (host layout), u 4·V links (device layout).
        self.kernel
            .launch(gpu, [4 * lattice.volume(), 1, 1], BLOCK, args)
    }

    /// Copies Ĝ back into a host field.
    pub fn download(
        &self,
        gpu: &Gpu,
        bufs: &PullbackBuffers<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        download_links(gpu, &bufs.gradient, bufs.lattice, "the thin-link gradient")
    }

    /// Ĝ of thin links `u` (phases folded in) and smeared-link gradient `grad` with
    /// tadpole factor `u0`: upload, run, download.
    pub fn pullback(
        &self,
        gpu: &Gpu,
        u: &GaugeField<T>,
        u0: f64,
        grad: &GaugeField<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u, grad)?;
        self.enqueue(gpu, &mut bufs, u0)?;
        self.download(gpu, &bufs)
    }
}
