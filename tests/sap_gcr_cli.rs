//! `qdsl solve --solver sap-gcr` as a user runs it: static and adaptive SAP+GCR on
//! MILC's 4⁴ sample configuration with the JSON history and the SVG plot, and the
//! refusals of bad input.

mod cli_common;

use cli_common::{data, qdsl_solve as qdsl, stderr, stdout};
use serde_json::Value;

/// Clover and Wilson, static and adaptive, f32 SAP vectors (the default): converged to
/// 1e-10 with the residual recomputed in f64; the JSON has the counts, a history from
/// the true residual 1 to a last true residual ≤ 1e-10, and the plot is an SVG.
#[test]
fn sap_gcr_solves_with_history_and_plot() {
    let config = data("milc/lat.sample.l4444");
    for (action, adaptive) in [("clover", false), ("clover", true), ("wilson", true)] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("h.json");
        let svg = dir.path().join("h.svg");
        let mut args = vec![
            config.to_str().unwrap(),
            "--action",
            action,
            "--kappa",
            "0.12",
            "--csw",
            "1.0",
            "--solver",
            "sap-gcr",
            "--block",
            "2,2,2,2",
            "--ncy",
            "4",
            "--nmr",
            "4",
            "--nkv",
            "8",
            "--json",
            json.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ];
        if action == "wilson" {
            args.retain(|a| *a != "--csw" && *a != "1.0");
        }
        if adaptive {
            args.push("--adaptive");
        }
        let out = qdsl(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("SAP 2x2x2x2"), "{}", stdout(&out));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["converged"], Value::Bool(true), "{v}");
        assert!(v["recomputed_residual"].as_f64().unwrap() <= 1e-10);
        assert_eq!(v["inner_precision"], "f32");
        let its = v["iterations"].as_u64().unwrap();
        assert!(its > 0 && v["sap"]["applications"].as_u64().unwrap() >= its);
        let history = v["history"].as_array().unwrap();
        assert_eq!(history[0]["residual"].as_f64(), Some(1.0));
        let last = history.last().unwrap();
        assert_eq!(last["kind"], "true");
        assert!(last["residual"].as_f64().unwrap() <= 1e-10);
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    }
}

/// Blocks that do not tile the lattice, a block list of 3 numbers, a staggered
/// action and a missing κ are refused with messages naming the problem.
#[test]
fn sap_gcr_refuses_bad_input() {
    let config = data("milc/lat.sample.l4444");
    let c = config.to_str().unwrap();
    let base = [
        c, "--action", "clover", "--csw", "1.0", "--solver", "sap-gcr",
    ];
    let run = |extra: &[&str]| {
        let out = qdsl(&[&base[..], extra].concat());
        assert!(!out.status.success());
        stderr(&out)
    };
    let e = run(&["--kappa", "0.12", "--block", "3,4,4,4"]);
    assert!(e.contains("SAP blocks [3, 4, 4, 4]"), "{e}");
    let e = run(&["--kappa", "0.12", "--block", "2,2,2"]);
    assert!(e.contains("--block takes 4 extents"), "{e}");
    let e = run(&[]);
    assert!(e.contains("--kappa"), "{e}");
    let out = qdsl(&[
        c,
        "--action",
        "staggered",
        "--mass",
        "0.1",
        "--solver",
        "sap-gcr",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Wilson and clover"),
        "{}",
        stderr(&out)
    );
}
