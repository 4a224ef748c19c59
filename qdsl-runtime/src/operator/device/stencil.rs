//! [`DeviceStencil`]: one generated kernel variant on the GPU: compiled for the device's
//! architecture (JIT, PTX cache), its parameters bound by name through the one launcher
//! ([`crate::device::kernel`], [`stencil_interface`]), launched with tuned compile and
//! launch knobs.
//!
//! Tuning goes through [`Tuner::tune_kernel`] ([`StencilTuning`] is the stencil's
//! [`Tunable`]); its candidates come from the compiled kernel's knob space
//! ([`CompiledKernel::knobs`]: register caps, prefetch where the source has it, 1-D
//! blocks with throttling). Under the default launch policy only the heuristic build
//! ([`heuristic_knob`], compiled when the stencil is made) has its launches timed; under
//! `QDSL_TUNE=full` the two-stage search ([`crate::tune::search`]) times the default build
//! with every launch, then each other build (register caps below the default build's
//! count, prefetch builds) with the three fastest launches. The winner (compile label and
//! launch) is kept in the tune cache and in memory per volume; each build used is loaded
//! once. With tuning off (`QDSL_TUNE=0`) the heuristic build and the default launch are
//! used.
//!
//! One entry point each launches ([`DeviceStencil::launch`]), tunes
//! ([`DeviceStencil::tuned_config`]) and does both ([`DeviceStencil::run`]), all on
//! [`StencilArgs`]: compressed long links (long recon 13/9, 12 + sign) are their record
//! field among the inputs plus [`LongLinkArgs`] (phase array, scale), bound like every
//! other argument by the parameter's name.

use crate::device::gpu::driver;
use crate::device::kernel::{Args, ReadBuffer};
use crate::device::long_links::{record_format, scaled_format, LongLinkArgs};
use crate::device::{DeviceError, DeviceField, Gpu};
use crate::tune::{self, heuristic_knob, Candidate, CompileKnob, Tunable, TuneKey, Tuner};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaStream};
use qdsl_core::dsl::codec::{ArgOwner, ExtraArg};
use qdsl_core::dsl::fused5d::{frame_ir, Chain, Fused5d, FusedVariant, SPiece};
use qdsl_core::dsl::ir::Role;
use qdsl_core::dsl::kernel_ir::walk;
use qdsl_core::dsl::long_links::is_long;
use qdsl_core::dsl::variant::{LongRecon, Region, Slices, StorageFormat};
use qdsl_core::dsl::{
    CompiledKernel, Elem, Geometry, Ir, KernelInfo, KernelInterface, KernelParam, ParamDecl,
    ParamKind, Stencil, Variant,
};
use qdsl_core::lattice::{Lattice, SiteBox};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::*;

/// One loaded build of a kernel: the function and the dynamic shared memory it is
/// currently allowed (beyond 48 KiB, a per-function attribute).
#[derive(Debug)]
struct Build {
    function: CudaFunction,
    shared_allowed: AtomicU32,
}

/// A tuned choice: which build, launched how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StencilLaunch {
    /// The build (register cap).
    pub compile: CompileKnob,
    /// The launch knobs.
    pub launch: tune::LaunchConfig,
}

impl StencilLaunch {
    /// The default build with `launch`.
    pub fn default_build(launch: tune::LaunchConfig) -> Self {
        Self {
            compile: CompileKnob::Default,
            launch,
        }
    }
}

impl fmt::Display for StencilLaunch {
    /// `maxnreg=R block=… grid=… shared=…`, or the launch alone for the default build.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.compile {
            CompileKnob::Default => write!(f, "{}", self.launch),
            c => write!(f, "{c} {}", self.launch),
        }
    }
}

/// The fields of one stencil launch: the output, the inputs in declaration order (a
/// compressed long field as its record,
/// [`crate::device::long_links::DeviceLongLinks::record`]), the phases and scale of each
/// compressed long field in declaration order of the long fields, and the xpay operands.
pub struct StencilArgs<'a> {
    /// The output field.
    pub out: &'a mut DeviceField,
    /// The input fields.
    pub inputs: &'a [&'a DeviceField],
    /// Phases and scale of the compressed long fields (long recon 13/9, 12 + sign).
    pub long: &'a [LongLinkArgs<'a>],
    /// out = a·x + b·D ψ operands (xpay variants only).
    pub xpay: Option<&'a DeviceXpay<'a>>,
    /// The global scale s of each gauge field stored with `link_scale = global`, in
    /// declaration order (the field holds U/s in the unit-scale fixed-point format,
    /// [`qdsl_core::dsl::storage::divide_by_global_scale`]).
    pub link_scales: &'a [f64],
    /// A `fused5d!` kernel's s-operator matrices, each piece's 4 Ls² reals in the
    /// compute type ([`qdsl_core::dsl::fused5d::ChiralMatrices::kernel_reals`]; M5's
    /// followed by its solve's coefficients, [`super::super::mobius::DeviceChainMatrices`]).
    pub matrices: &'a [(SPiece, &'a dyn ReadBuffer)],
    /// The box of output sites of a [`Region::SubBox`] variant (the interior or an
    /// exterior slab of a distributed operator); `None` for [`Region::Whole`].
    pub site_box: Option<SiteBox>,
    /// The stream the launch is queued on (a stream of the GPU's context); `None`: the
    /// GPU's own. Tuning always times on the GPU's own stream.
    pub stream: Option<&'a CudaStream>,
}

