//! How the subcommands that read gauge files (`solve`, `correlator`, `inspect`, `smear`)
//! read them: one set of options ([`GaugeReadArgs`]) and one reader ([`read_config`]).
//!
//! * `--unitarity-tol X`: the largest accepted max ‖U†U − 1‖_F (default: the stored
//!   precision's ε · 256 · √(2 ln 4V), see [`qdsl_core::io::unitarity_limit`]);
//! * `--reunitarize`: no unitarity limit on reading (unless `--unitarity-tol` is also
//!   given); the links are projected back onto SU(3) after reading
//!   ([`qdsl_core::gauge::reunitarize`]) and the largest deviation before and after is
//!   reported;
//! * `--ignore-checksum`: a recorded checksum that disagrees with the data is a one-line
//!   warning naming the file, the expected and the found checksum, instead of an error.

use super::CliError;
use clap::Args;
use qdsl_core::gauge::{reunitarize, unitarity_report};
use qdsl_core::io::{
    read_gauge, Check, ChecksumPolicy, GaugeFile, IoError, ReadOptions, UnitarityCheck,
};
use std::path::Path;
use std::time::Instant;

/// The gauge-file reading options shared by every subcommand that reads configurations.
#[derive(Clone, Debug, Default, PartialEq, Args)]
pub struct GaugeReadArgs {
    /// Largest accepted ‖U†U − 1‖_F of any link (default: ε·256·√(2 ln 4V), ε the
    /// machine epsilon of the stored precision, V the volume: 2.5e-13 for an f64 8⁴
    /// file, 1.3e-4 for an f32 one).
    #[arg(long, value_name = "X")]
    pub unitarity_tol: Option<f64>,
    /// Project the links back onto SU(3) after reading (reported); the unitarity limit is
    /// then not enforced unless --unitarity-tol is given.
    #[arg(long)]
    pub reunitarize: bool,
    /// Read files whose recorded checksum disagrees with the data, warning with one line
    /// (file, expected and found checksum) instead of failing.
    #[arg(long)]
    pub ignore_checksum: bool,
}

/// A configuration read with [`read_config`].
#[derive(Clone, Debug)]
pub struct ConfigRead {
    /// The file, with its field (reunitarised if asked) and its checks.
    pub file: GaugeFile,
    /// One line per ignored checksum mismatch.
    pub warnings: Vec<String>,
    /// max ‖U†U − 1‖_F before and after `--reunitarize`.
    pub reunitarized: Option<(f64, f64)>,
    /// Wall-clock seconds of reading, checking and reunitarising.
    pub seconds: f64,
}

impl ConfigRead {
    /// The warnings and the reunitarisation, one line each, for the summary.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.warnings.clone();
        if let Some((before, after)) = self.reunitarized {
            notes.push(format!(
                "reunitarised the links of {}: max ‖U†U − 1‖ {before:.3e} before, {after:.3e} \
                 after",
                self.file.path.display()
            ));
        }
        notes
    }

    /// Prints [`Self::notes`] to stderr.
    pub fn print_notes(&self) {
        for note in self.notes() {
            eprintln!("{note}");
        }
    }
}

impl GaugeReadArgs {
    /// The reader options these flags ask for, with `unitarity` the requirement when
    /// neither --unitarity-tol nor --reunitarize is given.
    pub fn options(&self, unitarity: UnitarityCheck) -> Result<ReadOptions, String> {
        let unitarity = match (self.unitarity_tol, self.reunitarize) {
            (Some(t), _) if !(t.is_finite() && t > 0.0) => {
                return Err(format!(
                    "--unitarity-tol must be a positive finite number, found {t}"
                ))
            }
            (Some(t), _) => UnitarityCheck::Within(t),
            (None, true) => UnitarityCheck::Off,
            (None, false) => unitarity,
        };
        Ok(ReadOptions {
            unitarity,
            checksum: if self.ignore_checksum {
                ChecksumPolicy::Warn
            } else {
                ChecksumPolicy::Verify
            },
        })
    }
}

/// The one-line warning of an ignored checksum mismatch.
fn checksum_warning(path: &Path, what: &str, expected: &str, computed: &str) -> String {
    format!(
        "warning: {}: {what} mismatch ignored (--ignore-checksum): expected {expected}, \
         found {computed}",
        path.display()
    )
}

