//! `qdsl solve --boundary open|sf --cf X` as a user runs it: the Wilson-clover solve on
//! openQCD's own open-boundary file (read with the default checks, its zero links
//! recognised), the full system with a point source on an interior slice, `qdsl
//! inspect`'s report of the open boundary, and the refusals.

mod cli_common;

use cli_common::{data, qdsl, qdsl_solve, stderr, stdout};

fn clover_open(extra: &[&str]) -> std::process::Output {
    let file = data("openqcd/gauge.bc_0.bin");
    let mut args = vec![
        file.to_str().unwrap().to_string(),
        "--action".into(),
        "clover".into(),
        "--kappa".into(),
        "0.135".into(),
        "--csw".into(),
        "1.978".into(),
        "--solver".into(),
        "bicgstab".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    qdsl_solve(&args)
}

#[test]
fn clover_solve_with_open_boundaries_on_the_openqcd_file() {
    let out = clover_open(&["--boundary", "open", "--cf", "1.3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("open time boundaries, c_F = 1.3"), "{text}");
    assert!(text.contains("converged"), "{text}");
    // The full system, a point source on an interior slice; SF boundaries too.
    for boundary in [["--boundary", "open"], ["--boundary", "sf"]] {
        let mut args = boundary.to_vec();
        args.extend([
            "--cf",
            "1.3",
            "--source",
            "point",
            "--source-site",
            "1,2,3,2",
        ]);
        let out = clover_open(&args);
        assert!(out.status.success(), "{boundary:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("M ψ = η on every site"));
    }
}

#[test]
fn inspect_reports_the_open_boundary() {
    let file = data("openqcd/gauge.bc_0.bin");
    let out = qdsl(&["inspect", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("open time boundary (openQCD): the 64 time links"),
        "{text}"
    );
    assert!(
        text.contains("-2.7247910219612096e-3") || text.contains("-0.0027247910219612096"),
        "{text}"
    );
}

#[test]
fn bad_boundary_requests_are_refused_with_a_reason() {
    // c_F without open or SF boundaries.
    let out = clover_open(&["--cf", "1.3"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--cf and --cf-prime apply to --boundary open or sf"));
    // c_F' with open boundaries.
    let out = clover_open(&["--boundary", "open", "--cf-prime", "1.1"]);
    assert!(stderr(&out).contains("--cf-prime applies to --boundary sf only"));
    // An unknown boundary.
    let out = clover_open(&["--boundary", "dirichlet"]);
    assert!(stderr(&out).contains("expected periodic, antiperiodic, open or sf"));
    // A point source at the origin lies on the vanishing slice x0 = 0.
    let out = clover_open(&["--boundary", "open", "--point-source"]);
    assert!(stderr(&out).contains("vanish"), "{}", stderr(&out));
    // Staggered actions have no open boundaries.
    let file = data("openqcd/gauge.bc_0.bin");
    let out = qdsl_solve(&[
        file.to_str().unwrap(),
        "--action",
        "staggered",
        "--mass",
        "0.1",
        "--solver",
        "cgnr",
        "--boundary",
        "open",
    ]);
    assert!(
        stderr(&out).contains("not to staggered"),
        "{}",
        stderr(&out)
    );
}