/// One launch of a distributed operator's [`Region::SubBox`] kernel: the box of output
/// sites (the interior, or an exterior slab) and the stream it is queued on (the GPU's
/// own for the interior; the hop's boundary stream for the exterior slabs, which then
/// run beside the interior as soon as their faces arrived).
#[derive(Clone, Copy, Debug)]
pub struct BoxLaunch<'s> {
    /// The output sites.
    pub sites: SiteBox,
    /// The stream of the launch.
    pub stream: &'s CudaStream,
}

impl<'a> StencilArgs<'a> {
    /// `out` ← the stencil of `inputs`, no long links, no xpay.
    pub fn new(out: &'a mut DeviceField, inputs: &'a [&'a DeviceField]) -> Self {
        Self {
            out,
            inputs,
            long: &[],
            xpay: None,
            link_scales: &[],
            matrices: &[],
            site_box: None,
            stream: None,
        }
    }

    /// With the phases and scales of compressed long fields.
    pub fn long(mut self, long: &'a [LongLinkArgs<'a>]) -> Self {
        self.long = long;
        self
    }

    /// With xpay operands (or none).
    pub fn xpay(mut self, xpay: Option<&'a DeviceXpay<'a>>) -> Self {
        self.xpay = xpay;
        self
    }

    /// With the global scales of the globally scaled gauge fields.
    pub fn link_scales(mut self, link_scales: &'a [f64]) -> Self {
        self.link_scales = link_scales;
        self
    }

    /// With a fused kernel's s-operator matrices.
    pub fn matrices(mut self, matrices: &'a [(SPiece, &'a dyn ReadBuffer)]) -> Self {
        self.matrices = matrices;
        self
    }

    /// Over the sites of `site_box` only (a [`Region::SubBox`] variant), on the GPU's
    /// stream.
    pub fn site_box(mut self, site_box: SiteBox) -> Self {
        self.site_box = Some(site_box);
        self
    }

    /// Over the sites of `b` only (a [`Region::SubBox`] variant), on its stream.
    pub fn within(mut self, b: &BoxLaunch<'a>) -> Self {
        self.site_box = Some(b.sites);
        self.stream = Some(b.stream);
        self
    }

    /// The same arguments, borrowed again (to launch several times).
    pub fn reborrow(&mut self) -> StencilArgs<'_> {
        StencilArgs {
            out: &mut *self.out,
            inputs: self.inputs,
            long: self.long,
            xpay: self.xpay,
            link_scales: self.link_scales,
            matrices: self.matrices,
            site_box: self.site_box,
            stream: self.stream,
        }
    }
}

/// The launcher's interface of a stencil kernel: each [`KernelParam`] under its name in
/// the signature, field storage as byte buffers, norms f32, phases bytes, the long-link
/// scale and the xpay factors in the compute type (f64 for f64 spinors, else f32),
/// extents, site count and strides 32-bit; one thread per output site (x) and Ls slices
/// (y).
pub fn stencil_interface(kernel: &CompiledKernel, variant: &Variant) -> KernelInterface {
    let compute = match variant.spinor.compute() {
        StorageFormat::F64 => Elem::F64,
        _ => Elem::F32,
    };
    let kind = |p: &KernelParam| match p {
        KernelParam::Output(_) => ParamKind::write(Elem::U8),
        KernelParam::Input { .. } | KernelParam::XpayX | KernelParam::LongPhase { .. } => {
            ParamKind::read(Elem::U8)
        }
        KernelParam::Extra { arg, owner, .. } => arg.kind(*owner, compute),
        KernelParam::LongScale { .. } | KernelParam::XpayA | KernelParam::XpayB => {
            ParamKind::real(compute)
        }
        KernelParam::FaceSign => ParamKind::real(compute),
        KernelParam::Extent(_)
        | KernelParam::BoxLo(_)
        | KernelParam::BoxExtent(_)
        | KernelParam::Parity
        | KernelParam::NOut
        | KernelParam::OutputStride(_)
        | KernelParam::InputStride { .. }
        | KernelParam::XpayStride
        | KernelParam::Slices => ParamKind::I32,
        KernelParam::ChiralMatrices(_) => ParamKind::read(compute),
    };
    KernelInterface {
        name: kernel.name.clone(),
        params: kernel
            .params
            .iter()
            .map(|p| ParamDecl::new(p.cuda_name(), kind(p)))
            .collect(),
        geometry: kernel.geometry,
    }
}

