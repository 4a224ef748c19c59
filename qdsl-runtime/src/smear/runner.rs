//! [`GpuSmearer`]: one `link_paths!` plan compiled for one precision, run on the GPU.
//!
//! With the plan knob [`PlanKind::Tree`], one kernel launch, one thread per link: the
//! spec's tree ([`PathTree`], the staple levels nested by Horner's rule) evaluated in
//! registers, F_μ(x) = Σ_t c_t u0^(−(L_t − 1)) Σ_paths P_t(x) written once per link. With
//! [`PlanKind::Staged`], the same tree with its inner staple levels stored as fields by
//! one pass kernel each ([`Staging`]) before the root kernel. Gauge fields travel in the host [`GaugeField`] layout (18 reals per link, link
//! `4·cb + μ`), which is what the emitted kernels read and write; with the input knob
//! recon 12 ([`PathKnobs`]) the thin links are uploaded as 14-real records (rows 0 and 1,
//! λ = det L) and rebuilt inline by the kernels.

use crate::device::gpu::driver;
use crate::device::kernel::{load_program, Args, DeviceElem, LoadedKernel};
use crate::device::tuned::{tuned_launch, ProgramRef, Source};
use crate::device::{DeviceError, Gpu};
use crate::tune::{FirstUse, LaunchConfig, Tuner};
use cudarc::driver::ValidAsZeroBits;
use cudarc::driver::{CudaSlice, DeviceRepr};
use qdsl_core::dsl::paths::cuda::{
    check_extents, device_layout, encode_kernel_name, layout_kernel_name, links_kernel,
    pass_kernel_name,
};
use qdsl_core::dsl::paths::knobs::encode_links;
use qdsl_core::dsl::paths::{LinkPaths, PathKnobs, PathTree, PlanKind, Staging};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::dsl::{DslError, KernelProgram};
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{Lattice, SiteBox};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Real;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};
use std::sync::{Arc, Mutex};

/// Threads per block of the per-link kernels that are not tuned (the U(3) projection, the
/// layout rewrite).
pub(super) const BLOCK: [u32; 3] = [128, 1, 1];

/// Reals per link or per node-buffer site (3 × 3 complex).
pub(super) const REALS: usize = 18;

/// A real type the GPU kernels take: f32 or f64.
pub trait GpuReal: Real + DeviceRepr + ValidAsZeroBits + DeviceElem {}
impl GpuReal for f32 {}
impl GpuReal for f64 {}

/// Why smearing on the GPU failed.
#[derive(Debug, thiserror::Error)]
pub enum SmearGpuError {
    /// The spec could not be lowered or emitted.
    #[error("link_paths! spec: {0}")]
    Spec(#[from] DslError),
    /// Compiling, allocating, copying or launching failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The U(3) projection W = V(V†V)^(−1/2) rejected the link at checkerboard index
    /// `cb`, direction `mu` (not finite, or g₂/g₀ at or below the singularity threshold).
    #[error("U(3) projection of the fat7 link at checkerboard site {cb}, direction {mu}: singular or not finite")]
    Projection {
        /// Checkerboard index of the link.
        cb: usize,
        /// Direction of the link.
        mu: usize,
    },
}

/// The scratch fields of staged plans: allocated at the first run, grown for a larger
/// lattice, shareable between smearers that run on one stream ([`GpuSmearer::share_scratch`]).
type Scratch<T> = Arc<Mutex<Option<CudaSlice<T>>>>;

/// One pass kernel of a staged plan: the slots of one μ it writes.
#[derive(Debug)]
struct Pass {
    kernel: LoadedKernel,
    /// Its first slot in the scratch of one μ.
    first: usize,
    /// Its slots per μ.
    slots: usize,
}

/// What a boxed run of the staged plan ([`GpuSmearer::enqueue_boxed`]) calls between its
/// launches (a closure over the scratch and slots is one: its `after_pass`).
pub trait StageHooks<T> {
    /// After each pass: the scratch (the fields of one μ) and the slots the pass just
    /// wrote, e.g. to fill their halo from the neighbouring ranks before the next level
    /// reads them.
    fn after_pass(
        &mut self,
        fields: &mut CudaSlice<T>,
        slots: std::ops::Range<usize>,
    ) -> Result<(), DeviceError>;

