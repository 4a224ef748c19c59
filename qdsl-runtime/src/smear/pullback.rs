//! [`GpuPullback`]: the chain rule back through a `link_paths!` smearing on the GPU — the
//! thin-link gradient Ĝ of S from its smeared-link gradient G (dS = Σ Re tr[G† dF]),
//! what `qdsl_core::dsl::paths::fermion_force::pullback` computes on the CPU — from the
//! gather plan of [`qdsl_core::dsl::paths::reverse`] (no atomics: per μ the staple-chain
//! levels and their adjoints as scratch fields of one μ, then every thin link gathering
//! the contributions that land on it; the loose terms, Lepage and Naik, gathered once
//! over every μ). The fermion force of the smeared action is then F = TA[U Ĝ†]
//! (`qdsl_core::dsl::paths::fermion_force::force_from_gradient`).
//!
//! The gathers add into their output, so every kernel runs at its default launch (a
//! tuner's repeated trial launches would add the gradient several times).

use super::runner::{download_links, find, lattice_args, GpuReal, SmearGpuError, BLOCK, REALS};
use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, Gpu};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::cuda::{check_extents, device_layout};
use qdsl_core::dsl::paths::reverse::ReversePlan;
use qdsl_core::dsl::paths::reverse_cuda::{
    adjoint_kernel, gather_kernel, level_kernel, loose_kernel, reverse_program,
};
use qdsl_core::dsl::paths::staged::slots_per_mu;
use qdsl_core::dsl::paths::{pullback_cuda, LinkPaths, PathKnobs, PathTree};
use qdsl_core::dsl::KernelProgram;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use std::sync::{Arc, Mutex};

/// The scratch of the chain's fields of one μ, shareable between pull-backs that run on
/// one stream ([`GpuPullback::share_scratch`]).
type Scratch<T> = Arc<Mutex<Option<CudaSlice<T>>>>;

/// The gather plan of one smearing spec, compiled for `T`.
#[derive(Debug)]
pub struct GpuPullback<T> {
    tree: PathTree,
    plan: ReversePlan,
    /// The level kernels K_{B−1} … K_1 with their slots per μ.
    levels: Vec<(LoadedKernel, usize)>,
    /// The adjoint kernels Ā_1 … Ā_{B−1} with their slots per μ.
    adjoints: Vec<(LoadedKernel, usize)>,
    /// The chain gather (per μ), when the spec has chain terms.
    gather: Option<LoadedKernel>,
    /// The loose gather (all μ), when the spec has loose terms.
    loose: Option<LoadedKernel>,
    scratch: Scratch<T>,
    _real: std::marker::PhantomData<T>,
}