/// One generated kernel variant loaded on a GPU.
#[derive(Debug)]
pub struct DeviceStencil {
    kernel: String,
    name: String,
    ir: Ir,
    variant: Variant,
    uses: Vec<FieldUse>,
    spinor_reals: usize,
    info: KernelInfo,
    compiled: CompiledKernel,
    interface: KernelInterface,
    builds: Mutex<HashMap<CompileKnob, Arc<Build>>>,
    tuned: Mutex<HashMap<usize, StencilLaunch>>,
    /// Ls of a `fused5d!` kernel (its blockDim.y, whole blocks of sites); `None` for a
    /// stencil (one grid row per slice).
    slices: Option<usize>,
}

impl DeviceStencil {
    /// Compiles (JIT, PTX cache) and loads `variant` of the spec `S`.
    pub fn of<S: Stencil>(gpu: &Gpu, variant: &Variant) -> Result<Self, OperatorError> {
        Self::new(
            gpu,
            S::ir(),
            variant,
            S::compiled(variant)?,
            S::info(variant)?,
        )
    }

    /// Loads `kernel` (generated from `ir` for `variant`): its heuristic build
    /// ([`heuristic_knob`], the one the launch policy tunes and untuned runs use) is
    /// compiled now (a lookup after [`Self::initial_build`] was preloaded); its
    /// arguments are bound in the order of the kernel's own parameter list.
    pub fn new(
        gpu: &Gpu,
        ir: Ir,
        variant: &Variant,
        kernel: CompiledKernel,
        info: KernelInfo,
    ) -> Result<Self, OperatorError> {
        let knob = heuristic_knob(&kernel.knobs().compile);
        let function = gpu.function_built(
            &kernel.name,
            &kernel.source,
            &knob.nvrtc_options(),
            knob.register_cap(),
        )?;
        let (uses, spinor_reals) = field_uses(&ir)?;
        let first = Arc::new(Build {
            function,
            shared_allowed: AtomicU32::new(48 * 1024),
        });
        Ok(Self {
            kernel: ir.name.clone(),
            uses,
            spinor_reals,
            name: kernel.name.clone(),
            ir,
            variant: *variant,
            info,
            interface: stencil_interface(&kernel, variant),
            compiled: kernel,
            builds: Mutex::new(HashMap::from([(knob, first)])),
            tuned: Mutex::new(HashMap::new()),
            slices: None,
        })
    }

    /// Compiles and loads a variant of a `fused5d!` chain whose hop is bound to `hop`
    /// (`None` without a hop): framed on the hop's spec (fields, where each is read; the
    /// identity stencil for a chain without a hop), launched with blocks of 4D sites ×
    /// all Ls slices (blockDim.y = Ls, the output's site count a multiple of
    /// blockDim.x), the pieces' matrices bound from [`StencilArgs::matrices`]. The
    /// kernel info is the hop's (the hop's flops only).
    pub fn fused(
        gpu: &Gpu,
        chain: &Chain,
        hop: Option<Ir>,
        v: &FusedVariant,
    ) -> Result<Self, OperatorError> {
        let lowered_hop = hop.as_ref().map(qdsl_core::dsl::lower::lower).transpose()?;
        let compiled = qdsl_core::dsl::fused5d::compile(chain, lowered_hop.as_ref(), v)?;
        let ir = frame_ir(chain, hop);
        let frame_variant = Variant {
            dagger: chain.hop_dagger(),
            ..v.variant
        };
        let info = KernelInfo::new(&qdsl_core::dsl::lower::lower(&ir)?, &frame_variant);
        let mut s = Self::new(gpu, ir, &v.variant, compiled, info)?;
        s.slices = Some(v.ls);
        Ok(s)
    }

    /// [`Self::fused`] of the spec `F`.
    pub fn fused_of<F: Fused5d>(gpu: &Gpu, v: &FusedVariant) -> Result<Self, OperatorError> {
        Self::fused(gpu, &F::chain(), F::hop(), v)
    }

