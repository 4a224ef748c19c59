//! Command-line options that read and write fermion files: `qdsl solve`'s full system
//! M ψ = η (the source on every site, `--source`: gaussian, z2, point, wall or a fermion
//! file; the solution written with `--output`, `--output-format`, `--output-precision`)
//! and `qdsl correlator`'s `--save-propagator`.

use super::CliError;
use crate::app::propagator::Propagator;
use crate::app::solve::{FullSolveReport, FullSource, SolveReport};
use clap::{Args, ValueEnum};
use qdsl_core::io::{write_fermion, FermionFileFormat, FermionWriteOptions, Precision};
use qdsl_core::lattice::Coords;
use std::path::PathBuf;

/// A fermion-file format on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// SciDAC / QIO LIME, one `USQCD_*_ColorVector` or `USQCD_*_DiracFermion` record
    /// (big-endian, with a `scidac-checksum`): what MILC and Chroma read.
    Scidac,
    /// qdsl's plain binary after a one-line JSON header (little-endian).
    Qdsl,
}

impl From<OutputFormat> for FermionFileFormat {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Scidac => FermionFileFormat::Scidac,
            OutputFormat::Qdsl => FermionFileFormat::Qdsl,
        }
    }
}

/// The stored precision of an output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoredPrecision {
    /// IEEE single precision (MILC's sample files are f32).
    F32,
    /// IEEE double precision.
    F64,
}

impl From<StoredPrecision> for Precision {
    fn from(p: StoredPrecision) -> Self {
        match p {
            StoredPrecision::F32 => Precision::Single,
            StoredPrecision::F64 => Precision::Double,
        }
    }
}

/// The options of the full system.
#[derive(Debug, Args)]
pub struct FullSystemArgs {
    /// Solve the full system M ψ = η (M = 1 − κH for Wilson, A + iμγ5 − H/2 for clover
    /// and twisted mass, 2m + D for the staggered actions) with this source on every site:
    /// `gaussian` or `z2` (noise from --seed), `point` (at --source-site, spin
    /// --source-spin, colour --source-colour), `wall` (the time slice of --source-site),
    /// or a fermion file (SciDAC/QIO LIME or qdsl format, e.g. MILC's ksvector files;
    /// name a file called like a keyword `./point`). The even-odd system on the even
    /// sites is solved and the odd sites reconstructed. Without --source, the even-odd
    /// system M̂ x = b alone is solved with an even-site source.
    #[arg(long, conflicts_with = "point_source")]
    source: Option<String>,
    /// Site x,y,z,t of a point source; a wall source uses its t.
    #[arg(long, value_parser = parse_site, default_value = "0,0,0,0")]
    source_site: Coords,
    /// Spin component of a point or wall source (0 to 3; 0 for the staggered actions).
    #[arg(long, default_value_t = 0)]
    source_spin: usize,
    /// Colour component of a point or wall source (0 to 2).
    #[arg(long, default_value_t = 0)]
    source_colour: usize,
    /// Write the solution ψ (every site) to this file (needs --source).
    #[arg(long, requires = "source")]
    output: Option<PathBuf>,
    /// Format of --output.
    #[arg(long, default_value = "scidac", requires = "output")]
    output_format: OutputFormat,
    /// Stored precision of --output.
    #[arg(long, default_value = "f64", requires = "output")]
    output_precision: StoredPrecision,
}

/// Parses `x,y,z,t`.
fn parse_site(text: &str) -> Result<Coords, String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let parsed: Result<Vec<usize>, _> = parts.iter().map(|p| p.parse::<usize>()).collect();
    match parsed {
        Ok(v) if v.len() == 4 => Ok([v[0], v[1], v[2], v[3]]),
        _ => Err(format!(
            "expected four non-negative integers x,y,z,t, found {text:?}"
        )),
    }
}

impl FullSystemArgs {
    /// The full-lattice source asked for, `None` without `--source`.
    pub fn source(&self, seed: u64) -> Option<FullSource> {
        let (spin, colour) = (self.source_spin, self.source_colour);
        Some(match self.source.as_deref()? {
            "gaussian" => FullSource::Gaussian { seed },
            "z2" => FullSource::Z2 { seed },
            "point" => FullSource::Point {
                site: self.source_site,
                spin,
                colour,
            },
            "wall" => FullSource::Wall {
                t: self.source_site[3],
                spin,
                colour,
            },
            file => FullSource::File(PathBuf::from(file)),
        })
    }

    /// Prints the full system's lines of the summary and writes `--output`.
    pub fn finish(&self, full: &FullSolveReport, source: &FullSource) -> Result<(), CliError> {
        println!("  source      {} (every site)", source.describe());
        println!(
            "  system      M ψ = η on every site: the even-odd system on the even sites, \
             the odd sites reconstructed"
        );
        let Some(path) = &self.output else {
            return Ok(());
        };
        let options = FermionWriteOptions {
            precision: self.output_precision.into(),
            info: output_info(&full.report, source),
        };
        let format: FermionFileFormat = self.output_format.into();
        write_fermion(path, format, std::slice::from_ref(&full.solution), &options)
            .map_err(|e| format!("cannot write the solution: {e}"))?;
        println!(
            "  output      {} ({format}, {})",
            path.display(),
            options.precision.name()
        );
        Ok(())
    }
}

/// Where `qdsl correlator` writes its point-source propagator.
#[derive(Debug, Args)]
pub struct PropagatorOutputArgs {
    /// Write the propagator S(x, x₀) to this file: its columns, one per source spin σ and
    /// colour b (column σ · 3 + b; 3 for the staggered actions, 12 for Wilson), each a
    /// field on every site.
    #[arg(long)]
    save_propagator: Option<PathBuf>,
    /// Format of --save-propagator (scidac: one USQCD record per column, labelled with
    /// its spin and colour).
    #[arg(long, default_value = "scidac", requires = "save_propagator")]
    propagator_format: OutputFormat,
    /// Stored precision of --save-propagator.
    #[arg(long, default_value = "f64", requires = "save_propagator")]
    propagator_precision: StoredPrecision,
}

impl PropagatorOutputArgs {
    /// Writes the propagator when asked, with `info` as the file's description.
    pub fn write(&self, propagator: &Propagator, info: String) -> Result<(), CliError> {
        let Some(path) = &self.save_propagator else {
            return Ok(());
        };
        let options = FermionWriteOptions {
            precision: self.propagator_precision.into(),
            info,
        };
        let format: FermionFileFormat = self.propagator_format.into();
        write_fermion(path, format, &propagator.columns, &options)
            .map_err(|e| format!("cannot write the propagator: {e}"))?;
        println!(
            "  propagator  {} ({} columns, {format}, {})",
            path.display(),
            propagator.columns.len(),
            options.precision.name()
        );
        Ok(())
    }
}

/// The description stored in the output file.
fn output_info(report: &SolveReport, source: &FullSource) -> String {
    format!(
        "qdsl solve: psi = M^-1 eta, {} action ({}), source {}, solver {}, tolerance {:e}",
        report.action,
        report.parameters,
        source.describe(),
        report.solver,
        report.tolerance
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_parse_and_bad_ones_say_what_was_expected() {
        assert_eq!(parse_site("1, 2,3,4"), Ok([1, 2, 3, 4]));
        assert!(parse_site("1,2,3").unwrap_err().contains("x,y,z,t"));
        assert!(parse_site("1,2,3,-4").is_err());
    }
}
