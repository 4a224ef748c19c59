//! Generated stencil kernels on the GPU ([`DeviceStencil`]: compile for the device's
//! architecture, bind the parameters of [`super::params`], launch with tuned launch
//! parameters) and the even-odd operators on device fields.

use super::params::{input_count, kernel_params, KernelParam};
use crate::device::gpu::driver;
use crate::device::DeviceFormat;
use crate::device::{DeviceError, DeviceField, DeviceLayout, Gpu};
use crate::tune::{self, launch_candidates, Candidate, TuneError, TuneKey, Tuner};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, PushKernelArg};
use qdsl_core::dsl::ir::{FieldShape, Role};
use qdsl_core::dsl::lower::{lower, ReadSites};
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{DslError, Ir, KernelInfo, Stencil, Variant};
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// Errors of device kernels and operators.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A device operation failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The spec or variant was rejected by the generator.
    #[error(transparent)]
    Dsl(#[from] DslError),
    /// Tuning failed.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// A field does not fit the kernel variant.
    #[error("{kernel}: field {field}: expected {expected}, found {found}")]
    Field {
        /// The kernel.
        kernel: String,
        /// The field (parameter name).
        field: String,
        /// What the variant needs.
        expected: String,
        /// What was given.
        found: String,
    },
}

/// The xpay operands of a device launch: out = a·x + b·(D ψ).
#[derive(Clone, Copy, Debug)]
pub struct DeviceXpay<'a> {
    /// The factor a of x (rounded to the compute type).
    pub a: f64,
    /// The field x (same layout as the output).
    pub x: &'a DeviceField,
    /// The factor b of D ψ (rounded to the compute type).
    pub b: f64,
}

/// What a field argument must look like: sites, records per site, stored reals per
/// record and bytes per real (the storage format itself is checked by
/// [`expected_format`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldShapeCheck {
    /// Sites.
    pub sites: usize,
    /// Records per site (4 for gauge fields).
    pub subs: usize,
    /// Stored reals per record.
    pub reals: usize,
    /// Bytes per stored real.
    pub real_bytes: usize,
}

impl FieldShapeCheck {
    /// Compares a device layout with this expectation; the error text names both.
    pub fn check(&self, layout: &DeviceLayout) -> Result<(), (String, String)> {
        let found = FieldShapeCheck {
            sites: layout.sites,
            subs: layout.subs,
            reals: layout.stored_reals,
            real_bytes: layout.real_bytes,
        };
        if found == *self {
            Ok(())
        } else {
            Err((
                self.describe(),
                format!("{} ({})", found.describe(), layout.format),
            ))
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} sites × {} × {} reals of {} bytes",
            self.sites, self.subs, self.reals, self.real_bytes
        )
    }
}

/// How a kernel uses one of its fields (from the lowered spec, computed once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldUse {
    /// The field's name.
    pub name: String,
    /// Whether it is the output.
    pub out: bool,
    /// Whether it is a gauge field (else a colour-spinor or clover field).
    pub gauge: bool,
    /// Whether it is a clover field: 72 reals per site in the compute precision (f64 for
    /// f64 spinors, else f32), on the output's sites.
    pub clover: bool,
    /// Whether it is read at both parities (then stored on the whole lattice).
    pub both_parities: bool,
}

/// The uses of every field of a spec in declaration order, and the reals per spinor
/// site (2 · spins · colours).
pub fn field_uses(ir: &Ir) -> Result<(Vec<FieldUse>, usize), DslError> {
    let lowered = lower(ir)?;
    let uses = ir
        .fields
        .iter()
        .map(|f| FieldUse {
            name: f.name.clone(),
            out: f.role == Role::Out,
            gauge: matches!(f.shape, FieldShape::Gauge { .. }),
            clover: f.shape == FieldShape::Clover,
            both_parities: lowered
                .inputs
                .iter()
                .any(|i| i.decl.name == f.name && i.reads == ReadSites::Both),
        })
        .collect();
    Ok((uses, 2 * lowered.nspin * lowered.ncolour))
}

