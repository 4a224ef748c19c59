//! The generated CUDA C++ of the heatbath and over-relaxation kernels
//! ([`qdsl_core::gauge::generate::cuda`]), compiled as host C++ (the shim of
//! `host_cxx`, shared with `link_paths_host_cxx.rs`) and run once per GPU
//! thread, launch by launch as the GPU runs them (μ = 0..4, each colour in order): one
//! heatbath sweep then one over-relaxation sweep from a hot field equal the CPU's
//! [`Heatbath`] sweeps with the same seed and sweep number to rounding, for Wilson (parity
//! checkerboard), Symanzik and Iwasaki (8 colours). This runs the kernel's own text — the
//! Philox streams, the portable ln/sin/cos, both x₀ samplers, the subgroup updates, the
//! colouring, the in-place device layout — on a machine without a GPU: a wrong random
//! word, a swapped subgroup or a missed colour changes links by O(1), not 1e-12.
//! Likewise the HMC field kernels and the action's trace kernels
//! ([`qdsl_core::gauge::generate::cuda_hmc`], `TermTrace::program`) against the CPU's
//! momenta, drift, kinetic energy and action. Skips with a message where no C++ compiler
//! (`$CXX`, else `c++`) runs.

use qdsl_core::dsl::paths::cuda::{device_layout, host_layout};
use qdsl_core::dsl::paths::{ActionSpec, ForcePlan, GaugeAction};
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::generate::cuda::{heatbath_cuda, heatbath_kernel};
use qdsl_core::gauge::generate::cuda_hmc::hmc_cuda;
use qdsl_core::gauge::generate::{max_link_difference, Heatbath, Hmc, TermTraces};
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_kernels::{IwasakiGauge, SymanzikGauge, WilsonGauge};
use std::path::Path;

mod host_cxx;

use host_cxx::{compiler, host_reals};

/// `host_cxx::run` with `in`, `out` declared and `body` filling `out`.
fn run_host(cxx: &str, dir: &Path, tag: &str, source: &str, body: &str, input: &[f64]) -> Vec<f64> {
    host_cxx::run(
        cxx,
        dir,
        tag,
        source,
        ("std::vector<double> in, out;", body),
        input,
    )
}

fn field_of(lat: Lattice, host: &[f64]) -> GaugeField<f64> {
    let mut field = GaugeField::<f64>::unit(lat);
    for (link, r) in field.links_mut().iter_mut().zip(host.chunks_exact(18)) {
        let mut reals = [0.0; 18];
        reals.copy_from_slice(r);
        *link = ColourMatrix::from_reals(&reals);
    }
    field
}

fn extents(lat: &Lattice) -> String {
    let [l0, l1, l2, l3] = lat.dims();
    format!("const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;")
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
    let body = format!(
        r#"    {extents}
    out = in;
    for (int overrelax = 0; overrelax < 2; overrelax++)
        for (int mu = 0; mu < 4; mu++)
            for (int colour = 0; colour < {colours}; colour++)
                for (int i = 0; i < V; i++) {{
                    blockIdx.x = i;
                    {kernel}(out.data(), {coeffs}, {beta:?}, (long long){seed}ull, (long long){sweep}ull, mu, colour, overrelax, L0, L1, L2, L3);
                }}"#,
        extents = extents(&lat),
        colours = colouring.count(),
        coeffs = coeffs.join(", "),
    );
    let tag = format!("{}_{}", action.name, colouring.tag());
    let device = device_layout(&host_reals(u), 18, volume).unwrap();
    let out = run_host(cxx, dir, &tag, &source, &body, &device);
    field_of(lat, &host_layout(&out, 18, volume).unwrap())
}