    /// Before each kernel's launches over the boxes after the first (the first box: the
    /// sites that read no halo, launched while the fields' halos may still travel), e.g.
    /// to make the GPU's stream wait for them. The default: nothing.
    fn before_rest(&mut self) -> Result<(), DeviceError> {
        Ok(())
    }
}

/// Hooks that do nothing: a boxed run with no exchange between its launches.
pub struct NoHooks;

impl<T> StageHooks<T> for NoHooks {
    fn after_pass(
        &mut self,
        _fields: &mut CudaSlice<T>,
        _slots: std::ops::Range<usize>,
    ) -> Result<(), DeviceError> {
        Ok(())
    }
}

impl<T, F> StageHooks<T> for F
where
    F: FnMut(&mut CudaSlice<T>, std::ops::Range<usize>) -> Result<(), DeviceError>,
{
    fn after_pass(
        &mut self,
        fields: &mut CudaSlice<T>,
        slots: std::ops::Range<usize>,
    ) -> Result<(), DeviceError> {
        self(fields, slots)
    }
}

/// The pass kernels of a staged plan ([`Staging`]) and their scratch fields.
#[derive(Debug)]
struct Stages<T> {
    /// The pass kernels in the order they run.
    passes: Vec<Pass>,
    /// Slots of the scratch, the fields of one μ (18 reals per site each).
    slots: usize,
    /// The fields of one μ, reused by the next.
    scratch: Scratch<T>,
    /// The one-kernel tree this smearer falls back to when the scratch does not fit in
    /// device memory, compiled then, with the smallest volume that did not fit.
    fallback: Mutex<Option<(TreeKernel, usize)>>,
}

/// A compiled one-kernel tree program: its links kernel and its tune-key identity.
#[derive(Debug, Clone)]
struct TreeKernel {
    kernel: LoadedKernel,
    program: String,
    source_hash: u64,
}

/// The kernels of a spec's tree ([`PathTree`]), compiled for real type `T`: with the
/// plan knob [`PlanKind::Tree`] one launch, one thread per link; with
/// [`PlanKind::Staged`] one launch per materialised level (one thread per field slot
/// and site) into scratch fields, then the root kernel per link.
#[derive(Debug)]
pub struct GpuSmearer<T> {
    tree: PathTree,
    knobs: PathKnobs,
    /// The passes of the staged plan (`None` for the tree plan).
    stages: Option<Stages<T>>,
    /// The name of the program the kernel comes from (the tune keys' variant).
    program: String,
    /// FNV-1a of the program's source (the tune keys' source hash).
    source_hash: u64,
    kernel: LoadedKernel,
    /// Host-layout links to the device layout the kernel reads.
    layout: LoadedKernel,
    /// With recon-12 input: host-layout 18-real unitary links encoded as 14-real records
    /// in the device layout.
    encode: Option<LoadedKernel>,
    _real: std::marker::PhantomData<T>,
}

/// The kernel `name` among `kernels`, or an error naming the program.
pub(super) fn find(
    kernels: &[LoadedKernel],
    name: &str,
    program: &str,
) -> Result<LoadedKernel, DeviceError> {
    kernels
        .iter()
        .find(|k| k.interface.name == name)
        .cloned()
        .ok_or_else(|| DeviceError::Shape(format!("{program} declares no kernel {name}")))
}

/// `L0`..`L3` of `lattice`, after checking that the kernels' packed coordinates hold it.
pub(super) fn lattice_args(
    args: &mut Args<'_>,
    lattice: &Lattice,
    kernel: &str,
) -> Result<(), DeviceError> {
    check_extents(kernel, lattice.dims()).map_err(|e| DeviceError::Shape(e.to_string()))?;
    for (k, l) in lattice.dims().iter().enumerate() {
        args.count(&format!("L{k}"), *l);
    }
    Ok(())
}

/// `O0..O3` and `B0..B3` of the box `sites`: the sites a staged kernel launch computes.
fn box_args(args: &mut Args<'_>, sites: &SiteBox) {
    for mu in 0..4 {
        args.count(&format!("O{mu}"), sites.lo[mu]);
        args.count(&format!("B{mu}"), sites.n[mu]);
    }
}

/// The inputs of one run of the staged plan: the lattice, the boxes of its sites each
/// kernel computes (disjoint, launched in order), the device links (the kernels' layout)
/// and the term coefficients.
#[derive(Clone, Copy)]
struct Staged<'a, T> {
    lattice: &'a Lattice,
    boxes: &'a [SiteBox],
    input: &'a CudaSlice<T>,
    coeffs: &'a [f64],
}