/// The shape each field must have for `variant` on `lattice`: gauge fields V sites × 4
/// links of `recon` reals in the gauge format; spinors `spinor_reals` reals in the
/// spinor format on V/2 sites for one output parity (V when read at both parities or
/// for the full lattice), times `ls` for 5D fields (Ls slices of those sites); clover
/// fields 72 reals in the compute precision on the output's (4D) sites.
pub fn shapes(
    uses: &[FieldUse],
    spinor_reals: usize,
    variant: &Variant,
    lattice: &Lattice,
    ls: usize,
) -> Vec<FieldShapeCheck> {
    let parity_out = matches!(variant.sites, OutputSites::Parity(_));
    let (v, half) = (lattice.volume(), lattice.half_volume());
    uses.iter()
        .map(|u| {
            if u.gauge {
                FieldShapeCheck {
                    sites: v,
                    subs: 4,
                    reals: variant.recon.reals(),
                    real_bytes: variant.gauge.bytes(),
                }
            } else if u.clover {
                FieldShapeCheck {
                    sites: if parity_out { half } else { v },
                    subs: 1,
                    reals: qdsl_core::field::CLOVER_SITE_REALS,
                    real_bytes: clover_format(variant).bytes(),
                }
            } else {
                FieldShapeCheck {
                    sites: ls
                        * if parity_out && !u.both_parities {
                            half
                        } else {
                            v
                        },
                    subs: 1,
                    reals: spinor_reals,
                    real_bytes: variant.spinor.bytes(),
                }
            }
        })
        .collect()
}

/// The storage of clover fields for `variant`: the compute precision (f64 for f64
/// spinors, else f32), as the CUDA emitter reads them.
pub fn clover_format(variant: &Variant) -> StorageFormat {
    match variant.spinor {
        StorageFormat::F64 => StorageFormat::F64,
        _ => StorageFormat::F32,
    }
}

/// The expected shape of every field of `variant` of a spec on `lattice`, in
/// declaration order ([`field_uses`] then [`shapes`]).
pub fn expected_shapes(
    ir: &Ir,
    variant: &Variant,
    lattice: &Lattice,
) -> Result<Vec<(String, FieldShapeCheck)>, DslError> {
    let (uses, reals) = field_uses(ir)?;
    let shapes = shapes(&uses, reals, variant, lattice, 1);
    Ok(uses.into_iter().map(|u| u.name).zip(shapes).collect())
}

/// The storage format a field of `variant` must have: gauge fields the gauge storage ×
/// compression, clover fields [`clover_format`], colour spinors the spinor format (with
/// per-site norms for fixed point).
pub fn expected_format(u: &FieldUse, variant: &Variant) -> DeviceFormat {
    if u.gauge {
        DeviceFormat::Link(LinkFormat::new(
            variant.gauge.link_storage(),
            variant.recon.compression(),
        ))
    } else if u.clover {
        DeviceFormat::Fermion(clover_format(variant).fermion_format())
    } else {
        DeviceFormat::Fermion(variant.spinor.fermion_format())
    }
}

/// Output sites of a variant: V/2 for one parity, V for the full lattice.
pub fn output_sites(variant: &Variant, lattice: &Lattice) -> usize {
    match variant.sites {
        OutputSites::Parity(_) => lattice.half_volume(),
        OutputSites::Full => lattice.volume(),
    }
}

/// Storage formats as the tune key records them, e.g. `spinor=f32 gauge=f32 recon=12`.
pub fn formats_key(variant: &Variant) -> String {
    format!(
        "spinor={} gauge={} recon={}",
        variant.spinor.name(),
        variant.gauge.name(),
        variant.recon.reals()
    )
}

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

/// The hop variant of a device operator: parity, dagger, xpay and the given formats.
fn device_variant(base: &Variant, sites: Parity, dagger: bool, xpay: bool) -> Variant {
    Variant {
        sites: OutputSites::Parity(sites),
        dagger,
        xpay,
        ..*base
    }
}

/// The four hop kernels of a two-hop even-odd operator: (q ← p, p ← q with xpay) × dagger.
#[derive(Debug)]
struct TwoHops {
    /// [dagger as usize][0: to q, no xpay; 1: to p, xpay]
    hops: [[DeviceStencil; 2]; 2],
}

