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

/// What a compilation returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// The PTX text (as bytes); the options name a virtual architecture `compute_XY`.
    Ptx,
    /// The assembled cubin; the options name a real architecture `sm_XY`.
    Cubin,
}

/// Compiles `source` (named `<name>.cu` in NVRTC's messages) with `options` and returns
/// `output`.
pub(crate) fn compile(
    source: &str,
    name: &str,
    options: &[String],
    output: Output,
) -> Result<Vec<u8>, Failure> {
    libs::nvrtc().map_err(|e| Failure::Unavailable(e.to_string()))?;
    libs::catch_cuda_panic("NVRTC", || compile_loaded(source, name, options, output))
        .map_err(Failure::Unavailable)?
}

/// [`compile`] once the library is known to load.
fn compile_loaded(
    source: &str,
    name: &str,
    options: &[String],
    output: Output,
) -> Result<Vec<u8>, Failure> {
    use cudarc::nvrtc::{result, sys};
    let unavailable =
        |what: &str, e: result::NvrtcError| Failure::Unavailable(format!("{what}: {e:?}"));
    let c = |s: &str, what: &str| {
        std::ffi::CString::new(s)
            .map_err(|_| Failure::Rejected(format!("the {what} contains a NUL byte")))
    };
    let (src, file) = (c(source, "source")?, c(&format!("{name}.cu"), "name")?);
    let options = options
        .iter()
        .map(|o| c(o, "option"))
        .collect::<Result<Vec<_>, _>>()?;
    let prog = result::create_program(&src, Some(&file))
        .map_err(|e| unavailable("nvrtcCreateProgram", e))?;
    // SAFETY: `prog` was created above and is destroyed once, at the end; `src`, `file`
    // and `options` outlive it; each buffer is sized by NVRTC's own size query.
    let out = unsafe {
        let compiled = result::compile_program(prog, &options);
        let out = match compiled {
            Err(_) => {
                let log = result::get_program_log(prog).unwrap_or_default();
                let log = std::ffi::CStr::from_ptr(log.as_ptr())
                    .to_string_lossy()
                    .into_owned();
                Err(Failure::Rejected(log))
            }
            Ok(()) => match output {
                Output::Ptx => result::get_ptx(prog)
                    .map(|p| {
                        let bytes: Vec<u8> = p.iter().map(|&b| b as u8).collect();
                        bytes.into_iter().take_while(|&b| b != 0).collect()
                    })
                    .map_err(|e| unavailable("nvrtcGetPTX", e)),
                Output::Cubin => {
                    let mut size = 0usize;
                    sys::nvrtcGetCUBINSize(prog, &mut size)
                        .result()
                        .map_err(|e| unavailable("nvrtcGetCUBINSize", e))
                        .and_then(|()| {
                            let mut cubin = vec![0u8; size];
                            sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast())
                                .result()
                                .map(|()| cubin)
                                .map_err(|e| unavailable("nvrtcGetCUBIN", e))
                        })
                }
            },
        };
        let _ = result::destroy_program(prog);
        out
    };
    out
}
