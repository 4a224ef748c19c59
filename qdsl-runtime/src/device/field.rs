//! [`DeviceField`]: a field in GPU memory, in a storage format and the chunked
//! structure-of-arrays layout, converted from and to host fields on the GPU.

use super::codegen::{self, Direction};
use super::format::{DeviceFormat, HostReal};
use super::gpu::{driver, DeviceError, Gpu};
use super::kernel::{load_program, Args, LoadedKernel};
use super::layout::DeviceLayout;
use super::reference::DeviceImage;
use super::tuned::tuned_launch;
use crate::tune::{FirstUse, LaunchConfig, Tuner};
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::KernelProgram;
use qdsl_core::field::{ColourSpinorField, GaugeField, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkFormat, SuCheck};
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_core::{Complex, Real};

/// A field on the GPU. It owns its memory: the value arrays (bytes, in the layout) and,
/// for fixed-point fermions, one f32 norm per site.
#[derive(Debug)]
pub struct DeviceField {
    layout: DeviceLayout,
    values: CudaSlice<u8>,
    norms: Option<CudaSlice<f32>>,
}

/// Host reals as the plain array that is uploaded: the host type itself.
enum HostArray {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

/// The one kernel of `program`, loaded.
fn one_kernel(gpu: &Gpu, program: &KernelProgram) -> Result<LoadedKernel, DeviceError> {
    load_program(gpu, program)?
        .pop()
        .ok_or_else(|| DeviceError::Shape(format!("{} defines no kernel", program.name)))
}

/// Describes the set status bits of a conversion kernel.
fn problems(status: u32) -> String {
    let names = [
        (
            codegen::STATUS_NON_FINITE,
            "NaN or infinity in a fixed-point format",
        ),
        (
            codegen::STATUS_OVERFLOW,
            "a finite value beyond the format's range",
        ),
        (
            codegen::STATUS_OUT_OF_RANGE,
            "a fixed-point link real beyond ±(Q + ½)/Q",
        ),
        (
            codegen::STATUS_CORRUPT,
            "corrupt data (a negative norm or the integer −2^(b−1))",
        ),
        (
            codegen::STATUS_NOT_SU3,
            "a link that is not SU(3) (recon 8 stores SU(3) links only)",
        ),
    ];
    names
        .iter()
        .filter(|(bit, _)| status & bit != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join("; ")
}

impl DeviceField {
    /// A zero field of `layout` (every real stored as 0; norms 0).
    pub fn zeros(gpu: &Gpu, layout: DeviceLayout) -> Result<Self, DeviceError> {
        let what = format!("a {} field of {} sites", layout.format, layout.sites);
        let values = gpu.alloc::<u8>(&what, layout.value_bytes())?;
        let norms = if layout.format.has_norm() {
            Some(gpu.alloc::<f32>(&format!("the norms of {what}"), layout.sites)?)
        } else {
            None
        };
        Ok(Self {
            layout,
            values,
            norms,
        })
    }

    /// The layout.
    pub fn layout(&self) -> &DeviceLayout {
        &self.layout
    }

    /// The value arrays (for kernel launches).
    pub fn values(&self) -> &CudaSlice<u8> {
        &self.values
    }

    /// The value arrays, mutable (for kernel launches).
    pub fn values_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.values
    }

    /// The per-site norms of fixed-point fermions.
    pub fn norms(&self) -> Option<&CudaSlice<f32>> {
        self.norms.as_ref()
    }

    /// Uploads host-order reals (`layout.sites · subs · host_reals` of them) and encodes
    /// them into `layout` on the GPU (the conversion kernel's default launch).
    pub fn upload<T: Real>(
        gpu: &Gpu,
        layout: DeviceLayout,
        host: &[T],
    ) -> Result<Self, DeviceError> {
        Self::upload_with(gpu, None, layout, host)
    }

    /// [`Self::upload`] with the conversion kernel's launch from `tuner`
    /// ([`super::tuned`]; a cached winner or the default under the launch policy).
    pub fn upload_with<T: Real>(
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        layout: DeviceLayout,
        host: &[T],
    ) -> Result<Self, DeviceError> {
        let expected = layout.sites * layout.subs * layout.host_reals;
        if host.len() != expected {
            return Err(DeviceError::Shape(format!(
                "{} host reals given, {expected} expected for {} sites of {}",
                host.len(),
                layout.sites,
                layout.format
            )));
        }
        let precision = HostReal::of::<T>();
        let array = match precision {
            HostReal::F64 => HostArray::F64(host.iter().map(|x| Real::to_f64(*x)).collect()),
            HostReal::F32 => HostArray::F32(host.iter().map(|x| Real::to_f64(*x) as f32).collect()),
        };
        let mut field = Self::zeros(gpu, layout)?;
        let program = codegen::conversion_program(&layout, precision, Direction::Encode)?;
        let name = program.name.clone();
        let kernel = one_kernel(gpu, &program)?;
        let stream = gpu.backend().stream().clone();
        let mut status = gpu.alloc::<i32>("a status word", 1)?;
        let copy = |e| driver("copying host data to the GPU")(e);
        let work = [layout.sites, 1, 1];
        let formats = format!("{} from {}", layout.format, precision.cuda_type());
        macro_rules! launch {
            ($input:expr) => {{
                let input = stream.clone_htod($input).map_err(copy)?;
                let mut encode = |cfg: &LaunchConfig| {
                    let mut args = Args::new();
                    args.read("in", &input)
                        .write("out", &mut field.values)
                        .write_or_null("norms", field.norms.as_mut().map(|n| n as _))
                        .count("sites", layout.sites)
                        .count("stride", layout.stride)
                        .write("status", &mut status);
                    kernel.launch_with(gpu, work, cfg, args)
                };
                // Encoding is idempotent: candidates are timed on the real buffers.
                let cfg = tuned_launch(
                    gpu,
                    tuner,
                    (&program).into(),
                    &kernel,
                    &formats,
                    work,
                    FirstUse::CachedOnly,
                    &mut encode,
                )?;
                encode(&cfg)?;
            }};
        }
        match &array {
            HostArray::F64(v) => launch!(v),
            HostArray::F32(v) => launch!(v),
        }
        check_status_naming(gpu, &status, &name, |bits| {
            (bits & codegen::STATUS_NOT_SU3 != 0)
                .then(|| first_non_su3(host, layout.subs))
                .flatten()
        })?;
        Ok(field)
    }

    /// Decodes the field on the GPU into host-order reals of `T` (the conversion
    /// kernel's default launch).
    pub fn download<T: Real>(&self, gpu: &Gpu) -> Result<Vec<T>, DeviceError> {
        self.download_with(gpu, None)
    }

    /// [`Self::download`] with the conversion kernel's launch from `tuner`
    /// ([`super::tuned`]).
    pub fn download_with<T: Real>(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
    ) -> Result<Vec<T>, DeviceError> {
        let layout = self.layout;
        let precision = HostReal::of::<T>();
        let program = codegen::conversion_program(&layout, precision, Direction::Decode)?;
        let name = program.name.clone();
        let kernel = one_kernel(gpu, &program)?;
        let stream = gpu.backend().stream().clone();
        let n = layout.sites * layout.subs * layout.host_reals;
        let mut status = gpu.alloc::<i32>("a status word", 1)?;
        let back = |e| driver("copying the decoded field to the host")(e);
        let work = [layout.sites, 1, 1];
        let formats = format!("{} to {}", layout.format, precision.cuda_type());
        macro_rules! launch {
            ($t:ty) => {{
                let mut out = gpu.alloc::<$t>("the decoded field", n)?;
                let mut decode = |cfg: &LaunchConfig| {
                    let mut args = Args::new();
                    args.read("in", &self.values)
                        .read_or_null("norms", self.norms.as_ref().map(|n| n as _))
                        .write("out", &mut out)
                        .count("sites", layout.sites)
                        .count("stride", layout.stride)
                        .write("status", &mut status);
                    kernel.launch_with(gpu, work, cfg, args)
                };
                // Decoding is idempotent: candidates are timed on the real buffers.
                let cfg = tuned_launch(
                    gpu,
                    tuner,
                    (&program).into(),
                    &kernel,
                    &formats,
                    work,
                    FirstUse::CachedOnly,
                    &mut decode,
                )?;
                decode(&cfg)?;
                let host = stream.clone_dtoh(&out).map_err(back)?;
                host.into_iter()
                    .map(|x| T::from_f64(x as f64))
                    .collect::<Vec<T>>()
            }};
        }
        let out = match precision {
            HostReal::F64 => launch!(f64),
            HostReal::F32 => launch!(f32),
        };
        check_status(gpu, &status, &name)?;
        Ok(out)
    }

    /// The raw device contents (to compare with [`super::reference::encode_image`]).
    pub fn image(&self, gpu: &Gpu) -> Result<DeviceImage, DeviceError> {
        let stream = gpu.backend().stream();
        let values = stream
            .clone_dtoh(&self.values)
            .map_err(driver("copying a device field to the host"))?;
        let norms = match &self.norms {
            Some(n) => stream
                .clone_dtoh(n)
                .map_err(driver("copying norms to the host"))?,
            None => Vec::new(),
        };
        let mut values = values;
        values.truncate(self.layout.value_bytes());
        Ok(DeviceImage { values, norms })
    }

    /// A field holding `image` exactly (the inverse of [`Self::image`]): the bytes are
    /// copied as they are, no conversion kernel runs. The image must have
    /// `layout.value_bytes()` bytes and one norm per site for fixed-point fermions.
    pub fn from_image(
        gpu: &Gpu,
        layout: DeviceLayout,
        image: &DeviceImage,
    ) -> Result<Self, DeviceError> {
        let norms = if layout.format.has_norm() {
            layout.sites
        } else {
            0
        };
        if image.values.len() != layout.value_bytes() || image.norms.len() != norms {
            return Err(DeviceError::Shape(format!(
                "an image of {} bytes and {} norms given, {} bytes and {norms} norms expected for {} sites of {}",
                image.values.len(),
                image.norms.len(),
                layout.value_bytes(),
                layout.sites,
                layout.format
            )));
        }
        let mut field = Self::zeros(gpu, layout)?;
        let stream = gpu.backend().stream();
        let copy = driver("copying a device image to the GPU");
        stream
            .memcpy_htod(&image.values, &mut field.values)
            .map_err(copy)?;
        if let Some(n) = field.norms.as_mut() {
            stream
                .memcpy_htod(&image.norms, n)
                .map_err(driver("copying norms to the GPU"))?;
        }
        Ok(field)
    }

    /// Uploads a colour-spinor field, stored as `format` (any spin and colour count).
    pub fn from_spinor<T: Real>(
        gpu: &Gpu,
        field: &ColourSpinorField<T>,
        format: FermionFormat,
    ) -> Result<Self, DeviceError> {
        Self::from_spinor_with(gpu, None, field, format)
    }

    /// [`Self::from_spinor`] with the conversion's launch from `tuner`.
    pub fn from_spinor_with<T: Real>(
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        field: &ColourSpinorField<T>,
        format: FermionFormat,
    ) -> Result<Self, DeviceError> {
        let l = field.layout();
        let layout = DeviceLayout::new(
            DeviceFormat::Fermion(format),
            2 * l.site_len(),
            l.ls() * l.sites_per_slice(),
        )?;
        let reals: Vec<T> = field.data().iter().flat_map(|z| [z.re, z.im]).collect();
        Self::upload_with(gpu, tuner, layout, &reals)
    }

    /// Downloads a colour-spinor field of host layout `layout`.
    pub fn to_spinor<T: Real>(
        &self,
        gpu: &Gpu,
        layout: SpinorLayout,
    ) -> Result<ColourSpinorField<T>, DeviceError> {
        self.to_spinor_with(gpu, None, layout)
    }

    /// [`Self::to_spinor`] with the conversion's launch from `tuner`.
    pub fn to_spinor_with<T: Real>(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        layout: SpinorLayout,
    ) -> Result<ColourSpinorField<T>, DeviceError> {
        let reals = self.download_with::<T>(gpu, tuner)?;
        let data = reals
            .chunks_exact(2)
            .map(|c| Complex::new(c[0], c[1]))
            .collect();
        ColourSpinorField::from_data(layout, data).map_err(|e| DeviceError::Shape(e.to_string()))
    }

    /// Uploads a gauge field, stored as `format` (links with sign +1: fold staggered
    /// phases in beforehand or use recon 18).
    pub fn from_gauge<T: Real>(
        gpu: &Gpu,
        field: &GaugeField<T>,
        format: LinkFormat,
    ) -> Result<Self, DeviceError> {
        let layout = DeviceLayout::new(DeviceFormat::Link(format), 0, field.lattice().volume())?;
        let reals: Vec<T> = field.links().iter().flat_map(|u| u.to_reals()).collect();
        Self::upload(gpu, layout, &reals)
    }

    /// Downloads a gauge field on `lattice`.
    pub fn to_gauge<T: Real>(
        &self,
        gpu: &Gpu,
        lattice: Lattice,
    ) -> Result<GaugeField<T>, DeviceError> {
        if lattice.volume() != self.layout.sites || self.layout.subs != 4 {
            return Err(DeviceError::Shape(format!(
                "a gauge field of volume {} cannot be read from a {} field of {} sites",
                lattice.volume(),
                self.layout.format,
                self.layout.sites
            )));
        }
        let reals = self.download::<T>(gpu)?;
        let mut g = GaugeField::unit(lattice);
        for (link, r) in g.links_mut().iter_mut().zip(reals.chunks_exact(18)) {
            let mut a = [T::zero(); 18];
            a.copy_from_slice(r);
            *link = qdsl_core::math::ColourMatrix::from_reals(&a);
        }
        Ok(g)
    }

    /// ‖x‖² = Σ_k x_k², decoded and accumulated in f64 on the GPU.
    pub fn norm2(&self, gpu: &Gpu) -> Result<f64, DeviceError> {
        self.norm2_with(gpu, None)
    }

    /// [`Self::norm2`] with the reduction's grid from `tuner` ([`super::tuned`]).
    pub fn norm2_with(&self, gpu: &Gpu, tuner: Option<&Tuner>) -> Result<f64, DeviceError> {
        Ok(self.reduce(gpu, tuner, None)?.re)
    }

    /// x†y = Σ conj(x_k) y_k over complex components, in f64 on the GPU; `other` must
    /// have the same layout.
    pub fn dot(&self, other: &DeviceField, gpu: &Gpu) -> Result<Complex<f64>, DeviceError> {
        self.dot_with(other, gpu, None)
    }

    /// [`Self::dot`] with the reduction's grid from `tuner` ([`super::tuned`]).
    pub fn dot_with(
        &self,
        other: &DeviceField,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
    ) -> Result<Complex<f64>, DeviceError> {
        if other.layout != self.layout {
            return Err(DeviceError::Shape(format!(
                "dot of fields with different layouts: {:?} and {:?}",
                self.layout, other.layout
            )));
        }
        self.reduce(gpu, tuner, Some(other))
    }

    /// ‖x_s‖² (`other` None) or ⟨x_s, y_s⟩ = Σ conj(x_k) y_k of each of the `slices`
    /// equal slices of this field (sites s·n .. (s + 1)·n, n = sites/slices: N right-hand
    /// sides), in f64 on the GPU, in one launch of each pass
    /// ([`codegen::slice_reduction_program`]). An error if `slices` does not divide the
    /// sites or the layouts differ.
    pub fn reduce_slices(
        &self,
        gpu: &Gpu,
        other: Option<&DeviceField>,
        slices: usize,
    ) -> Result<Vec<Complex<f64>>, DeviceError> {
        let layout = self.layout;
        if slices == 0 || !layout.sites.is_multiple_of(slices) || layout.subs != 1 {
            return Err(DeviceError::Shape(format!(
                "{} slices of a field of {} sites × {} records",
                slices, layout.sites, layout.subs
            )));
        }
        if let Some(o) = other.filter(|o| o.layout != layout) {
            return Err(DeviceError::Shape(format!(
                "per-slice dot of fields with different layouts: {:?} and {:?}",
                layout, o.layout
            )));
        }
        let program = codegen::slice_reduction_program(&layout)?;
        let name = program.name.clone();
        let kernels = load_program(gpu, &program)?;
        let [partial, fin] = kernels.as_slice() else {
            return Err(DeviceError::Shape(format!("{name}: expected two kernels")));
        };
        let n = layout.sites / slices;
        let block = codegen::REDUCTION_BLOCK as usize;
        let blocks = n.div_ceil(block).clamp(1, codegen::SLICE_PARTIALS as usize);
        let mut partials = gpu.alloc::<f64>("per-slice reduction partials", 2 * blocks * slices)?;
        let mut result = gpu.alloc::<f64>("per-slice reduction results", 2 * slices)?;
        let mut status = gpu.alloc::<i32>("a status word", 1)?;
        let y = other.unwrap_or(self);
        let mut args = Args::new();
        args.read("x", &self.values)
            .read_or_null("xn", self.norms.as_ref().map(|n| n as _))
            .read("y", &y.values)
            .read_or_null("yn", y.norms.as_ref().map(|n| n as _))
            .count("slice_sites", n)
            .count("stride", layout.stride)
            .int("dot", i32::from(other.is_some()))
            .write("partials", &mut partials)
            .write("status", &mut status);
        let fixed = [codegen::REDUCTION_BLOCK, 1, 1];
        partial.launch(gpu, [blocks * block, slices, 1], fixed, args)?;
        let mut args = Args::new();
        args.count("blocks", blocks)
            .read("partials", &partials)
            .write("result", &mut result);
        fin.launch(gpu, [block, slices, 1], fixed, args)?;
        check_status(gpu, &status, &name)?;
        let r = gpu
            .backend()
            .stream()
            .clone_dtoh(&result)
            .map_err(driver("reading a per-slice reduction"))?;
        Ok(r.chunks(2).map(|c| Complex::new(c[0], c[1])).collect())
    }

    /// The two-pass reduction: the partial pass on the grid `tuner` chose (each block
    /// one partial sum; timing reruns it, which only rewrites the partials), then the
    /// final pass over the partials.
    fn reduce(
        &self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        other: Option<&DeviceField>,
    ) -> Result<Complex<f64>, DeviceError> {
        let layout = self.layout;
        let program = codegen::reduction_program(&layout)?;
        let name = program.name.clone();
        let kernels = load_program(gpu, &program)?;
        let [partial, fin] = kernels.as_slice() else {
            return Err(DeviceError::Shape(format!("{name}: expected two kernels")));
        };
        let geometry = &partial.interface.geometry;
        let work = [layout.sites, 1, 1];
        let most = geometry.grid(work, geometry.default_block())[0];
        let mut partials = gpu.alloc::<f64>("reduction partials", 2 * most as usize)?;
        let mut result = gpu.alloc::<f64>("reduction result", 2)?;
        let mut status = gpu.alloc::<i32>("a status word", 1)?;
        let y = other.unwrap_or(self);
        let mut run = |cfg: &LaunchConfig| {
            let mut args = Args::new();
            args.read("x", &self.values)
                .read_or_null("xn", self.norms.as_ref().map(|n| n as _))
                .read("y", &y.values)
                .read_or_null("yn", y.norms.as_ref().map(|n| n as _))
                .count("sites", layout.sites)
                .count("stride", layout.stride)
                .int("dot", i32::from(other.is_some()))
                .write("partials", &mut partials)
                .write("status", &mut status);
            partial.launch_with(gpu, work, cfg, args)
        };
        let formats = layout.format.to_string();
        let cfg = tuned_launch(
            gpu,
            tuner,
            (&program).into(),
            partial,
            &formats,
            work,
            FirstUse::CachedOnly,
            &mut run,
        )?;
        run(&cfg)?;
        // The blocks the partial pass ran (at most `most`: the partials' size).
        let blocks = geometry.grid_tuned(work, geometry.block(cfg.block), cfg.grid[0])[0];
        let mut args = Args::new();
        args.read("partials", &partials)
            .int("blocks", blocks)
            .write("result", &mut result);
        fin.launch_default(gpu, [1, 1, 1], args)?;
        let stream = gpu.backend().stream();
        check_status(gpu, &status, &name)?;
        let r = stream
            .clone_dtoh(&result)
            .map_err(driver("reading a reduction"))?;
        Ok(Complex::new(r[0], r[1]))
    }
}

fn check_status(gpu: &Gpu, status: &CudaSlice<i32>, kernel: &str) -> Result<(), DeviceError> {
    check_status_naming(gpu, status, kernel, |_| None)
}

/// [`check_status`], appending `detail(bits)` (e.g. the offending record) to the problems.
fn check_status_naming(
    gpu: &Gpu,
    status: &CudaSlice<i32>,
    kernel: &str,
    detail: impl Fn(u32) -> Option<String>,
) -> Result<(), DeviceError> {
    let s = gpu
        .backend()
        .stream()
        .clone_dtoh(status)
        .map_err(driver(format!("reading the status of {kernel}")))?;
    match s.first().copied().unwrap_or(0) as u32 {
        0 => Ok(()),
        bits => Err(DeviceError::Conversion {
            kernel: kernel.to_string(),
            problems: match detail(bits) {
                Some(d) => format!("{}: {d}", problems(bits)),
                None => problems(bits),
            },
        }),
    }
}

/// The first link among host-order links (18 reals each, `subs` per site) that fails
/// the recon-8 encoder's check ‖V†V − 1‖_F ≤ tol and |det V − 1| ≤ tol
/// (tol = [`SuCheck::DEFAULT_TOLERANCE`]), described with its site and direction.
fn first_non_su3<T: Real>(host: &[T], subs: usize) -> Option<String> {
    let tol = SuCheck::DEFAULT_TOLERANCE;
    host.chunks_exact(18).enumerate().find_map(|(record, r)| {
        let mut a = [0.0f64; 18];
        for (x, y) in a.iter_mut().zip(r) {
            *x = Real::to_f64(*y);
        }
        let v = ColourMatrix::from_reals(&a);
        let unitarity = v.unitarity_deviation();
        let det_error = (v.determinant() - Complex::new(1.0, 0.0)).norm();
        (!(unitarity <= tol && det_error <= tol)).then(|| {
            format!(
                "link {record} (site {}, μ = {}) has ‖V†V − 1‖_F = {unitarity:.3e}, \
                 |det V − 1| = {det_error:.3e} (tolerance {tol:e})",
                record / subs.max(1),
                record % subs.max(1)
            )
        })
    })
}

/// Describes the set bits of a kernel status word ([`codegen::STATUS_NON_FINITE`], …)
/// in words, "; "-separated (empty for 0).
pub fn describe_status(status: u32) -> String {
    problems(status)
}

impl DeviceField {
    /// The value arrays and the per-site norms (fixed-point fermions), both mutable:
    /// for kernels that re-encode a field in place.
    pub fn buffers_mut(&mut self) -> (&mut CudaSlice<u8>, Option<&mut CudaSlice<f32>>) {
        (&mut self.values, self.norms.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bits_are_described() {
        assert_eq!(problems(0), "");
        assert_eq!(
            problems(codegen::STATUS_OVERFLOW | codegen::STATUS_CORRUPT),
            "a finite value beyond the format's range; corrupt data (a negative norm or the integer −2^(b−1))"
        );
    }

    /// Two sites of 4 identity links, link 5 (site 1, μ = 1) replaced by i·1: unitary,
    /// but det = i³ = −i, so |det − 1| = √2; ‖V†V − 1‖_F = 0.
    #[test]
    fn the_first_non_su3_link_is_named() {
        let identity = ColourMatrix::<f64>::identity().to_reals();
        let mut host: Vec<f64> = (0..8).flat_map(|_| identity).collect();
        assert_eq!(first_non_su3(&host, 4), None);
        for k in 0..3 {
            let diag = 5 * 18 + 2 * (3 * k + k);
            host[diag] = 0.0;
            host[diag + 1] = 1.0;
        }
        let found = first_non_su3(&host, 4).unwrap();
        assert!(found.starts_with("link 5 (site 1, μ = 1)"), "{found}");
        assert!(found.contains("‖V†V − 1‖_F = 0.000e0"), "{found}");
        assert!(found.contains("|det V − 1| = 1.414e0"), "{found}");
    }
}
