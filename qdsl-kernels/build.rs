//! Generates the kernel registry from the specs (`build_registry.rs`), and decides
//! whether this crate's NVRTC tests can run: where the CUDA toolchain (libnvrtc
//! and ptxas, no GPU needed) is found when the tests are built, `cfg(qdsl_nvrtc)` is set
//! and they run; elsewhere they are reported as ignored, with the reason, never as passed.
//! `QDSL_REQUIRE_NVRTC=1` (CI sets it) makes a missing toolchain a build error instead.

include!("../build/toolchain_probe.rs");
mod build_registry;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(
        out.join("registry.rs"),
        build_registry::registry(std::path::Path::new("src")),
    )
    .expect("writing the registry");
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
