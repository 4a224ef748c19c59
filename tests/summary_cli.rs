//! Honest output, as a user sees it: the set-up (file read, smearing, JIT, tuning) apart
//! from the solve in the summaries and the JSON of `solve` and `correlator`, GFLOP/s of
//! the solve only, the correlator's normalisation stated, and HISQ's u0 = 1 accepted.

mod cli_common;

use cli_common::{data, qdsl};

use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn solve_summary_and_json_split_setup_from_the_solve() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("hist.json");
    let config = data("milc/lat.sample.l4444");
    // HISQ: the smearing is set-up; --u0 1 is HISQ's own value and accepted.
    let out = qdsl(&[
        "solve",
        config.to_str().unwrap(),
        "--action",
        "hisq",
        "--mass",
        "0.1",
        "--u0",
        "1",
        "--solver",
        "cg",
        "--json",
        hist.to_str().unwrap(),
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("set-up") && t.contains("JIT and tuning"), "{t}");
    assert!(t.contains("(operator flops of the solve only)"), "{t}");
    let v = json(&hist);
    let (read, setup, solve) = (
        v["file_read_seconds"].as_f64().unwrap(),
        v["setup_seconds"].as_f64().unwrap(),
        v["solve_seconds"].as_f64().unwrap(),
    );
    assert!(read > 0.0 && setup > 0.0 && solve > 0.0, "{v}");
    assert_eq!(v["seconds"].as_f64().unwrap(), solve);
    // GFLOP/s is the solve's operator flops over the solve's time.
    let flops_per_second = v["gflops"].as_f64().unwrap() * 1e9 * solve;
    assert!(flops_per_second > 0.0);
    // Any other u0 is refused with the reason.
    let out = qdsl(&[
        "solve",
        config.to_str().unwrap(),
        "--action",
        "hisq",
        "--mass",
        "0.1",
        "--u0",
        "0.9",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("u0 = 1 by construction"),
        "{}",
        text(&out)
    );
}

#[test]
fn correlator_states_its_normalisation_and_times() {
    let dir = tempfile::tempdir().unwrap();
    let config = data("milc/lat.sample.l4444");
    let run = |normalisation: &str| {
        let path = dir.path().join(format!("{normalisation}.json"));
        let out = qdsl(&[
            "correlator",
            config.to_str().unwrap(),
            "--action",
            "hisq",
            "--u0",
            "1",
            "--mass",
            "0.5",
            "--tol",
            "1e-9",
            "--normalisation",
            normalisation,
            "--json",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        (text(&out), json(&path))
    };
    let (none_text, none) = run("none");
    let (milc_text, milc) = run("milc");
    assert!(none_text.contains("C(t) = Σ_x Σ_ab |G_ab(x, x0)|² (--normalisation none, divisor 1)"));
    assert!(
        milc_text.contains("/ (Lx Ly Lz)², MILC's ks_spectrum point-source pion")
            && milc_text.contains("(--normalisation milc, divisor 4096)"),
        "{milc_text}"
    );
    assert!(
        milc_text.contains("set-up") && milc_text.contains("solves"),
        "{milc_text}"
    );
    assert_eq!(milc["normalisation"]["name"], "milc");
    assert_eq!(milc["normalisation"]["divisor"], 4096.0);
    assert_eq!(none["normalisation"]["divisor"], 1.0);
    let values = |j: &Value| -> Vec<f64> {
        let c = j["correlator"].as_array().unwrap();
        c.iter().map(|v| v.as_f64().unwrap()).collect()
    };
    for (a, m) in values(&none).iter().zip(values(&milc)) {
        assert!((a / m / 4096.0 - 1.0).abs() < 1e-9, "none {a} vs milc {m}");
    }
    assert!(milc["setup_seconds"].as_f64().unwrap() > 0.0);
    assert!(milc["solve_seconds"].as_f64().unwrap() > 0.0);
    // --help states the normalisation.
    let out = qdsl(&["correlator", "--help"]);
    let help = text(&out);
    assert!(
        help.contains("--normalisation") && help.contains("(Lx Ly Lz)²"),
        "{help}"
    );
}
