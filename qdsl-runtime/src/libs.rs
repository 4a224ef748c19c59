//! Finding the CUDA shared libraries at run time, without ever panicking.
//!
//! cudarc is built with `dynamic-loading`: it `dlopen`s `libcuda` and `libnvrtc` by name on
//! first use and **panics** if they are absent. Every CUDA path of qdsl therefore asks this
//! module first; it answers with a `Result`.
//!
//! NVRTC is searched in the order of `build/toolchain_probe.rs` (included here as
//! [`probe`], the same search the build scripts use to decide whether the NVRTC tests
//! can run): `$QDSL_NVRTC_LIB`, the loader's own search, a CUDA toolkit, the
//! `nvidia-cuda-nvrtc` Python wheel.
//!
//! A library found by path is loaded once and kept loaded for the life of the process;
//! since the loader matches an already-loaded library by its soname, cudarc's later
//! `dlopen("libnvrtc.so.13")` then finds it. `libnvrtc-builtins` of the same directory is
//! preloaded first, because NVRTC opens it by name.
//!
//! The driver (`libcuda.so.1`) is installed with the GPU driver and is only searched by
//! name.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Why a CUDA library cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{library} could not be loaded (tried: {tried}); {hint}")]
pub struct LibraryMissing {
    /// The library ("libnvrtc.so.13", "libcuda.so.1").
    pub library: String,
    /// What was tried, comma-separated.
    pub tried: String,
    /// How to provide it.
    pub hint: String,
}

/// The toolchain search shared with the build scripts.
pub mod probe {
    #![allow(dead_code)]
    include!("../../build/toolchain_probe.rs");
}

/// The `nvidia/cu13` directory of the NVIDIA Python wheels ([`probe::find_wheel_dir`]),
/// looked up once per process.
pub fn wheel_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(probe::find_wheel_dir).clone()
}

/// Loads a library by `path` (absolute or a bare name for the loader's search) and keeps
/// it loaded for the rest of the process.
fn load_forever(path: &Path) -> bool {
    // SAFETY: loading a shared library runs its initialisers; the NVIDIA libraries loaded
    // here have no initialisers with preconditions on the caller.
    match unsafe { libloading::Library::new(path) } {
        Ok(lib) => {
            std::mem::forget(lib);
            true
        }
        Err(_) => false,
    }
}

/// Makes NVRTC loadable by cudarc (see the module doc for the search order), once per
/// process; returns where it was found.
pub fn nvrtc() -> Result<String, LibraryMissing> {
    static FOUND: OnceLock<Result<String, LibraryMissing>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let mut tried = Vec::new();
            let candidates = probe::nvrtc_candidates(wheel_dir().as_deref());
            for c in candidates {
                tried.push(c.display().to_string());
                if let Some(dir) = c.parent().filter(|d| !d.as_os_str().is_empty()) {
                    load_forever(&dir.join("libnvrtc-builtins.so.13.0"));
                }
                // SAFETY: cudarc's probe only dlopens the candidate names.
                if load_forever(&c) && unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                    return Ok(c.display().to_string());
                }
            }
            Err(LibraryMissing {
                library: "libnvrtc.so.13".into(),
                tried: tried.join(", "),
                hint: "set QDSL_NVRTC_LIB or LD_LIBRARY_PATH, or `pip install \
                       nvidia-cuda-nvrtc==13.0.88`"
                    .into(),
            })
        })
        .clone()
}

/// Checks that the CUDA driver library can be loaded by cudarc.
pub fn driver() -> Result<(), LibraryMissing> {
    // SAFETY: cudarc's probe only dlopens candidate names and closes them again.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(LibraryMissing {
            library: "libcuda.so.1".into(),
            tried: "the dynamic loader's search path".into(),
            hint: "no NVIDIA driver is installed on this machine".into(),
        })
    }
}

/// Runs `f`, turning a panic (cudarc panics when a symbol is missing from an old driver)
/// into an error message.
pub fn catch_cuda_panic<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        format!("{what}: {msg}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        // This machine may or may not have a driver; either answer is fine, a panic is not.
        let r = catch_cuda_panic("probe", driver);
        assert!(r.is_ok());
        let e = LibraryMissing {
            library: "libx.so".into(),
            tried: "a, b".into(),
            hint: "install x".into(),
        };
        assert_eq!(
            e.to_string(),
            "libx.so could not be loaded (tried: a, b); install x"
        );
    }

    #[test]
    fn catch_cuda_panic_reports_the_message() {
        let r: Result<(), String> = catch_cuda_panic("load", || panic!("Missing symbol cuFoo"));
        assert_eq!(r.unwrap_err(), "load: Missing symbol cuFoo");
    }
}