/// One launch of a tree kernel: `out` ← the tree of `input` with term coefficients
/// `coeffs` (and `cf` for the force epilogue), one thread per link, the launch from
/// `tuner` under the default policy (a cached winner or the default launch; re-running
/// it only rewrites `out`, so timing is safe).
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_tree<T: GpuReal>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    kernel: &LoadedKernel,
    program: ProgramRef<'_>,
    lattice: &Lattice,
    input: &CudaSlice<T>,
    out: &mut CudaSlice<T>,
    coeffs: &[f64],
    cf: Option<f64>,
) -> Result<(), DeviceError> {
    let links = [4 * lattice.volume(), 1, 1];
    let mut go = |cfg: &LaunchConfig| {
        let mut args = Args::new();
        lattice_args(&mut args, lattice, &kernel.interface.name)?;
        args.write("out", &mut *out).read("u", input);
        for (k, c) in coeffs.iter().enumerate() {
            args.real(&format!("c{k}"), *c);
        }
        if let Some(cf) = cf {
            args.real("cf", cf);
        }
        // out holds 4·V·18 reals, u 4·V links of the input codec.
        kernel.launch_with(gpu, links, cfg, args)
    };
    launch_cached::<T>(gpu, tuner, program, kernel, links, &mut go)
}

/// Queues `kernel` over `work` with the launch `tuner` gives it under the default
/// policy (a cached winner or the default launch: [`FirstUse::CachedOnly`]), `go`
/// binding its arguments and launching.
fn launch_cached<T: GpuReal>(
    gpu: &Gpu,
    tuner: Option<&Tuner>,
    program: ProgramRef<'_>,
    kernel: &LoadedKernel,
    work: [usize; 3],
    go: &mut dyn FnMut(&LaunchConfig) -> Result<(), DeviceError>,
) -> Result<(), DeviceError> {
    let cfg = tuned_launch(
        gpu,
        tuner,
        program,
        kernel,
        T::NAME,
        work,
        FirstUse::CachedOnly,
        &mut *go,
    )?;
    go(&cfg)
}

impl<T: GpuReal> GpuSmearer<T> {
    /// Compiles the kernel of spec `S` for `T` (the PTX is cached by the JIT). The module
    /// is loaded here rather than through [`Gpu::function`] because the f32 and f64
    /// programs share kernel names.
    pub fn new<S: LinkPaths>(gpu: &Gpu) -> Result<Self, SmearGpuError> {
        Self::with_knobs::<S>(gpu, PathKnobs::default())
    }

    /// Compiles the kernel of spec `S` for `T` reading the input links as `knobs` says
    /// (recon 18, or recon 12 + phase); errors for knob values that do not apply.
    pub fn with_knobs<S: LinkPaths>(gpu: &Gpu, knobs: PathKnobs) -> Result<Self, SmearGpuError> {
        let tree = S::tree()?;
        let program = Self::program::<S>(knobs)?;
        let kernels = load_program(gpu, &program)?;
        let kernel = find(&kernels, &links_kernel(&tree.spec.name), &program.name)?;
        let layout = find(
            &kernels,
            &layout_kernel_name(&tree.spec.name),
            &program.name,
        )?;
        let encode = match knobs.input {
            Recon::R12 => Some(find(
                &kernels,
                &encode_kernel_name(&tree.spec.name),
                &program.name,
            )?),
            _ => None,
        };
        let stages = match knobs.plan {
            PlanKind::Tree => None,
            PlanKind::Staged => {
                let staging = Staging::new(&tree);
                let passes = staging
                    .passes()
                    .into_iter()
                    .map(|node| {
                        let name = pass_kernel_name(&tree.spec.name, node);
                        let stage = &staging.nodes[node];
                        Ok(Pass {
                            kernel: find(&kernels, &name, &program.name)?,
                            first: stage.field.unwrap_or(0),
                            slots: stage.slots_per_mu(),
                        })
                    })
                    .collect::<Result<Vec<_>, DeviceError>>()?;
                Some(Stages {
                    passes,
                    slots: staging.slots,
                    scratch: Arc::new(Mutex::new(None)),
                    fallback: Mutex::new(None),
                })
            }
        };
        Ok(Self {
            tree,
            knobs,
            stages,
            program: program.name.clone(),
            source_hash: program.source_hash(),
            kernel,
            layout,
            encode,
            _real: std::marker::PhantomData,
        })
    }

    /// The program [`Self::with_knobs`] compiles for spec `S` (for preloading several
    /// smearers' programs in one parallel batch, [`Gpu::preload_programs`]).
    pub fn program<S: LinkPaths>(knobs: PathKnobs) -> Result<KernelProgram, SmearGpuError> {
        let tree = S::tree()?;
        Ok(qdsl_core::dsl::paths::cuda::program::<T>(
            &tree,
            &knobs,
            &program_name::<T>(&tree, &knobs),
        )?)
    }

    /// The tree this smearer runs.
    pub fn tree(&self) -> &PathTree {
        &self.tree
    }

