//! [`DeviceStencil`]: one generated kernel variant on the GPU: compiled for the device's
//! architecture (JIT, PTX cache), its parameters bound ([`super::super::params`]), launched
//! with tuned launch parameters.

use super::super::params::{input_count, kernel_params, KernelParam};
use crate::device::gpu::driver;
use crate::device::{DeviceError, DeviceField, Gpu};
use crate::tune::{self, launch_candidates, Candidate, TuneKey, Tuner};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, PushKernelArg};
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::dsl::{Ir, KernelInfo, Stencil, Variant};
use qdsl_core::lattice::Lattice;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use super::*;

/// One generated kernel variant loaded on a GPU.
#[derive(Debug)]
pub struct DeviceStencil {
    kernel: String,
    name: String,
    ir: Ir,
    variant: Variant,
    params: Vec<KernelParam>,
    uses: Vec<FieldUse>,
    spinor_reals: usize,
    info: KernelInfo,
    function: CudaFunction,
    tuned: Mutex<HashMap<usize, tune::LaunchConfig>>,
    /// The dynamic shared memory the function is currently allowed (beyond 48 KiB).
    shared_allowed: AtomicU32,
}

impl DeviceStencil {
    /// Compiles (JIT, PTX cache) and loads `variant` of the spec `S`.
    pub fn of<S: Stencil>(gpu: &Gpu, variant: &Variant) -> Result<Self, OperatorError> {
        Self::new(
            gpu,
            S::ir(),
            variant,
            &S::cuda_source(variant)?,
            S::info(variant)?,
        )
    }