    /// The build [`Self::new`] compiled (the heuristic one, what untuned runs use) with
    /// `launch`: no further compile.
    pub fn untuned(&self, launch: tune::LaunchConfig) -> StencilLaunch {
        StencilLaunch {
            compile: heuristic_knob(&self.compiled.knobs().compile),
            launch,
        }
    }

    /// The NVRTC options and register cap of the build [`Self::new`] compiles for
    /// `kernel` (to compile several kernels at once with [`Gpu::preload`]).
    pub fn initial_build(kernel: &CompiledKernel) -> (Vec<String>, Option<u32>) {
        let knob = heuristic_knob(&kernel.knobs().compile);
        (knob.nvrtc_options(), knob.register_cap())
    }

    /// The build `knob`, loaded on first use (a register cap: the same PTX with a
    /// `.maxnreg` directive, see [`Gpu::function_capped`]).
    fn build(&self, gpu: &Gpu, knob: CompileKnob) -> Result<Arc<Build>, OperatorError> {
        let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = builds.get(&knob) {
            return Ok(b.clone());
        }
        let function = gpu.function_built(
            &self.name,
            &self.compiled.source,
            &knob.nvrtc_options(),
            knob.register_cap(),
        )?;
        let b = Arc::new(Build {
            function,
            shared_allowed: AtomicU32::new(48 * 1024),
        });
        builds.insert(knob, b.clone());
        Ok(b)
    }