    /// Bytes of device scratch the staged plan takes on `lattice` (the fields of one μ,
    /// [`Staging::scratch_bytes`]); 0 for the tree plan.
    pub fn scratch_bytes(&self, lattice: &Lattice) -> usize {
        self.stages
            .as_ref()
            .map_or(0, |s| s.slots * REALS * lattice.volume() * T::BYTES)
    }

    /// Makes this smearer use `other`'s scratch fields (both staged; for smearers that
    /// run one after the other on one stream, as HISQ's two levels do, so that the
    /// scratch is the larger of the two rather than their sum). A no-op unless both are
    /// staged.
    pub fn share_scratch(&mut self, other: &GpuSmearer<T>) {
        if let (Some(mine), Some(theirs)) = (self.stages.as_mut(), other.stages.as_ref()) {
            mine.scratch = Arc::clone(&theirs.scratch);
        }
    }

    /// How the kernel reads the input links.
    pub fn knobs(&self) -> &PathKnobs {
        &self.knobs
    }

    /// Device memory for the input and the output links of a lattice, zeroed.
    pub fn buffers(&self, gpu: &Gpu, lat: &Lattice) -> Result<SmearBuffers<T>, DeviceError> {
        check_extents(&self.tree.spec.name, lat.dims())
            .map_err(|e| DeviceError::Shape(e.to_string()))?;
        Ok(SmearBuffers {
            lattice: *lat,
            input: gpu.alloc::<T>(
                "the thin links",
                4 * lat.volume() * self.knobs.input_reals(),
            )?,
            output: gpu.alloc::<T>("the smeared links", 4 * lat.volume() * REALS)?,
        })
    }

    /// Copies `u` (phases already folded in) into `bufs.input`, encoded as the knobs say
    /// and in the kernels' device layout ([`device_layout`]; a link that recon 12 + phase
    /// cannot hold, one not unitary, is a [`DeviceError::Conversion`] naming it).
    pub fn upload(
        &self,
        gpu: &Gpu,
        bufs: &mut SmearBuffers<T>,
        u: &GaugeField<T>,
    ) -> Result<(), DeviceError> {
        if *u.lattice() != bufs.lattice {
            return Err(DeviceError::Shape(format!(
                "links on {} given, buffers allocated for {}",
                u.lattice(),
                bufs.lattice
            )));
        }
        let name = &self.tree.spec.name;
        let encoded: Vec<T> =
            encode_links(u, &self.knobs, name).map_err(|e| DeviceError::Conversion {
                kernel: format!("the input encoding of {name}"),
                problems: e.to_string(),
            })?;
        let host = device_layout(&encoded, self.knobs.input_reals(), bufs.lattice.volume())
            .map_err(DeviceError::Shape)?;
        gpu.backend()
            .stream()
            .memcpy_htod(&host, &mut bufs.input)
            .map_err(driver("copying the thin links to the GPU"))
    }

    /// Queues the kernel on the GPU's stream: `bufs.output` becomes the smeared links of
    /// `bufs.input` with tadpole factor `u0` (no synchronisation; the default launch).
    pub fn enqueue(
        &self,
        gpu: &Gpu,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        self.enqueue_with(gpu, None, bufs, u0)
    }

