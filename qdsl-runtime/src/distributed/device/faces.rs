//! The generated face kernels on the GPU ([`FaceKernel`]): pack a boundary slab of a
//! device field into a face buffer (in the wire format, times the face's sign) and unpack
//! a received buffer into a halo slab.

use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, DeviceField, Gpu};
use crate::operator::device::{device_spinor, stencil_interface, OperatorError};
use qdsl_core::dsl::emit::cuda::face::{FaceDirection, FaceKernel};
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::dsl::{KernelProgram, Variant};
use qdsl_core::lattice::{Lattice, SiteBox};

/// The pack and unpack kernels of one site shape and pair of formats, loaded.
#[derive(Debug)]
pub struct DeviceFaces {
    reals: usize,
    wire: StorageFormat,
    pack: LoadedKernel,
    unpack: LoadedKernel,
}

impl DeviceFaces {
    /// The face kernels of fields of `reals` reals per site stored in `field`, sent in
    /// `wire` (the field's format, or fixed16 for f32 fields), compiled and loaded.
    pub fn new(
        gpu: &Gpu,
        reals: usize,
        field: StorageFormat,
        wire: StorageFormat,
    ) -> Result<Self, OperatorError> {
        let kernel = |direction| FaceKernel {
            reals,
            field,
            wire,
            direction,
        };
        let pack = kernel(FaceDirection::Pack).compile()?;
        let unpack = kernel(FaceDirection::Unpack).compile()?;
        // The interface maps each parameter role to its kind; the compute type is the
        // field's (the check makes the wire's the same).
        let formats = Variant {
            spinor: field,
            ..Variant::default()
        };
        let program = KernelProgram {
            name: format!("qdsl_faces_r{reals}_{}_{}", field.name(), wire.name()),
            source: format!(
                "{}\n{}",
                namespaced(&pack.source, "pack"),
                namespaced(&unpack.source, "unpack")
            ),
            options: Vec::new(),
            kernels: vec![
                stencil_interface(&pack, &formats),
                stencil_interface(&unpack, &formats),
            ],
        };
        let mut loaded = load_program(gpu, &program)?;
        let unpack = loaded.pop().ok_or_else(|| missing(&program.name))?;
        let pack = loaded.pop().ok_or_else(|| missing(&program.name))?;
        Ok(Self {
            reals,
            wire,
            pack,
            unpack,
        })
    }

    /// A zero face buffer for the sites of one parity of `slab` in every one of `ls`
    /// slices, in the wire format.
    pub fn buffer(&self, gpu: &Gpu, slab: &SiteBox, ls: usize) -> Result<DeviceField, DeviceError> {
        device_spinor(gpu, self.wire, self.reals, (slab.threads() * ls).max(1))
    }

    /// Queues buffer ← sign · (the parity-`parity` sites of `slab` of `field`, every
    /// slice) on the GPU's stream; `lattice` is the field's (extended) lattice.
    #[allow(clippy::too_many_arguments)]
    pub fn pack(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        field: &DeviceField,
        parity: usize,
        slab: &SiteBox,
        ls: usize,
        sign: f64,
        buffer: &mut DeviceField,
    ) -> Result<(), DeviceError> {
        if slab.is_empty() {
            return Ok(());
        }
        let mut a = Args::new();
        a.read("f_field", field.values());
        if let Some(n) = field.norms() {
            a.read("norm_field", n);
        }
        let stride_face = buffer.layout().stride;
        let (values, norms) = buffer.buffers_mut();
        a.write("f_face", values);
        if let Some(n) = norms {
            a.write("norm_face", n);
        }
        a.real("sign", sign);
        bind_box(
            &mut a,
            lattice,
            slab,
            parity,
            field.layout().stride,
            stride_face,
        );
        self.pack.launch_default(gpu, [slab.threads(), ls, 1], a)
    }

    /// Queues the halo slab `slab` (parity `parity`, every slice) of `field` ← buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn unpack(
        &self,
        gpu: &Gpu,
        lattice: &Lattice,
        buffer: &DeviceField,
        parity: usize,
        slab: &SiteBox,
        ls: usize,
        field: &mut DeviceField,
    ) -> Result<(), DeviceError> {
        if slab.is_empty() {
            return Ok(());
        }
        let mut a = Args::new();
        a.read("f_face", buffer.values());
        if let Some(n) = buffer.norms() {
            a.read("norm_face", n);
        }
        let stride_field = field.layout().stride;
        let (values, norms) = field.buffers_mut();
        a.write("f_field", values);
        if let Some(n) = norms {
            a.write("norm_field", n);
        }
        bind_box(
            &mut a,
            lattice,
            slab,
            parity,
            stride_field,
            buffer.layout().stride,
        );
        self.unpack.launch_default(gpu, [slab.threads(), ls, 1], a)
    }
}

/// The kernel's source in a namespace of its own (the two kernels share helper names).
fn namespaced(source: &str, tag: &str) -> String {
    format!("namespace qdsl_face_{tag} {{\n{source}}}\n")
}

fn missing(program: &str) -> DeviceError {
    DeviceError::Shape(format!("{program}: a face kernel is missing"))
}

/// The extents, the slab (threads, corner, extents), the parity and the strides.
fn bind_box(
    a: &mut Args<'_>,
    lattice: &Lattice,
    slab: &SiteBox,
    parity: usize,
    stride_field: usize,
    stride_face: usize,
) {
    for (mu, l) in lattice.dims().into_iter().enumerate() {
        a.count(&format!("L{mu}"), l);
        a.count(&format!("box_lo{mu}"), slab.lo[mu]);
        a.count(&format!("box_n{mu}"), slab.n[mu]);
    }
    a.count("n_out", slab.threads());
    a.count("parity", parity);
    a.count("stride_field", stride_field);
    a.count("stride_face", stride_face);
}