#[test]
/// See the module documentation.
fn heatbath_kernels_equal_the_cpu_sweeps() {
    let Some(cxx) = compiler() else {
        println!("skipped: no C++ compiler ($CXX or c++) to run the generated source");
        return;
    };
    let dir = std::env::temp_dir().join(format!("qdsl_generate_cxx_{}", std::process::id()));
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
        assert!(
            moved > 0.5,
            "{}: the sweeps did not move the links",
            action.name
        );
        assert!(d < 2e-12, "{}: max |kernel − CPU| = {d:e}", action.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The HMC kernels run as host C++ equal the CPU's steps on an asymmetric lattice:
/// `hmc_momenta` draws [`Hmc::momenta`] (1e−15: the same Philox words, Box–Muller with the
/// portable functions), `hmc_drift` is U ← exp(dt P) U (1e−14; dt = 0.3 puts the
/// exponential of some links in its closed form and others in its series), `hmc_norms`
/// gives ‖P‖² link by link; and the trace kernels of the Symanzik terms give the action
/// and the rectangle average of [`TermTraces`] (1e−12).
#[test]
fn hmc_kernels_equal_the_cpu_steps() {
    let Some(cxx) = compiler() else {
        println!("skipped: no C++ compiler ($CXX or c++) to run the generated source");
        return;
    };
    let dir = std::env::temp_dir().join(format!("qdsl_hmc_cxx_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = Lattice::new([4, 6, 4, 8]).unwrap();
    let volume = lat.volume();
    let source = hmc_cuda();
    // Momenta.
    let (seed, traj) = (0xfeed_beef_u64, 9u64);
    let body = format!(
        "    {}\n    out.assign(4 * V * 18, 0.0);\n    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; hmc_momenta(out.data(), (long long){seed}ull, (long long){traj}ull, L0, L1, L2, L3); }}",
        extents(&lat)
    );
    let p = field_of(
        lat,
        &run_host(&cxx, &dir, "momenta", &source, &body, &[0.0]),
    );
    let expected = Hmc::momenta(lat, seed, traj);
    let d = max_link_difference(&p, &expected);
    assert!(d < 1e-15, "momenta: {d:e}");
    // Drift U <- exp(dt P) U.
    let u = GaugeField::<f64>::random(lat, 4);
    let dt = 0.3;
    let mut input = device_layout(&host_reals(&u), 18, volume).unwrap();
    input.extend(host_reals(&expected));
    let n = 4 * volume * 18;
    let body = format!(
        "    {}\n    out.assign(in.begin(), in.begin() + {n});\n    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; hmc_drift(out.data(), in.data() + {n}, {dt:?}, L0, L1, L2, L3); }}",
        extents(&lat)
    );
    let out = run_host(&cxx, &dir, "drift", &source, &body, &input);
    let drifted = field_of(lat, &host_layout(&out, 18, volume).unwrap());
    let mut cpu = u.clone();
    for (l, pl) in cpu.links_mut().iter_mut().zip(expected.links()) {
        *l = pl.scale(dt).exp() * *l;
    }
    let d = max_link_difference(&drifted, &cpu);
    assert!(d < 1e-14, "drift: {d:e}");
    // Norms.
    let body = format!(
        "    out.assign({}, 0.0);\n    for (int i = 0; i < {}; i++) {{ blockIdx.x = i; hmc_norms(out.data(), in.data(), {}); }}",
        4 * volume,
        4 * volume,
        4 * volume
    );
    let norms = run_host(&cxx, &dir, "norms", &source, &body, &host_reals(&expected));
    let k: f64 = norms.iter().sum::<f64>() / 2.0;
    assert!((k - Hmc::kinetic(&expected)).abs() < 1e-10 * k);
    // Traces of the Symanzik terms.
    let action = SymanzikGauge::spec();
    let tt = TermTraces::new(&action).unwrap();
    let device = device_layout(&host_reals(&u), 18, volume).unwrap();
    let mut traces = Vec::new();
    for t in &tt.terms {
        let program = t.program().unwrap();
        let coeffs: Vec<String> = t
            .plan
            .tree
            .coefficients(1.0)
            .iter()
            .map(|c| format!("{c:?}"))
            .collect();
        let body = format!(
            "    {}\n    out.assign(4 * V, 0.0);\n    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; {}(out.data(), in.data(), {}, L0, L1, L2, L3); }}",
            extents(&lat),
            t.kernel(),
            coeffs.join(", ")
        );
        let out = run_host(&cxx, &dir, &t.kernel(), &program.source, &body, &device);
        traces.push(out.iter().sum::<f64>());
    }
    let s = tt.action(4.1, volume, &traces);
    let expected = action.action(&u, 4.1).unwrap();
    assert!(
        (s - expected).abs() < 1e-12 * expected,
        "action {s} vs {expected}"
    );
    let rect = tt.terms[1].loop_average(volume, traces[1]);
    assert!((rect - action.loop_average(&u, 1).unwrap()).abs() < 1e-12);
    let _ = std::fs::remove_dir_all(&dir);
}