    /// Registers per thread of the build `knob` as the driver assembled it
    /// (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub fn registers(&self, gpu: &Gpu, knob: CompileKnob) -> Result<u32, OperatorError> {
        let n = self
            .build(gpu, knob)?
            .function
            .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
            .map_err(driver(format!("reading the registers of {}", self.name)))?;
        Ok(u32::try_from(n).unwrap_or(0))
    }

    /// The `extern "C"` name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The variant.
    pub fn variant(&self) -> &Variant {
        &self.variant
    }

    /// The compiled kernel's launch geometry with its knob space (a 2-D block for the
    /// multi-right-hand-side variants).
    pub fn geometry(&self) -> Geometry {
        self.interface.geometry
    }

    /// Flops and bytes per site.
    pub fn info(&self) -> &KernelInfo {
        &self.info
    }

    fn field_error(&self, field: &str, (expected, found): (String, String)) -> OperatorError {
        OperatorError::Field {
            kernel: self.kernel.clone(),
            field: field.into(),
            expected,
            found,
        }
    }

    /// Checks every argument against the variant's shapes (a compressed long field: its
    /// record, a recon-12 or recon-8 link field, and one [`LongLinkArgs`] per such field);
    /// returns Ls, the number of fifth-dimension slices of the output (its sites over the
    /// 4D output sites; 1 for 4D fields), which every colour-spinor field must share.
    fn check(
        &self,
        lattice: &Lattice,
        out: &DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<u32, OperatorError> {
        let n4 = output_sites(&self.variant, lattice);
        let ls = out.layout().sites / n4;
        let ls32 = u32::try_from(ls)
            .ok()
            .filter(|&l| l > 0 && ls * n4 == out.layout().sites);
        let Some(ls32) = ls32 else {
            return Err(self.field_error(
                "out",
                (
                    format!("Ls × {n4} sites (Ls slices of the output sites)"),
                    format!("{} sites", out.layout().sites),
                ),
            ));
        };
        let n_inputs = input_count(&self.ir);
        if inputs.len() != n_inputs {
            return Err(self.field_error(
                "inputs",
                (
                    format!("{n_inputs} input fields"),
                    format!("{}", inputs.len()),
                ),
            ));
        }
        let n_long = long_count(&self.ir, &self.variant);
        if long.len() != n_long {
            return Err(self.field_error(
                "long links",
                (
                    format!("phases and scale of {n_long} compressed long fields"),
                    format!("{}", long.len()),
                ),
            ));
        }
        let scaled = scaled_format(&self.variant);
        if let Some(f) = scaled {
            let phases = f.compression.stores_phase();
            if let Some(a) = long.iter().find(|a| a.phase.is_some() != phases) {
                return Err(self.field_error(
                    "long links",
                    (
                        format!("{} long links with phases: {phases}", f.name()),
                        format!("phases: {}", a.phase.is_some()),
                    ),
                ));
            }
        }
        let mut shapes = shapes(&self.uses, self.spinor_reals, &self.variant, lattice, ls);
        let record = scaled.map(record_format);
        let mut k = 0;
        let mut out_shape = None;
        for (u, shape) in self.uses.iter().zip(shapes.iter_mut()) {
            let field = if u.out {
                out_shape = Some(*shape);
                out
            } else {
                k += 1;
                inputs[k - 1]
            };
            let mut format = expected_format(u, &self.variant);
            if let Some(r) = record.filter(|_| is_long(&self.ir, &u.name)) {
                shape.reals = r.compression.reals();
                format = DeviceFormat::Link(r);
            }
            shape
                .check(field.layout())
                .map_err(|e| self.field_error(&u.name, e))?;
            if field.layout().format != format {
                return Err(self.field_error(
                    &u.name,
                    (format.to_string(), field.layout().format.to_string()),
                ));
            }
        }
        match (self.variant.xpay, xpay, out_shape) {
            (true, Some(xp), Some(shape)) => shape
                .check(xp.x.layout())
                .map(|()| ls32)
                .map_err(|e| self.field_error("xpay_x", e)),
            (true, None, _) | (false, Some(_), _) => Err(self.field_error(
                "xpay",
                (
                    format!(
                        "xpay operands exactly when the knob is on ({})",
                        self.variant.xpay
                    ),
                    format!("{}", xpay.is_some()),
                ),
            )),
            _ => Ok(ls32),
        }
    }

    /// Queues one launch of the build `choice.compile` with `choice.launch` on the GPU's
    /// stream or `args.stream` (no synchronisation): every argument bound by its parameter's name
    /// ([`crate::device::kernel`]) over the output sites × Ls slices of 5D fields (a 2-D
    /// index space; the block runs along the sites).
    pub fn launch(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        choice: StencilLaunch,
        args: StencilArgs<'_>,
    ) -> Result<(), OperatorError> {
        let StencilArgs {
            out,
            inputs,
            long,
            xpay,
            link_scales,
            matrices,
            site_box,
            stream,
        } = args;
        let mut next_scale = link_scales.iter();
        let mut cfg = choice.launch;
        let ls = self.check(lattice, out, inputs, long, xpay)?;
        let build = self.build(gpu, choice.compile)?;
        if let (Some(_), Some(b)) = (self.slices, site_box) {
            // A fused chain over a box: its barriers need whole blocks in which every
            // thread has a site, so the box's map must pair sites and block.x divide
            // the box's sites of the parity (the largest divisor of the chosen one).
            if b.pairing().is_none() {
                return Err(self.field_error(
                    "site box",
                    (
                        "a box with an even extent along x or y (every thread a site)".into(),
                        format!("{b:?}"),
                    ),
                ));
            }
            cfg.block[0] = gcd(cfg.block[0].max(1) as usize, b.threads().max(1)) as u32;
        }
        let block = self.interface.geometry.block(cfg.block);
        if let Some(kernel_ls) = self.slices {
            let n = site_box.map_or_else(|| output_sites(&self.variant, lattice), |b| b.threads());
            if ls as usize != kernel_ls
                || block[1] as usize != kernel_ls
                || !n.is_multiple_of(block[0] as usize)
            {
                return Err(self.field_error(
                    "launch",
                    (
                        format!("Ls = {kernel_ls} slices and blocks of (x, {kernel_ls}) threads with x dividing the {n} output sites"),
                        format!("Ls = {ls}, block {block:?}"),
                    ),
                ));
            }
        }
        if self.variant.slices == Slices::Walk {
            self.check_walk(lattice, block, site_box.is_some())?;
        } else if !ls.is_multiple_of(block[1].max(1)) {
            // The kernel has no bound test along y: whole slices per block.
            return Err(self.field_error(
                "launch",
                (
                    format!("a block.y dividing the {ls} slices"),
                    format!("block {}x{}", block[0], block[1]),
                ),
            ));
        }
        let shared = self
            .interface
            .geometry
            .shared(block)
            .saturating_add(cfg.shared_bytes);
        // Launches beyond 48 KiB of dynamic shared memory need the opt-in attribute (set
        // once per larger value, not per launch).
        if shared > build.shared_allowed.load(Ordering::Relaxed) {
            build
                .function
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared as i32,
                )
                .map_err(driver(format!("allowing shared memory for {}", self.name)))?;
            build.shared_allowed.store(shared, Ordering::Relaxed);
        }
        let missing_norms = |field: &str| {
            self.field_error(
                field,
                ("per-site norms (fixed point)".into(), "none".into()),
            )
        };
        let n_out = match (self.variant.region, site_box) {
            (Region::Whole, None) => output_sites(&self.variant, lattice),
            (Region::SubBox, Some(b)) => b.threads(),
            (region, b) => {
                return Err(self.field_error(
                    "site box",
                    (
                        format!("a box exactly when the region is a box ({region:?})"),
                        format!("{b:?}"),
                    ),
                ))
            }
        };
        if n_out == 0 {
            return Ok(()); // an empty box: nothing to compute
        }
        let site_box = site_box.unwrap_or(SiteBox {
            lo: [0; 4],
            n: lattice.dims(),
        });
        let dims = lattice.dims();
        let out_stride = out.layout().stride;
        let mut a = Args::new();
        let (out_values, out_norms) = out.buffers_mut();
        let (mut out_values, mut out_norms) = (Some(out_values), out_norms);
        for p in &self.compiled.params {
            let name = p.cuda_name();
            match p {
                KernelParam::Output(_) => {
                    if let Some(v) = out_values.take() {
                        a.write(&name, v);
                    }
                }
                KernelParam::Input { index, .. } => {
                    a.read(&name, inputs[*index].values());
                }
                KernelParam::LongPhase {
                    long: k,
                    name: field,
                } => {
                    let phase = long[*k].phase.ok_or_else(|| {
                        self.field_error(
                            field,
                            ("the phases of its recon-13/9 links".into(), "none".into()),
                        )
                    })?;
                    a.read(&name, phase);
                }
                KernelParam::LongScale { long: k, .. } => {
                    a.real(&name, long[*k].scale);
                }
                KernelParam::XpayX => {
                    if let Some(x) = xpay {
                        a.read(&name, x.x.values());
                    }
                }
                KernelParam::Extra { arg, field, owner } => match arg {
                    // The per-site norms of a fixed-point colour spinor: its field's.
                    ExtraArg::SiteNorm => match owner {
                        ArgOwner::Output => {
                            let n = out_norms.take().ok_or_else(|| missing_norms(field))?;
                            a.write(&name, n);
                        }
                        ArgOwner::Input(index) => {
                            let n = inputs[*index].norms().ok_or_else(|| missing_norms(field))?;
                            a.read(&name, n);
                        }
                        ArgOwner::XpayX => {
                            if let Some(x) = xpay {
                                a.read(&name, x.x.norms().ok_or_else(|| missing_norms(field))?);
                            }
                        }
                    },
                    // The global scale of a gauge field: the launch's next link scale.
                    ExtraArg::FieldScale => {
                        let s = *next_scale.next().ok_or_else(|| {
                            self.field_error(field, ("its global link scale".into(), "none".into()))
                        })?;
                        a.real(&name, s);
                    }
                },
                KernelParam::XpayA => {
                    a.real(&name, xpay.map_or(0.0, |x| x.a));
                }
                KernelParam::XpayB => {
                    a.real(&name, xpay.map_or(0.0, |x| x.b));
                }
                KernelParam::Extent(mu) => {
                    a.count(&name, dims[*mu]);
                }
                KernelParam::NOut => {
                    a.count(&name, n_out);
                }
                KernelParam::BoxLo(mu) => {
                    a.count(&name, site_box.lo[*mu]);
                }
                KernelParam::BoxExtent(mu) => {
                    a.count(&name, site_box.n[*mu]);
                }
                KernelParam::FaceSign | KernelParam::Parity => {
                    return Err(self.field_error(
                        &name,
                        ("a stencil parameter".into(), "a face kernel's".into()),
                    ))
                }
                KernelParam::OutputStride(_) => {
                    a.count(&name, out_stride);
                }
                KernelParam::InputStride { index, .. } => {
                    a.count(&name, inputs[*index].layout().stride);
                }
                KernelParam::XpayStride => {
                    a.count(&name, xpay.map_or(0, |x| x.x.layout().stride));
                }
                KernelParam::Slices => {
                    a.count(&name, ls as usize);
                }
                KernelParam::ChiralMatrices(piece) => {
                    let m = matrices.iter().find(|(p, _)| p == piece).ok_or_else(|| {
                        self.field_error(&name, (format!("the matrices of {piece}"), "none".into()))
                    })?;
                    a.read(&name, m.1);
                }
            }
        }
        if next_scale.next().is_some() {
            return Err(self.field_error(
                "link scales",
                (
                    "one per globally scaled gauge field".into(),
                    format!("{}", link_scales.len()),
                ),
            ));
        }
        // Every field was checked against the variant's shapes above, and the kernel
        // guards i < n_out. Generated stencils wait on their grid dependency before
        // touching memory, so they may launch as programmatic dependents.
        let work = launch_work(&self.variant, lattice, n_out, ls as usize);
        crate::device::kernel::launch_function(
            stream.unwrap_or(gpu.backend().stream()),
            &build.function,
            &self.interface,
            work,
            &cfg,
            gpu.dependent_launch(),
            a,
        )?;
        Ok(())
    }

    /// The tuned build and launch for this lattice: from memory, else from
    /// [`Tuner::tune_kernel`] of the stencil on these fields ([`StencilTuning`]: key
    /// kernel, variant hash, source hash, volume, formats, device; the heuristic build,
    /// or under the full policy the builds of the kernel's compile knobs — the default
    /// build, the caps of [`tune::compile_knobs`] below its register count and the
    /// prefetch builds), timing each candidate on these fields.
    pub fn tuned_config(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        args: StencilArgs<'_>,
    ) -> Result<StencilLaunch, OperatorError> {
        // With the slices in the block the best block depends on Ls: tuned per 5D
        // volume (the 4D volume for the others, whose launch ignores Ls).
        let peek_ls = out_slices(&self.variant, lattice, args.out);
        let volume = lattice.volume() * self.slices_tuned(peek_ls);
        if let Some(c) = self
            .tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&volume)
        {
            return Ok(*c);
        }
        let ls = self.check(lattice, args.out, args.inputs, args.long, args.xpay)? as usize;
        let mut tuning = StencilTuning {
            stencil: self,
            gpu,
            lattice,
            slices: self.slices_tuned(ls),
            args,
        };
        let tuned = tuner.tune_kernel(&mut tuning)?;
        let mut best = self.choice(&tuned.best)?;
        // A winner transferred from another 5D volume may have a block.y that does not
        // divide these Ls slices: then all slices of a site in one block (the default).
        let block = self.interface.geometry.block(best.launch.block);
        if self.variant.slices != Slices::Walk && !ls.is_multiple_of(block[1].max(1) as usize) {
            let work = [output_sites(&self.variant, lattice), ls, 1];
            best.launch = tune::LaunchConfig::default_of(&self.compiled.geometry, work);
        }
        self.tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(volume, best);
        Ok(best)
    }

    /// The untuned launch on `lattice` with `ls` slices: the launch space's default block
    /// over the kernel's work (a walk's x rows, else the output sites × the slices a
    /// block holds).
    pub fn default_launch(&self, lattice: &Lattice, ls: usize) -> tune::LaunchConfig {
        let sites = output_sites(&self.variant, lattice);
        let work = launch_work(&self.variant, lattice, sites, self.slices_tuned(ls));
        tune::LaunchConfig::default_of(&self.compiled.geometry, work)
    }

    /// A walking launch's block against the lattice: whole x rows (block.x = L0/2),
    /// block.y one of [`walk::BLOCK_ROWS`], and its tile ([`walk::tile`]) dividing L1, L2,
    /// L3; the whole parity (no box).
    fn check_walk(
        &self,
        lattice: &Lattice,
        block: [u32; 3],
        boxed: bool,
    ) -> Result<(), OperatorError> {
        let d = lattice.dims();
        let rows = block[1];
        let tile = walk::tile(rows);
        let fits = block[0] as usize == d[0] / 2
            && walk::BLOCK_ROWS.contains(&rows)
            && (0..3).all(|k| tile[k] > 0 && d[k + 1].is_multiple_of(tile[k] as usize));
        if boxed || !fits {
            return Err(self.field_error(
                "launch",
                (
                    format!(
                        "slices=walk: the whole parity in blocks of (L0/2 = {}, {:?}) threads, the tile of block.y rows ({ty} x block.y/{} x {tt} in y, z, t) dividing L1, L2, L3 = {:?}",
                        d[0] / 2,
                        walk::BLOCK_ROWS,
                        walk::TILE_Y * walk::TILE_T,
                        &d[1..],
                        ty = walk::TILE_Y,
                        tt = walk::TILE_T,
                    ),
                    format!("block {block:?}{}", if boxed { " over a box" } else { "" }),
                ),
            ));
        }
        Ok(())
    }

    /// The slices the tuner sees: a fused kernel's Ls (block.y = Ls), Ls for a variant
    /// with the slices in the block (its block.y is a knob), else 1 (grid rows: every block covers one slice).
    fn slices_tuned(&self, ls: usize) -> usize {
        match (self.slices, self.variant.slices) {
            (Some(fused_ls), _) => fused_ls,
            (None, Slices::InBlock | Slices::Walk) => ls.max(1),
            (None, Slices::Grid) => 1,
        }
    }

    /// The build and launch of a tuner candidate.
    fn choice(&self, c: &Candidate) -> Result<StencilLaunch, OperatorError> {
        let compile = CompileKnob::parse(&c.compile).map_err(|_| {
            let expected = "a compile label: \"\" or \"maxnreg=R\"".to_string();
            self.field_error("compile knob", (expected, c.compile.clone()))
        })?;
        Ok(StencilLaunch {
            compile,
            launch: c.launch,
        })
    }

    /// Tunes if needed, then queues one launch with the tuned parameters.
    pub fn run(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        mut args: StencilArgs<'_>,
    ) -> Result<(), OperatorError> {
        let mut trials = args.reborrow();
        trials.stream = None;
        let choice = self.tuned_config(gpu, tuner, lattice, trials)?;
        self.launch(gpu, lattice, choice, args)
    }
}

