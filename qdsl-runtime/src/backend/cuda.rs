//! The CUDA backend: one GPU through the driver API (cudarc, dynamically loaded).
//!
//! Construction never panics: the driver library is probed first ([`crate::libs::driver`])
//! and the first driver calls run under [`crate::libs::catch_cuda_panic`] (cudarc panics
//! if the driver lacks a symbol it expects), so a machine without a GPU gets an error
//! message, which [`super::select`] turns into the CPU fallback.

use super::{Backend, BackendError, BackendKind};
use crate::jit::Arch;
use crate::libs;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// The properties of a GPU that kernels, caches and reports need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability, the `sm_XY` NVRTC compiles for.
    pub arch: Arch,
    /// Device memory in bytes.
    pub total_bytes: usize,
    /// Driver version as the driver reports it (1000·major + 10·minor, e.g. 13000).
    pub driver_version: i32,
}

impl DeviceInfo {
    /// The driver version as "major.minor".
    pub fn driver_version_string(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10
        )
    }
}

/// One GPU: its context, the stream work is queued on, and its properties.
#[derive(Debug)]
pub struct CudaBackend {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
}

/// The number of GPUs the driver sees; an error message (never a panic) when there is no
/// driver library or the driver fails.
pub fn gpu_count() -> Result<usize, String> {
    libs::driver().map_err(|e| e.to_string())?;
    libs::catch_cuda_panic("CUDA driver", || {
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| format!("counting the GPUs: {e}"))
    })?
}

impl CudaBackend {
    /// Opens GPU `ordinal`; an error message (never a panic) says why it cannot be used:
    /// no driver library, no device, or a driver error.
    pub fn new(ordinal: usize) -> Result<Self, String> {
        libs::driver().map_err(|e| e.to_string())?;
        libs::catch_cuda_panic("CUDA driver", || Self::open(ordinal))?
    }

    /// Opens GPU `ordinal` with a stream of its own instead of the legacy default
    /// stream: the stream a CUDA graph can capture (capture is refused on the legacy
    /// default stream), for the ranks of a decomposed lattice
    /// ([`crate::distributed::device::DeviceDistributedHop::with_graphs`]). It turns
    /// off cudarc's automatic event tracking on the context (as
    /// [`crate::distributed::device::exchange_stream`] does, for the same reason: every
    /// cross-stream use in qdsl is ordered explicitly), and the stream does not
    /// synchronise implicitly with the legacy default stream (no qdsl work goes there).
    pub fn with_own_stream(ordinal: usize) -> Result<Self, String> {
        libs::driver().map_err(|e| e.to_string())?;
        libs::catch_cuda_panic("CUDA driver", || {
            let mut backend = Self::open(ordinal)?;
            let err = |e: cudarc::driver::DriverError| format!("a stream on GPU {ordinal}: {e}");
            backend.context.bind_to_thread().map_err(err)?;
            // SAFETY: see above — no buffer is used on two streams without an explicit
            // event or host wait between the uses.
            unsafe { backend.context.disable_event_tracking() };
            backend.stream = backend.context.new_stream().map_err(err)?;
            Ok(backend)
        })?
    }

    fn open(ordinal: usize) -> Result<Self, String> {
        let context =
            CudaContext::new(ordinal).map_err(|e| format!("cannot open GPU {ordinal}: {e}"))?;
        let err = |e: cudarc::driver::DriverError| format!("querying GPU {ordinal}: {e}");
        let (major, minor) = context.compute_capability().map_err(err)?;
        let mut driver_version = 0;
        // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(err)?;
        let info = DeviceInfo {
            ordinal,
            name: context.name().map_err(err)?,
            arch: Arch::new(major as u32, minor as u32),
            total_bytes: context.total_mem().map_err(err)?,
            driver_version,
        };
        let stream = context.default_stream();
        Ok(Self {
            context,
            stream,
            info,
        })
    }

    /// The driver context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream all of this backend's work is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// (free, total) device memory in bytes (cuMemGetInfo).
    pub fn memory(&self) -> Result<(usize, usize), String> {
        self.context.mem_get_info().map_err(|e| e.to_string())
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn describe(&self) -> String {
        format!(
            "cuda: {} ({}, {:.1} GiB, driver {})",
            self.info.name,
            self.info.arch,
            self.info.total_bytes as f64 / (1u64 << 30) as f64,
            self.info.driver_version_string()
        )
    }

    fn device(&self) -> Option<&DeviceInfo> {
        Some(&self.info)
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        self.stream
            .synchronize()
            .map_err(|e| BackendError::CudaUnavailable(format!("synchronize: {e}")))
    }
}
