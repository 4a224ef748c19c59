//! The one launcher of every kernel that is not a generated stencil: a
//! [`KernelInterface`] (entry name, parameters with their kinds, geometry) and a small
//! typed argument map ([`Args`]) bound by parameter name.
//!
//! [`bind`] walks the interface's parameters in signature order and takes each one's
//! argument from the map: a missing argument, one the kernel has no parameter for, or
//! one of the wrong kind (a read-only buffer for a written pointer, f32 elements for an
//! f64 pointer, a real for an integer, an integer beyond 32 bits, null where the kernel
//! dereferences) is a [`BindError`] naming the kernel and the parameter.
//! [`launch_function`] then queues the kernel with the geometry's grid over a 1- to 3-D
//! index space, with a default or tuned launch ([`crate::tune::LaunchConfig`];
//! [`super::tuned`] chooses one through the tuner).

use super::gpu::{driver, DeviceError, Gpu};
use super::launch::KernelArgs;
use crate::tune::LaunchConfig as TunedLaunch;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};
use qdsl_core::dsl::{Elem, KernelInterface, ParamKind};
use std::collections::BTreeMap;

/// An element type device buffers hold.
pub trait DeviceElem {
    /// Its [`Elem`].
    const ELEM: Elem;
}
impl DeviceElem for u8 {
    const ELEM: Elem = Elem::U8;
}
impl DeviceElem for i32 {
    const ELEM: Elem = Elem::I32;
}
impl DeviceElem for i64 {
    const ELEM: Elem = Elem::I64;
}
impl DeviceElem for f32 {
    const ELEM: Elem = Elem::F32;
}
impl DeviceElem for f64 {
    const ELEM: Elem = Elem::F64;
}

/// A device buffer a kernel reads, type-erased.
pub trait ReadBuffer {
    /// Its element type.
    fn elem(&self) -> Elem;
    /// Its device address and the record of the read (kept until the launch is queued).
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>);
}

/// A device buffer a kernel writes, type-erased.
pub trait WriteBuffer {
    /// Its element type.
    fn elem(&self) -> Elem;
    /// Its device address and the record of the write.
    fn address_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>);
}

impl<T: DeviceElem> ReadBuffer for CudaSlice<T> {
    fn elem(&self) -> Elem {
        T::ELEM
    }
    fn address<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

impl<T: DeviceElem> WriteBuffer for CudaSlice<T> {
    fn elem(&self) -> Elem {
        T::ELEM
    }
    fn address_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

/// One argument.
pub enum Arg<'a> {
    /// A buffer the kernel reads.
    Read(&'a dyn ReadBuffer),
    /// A buffer the kernel writes.
    Write(&'a mut dyn WriteBuffer),
    /// A null pointer (for a nullable buffer parameter).
    Null,
    /// An integer (bound to a 32-bit parameter if it fits).
    Int(i64),
    /// A real (rounded to the parameter's precision).
    Real(f64),
}

impl Arg<'_> {
    /// What the argument is, for error messages.
    fn describe(&self) -> String {
        match self {
            Arg::Read(b) => format!("a read-only {:?} buffer", b.elem()),
            Arg::Write(b) => format!("a written {:?} buffer", b.elem()),
            Arg::Null => "null".into(),
            Arg::Int(v) => format!("the integer {v}"),
            Arg::Real(v) => format!("the real {v}"),
        }
    }
}

/// The arguments of one launch, by parameter name.
#[derive(Default)]
pub struct Args<'a> {
    map: BTreeMap<String, Arg<'a>>,
}

impl<'a> Args<'a> {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `name` ← `arg` (a later value replaces an earlier one).
    pub fn set(&mut self, name: impl Into<String>, arg: Arg<'a>) -> &mut Self {
        self.map.insert(name.into(), arg);
        self
    }

    /// `name` reads `buffer`.
    pub fn read(&mut self, name: &str, buffer: &'a dyn ReadBuffer) -> &mut Self {
        self.set(name, Arg::Read(buffer))
    }

    /// `name` reads `buffer`, or is null.
    pub fn read_or_null(&mut self, name: &str, buffer: Option<&'a dyn ReadBuffer>) -> &mut Self {
        self.set(name, buffer.map_or(Arg::Null, Arg::Read))
    }

    /// `name` writes `buffer`.
    pub fn write(&mut self, name: &str, buffer: &'a mut dyn WriteBuffer) -> &mut Self {
        self.set(name, Arg::Write(buffer))
    }

    /// `name` writes `buffer`, or is null.
    pub fn write_or_null(
        &mut self,
        name: &str,
        buffer: Option<&'a mut dyn WriteBuffer>,
    ) -> &mut Self {
        self.set(name, buffer.map_or(Arg::Null, Arg::Write))
    }

    /// `name` = the integer `v`.
    pub fn int(&mut self, name: &str, v: impl Into<i64>) -> &mut Self {
        self.set(name, Arg::Int(v.into()))
    }

    /// `name` = the count `v` (a size; must fit the kernel's 32-bit parameter).
    pub fn count(&mut self, name: &str, v: usize) -> &mut Self {
        self.set(name, Arg::Int(i64::try_from(v).unwrap_or(i64::MAX)))
    }

