//! `qdsl solve` as a user runs it: the built binary on the real configurations of the
//! test data, its JSON history and SVG plot, and its refusals of bad input.

mod cli_common;

use cli_common::{data, qdsl_solve as qdsl, stderr};

use qdsl_core::gauge::plaquette;
use qdsl_core::io::{read_gauge, ReadOptions};
use serde_json::Value;
use std::process::Output;

/// Runs a solve writing JSON and SVG into a temporary directory; returns the exit
/// status, the parsed JSON and the SVG text.
fn solve_with_history(args: &[&str]) -> (Output, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hist.json");
    let svg = dir.path().join("hist.svg");
    let mut all = args.to_vec();
    all.extend([
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let out = qdsl(&all);
    let text = std::fs::read_to_string(&json).expect("the history was written");
    let value: Value = serde_json::from_str(&text).expect("the history is valid JSON");
    let plot = std::fs::read_to_string(&svg).unwrap_or_default();
    (out, value, plot)
}

/// A converged history: x₀ = 0 makes the first true residual exactly ‖b‖/‖b‖ = 1 at
/// iteration 0; iterations never decrease; the last entry is a true residual ≤ tol, and
/// it equals the recomputed one and the reported true residual.
fn assert_converged_history(v: &Value, tol: f64) {
    assert_eq!(v["converged"], Value::Bool(true), "{v}");
    assert_eq!(v["reason"], "converged");
    assert_eq!(v["backend"], "CPU");
    let history = v["history"].as_array().expect("history is an array");
    assert_eq!(history[0]["kind"], "true");
    assert_eq!(history[0]["iteration"], 0);
    assert_eq!(history[0]["residual"].as_f64(), Some(1.0));
    let iterations: Vec<u64> = history
        .iter()
        .map(|h| h["iteration"].as_u64().expect("integer iteration"))
        .collect();
    assert!(iterations.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(
        *iterations.last().unwrap(),
        v["iterations"].as_u64().unwrap()
    );
    for h in history {
        assert!(h["residual"].as_f64().unwrap().is_finite());
        assert!(h["kind"] == "true" || h["kind"] == "iterated");
    }
    let last = history.last().unwrap();
    assert_eq!(last["kind"], "true");
    let true_residual = v["true_residual"].as_f64().unwrap();
    let recomputed = v["recomputed_residual"].as_f64().unwrap();
    assert!(true_residual <= tol && recomputed <= tol, "{v}");
    assert_eq!(last["residual"].as_f64().unwrap(), true_residual);
    assert!((recomputed - true_residual).abs() <= 1e-3 * true_residual);
}

/// The README job: Wilson κ = 0.12 on MILC's 8⁴ sample, BiCGStab f64–f32 to 1e-10, with
/// reliable updates (f32 alone cannot reach 1e-10).
#[test]
fn wilson_mixed_precision_on_the_milc_sample_converges() {
    let (out, v, svg) = solve_with_history(&[
        data("milc/lat.sample.l8").to_str().unwrap(),
        "--action",
        "wilson",
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
        "--precision",
        "f32",
        "--tol",
        "1e-10",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_converged_history(&v, 1e-10);
    assert!(v["reliable_updates"].as_u64().unwrap() >= 1);
    assert_eq!(v["lattice"], serde_json::json!([8, 8, 8, 8]));
    assert!(svg.starts_with("<svg") && svg.contains("iteration"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("backend     CPU\n") && stdout.contains("converged"));
}

/// Naive staggered (CG on A = 4m² − D_eo D_oe) and Wilson CGNR on tmLQCD's 4³×8
/// configuration from a point source.
#[test]
fn staggered_and_wilson_on_the_tmlqcd_configuration_converge() {
    let conf = data("tmlqcd/conf.48");
    let (out, v, _) = solve_with_history(&[
        conf.to_str().unwrap(),
        "--action",
        "staggered",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--point-source",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_converged_history(&v, 1e-10);
    assert_eq!(v["lattice"], serde_json::json!([4, 4, 4, 8]));
    let (out, v, _) = solve_with_history(&[
        conf.to_str().unwrap(),
        "--kappa",
        "0.15",
        "--solver",
        "cgnr",
        "--tol",
        "1e-9",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_converged_history(&v, 1e-9);
}

/// Asqtad with the default u0 = P^{1/4} (MILC's convention): the u0 reported, printed
/// with 6 decimals, satisfies u0⁴ = P for the plaquette of the file.
#[test]
fn asqtad_uses_the_fourth_root_of_the_plaquette() {
    let l8 = data("milc/lat.sample.l8");
    let (out, v, _) = solve_with_history(&[
        l8.to_str().unwrap(),
        "--action",
        "asqtad",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--precision",
        "f32",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_converged_history(&v, 1e-10);
    let parameters = v["parameters"].as_str().unwrap();
    let u0: f64 = parameters
        .split("u0 = ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no u0 in {parameters:?}"));
    let file = read_gauge(&l8, &ReadOptions::default()).unwrap();
    let p = plaquette(&file.field).average;
    assert!((u0.powi(4) - p).abs() < 4e-6, "u0 = {u0}, P = {p}");
}

/// Non-convergence exits non-zero, after writing the history.
#[test]
fn iteration_limit_is_an_error_with_the_history_saved() {
    let (out, v, _) = solve_with_history(&[
        data("milc/lat.sample.l8").to_str().unwrap(),
        "--kappa",
        "0.12",
        "--max-iter",
        "3",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("did not converge"),
        "{}",
        stderr(&out)
    );
    assert_eq!(v["converged"], Value::Bool(false));
    assert_eq!(v["reason"], "iteration limit reached");
    assert_eq!(v["iterations"], 3);
}

/// Bad input: each refusal names what was wrong.
#[test]
fn bad_input_fails_with_a_clear_message() {
    let l8 = data("milc/lat.sample.l8");
    let l8 = l8.to_str().unwrap();
    let cases: [(&[&str], &str); 12] = [
        (&[l8, "--kappa", "0"], "--kappa must be a positive"),
        (&[l8, "--kappa", "-0.1"], "--kappa must be a positive"),
        (
            &[l8, "--action", "staggered", "--mass", "-0.1"],
            "--mass must be",
        ),
        (&[l8, "--action", "asqtad"], "needs --mass"),
        (
            &[l8, "--kappa", "0.12", "--solver", "cg"],
            "is not: use cgnr",
        ),
        (&[l8, "--action", "tm", "--kappa", "0.1"], "unknown action"),
        (
            &[l8, "--action", "clover", "--kappa", "0.1"],
            "the clover action needs --csw C",
        ),
        (
            &[l8, "--action", "clover", "--kappa", "0.1", "--csw", "-1"],
            "--csw must be a finite number ≥ 0, found -1",
        ),
        (
            &[l8, "--action", "twisted-mass", "--kappa", "0.1"],
            "the twisted-mass action needs --mu",
        ),
        (
            &[l8, "--kappa", "0.1", "--mu", "0.05"],
            "--mu does not apply to the wilson action",
        ),
        (
            &[l8, "--action", "hisq", "--mass", "0.05", "--u0", "0.9"],
            "--u0 does not apply to the hisq action",
        ),
        (
            &["/nonexistent/lat", "--kappa", "0.1"],
            "cannot read the gauge",
        ),
    ];
    for (args, message) in cases {
        let out = qdsl(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

/// The low precisions 16-bit fixed point and f16 (emulated on the CPU: f64 fields
/// rounded through the format) reach 1e-10 on MILC's 8⁴ sample only through reliable
/// updates (their unit round-offs are 1.5e-5 and 4.9e-4), and say so in the summary.
#[test]
fn fixed16_and_f16_mixed_precision_converge_with_reliable_updates() {
    for (precision, described) in [
        ("fixed16", "f64–fixed16 (reliable updates)"),
        ("f16", "f64–f16 (reliable updates)"),
    ] {
        let (out, v, _) = solve_with_history(&[
            data("milc/lat.sample.l8").to_str().unwrap(),
            "--kappa",
            "0.12",
            "--solver",
            "cgnr",
            "--precision",
            precision,
            "--tol",
            "1e-10",
        ]);
        assert!(out.status.success(), "{precision}: {}", stderr(&out));
        assert_converged_history(&v, 1e-10);
        assert_eq!(v["precision"], described);
        assert!(
            v["reliable_updates"].as_u64().unwrap() >= 2,
            "{precision}: {v}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("emulated on the CPU"), "{stdout}");
    }
}

/// `--backend cuda`: on a machine without a GPU a clear error, on one with a GPU the
/// solve runs there ("backend     cuda (<name>)"), converges, and its residual
/// recomputed on the CPU meets the tolerance. `--backend auto` without a GPU says so in
/// one line and solves on the CPU.
#[test]
fn the_backend_flag_picks_the_gpu_or_explains_why_not() {
    let l8 = data("milc/lat.sample.l8");
    let args = [
        l8.to_str().unwrap(),
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
        "--precision",
        "fixed16",
        "--backend",
        "cuda",
    ];
    let out = qdsl(&args);
    let err = stderr(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if err.contains("the CUDA backend is not available") {
        assert!(!out.status.success());
        let auto = qdsl(&[l8.to_str().unwrap(), "--kappa", "0.12", "--backend", "auto"]);
        assert!(auto.status.success(), "{}", stderr(&auto));
        let notices: Vec<String> = stderr(&auto)
            .lines()
            .filter(|l| l.contains("using the CPU backend"))
            .map(str::to_string)
            .collect();
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(String::from_utf8_lossy(&auto.stdout).contains("backend     CPU\n"));
    } else {
        assert!(out.status.success(), "{err}");
        assert!(stdout.contains("backend     cuda ("), "{stdout}");
        assert!(
            stdout.contains("f64–fixed16 (reliable updates)"),
            "{stdout}"
        );
        let recomputed: f64 = stdout
            .lines()
            .find_map(|l| l.split("recomputed ").nth(1))
            .and_then(|r| r.trim().parse().ok())
            .expect("a recomputed residual in the summary");
        assert!(recomputed <= 1e-10, "{stdout}");
    }
}

/// The parameter line of the JSON history.
fn parameters(v: &Value) -> &str {
    v["parameters"].as_str().expect("parameters is a string")
}

/// Clover (c_sw = 1) and twisted clover (μ = 0.05, c_sw = 1) with κ = 0.12 on MILC's 8⁴
/// sample converge to 1e-10 in f64 and f64–f32 with BiCGStab, the residual recomputed
/// in f64 meeting the tolerance; the action line states the (m + 4) normalisation
/// (m + 4 = 1/(2κ) = 4.166667).
#[test]
fn clover_and_twisted_mass_converge_on_the_milc_sample() {
    let l8 = data("milc/lat.sample.l8");
    for extra in [
        &["--action", "clover", "--csw", "1"][..],
        &["--action", "twisted-mass", "--mu", "0.05", "--csw", "1"][..],
    ] {
        for precision in ["f64", "f32"] {
            let mut args = vec![l8.to_str().unwrap(), "--kappa", "0.12"];
            args.extend(extra);
            args.extend(["--solver", "bicgstab", "--precision", precision]);
            let (out, v, _) = solve_with_history(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            assert_converged_history(&v, 1e-10);
            assert_eq!(v["action"], extra[1]);
            let p = parameters(&v);
            assert!(
                p.contains("c_sw = 1") && p.contains("4.166667 × the Wilson"),
                "{p}"
            );
        }
    }
}

/// Pure twisted mass (c_sw = 0, μ = 0.1) converges with CGNR, μ being reported.
#[test]
fn twisted_mass_converges_with_cgnr() {
    let (out, v, _) = solve_with_history(&[
        data("milc/lat.sample.l8").to_str().unwrap(),
        "--action",
        "twisted-mass",
        "--kappa",
        "0.12",
        "--mu",
        "0.1",
        "--solver",
        "cgnr",
        "--precision",
        "f32",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_converged_history(&v, 1e-10);
    assert!(parameters(&v).contains("c_sw = 0, μ = 0.1"), "{v}");
}

/// HISQ (ε = 0, no tadpole factor) with CG on MILC's 8⁴ sample in f64 and f64–f32.
#[test]
fn hisq_converges_on_the_milc_sample() {
    for precision in ["f64", "f32"] {
        let (out, v, _) = solve_with_history(&[
            data("milc/lat.sample.l8").to_str().unwrap(),
            "--action",
            "hisq",
            "--mass",
            "0.05",
            "--solver",
            "cg",
            "--precision",
            precision,
        ]);
        assert!(out.status.success(), "{precision}: {}", stderr(&out));
        assert_converged_history(&v, 1e-10);
        assert_eq!(v["action"], "hisq");
        assert!(parameters(&v).contains("ε_Naik = 0, u0 = 1"), "{v}");
    }
}

/// Clover runs on either backend: `--backend cuda` solves on the GPU where there is one
/// (else the backend error names the missing CUDA backend), `--backend cpu` on the CPU,
/// and both converge.
#[test]
fn clover_solves_on_the_backend_asked_for() {
    let l8 = data("milc/lat.sample.l8");
    let base = [
        l8.to_str().unwrap(),
        "--action",
        "clover",
        "--kappa",
        "0.12",
        "--csw",
        "1",
        "--solver",
        "bicgstab",
        "--backend",
    ];
    let mut cuda = base.to_vec();
    cuda.push("cuda");
    let out = qdsl(&cuda);
    if !out.status.success() {
        let err = stderr(&out);
        assert!(err.contains("the CUDA backend is not available"), "{err}");
    } else {
        assert!(String::from_utf8_lossy(&out.stdout).contains("backend     CUDA"));
    }
    let mut cpu = base.to_vec();
    cpu.push("cpu");
    let out = qdsl(&cpu);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("backend     CPU\n"));
}
