//! The generated CUDA C++ of the link-path kernels, compiled as host C++ (a few lines of
//! shim: `__device__` and friends defined away, `__popc`, the block index a global the
//! harness sets) and run once per GPU thread on an asymmetric lattice: every smearing in
//! recon 18 and recon 12 + phase input, its layout kernel, and the Symanzik force agree
//! with the CPU plans. This runs the kernels' own text — packed coordinates, direction
//! loops by rank, the device layout, the Horner tree, the force epilogue — on a machine
//! without a GPU. Skips with a message where no C++ compiler (`$CXX`, else `c++`) runs.

use qdsl_core::dsl::paths::cuda::device_layout;
use qdsl_core::dsl::paths::knobs::encode_links;
use qdsl_core::dsl::paths::{GaugeAction, LinkPaths, PathKnobs};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat, SymanzikGauge};
use std::path::{Path, PathBuf};
use std::process::Command;

const DIMS: [usize; 4] = [4, 6, 8, 10];

const SHIM: &str = r#"#include <cstdio>
#include <cmath>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
static inline int __popc(int x) { return __builtin_popcount(x); }
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

fn write_reals(path: &Path, v: &[f64]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn read_reals(path: &Path) -> Vec<f64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn host_reals(u: &GaugeField<f64>) -> Vec<f64> {
    u.links().iter().flat_map(|l| l.to_reals()).collect()
}

/// Compiles `source` with a harness calling `call` (a statement using `out`, `in`,
/// `L0..L3`) once per link (4V threads), runs it on `input` and returns its output.
fn run_host(cxx: &str, dir: &Path, tag: &str, source: &str, call: &str, input: &[f64]) -> Vec<f64> {
    let [l0, l1, l2, l3] = DIMS;
    let harness = format!(
        r#"{SHIM}{source}
int main(int argc, char** argv) {{
    const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;
    std::vector<double> in, out(4 * V * 18, 0.0);
    FILE* f = fopen(argv[1], "rb");
    double x;
    while (fread(&x, 8, 1, f) == 1) in.push_back(x);
    fclose(f);
    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; {call}; }}
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
    write_reals(&fin, input);
    let ran = Command::new(&exe).arg(&fin).arg(&fout).output().unwrap();
    assert!(ran.status.success(), "{tag}: the harness failed");
    read_reals(&fout)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn coefficient_list(c: &[f64]) -> String {
    c.iter()
        .map(|x| format!("{x:e}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn smearing<S: LinkPaths>(cxx: &str, dir: &Path, u: &GaugeField<f64>, recon: Recon) {
    let knobs = PathKnobs::with_input(recon);
    let name = S::spec().name;
    let tag = format!("{name}_{recon:?}");
    let volume = u.lattice().volume();
    let encoded: Vec<f64> = encode_links(u, &knobs, &name).unwrap();
    let device = device_layout(&encoded, knobs.input_reals(), volume).unwrap();
    let source = S::cuda_source_with::<f64>(&knobs).unwrap();
    let u0 = 0.8;
    let call = format!(
        "{name}_links(out.data(), in.data(), {}, L0, L1, L2, L3)",
        coefficient_list(&S::tree().unwrap().coefficients(u0))
    );
    let got = run_host(cxx, dir, &tag, &source, &call, &device);
    // The CPU side smears the same rounded input (recon 12 rebuilt as the kernel does).
    let expected = host_reals(&S::smear_cpu_with(u, u0, &knobs).unwrap());
    let d = max_diff(&got, &expected);
    assert!(d < 1e-13, "{tag}: max |kernel − CPU| = {d:e}");
    // The layout kernel rewrites the host layout exactly as `device_layout` does.
    let call = format!("{name}_to_device_layout(out.data(), in.data(), L0, L1, L2, L3)");
    let got = run_host(cxx, dir, &format!("{tag}_layout"), &source, &call, &encoded);
    assert_eq!(&got[..device.len()], &device[..], "{tag}: layout kernel");
}

#[test]
fn generated_kernels_run_as_host_code_give_the_cpu_links() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no C++ compiler ($CXX or c++) runs on this machine");
        return;
    };
    let dir: PathBuf = std::env::temp_dir().join(format!("qdsl_host_cxx_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = Lattice::new(DIMS).unwrap();
    let u = fold_staggered_phases(&GaugeField::<f64>::random(lat, 23));
    for recon in [Recon::R18, Recon::R12] {
        smearing::<AsqtadFat>(&cxx, &dir, &u, recon);
        smearing::<AsqtadLong>(&cxx, &dir, &u, recon);
        smearing::<Fat7>(&cxx, &dir, &u, recon);
        smearing::<HisqFat>(&cxx, &dir, &u, recon);
    }
    let thin = GaugeField::<f64>::random(lat, 29);
    let plan = SymanzikGauge::force_plan().unwrap();
    let device = device_layout(&host_reals(&thin), 18, lat.volume()).unwrap();
    let call = format!(
        "symanzik_gauge_force(out.data(), in.data(), {}, {:e}, L0, L1, L2, L3)",
        coefficient_list(&plan.tree.coefficients(1.0)),
        -5.7 / 3.0
    );
    let source = SymanzikGauge::force_cuda_source::<f64>().unwrap();
    let got = run_host(&cxx, &dir, "symanzik_force", &source, &call, &device);
    let expected = host_reals(&SymanzikGauge::force_cpu(&thin, 5.7).unwrap());
    let d = max_diff(&got, &expected);
    assert!(d < 1e-12, "Symanzik force: max |kernel − CPU| = {d:e}");
    let _ = std::fs::remove_dir_all(&dir);
}