    /// `name` = the real `v`.
    pub fn real(&mut self, name: &str, v: f64) -> &mut Self {
        self.set(name, Arg::Real(v))
    }
}

/// Why arguments do not fit a kernel.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// A parameter has no argument.
    #[error("{kernel}: no argument for parameter {param} ({expected})")]
    Missing {
        /// The kernel.
        kernel: String,
        /// The parameter.
        param: String,
        /// What it takes.
        expected: String,
    },
    /// An argument names no parameter.
    #[error("{kernel}: argument {param} is not a parameter of the kernel (parameters: {known})")]
    Extra {
        /// The kernel.
        kernel: String,
        /// The argument's name.
        param: String,
        /// The kernel's parameters.
        known: String,
    },
    /// An argument of the wrong kind.
    #[error("{kernel}: parameter {param} takes {expected}, found {found}")]
    Mistyped {
        /// The kernel.
        kernel: String,
        /// The parameter.
        param: String,
        /// What it takes.
        expected: String,
        /// What was given.
        found: String,
    },
}

impl From<BindError> for DeviceError {
    fn from(e: BindError) -> Self {
        DeviceError::Shape(e.to_string())
    }
}

/// What a parameter kind takes, in words.
fn expected(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Buffer {
            elem,
            write,
            nullable,
        } => format!(
            "a {} {elem:?} buffer{}",
            if *write { "written" } else { "read-only" },
            if *nullable { " or null" } else { "" }
        ),
        ParamKind::I32 => "a 32-bit integer".into(),
        ParamKind::I64 => "a 64-bit integer".into(),
        ParamKind::F32 => "an f32 real".into(),
        ParamKind::F64 => "an f64 real".into(),
    }
}

/// Whether `arg` fits a parameter of `kind`; what was found if not.
fn fits(kind: &ParamKind, arg: &Arg<'_>) -> Result<(), String> {
    let ok = match (kind, arg) {
        (
            ParamKind::Buffer {
                elem, write: false, ..
            },
            Arg::Read(b),
        ) => b.elem() == *elem,
        (
            ParamKind::Buffer {
                elem, write: true, ..
            },
            Arg::Write(b),
        ) => b.elem() == *elem,
        (ParamKind::Buffer { nullable, .. }, Arg::Null) => *nullable,
        (ParamKind::I32, Arg::Int(v)) => {
            return i32::try_from(*v)
                .map(|_| ())
                .map_err(|_| format!("the integer {v}, beyond 32 bits"))
        }
        (ParamKind::I64, Arg::Int(_)) | (ParamKind::F32 | ParamKind::F64, Arg::Real(_)) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(arg.describe())
    }
}

/// Checks `args` against `kernel`'s parameters without binding (see the module doc for
/// the errors): every parameter has an argument of its kind, and no argument is left.
pub fn check(kernel: &KernelInterface, args: &Args<'_>) -> Result<(), BindError> {
    if let Some(extra) = args
        .map
        .keys()
        .find(|k| !kernel.params.iter().any(|p| &p.name == *k))
    {
        return Err(BindError::Extra {
            kernel: kernel.name.clone(),
            param: extra.clone(),
            known: kernel
                .params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    for p in &kernel.params {
        let arg = args.map.get(&p.name).ok_or_else(|| BindError::Missing {
            kernel: kernel.name.clone(),
            param: p.name.clone(),
            expected: expected(&p.kind),
        })?;
        fits(&p.kind, arg).map_err(|found| BindError::Mistyped {
            kernel: kernel.name.clone(),
            param: p.name.clone(),
            expected: expected(&p.kind),
            found,
        })?;
    }
    Ok(())
}

/// The parameter values of `kernel` from `args` on `stream`, in signature order, after
/// [`check`].
pub fn bind<'a>(
    kernel: &KernelInterface,
    mut args: Args<'a>,
    stream: &'a CudaStream,
) -> Result<KernelArgs<'a>, BindError> {
    check(kernel, &args)?;
    let mut out = KernelArgs::new(stream);
    for p in &kernel.params {
        // `check` found every parameter's argument, of its kind.
        match args.map.remove(&p.name) {
            Some(Arg::Read(b)) => {
                let (ptr, record) = b.address(stream);
                out.pointer(ptr, record);
            }
            Some(Arg::Write(b)) => {
                let (ptr, record) = b.address_mut(stream);
                out.pointer(ptr, record);
            }
            Some(Arg::Null) | None => {
                out.null();
            }
            Some(Arg::Int(v)) if p.kind == ParamKind::I64 => {
                out.i64(v);
            }
            Some(Arg::Int(v)) => {
                out.i32(v as i32);
            }
            Some(Arg::Real(v)) if p.kind == ParamKind::F32 => {
                out.f32(v as f32);
            }
            Some(Arg::Real(v)) => {
                out.f64(v);
            }
        }
    }
    Ok(out)
}

/// Queues `function` (with `interface`) on `stream` (a stream of the function's GPU:
/// its own, or e.g. the exchange's stream for a face unpacked as soon as it arrived)
/// over `work` items with the launch `cfg` (its
/// block, a fixed block of the geometry winning; its grid along x where the geometry's
/// launch space tunes the grid, else the grid covering the work,
/// [`qdsl_core::dsl::Geometry::grid_tuned`]; the geometry's shared memory of the block
/// plus `cfg.shared_bytes`, the tuner's occupancy throttling), binding `args` by name;
/// `dependent`: as a programmatic dependent ([`super::launch`]; only for kernels that
/// wait on their grid dependency before touching memory).
#[allow(clippy::too_many_arguments)]
pub fn launch_function<'a>(
    stream: &'a CudaStream,
    function: &CudaFunction,
    interface: &KernelInterface,
    work: [usize; 3],
    cfg: &TunedLaunch,
    dependent: bool,
    args: Args<'a>,
) -> Result<(), DeviceError> {
    let g = &interface.geometry;
    let block = g.block(cfg.block);
    let grid = g.grid_tuned(work, block, cfg.grid[0]);
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (grid[0], grid[1], grid[2]),
        block_dim: (block[0], block[1], block[2]),
        shared_mem_bytes: g.shared(block).saturating_add(cfg.shared_bytes),
    };
    let values = bind(interface, args, stream)?;
    // SAFETY: `bind` checked every argument against the interface's parameter list
    // (number, order by name, pointer element types and access, scalar types), which is
    // the kernel's signature (CPU tests compare the two for every program); the callers
    // size the buffers for `work` items, and a grid below the covering one is taken only
    // by grid-stride kernels (their launch space says so).
    unsafe { values.launch(function, cfg, dependent) }
        .map_err(driver(format!("launching {}", interface.name)))
}

