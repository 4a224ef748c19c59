//! `qdsl solve --grid` as a user runs it (CPU backend: one thread per rank) on MILC's 8⁴
//! sample: the decomposed solve reaches the single-process iteration count (±1) and true
//! residual for Wilson, clover and asqtad (Naik: 3-hop faces), even-odd and full system,
//! on grids cutting t, and bad grids are refused with messages naming the values.

mod cli_common;

use cli_common::{data, qdsl_solve as qdsl, stderr, stdout};
use serde_json::Value;

/// How a test runs `qdsl solve ARGS`.
type Run = dyn Fn(&[&str]) -> std::process::Output;

/// Runs `qdsl solve ARGS --json FILE` through `run`; returns the parsed history after
/// asserting success.
fn solve_json_with(run: &Run, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hist.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let out = run(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let text = std::fs::read_to_string(&json).expect("the history was written");
    serde_json::from_str(&text).expect("the history is valid JSON")
}

/// The same solve on one rank and on `grids`: converged, iterations ±1, true residuals
/// within a factor 2, and the residual recomputed with the single-process operator on
/// the gathered solution below the tolerance.
fn assert_grids_match(args: &[&str], tol: f64, grids: &[&str]) {
    assert_grids_match_with(&qdsl, args, tol, grids)
}

/// [`assert_grids_match`] through `run`.
fn assert_grids_match_with(run: &Run, args: &[&str], tol: f64, grids: &[&str]) {
    let single = solve_json_with(run, args);
    let n1 = single["iterations"].as_u64().unwrap();
    let r1 = single["true_residual"].as_f64().unwrap();
    for grid in grids {
        let v = solve_json_with(run, &[args, &["--grid", grid]].concat());
        assert_eq!(v["converged"], Value::Bool(true), "{grid}: {v}");
        let backend = v["backend"].as_str().unwrap();
        assert!(
            backend.contains("ranks") && backend.contains(grid),
            "{backend}"
        );
        let n = v["iterations"].as_u64().unwrap();
        assert!(
            n.abs_diff(n1) <= 1,
            "{args:?} --grid {grid}: {n} vs {n1} iterations"
        );
        let r = v["true_residual"].as_f64().unwrap();
        assert!(
            r <= tol && (0.5..=2.0).contains(&(r / r1)),
            "{grid}: {r:e} vs {r1:e}"
        );
        let recomputed = v["recomputed_residual"].as_f64().unwrap();
        assert!(recomputed <= tol, "{grid}: recomputed {recomputed:e}");
    }
}

fn l8() -> String {
    data("milc/lat.sample.l8").to_str().unwrap().to_string()
}

/// Wilson κ = 0.12 (antiperiodic t), BiCGStab f64–f32 to 1e-10 (the README job), on grids
/// cutting t, x·t and z·t.
#[test]
fn wilson_on_a_process_grid_matches_one_rank() {
    let l8 = l8();
    let args = [
        l8.as_str(),
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ];
    assert_grids_match(&args, 1e-10, &["1,1,1,2", "2,1,1,2", "1,1,2,2"]);
}

/// Clover κ = 0.12, c_sw = 1, CGNR in f64.
#[test]
fn clover_on_a_process_grid_matches_one_rank() {
    let l8 = l8();
    let args = [
        l8.as_str(),
        "--action",
        "clover",
        "--kappa",
        "0.12",
        "--csw",
        "1.0",
        "--solver",
        "cgnr",
        "--tol",
        "1e-10",
    ];
    assert_grids_match(&args, 1e-10, &["1,1,1,2", "1,1,2,2"]);
}

/// Asqtad m = 0.05 (the links smeared once on the whole lattice, then scattered; the
/// Naik term's faces are 3 layers deep), CG f64–f32.
#[test]
fn asqtad_on_a_process_grid_matches_one_rank() {
    let l8 = l8();
    let args = [
        l8.as_str(),
        "--action",
        "asqtad",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ];
    assert_grids_match(&args, 1e-10, &["1,1,1,2", "2,1,1,2"]);
}

/// HISQ m = 0.05 (Naik with ε = 0), CG f64–f32, cut in z and t.
#[test]
fn hisq_on_a_process_grid_matches_one_rank() {
    let l8 = l8();
    let args = [
        l8.as_str(),
        "--action",
        "hisq",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ];
    assert_grids_match(&args, 1e-10, &["1,1,2,2"]);
}

/// Bad grids: one that does not divide the lattice (the value and the extent named), a
/// local extent too short for the Naik term, odd local extents, malformed text, a narrow
/// precision.
#[test]
fn bad_grids_are_refused_naming_the_values() {
    let l8 = l8();
    let l8 = l8.as_str();
    let wilson = [l8, "--kappa", "0.12", "--solver", "bicgstab"];
    let asqtad = [l8, "--action", "asqtad", "--mass", "0.05", "--solver", "cg"];
    let cases: [(Vec<&str>, &str); 5] = [
        (
            [&wilson[..], &["--grid", "1,1,1,3"]].concat(),
            "Pt = 3 does not divide the lattice extent Lt = 8",
        ),
        (
            [&asqtad[..], &["--grid", "1,1,1,4"]].concat(),
            "Lt/Pt = 8/4 = 2 is shorter than the halo depth 3",
        ),
        (
            [&wilson[..], &["--grid", "1,1,1,8"]].concat(),
            "Lt/Pt = 8/8 = 1 is odd",
        ),
        (
            [&wilson[..], &["--grid", "1,1,2"]].concat(),
            "has 3 entries; expected 4",
        ),
        (
            [
                &wilson[..],
                &["--grid", "1,1,1,2", "--precision", "fixed16"],
            ]
            .concat(),
            "iterates in f64 or f32",
        ),
    ];
    for (args, expected) in cases {
        let out = qdsl(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

/// The full system M ψ = η (MILC's asqtad source file on every site, the odd sites
/// reconstructed from the decomposed even-site solve) on grids cutting t and x·t: the
/// same iterations (±1) as one rank.
#[test]
fn the_full_system_on_a_process_grid_matches_one_rank() {
    let l8 = l8();
    let source = data("milc/ksvector.src.sample.l8");
    let args = [
        l8.as_str(),
        "--action",
        "asqtad",
        "--mass",
        "0.1",
        "--u0",
        "0.502",
        "--solver",
        "cg",
        "--tol",
        "1e-10",
        "--source",
        source.to_str().unwrap(),
    ];
    assert_grids_match(&args, 1e-10, &["1,1,1,2", "2,1,1,2"]);
}

/// `qdsl --backend cuda solve ARGS` with `QDSL_GRID_TRANSPORT=transport`.
fn qdsl_gpu(transport: &'static str) -> impl Fn(&[&str]) -> std::process::Output {
    move |args| {
        std::process::Command::new(env!("CARGO_BIN_EXE_qdsl"))
            .args(["--backend", "cuda", "solve"])
            .args(args)
            .env("QDSL_GRID_TRANSPORT", transport)
            .output()
            .expect("the qdsl binary runs")
    }
}

/// The GPU solves of the tests above on `transport`: Wilson BiCGStab f64–f32 (t and z·t
/// cut), clover CGNR f64 (t cut), asqtad CG f64–f32 (t and x cut: Naik faces of depth 3),
/// each against the single-GPU solve (iterations ±1, true residuals within a factor 2,
/// the residual recomputed with the single-process operator below the tolerance).
fn gpu_grids_match(transport: &'static str, grids: &[&str]) {
    let run = qdsl_gpu(transport);
    let l8 = l8();
    let wilson = [
        l8.as_str(),
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ];
    assert_grids_match_with(&run, &wilson, 1e-10, grids);
    let clover = [
        l8.as_str(),
        "--action",
        "clover",
        "--kappa",
        "0.12",
        "--csw",
        "1.0",
        "--solver",
        "cgnr",
        "--tol",
        "1e-10",
    ];
    assert_grids_match_with(&run, &clover, 1e-10, grids);
    let asqtad = [
        l8.as_str(),
        "--action",
        "asqtad",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ];
    assert_grids_match_with(&run, &asqtad, 1e-10, grids);
}

/// GPU, ranks on ONE GPU (faces through the host): `--grid 1,1,1,2` and `2,1,1,1`
/// reach the single-GPU solves' iterations and residuals.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gpu_grid_solves_on_one_gpu_match_the_single_gpu_solves() {
    gpu_grids_match("host", &["1,1,1,2", "2,1,1,1"]);
}

/// 2 GPUs with NCCL (libnccl.so.2; QDSL_NCCL_LIB names it): `--grid 1,1,1,2` and
/// `2,1,1,1` reach the single-GPU solves' iterations and residuals.
#[test]
#[ignore = "needs 2 CUDA GPUs and libnccl.so.2 (QDSL_NCCL_LIB): run with --include-ignored"]
fn gpu_grid_solves_with_nccl_on_two_gpus_match_the_single_gpu_solves() {
    gpu_grids_match("nccl", &["1,1,1,2", "2,1,1,1"]);
}

/// On GPUs with NCCL, more ranks than GPUs is refused naming both counts (any machine
/// with fewer than 32 GPUs), and an unknown transport is refused naming it.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gpu_grid_refusals_name_the_values() {
    let l8 = l8();
    let args = [l8.as_str(), "--kappa", "0.12", "--grid", "2,2,2,4"];
    let out = qdsl_gpu("nccl")(&args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--grid 2,2,2,4 has 32 ranks, one per GPU"),
        "{err}"
    );
    let out = qdsl_gpu("mpi")(&[l8.as_str(), "--kappa", "0.12", "--grid", "1,1,1,2"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("QDSL_GRID_TRANSPORT=\"mpi\""), "{err}");
}