/// A stencil on its fields, as the tuner sees it ([`Tunable`]).
struct StencilTuning<'s, 'a> {
    stencil: &'s DeviceStencil,
    gpu: &'s Gpu,
    lattice: &'s Lattice,
    /// Ls where the block holds slices ([`DeviceStencil::slices_tuned`]), else 1.
    slices: usize,
    args: StencilArgs<'a>,
}

impl Tunable for StencilTuning<'_, '_> {
    type Error = OperatorError;

    fn tune_key(&self) -> TuneKey {
        let s = self.stencil;
        TuneKey::new(
            &s.kernel,
            s.variant.stable_hash(),
            s.compiled.source_hash(),
            self.lattice.volume() * self.slices,
            &formats_key(&s.variant),
            &self.gpu.device_key(),
        )
    }

    /// The output sites along x (the candidates' grids cover the 4D sites; the launch
    /// adds the Ls slices along y), and along y the slices a block holds: all Ls of a
    /// fused kernel, a divisor of Ls where the slices are in the block, else 1.
    fn work(&self) -> [usize; 3] {
        let v = &self.stencil.variant;
        launch_work(v, self.lattice, output_sites(v, self.lattice), self.slices)
    }

    /// The compiled kernel's geometry, with its knob space (prefetch included where
    /// the source has it).
    fn geometry(&self) -> Geometry {
        let c = &self.stencil.compiled;
        Geometry {
            knobs: c.knobs(),
            ..c.geometry
        }
    }

