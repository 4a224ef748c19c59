//! [`DeviceStencil`]: one generated kernel variant on the GPU: compiled for the device's
//! architecture (JIT, PTX cache), its parameters bound ([`super::super::params`]), launched
//! with tuned compile and launch knobs.
//!
//! The compile knob is the register cap ([`crate::tune::compile`]): the tuner's two-stage
//! search ([`crate::tune::search`]) times the default build with every launch, then each
//! cap below the default build's register count with the three fastest launches. The
//! winner (compile label and launch) is kept in the tune cache and in memory per volume;
//! each build used is loaded once. With tuning off (`QDSL_TUNE=0`) the default build and
//! launch are used.
//!
//! Compressed long links (long recon 13/9) are passed as their record field among the
//! inputs plus [`LongLinkArgs`] (phase array, scale) in the `*_long` methods.

use crate::device::gpu::driver;
use crate::device::launch::KernelArgs;
use crate::device::long_links::{record_format, scaled_format, LongLinkArgs};
use crate::device::{DeviceError, DeviceField, Gpu};
use crate::tune::{
    self, compile_knobs, launch_candidates, Candidate, CompileKnob, TuneKey, Tuner, TwoStageSearch,
    PREFETCH_MACRO,
};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::CudaFunction;
use qdsl_core::dsl::ir::Role;
use qdsl_core::dsl::long_links::is_long;
use qdsl_core::dsl::variant::{LongRecon, StorageFormat};
use qdsl_core::dsl::{CompiledKernel, Ir, KernelInfo, KernelParam, Stencil, Variant};
use qdsl_core::lattice::Lattice;
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
    builds: Mutex<HashMap<CompileKnob, Arc<Build>>>,
    tuned: Mutex<HashMap<usize, StencilLaunch>>,
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

    /// Loads `kernel` (generated from `ir` for `variant`); its arguments are bound in the
    /// order of the kernel's own parameter list.
    pub fn new(
        gpu: &Gpu,
        ir: Ir,
        variant: &Variant,
        kernel: CompiledKernel,
        info: KernelInfo,
    ) -> Result<Self, OperatorError> {
        let function = gpu.function(&kernel.name, &kernel.source, &[])?;
        let (uses, spinor_reals) = field_uses(&ir)?;
        let default = Arc::new(Build {
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
            compiled: kernel,
            builds: Mutex::new(HashMap::from([(CompileKnob::Default, default)])),
            tuned: Mutex::new(HashMap::new()),
        })
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

    /// Queues one launch of the default build with `cfg` on the GPU's stream (no
    /// synchronisation); 5D fields (Ls slices) run one grid row per slice.
    pub fn launch(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        cfg: tune::LaunchConfig,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        let choice = StencilLaunch::default_build(cfg);
        self.launch_with(gpu, lattice, choice, out, inputs, xpay)
    }

    /// Queues one launch of the build `choice.compile` with `choice.launch`, as
    /// [`Self::launch`].
    pub fn launch_with(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        choice: StencilLaunch,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        self.launch_long(gpu, lattice, choice, out, inputs, &[], xpay)
    }

    /// [`Self::launch_with`] for variants with compressed long links: `inputs` holds each
    /// long field's record ([`crate::device::long_links::DeviceLongLinks::record`]),
    /// `long` its phases and scale, in declaration order of the long fields.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_long(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        choice: StencilLaunch,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        self.launch_scaled(gpu, lattice, choice, out, inputs, long, &[], xpay)
    }

    /// [`Self::launch_long`] for variants whose fixed-point gauge fields carry a global
    /// scale (`link_scale = global`): `link_scales` holds each such field's scale s
    /// (`scale_<name>`, converted to the compute type), in declaration order; the fields
    /// in `inputs` hold U/s in the unit-scale link format
    /// ([`qdsl_core::dsl::storage::divide_by_global_scale`]).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_scaled(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        choice: StencilLaunch,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        link_scales: &[f64],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        let cfg = choice.launch;
        let ls = self.check(lattice, out, inputs, long, xpay)?;
        let build = self.build(gpu, choice.compile)?;
        let int = |x: usize, what: &str| {
            i32::try_from(x)
                .map_err(|_| self.field_error(what, ("a 32-bit index".into(), format!("{x}"))))
        };
        let dims = lattice.dims();
        let extents = [
            int(dims[0], "L0")?,
            int(dims[1], "L1")?,
            int(dims[2], "L2")?,
            int(dims[3], "L3")?,
        ];
        let n_out = int(output_sites(&self.variant, lattice), "n_out")?;
        let out_stride = int(out.layout().stride, "stride")?;
        let in_strides = inputs
            .iter()
            .map(|f| int(f.layout().stride, "stride"))
            .collect::<Result<Vec<_>, _>>()?;
        let x_stride = int(xpay.map_or(0, |x| x.x.layout().stride), "stride")?;
        let (a, b) = xpay.map_or((0.0, 0.0), |x| (x.a, x.b));
        let (a32, b32) = (a as f32, b as f32);
        let scales: Vec<f64> = long.iter().map(|l| l.scale).collect();
        let scales32: Vec<f32> = scales.iter().map(|&c| c as f32).collect();
        let f32_compute = self.variant.spinor != StorageFormat::F64;
        // Launches beyond 48 KiB of dynamic shared memory need the opt-in attribute (set
        // once per larger value, not per launch).
        if cfg.shared_bytes > build.shared_allowed.load(Ordering::Relaxed) {
            build
                .function
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_bytes as i32,
                )
                .map_err(driver(format!("allowing shared memory for {}", self.name)))?;
            build
                .shared_allowed
                .store(cfg.shared_bytes, Ordering::Relaxed);
        }
        let stream = gpu.backend().stream();
        let mut args = KernelArgs::new(stream);
        let missing_norms = |field: &str| {
            self.field_error(
                field,
                ("per-site norms (fixed point)".into(), "none".into()),
            )
        };
        let mut next_scale = link_scales.iter();
        let (out_values, out_norms) = out.buffers_mut();
        let (mut out_values, mut out_norms) = (Some(out_values), out_norms);
        for p in &self.compiled.params {
            match p {
                KernelParam::Output(_) => {
                    if let Some(v) = out_values.take() {
                        args.write(v);
                    }
                }
                KernelParam::OutputNorm(name) => {
                    args.write(out_norms.take().ok_or_else(|| missing_norms(name))?);
                }
                KernelParam::Input { index, .. } => {
                    args.read(inputs[*index].values());
                }
                KernelParam::InputNorm { index, name } => {
                    args.read(inputs[*index].norms().ok_or_else(|| missing_norms(name))?);
                }
                KernelParam::LongPhase { long: k, name } => {
                    args.read(long[*k].phase.ok_or_else(|| {
                        self.field_error(
                            name,
                            ("the phases of its recon-13/9 links".into(), "none".into()),
                        )
                    })?);
                }
                KernelParam::LongScale { long: k, .. } if f32_compute => {
                    args.f32(scales32[*k]);
                }
                KernelParam::LongScale { long: k, .. } => {
                    args.f64(scales[*k]);
                }
                KernelParam::LinkScale { name, .. } => {
                    let s = *next_scale.next().ok_or_else(|| {
                        self.field_error(name, ("its global link scale".into(), "no scale".into()))
                    })?;
                    if f32_compute {
                        args.f32(s as f32);
                    } else {
                        args.f64(s);
                    }
                }
                KernelParam::XpayX => {
                    if let Some(x) = xpay {
                        args.read(x.x.values());
                    }
                }
                KernelParam::XpayNorm => {
                    if let Some(x) = xpay {
                        args.read(x.x.norms().ok_or_else(|| missing_norms("xpay_x"))?);
                    }
                }
                KernelParam::XpayA if f32_compute => {
                    args.f32(a32);
                }
                KernelParam::XpayA => {
                    args.f64(a);
                }
                KernelParam::XpayB if f32_compute => {
                    args.f32(b32);
                }
                KernelParam::XpayB => {
                    args.f64(b);
                }
                KernelParam::Extent(mu) => {
                    args.i32(extents[*mu]);
                }
                KernelParam::NOut => {
                    args.i32(n_out);
                }
                KernelParam::OutputStride(_) => {
                    args.i32(out_stride);
                }
                KernelParam::InputStride { index, .. } => {
                    args.i32(in_strides[*index]);
                }
                KernelParam::XpayStride => {
                    args.i32(x_stride);
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
        let launch = cudarc::driver::LaunchConfig {
            grid_dim: (cfg.grid, ls, 1),
            block_dim: (cfg.block, 1, 1),
            shared_mem_bytes: cfg.shared_bytes,
        };
        // SAFETY: the arguments follow the kernel's own parameter list (the list its
        // signature was printed from), every field was checked against the
        // variant's shapes above, and the kernel guards i < n_out. Generated stencils wait
        // on their grid dependency before touching memory, so they may launch as
        // programmatic dependents.
        unsafe { args.launch(&build.function, launch, gpu.dependent_launch()) }
            .map_err(driver(format!("launching {}", self.name)))?;
        Ok(())
    }

    /// The tuned build and launch for this lattice: from memory, else from the tuner's
    /// two-stage search (key: kernel, variant hash, volume, formats, device; compile
    /// labels: the default build and the caps of [`compile_knobs`] below its register
    /// count), timing each candidate on these fields.
    pub fn tuned_config(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<StencilLaunch, OperatorError> {
        self.tuned_config_long(gpu, tuner, lattice, out, inputs, &[], xpay)
    }

    /// [`Self::tuned_config`] with compressed long links (see [`Self::launch_long`]).
    #[allow(clippy::too_many_arguments)]
    pub fn tuned_config_long(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<StencilLaunch, OperatorError> {
        self.tuned_config_scaled(gpu, tuner, lattice, out, inputs, long, &[], xpay)
    }

    /// [`Self::tuned_config_long`] with global link scales (see [`Self::launch_scaled`]).
    #[allow(clippy::too_many_arguments)]
    pub fn tuned_config_scaled(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        link_scales: &[f64],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<StencilLaunch, OperatorError> {
        let volume = lattice.volume();
        if let Some(c) = self
            .tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&volume)
        {
            return Ok(*c);
        }
        self.check(lattice, out, inputs, long, xpay)?;
        let key = TuneKey::new(
            &self.kernel,
            self.variant.stable_hash(),
            self.compiled.source_hash(),
            volume,
            &formats_key(&self.variant),
            &gpu.device_key(),
        );
        let launches =
            launch_candidates(output_sites(&self.variant, lattice), &gpu.launch_limits()?);
        // The register count is only needed (and the attribute only read) when tuning.
        let uncapped = match tuner.enabled() {
            true => Some(self.registers(gpu, CompileKnob::Default)?),
            false => None,
        };
        let prefetch = self.compiled.source.contains(PREFETCH_MACRO);
        let knobs = compile_knobs(uncapped, prefetch);
        let search = TwoStageSearch::new(knobs.iter().map(CompileKnob::label).collect(), launches);
        let tuned = tuner.tune_two_stage(&key, &search, |c: &Candidate| {
            let choice = self.choice(c)?;
            gpu.time_us(1, 5, || {
                self.launch_scaled(gpu, lattice, choice, out, inputs, long, link_scales, xpay)
                    .map_err(|e| DeviceError::Driver {
                        what: format!("tuning {} [{}]", self.name, choice.compile),
                        message: e.to_string(),
                    })
            })
            .map_err(OperatorError::from)
        })?;
        let best = self.choice(&tuned.best)?;
        self.tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(volume, best);
        Ok(best)
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
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        self.run_long(gpu, tuner, lattice, out, inputs, &[], xpay)
    }

    /// [`Self::run`] with compressed long links (see [`Self::launch_long`]).
    #[allow(clippy::too_many_arguments)]
    pub fn run_long(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        self.run_scaled(gpu, tuner, lattice, out, inputs, long, &[], xpay)
    }

    /// [`Self::run_long`] with global link scales (see [`Self::launch_scaled`]).
    #[allow(clippy::too_many_arguments)]
    pub fn run_scaled(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        long: &[LongLinkArgs<'_>],
        link_scales: &[f64],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        let choice =
            self.tuned_config_scaled(gpu, tuner, lattice, out, inputs, long, link_scales, xpay)?;
        self.launch_scaled(gpu, lattice, choice, out, inputs, long, link_scales, xpay)
    }
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
