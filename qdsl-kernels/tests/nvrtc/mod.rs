//! A minimal NVRTC + ptxas driver for tests: compiles CUDA source to PTX through
//! libnvrtc (loaded with dlopen, no CUDA needed at build time) and reads `ptxas -v`'s
//! register and spill report. Both are found through `QDSL_NVRTC_LIB` / `QDSL_PTXAS`,
//! the dynamic loader's path, or the `nvidia-cuda-nvrtc` / `nvidia-cuda-nvcc` Python
//! wheels (site-packages/nvidia/cu13/{lib,bin}), the search of `build/toolchain_probe.rs`.
//! The tests that use it carry `#[cfg_attr(not(qdsl_nvrtc), ignore = ...)]`: where the
//! build script found no toolchain they are reported as ignored; where it did, a
//! toolchain that then fails to load fails the test.
#![allow(dead_code)]

mod probe {
    include!("../../../build/toolchain_probe.rs");
}

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::process::Command;

type Program = *mut c_void;
type Create = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type Compile = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int;
type GetSize = unsafe extern "C" fn(Program, *mut usize) -> c_int;
type Get = unsafe extern "C" fn(Program, *mut c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut Program) -> c_int;

/// libnvrtc, loaded.
pub struct Nvrtc {
    create: Create,
    compile: Compile,
    ptx_size: GetSize,
    ptx: Get,
    log_size: GetSize,
    log: Get,
    destroy: Destroy,
}

unsafe fn sym<T>(lib: *mut c_void, name: &str) -> Option<T> {
    let c = CString::new(name).ok()?;
    let p = libc::dlsym(lib, c.as_ptr());
    (!p.is_null()).then(|| std::mem::transmute_copy(&p))
}