    fn limits(&self) -> Result<tune::LaunchLimits, OperatorError> {
        Ok(self.gpu.launch_limits()?)
    }

    /// The default build's register count (read from the loaded default build).
    fn uncapped_registers(&mut self) -> Result<Option<u32>, OperatorError> {
        Ok(Some(
            self.stencil.registers(self.gpu, CompileKnob::Default)?,
        ))
    }

    fn time_us(&mut self, c: &Candidate) -> Result<f64, OperatorError> {
        let s = self.stencil;
        let choice = s.choice(c)?;
        let (gpu, lattice, args) = (self.gpu, self.lattice, &mut self.args);
        gpu.time_us(1, 5, || {
            s.launch(gpu, lattice, choice, args.reborrow())
                .map_err(|e| DeviceError::Driver {
                    what: format!("tuning {} [{}]", s.name, choice.compile),
                    message: e.to_string(),
                })
        })
        .map_err(OperatorError::from)
    }
}

/// The index space a launch of `variant` covers: `sites` output sites (the threads of a
/// box) × `slices` along y; for a walking kernel ([`Slices::Walk`]) the L0/2 sites of an
/// x row of the output parity (block.x is the whole row) × its L1 · L2 · L3 rows.
fn launch_work(variant: &Variant, lattice: &Lattice, sites: usize, slices: usize) -> [usize; 3] {
    match variant.slices {
        Slices::Walk => {
            let d = lattice.dims();
            [d[0] / 2, d[1] * d[2] * d[3], 1]
        }
        _ => [sites, slices, 1],
    }
}

