//! The generated CUDA C++ of the heatbath and over-relaxation kernels
//! ([`qdsl_core::gauge::generate::cuda`]), compiled as host C++ (the shim of
//! `link_paths_host_cxx.rs`, plus the two bit-cast intrinsics) and run once per GPU
//! thread, launch by launch as the GPU runs them (μ = 0..4, each colour in order): one
//! heatbath sweep then one over-relaxation sweep from a hot field equal the CPU's
//! [`Heatbath`] sweeps with the same seed and sweep number to rounding, for Wilson (parity
//! checkerboard), Symanzik and Iwasaki (8 colours). This runs the kernel's own text — the
//! Philox streams, the portable ln/sin/cos, both x₀ samplers, the subgroup updates, the
//! colouring, the in-place device layout — on a machine without a GPU: a wrong random
//! word, a swapped subgroup or a missed colour changes links by O(1), not 1e-12.
//! Skips with a message where no C++ compiler (`$CXX`, else `c++`) runs.

use qdsl_core::dsl::paths::cuda::{device_layout, host_layout};
use qdsl_core::dsl::paths::{ActionSpec, ForcePlan, GaugeAction};
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::generate::cuda::{heatbath_cuda, heatbath_kernel};
use qdsl_core::gauge::generate::{max_link_difference, Heatbath};
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_kernels::{IwasakiGauge, SymanzikGauge, WilsonGauge};
use std::path::Path;
use std::process::Command;

const SHIM: &str = r#"#include <cstdio>
#include <cmath>
#include <cstring>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
static inline int __popc(int x) { return __builtin_popcount(x); }
static inline long long __double_as_longlong(double x) { long long b; std::memcpy(&b, &x, 8); return b; }
static inline double __longlong_as_double(long long b) { double x; std::memcpy(&x, &b, 8); return x; }
struct index3 { int x; };
static index3 blockIdx, blockDim = {1}, threadIdx = {0};
"#;

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    Command::new(&cxx)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| cxx)
}

/// One heatbath sweep (`sweep`) then one over-relaxation sweep of `u` by the emitted
/// kernel run as host C++.
fn host_sweeps(
    cxx: &str,
    dir: &Path,
    action: &ActionSpec,
    u: &GaugeField<f64>,
    beta: f64,
    seed: u64,
    sweep: u64,
) -> GaugeField<f64> {
    let lat = *u.lattice();
    let volume = lat.volume();
    let plan = ForcePlan::new(action).unwrap();
    let colouring = Heatbath::new(action, beta, lat).unwrap().colouring();
    let source = heatbath_cuda(&plan, colouring).unwrap();
    let kernel = heatbath_kernel(&action.name, colouring);
    let coeffs: Vec<String> = plan
        .tree
        .coefficients(1.0)
        .iter()
        .map(|c| format!("{c:?}"))
        .collect();
    let [l0, l1, l2, l3] = lat.dims();
    let harness = format!(
        r#"{SHIM}{source}
int main(int argc, char** argv) {{
    const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;
    std::vector<double> u;
    FILE* f = fopen(argv[1], "rb");
    double x;
    while (fread(&x, 8, 1, f) == 1) u.push_back(x);
    fclose(f);
    for (int overrelax = 0; overrelax < 2; overrelax++)
        for (int mu = 0; mu < 4; mu++)
            for (int colour = 0; colour < {colours}; colour++)
                for (int i = 0; i < V; i++) {{
                    blockIdx.x = i;
                    {kernel}(u.data(), {coeffs}, {beta:?}, (long long){seed}ull, (long long){sweep}ull, mu, colour, overrelax, L0, L1, L2, L3);
                }}
    f = fopen(argv[2], "wb");
    fwrite(u.data(), 8, u.size(), f);
    fclose(f);
    return 0;
}}
"#,
        colours = colouring.count(),
        coeffs = coeffs.join(", "),
    );
    let tag = format!("{}_{}", action.name, colouring.tag());
    let src = dir.join(format!("{tag}.cpp"));
    let exe = dir.join(&tag);
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
    let host: Vec<f64> = u.links().iter().flat_map(|l| l.to_reals()).collect();
    let device = device_layout(&host, 18, volume).unwrap();
    let (fin, fout) = (dir.join(format!("{tag}.in")), dir.join(format!("{tag}.out")));
    let bytes: Vec<u8> = device.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&fin, bytes).unwrap();
    let ran = Command::new(&exe).arg(&fin).arg(&fout).output().unwrap();
    assert!(ran.status.success(), "{tag}: the harness failed");
    let out: Vec<f64> = std::fs::read(&fout)
        .unwrap()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let host = host_layout(&out, 18, volume).unwrap();
    let mut field = GaugeField::<f64>::unit(lat);
    for (link, r) in field.links_mut().iter_mut().zip(host.chunks_exact(18)) {
        let mut reals = [0.0; 18];
        reals.copy_from_slice(r);
        *link = ColourMatrix::from_reals(&reals);
    }
    field
}

#[test]
fn heatbath_kernels_equal_the_cpu_sweeps() {
    let Some(cxx) = compiler() else {
        println!("skipped: no C++ compiler ($CXX or c++) to run the generated source");
        return;
    };
    let dir = std::env::temp_dir().join(format!("qdsl_heatbath_cxx_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (WilsonGauge::spec(), [4, 6, 4, 2], 5.7),
        (SymanzikGauge::spec(), [4, 4, 8, 4], 4.2),
        (IwasakiGauge::spec(), [4, 4, 4, 4], 2.6),
    ];
    for (action, dims, beta) in cases {
        let lat = Lattice::new(dims).unwrap();
        let u0 = GaugeField::<f64>::random(lat, 17);
        let (seed, sweep) = (0x5eed_0000_0000_0007u64, 3);
        let got = host_sweeps(&cxx, &dir, &action, &u0, beta, seed, sweep);
        let hb = Heatbath::new(&action, beta, lat).unwrap();
        let mut expected = u0.clone();
        hb.heatbath_sweep(&mut expected, seed, sweep);
        hb.overrelaxation_sweep(&mut expected);
        let d = max_link_difference(&got, &expected);
        let moved = max_link_difference(&u0, &expected);
        println!(
            "{}: max |kernel − CPU| = {d:e} (the sweeps moved links by {moved:.2})",
            action.name
        );
        assert!(moved > 0.5, "{}: the sweeps did not move the links", action.name);
        assert!(d < 1e-12, "{}: max |kernel − CPU| = {d:e}", action.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
