// Where the CUDA toolchain that qdsl compiles kernels with lives: libnvrtc and ptxas.
//
// Plain `std` only, so that the build scripts of qdsl-kernels and qdsl-runtime (which
// decide whether the NVRTC tests can run) and the runtime's library loader
// (`qdsl_runtime::libs`) `include!` the same search.
//
// NVRTC is searched, in order:
// 1. `$QDSL_NVRTC_LIB` (a path to `libnvrtc.so.13`);
// 2. the bare name, for the dynamic loader's own search (`LD_LIBRARY_PATH`, the system);
// 3. a CUDA toolkit: `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`;
// 4. the `nvidia-cuda-nvrtc` Python wheel (`site-packages/nvidia/cu13/lib`), found by
//    asking `python3` (override the directory with `$QDSL_CUDA_WHEEL_DIR`, the `cu13`
//    directory).
// ptxas is `$QDSL_PTXAS` if set, else searched on `PATH`, then in `$CUDA_HOME/bin`, `$CUDA_PATH/bin`,
// `/usr/local/cuda/bin` and the `nvidia-cuda-nvcc` wheel's `bin`.

/// The soname qdsl loads NVRTC by.
pub const NVRTC_SONAME: &str = "libnvrtc.so.13";

/// The `nvidia/cu13` directory of the NVIDIA Python wheels: `$QDSL_CUDA_WHEEL_DIR`, else
/// asked from `python3`; `None` when neither gives an existing directory.
pub fn find_wheel_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("QDSL_CUDA_WHEEL_DIR") {
        let d = std::path::PathBuf::from(d);
        return d.is_dir().then_some(d);
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import nvidia; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = std::path::PathBuf::from(String::from_utf8(out.stdout).ok()?.trim()).join("cu13");
    dir.is_dir().then_some(dir)
}

/// The NVRTC candidates in search order (see the file's head); a bare name is for the
/// dynamic loader's search. `wheel` is [`find_wheel_dir`]'s answer.
pub fn nvrtc_candidates(wheel: Option<&std::path::Path>) -> Vec<std::path::PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("QDSL_NVRTC_LIB") {
        candidates.push(std::path::PathBuf::from(p));
    }
    candidates.push(std::path::PathBuf::from(NVRTC_SONAME));
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|h| !h.is_empty()) {
            candidates.push(std::path::PathBuf::from(home).join("lib64").join(NVRTC_SONAME));
        }
    }
    candidates.push(std::path::PathBuf::from("/usr/local/cuda/lib64").join(NVRTC_SONAME));
    if let Some(w) = wheel {
        candidates.push(w.join("lib").join(NVRTC_SONAME));
    }
    candidates
}

/// Whether a library file of NVRTC exists without loading it: a candidate path that
/// exists, or the bare soname in a directory of `LD_LIBRARY_PATH` or of the system's
/// library directories.
pub fn nvrtc_file_present() -> bool {
    let wheel = find_wheel_dir();
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu"] {
        dirs.push(std::path::PathBuf::from(d));
    }
    nvrtc_candidates(wheel.as_deref()).iter().any(|c| {
        if c.is_absolute() {
            c.is_file()
        } else {
            dirs.iter().any(|d| d.join(c).is_file())
        }
    })
}

/// The ptxas binary (see the file's head), or `None`.
pub fn find_ptxas() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("QDSL_PTXAS").map(std::path::PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|h| !h.is_empty()) {
            dirs.push(std::path::PathBuf::from(home).join("bin"));
        }
    }
    dirs.push(std::path::PathBuf::from("/usr/local/cuda/bin"));
    if let Some(w) = find_wheel_dir() {
        dirs.push(w.join("bin"));
    }
    dirs.into_iter().map(|d| d.join("ptxas")).find(|p| p.is_file())
}

/// For a build script: sets `cfg(qdsl_nvrtc)` where the toolchain is found (the crate's
/// NVRTC tests then run; elsewhere they are ignored, with the reason), and makes a missing
/// toolchain a build error under `QDSL_REQUIRE_NVRTC=1` (CI sets it). Reruns when any
/// variable of the search changes.
pub fn emit_nvrtc_cfg() {
    println!("cargo::rustc-check-cfg=cfg(qdsl_nvrtc)");
    for var in [
        "QDSL_REQUIRE_NVRTC",
        "QDSL_NVRTC_LIB",
        "QDSL_CUDA_WHEEL_DIR",
        "QDSL_PTXAS",
        "LD_LIBRARY_PATH",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=../build/toolchain_probe.rs");
    let nvrtc = nvrtc_file_present();
    let ptxas = find_ptxas().is_some();
    if nvrtc && ptxas {
        println!("cargo::rustc-cfg=qdsl_nvrtc");
    } else if std::env::var_os("QDSL_REQUIRE_NVRTC").is_some_and(|v| v == "1") {
        panic!(
            "QDSL_REQUIRE_NVRTC=1 but the CUDA toolchain is incomplete (libnvrtc found: \
             {nvrtc}, ptxas found: {ptxas}); `pip install nvidia-cuda-nvrtc==13.0.88 \
             nvidia-cuda-nvcc==13.0.88` and put its lib/ on LD_LIBRARY_PATH and bin/ on PATH"
        );
    }
}
