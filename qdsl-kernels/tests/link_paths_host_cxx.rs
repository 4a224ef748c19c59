//! The generated CUDA C++ of the link-path kernels, compiled as host C++ (a few lines of
//! shim: `__device__` and friends defined away, `__popc`, the block index a global the
//! harness sets) and run once per GPU thread on an asymmetric lattice: every smearing in
//! recon 18 and recon 12 + phase input, its layout kernel, and the Symanzik force agree
//! with the CPU plans. This runs the kernels' own text — packed coordinates, direction
//! loops by rank, the device layout, the Horner tree, the force epilogue — on a machine
//! without a GPU. Skips with a message where no C++ compiler (`$CXX`, else `c++`) runs.

use qdsl_core::dsl::paths::cuda::{device_layout, pass_kernel_name};
use qdsl_core::dsl::paths::knobs::encode_links;
use qdsl_core::dsl::paths::{
    fermion_force, pullback_cuda, reverse, reverse_cuda, GaugeAction, LinkPaths, PathKnobs,
    PlanKind, Staging,
};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::Lattice;
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat, SymanzikGauge};
use std::path::{Path, PathBuf};

const DIMS: [usize; 4] = [4, 6, 8, 10];

mod host_cxx;

use host_cxx::{compiler, host_reals};

/// `host_cxx::run` with the extents `L0..L3`, `V` and an output of 4V links declared,
/// calling `call` (a statement using `out`, `in`, `L0..L3`) once per link (4V threads).
fn run_host(cxx: &str, dir: &Path, tag: &str, source: &str, call: &str, input: &[f64]) -> Vec<f64> {
    let [l0, l1, l2, l3] = DIMS;
    let setup = format!(
        "const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;\n    std::vector<double> in, out(4 * V * 18, 0.0);"
    );
    let body = format!("    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; {call}; }}");
    host_cxx::run(cxx, dir, tag, source, (&setup, &body), input)
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
    let knobs = PathKnobs::with_input(recon).with_plan(PlanKind::Tree);
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
    // With recon 12 the encoding kernel turns 18-real host-layout links into the device
    // records (λ = det L / |det L| from cofactors: the host's up to rounding).
    if recon == Recon::R12 {
        let call = format!("{name}_encode_device_layout(out.data(), in.data(), L0, L1, L2, L3)");
        let got = run_host(
            cxx,
            dir,
            &format!("{tag}_encode"),
            &source,
            &call,
            &host_reals(u),
        );
        let d = max_diff(&got[..device.len()], &device);
        assert!(d < 1e-14, "{tag}: encoding kernel − host records {d:e}");
    }
}

/// The whole lattice as the one box of a staged run: corner 0, extents [`DIMS`].
const WHOLE: &[([usize; 4], [usize; 4])] = &[([0; 4], DIMS)];

/// The lattice as two boxes split along t at an odd corner (t = 5): each kernel of a
/// staged run launched over one box and then the other covers every site once.
const HALVES_IN_T: &[([usize; 4], [usize; 4])] =
    &[([0, 0, 0, 0], [4, 6, 8, 5]), ([0, 0, 0, 5], [4, 6, 8, 5])];