    /// [`Self::enqueue`] with the launch from `tuner` ([`crate::device::tuned`]; under the
    /// launch policy a cached winner or the default).
    pub fn enqueue_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
    ) -> Result<(), DeviceError> {
        let coeffs = self.tree.coefficients(u0);
        self.enqueue_on(
            gpu,
            tuner,
            &bufs.lattice,
            &bufs.input,
            &mut bufs.output,
            &coeffs,
        )
    }

    /// Queues the rewriting of host-layout links `host` (encoded as the knobs say, e.g.
    /// links made on the device) into the device layout `device` the kernel reads.
    pub fn enqueue_layout(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        host: &CudaSlice<T>,
        device: &mut CudaSlice<T>,
    ) -> Result<(), DeviceError> {
        let mut args = Args::new();
        lattice_args(&mut args, lattice, &self.layout.interface.name)?;
        args.write("out", device).read("in", host);
        // Both hold 4·V links of the input codec's reals.
        self.layout
            .launch(gpu, [4 * lattice.volume(), 1, 1], BLOCK, args)
    }

    /// Queues the rewriting of host-layout unitary links `host` (18 reals per link, e.g.
    /// links made on the device) into the device layout `device` the kernel reads,
    /// encoded as the knobs say: a copy for recon 18, the 14-real records of recon 12 +
    /// phase (rows 0 and 1, λ = det L / |det L| computed on the device) for recon 12.
    pub fn enqueue_encode(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        host: &CudaSlice<T>,
        device: &mut CudaSlice<T>,
    ) -> Result<(), DeviceError> {
        let Some(encode) = &self.encode else {
            return self.enqueue_layout(gpu, lattice, host, device);
        };
        let mut args = Args::new();
        lattice_args(&mut args, lattice, &encode.interface.name)?;
        args.write("out", device).read("in", host);
        // in holds 4·V links of 18 reals, out 4·V records of 14.
        encode.launch(gpu, [4 * lattice.volume(), 1, 1], BLOCK, args)
    }

    /// Queues the kernel from device links `input` (encoded as the knobs say, in the
    /// device layout of [`device_layout`]) into
    /// `output` (18 reals per link) with the term coefficients `coeffs` (tadpole factors
    /// included, in term order: [`PathTree::coefficients`], possibly adjusted), so that
    /// chained smearings pass links on without copies.
    pub fn enqueue_on(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        lattice: &Lattice,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        coeffs: &[f64],
    ) -> Result<(), DeviceError> {
        self.check_coefficients(coeffs)?;
        let program = ProgramRef {
            name: &self.program,
            source: Source::Hash(self.source_hash),
        };
        match &self.stages {
            None => launch_tree(
                gpu,
                tuner,
                &self.kernel,
                program,
                lattice,
                input,
                output,
                coeffs,
                None,
            ),
            Some(stages) => {
                let whole = SiteBox {
                    lo: [0; 4],
                    n: lattice.dims(),
                };
                let run = Staged {
                    lattice,
                    boxes: std::slice::from_ref(&whole),
                    input,
                    coeffs,
                };
                self.launch_staged(gpu, tuner, stages, program, &run, output, None)
            }
        }
    }

    /// An error unless `coeffs` holds one coefficient per term of the spec.
    fn check_coefficients(&self, coeffs: &[f64]) -> Result<(), DeviceError> {
        let terms = self.tree.spec.terms.len();
        if coeffs.len() != terms {
            return Err(DeviceError::Shape(format!(
                "{}: expected {terms} term coefficients, found {}",
                self.tree.spec.name,
                coeffs.len()
            )));
        }
        Ok(())
    }

    /// Queues the encoding of the device links `links` (host layout, 18 reals per link,
    /// phases folded in, on `bufs`'s lattice) into `bufs`'s input, as
    /// [`Self::enqueue_encode`] does.
    pub fn encode_device_links(
        &self,
        gpu: &Gpu,
        links: &CudaSlice<T>,
        bufs: &mut SmearBuffers<T>,
    ) -> Result<(), DeviceError> {
        let lattice = bufs.lattice;
        self.enqueue_encode(gpu, &lattice, links, &mut bufs.input)
    }

    /// [`Self::enqueue_boxed`] from `bufs`'s input into its output with tadpole factor
    /// `u0`.
    pub fn enqueue_boxed_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        bufs: &mut SmearBuffers<T>,
        boxes: &[SiteBox],
        u0: f64,
        hooks: &mut dyn StageHooks<T>,
    ) -> Result<(), DeviceError> {
        let coeffs = self.tree.coefficients(u0);
        let lattice = bufs.lattice;
        self.enqueue_boxed(
            gpu,
            tuner,
            &lattice,
            boxes,
            &bufs.input,
            &mut bufs.output,
            &coeffs,
            hooks,
        )
    }

    /// The staged plan (errors for the tree plan) over the sites of `boxes` only
    /// (disjoint boxes of `lattice` with even x extents): every kernel is launched over
    /// each box in turn, `hooks.before_rest` called after its first box; every pass
    /// writes its slots at those sites, then `hooks.after_pass` gets the scratch and
    /// those slots, before the next level reads them; the root writes the links of
    /// those sites into `output` (the other links keep their values). The "standard"
    /// decomposed smearing runs each rank's own sites this way and fills the fields'
    /// halos in the hooks ([`crate::distributed::device::StandardSmearing`]: the
    /// interior first, while the halo travels). No fallback to the tree plan: a scratch
    /// that does not fit is an error.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue_boxed(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        lattice: &Lattice,
        boxes: &[SiteBox],
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        coeffs: &[f64],
        hooks: &mut dyn StageHooks<T>,
    ) -> Result<(), DeviceError> {
        let name = &self.tree.spec.name;
        let Some(stages) = &self.stages else {
            return Err(DeviceError::Shape(format!(
                "{name}: a run over a box of sites needs the staged plan, found the tree plan"
            )));
        };
        self.check_coefficients(coeffs)?;
        for sites in boxes {
            let inside = (0..4).all(|mu| sites.lo[mu] + sites.n[mu] <= lattice.extent(mu));
            if !inside || !sites.n[0].is_multiple_of(2) || sites.is_empty() {
                return Err(DeviceError::Shape(format!(
                    "{name}: expected a non-empty box of {lattice} with an even x extent, found corner {:?} extents {:?}",
                    sites.lo, sites.n
                )));
            }
        }
        if self
            .fallback_for(gpu, stages, lattice.volume(), None)?
            .is_some()
        {
            return Err(DeviceError::Shape(format!(
                "{name}: the staged plan's scratch does not fit on {lattice}; a boxed run has no tree fallback"
            )));
        }
        let program = ProgramRef {
            name: &self.program,
            source: Source::Hash(self.source_hash),
        };
        let run = Staged {
            lattice,
            boxes,
            input,
            coeffs,
        };
        self.launch_staged(gpu, tuner, stages, program, &run, output, Some(hooks))
    }

    /// The staged plan's launches, per μ: each pass into the scratch fields of that μ
    /// (allocated here at the first run, 18 reals per slot and site, reused by the next
    /// μ), then the root kernel for the links of that μ reading them (a plan without
    /// passes: the root over all μ at once); every launch from `tuner` under the default
    /// policy. When the scratch does not fit in device memory the one-kernel tree runs
    /// instead (compiled then; a message on standard error says so once).
    #[allow(clippy::too_many_arguments)]
    fn launch_staged(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        stages: &Stages<T>,
        program: ProgramRef<'_>,
        run: &Staged<'_, T>,
        output: &mut CudaSlice<T>,
        mut hooks: Option<&mut dyn StageHooks<T>>,
    ) -> Result<(), DeviceError> {
        let Staged {
            lattice,
            boxes,
            input,
            coeffs,
        } = *run;
        let volume = lattice.volume();
        if let Some(tree) = self.fallback_for(gpu, stages, volume, None)? {
            return self.launch_fallback(gpu, tuner, &tree, lattice, input, output, coeffs);
        }
        let reals = (stages.slots * REALS * volume).max(1);
        let mut guard = stages
            .scratch
            .lock()
            .map_err(|_| DeviceError::Shape("the staged plan's scratch lock is poisoned".into()))?;
        if guard.as_ref().is_none_or(|f| f.len() < reals) {
            // Free the smaller fields before asking for the larger.
            *guard = None;
            match gpu.alloc::<T>("the staged plan's staple fields", reals) {
                Ok(f) => *guard = Some(f),
                // A boxed run (with a hook) cannot fall back to the whole-lattice tree.
                Err(oom @ DeviceError::OutOfMemory { .. }) if hooks.is_none() => {
                    drop(guard);
                    let tree = self
                        .fallback_for(gpu, stages, volume, Some(&oom))?
                        .expect("recorded above");
                    return self.launch_fallback(gpu, tuner, &tree, lattice, input, output, coeffs);
                }
                Err(e) => return Err(e),
            }
        }
        let fields = guard.as_mut().expect("allocated above");
        let directions: Vec<(usize, usize)> = if stages.passes.is_empty() {
            vec![(0, 4)]
        } else {
            (0..4).map(|mu| (mu, 1)).collect()
        };
        for (mu0, nmu) in directions {
            if nmu == 1 {
                for pass in &stages.passes {
                    let kernel = &pass.kernel;
                    for (k, sites) in boxes.iter().enumerate() {
                        if k == 1 {
                            if let Some(h) = hooks.as_mut() {
                                h.before_rest()?;
                            }
                        }
                        let threads = [pass.slots * sites.volume(), 1, 1];
                        let mut go = |cfg: &LaunchConfig| {
                            let mut args = Args::new();
                            lattice_args(&mut args, lattice, &kernel.interface.name)?;
                            box_args(&mut args, sites);
                            args.write("f", &mut *fields).read("u", input);
                            for (k, c) in coeffs.iter().enumerate() {
                                args.real(&format!("c{k}"), *c);
                            }
                            args.count("mu", mu0);
                            // f holds slots·18·V reals (≥ this pass's region), u 4·V
                            // input links.
                            kernel.launch_with(gpu, threads, cfg, args)
                        };
                        launch_cached::<T>(gpu, tuner, program, kernel, threads, &mut go)?;
                    }
                    if let Some(h) = hooks.as_mut() {
                        h.after_pass(&mut *fields, pass.first..pass.first + pass.slots)?;
                    }
                }
            }
            let fields = &*fields;
            for (k, sites) in boxes.iter().enumerate() {
                if k == 1 {
                    if let Some(h) = hooks.as_mut() {
                        h.before_rest()?;
                    }
                }
                let links = [nmu * sites.volume(), 1, 1];
                let mut go = |cfg: &LaunchConfig| {
                    let mut args = Args::new();
                    lattice_args(&mut args, lattice, &self.kernel.interface.name)?;
                    box_args(&mut args, sites);
                    args.write("out", &mut *output)
                        .read("u", input)
                        .read("f", fields);
                    for (k, c) in coeffs.iter().enumerate() {
                        args.real(&format!("c{k}"), *c);
                    }
                    args.count("mu0", mu0).count("nmu", nmu);
                    // out holds 4·V·18 reals (this launch writes the links of mu0 .. mu0
                    // + nmu − 1), u 4·V input links, f the fields the passes wrote.
                    self.kernel.launch_with(gpu, links, cfg, args)
                };
                launch_cached::<T>(gpu, tuner, program, &self.kernel, links, &mut go)?;
            }
        }
        Ok(())
    }

    /// The tree to fall back to on a lattice of `volume` sites: `None` while the staged
    /// scratch may fit; after `oom` (the scratch's allocation failed) the tree, compiled
    /// now and recorded for this and larger volumes, with a message on standard error.
    fn fallback_for(
        &self,
        gpu: &Gpu,
        stages: &Stages<T>,
        volume: usize,
        oom: Option<&DeviceError>,
    ) -> Result<Option<TreeKernel>, DeviceError> {
        let mut fallback = stages.fallback.lock().map_err(|_| {
            DeviceError::Shape("the staged plan's fallback lock is poisoned".into())
        })?;
        if let Some((tree, smallest)) = fallback.as_mut() {
            if volume >= *smallest || oom.is_some() {
                *smallest = (*smallest).min(volume);
                return Ok(Some(tree.clone()));
            }
            return Ok(None);
        }
        let Some(oom) = oom else { return Ok(None) };
        let knobs = self.knobs.with_plan(PlanKind::Tree);
        let name = program_name::<T>(&self.tree, &knobs);
        let program = qdsl_core::dsl::paths::cuda::program::<T>(&self.tree, &knobs, &name)
            .map_err(|e| DeviceError::Shape(e.to_string()))?;
        let kernels = load_program(gpu, &program)?;
        let tree = TreeKernel {
            kernel: find(&kernels, &links_kernel(&self.tree.spec.name), &program.name)?,
            program: program.name.clone(),
            source_hash: program.source_hash(),
        };
        eprintln!(
            "{}: the staged plan's scratch does not fit ({oom}); falling back to the one-kernel tree plan on lattices of {volume} sites or more",
            self.tree.spec.name
        );
        *fallback = Some((tree.clone(), volume));
        Ok(Some(tree))
    }

    /// One launch of the fallback tree.
    #[allow(clippy::too_many_arguments)]
    fn launch_fallback(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        tree: &TreeKernel,
        lattice: &Lattice,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        coeffs: &[f64],
    ) -> Result<(), DeviceError> {
        let program = ProgramRef {
            name: &tree.program,
            source: Source::Hash(tree.source_hash),
        };
        launch_tree(
            gpu,
            tuner,
            &tree.kernel,
            program,
            lattice,
            input,
            output,
            coeffs,
            None,
        )
    }

    /// Copies `bufs.output` back into a host gauge field.
    pub fn download(
        &self,
        gpu: &Gpu,
        bufs: &SmearBuffers<T>,
    ) -> Result<GaugeField<T>, DeviceError> {
        download_links(gpu, &bufs.output, bufs.lattice, "the smeared links")
    }

    /// The smeared links of `u` (phases already folded in) with tadpole factor `u0`:
    /// upload, run, download.
    pub fn smear(
        &self,
        gpu: &Gpu,
        u: &GaugeField<T>,
        u0: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        self.smear_with(gpu, None, u, u0)
    }

    /// [`Self::smear`] with the kernel's launch from `tuner`.
    pub fn smear_with(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        u: &GaugeField<T>,
        u0: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, u.lattice())?;
        self.upload(gpu, &mut bufs, u)?;
        self.enqueue_with(gpu, tuner, &mut bufs, u0)?;
        self.download(gpu, &bufs)
    }

    /// The smeared links of the device links `links` on `lattice` (host layout, 18 reals
    /// per link, phases already folded in: e.g. a rank's thin links whose halo was
    /// filled on the device, [`crate::distributed::device::DeviceLinkHalo`]), encoded
    /// and rewritten into the kernels' layout on the device, smeared, downloaded.
    pub fn smear_device_links(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        links: &CudaSlice<T>,
        lattice: &Lattice,
        u0: f64,
    ) -> Result<GaugeField<T>, DeviceError> {
        let mut bufs = self.buffers(gpu, lattice)?;
        self.encode_device_links(gpu, links, &mut bufs)?;
        self.enqueue_with(gpu, tuner, &mut bufs, u0)?;
        self.download(gpu, &bufs)
    }
}

