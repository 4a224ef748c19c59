//! How `qdsl` reads gauge files, as a user runs it: `inspect` on several files (every
//! file reported, a non-zero exit at the end), full-precision observables, and the
//! shared reading options `--ignore-checksum`, `--unitarity-tol` and `--reunitarize`
//! of `inspect`, `solve`, `correlator` and `smear`.

mod cli_common;

use cli_common::{data, qdsl, stderr, stdout};

use qdsl_core::io::lime::{find_record, parse_lime};
use qdsl_core::io::lime_gauge::{write_lime_gauge, LimeWriteOptions};
use qdsl_core::io::{read_gauge, ReadOptions};
use std::path::{Path, PathBuf};

/// conf.48 with one stored f64's lowest byte flipped: the SciDAC checksum fails, the
/// links stay unitary to rounding.
fn corrupted_conf48(dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(data("tmlqcd/conf.48")).unwrap();
    let records = parse_lime(&bytes, Path::new("conf.48")).unwrap();
    let at = find_record(&records, "ildg-binary-data")
        .unwrap()
        .data_offset() as usize
        + 12343;
    bytes[at] ^= 0x80;
    let path = dir.join("conf.48.corrupt");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// conf.48 with every link scaled by 1 + 1e-9 (‖U†U − 1‖ ≈ 3.5e-9), in f64.
fn slightly_non_unitary_conf48(dir: &Path) -> PathBuf {
    let mut field = read_gauge(data("tmlqcd/conf.48"), &ReadOptions::default())
        .unwrap()
        .field;
    for l in field.links_mut() {
        *l = l.scale(1.0 + 1e-9);
    }
    let path = dir.join("conf.48.scaled");
    write_lime_gauge(&path, &field, &LimeWriteOptions::default()).unwrap();
    path
}

#[test]
fn inspect_reports_every_file_and_fails_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, [0x78u8; 64]).unwrap();
    let conf = data("tmlqcd/conf.48");
    let nersc = data("chroma/t_nersc.cfg");
    let out = qdsl(&[
        "inspect",
        conf.to_str().unwrap(),
        junk.to_str().unwrap(),
        nersc.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(!out.status.success(), "{text}");
    // Both good files are summarised, before and after the bad one.
    assert_eq!(text.matches("plaquette   P = ").count(), 2, "{text}");
    assert!(text.contains("FAILED") && text.contains("unrecognised gauge-file format"));
    assert!(
        stderr(&out).contains("1 of 3 files failed") && stderr(&out).contains("junk.bin"),
        "{}",
        stderr(&out)
    );
    // Full precision: tmLQCD's P = 0.63500557222887 to 17 significant digits, and the
    // recorded xlf-info plaquette verified.
    assert!(text.contains("P = 6.3500557222887144e-1"), "{text}");
    assert!(
        text.contains("`xlf-info` plaquette: recorded 0.6350056"),
        "{text}"
    );
}

#[test]
fn ignore_checksum_turns_a_mismatch_into_a_one_line_warning() {
    let dir = tempfile::tempdir().unwrap();
    let bad = corrupted_conf48(dir.path());
    let bad = bad.to_str().unwrap();
    let out = qdsl(&["inspect", bad]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("SciDAC checksum"), "{}", stdout(&out));
    let out = qdsl(&["inspect", "--ignore-checksum", bad]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("IGNORED"), "{}", stdout(&out));
    // solve: the warning is one line on stderr naming file, expected and found sums.
    let out = qdsl(&[
        "solve",
        bad,
        "--kappa",
        "0.12",
        "--tol",
        "1e-8",
        "--ignore-checksum",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .map(str::to_string)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", stderr(&out));
    let w = &warnings[0];
    assert!(
        w.contains(bad)
            && w.contains("expected suma = 1c231a18, sumb = 003c553b")
            && w.contains("found suma = "),
        "{w}"
    );
    // Without the flag, solve refuses.
    let out = qdsl(&["solve", bad, "--kappa", "0.12", "--tol", "1e-8"]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("SciDAC checksum") && e.contains("mismatch"),
        "{e}"
    );
}

#[test]
fn unitarity_tol_and_reunitarize_accept_links_off_su3() {
    let dir = tempfile::tempdir().unwrap();
    let scaled = slightly_non_unitary_conf48(dir.path());
    let scaled = scaled.to_str().unwrap();
    let out = qdsl(&["inspect", scaled]);
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("is not unitary")
            && text.contains("--unitarity-tol 7e-9")
            && !text.contains("--smeared"),
        "{text}"
    );
    let out = qdsl(&["inspect", "--unitarity-tol", "1e-8", scaled]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("(tolerance 1.0e-8)"),
        "{}",
        stdout(&out)
    );
    let out = qdsl(&["inspect", "--reunitarize", scaled]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("reunitarised the links"),
        "{}",
        stdout(&out)
    );
    // The same options on the correlator and smear commands.
    let out = qdsl(&[
        "correlator",
        scaled,
        "--kappa",
        "0.12",
        "--tol",
        "1e-8",
        "--reunitarize",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("reunitarised the links"),
        "{}",
        stderr(&out)
    );
    let fat = dir.path().join("fat");
    let long = dir.path().join("long");
    let out = qdsl(&[
        "smear",
        scaled,
        "--links",
        "asqtad",
        "--u0",
        "0.9",
        "--out-fat",
        fat.to_str().unwrap(),
        "--out-long",
        long.to_str().unwrap(),
        "--unitarity-tol",
        "1e-8",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A bad tolerance is refused by name.
    let out = qdsl(&["inspect", "--unitarity-tol", "0", scaled]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("--unitarity-tol must be a positive finite number"));
}