impl TwoHops {
    fn new<S: Stencil>(
        gpu: &Gpu,
        base: &Variant,
        parity: Parity,
        with_dagger: bool,
    ) -> Result<Self, OperatorError> {
        let make = |dagger: bool| -> Result<[DeviceStencil; 2], OperatorError> {
            // A dagger-less operator (Hermitian A) reuses the plain kernels.
            let dagger = dagger && with_dagger;
            Ok([
                DeviceStencil::of::<S>(
                    gpu,
                    &device_variant(base, parity.opposite(), dagger, false),
                )?,
                DeviceStencil::of::<S>(gpu, &device_variant(base, parity, dagger, true))?,
            ])
        };
        Ok(Self {
            hops: [make(false)?, make(true)?],
        })
    }

    /// out = a ψ + b D_pq (D_qp ψ) with the extra gauge inputs `links`; `tmp` holds
    /// the q-parity intermediate.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        gpu: &Gpu,
        tuner: &Tuner,
        lattice: &Lattice,
        links: &[&DeviceField],
        (a, b): (f64, f64),
        out: &mut DeviceField,
        psi: &DeviceField,
        tmp: &mut DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let [to_q, to_p] = &self.hops[usize::from(dagger)];
        let mut inputs: Vec<&DeviceField> = vec![psi];
        inputs.extend_from_slice(links);
        to_q.run(gpu, tuner, lattice, tmp, &inputs, None)?;
        let mut inputs: Vec<&DeviceField> = vec![&*tmp];
        inputs.extend_from_slice(links);
        let xpay = DeviceXpay { a, x: psi, b };
        to_p.run(gpu, tuner, lattice, out, &inputs, Some(&xpay))
    }

    fn flops_per_site(&self) -> usize {
        self.hops[0][0].info().flops_per_site + self.hops[0][1].info().flops_per_site
    }
}

/// A zero spinor field of `reals` reals per site on `sites` sites in `format`.
pub fn device_spinor(
    gpu: &Gpu,
    format: StorageFormat,
    reals: usize,
    sites: usize,
) -> Result<DeviceField, DeviceError> {
    let f = crate::device::DeviceFormat::Fermion(format.fermion_format());
    let layout = DeviceLayout::new(f, reals, sites)?;
    DeviceField::zeros(gpu, layout)
}

/// M̂ = 1 − κ² H_pq H_qp on device fields (see [`super::EvenOddWilson`]).
#[derive(Debug)]
pub struct DeviceEvenOddWilson {
    hops: TwoHops,
    gauge: DeviceField,
    lattice: Lattice,
    kappa: f64,
    tmp: DeviceField,
}

impl DeviceEvenOddWilson {
    /// M̂ on `parity` with the uploaded links `gauge`; `formats` gives the storage
    /// formats, the compression and the time boundary (its sites, dagger and xpay are
    /// set per hop).
    pub fn new(
        gpu: &Gpu,
        gauge: DeviceField,
        lattice: Lattice,
        kappa: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let (base, format) = (*formats, formats.spinor);
        let hops = TwoHops::new::<WilsonHop>(gpu, &base, parity, true)?;
        let tmp = device_spinor(gpu, format, 24, lattice.half_volume())?;
        Ok(Self {
            hops,
            gauge,
            lattice,
            kappa,
            tmp,
        })
    }

    /// out = M̂ ψ (dagger: M̂† ψ), queued on the GPU's stream.
    pub fn apply(
        &mut self,
        gpu: &Gpu,
        tuner: &Tuner,
        out: &mut DeviceField,
        psi: &DeviceField,
        dagger: bool,
    ) -> Result<(), OperatorError> {
        let k2 = self.kappa * self.kappa;
        self.hops.apply(
            gpu,
            tuner,
            &self.lattice,
            &[&self.gauge],
            (1.0, -k2),
            out,
            psi,
            &mut self.tmp,
            dagger,
        )
    }

    /// Flops of one application: (V/2)(1320 + 1392).
    pub fn flops(&self) -> u64 {
        (self.lattice.half_volume() * self.hops.flops_per_site()) as u64
    }
}

/// A = 4m² − D_pq D_qp on device fields (see [`super::EvenOddStaggered`]): naive
/// staggered with one gauge field, improved with fat and long links.
#[derive(Debug)]
pub struct DeviceEvenOddStaggered {
    hops: TwoHops,
    links: Vec<DeviceField>,
    lattice: Lattice,
    mass: f64,
    tmp: DeviceField,
}

