//! [`Gpu`]: one CUDA device with the JIT and the loaded functions — what device fields
//! and kernels need to run.

use super::format::UnsupportedFormat;
use crate::backend::{Backend, CudaBackend};
use crate::jit::register_cap::{cap_registers, RegisterCapError};
use crate::jit::{Jit, JitError, Work, WorkCounter};
use crate::tune::{Fingerprint, LaunchLimits};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, ValidAsZeroBits};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Errors of device fields and GPU work.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// No usable GPU.
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// The format has no device implementation.
    #[error(transparent)]
    Unsupported(#[from] UnsupportedFormat),
    /// A kernel could not be compiled.
    #[error(transparent)]
    Jit(#[from] JitError),
    /// A register cap could not be added to a kernel's PTX.
    #[error(transparent)]
    RegisterCap(#[from] RegisterCapError),
    /// The device has too little free memory.
    #[error("out of GPU memory allocating {what}: {requested} bytes requested, {free} bytes free of {total}")]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Bytes requested.
        requested: usize,
        /// Bytes free on the device at the time.
        free: usize,
        /// Device memory in bytes.
        total: usize,
    },
    /// A driver call failed.
    #[error("{what}: {message}")]
    Driver {
        /// What was being done.
        what: String,
        /// The driver's message.
        message: String,
    },
    /// A conversion kernel reported bad data.
    #[error("{kernel} reported {problems}")]
    Conversion {
        /// The kernel.
        kernel: String,
        /// What it found.
        problems: String,
    },
    /// Host and device shapes differ.
    #[error("shape mismatch: {0}")]
    Shape(String),
}

/// Turns a driver error into a [`DeviceError::Driver`] saying what was being done.
pub(crate) fn driver(
    what: impl Into<String>,
) -> impl FnOnce(cudarc::driver::DriverError) -> DeviceError {
    let what = what.into();
    move |e| DeviceError::Driver {
        what,
        message: e.to_string(),
    }
}

/// One build of a kernel to compile and load: the program's source, its extra NVRTC
/// options and an optional register cap ([`Gpu::function_built`]'s arguments).
#[derive(Clone, Copy, Debug)]
pub struct Build<'a> {
    /// The entry name (also the program's name).
    pub name: &'a str,
    /// The CUDA source.
    pub source: &'a str,
    /// Extra NVRTC options.
    pub extra: &'a [String],
    /// The register cap, if any.
    pub cap: Option<u32>,
}

/// The key of a build in the loaded-function map: name, options and cap.
fn build_key(name: &str, extra: &[String], cap: Option<u32>) -> String {
    let mut key = name.to_string();
    for o in extra {
        key += &format!("\0{o}");
    }
    if let Some(r) = cap {
        key += &format!("\0.maxnreg {r}");
    }
    key
}

/// The option lists `program` is compiled with: one per entry where its source guards
/// them ([`qdsl_core::dsl::KernelProgram::entry_builds`], in kernel order), else its
/// options alone.
pub fn program_builds(program: &qdsl_core::dsl::KernelProgram) -> Vec<Vec<String>> {
    program
        .entry_builds()
        .unwrap_or_else(|| vec![program.options.clone()])
}

/// Runs `work` on every item, in at most one thread per available core; the first error.
fn in_parallel<T: Sync>(
    items: &[T],
    work: impl Fn(&T) -> Result<(), DeviceError> + Sync,
) -> Result<(), DeviceError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().try_for_each(work);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<(), DeviceError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<(), DeviceError> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            return Ok(());
                        };
                        work(item)?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(DeviceError::Driver {
                        what: "a kernel build thread".into(),
                        message: "panicked".into(),
                    })
                })
            })
            .collect()
    });
    results.into_iter().collect()
}