/// The staged plan of spec `S` (per μ: its passes into the scratch fields of that μ, then
/// the root kernel for that μ; with no passes the root over all μ at once), each kernel
/// launched over each box of `boxes` in turn (corner, extents), run as host code gives
/// the CPU plan's links, and the scratch is exactly the plan's size: every one of its
/// [`Staging::scratch_reals`] reals is written (filled with a sentinel first) and a guard
/// region after it is not (the last two reals the harness returns count the unwritten
/// scratch reals and the overwritten guard reals).
fn staged_smearing<S: LinkPaths>(
    cxx: &str,
    dir: &Path,
    u: &GaugeField<f64>,
    recon: Recon,
    boxes: &[([usize; 4], [usize; 4])],
) {
    let knobs = PathKnobs::with_input(recon).with_plan(PlanKind::Staged);
    let name = S::spec().name;
    let tag = format!("{name}_{recon:?}_staged_{}", boxes.len());
    let volume = u.lattice().volume();
    let encoded: Vec<f64> = encode_links(u, &knobs, &name).unwrap();
    let device = device_layout(&encoded, knobs.input_reals(), volume).unwrap();
    let source = S::cuda_source_with::<f64>(&knobs).unwrap();
    let staging = Staging::new(&S::tree().unwrap());
    let u0 = 0.8;
    let coeffs = coefficient_list(&S::tree().unwrap().coefficients(u0));
    let [l0, l1, l2, l3] = DIMS;
    let scratch = staging.scratch_reals(volume);
    let setup = format!(
        "const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;\n    const double sentinel = -12345.5;\n    const size_t scratch_reals = {scratch}, guard = 4096;\n    std::vector<double> in, out(4 * V * 18, 0.0), scratch(scratch_reals + guard, sentinel);"
    );
    // One launch of `call(…, O…, B…)` over `lanes` per site of each box.
    let over_boxes = |lanes: &str, call: &str| -> String {
        boxes
            .iter()
            .map(|(o, b)| {
                let sites: usize = b.iter().product();
                format!(
                    "    for (int i = 0; i < {lanes} * {sites}; i++) {{ blockIdx.x = i; {call}, {}, {}, {}, {}, {}, {}, {}, {}); }}\n",
                    o[0], o[1], o[2], o[3], b[0], b[1], b[2], b[3]
                )
            })
            .collect()
    };
    let mut body = String::new();
    if staging.passes().is_empty() {
        body.push_str(&over_boxes(
            "4",
            &format!("{name}_links(out.data(), in.data(), scratch.data(), {coeffs}, 0, 4, L0, L1, L2, L3"),
        ));
    } else {
        body.push_str("    for (int mu = 0; mu < 4; mu++) {\n");
        for node in staging.passes() {
            let slots = staging.nodes[node].slots_per_mu();
            body.push_str(&over_boxes(
                &slots.to_string(),
                &format!(
                    "{}(scratch.data(), in.data(), {coeffs}, mu, L0, L1, L2, L3",
                    pass_kernel_name(&name, node)
                ),
            ));
        }
        body.push_str(&over_boxes(
            "1",
            &format!("{name}_links(out.data(), in.data(), scratch.data(), {coeffs}, mu, 1, L0, L1, L2, L3"),
        ));
        body.push_str("    }\n");
    }
    body.push_str(
        "    double unwritten = 0, overwritten = 0;\n    for (size_t k = 0; k < scratch_reals; k++) unwritten += scratch[k] == sentinel;\n    for (size_t k = scratch_reals; k < scratch_reals + guard; k++) overwritten += scratch[k] != sentinel;\n    out.push_back(unwritten);\n    out.push_back(overwritten);",
    );
    let mut got = host_cxx::run(cxx, dir, &tag, &source, (&setup, &body), &device);
    let overwritten = got.pop().unwrap();
    let unwritten = got.pop().unwrap();
    assert_eq!(
        (unwritten, overwritten),
        (0.0, 0.0),
        "{tag}: the passes must fill exactly the plan's {scratch} scratch reals"
    );
    let expected = host_reals(&S::smear_cpu_with(u, u0, &knobs).unwrap());
    let d = max_diff(&got, &expected);
    assert!(d < 1e-13, "{tag}: max |staged kernels − CPU| = {d:e}");
}