impl DeviceEvenOddStaggered {
    /// A on `parity`: `links` = `[U]` (naive) or `[fat, long]` (improved), recon 18, the
    /// spinor and gauge storage formats taken from `formats`.
    pub fn new(
        gpu: &Gpu,
        links: Vec<DeviceField>,
        lattice: Lattice,
        mass: f64,
        parity: Parity,
        formats: &Variant,
    ) -> Result<Self, OperatorError> {
        let base = Variant {
            spinor: formats.spinor,
            gauge: formats.gauge,
            ..Variant::default()
        };
        let format = base.spinor;
        let hops = match links.len() {
            1 => TwoHops::new::<NaiveStaggeredHop>(gpu, &base, parity, false)?,
            2 => TwoHops::new::<ImprovedStaggeredHop>(gpu, &base, parity, false)?,
            n => {
                return Err(OperatorError::Field {
                    kernel: "staggered operator".into(),
                    field: "links".into(),
                    expected: "1 (naive) or 2 (fat, long) gauge fields".into(),
                    found: n.to_string(),
                })
            }
        };
        let tmp = device_spinor(gpu, format, 6, lattice.half_volume())?;
        Ok(Self {
            hops,
            links,
            lattice,
            mass,
            tmp,
        })
    }

    /// out = A ψ (A is Hermitian), queued on the GPU's stream.
    pub fn apply(
        &mut self,
        gpu: &Gpu,
        tuner: &Tuner,
        out: &mut DeviceField,
        psi: &DeviceField,
    ) -> Result<(), OperatorError> {
        let links: Vec<&DeviceField> = self.links.iter().collect();
        let m2 = 4.0 * self.mass * self.mass;
        self.hops.apply(
            gpu,
            tuner,
            &self.lattice,
            &links,
            (m2, -1.0),
            out,
            psi,
            &mut self.tmp,
            false,
        )
    }

    /// Flops of one application: (V/2)(f_hop + f_hop,xpay).
    pub fn flops(&self) -> u64 {
        (self.lattice.half_volume() * self.hops.flops_per_site()) as u64
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

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::variant::Recon;
    use qdsl_core::format::FermionFormat;

    fn shape(sites: usize, subs: usize, reals: usize, real_bytes: usize) -> FieldShapeCheck {
        FieldShapeCheck {
            sites,
            subs,
            reals,
            real_bytes,
        }
    }

    /// Hand-written shapes on 4³×6 (V = 384): Wilson even output, f32 recon 12:
    /// out and ψ 192 sites × 24 f32, U 384 sites × 4 × 12 f32; the full-lattice output
    /// reads ψ on all 384 sites; improved staggered f64 has fat and long 384 × 4 × 18.
    #[test]
    fn expected_shapes_by_hand() {
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        let v = Variant {
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            recon: Recon::R12,
            ..Variant::default()
        };
        let got = expected_shapes(&WilsonHop::ir(), &v, &lat).unwrap();
        let want = vec![
            ("out".to_string(), shape(192, 1, 24, 4)),
            ("psi".to_string(), shape(192, 1, 24, 4)),
            ("u".to_string(), shape(384, 4, 12, 4)),
        ];
        assert_eq!(got, want);
        let full = Variant {
            sites: OutputSites::Full,
            ..v
        };
        let got = expected_shapes(&WilsonHop::ir(), &full, &lat).unwrap();
        assert_eq!((got[0].1.sites, got[1].1.sites), (384, 384));
        let got = expected_shapes(&ImprovedStaggeredHop::ir(), &Variant::default(), &lat).unwrap();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["out", "chi", "fat", "long"]);
        assert_eq!(got[1].1, shape(192, 1, 6, 8));
        assert_eq!(got[3].1, shape(384, 4, 18, 8));
        assert_eq!(output_sites(&v, &lat), 192);
        assert_eq!(output_sites(&full, &lat), 384);
        assert_eq!(formats_key(&v), "spinor=f32 gauge=f32 recon=12");
    }

