//! `qdsl inspect`: read gauge configurations and report what they hold.

use super::CliError;
use clap::Args;
use qdsl_core::gauge::{link_trace, plaquette};
use qdsl_core::io::{read_gauge, Check, GaugeFile, IoError, ReadOptions};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Gauge configuration files; the format is recognised from the content.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The files hold smeared links (e.g. MILC fat/long links): skip the unitarity check.
    #[arg(long)]
    smeared: bool,
}

/// Reads every file and prints its summary; the first unreadable file is the error.
pub fn run(args: &InspectArgs) -> Result<(), CliError> {
    let options = if args.smeared {
        ReadOptions::smeared_links()
    } else {
        ReadOptions::default()
    };
    for path in &args.files {
        let start = Instant::now();
        let file = read_gauge(path, &options).map_err(|e| -> CliError {
            match e {
                IoError::NonUnitary { .. } if !args.smeared => {
                    format!("{e}\n  (smeared links such as MILC's fat and long links are not unitary: pass --smeared)").into()
                }
                e => e.into(),
            }
        })?;
        print_summary(&file, start.elapsed().as_secs_f64());
    }
    Ok(())
}

fn print_summary(file: &GaugeFile, seconds: f64) {
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
        "  plaquette   P = {:.14}   (MILC's ss = {:.10}, st = {:.10})",
        p.average, p.spatial, p.temporal
    );
    println!("  link trace  {:.14}", link_trace(&file.field));
    for check in &file.checks {
        println!("  verified    {}", describe(check));
    }
    println!("  read in     {:.1} ms", seconds * 1e3);
}

fn describe(check: &Check) -> String {
    match check {
        Check::MilcChecksum { sum29, sum31 } => {
            format!("MILC checksum sum29 = {sum29:#010x}, sum31 = {sum31:#010x}")
        }
        Check::NerscChecksum(sum) => format!("NERSC CHECKSUM = {sum:08x}"),
        Check::ScidacChecksum { suma, sumb } => {
            format!("SciDAC checksum suma = {suma:#x}, sumb = {sumb:#x}")
        }
        Check::Observable {
            name,
            recorded,
            computed,
            tolerance,
        } => format!(
            "{name}: recorded {recorded:.12}, computed {computed:.12} (tolerance {tolerance:.1e})"
        ),
        Check::Links {
            max_unitarity_deviation,
            tolerance,
        } => match tolerance {
            Some(t) => format!(
                "links finite and unitary: max |U†U − 1| = {max_unitarity_deviation:.2e} \
                 (tolerance {t:.1e})"
            ),
            None => format!(
                "links finite (unitarity not required): max |U†U − 1| = \
                 {max_unitarity_deviation:.2e}"
            ),
        },
    }
}
