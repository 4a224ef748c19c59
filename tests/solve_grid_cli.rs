//! `qdsl solve --grid` as a user runs it (CPU backend: one thread per rank) on MILC's 8⁴
//! sample: the decomposed solve reaches the single-process iteration count (±1) and true
//! residual for Wilson, clover and asqtad (Naik: 3-hop faces), even-odd and full system,
//! on grids cutting t, and bad grids are refused with messages naming the values.

mod cli_common;

use cli_common::{data, qdsl_solve as qdsl, stderr, stdout};
use serde_json::Value;

/// Runs `qdsl solve ARGS --json FILE`; returns the parsed history after asserting success.
fn solve_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hist.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let out = qdsl(&all);
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
    let single = solve_json(args);
    let n1 = single["iterations"].as_u64().unwrap();
    let r1 = single["true_residual"].as_f64().unwrap();
    for grid in grids {
        let v = solve_json(&[args, &["--grid", grid]].concat());
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
