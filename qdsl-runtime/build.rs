//! Decides whether this crate's NVRTC tests can run: where the CUDA toolchain (libnvrtc
//! and ptxas, no GPU needed) is found when the tests are built, `cfg(qdsl_nvrtc)` is set
//! and they run; elsewhere they are reported as ignored, with the reason, never as passed.
//! `QDSL_REQUIRE_NVRTC=1` (CI sets it) makes a missing toolchain a build error instead.

include!("../build/toolchain_probe.rs");

fn main() {
    emit_nvrtc_cfg();
}
