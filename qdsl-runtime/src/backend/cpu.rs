//! The CPU backend: generated Rust kernels run with rayon over sites.

use super::{Backend, BackendError, BackendKind, DeviceInfo};

/// The host CPU. Work runs synchronously on the rayon thread pool.
#[derive(Clone, Debug)]
pub struct CpuBackend {
    threads: usize,
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// The CPU backend with as many threads as the machine offers.
    pub fn new() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Hardware threads available to the kernels.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn describe(&self) -> String {
        format!("cpu: {} threads", self.threads)
    }

    fn device(&self) -> Option<&DeviceInfo> {
        None
    }

    /// CPU work is synchronous: nothing to wait for.
    fn synchronize(&self) -> Result<(), BackendError> {
        Ok(())
    }
}