/// The program name of `tree` compiled for `T` with `knobs`: `<spec>_<real>` and the
/// knobs' tag ([`PathKnobs::tag`]).
fn program_name<T: GpuReal>(tree: &PathTree, knobs: &PathKnobs) -> String {
    match knobs.tag() {
        "" => format!("{}_{}", tree.spec.name, T::NAME),
        tag => format!("{}_{}_{tag}", tree.spec.name, T::NAME),
    }
}

/// Copies the links of `u` into a new device buffer in the host layout (link 4·cb + μ at
/// reals 18·(4·cb + μ)); `what` names it in errors.
pub fn upload_links<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<T>,
    what: &str,
) -> Result<CudaSlice<T>, DeviceError> {
    let host: Vec<T> = u.links().iter().flat_map(|l| l.to_reals()).collect();
    let mut links = gpu.alloc::<T>(what, host.len())?;
    gpu.backend()
        .stream()
        .memcpy_htod(&host, &mut links)
        .map_err(driver(format!("copying {what} to the GPU")))?;
    Ok(links)
}

/// Copies a device buffer of links (host layout, 18 reals per link) into a host field;
/// `what` names it in errors.
pub fn download_links<T: GpuReal>(
    gpu: &Gpu,
    links: &CudaSlice<T>,
    lattice: Lattice,
    what: &str,
) -> Result<GaugeField<T>, DeviceError> {
    let host = gpu
        .backend()
        .stream()
        .clone_dtoh(links)
        .map_err(driver(format!("copying {what} to the host")))?;
    let mut field = GaugeField::<T>::unit(lattice);
    for (link, reals) in field.links_mut().iter_mut().zip(host.chunks_exact(REALS)) {
        let mut r = [T::zero(); REALS];
        r.copy_from_slice(reals);
        *link = ColourMatrix::from_reals(&r);
    }
    Ok(field)
}

