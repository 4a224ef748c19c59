//! The generated face kernels on the GPU ([`FaceKernel`]): pack a boundary slab of a
//! device field into a face buffer (in the wire format, times the face's sign) and unpack
//! a received buffer into a halo slab; spin-projected faces of Wilson-type hops carry half
//! spinors ([`qdsl_core::dsl::halo_spin`]).

use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::{DeviceError, DeviceField, Gpu};
use crate::operator::device::{device_spinor, stencil_interface, OperatorError};
use cudarc::driver::CudaStream;
use qdsl_core::dsl::emit::cuda::face::{FaceDirection, FaceKernel};
use qdsl_core::dsl::halo_spin::FaceProjection;
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::dsl::{KernelProgram, Variant};
use qdsl_core::lattice::{Lattice, SiteBox};

/// The pack and unpack kernels of one site shape and pair of formats, loaded: whole
/// sites, and each spin projection a face may carry.
#[derive(Debug)]
pub struct DeviceFaces {
    reals: usize,
    wire: StorageFormat,
    /// (projection, pack, unpack); the first entry moves whole sites.
    kernels: Vec<(Option<FaceProjection>, LoadedKernel, LoadedKernel)>,
}

impl DeviceFaces {
    /// The face kernels of fields of `reals` reals per site stored in `field`, sent in
    /// `wire` (the field's format, or fixed16 for f32 fields), whole sites only,
    /// compiled and loaded.
    pub fn new(
        gpu: &Gpu,
        reals: usize,
        field: StorageFormat,
        wire: StorageFormat,
    ) -> Result<Self, OperatorError> {
        Self::with_projections(gpu, reals, field, wire, &[])
    }

    /// The same with the kernels of spin-projected faces for each of `projections`
    /// (half spinors on the wire: [`qdsl_core::dsl::halo_spin`]), all in one program.
    pub fn with_projections(
        gpu: &Gpu,
        reals: usize,
        field: StorageFormat,
        wire: StorageFormat,
        projections: &[FaceProjection],
    ) -> Result<Self, OperatorError> {
        let mut wanted: Vec<Option<FaceProjection>> = vec![None];
        for &p in projections {
            if !wanted.contains(&Some(p)) {
                wanted.push(Some(p));
            }
        }
        // The interface maps each parameter role to its kind; the compute type is the
        // field's (the check makes the wire's the same).
        let formats = Variant {
            spinor: field,
            ..Variant::default()
        };
        let mut source = String::new();
        let mut interfaces = Vec::new();
        for (k, &projection) in wanted.iter().enumerate() {
            for (direction, tag) in [
                (FaceDirection::Pack, "pack"),
                (FaceDirection::Unpack, "unpack"),
            ] {
                let kernel = FaceKernel {
                    reals,
                    field,
                    wire,
                    direction,
                    projection,
                }
                .compile()?;
                // The whole-site pair keeps the namespaces it always had (its program's
                // source byte-identical); each projection's pair gets its own.
                let space = match k {
                    0 => tag.to_string(),
                    k => format!("{tag}{k}"),
                };
                source.push_str(&namespaced(&kernel.source, &space));
                interfaces.push(stencil_interface(&kernel, &formats));
            }
        }
        // The name says which projections the program holds: the GPU's modules are
        // cached by name, and programs of other projection sets must not share one.
        let projected: String = wanted
            .iter()
            .flatten()
            .map(|p| format!("_{}", p.tag()))
            .collect();
        let program = KernelProgram {
            name: format!(
                "qdsl_faces_r{reals}_{}_{}{projected}",
                field.name(),
                wire.name(),
            ),
            source,
            options: Vec::new(),
            kernels: interfaces,
        };
        let mut loaded = load_program(gpu, &program)?.into_iter();
        let mut kernels = Vec::new();
        for projection in wanted {
            let pack = loaded.next().ok_or_else(|| missing(&program.name))?;
            let unpack = loaded.next().ok_or_else(|| missing(&program.name))?;
            kernels.push((projection, pack, unpack));
        }
        Ok(Self {
            reals,
            wire,
            kernels,
        })
    }

    /// The loaded pair moving faces with `projection`.
    fn pair(
        &self,
        projection: Option<FaceProjection>,
    ) -> Result<(&LoadedKernel, &LoadedKernel), DeviceError> {
        self.kernels
            .iter()
            .find(|(p, _, _)| *p == projection)
            .map(|(_, pack, unpack)| (pack, unpack))
            .ok_or_else(|| {
                DeviceError::Shape(format!(
                    "no face kernel of the projection {projection:?} was compiled"
                ))
            })
    }

    /// A zero face buffer for the sites of one parity of `slab` in every one of `ls`
    /// slices, in the wire format (half spinors when `projected`).
    pub fn buffer(
        &self,
        gpu: &Gpu,
        slab: &SiteBox,
        ls: usize,
        projected: bool,
    ) -> Result<DeviceField, DeviceError> {
        let reals = if projected {
            HALF_SPINOR_REALS
        } else {
            self.reals
        };
        device_spinor(gpu, self.wire, reals, (slab.threads() * ls).max(1))
    }

    /// Queues on `stream` (a stream of the GPU the kernels were built for) buffer ←
    /// sign · (the parity-`parity` sites of `slab` of `field`, every slice; projected by
    /// `projection`); `lattice` is the field's (extended) lattice.
    #[allow(clippy::too_many_arguments)]
    pub fn pack(
        &self,
        stream: &CudaStream,
        lattice: &Lattice,
        field: &DeviceField,
        (parity, slab, ls): (usize, &SiteBox, usize),
        projection: Option<FaceProjection>,
        sign: f64,
        buffer: &mut DeviceField,
    ) -> Result<(), DeviceError> {
        if slab.is_empty() {
            return Ok(());
        }
        let (pack, _) = self.pair(projection)?;
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
        pack.launch_default_on(stream, [slab.threads(), ls, 1], a)
    }

    /// Queues on `stream` (a stream of the GPU the kernels were built for) the halo slab
    /// `slab` (parity `parity`, every slice) of `field` ← buffer (for a projected face:
    /// the halved reconstruction, what the hop's projection turns back into the sent
    /// half spinor exactly).
    pub fn unpack(
        &self,
        stream: &CudaStream,
        lattice: &Lattice,
        buffer: &DeviceField,
        (parity, slab, ls): (usize, &SiteBox, usize),
        projection: Option<FaceProjection>,
        field: &mut DeviceField,
    ) -> Result<(), DeviceError> {
        if slab.is_empty() {
            return Ok(());
        }
        let (_, unpack) = self.pair(projection)?;
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
        unpack.launch_default_on(stream, [slab.threads(), ls, 1], a)
    }
}

/// The kernel's source in a namespace of its own (the two kernels share helper names).
fn namespaced(source: &str, tag: &str) -> String {
    format!("namespace qdsl_face_{tag} {{\n{source}}}\n")
}

/// Reals of a half spinor (2 spins × 3 colours, complex).
const HALF_SPINOR_REALS: usize = 12;

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
