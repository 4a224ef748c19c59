//! Backends: where kernels run. One interface ([`Backend`]), two implementations:
//! [`CpuBackend`] (the generated Rust, rayon over sites) and [`CudaBackend`] (cudarc:
//! driver + NVRTC, loaded dynamically).
//!
//! # Selection
//!
//! The user's choice ([`BackendChoice`]) comes from the `--backend` command-line flag if
//! given, else from `$QDSL_BACKEND` (`cpu`, `cuda` or `auto`), else `auto`.
//! [`select`] then returns:
//!
//! * `cpu`: the CPU backend;
//! * `cuda`: the CUDA backend, or an error saying why there is none;
//! * `auto`: the CUDA backend when a driver and a device are present; otherwise the CPU
//!   backend, after printing ONE line to stderr that says so and why.

mod cpu;
mod cuda;

pub use cpu::CpuBackend;
pub use cuda::{gpu_count, CudaBackend, DeviceInfo};

use std::fmt;
use std::str::FromStr;

/// The environment variable holding the default [`BackendChoice`].
pub const BACKEND_ENV: &str = "QDSL_BACKEND";

/// Which kind of machine a backend runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The host CPU.
    Cpu,
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
        })
    }
}

/// What the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The GPU if usable, else the CPU (with one line saying so).
    #[default]
    Auto,
    /// The CPU, always.
    Cpu,
    /// The GPU, or an error.
    Cuda,
}

/// A backend name that is not `cpu`, `cuda` or `auto`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend {found:?}: expected cpu, cuda or auto")]
pub struct UnknownBackend {
    /// The name given.
    pub found: String,
}

impl FromStr for BackendChoice {
    type Err = UnknownBackend;

    /// Parses `cpu`, `cuda` or `auto` (case-insensitive, surrounding spaces ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" | "gpu" => Ok(BackendChoice::Cuda),
            _ => Err(UnknownBackend {
                found: s.to_string(),
            }),
        }
    }
}

impl BackendChoice {
    /// The effective choice: `flag` if given, else the value of [`BACKEND_ENV`] (`env`,
    /// passed in so that tests need not touch the process environment), else `Auto`.
    /// An empty variable counts as unset.
    pub fn resolve(flag: Option<BackendChoice>, env: Option<&str>) -> Result<Self, UnknownBackend> {
        match (flag, env) {
            (Some(c), _) => Ok(c),
            (None, Some(v)) if !v.trim().is_empty() => v.parse(),
            _ => Ok(BackendChoice::Auto),
        }
    }

    /// [`Self::resolve`] with the process environment.
    pub fn from_env(flag: Option<BackendChoice>) -> Result<Self, UnknownBackend> {
        Self::resolve(flag, std::env::var(BACKEND_ENV).ok().as_deref())
    }
}

/// Errors of backend selection.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The user asked for a backend name that does not exist.
    #[error(transparent)]
    Unknown(#[from] UnknownBackend),
    /// CUDA was asked for but cannot be used.
    #[error("the CUDA backend is not available: {0}")]
    CudaUnavailable(String),
}

/// One interface over the machines kernels run on. Operators and solvers (built on this
/// crate's kernels) take a `&dyn Backend`.
pub trait Backend: Send + Sync {
    /// Which kind of machine this is.
    fn kind(&self) -> BackendKind;

    /// One line describing the machine, e.g. `cuda: NVIDIA H100 80GB HBM3 (sm_90, 79.1
    /// GiB)` or `cpu: 16 threads`.
    fn describe(&self) -> String;

    /// The GPU's properties, `None` on the CPU.
    fn device(&self) -> Option<&DeviceInfo>;

    /// Waits until all work submitted to this backend has finished.
    fn synchronize(&self) -> Result<(), BackendError>;
}

/// The backend for `choice` (see the module doc). `notice` receives the one line printed
/// when `Auto` falls back to the CPU ([`select`] passes stderr).
pub fn select_with(
    choice: BackendChoice,
    notice: &mut dyn FnMut(&str),
) -> Result<Box<dyn Backend>, BackendError> {
    match choice {
        BackendChoice::Cpu => Ok(Box::new(CpuBackend::new())),
        BackendChoice::Cuda => Ok(Box::new(
            CudaBackend::new(0).map_err(BackendError::CudaUnavailable)?,
        )),
        BackendChoice::Auto => match CudaBackend::new(0) {
            Ok(b) => Ok(Box::new(b)),
            Err(why) => {
                notice(&format!(
                    "qdsl: no usable GPU ({why}); using the CPU backend"
                ));
                Ok(Box::new(CpuBackend::new()))
            }
        },
    }
}

/// [`select_with`] printing the fallback notice to stderr.
pub fn select(choice: BackendChoice) -> Result<Box<dyn Backend>, BackendError> {
    select_with(choice, &mut |line| eprintln!("{line}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_reject_unknown_names() {
        assert_eq!(" CPU ".parse(), Ok(BackendChoice::Cpu));
        assert_eq!("cuda".parse(), Ok(BackendChoice::Cuda));
        assert_eq!("auto".parse(), Ok(BackendChoice::Auto));
        let e = "tpu".parse::<BackendChoice>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown backend \"tpu\": expected cpu, cuda or auto"
        );
    }

    #[test]
    fn the_flag_overrides_the_environment() {
        use BackendChoice::*;
        assert_eq!(BackendChoice::resolve(Some(Cpu), Some("cuda")), Ok(Cpu));
        assert_eq!(BackendChoice::resolve(None, Some("cuda")), Ok(Cuda));
        assert_eq!(BackendChoice::resolve(None, Some("")), Ok(Auto));
        assert_eq!(BackendChoice::resolve(None, None), Ok(Auto));
        assert!(BackendChoice::resolve(None, Some("x")).is_err());
    }

    #[test]
    fn cpu_is_always_available_and_auto_always_succeeds() {
        let mut lines = Vec::new();
        let cpu = select_with(BackendChoice::Cpu, &mut |l| lines.push(l.to_string())).unwrap();
        assert_eq!(cpu.kind(), BackendKind::Cpu);
        assert!(cpu.device().is_none());
        assert!(lines.is_empty());
        let auto = select_with(BackendChoice::Auto, &mut |l| lines.push(l.to_string())).unwrap();
        match auto.kind() {
            // Fallback: exactly one line, naming the CPU backend.
            BackendKind::Cpu => {
                assert_eq!(lines.len(), 1);
                assert!(lines[0].contains("using the CPU backend"), "{}", lines[0]);
            }
            BackendKind::Cuda => assert!(lines.is_empty()),
        }
        auto.synchronize().unwrap();
    }

    #[test]
    fn asking_for_cuda_without_a_gpu_is_an_error_not_a_panic() {
        if let Err(e) = select_with(BackendChoice::Cuda, &mut |_| {}) {
            assert!(e
                .to_string()
                .starts_with("the CUDA backend is not available: "));
        }
    }
}
