//! `qdsl inspect`: read gauge configurations and report what they hold.

use super::gauge_read::{read_config, ConfigRead, GaugeReadArgs};
use super::CliError;
use clap::Args;
use qdsl_core::gauge::{link_trace, plaquette};
use qdsl_core::io::{Check, UnitarityCheck};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Gauge configuration files; the format is recognised from the content.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The files hold smeared links (e.g. MILC fat/long links): skip the unitarity check.
    #[arg(long, conflicts_with_all = ["unitarity_tol", "reunitarize"])]
    smeared: bool,
    #[command(flatten)]
    read: GaugeReadArgs,
}

/// Reads every file and prints its summary, or its error; a non-zero exit (an error
/// listing the files that failed) at the end if any could not be read.
pub fn run(args: &InspectArgs) -> Result<(), CliError> {
    let unitarity = if args.smeared {
        UnitarityCheck::Off
    } else {
        UnitarityCheck::ForPrecision
    };
    let mut failed = Vec::new();
    for path in &args.files {
        match read_config(path, &args.read, unitarity, true) {
            Ok(read) => print_summary(&read),
            Err(e) => {
                println!("{}", path.display());
                println!(
                    "  FAILED      {}",
                    e.to_string().replace('\n', "\n              ")
                );
                failed.push(path.display().to_string());
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} files failed: {}",
            failed.len(),
            args.files.len(),
            failed.join(", ")
        )
        .into())
    }
}

fn print_summary(read: &ConfigRead) {
    let file = &read.file;
    let p = plaquette(&file.field);
    println!("{}", file.path.display());
    println!(
        "  format      {}, {} {}",
        file.format,
        file.precision.name(),
        file.byte_order.name()
    );
    println!("  lattice     {}", file.field.lattice());
    println!(
        "  plaquette   P = {:.16e}   (MILC's ss = {:.16e}, st = {:.16e})",
        p.average, p.spatial, p.temporal
    );
    println!("  link trace  {:.16e}", link_trace(&file.field));
    for check in &file.checks {
        println!("  {}", describe(check));
    }
    for note in read.notes() {
        println!("  note        {note}");
    }
    println!("  read in     {:.1} ms", read.seconds * 1e3);
}

/// One line per check: "verified …", or "IGNORED …" for a checksum mismatch.
fn describe(check: &Check) -> String {
    match check {
        Check::ChecksumMismatchIgnored { .. } => format!("IGNORED     {check} (--ignore-checksum)"),
        _ => format!("verified    {check}"),
    }
}