/// Deviations above this are not rounding (smeared links, a damaged file): the hint then
/// does not suggest a looser limit.
const ROUNDING_LIKE_DEVIATION: f64 = 1e-3;

/// What to try when a file's links are not unitary enough.
fn unitarity_hint(e: &IoError, smeared_flag: bool) -> Option<String> {
    let IoError::NonUnitary { deviation, .. } = e else {
        return None;
    };
    Some(if *deviation < ROUNDING_LIKE_DEVIATION {
        format!(
            "  (links this close to SU(3) are accepted with --unitarity-tol {:.0e} or \
             projected with --reunitarize)",
            deviation * 2.0
        )
    } else if smeared_flag {
        "  (not a rounding error: smeared links such as MILC's fat and long links are not \
         unitary: pass --smeared)"
            .to_string()
    } else {
        "  (not a rounding error: the file may hold smeared links, e.g. MILC's fat or long \
         links, which are not thin gauge links)"
            .to_string()
    })
}

/// Reads the configuration at `path` with the options of `args` (`unitarity` when
/// neither --unitarity-tol nor --reunitarize is given); `smeared_flag` says whether the
/// subcommand has `--smeared`, for the hint of a unitarity failure.
pub fn read_config(
    path: &Path,
    args: &GaugeReadArgs,
    unitarity: UnitarityCheck,
    smeared_flag: bool,
) -> Result<ConfigRead, CliError> {
    let start = Instant::now();
    let options = args.options(unitarity)?;
    let mut file = read_gauge(path, &options).map_err(|e| -> CliError {
        match unitarity_hint(&e, smeared_flag) {
            Some(hint) => format!("{e}\n{hint}").into(),
            None => e.into(),
        }
    })?;
    let warnings = file
        .checks
        .iter()
        .filter_map(|c| match c {
            Check::ChecksumMismatchIgnored {
                what,
                expected,
                computed,
            } => Some(checksum_warning(path, what, expected, computed)),
            _ => None,
        })
        .collect();
    let reunitarized = if args.reunitarize {
        let before = unitarity_report(&file.field).max_unitarity;
        reunitarize(&mut file.field)
            .map_err(|e| format!("{}: cannot reunitarise: {e}", path.display()))?;
        Some((before, unitarity_report(&file.field).max_unitarity))
    } else {
        None
    };
    Ok(ConfigRead {
        file,
        warnings,
        reunitarized,
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_reader_options() {
        let default = GaugeReadArgs::default();
        let o = default.options(UnitarityCheck::ForPrecision).unwrap();
        assert_eq!(o, ReadOptions::default());
        let tol = GaugeReadArgs {
            unitarity_tol: Some(1e-9),
            reunitarize: true,
            ignore_checksum: true,
        };
        let o = tol.options(UnitarityCheck::ForPrecision).unwrap();
        assert_eq!(o.unitarity, UnitarityCheck::Within(1e-9));
        assert_eq!(o.checksum, ChecksumPolicy::Warn);
        let reunit = GaugeReadArgs {
            reunitarize: true,
            ..GaugeReadArgs::default()
        };
        let o = reunit.options(UnitarityCheck::ForPrecision).unwrap();
        assert_eq!(o.unitarity, UnitarityCheck::Off);
        for bad in [0.0, -1.0, f64::NAN] {
            let args = GaugeReadArgs {
                unitarity_tol: Some(bad),
                ..GaugeReadArgs::default()
            };
            let e = args.options(UnitarityCheck::ForPrecision).unwrap_err();
            assert!(e.contains("--unitarity-tol"), "{e}");
        }
    }

    #[test]
    fn warning_names_file_expected_and_found() {
        let w = checksum_warning(
            Path::new("a/b.lime"),
            "SciDAC checksum",
            "suma = 1",
            "suma = 2",
        );
        assert_eq!(w.lines().count(), 1);
        assert!(
            w.contains("a/b.lime")
                && w.contains("expected suma = 1")
                && w.contains("found suma = 2"),
            "{w}"
        );
    }
}
