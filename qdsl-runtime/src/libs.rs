//! Finding the CUDA shared libraries at run time, without ever panicking.
//!
//! cudarc is built with `dynamic-loading`: it `dlopen`s `libcuda` and `libnvrtc` by name on
//! first use and **panics** if they are absent. Every CUDA path of qdsl therefore asks this
//! module first; it answers with a `Result`.
//!
//! NVRTC is searched, in order:
//! 1. `$QDSL_NVRTC_LIB` (a path to `libnvrtc.so.13`);
//! 2. the dynamic loader's own search (`LD_LIBRARY_PATH`, the system);
//! 3. a CUDA toolkit: `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`;
//! 4. the `nvidia-cuda-nvrtc` Python wheel (`site-packages/nvidia/cu13/lib`), found by
//!    asking `python3` (override the directory with `$QDSL_CUDA_WHEEL_DIR`, the `cu13`
//!    directory).
//!
//! A library found by path is loaded once and kept loaded for the life of the process;
//! since the loader matches an already-loaded library by its soname, cudarc's later
//! `dlopen("libnvrtc.so.13")` then finds it. `libnvrtc-builtins` of the same directory is
//! preloaded first, because NVRTC opens it by name.
//!
//! The driver (`libcuda.so.1`) is installed with the GPU driver and is only searched by
//! name.

use std::path::{Path, PathBuf};
use std::process::Command;
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

/// The `nvidia/cu13` directory of the NVIDIA Python wheels: `$QDSL_CUDA_WHEEL_DIR`, else
/// asked from `python3`; `None` when neither gives an existing directory.
pub fn wheel_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("QDSL_CUDA_WHEEL_DIR") {
            let d = PathBuf::from(d);
            return d.is_dir().then_some(d);
        }
        let out = Command::new("python3")
            .args(["-c", "import nvidia; print(list(nvidia.__path__)[0])"])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim()).join("cu13");
        dir.is_dir().then_some(dir)
    })
    .clone()
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
            let mut candidates: Vec<PathBuf> = Vec::new();
            if let Some(p) = std::env::var_os("QDSL_NVRTC_LIB") {
                candidates.push(PathBuf::from(p));
            }
            candidates.push(PathBuf::from("libnvrtc.so.13"));
            for var in ["CUDA_HOME", "CUDA_PATH"] {
                if let Some(home) = std::env::var_os(var).filter(|h| !h.is_empty()) {
                    candidates.push(PathBuf::from(home).join("lib64/libnvrtc.so.13"));
                }
            }
            candidates.push(PathBuf::from("/usr/local/cuda/lib64/libnvrtc.so.13"));
            let wheel = wheel_dir().map(|d| d.join("lib"));
            if let Some(lib) = &wheel {
                candidates.push(lib.join("libnvrtc.so.13"));
            }
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
