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
    emit_nvrtc_cfg();
}