#[test]
fn staged_kernels_run_as_host_code_give_the_cpu_links() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no C++ compiler ($CXX or c++) runs on this machine");
        return;
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("qdsl_host_cxx_staged_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = Lattice::new(DIMS).unwrap();
    let u = fold_staggered_phases(&GaugeField::<f64>::random(lat, 31));
    for recon in [Recon::R18, Recon::R12] {
        staged_smearing::<AsqtadFat>(&cxx, &dir, &u, recon, WHOLE);
        staged_smearing::<Fat7>(&cxx, &dir, &u, recon, WHOLE);
        staged_smearing::<HisqFat>(&cxx, &dir, &u, recon, WHOLE);
    }
    staged_smearing::<AsqtadLong>(&cxx, &dir, &u, Recon::R18, WHOLE);
    // Over two boxes, the second's corner at an odd t (the box's checkerboard order
    // shifted by the corner's parity): every site once, the same links.
    staged_smearing::<AsqtadFat>(&cxx, &dir, &u, Recon::R18, HALVES_IN_T);
    staged_smearing::<AsqtadLong>(&cxx, &dir, &u, Recon::R18, HALVES_IN_T);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The pullback kernel of spec `S` ([`pullback_cuda`]: the chain rule back through the
/// tree, gradients added atomically) run as host code gives the CPU pullback through the
/// plan ([`fermion_force::pullback`], itself checked by finite differences) for a random
/// smeared-link gradient.
fn pullback<S: LinkPaths>(cxx: &str, dir: &Path, u: &GaugeField<f64>) {
    let knobs = PathKnobs::default();
    let name = S::spec().name;
    let tag = format!("{name}_pullback");
    let lat = *u.lattice();
    let volume = lat.volume();
    let grad = GaugeField::<f64>::random(lat, 41);
    let mut input = device_layout(&host_reals(u), 18, volume).unwrap();
    input.extend(host_reals(&grad));
    let tree = S::tree().unwrap();
    let source = pullback_cuda::pullback_source::<f64>(&tree, &knobs).unwrap();
    let u0 = 0.8;
    let call = format!(
        "{}(out.data(), in.data(), in.data() + 4 * V * 18, {}, L0, L1, L2, L3)",
        pullback_cuda::pullback_kernel(&name),
        coefficient_list(&tree.coefficients(u0))
    );
    let got = run_host(cxx, dir, &tag, &source, &call, &input);
    let expected = host_reals(&fermion_force::pullback(&S::plan().unwrap(), u, u0, &grad).unwrap());
    let scale = expected.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let d = max_diff(&got, &expected);
    assert!(
        d < 1e-12 * scale,
        "{tag}: max |kernel − CPU| = {d:e} (scale {scale:e})"
    );
}

#[test]
fn pullback_kernels_run_as_host_code_give_the_cpu_pullback() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no C++ compiler ($CXX or c++) runs on this machine");
        return;
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("qdsl_host_cxx_pullback_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = Lattice::new(DIMS).unwrap();
    let u = fold_staggered_phases(&GaugeField::<f64>::random(lat, 37));
    pullback::<AsqtadFat>(&cxx, &dir, &u);
    pullback::<AsqtadLong>(&cxx, &dir, &u);
    pullback::<Fat7>(&cxx, &dir, &u);
    pullback::<HisqFat>(&cxx, &dir, &u);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The gather plan of spec `S`'s pull-back ([`reverse_cuda`]: no atomics; per μ the chain
/// levels, their adjoints and the gather, then the loose gather) run as host code gives
/// the CPU pull-back through the plan ([`fermion_force::pullback`]) for a random
/// smeared-link gradient, and so does its CPU emulation ([`reverse::pullback_cpu`]).
fn reverse_pullback<S: LinkPaths>(cxx: &str, dir: &Path, u: &GaugeField<f64>) {
    let name = S::spec().name;
    let tag = format!("{name}_reverse");
    let lat = *u.lattice();
    let volume = lat.volume();
    let grad = GaugeField::<f64>::random(lat, 43);
    let mut input = device_layout(&host_reals(u), 18, volume).unwrap();
    input.extend(host_reals(&grad));
    let plan = reverse::ReversePlan::new(&S::spec()).unwrap();
    let source = reverse_cuda::reverse_source::<f64>(&plan, &PathKnobs::default()).unwrap();
    let u0 = 0.8;
    let coeffs = S::tree().unwrap().coefficients(u0);
    let list = coefficient_list(&coeffs);
    let [l0, l1, l2, l3] = DIMS;
    let setup = format!(
        "const int L0 = {l0}, L1 = {l1}, L2 = {l2}, L3 = {l3}, V = L0 * L1 * L2 * L3;\n    std::vector<double> in, out(4 * V * 18, 0.0), scratch({} + 1, 0.0);",
        plan.scratch_reals(volume)
    );
    let dims = "L0, L1, L2, L3";
    let mut body = String::from(
        "    const double* u = in.data();\n    const double* gs = in.data() + 4 * V * 18;\n",
    );
    if plan.depth().is_some() {
        body.push_str("    for (int mu = 0; mu < 4; mu++) {\n");
        for b in plan.stored_levels().rev() {
            body.push_str(&format!(
                "    for (int i = 0; i < {} * V; i++) {{ blockIdx.x = i; {}(scratch.data(), u, {list}, mu, {dims}); }}\n",
                qdsl_core::dsl::paths::staged::slots_per_mu(b),
                reverse_cuda::level_kernel(&name, b)
            ));
        }
        for b in plan.stored_levels() {
            body.push_str(&format!(
                "    for (int i = 0; i < {} * V; i++) {{ blockIdx.x = i; {}(scratch.data(), u, gs, {list}, mu, {dims}); }}\n",
                qdsl_core::dsl::paths::staged::slots_per_mu(b),
                reverse_cuda::adjoint_kernel(&name, b)
            ));
        }
        body.push_str(&format!(
            "    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; {}(out.data(), scratch.data(), u, gs, {list}, mu, {dims}); }}\n    }}\n",
            reverse_cuda::gather_kernel(&name)
        ));
    }
    if !plan.loose.is_empty() {
        body.push_str(&format!(
            "    for (int i = 0; i < 4 * V; i++) {{ blockIdx.x = i; {}(out.data(), u, gs, {list}, {dims}); }}\n",
            reverse_cuda::loose_kernel(&name)
        ));
    }
    let got = host_cxx::run(cxx, dir, &tag, &source, (&setup, &body), &input);
    let expected = host_reals(&fermion_force::pullback(&S::plan().unwrap(), u, u0, &grad).unwrap());
    let scale = expected.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let d = max_diff(&got, &expected);
    assert!(
        d < 1e-12 * scale,
        "{tag}: max |kernels − CPU| = {d:e} (scale {scale:e})"
    );
    let emulated = host_reals(&reverse::pullback_cpu(&plan, u, &grad, &coeffs).unwrap());
    let d = max_diff(&got, &emulated);
    assert!(
        d < 1e-12 * scale,
        "{tag}: max |kernels − emulation| = {d:e}"
    );
}

#[test]
fn reverse_pullback_kernels_run_as_host_code_give_the_cpu_pullback() {
    let Some(cxx) = compiler() else {
        eprintln!("skipped: no C++ compiler ($CXX or c++) runs on this machine");
        return;
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("qdsl_host_cxx_reverse_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat = Lattice::new(DIMS).unwrap();
    let u = fold_staggered_phases(&GaugeField::<f64>::random(lat, 39));
    reverse_pullback::<AsqtadFat>(&cxx, &dir, &u);
    reverse_pullback::<AsqtadLong>(&cxx, &dir, &u);
    reverse_pullback::<Fat7>(&cxx, &dir, &u);
    reverse_pullback::<HisqFat>(&cxx, &dir, &u);
    let _ = std::fs::remove_dir_all(&dir);
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
