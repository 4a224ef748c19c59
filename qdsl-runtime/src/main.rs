//! The `qdsl` command-line program.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = qdsl_runtime::cli::Cli::parse();
    match cli.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qdsl: error: {e}");
            let mut source = std::error::Error::source(&*e);
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
