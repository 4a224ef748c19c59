//! Generated CUDA C++ compiled as host C++ and run once per GPU thread: the shim
//! (`__device__` and friends defined away, the intrinsics the kernels use — `atomicAdd`
//! as a plain add, the harness being sequential —, the block
//! index a global the harness sets), the compiler (`$CXX`, else `c++`) and the harness
//! that feeds a kernel's reals in and reads its reals back. Shared by the host-C++ tests
//! of the link-path and gauge-generation kernels.

#![allow(dead_code)]

use qdsl_core::field::GaugeField;
use std::path::Path;
use std::process::Command;

/// The shim put in front of a generated source.
pub const SHIM: &str = r#"#include <cstdio>
#include <cmath>
#include <cstring>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __shared__ static
static inline void __syncthreads() {}
static inline int __popc(int x) { return __builtin_popcount(x); }
static inline double atomicAdd(double* a, double v) { double o = *a; *a += v; return o; }
static inline float atomicAdd(float* a, float v) { float o = *a; *a += v; return o; }
static inline long long __double_as_longlong(double x) { long long b; std::memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; std::memcpy(&x, &b, 8); return x; }
struct index3 { int x; };
static index3 blockIdx, blockDim = {1}, threadIdx = {0};
"#;

/// The host C++ compiler, if one runs.
pub fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    Command::new(&cxx)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| cxx)
}

/// A gauge field's links as host reals (18 per link, link after link).
pub fn host_reals(u: &GaugeField<f64>) -> Vec<f64> {
    u.links().iter().flat_map(|l| l.to_reals()).collect()
}

/// Compiles `source` with a harness whose `main` runs `setup` (which declares
/// `std::vector<double> in, out`), reads the reals of `input` into `in`, runs `body`
/// (which fills `out`) and returns `out`.
pub fn run(
    cxx: &str,
    dir: &Path,
    tag: &str,
    source: &str,
    (setup, body): (&str, &str),
    input: &[f64],
) -> Vec<f64> {
    let harness = format!(
        r#"{SHIM}{source}
int main(int argc, char** argv) {{
    {setup}
    FILE* f = fopen(argv[1], "rb");
    double x;
    while (fread(&x, 8, 1, f) == 1) in.push_back(x);
    fclose(f);
{body}
    f = fopen(argv[2], "wb");
    fwrite(out.data(), 8, out.size(), f);
    fclose(f);
    return 0;
}}
"#
    );
    let src = dir.join(format!("{tag}.cpp"));
    let exe = dir.join(tag);
    std::fs::write(&src, harness).unwrap();
    let built = Command::new(cxx)
        .args(["-std=c++17", "-O1", "-w", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{tag}: compiling the generated source as host C++ failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (fin, fout) = (
        dir.join(format!("{tag}.in")),
        dir.join(format!("{tag}.out")),
    );
    let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&fin, bytes).unwrap();
    let ran = Command::new(&exe).arg(&fin).arg(&fout).output().unwrap();
    assert!(ran.status.success(), "{tag}: the harness failed");
    std::fs::read(&fout)
        .unwrap()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
