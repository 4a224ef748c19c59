//! Observables that a file records about its links (plaquette, link trace), found in
//! headers and metadata records, and the tolerance they are checked to.
//!
//! LIME metadata read ([`lime_metadata_observables`]), in whatever text record holds them:
//!
//! | writer | where | recorded | qdsl's value |
//! |---|---|---|---|
//! | MILC, Grid (`usqcdInfo`) | `<plaq>`, `<linktr>` elements | P = (ss + st)/6, ⟨Re tr U⟩/3 | [`Observable::Plaquette`], [`Observable::LinkTrace`] |
//! | MILC (info lines `key = value`) | `gauge.ssplaq`, `gauge.stplaq`, `gauge.nersc_linktr` | ss, st (3 for unit links), ⟨Re tr U⟩/3 | [`Observable::SpatialPlaquette`], [`Observable::TemporalPlaquette`], [`Observable::LinkTrace`] |
//! | tmLQCD (`xlf-info` record) | `plaquette = value` | P | [`Observable::Plaquette`] |
//!
//! Chroma and PyQUDA files (e.g. `pyquda/weak_field.lime`) and MILC's 2005 ILDG sample
//! record none of these, so nothing is checked there.
//!
//! The tolerance ([`observable_tolerance`]) is half a unit in the last printed digit of
//! the recorded value ([`printed_resolution`]: tmLQCD prints 6.350056e−01, so 5e−8) plus
//! [`OBSERVABLE_EPSILONS`] ε of the stored precision (times max(1, |value|)).

use super::xml::element;
use super::{check_observable, Check, IoError, Precision};
use crate::field::GaugeField;
use crate::gauge::{link_trace, plaquette};
use std::path::Path;

/// Tolerance on recorded observables, in units of `ε · max(1, |recorded|)` (ε of the
/// stored precision), on top of half a unit in the last printed digit. The recorded values
/// may have been computed before the links were rounded to the stored precision:
/// rounding moves each element by ≤ ε/2 relative, so each SU(3) plaquette (4 links) and
/// its Re tr/3 by at most about 4 · 3 · ε/2 · 1/3 = 2 ε in the worst case, and the
/// averages by no more; 16 ε leaves a margin of 8 (1.9e-6 for f32 files).
pub const OBSERVABLE_EPSILONS: f64 = 16.0;

/// Half a unit in the last printed digit of a decimal number ("0.0382422893" → 5e-11).
pub fn printed_resolution(text: &str) -> f64 {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    0.5 * 10f64.powi(exponent - decimals)
}

/// The largest |recorded − computed| accepted for a value recorded with `resolution`
/// (see [`printed_resolution`]) about links stored at `precision`:
/// [`OBSERVABLE_EPSILONS`] · ε · max(1, |recorded|) + resolution.
pub fn observable_tolerance(recorded: f64, resolution: f64, precision: Precision) -> f64 {
    OBSERVABLE_EPSILONS * precision.epsilon() * recorded.abs().max(1.0) + resolution
}

/// A gauge observable that files record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observable {
    /// P = ⟨Re tr U_□⟩/3 over all 6 planes (1 for unit links).
    Plaquette,
    /// MILC's ss: ⟨Re tr U_□⟩ over the 3 space-space planes (3 for unit links).
    SpatialPlaquette,
    /// MILC's st: ⟨Re tr U_□⟩ over the 3 space-time planes (3 for unit links).
    TemporalPlaquette,
    /// ⟨Re tr U_μ⟩/3 over all links (1 for unit links).
    LinkTrace,
}

impl Observable {
    /// The observable's value on `field`.
    pub fn of(self, field: &GaugeField<f64>) -> f64 {
        match self {
            Observable::Plaquette => plaquette(field).average,
            Observable::SpatialPlaquette => plaquette(field).spatial,
            Observable::TemporalPlaquette => plaquette(field).temporal,
            Observable::LinkTrace => link_trace(field),
        }
    }
}

/// A value a file records, with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedObservable {
    /// Where it was found, e.g. "`xlf-info` plaquette".
    pub name: String,
    /// What it measures.
    pub observable: Observable,
    /// The recorded value.
    pub recorded: f64,
    /// Half a unit in its last printed digit.
    pub resolution: f64,
}

/// MILC's info keys (`gauge_info_keyword` in MILC's `io_lat.h`).
const MILC_INFO_KEYS: [(&str, Observable); 3] = [
    ("gauge.ssplaq", Observable::SpatialPlaquette),
    ("gauge.stplaq", Observable::TemporalPlaquette),
    ("gauge.nersc_linktr", Observable::LinkTrace),
];

/// usqcdInfo elements (MILC's and Grid's record XML).
const USQCD_INFO_ELEMENTS: [(&str, Observable); 2] = [
    ("plaq", Observable::Plaquette),
    ("linktr", Observable::LinkTrace),
];