/// The greatest common divisor of `a` and `b`.
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Ls of an output field (its sites over the variant's 4D output sites; at least 1),
/// before the full check.
fn out_slices(variant: &Variant, lattice: &Lattice, out: &DeviceField) -> usize {
    (out.layout().sites / output_sites(variant, lattice).max(1)).max(1)
}

/// The number of compressed long fields of `variant` of `ir` (0 for long recon 18).
fn long_count(ir: &Ir, variant: &Variant) -> usize {
    if variant.long_recon == LongRecon::R18 {
        return 0;
    }
    ir.fields.iter().filter(|f| is_long(ir, &f.name)).count()
}

/// The number of input fields (non-output fields) of a spec.
fn input_count(ir: &Ir) -> usize {
    ir.fields.iter().filter(|f| f.role != Role::Out).count()
}

/// The code-generator hash of tune-cache fingerprints: FNV-1a-128 of the CUDA source of
/// every catalog kernel's default variant (f32, recon 18) — it changes whenever the
/// emitter's output, and so possibly the best launch, changes.
pub fn codegen_hash() -> String {
    let mut h = crate::hash::StableHasher::new();
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    for entry in qdsl_kernels::catalog::stencils() {
        h.write_field(entry.name.as_bytes());
        if let Ok(src) = (entry.cuda)(&v) {
            h.write_field(src.as_bytes());
        }
    }
    h.hex()
}

#[cfg(test)]
mod tests;
