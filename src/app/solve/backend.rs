//! [`SolveBackend`]: where a solve runs, and how `cpu`, `cuda` and `auto` choose it.

use super::{Action, SolveError};
use qdsl_runtime::backend::{Backend, BackendChoice};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::operator::device::codegen_hash;
use qdsl_runtime::solver::device::DeviceContext;
use qdsl_runtime::tune::{default_path, Tuner};
use std::sync::Arc;

/// Where a solve runs.
#[derive(Clone, Debug)]
pub enum SolveBackend {
    /// Host fields and the generated Rust operators.
    Cpu,
    /// Device vectors and operators on a GPU.
    Cuda(Arc<DeviceContext>),
}

impl SolveBackend {
    /// The backend for `choice`: `cpu`, `cuda` (GPU 0, or an error saying why there is
    /// none) or `auto` (the GPU when a driver and a device are present, else the CPU
    /// after passing ONE line saying so and why to `notice`), as
    /// [`qdsl_runtime::backend::select_with`] decides. Operators are launched with the tune
    /// cache of [`default_path`].
    pub fn select(choice: BackendChoice, notice: &mut dyn FnMut(&str)) -> Result<Self, SolveError> {
        let open = || -> Result<Self, String> {
            let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
            let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()));
            let ctx = DeviceContext::new(gpu, tuner).map_err(|e| e.to_string())?;
            Ok(SolveBackend::Cuda(ctx))
        };
        match choice {
            BackendChoice::Cpu => Ok(SolveBackend::Cpu),
            BackendChoice::Cuda => open().map_err(SolveError::Backend),
            BackendChoice::Auto => Ok(open().unwrap_or_else(|why| {
                notice(&format!(
                    "qdsl: no usable GPU ({why}); using the CPU backend"
                ));
                SolveBackend::Cpu
            })),
        }
    }

    /// [`Self::select`] for `action`. Every action has a GPU operator, so the choice
    /// does not depend on it (the signature the command line calls).
    pub fn select_for(
        choice: BackendChoice,
        _action: Action,
        notice: &mut dyn FnMut(&str),
    ) -> Result<Self, SolveError> {
        Self::select(choice, notice)
    }

    /// "CPU", or "cuda (<GPU name>)".
    pub fn describe(&self) -> String {
        match self {
            SolveBackend::Cpu => "CPU".to_string(),
            SolveBackend::Cuda(ctx) => {
                let name = ctx
                    .gpu()
                    .backend()
                    .device()
                    .map_or_else(|| "unknown GPU".to_string(), |d| d.name.clone());
                format!("cuda ({name})")
            }
        }
    }
}
