//! NVRTC through cudarc, guarded: every entry point first makes sure the library is
//! loadable ([`crate::libs::nvrtc`]) so that cudarc never panics on a missing library.

use crate::libs;

/// NVRTC's version (major, minor), or why NVRTC cannot be loaded.
pub fn version() -> Result<(i32, i32), String> {
    libs::nvrtc().map_err(|e| e.to_string())?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through valid pointers; the library is loaded.
    let rc = libs::catch_cuda_panic("nvrtcVersion", || unsafe {
        cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    rc.result().map_err(|e| format!("nvrtcVersion: {e:?}"))?;
    Ok((major, minor))
}

/// How a compilation failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// NVRTC rejected the program; its log.
    Rejected(String),
    /// NVRTC could not run at all (not loadable, internal error).
    Unavailable(String),
}

/// Compiles `source` (named `<name>.cu` in NVRTC's messages) with `options`: the PTX text.
pub(crate) fn compile(source: &str, name: &str, options: &[String]) -> Result<String, Failure> {
    libs::nvrtc().map_err(|e| Failure::Unavailable(e.to_string()))?;
    let opts = cudarc::nvrtc::CompileOptions {
        options: options.to_vec(),
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    let result = libs::catch_cuda_panic("NVRTC", || {
        cudarc::nvrtc::compile_ptx_with_opts(source, opts)
    })
    .map_err(Failure::Unavailable)?;
    match result {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
            Err(Failure::Rejected(log.to_string_lossy().into_owned()))
        }
        Err(e) => Err(Failure::Unavailable(format!("NVRTC: {e}"))),
    }
}
