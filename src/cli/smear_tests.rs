//! `qdsl smear` on the CPU: MILC's fat.l8 and long.l8 reproduced from lat.sample.l8, the
//! written files' SciDAC checksums, fat7 and HISQ of unit links, HISQ files against
//! `qdsl_kernels::hisq_links`, and the flag errors.

use super::*;
use crate::cli::Cli;
use clap::Parser;
use qdsl_core::io::{read_gauge, Check, GaugeFileFormat, ReadOptions};

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/milc")
        .join(file)
}

/// Parses and runs `qdsl --backend cpu smear …`.
fn smear_cli(args: &[&str]) -> Result<(), CliError> {
    let mut all = vec!["qdsl", "--backend", "cpu", "smear"];
    all.extend_from_slice(args);
    Cli::try_parse_from(all)?.run()
}

/// max |a − b| over all link components, over max |b|.
fn rel(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (x, y) in a.links().iter().zip(b.links()) {
        d = d.max((*x - *y).max_abs_component());
        m = m.max(y.max_abs_component());
    }
    d / m
}

/// Writing lat.sample.l8's asqtad links (u0 = 0.502, SciDAC f32, the defaults) and
/// reading them back gives MILC's own fat.l8 and long.l8 to f32 rounding, and the reader
/// verifies each file's SciDAC checksum.
#[test]
fn cpu_smear_reproduces_milc_fat_and_long_links() {
    let dir = tempfile::tempdir().unwrap();
    let (fat, long) = (dir.path().join("fat"), dir.path().join("long"));
    let config = data("lat.sample.l8");
    smear_cli(&[
        config.to_str().unwrap(),
        "--links",
        "asqtad",
        "--u0",
        "0.502",
        "--out-fat",
        fat.to_str().unwrap(),
        "--out-long",
        long.to_str().unwrap(),
    ])
    .unwrap();
    for (ours, milc) in [(fat, "fat.l8"), (long, "long.l8")] {
        let file = read_gauge(&ours, &ReadOptions::smeared_links()).unwrap();
        assert_eq!(file.format, GaugeFileFormat::Lime(LimeFlavour::Scidac));
        assert_eq!(file.precision, Precision::Single);
        assert!(
            file.checks
                .iter()
                .any(|c| matches!(c, Check::ScidacChecksum { .. })),
            "{:?}",
            file.checks
        );
        let reference = read_gauge(data(milc), &ReadOptions::smeared_links()).unwrap();
        let r = rel(&file.field, &reference.field);
        // Both are f32 roundings of the same links: a few units of 2⁻²⁴ relative.
        assert!(r < 2e-6, "{milc}: relative difference {r:e}");
    }
}

/// Writes unit links on a 4⁴ lattice to `dir`/unit.lime (LIME, f64): (path, lattice).
fn write_unit_links(dir: &std::path::Path) -> (std::path::PathBuf, qdsl_core::lattice::Lattice) {
    let unit = dir.join("unit.lime");
    let lat = qdsl_core::lattice::Lattice::new([4, 4, 4, 4]).unwrap();
    write_lime_gauge(
        &unit,
        &GaugeField::<f64>::unit(lat),
        &LimeWriteOptions::default(),
    )
    .unwrap();
    (unit, lat)
}

/// Fat7 of unit links at u0 = 1 is 1/8 + 6/16 + 24/64 + 48/384 = 1 times the staggered
/// phase: the written NERSC f64 file holds ±identity links.
#[test]
fn fat7_of_unit_links_is_the_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (unit, lat) = write_unit_links(dir.path());
    let out = dir.path().join("fat7.nersc");
    smear_cli(&[
        unit.to_str().unwrap(),
        "--links",
        "fat7",
        "--u0",
        "1",
        "--out-fat",
        out.to_str().unwrap(),
        "--format",
        "nersc",
        "--precision",
        "f64",
    ])
    .unwrap();
    let fat = read_gauge(&out, &ReadOptions::smeared_links())
        .unwrap()
        .field;
    for cb in 0..lat.volume() {
        let c = lat.coords_of_cb(cb);
        for mu in 0..4 {
            let boundary = if mu == 3 && c[3] == 3 { -1.0 } else { 1.0 };
            let phase = qdsl_kernels::staggered_phase(c, mu) * boundary;
            let d = (*fat.link(cb, mu) - qdsl_core::math::ColourMatrix::identity().scale(phase))
                .max_abs_component();
            assert!(d < 1e-14, "site {c:?} μ = {mu}: |Δ| = {d:e}");
        }
    }
}

/// Runs `qdsl smear config --links hisq --out-fat … --out-long …` plus `flags` (SciDAC
/// f64) and reads the two files back.
fn hisq_files(config: &Path, flags: &[&str]) -> (GaugeField<f64>, GaugeField<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let (fat, long) = (dir.path().join("fat"), dir.path().join("long"));
    let mut args = vec![
        config.to_str().unwrap(),
        "--links",
        "hisq",
        "--out-fat",
        fat.to_str().unwrap(),
        "--out-long",
        long.to_str().unwrap(),
        "--precision",
        "f64",
    ];
    args.extend_from_slice(flags);
    smear_cli(&args).unwrap();
    let read = |p: &Path| read_gauge(p, &ReadOptions::smeared_links()).unwrap().field;
    (read(&fat), read(&long))
}