/// Device memory of one smearing run: the input and the output links.
#[derive(Debug)]
pub struct SmearBuffers<T> {
    pub(super) lattice: Lattice,
    pub(super) input: CudaSlice<T>,
    pub(super) output: CudaSlice<T>,
}

/// Asqtad fat and long links (F, L) of thin links `u` without phases, on the GPU: the
/// phases and the antiperiodic time boundary folded in on the host, then [`AsqtadFat`]
/// and [`AsqtadLong`] with tadpole factor `u0` (what `qdsl_kernels::asqtad_links` does
/// on the CPU).
pub fn asqtad_links_gpu<T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<T>,
    u0: f64,
) -> Result<(GaugeField<T>, GaugeField<T>), SmearGpuError> {
    let v = fold_staggered_phases(u);
    let fat = GpuSmearer::<T>::new::<AsqtadFat>(gpu)?.smear(gpu, &v, u0)?;
    let long = GpuSmearer::<T>::new::<AsqtadLong>(gpu)?.smear(gpu, &v, u0)?;
    Ok((fat, long))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::Arch;
    use qdsl_kernels::Fat7;

    /// A staged smearing program (recon-12 input: five entries) and a gather pull-back
    /// program are compiled entry by entry: each per-entry build's PTX defines exactly its
    /// own entry, and together they define every kernel the program declares.
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC (not found when the tests were built)"
    )]
    fn each_entry_build_defines_only_its_entry() {
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        let knobs = PathKnobs::with_input(Recon::R12).with_plan(PlanKind::Staged);
        let programs = [
            GpuSmearer::<f32>::program::<Fat7>(knobs).unwrap(),
            super::super::gpu_pullback_program::<Fat7, f32>().unwrap(),
        ];
        for p in &programs {
            let builds = p.entry_builds().expect("every entry guarded");
            assert_eq!(builds.len(), p.kernels.len(), "{}", p.name);
            assert!(
                p.kernels.len() >= 3,
                "{}: {} kernels",
                p.name,
                p.kernels.len()
            );
            for (k, options) in p.kernels.iter().zip(&builds) {
                let ptx = jit
                    .compile(&p.name, &p.source, Arch::SM_90, options)
                    .unwrap()
                    .ptx;
                let entries: Vec<&str> = ptx
                    .lines()
                    .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
                    .map(|l| l.split('(').next().unwrap_or(l).trim())
                    .collect();
                assert_eq!(
                    entries,
                    vec![k.name.as_str()],
                    "{} built for {}",
                    p.name,
                    k.name
                );
            }
        }
    }
}
