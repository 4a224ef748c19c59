//! `qdsl solve --source … --output …` as a user runs it: MILC's asqtad answer
//! `ksvector.ans.Minv` reproduced from MILC's source file on the command line, the
//! source kinds, the two output formats, and the refusals.

mod cli_common;

use cli_common::{data, qdsl_solve as qdsl, stderr, stdout};

use qdsl_core::field::ColourSpinorField;
use qdsl_core::io::{read_fermion, FermionFileFormat, FermionKind, Precision};
use std::process::Command;

/// The largest |ours − theirs| relative to the largest |theirs|.
fn max_deviation(ours: &ColourSpinorField<f64>, theirs: &ColourSpinorField<f64>) -> f64 {
    let scale = theirs.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
    let worst = ours
        .data()
        .iter()
        .zip(theirs.data())
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    worst / scale
}

#[test]
fn milcs_minv_answer_is_reproduced_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let answer = read_fermion(data("milc/ksvector.ans.Minv.sample.l8")).unwrap();
    for (format, precision) in [("scidac", "f32"), ("qdsl", "f64")] {
        let output = dir.path().join(format!("psi.{format}"));
        let l8 = data("milc/lat.sample.l8");
        let src = data("milc/ksvector.src.sample.l8");
        let out = qdsl(&[
            l8.to_str().unwrap(),
            "--action",
            "asqtad",
            "--mass",
            "0.1",
            "--u0",
            "0.502",
            "--solver",
            "cg",
            "--tol",
            "1e-12",
            "--source",
            src.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
            "--output-format",
            format,
            "--output-precision",
            precision,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("M ψ = η on every site"),
            "{}",
            stdout(&out)
        );
        let psi = read_fermion(&output).unwrap();
        assert_eq!(psi.kind, FermionKind::ColourVector);
        let expected_format = match format {
            "scidac" => FermionFileFormat::Scidac,
            _ => FermionFileFormat::Qdsl,
        };
        assert_eq!(psi.format, expected_format);
        let deviation = max_deviation(&psi.columns[0], &answer.columns[0]);
        println!("{format} {precision}: max deviation from MILC {deviation:.3e}");
        assert!(deviation < 1e-6, "{format}: {deviation:e}");
        if precision == "f32" {
            assert_eq!(psi.precision, Precision::Single);
        }
    }
}

#[test]
fn point_wall_z2_and_gaussian_sources_and_both_boundaries_solve_the_full_system() {
    let l8 = data("milc/lat.sample.l8");
    for source in ["point", "wall", "z2", "gaussian"] {
        let out = qdsl(&[
            l8.to_str().unwrap(),
            "--kappa",
            "0.12",
            "--solver",
            "bicgstab",
            "--source",
            source,
            "--source-site",
            "1,2,3,4",
            "--source-spin",
            "3",
        ]);
        assert!(out.status.success(), "{source}: {}", stderr(&out));
        assert!(stdout(&out).contains("converged"), "{}", stdout(&out));
    }
    let out = qdsl(&[
        l8.to_str().unwrap(),
        "--action",
        "asqtad",
        "--mass",
        "0.05",
        "--solver",
        "cg",
        "--source",
        "z2",
        "--boundary",
        "periodic",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(", periodic time)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn sources_that_do_not_fit_are_refused_with_a_reason() {
    let l8 = data("milc/lat.sample.l8");
    let src = data("milc/ksvector.src.sample.l8");
    let wilson = [
        l8.to_str().unwrap(),
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
    ];
    // A staggered vector for a Wilson solve.
    let mut args = wilson.to_vec();
    args.extend(["--source", src.to_str().unwrap()]);
    let err = stderr(&qdsl(&args));
    assert!(err.contains("4 spins") && err.contains("1 spins"), "{err}");
    // A source file that does not exist.
    let mut args = wilson.to_vec();
    args.extend(["--source", "/nonexistent/eta.lime"]);
    let err = stderr(&qdsl(&args));
    assert!(err.contains("/nonexistent/eta.lime"), "{err}");
    // A point outside the lattice.
    let mut args = wilson.to_vec();
    args.extend(["--source", "point", "--source-site", "0,0,0,8"]);
    assert!(!qdsl(&args).status.success());
    // --output without --source.
    let mut args = wilson.to_vec();
    args.extend(["--output", "x.lime"]);
    let err = stderr(&qdsl(&args));
    assert!(err.contains("--source"), "{err}");
}

/// Clover and twisted mass solve the full system too: a Z2 source, and a source FILE
/// (a Wilson solution written by `qdsl solve --output`, read back as η).
#[test]
fn clover_and_twisted_mass_solve_the_full_system_from_a_source_file() {
    let dir = tempfile::tempdir().unwrap();
    let l4 = data("milc/lat.sample.l4444");
    let eta = dir.path().join("eta.qdsl");
    let out = qdsl(&[
        l4.to_str().unwrap(),
        "--kappa",
        "0.12",
        "--solver",
        "bicgstab",
        "--source",
        "point",
        "--output",
        eta.to_str().unwrap(),
        "--output-format",
        "qdsl",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (action, extra) in [
        ("clover", ["--csw", "1"]),
        ("twisted-mass", ["--mu", "0.1"]),
    ] {
        for source in ["z2", eta.to_str().unwrap()] {
            let psi = dir.path().join(format!("psi-{action}.lime"));
            let mut args = vec![
                l4.to_str().unwrap(),
                "--action",
                action,
                "--kappa",
                "0.12",
                "--solver",
                "bicgstab",
                "--source",
                source,
                "--output",
                psi.to_str().unwrap(),
            ];
            args.extend(extra);
            let out = qdsl(&args);
            assert!(out.status.success(), "{action} {source}: {}", stderr(&out));
            assert!(
                stdout(&out).contains("M ψ = η on every site"),
                "{}",
                stdout(&out)
            );
            let written = read_fermion(&psi).unwrap();
            assert_eq!(written.kind, FermionKind::DiracFermion);
        }
    }
}

/// `qdsl correlator --save-propagator` writes the 3 columns of the asqtad point-source
/// propagator (labelled by source colour); each equals `qdsl solve --source point`'s
/// solution for that colour (a different reconstruction of the odd sites).
#[test]
fn saved_propagator_columns_are_the_point_source_solutions() {
    let dir = tempfile::tempdir().unwrap();
    let l8 = data("milc/lat.sample.l8");
    let saved = dir.path().join("prop.lime");
    let common = [
        "--action", "asqtad", "--mass", "0.1", "--u0", "0.502", "--solver", "cg", "--tol", "1e-12",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_qdsl"))
        .args(["correlator", l8.to_str().unwrap()])
        .args(common)
        .args([
            "--source",
            "1,2,3,4",
            "--save-propagator",
            saved.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("3 columns"), "{}", stdout(&out));
    let propagator = read_fermion(&saved).unwrap();
    assert_eq!(propagator.columns.len(), 3);
    assert_eq!(propagator.checks.len(), 3);
    let colour = "2";
    let solved = dir.path().join("psi.qdsl");
    let mut args = vec![l8.to_str().unwrap()];
    args.extend(common);
    args.extend(["--source", "point", "--source-site", "1,2,3,4"]);
    args.extend([
        "--source-colour",
        colour,
        "--output",
        solved.to_str().unwrap(),
    ]);
    args.extend(["--output-format", "qdsl"]);
    let out = qdsl(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let psi = read_fermion(&solved).unwrap();
    let deviation = max_deviation(&propagator.columns[2], &psi.columns[0]);
    assert!(deviation < 1e-9, "{deviation:e}");
}
