//! The `qdsl` command line: one module per subcommand.

mod inspect;

use clap::{Parser, Subcommand};

/// Boxed error returned by subcommands; `main` prints it with its chain of causes.
pub type CliError = Box<dyn std::error::Error + Send + Sync>;

/// qdsl: a kernel DSL for lattice QCD.
#[derive(Debug, Parser)]
#[command(name = "qdsl", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read gauge configurations (MILC, NERSC, ILDG/SciDAC LIME, openQCD), verify their
    /// checksums and recorded observables, and print plaquette, link trace and unitarity.
    Inspect(inspect::InspectArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub fn run(self) -> Result<(), CliError> {
        match self.command {
            Command::Inspect(args) => inspect::run(&args),
        }
    }
}