/// The value text after the first `key = value` or `key value` entry of `text`: `key`
/// at the start of a line or right after a closing `>` (MILC puts its first info line
/// right after `<info>`), followed by blanks or `=`.
fn line_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.match_indices(key).find_map(|(at, _)| {
        let before = text[..at].trim_end_matches([' ', '\t']);
        if !(before.is_empty() || before.ends_with(['\n', '\r', '>'])) {
            return None;
        }
        let rest = &text[at + key.len()..];
        if !rest.starts_with([' ', '\t', '=']) {
            return None;
        }
        let value = rest.trim_start_matches([' ', '\t', '=']);
        value
            .split([' ', '\t', '\r', '\n', '<'])
            .next()
            .filter(|v| !v.is_empty())
    })
}

fn parse_value(text: &str, name: &str, record: &str, path: &Path) -> Result<f64, IoError> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| IoError::Malformed {
            path: path.to_path_buf(),
            what: format!("recorded observable {name} in record `{record}`"),
            location: name.to_string(),
            expected: "a finite number".to_string(),
            found: text.to_string(),
        })
}

/// The observables recorded in the text records of a LIME file, given as
/// (record type, text) pairs (see the module docs for the keys read).
pub fn lime_metadata_observables(
    records: &[(&str, &str)],
    path: &Path,
) -> Result<Vec<RecordedObservable>, IoError> {
    let mut found = Vec::new();
    let mut push = |record: &str, key: &str, observable, text: &str| -> Result<(), IoError> {
        let name = format!("`{record}` {key}");
        let recorded = parse_value(text, &name, record, path)?;
        found.push(RecordedObservable {
            name,
            observable,
            recorded,
            resolution: printed_resolution(text),
        });
        Ok(())
    };
    for &(record, text) in records {
        for (tag, observable) in USQCD_INFO_ELEMENTS {
            if let Some(value) = element(text, tag, record, path)? {
                push(record, &format!("<{tag}>"), observable, value)?;
            }
        }
        for (key, observable) in MILC_INFO_KEYS {
            if let Some(value) = line_value(text, key) {
                push(record, key, observable, value)?;
            }
        }
        if record == "xlf-info" {
            if let Some(value) = line_value(text, "plaquette") {
                push(record, "plaquette", Observable::Plaquette, value)?;
            }
        }
    }
    Ok(found)
}

/// Checks each recorded observable against the field (see [`observable_tolerance`]),
/// recording a [`Check::Observable`] for each.
pub(crate) fn check_recorded(
    recorded: &[RecordedObservable],
    field: &GaugeField<f64>,
    precision: Precision,
    path: &Path,
    checks: &mut Vec<Check>,
) -> Result<(), IoError> {
    for r in recorded {
        let tolerance = observable_tolerance(r.recorded, r.resolution, precision);
        let computed = r.observable.of(field);
        check_observable(&r.name, r.recorded, computed, tolerance, path, checks)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_of_printed_numbers() {
        // Last printed digits: 1e-10 and 1e-7 (6.350056e-01 = 0.6350056).
        assert!((printed_resolution("0.0382422893") / 5e-11 - 1.0).abs() < 1e-12);
        assert!((printed_resolution("6.350056e-01") / 5e-8 - 1.0).abs() < 1e-12);
        assert_eq!(printed_resolution("1"), 0.5);
    }

    #[test]
    fn milc_tmlqcd_and_usqcd_info_keys_are_found() {
        let p = Path::new("f");
        let milc_info = "<info>action.description = \"x\"\ngauge.ssplaq = 1.794675\n\
                         gauge.stplaq 1.774426\ngauge.nersc_linktr = 8.5e-01\n\
                         gauge.ssplaq_other = 7\n</info>";
        let usqcd = "<?xml?><usqcdInfo><version>1.0</version><plaq>5.948e-01</plaq>\
                     <linktr>8.5e-01</linktr></usqcdInfo>";
        let xlf = " plaquette = 6.350056e-01\n trajectory nr = 2000\n";
        let found = lime_metadata_observables(
            &[
                ("scidac-file-xml", milc_info),
                ("scidac-record-xml", usqcd),
                ("xlf-info", xlf),
                // Outside tmLQCD's record, a bare `plaquette` line is not read.
                ("scidac-file-xml", xlf),
            ],
            p,
        )
        .unwrap();
        let summary: Vec<(Observable, f64)> =
            found.iter().map(|r| (r.observable, r.recorded)).collect();
        assert_eq!(
            summary,
            [
                (Observable::SpatialPlaquette, 1.794675),
                (Observable::TemporalPlaquette, 1.774426),
                (Observable::LinkTrace, 0.85),
                (Observable::Plaquette, 0.5948),
                (Observable::LinkTrace, 0.85),
                (Observable::Plaquette, 0.6350056),
            ]
        );
        assert_eq!(found[0].name, "`scidac-file-xml` gauge.ssplaq");
        assert!((found[0].resolution / 5e-7 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn an_unparsable_recorded_value_is_named() {
        let e = lime_metadata_observables(&[("xlf-info", "plaquette = nan-ish\n")], Path::new("f"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("xlf-info") && e.contains("nan-ish") && e.contains("finite number"),
            "{e}"
        );
    }
}