/// A GPU ready to run generated code.
#[derive(Debug)]
pub struct Gpu {
    backend: CudaBackend,
    jit: Jit,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Whole programs loaded by [`Gpu::module`], by name and options.
    modules: Mutex<HashMap<String, std::sync::Arc<cudarc::driver::CudaModule>>>,
    /// Modules loaded (cubins copied; capped PTX assembled by the driver) and the time.
    loads: WorkCounter,
    /// sm_90 or later: programmatic dependent launches exist.
    sm90: bool,
    dependent_launch: AtomicBool,
}

impl Gpu {
    /// The GPU of `backend`, compiling with `jit`.
    pub fn new(backend: CudaBackend, jit: Jit) -> Self {
        let sm90 = backend.device().is_some_and(|d| d.arch.major >= 9);
        Self {
            backend,
            jit,
            functions: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            loads: WorkCounter::default(),
            sm90,
            dependent_launch: AtomicBool::new(sm90 && super::launch::dependent_launch_enabled()),
        }
    }

    /// GPU `ordinal` with the JIT of the documented cache locations ([`Jit::from_env`]).
    pub fn open(ordinal: usize) -> Result<Self, DeviceError> {
        let backend = CudaBackend::new(ordinal).map_err(DeviceError::NoGpu)?;
        Ok(Self::new(backend, Jit::from_env()?))
    }

    /// GPU `ordinal` as [`Self::open`], its work queued on a stream of its own that CUDA
    /// graphs can capture ([`CudaBackend::with_own_stream`]).
    pub fn open_capturable(ordinal: usize) -> Result<Self, DeviceError> {
        let backend = CudaBackend::with_own_stream(ordinal).map_err(DeviceError::NoGpu)?;
        Ok(Self::new(backend, Jit::from_env()?))
    }

    /// Whether generated stencil kernels are launched as programmatic dependents of the
    /// kernel before them ([`super::launch`]): on sm_90 and later, unless
    /// `QDSL_DEPENDENT_LAUNCH=0`.
    pub fn dependent_launch(&self) -> bool {
        self.dependent_launch.load(Ordering::Relaxed)
    }

    /// Turns dependent launches on or off (on only where the GPU has them); returns
    /// whether they are on.
    pub fn set_dependent_launch(&self, on: bool) -> bool {
        let on = on && self.sm90;
        self.dependent_launch.store(on, Ordering::Relaxed);
        on
    }

    /// The backend (context, stream, device properties).
    pub fn backend(&self) -> &CudaBackend {
        &self.backend
    }

    /// The JIT.
    pub fn jit(&self) -> &Jit {
        &self.jit
    }

    /// The function `name` of the program `source`, compiled for this device's
    /// architecture with `extra` options (cached on disk and in memory, per name and
    /// options).
    pub fn function(
        &self,
        name: &str,
        source: &str,
        extra: &[String],
    ) -> Result<CudaFunction, DeviceError> {
        self.load(name, source, extra, None)
    }

    /// The function `name` of `source` as [`Self::function`] builds it without extra
    /// options, limited to `max_registers` registers per thread: its PTX gets the
    /// `.maxnreg` directive ([`crate::jit::register_cap`]) before the driver assembles
    /// it. Loaded once per (name, cap).
    pub fn function_capped(
        &self,
        name: &str,
        source: &str,
        max_registers: u32,
    ) -> Result<CudaFunction, DeviceError> {
        self.load(name, source, &[], Some(max_registers))
    }

    /// The function `name` of `source` built with `extra` NVRTC options and, when given,
    /// a register cap (a tuner's compile knob); loaded once per (name, options, cap).
    pub fn function_built(
        &self,
        name: &str,
        source: &str,
        extra: &[String],
        max_registers: Option<u32>,
    ) -> Result<CudaFunction, DeviceError> {
        self.load(name, source, extra, max_registers)
    }