/// The HISQ fat and long links written from lat.sample.l8 (f64 SciDAC, ε = −0.05) read
/// back exactly as `qdsl_kernels::hisq_links` computes them, and the default ε is 0
/// (differs from ε = −0.05 by (ε/8) W in X, a visible amount).
#[test]
fn cpu_hisq_files_read_back_as_hisq_links() {
    let config = data("lat.sample.l8");
    let u = read_gauge(&config, &ReadOptions::default()).unwrap().field;
    let (fat, long) = hisq_files(&config, &["--epsilon-naik", "-0.05"]);
    let (x, l) = hisq_links(&u, -0.05).unwrap();
    assert_eq!(rel(&fat, &x), 0.0);
    assert_eq!(rel(&long, &l), 0.0);
    let (fat0, long0) = hisq_files(&config, &[]);
    let (x0, l0) = hisq_links(&u, 0.0).unwrap();
    assert_eq!(rel(&fat0, &x0), 0.0);
    assert_eq!(rel(&long0, &l0), 0.0);
    assert!(rel(&fat0, &x) > 1e-3, "{:e}", rel(&fat0, &x));
}

/// HISQ of unit links: fat7 of unit links is 1 (unitary, so W = 1), the second level is
/// the asqtad sum at u0 = 1, so X = 9/8 + ε/8 and L = −(1 + ε)/24, times the staggered
/// phase with the antiperiodic time boundary (issue 6's recorded values).
#[test]
fn hisq_of_unit_links_is_nine_eighths_plus_eps() {
    let dir = tempfile::tempdir().unwrap();
    let (unit, lat) = write_unit_links(dir.path());
    let eps = 0.25;
    let (fat, long) = hisq_files(&unit, &["--epsilon-naik", "0.25"]);
    for cb in 0..lat.volume() {
        let c = lat.coords_of_cb(cb);
        for mu in 0..4 {
            let boundary = if mu == 3 && c[3] == 3 { -1.0 } else { 1.0 };
            let phase = qdsl_kernels::staggered_phase(c, mu) * boundary;
            // The long link crosses the boundary from t = 1, 2, 3: one boundary sign.
            let long_boundary = if mu == 3 && c[3] >= 1 { -1.0 } else { 1.0 };
            let long_phase = qdsl_kernels::staggered_phase(c, mu) * long_boundary;
            let one = qdsl_core::math::ColourMatrix::identity();
            let dx = (*fat.link(cb, mu) - one.scale(phase * (9.0 + eps) / 8.0)).max_abs_component();
            let dl = (*long.link(cb, mu) - one.scale(-long_phase * (1.0 + eps) / 24.0))
                .max_abs_component();
            assert!(
                dx < 1e-14 && dl < 1e-14,
                "site {c:?} μ = {mu}: {dx:e} {dl:e}"
            );
        }
    }
}

fn error_of(args: &[&str]) -> String {
    match smear_cli(args) {
        Err(e) => e.to_string(),
        Ok(()) => panic!("expected an error for {args:?}"),
    }
}

/// Bad flags are refused with messages naming what was expected and found.
#[test]
fn bad_flags_give_clear_errors() {
    let config = data("lat.sample.l8");
    let c = config.to_str().unwrap();
    // (the flags after the configuration, what the message must contain)
    let cases: [(&str, &[&str]); 10] = [
        ("--links hisk --out-fat f", &["hisk", "hisq", "asqtad"]),
        (
            "--links hisq --u0 0.9 --out-fat f --out-long l",
            &[
                "--u0 does not apply to the hisq action",
                "found --u0 0.9",
                "u0 = 1",
            ],
        ),
        ("--links hisq --out-fat f", &["--out-long is required"]),
        ("--links fat7 --out-fat f", &["need --u0"]),
        (
            "--links asqtad --u0 1 --epsilon-naik 0.1 --out-fat f --out-long l",
            &["--epsilon-naik is a HISQ coefficient", "0.1"],
        ),
        (
            "--links asqtad --u0 0 --out-fat f --out-long l",
            &["--u0 must be a finite number > 0, found 0"],
        ),
        (
            "--links asqtad --u0 0.5 --out-fat f",
            &["--out-long is required"],
        ),
        (
            "--links fat7 --u0 1 --out-fat f --out-long l",
            &["fat7 has no long links"],
        ),
        (
            "--links fat7 --u0 1 --out-fat f --format milc --precision f64",
            &["single precision only"],
        ),
        (
            "--links asqtad --u0 1 --out-fat f --out-long f",
            &["same file"],
        ),
    ];
    for (flags, expected) in cases {
        let args: Vec<&str> = std::iter::once(c).chain(flags.split_whitespace()).collect();
        let e = error_of(&args);
        for part in expected {
            assert!(e.contains(part), "{flags}: {e}");
        }
    }
    let e = error_of(&[
        "/nonexistent/cfg",
        "--links",
        "fat7",
        "--u0",
        "1",
        "--out-fat",
        "f",
    ]);
    assert!(e.contains("/nonexistent/cfg"), "{e}");
}