/// A loaded kernel with its interface.
#[derive(Clone, Debug)]
pub struct LoadedKernel {
    /// The interface.
    pub interface: KernelInterface,
    /// The function.
    pub function: CudaFunction,
}

impl LoadedKernel {
    /// Queues the kernel over `work` items (x, y, z) with the block `block` (a fixed
    /// block of the geometry wins) and the grid covering the work on the GPU's stream,
    /// binding `args` by name.
    pub fn launch<'a>(
        &self,
        gpu: &'a Gpu,
        work: [usize; 3],
        block: [u32; 3],
        args: Args<'a>,
    ) -> Result<(), DeviceError> {
        let cfg = TunedLaunch::of(&self.interface.geometry, work, block, None, 0);
        self.launch_with(gpu, work, &cfg, args)
    }

    /// Queues the kernel over `work` items with the (tuned) launch `cfg`
    /// ([`launch_function`]), binding `args` by name.
    pub fn launch_with<'a>(
        &self,
        gpu: &'a Gpu,
        work: [usize; 3],
        cfg: &TunedLaunch,
        args: Args<'a>,
    ) -> Result<(), DeviceError> {
        self.launch_on(gpu.backend().stream(), work, cfg, args)
    }

    /// Queues the kernel over `work` items with its launch space's default launch.
    pub fn launch_default<'a>(
        &self,
        gpu: &'a Gpu,
        work: [usize; 3],
        args: Args<'a>,
    ) -> Result<(), DeviceError> {
        self.launch_default_on(gpu.backend().stream(), work, args)
    }

    /// [`Self::launch_default`] on `stream`, a stream of the kernel's GPU.
    pub fn launch_default_on<'a>(
        &self,
        stream: &'a CudaStream,
        work: [usize; 3],
        args: Args<'a>,
    ) -> Result<(), DeviceError> {
        let cfg = TunedLaunch::default_of(&self.interface.geometry, work);
        self.launch_on(stream, work, &cfg, args)
    }

    /// Queues the kernel on `stream` over `work` items with the launch `cfg`
    /// ([`launch_function`], not as a programmatic dependent).
    fn launch_on<'a>(
        &self,
        stream: &'a CudaStream,
        work: [usize; 3],
        cfg: &TunedLaunch,
        args: Args<'a>,
    ) -> Result<(), DeviceError> {
        launch_function(
            stream,
            &self.function,
            &self.interface,
            work,
            cfg,
            false,
            args,
        )
    }
}

/// Loads every kernel of `program` (compiled once, PTX cached): from one module, or, for
/// a program whose entries are guarded, each from its own build, the builds compiled in
/// parallel ([`Gpu::preload_programs`]).
pub fn load_program(
    gpu: &Gpu,
    program: &qdsl_core::dsl::KernelProgram,
) -> Result<Vec<LoadedKernel>, DeviceError> {
    gpu.preload_programs(std::slice::from_ref(program))?;
    let builds = super::gpu::program_builds(program);
    program
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            // One build per entry, or one for all (then `builds` has one element).
            let options = &builds[i.min(builds.len() - 1)];
            let module = gpu.module(&program.name, &program.source, options)?;
            let function = module
                .load_function(&k.name)
                .map_err(driver(format!("finding {} in {}", k.name, program.name)))?;
            Ok(LoadedKernel {
                interface: k.clone(),
                function,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