/// Binds the term coefficients `c0`, `c1`, ….
fn coefficient_args(args: &mut Args<'_>, coeffs: &[f64]) {
    for (k, c) in coeffs.iter().enumerate() {
        args.real(&format!("c{k}"), *c);
    }
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

/// The program of spec `S`'s pull-back for `T`: the gather plan's kernels
/// ([`qdsl_core::dsl::paths::reverse_cuda`]).
pub fn gpu_pullback_program<S: LinkPaths, T: GpuReal>() -> Result<KernelProgram, SmearGpuError> {
    let plan = ReversePlan::new(&S::spec())?;
    Ok(reverse_program::<T>(
        &plan,
        &PathKnobs::default(),
        &format!("{}_reverse_{}", plan.spec.name, T::NAME),
    )?)
}

/// The program of spec `S`'s atomic pull-back for `T` (one thread per smeared link, the
/// tree walked backwards, gradients added with `atomicAdd`: the first GPU form, kept for
/// its register report): `<name>_pullback(grad, u, gs, c0.., L0..L3)`.
pub fn gpu_atomic_pullback_program<S: LinkPaths, T: GpuReal>(
) -> Result<KernelProgram, SmearGpuError> {
    let tree = S::tree()?;
    Ok(pullback_cuda::pullback_program::<T>(
        &tree,
        &PathKnobs::default(),
        &format!("{}_pullback_{}", tree.spec.name, T::NAME),
    )?)
}

impl<T: GpuReal> GpuPullback<T> {
    /// Compiles the pull-back of spec `S` for `T`.
    pub fn new<S: LinkPaths>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        let tree = S::tree()?;
        let plan = ReversePlan::new(&S::spec())?;
        let program = gpu_pullback_program::<S, T>()?;
        let kernels = load_program(gpu, &program)?;
        let name = plan.spec.name.clone();
        let get = |kernel: String| find(&kernels, &kernel, &program.name);
        let chain = plan.depth().is_some();
        let levels = if chain {
            plan.stored_levels()
                .rev()
                .map(|b| Ok((get(level_kernel(&name, b))?, slots_per_mu(b))))
                .collect::<Result<Vec<_>, DeviceError>>()?
        } else {
            Vec::new()
        };
        let adjoints = if chain {
            plan.stored_levels()
                .map(|b| Ok((get(adjoint_kernel(&name, b))?, slots_per_mu(b))))
                .collect::<Result<Vec<_>, DeviceError>>()?
        } else {
            Vec::new()
        };
        let gather = chain.then(|| get(gather_kernel(&name))).transpose()?;
        let loose = (!plan.loose.is_empty())
            .then(|| get(loose_kernel(&name)))
            .transpose()?;
        Ok(Self {
            tree,
            plan,
            levels,
            adjoints,
            gather,
            loose,
            scratch: Arc::new(Mutex::new(None)),
            _real: std::marker::PhantomData,
        })
    }

    /// The gather plan this pull-back runs.
    pub fn plan(&self) -> &ReversePlan {
        &self.plan
    }

    /// Bytes of device scratch the plan takes on `lattice` (the chain's fields of one μ).
    pub fn scratch_bytes(&self, lattice: &Lattice) -> usize {
        self.plan.scratch_reals(lattice.volume()) * T::BYTES
    }

    /// Makes this pull-back use `other`'s scratch (for pull-backs that run one after
    /// the other on one stream, as HISQ's levels do: the scratch is the larger of the
    /// two rather than their sum).
    pub fn share_scratch(&mut self, other: &GpuPullback<T>) {
        self.scratch = Arc::clone(&other.scratch);
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
        let volume = lattice.volume();
        if let Some(gather) = &self.gather {
            let reals = self.plan.scratch_reals(volume).max(1);
            let mut guard = self.scratch.lock().map_err(|_| {
                DeviceError::Shape("the pull-back's scratch lock is poisoned".into())
            })?;
            if guard.as_ref().is_none_or(|f| f.len() < reals) {
                // Free the smaller fields before asking for the larger.
                *guard = None;
                *guard = Some(gpu.alloc::<T>("the pull-back's chain fields", reals)?);
            }
            let f = guard.as_mut().expect("allocated above");
            for mu in 0..4 {
                for (kernel, slots) in &self.levels {
                    let mut args = Args::new();
                    lattice_args(&mut args, lattice, &kernel.interface.name)?;
                    args.write("f", &mut *f).read("u", u);
                    coefficient_args(&mut args, coeffs);
                    args.count("mu", mu);
                    // f holds the plan's slots of one μ (18 reals per site each), u 4·V
                    // links.
                    kernel.launch(gpu, [slots * volume, 1, 1], BLOCK, args)?;
                }
                for (kernel, slots) in &self.adjoints {
                    let mut args = Args::new();
                    lattice_args(&mut args, lattice, &kernel.interface.name)?;
                    args.write("f", &mut *f).read("u", u).read("gs", gs);
                    coefficient_args(&mut args, coeffs);
                    args.count("mu", mu);
                    // f as above, gs 4·V·18 reals (host layout).
                    kernel.launch(gpu, [slots * volume, 1, 1], BLOCK, args)?;
                }
                let mut args = Args::new();
                lattice_args(&mut args, lattice, &gather.interface.name)?;
                args.write("grad", &mut *grad)
                    .read("f", &*f)
                    .read("u", u)
                    .read("gs", gs);
                coefficient_args(&mut args, coeffs);
                args.count("mu", mu);
                // grad and gs hold 4·V·18 reals (host layout), f the fields above.
                gather.launch(gpu, [4 * volume, 1, 1], BLOCK, args)?;
            }
        }
        if let Some(loose) = &self.loose {
            let mut args = Args::new();
            lattice_args(&mut args, lattice, &loose.interface.name)?;
            args.write("grad", grad).read("u", u).read("gs", gs);
            coefficient_args(&mut args, coeffs);
            // grad and gs hold 4·V·18 reals (host layout), u 4·V links (device layout).
            loose.launch(gpu, [4 * volume, 1, 1], BLOCK, args)?;
        }
        Ok(())
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