    /// Loads the kernel of `source` (generated from `ir` for `variant`).
    pub fn new(
        gpu: &Gpu,
        ir: Ir,
        variant: &Variant,
        source: &str,
        info: KernelInfo,
    ) -> Result<Self, OperatorError> {
        let name = qdsl_core::dsl::emit::cuda::kernel_name(&ir.name, variant);
        let function = gpu.function(&name, source, &[])?;
        let (uses, spinor_reals) = field_uses(&ir)?;
        Ok(Self {
            kernel: ir.name.clone(),
            params: kernel_params(&ir, variant),
            uses,
            spinor_reals,
            name,
            ir,
            variant: *variant,
            info,
            function,
            tuned: Mutex::new(HashMap::new()),
            shared_allowed: AtomicU32::new(48 * 1024),
        })
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

    /// Checks every argument against the variant's shapes; returns Ls, the number of
    /// fifth-dimension slices of the output (its sites over the 4D output sites; 1 for 4D
    /// fields), which every colour-spinor field must share.
    fn check(
        &self,
        lattice: &Lattice,
        out: &DeviceField,
        inputs: &[&DeviceField],
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
        let shapes = shapes(&self.uses, self.spinor_reals, &self.variant, lattice, ls);
        let mut k = 0;
        let mut out_shape = None;
        for (u, shape) in self.uses.iter().zip(&shapes) {
            let field = if u.out {
                out_shape = Some(*shape);
                out
            } else {
                k += 1;
                inputs[k - 1]
            };
            shape
                .check(field.layout())
                .map_err(|e| self.field_error(&u.name, e))?;
            let format = expected_format(u, &self.variant);
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

    /// Queues one launch with `cfg` on the GPU's stream (no synchronisation); 5D fields
    /// (Ls slices) run one grid row per slice.
    pub fn launch(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        cfg: tune::LaunchConfig,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        let ls = self.check(lattice, out, inputs, xpay)?;
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
        let f32_compute = self.variant.spinor != StorageFormat::F64;
        // Launches beyond 48 KiB of dynamic shared memory need the opt-in attribute (set
        // once per larger value, not per launch).
        if cfg.shared_bytes > self.shared_allowed.load(Ordering::Relaxed) {
            self.function
                .set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_bytes as i32,
                )
                .map_err(driver(format!("allowing shared memory for {}", self.name)))?;
            self.shared_allowed
                .store(cfg.shared_bytes, Ordering::Relaxed);
        }
        let stream = gpu.backend().stream();
        let mut builder = stream.launch_builder(&self.function);
        let missing_norms = |field: &str| {
            self.field_error(
                field,
                ("per-site norms (fixed point)".into(), "none".into()),
            )
        };
        let (out_values, out_norms) = out.buffers_mut();
        let (mut out_values, mut out_norms) = (Some(out_values), out_norms);
        for p in &self.params {
            match p {
                KernelParam::Output(_) => {
                    if let Some(v) = out_values.take() {
                        builder.arg(v);
                    }
                }
                KernelParam::OutputNorm(name) => {
                    builder.arg(out_norms.take().ok_or_else(|| missing_norms(name))?);
                }
                KernelParam::Input { index, .. } => {
                    builder.arg(inputs[*index].values());
                }
                KernelParam::InputNorm { index, name } => {
                    builder.arg(inputs[*index].norms().ok_or_else(|| missing_norms(name))?);
                }
                KernelParam::XpayX => {
                    if let Some(x) = xpay {
                        builder.arg(x.x.values());
                    }
                }
                KernelParam::XpayNorm => {
                    if let Some(x) = xpay {
                        builder.arg(x.x.norms().ok_or_else(|| missing_norms("xpay_x"))?);
                    }
                }
                KernelParam::XpayA if f32_compute => {
                    builder.arg(&a32);
                }
                KernelParam::XpayA => {
                    builder.arg(&a);
                }
                KernelParam::XpayB if f32_compute => {
                    builder.arg(&b32);
                }
                KernelParam::XpayB => {
                    builder.arg(&b);
                }
                KernelParam::Extent(mu) => {
                    builder.arg(&extents[*mu]);
                }
                KernelParam::NOut => {
                    builder.arg(&n_out);
                }
                KernelParam::OutputStride(_) => {
                    builder.arg(&out_stride);
                }
                KernelParam::InputStride { index, .. } => {
                    builder.arg(&in_strides[*index]);
                }
                KernelParam::XpayStride => {
                    builder.arg(&x_stride);
                }
            }
        }
        let launch = cudarc::driver::LaunchConfig {
            grid_dim: (cfg.grid, ls, 1),
            block_dim: (cfg.block, 1, 1),
            shared_mem_bytes: cfg.shared_bytes,
        };
        // SAFETY: the arguments follow the generated signature (`kernel_params`, checked
        // against the emitted source in its tests), every field was checked against the
        // variant's shapes above, and the kernel guards i < n_out.
        unsafe { builder.launch(launch) }.map_err(driver(format!("launching {}", self.name)))?;
        Ok(())
    }

    /// The tuned launch for this lattice: from memory, else from the tuner (key: kernel,
    /// variant hash, volume, formats, device), timing each candidate on these fields.
    pub fn tuned_config(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<tune::LaunchConfig, OperatorError> {
        let volume = lattice.volume();
        if let Some(c) = self
            .tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&volume)
        {
            return Ok(*c);
        }
        self.check(lattice, out, inputs, xpay)?;
        let key = TuneKey::new(
            &self.kernel,
            self.variant.stable_hash(),
            volume,
            &formats_key(&self.variant),
            &gpu.device_key(),
        );
        let candidates: Vec<Candidate> =
            launch_candidates(output_sites(&self.variant, lattice), &gpu.launch_limits()?)
                .into_iter()
                .map(Candidate::launch)
                .collect();
        let tuned = tuner.tune(&key, &candidates, |c| {
            gpu.time_us(1, 5, || {
                self.launch(gpu, lattice, c.launch, out, inputs, xpay)
                    .map_err(|e| DeviceError::Driver {
                        what: format!("tuning {}", self.name),
                        message: e.to_string(),
                    })
            })
        })?;
        self.tuned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(volume, tuned.best.launch);
        Ok(tuned.best.launch)
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
        let cfg = self.tuned_config(gpu, tuner, lattice, out, inputs, xpay)?;
        self.launch(gpu, lattice, cfg, out, inputs, xpay)
    }
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
    for entry in crate::cli::catalog() {
        h.write_field(entry.name.as_bytes());
        if let Ok(src) = (entry.cuda)(&v) {
            h.write_field(src.as_bytes());
        }
    }
    h.hex()
}