    /// Compiles to a cubin (capped: to PTX with `.maxnreg`), or reads it from the cache,
    /// and loads it; the in-memory map is
    /// keyed by name, options and cap. The map is not locked while compiling, so
    /// several threads may build different kernels at once ([`Self::preload`]).
    fn load(
        &self,
        name: &str,
        source: &str,
        extra: &[String],
        cap: Option<u32>,
    ) -> Result<CudaFunction, DeviceError> {
        let key = build_key(name, extra, cap);
        if let Some(f) = self.loaded(&key) {
            return Ok(f);
        }
        let arch = self
            .backend
            .device()
            .map(|d| d.arch)
            .ok_or_else(|| DeviceError::NoGpu("the backend has no device".into()))?;
        let image = match cap {
            // What first use loads: the cubin NVRTC assembled (a copy to load).
            None => {
                let cubin = self
                    .jit
                    .compile_cubin(name, source, arch, extra, None)?
                    .cubin;
                cudarc::nvrtc::Ptx::from_binary(cubin)
            }
            // A register cap (a compile knob of the full search, which tries several per
            // program): the one cached PTX with `.maxnreg`, assembled by the driver, costs
            // one ptxas run per cap where a capped cubin would cost a whole NVRTC
            // compilation.
            Some(r) => {
                let ptx = self.jit.compile(name, source, arch, extra)?.ptx;
                cudarc::nvrtc::Ptx::from_src(cap_registers(&ptx, name, r)?)
            }
        };
        let start = std::time::Instant::now();
        let module = self
            .backend
            .context()
            .load_module(image)
            .map_err(driver(format!("loading the module of {name}")))?;
        self.loads.add(start);
        crate::jit::trace::event("load", name, start);
        let f = module
            .load_function(name)
            .map_err(driver(format!("finding {name} in its module")))?;
        let mut map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map.entry(key).or_insert(f).clone())
    }

    /// The module of program `name` (`source` compiled with `extra` options, cubin
    /// cached), loaded once per name and options: for programs of several kernels.
    pub fn module(
        &self,
        name: &str,
        source: &str,
        extra: &[String],
    ) -> Result<std::sync::Arc<cudarc::driver::CudaModule>, DeviceError> {
        let key = build_key(name, extra, None);
        if let Some(m) = self
            .modules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(m.clone());
        }
        let arch = self
            .backend
            .device()
            .map(|d| d.arch)
            .ok_or_else(|| DeviceError::NoGpu("the backend has no device".into()))?;
        let cubin = self
            .jit
            .compile_cubin(name, source, arch, extra, None)?
            .cubin;
        let start = std::time::Instant::now();
        let module = self
            .backend
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(driver(format!("loading the module of {name}")))?;
        self.loads.add(start);
        crate::jit::trace::event("load", name, start);
        let mut map = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        Ok(map.entry(key).or_insert(module).clone())
    }

    /// The loaded function of a build key, if any.
    fn loaded(&self, key: &str) -> Option<CudaFunction> {
        let map = self.functions.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key).cloned()
    }

    /// Compiles and loads every build of `builds` not loaded yet, in parallel threads
    /// (NVRTC and the driver's assembler are thread-safe per program; at most one
    /// thread per available core): afterwards [`Self::function_built`] of each is a
    /// lookup. Returns the first error.
    pub fn preload(&self, builds: &[Build<'_>]) -> Result<(), DeviceError> {
        let missing: Vec<&Build<'_>> = builds
            .iter()
            .filter(|b| self.loaded(&build_key(b.name, b.extra, b.cap)).is_none())
            .collect();
        in_parallel(&missing, |b| {
            self.load(b.name, b.source, b.extra, b.cap).map(|_| ())
        })
    }

    /// Compiles and loads every build of `programs` not loaded yet ([`Self::module`];
    /// a program whose entries are guarded is one build per entry,
    /// [`program_builds`]), in parallel threads as [`Self::preload`]. Returns the first
    /// error.
    pub fn preload_programs(
        &self,
        programs: &[qdsl_core::dsl::KernelProgram],
    ) -> Result<(), DeviceError> {
        let missing: Vec<(&qdsl_core::dsl::KernelProgram, Vec<String>)> = {
            let map = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            programs
                .iter()
                .flat_map(|p| program_builds(p).into_iter().map(move |o| (p, o)))
                .filter(|(p, o)| !map.contains_key(&build_key(&p.name, o, None)))
                .collect()
        };
        in_parallel(&missing, |(p, o)| {
            self.module(&p.name, &p.source, o).map(|_| ())
        })
    }

    /// The modules loaded so far (cubins NVRTC assembled, which the driver only copies;
    /// capped builds' PTX, which it assembles) and the time.
    pub fn load_work(&self) -> Work {
        self.loads.get()
    }

    /// `n` zeroed elements of device memory for `what`; an out-of-memory error names the
    /// bytes requested and free (cuMemGetInfo).
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        what: &str,
        n: usize,
    ) -> Result<CudaSlice<T>, DeviceError> {
        let requested = n.saturating_mul(std::mem::size_of::<T>());
        let (free, total) = self
            .backend
            .memory()
            .map_err(|message| DeviceError::Driver {
                what: "cuMemGetInfo".into(),
                message,
            })?;
        let oom = |free| DeviceError::OutOfMemory {
            what: what.to_string(),
            requested,
            free,
            total,
        };
        if requested > free {
            return Err(oom(free));
        }
        self.backend
            .stream()
            .alloc_zeros::<T>(n.max(1))
            .map_err(|e| match self.backend.memory() {
                Ok((free, _)) if requested > free => oom(free),
                _ => driver(format!("allocating {requested} bytes for {what}"))(e),
            })
    }

    /// The launch limits of this device (threads per block, opt-in shared memory per
    /// block, shared memory per multiprocessor), for [`crate::tune::launch_candidates`].
    pub fn launch_limits(&self) -> Result<LaunchLimits, DeviceError> {
        let ctx = self.backend.context();
        let get = |a: CUdevice_attribute| {
            ctx.attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(driver(format!("reading {a:?}")))
        };
        Ok(LaunchLimits {
            max_block: get(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_shared_per_block: get(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            shared_per_sm: get(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
        })
    }

    /// The tune-cache fingerprint of this device and software, with the given hash of
    /// the code generator.
    pub fn fingerprint(&self, codegen_hash: &str) -> Fingerprint {
        let (major, minor) = self.jit.nvrtc_version();
        match self.backend.device() {
            Some(d) => Fingerprint::new(
                codegen_hash,
                &d.name,
                &d.arch.to_string(),
                &d.driver_version_string(),
                &format!("{major}.{minor}"),
            ),
            None => Fingerprint::new(codegen_hash, "", "", "", &format!("{major}.{minor}")),
        }
    }

    /// The device string of tune keys: name and architecture.
    pub fn device_key(&self) -> String {
        self.backend
            .device()
            .map_or_else(String::new, |d| format!("{} {}", d.name, d.arch))
    }

    /// The median time in µs of `reps` runs of `enqueue` (each timed between two device
    /// events on this GPU's stream) after `warmup` untimed runs. `enqueue` must only queue
    /// work on [`CudaBackend::stream`].
    pub fn time_us(
        &self,
        warmup: usize,
        reps: usize,
        mut enqueue: impl FnMut() -> Result<(), DeviceError>,
    ) -> Result<f64, DeviceError> {
        let stream = self.backend.stream();
        for _ in 0..warmup {
            enqueue()?;
        }
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
            let start = stream
                .record_event(flags)
                .map_err(driver("recording an event"))?;
            enqueue()?;
            let stop = stream
                .record_event(flags)
                .map_err(driver("recording an event"))?;
            stop.synchronize().map_err(driver("waiting for an event"))?;
            let ms = start
                .elapsed_ms(&stop)
                .map_err(driver("reading an event time"))?;
            times.push(f64::from(ms) * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
