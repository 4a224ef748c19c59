//! What the command-line tests share: the repository's test data, and `qdsl` run as a
//! user runs it, on the CPU backend unless the arguments name one.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A file of the repository's `tests/data`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// `qdsl ARGS`, with `--backend cpu` unless ARGS name a backend.
pub fn qdsl(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_qdsl"));
    command.args(args);
    if !args.contains(&"--backend") {
        command.args(["--backend", "cpu"]);
    }
    command.output().expect("the qdsl binary runs")
}

/// `qdsl solve ARGS` (see [`qdsl`]).
pub fn qdsl_solve(args: &[&str]) -> Output {
    qdsl(&[&["solve"], args].concat())
}

/// The standard output, lossily decoded.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The standard error, lossily decoded.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
