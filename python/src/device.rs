//! `device="cpu"|"gpu"`: where operators, solves and smearing run.

use crate::api::{BackendChoice, DeviceContext, SolveBackend};
use crate::errors::{value_error, DeviceUnavailable};
use pyo3::prelude::*;
use std::sync::Arc;

/// Where work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Host fields and the generated Rust code.
    Cpu,
    /// Device fields and the generated CUDA kernels (GPU 0).
    Gpu,
}

impl Device {
    /// "cpu" or "gpu" ("cuda" is accepted for "gpu").
    pub fn parse(name: &str) -> PyResult<Self> {
        match name {
            "cpu" => Ok(Device::Cpu),
            "gpu" | "cuda" => Ok(Device::Gpu),
            other => Err(value_error(format!(
                "device: expected \"cpu\" or \"gpu\", found {other:?}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        }
    }
}

/// The context of GPU 0 (with the tune cache the `qdsl` program uses), or
/// DeviceUnavailable saying why there is none.
pub fn gpu_context() -> PyResult<Arc<DeviceContext>> {
    match SolveBackend::select(BackendChoice::Cuda, &mut |_| {}) {
        Ok(SolveBackend::Cuda(ctx)) => Ok(ctx),
        Ok(SolveBackend::Cpu) => Err(DeviceUnavailable::new_err("no usable GPU")),
        Err(e) => Err(DeviceUnavailable::new_err(format!("no usable GPU: {e}"))),
    }
}

/// Whether a usable GPU is present (a driver and a device).
#[pyfunction]
pub fn gpu_available() -> bool {
    gpu_context().is_ok()
}
