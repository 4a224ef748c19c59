//! Generated stencil kernels on the GPU ([`DeviceStencil`]: compile for the device's
//! architecture, bind the parameters of [`super::params`], launch with tuned launch
//! parameters) and the even-odd operators on device fields.

use super::params::{input_count, kernel_params, KernelParam};
use crate::device::format::StoredReal;
use crate::device::gpu::driver;
use crate::device::{DeviceError, DeviceField, DeviceLayout, Gpu};
use crate::tune::{self, launch_candidates, Candidate, TuneError, TuneKey, Tuner};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, PushKernelArg};
use qdsl_core::dsl::ir::{FieldShape, Role};
use qdsl_core::dsl::lower::{lower, ReadSites};
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{DslError, Ir, KernelInfo, Stencil, Variant};
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
/// record and bytes per real (IEEE floats only: the generated kernels read f32/f64).
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
        let float = matches!(layout.format.stored_real(), Ok(StoredReal::Float(_)));
        let found = FieldShapeCheck {
            sites: layout.sites,
            subs: layout.subs,
            reals: layout.stored_reals,
            real_bytes: layout.real_bytes,
        };
        if float && found == *self {
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
    /// Whether it is a gauge field (else a colour-spinor field).
    pub gauge: bool,
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
/// for the full lattice).
pub fn shapes(
    uses: &[FieldUse],
    spinor_reals: usize,
    variant: &Variant,
    lattice: &Lattice,
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
            } else {
                FieldShapeCheck {
                    sites: if parity_out && !u.both_parities {
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

/// The expected shape of every field of `variant` of a spec on `lattice`, in
/// declaration order ([`field_uses`] then [`shapes`]).
pub fn expected_shapes(
    ir: &Ir,
    variant: &Variant,
    lattice: &Lattice,
) -> Result<Vec<(String, FieldShapeCheck)>, DslError> {
    let (uses, reals) = field_uses(ir)?;
    let shapes = shapes(&uses, reals, variant, lattice);
    Ok(uses.into_iter().map(|u| u.name).zip(shapes).collect())
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

    /// Checks every argument against the variant's shapes.
    fn check(
        &self,
        lattice: &Lattice,
        out: &DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
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
        let shapes = shapes(&self.uses, self.spinor_reals, &self.variant, lattice);
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
        }
        match (self.variant.xpay, xpay, out_shape) {
            (true, Some(xp), Some(shape)) => shape
                .check(xp.x.layout())
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
            _ => Ok(()),
        }
    }

    /// Queues one launch with `cfg` on the GPU's stream (no synchronisation).
    pub fn launch(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        cfg: tune::LaunchConfig,
        out: &mut DeviceField,
        inputs: &[&DeviceField],
        xpay: Option<&DeviceXpay<'_>>,
    ) -> Result<(), OperatorError> {
        self.check(lattice, out, inputs, xpay)?;
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
        let mut out_values = Some(out.values_mut());
        for p in &self.params {
            match p {
                KernelParam::Output(_) => {
                    if let Some(v) = out_values.take() {
                        builder.arg(v);
                    }
                }
                KernelParam::Input { index, .. } => {
                    builder.arg(inputs[*index].values());
                }
                KernelParam::XpayX => {
                    if let Some(x) = xpay {
                        builder.arg(x.x.values());
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
            grid_dim: (cfg.grid, 1, 1),
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
    /// A on `parity`: `links` = `[U]` (naive) or `[fat, long]` (improved), recon 18.
    pub fn new(
        gpu: &Gpu,
        links: Vec<DeviceField>,
        lattice: Lattice,
        mass: f64,
        parity: Parity,
        format: StorageFormat,
    ) -> Result<Self, OperatorError> {
        let base = Variant {
            spinor: format,
            gauge: format,
            ..Variant::default()
        };
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
    use crate::device::DeviceFormat;
    use qdsl_core::dsl::variant::Recon;
    use qdsl_core::format::{FermionFormat, LinkFormat};

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

    /// Device layouts (pure values, no GPU) pass or fail the check, and a mismatch
    /// names both shapes; fixed-point storage never passes (the kernels read floats).
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
        assert!(shape(192, 1, 24, 2).check(&fixed).is_err());
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