    /// Wilson-clover on 4³×6, odd output, f32 recon 12: ψ is read at both parities (384
    /// sites), the clover field on the 192 output sites × 72 f32 (the compute precision),
    /// and with f64 spinors 72 f64; a 72-real f32 device layout passes the check; 5D
    /// spinors hold Ls slices.
    #[test]
    fn clover_fields_have_the_compute_precision_on_output_sites() {
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        let v = Variant {
            sites: OutputSites::Parity(Parity::Odd),
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            recon: Recon::R12,
            ..Variant::default()
        };
        let got = expected_shapes(&qdsl_kernels::WilsonClover::ir(), &v, &lat).unwrap();
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["out", "psi", "u", "a"]);
        assert_eq!(got[1].1, shape(384, 1, 24, 4));
        assert_eq!(got[3].1, shape(192, 1, 72, 4));
        let f64_full = Variant {
            sites: OutputSites::Full,
            ..Variant::default()
        };
        let got = expected_shapes(&qdsl_kernels::CloverApply::ir(), &f64_full, &lat).unwrap();
        assert_eq!(got[2].1, shape(384, 1, 72, 8));
        let layout = DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 72, 192).unwrap();
        assert_eq!(shape(192, 1, 72, 4).check(&layout), Ok(()));
        // 5D (Ls = 3): the spinors hold 3 slices, the 4D clover and gauge fields do not.
        let (uses, reals) = field_uses(&qdsl_kernels::WilsonClover::ir()).unwrap();
        let five = shapes(&uses, reals, &v, &lat, 3);
        assert_eq!(five[0], shape(3 * 192, 1, 24, 4));
        assert_eq!(five[1], shape(3 * 384, 1, 24, 4));
        assert_eq!(five[2], shape(384, 4, 12, 4));
        assert_eq!(five[3], shape(192, 1, 72, 4));
    }

    /// max |a − b| / max |b| over two host fields of one layout.
    fn rel_err<T: qdsl_core::Real>(
        a: &qdsl_core::field::ColourSpinorField<T>,
        b: &qdsl_core::field::ColourSpinorField<T>,
    ) -> f64 {
        let (mut d, mut m) = (0.0f64, 0.0f64);
        for (x, y) in a.data().iter().zip(b.data()) {
            let (dr, di) = ((x.re - y.re).to_f64(), (x.im - y.im).to_f64());
            d = d.max(dr.hypot(di));
            m = m.max(y.re.to_f64().hypot(y.im.to_f64()));
        }
        d / m
    }

    /// GPU (skips without one): the Wilson hop on a 5D field (Ls = 3, odd output, f32,
    /// recon 12: one grid row per slice) and the Wilson-clover operator with Dirichlet
    /// walls (blocks 2 × 4 × 2 × 3, full lattice, f64, dagger, xpay) equal the generated
    /// CPU code on the same fields.
    #[test]
    fn five_d_and_dirichlet_launches_match_the_cpu() {
        use qdsl_core::dsl::cpu::Xpay;
        use qdsl_core::dsl::variant::DirichletBlocks;
        use qdsl_core::field::SpinorLayout;
        use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset};
        let backend = match crate::backend::CudaBackend::new(0) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("skipping (no GPU): {e}");
                return;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let gpu = Gpu::new(backend, crate::jit::Jit::new(dir.path(), None).unwrap());
        let lat = Lattice::new([4, 4, 4, 6]).unwrap();
        let u = GaugeField::random(lat, 31);
        // 5D Wilson hop.
        let v = Variant {
            sites: OutputSites::Parity(Parity::Odd),
            spinor: StorageFormat::F32,
            gauge: StorageFormat::F32,
            recon: Recon::R12,
            ..Variant::default()
        };
        let ls = 3;
        let layout = |p: Parity| SpinorLayout::new(lat, ls, SiteSubset::Single(p), 4, 3).unwrap();
        let psi = ColourSpinorField::<f64>::gaussian(layout(Parity::Even), 32).cast::<f32>();
        let u32f = u.cast::<f32>();
        let mut cpu = ColourSpinorField::<f32>::zeros(layout(Parity::Odd));
        WilsonHop
            .apply_cpu(&v, &mut cpu, &psi, &u32f, None)
            .unwrap();
        let d_psi = DeviceField::from_spinor(&gpu, &psi, FermionFormat::F32).unwrap();
        let d_u = DeviceField::from_gauge(
            &gpu,
            &u32f,
            LinkFormat::new(v.gauge.link_storage(), v.recon.compression()),
        )
        .unwrap();
        let n4 = lat.half_volume();
        let mut d_out = device_spinor(&gpu, v.spinor, 24, ls * n4).unwrap();
        let hop = DeviceStencil::of::<WilsonHop>(&gpu, &v).unwrap();
        hop.launch(
            &gpu,
            &lat,
            tune::LaunchConfig::default_for(n4),
            &mut d_out,
            &[&d_psi, &d_u],
            None,
        )
        .unwrap();
        let got = d_out.to_spinor::<f32>(&gpu, layout(Parity::Odd)).unwrap();
        let err = rel_err(&got, &cpu);
        assert!(err < 1e-5, "5D Wilson hop: {err:e}");
        // Dirichlet Wilson-clover.
        let v = Variant {
            sites: OutputSites::Full,
            dagger: true,
            xpay: true,
            dirichlet: Some(DirichletBlocks {
                block: [2, 4, 2, 3],
            }),
            ..Variant::default()
        };
        let full = SpinorLayout::wilson(lat, SiteSubset::Full);
        let psi = ColourSpinorField::<f64>::gaussian(full, 33);
        let x = ColourSpinorField::<f64>::gaussian(full, 34);
        let mut a = CloverField::<f64>::zeros(lat, SiteSubset::Full);
        for (k, r) in a.data_mut().iter_mut().enumerate() {
            *r = if k % 36 < 6 {
                4.0
            } else {
                ((k * 37 % 101) as f64) / 200.0 - 0.25
            };
        }
        let mut cpu = ColourSpinorField::<f64>::zeros(full);
        let xpay = Xpay {
            a: 0.5,
            x: &x,
            b: -1.5,
        };
        qdsl_kernels::WilsonClover
            .apply_cpu(&v, &mut cpu, &psi, &u, &a, Some(xpay))
            .unwrap();
        let d_psi = DeviceField::from_spinor(&gpu, &psi, FermionFormat::F64).unwrap();
        let d_x = DeviceField::from_spinor(&gpu, &x, FermionFormat::F64).unwrap();
        let d_u = DeviceField::from_gauge(
            &gpu,
            &u,
            LinkFormat::new(v.gauge.link_storage(), v.recon.compression()),
        )
        .unwrap();
        let clover =
            DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F64), 72, lat.volume()).unwrap();
        let d_a = DeviceField::upload(&gpu, clover, a.data()).unwrap();
        let mut d_out = device_spinor(&gpu, v.spinor, 24, lat.volume()).unwrap();
        let op = DeviceStencil::of::<qdsl_kernels::WilsonClover>(&gpu, &v).unwrap();
        let dx = DeviceXpay {
            a: 0.5,
            x: &d_x,
            b: -1.5,
        };
        op.launch(
            &gpu,
            &lat,
            tune::LaunchConfig::default_for(lat.volume()),
            &mut d_out,
            &[&d_psi, &d_u, &d_a],
            Some(&dx),
        )
        .unwrap();
        let got = d_out.to_spinor::<f64>(&gpu, full).unwrap();
        let err = rel_err(&got, &cpu);
        assert!(err < 1e-13, "Dirichlet Wilson-clover: {err:e}");
    }

    /// Device layouts (pure values, no GPU) pass or fail the check, and a mismatch
    /// names both shapes; narrow storage passes by its width (the kernels decode it).
    #[test]
    fn field_checks_name_expected_and_found() {
        let f32_spinor =
            DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::F32), 24, 192).unwrap();
        assert_eq!(shape(192, 1, 24, 4).check(&f32_spinor), Ok(()));
        let (expected, found) = shape(192, 1, 24, 8).check(&f32_spinor).unwrap_err();
        assert_eq!(expected, "192 sites × 1 × 24 reals of 8 bytes");
        assert_eq!(found, "192 sites × 1 × 24 reals of 4 bytes (f32)");
        let fixed =
            DeviceLayout::new(DeviceFormat::Fermion(FermionFormat::FIXED16), 24, 192).unwrap();
        assert_eq!(shape(192, 1, 24, 2).check(&fixed), Ok(()));
        assert!(shape(192, 1, 24, 4).check(&fixed).is_err());
        let links = DeviceLayout::new(
            DeviceFormat::Link(LinkFormat::new(
                StorageFormat::F32.link_storage(),
                Recon::R12.compression(),
            )),
            0,
            384,
        )
        .unwrap();
        assert_eq!(shape(384, 4, 12, 4).check(&links), Ok(()));
        assert!(shape(384, 4, 18, 4).check(&links).is_err());
    }
}