impl Nvrtc {
    /// Loads libnvrtc.so.13, or explains why not.
    pub fn load() -> Result<Self, String> {
        let wheel = probe::find_wheel_dir();
        if let Some(d) = &wheel {
            // libnvrtc opens its builtins library by name: load it first, globally.
            if let Ok(b) = CString::new(
                d.join("lib/libnvrtc-builtins.so.13.0")
                    .to_string_lossy()
                    .into_owned(),
            ) {
                // SAFETY: dlopen with a valid C string.
                unsafe { libc::dlopen(b.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            }
        }
        let candidates: Vec<String> = probe::nvrtc_candidates(wheel.as_deref())
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        for c in &candidates {
            let name = CString::new(c.as_str()).map_err(|e| e.to_string())?;
            // SAFETY: dlopen/dlsym with valid C strings; the library stays loaded for the process.
            let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if lib.is_null() {
                continue;
            }
            unsafe {
                return Ok(Nvrtc {
                    create: sym(lib, "nvrtcCreateProgram").ok_or("no nvrtcCreateProgram")?,
                    compile: sym(lib, "nvrtcCompileProgram").ok_or("no nvrtcCompileProgram")?,
                    ptx_size: sym(lib, "nvrtcGetPTXSize").ok_or("no nvrtcGetPTXSize")?,
                    ptx: sym(lib, "nvrtcGetPTX").ok_or("no nvrtcGetPTX")?,
                    log_size: sym(lib, "nvrtcGetProgramLogSize")
                        .ok_or("no nvrtcGetProgramLogSize")?,
                    log: sym(lib, "nvrtcGetProgramLog").ok_or("no nvrtcGetProgramLog")?,
                    destroy: sym(lib, "nvrtcDestroyProgram").ok_or("no nvrtcDestroyProgram")?,
                });
            }
        }
        Err(format!("libnvrtc.so.13 not found (tried {candidates:?}); pip install nvidia-cuda-nvrtc==13.0.88"))
    }

    /// Compiles `source` for `arch` (e.g. "sm_90"): Ok(PTX) or Err(log).
    pub fn compile(&self, source: &str, name: &str, arch: &str) -> Result<String, String> {
        let src = CString::new(source).map_err(|e| e.to_string())?;
        let file = CString::new(format!("{name}.cu")).map_err(|e| e.to_string())?;
        let opts: Vec<CString> = [
            format!("--gpu-architecture={arch}"),
            "--std=c++17".into(),
            "-default-device".into(),
        ]
        .into_iter()
        .map(|o| CString::new(o).unwrap_or_default())
        .collect();
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: the NVRTC C API with valid pointers; buffers sized by the API's own queries.
        unsafe {
            let rc = (self.create)(
                &mut prog,
                src.as_ptr(),
                file.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if rc != 0 {
                return Err(format!("nvrtcCreateProgram failed: {rc}"));
            }
            let rc = (self.compile)(prog, opt_ptrs.len() as c_int, opt_ptrs.as_ptr());
            let mut n = 0usize;
            (self.log_size)(prog, &mut n);
            let mut log = vec![0u8; n.max(1)];
            (self.log)(prog, log.as_mut_ptr() as *mut c_char);
            let log = CStr::from_bytes_until_nul(&log)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            let result = if rc != 0 {
                Err(log)
            } else {
                let mut n = 0usize;
                (self.ptx_size)(prog, &mut n);
                let mut ptx = vec![0u8; n.max(1)];
                (self.ptx)(prog, ptx.as_mut_ptr() as *mut c_char);
                Ok(CStr::from_bytes_until_nul(&ptx)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default())
            };
            (self.destroy)(&mut prog);
            result
        }
    }
}

/// The `ptxas -v` report of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxasReport {
    /// Registers per thread.
    pub registers: u32,
    /// Spill store bytes.
    pub spill_stores: u32,
    /// Spill load bytes.
    pub spill_loads: u32,
}

/// The ptxas binary, or why not.
pub fn ptxas() -> Result<PathBuf, String> {
    probe::find_ptxas()
        .ok_or_else(|| "ptxas not found; pip install nvidia-cuda-nvcc==13.0.88".to_string())
}

/// Runs `ptxas -v -arch=<arch>` on PTX and parses registers and spills of every entry
/// function, in order: (name, report).
pub fn ptxas_report(
    ptxas: &PathBuf,
    ptx: &str,
    arch: &str,
    tag: &str,
) -> Result<Vec<(String, PtxasReport)>, String> {
    let dir = std::env::temp_dir().join(format!("qdsl-ptxas-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let input = dir.join(format!("{tag}.ptx"));
    std::fs::write(&input, ptx).map_err(|e| e.to_string())?;
    let out = Command::new(ptxas)
        .args(["-v", &format!("-arch={arch}"), "-o"])
        .arg(dir.join(format!("{tag}.cubin")))
        .arg(&input)
        .output()
        .map_err(|e| e.to_string())?;
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(text);
    }
    // "Compiling entry function 'NAME' for 'sm_90'", then "N bytes stack frame, N bytes
    // spill stores, N bytes spill loads" and "Used N registers, ...".
    let number_before = |line: &str, key: &str| -> Option<u32> {
        let pos = line.find(key)?;
        line[..pos].split_whitespace().last()?.parse().ok()
    };
    let mut reports: Vec<(String, PtxasReport)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            reports.push((
                name,
                PtxasReport {
                    registers: 0,
                    spill_stores: u32::MAX,
                    spill_loads: u32::MAX,
                },
            ));
        } else if let Some((_, r)) = reports.last_mut() {
            if let (Some(st), Some(ld)) = (
                number_before(line, " bytes spill stores"),
                number_before(line, " bytes spill loads"),
            ) {
                r.spill_stores = st;
                r.spill_loads = ld;
            }
            if let Some(n) = number_before(line, " registers") {
                r.registers = n;
            }
        }
    }
    if reports.is_empty() {
        return Err(format!("no entry functions in the ptxas report: {text}"));
    }
    Ok(reports)
}

/// libnvrtc with ptxas where found: what every NVRTC compile test starts from.
pub struct Toolchain {
    /// The loaded libnvrtc.
    pub nv: Nvrtc,
    /// The ptxas binary.
    pub ptxas: PathBuf,
}

impl Toolchain {
    /// Loads libnvrtc and finds ptxas, or panics saying which is missing (the tests that
    /// call this are ignored where the build found no toolchain).
    pub fn load() -> Self {
        let nv = Nvrtc::load().unwrap_or_else(|why| panic!("NVRTC: {why}"));
        let ptxas = ptxas().unwrap_or_else(|why| panic!("{why}"));
        Toolchain { nv, ptxas }
    }

    /// Compiles `source` (program `tag`) for `arch`, panicking with NVRTC's log on error,
    /// and asserts that every name of `entries` is an `.entry` of the PTX. Returns ptxas's
    /// per-entry report, each entry's registers printed;
    /// with `no_spills`, asserts that no entry spills (0 bytes stored and loaded).
    pub fn compile_checked(
        &self,
        source: &str,
        tag: &str,
        arch: &str,
        entries: &[String],
        no_spills: bool,
    ) -> Vec<(String, PtxasReport)> {
        let ptx = self
            .nv
            .compile(source, tag, arch)
            .unwrap_or_else(|log| panic!("{tag} {arch}:\n{log}"));
        for e in entries {
            assert!(
                ptx.contains(&format!(".entry {e}(")),
                "{tag}: entry {e} missing from the PTX"
            );
        }
        let reports = ptxas_report(&self.ptxas, &ptx, arch, tag).unwrap();
        for (entry, r) in &reports {
            if no_spills {
                assert_eq!(
                    (r.spill_stores, r.spill_loads),
                    (0, 0),
                    "{entry} spills on {arch}: {r:?}"
                );
            }
            eprintln!("{tag} {entry}: {} registers", r.registers);
        }
        reports
    }
}
