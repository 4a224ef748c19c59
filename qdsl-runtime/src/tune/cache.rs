//! The tune cache: a human-readable TSV file that keeps every candidate's time.
//!
//! Fields are separated by tabs (shown as two spaces here):
//!
//! ```text
//! # qdsl tune cache v2
//! # crate_version  0.1.0
//! # codegen_hash  3f2a…
//! # gpu_name  NVIDIA H100 80GB HBM3
//! # sm  sm_90
//! # driver_version  13.0
//! # nvrtc_version  13.0
//! kernel  variant_hash  source_hash  volume  formats  device  compile  block  grid  shared_bytes  time_us  best
//! wilson_hop  89ab…  51f0…  524288  spinor=f32 …  NVIDIA H100 … sm_90  -  16  32768  13568  108.41  *
//! ```
//!
//! One row per (key, candidate); `time_us` is `failed` for a candidate that could not
//! run; `best` marks the fastest row of each key with `*` (for people; it is recomputed
//! on reading). Empty strings are written as `-`. Rows are sorted, so the file is
//! deterministic. A file of the older format v1 (no `source_hash` column) is reported as
//! such and re-tuned.
//!
//! `block` and `grid` are written `x`, `xXy` or `xXyXz` (trailing ones left out,
//! [`super::launch::dims`]), so the rows of 1-D launches read exactly as the files v2
//! always had, and those files stay valid (a file with 2-D or 3-D rows read by an older
//! program is reported corrupt and re-tuned, never a crash).

use super::key::{Fingerprint, TuneKey};
use super::launch::{dims, parse_dims, Candidate, LaunchConfig};
use std::collections::BTreeMap;

/// First line of every tune cache.
pub const MAGIC: &str = "# qdsl tune cache v2";
/// First line of the previous format (no `source_hash` column).
const MAGIC_V1: &str = "# qdsl tune cache v1";
/// The column header line.
pub const COLUMNS: &str =
    "kernel\tvariant_hash\tsource_hash\tvolume\tformats\tdevice\tcompile\tblock\tgrid\tshared_bytes\ttime_us\tbest";

/// The measured time of one candidate (`None`: it failed to run).
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// What was run.
    pub candidate: Candidate,
    /// Its time in µs, `None` if it failed.
    pub time_us: Option<f64>,
}

/// Why a cache file cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CacheProblem {
    /// The file is not a well-formed tune cache.
    #[error("corrupt at line {line}: {reason}")]
    Corrupt {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file was measured with other software or another device.
    #[error("made with {field} = {found:?}, this program has {expected:?}")]
    Mismatch {
        /// The fingerprint field that differs.
        field: &'static str,
        /// This program's value.
        expected: String,
        /// The file's value.
        found: String,
    },
}

/// The contents of a tune cache.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneCache {
    /// What the times were measured with.
    pub fingerprint: Fingerprint,
    /// Every candidate's time, per key, in the order measured.
    pub entries: BTreeMap<TuneKey, Vec<Measurement>>,
}

/// The fastest measurement that succeeded.
pub fn best(measurements: &[Measurement]) -> Option<&Measurement> {
    measurements
        .iter()
        .filter(|m| m.time_us.is_some_and(f64::is_finite))
        .min_by(|a, b| {
            a.time_us
                .partial_cmp(&b.time_us)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
}

fn dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn undash(s: &str) -> String {
    if s == "-" {
        String::new()
    } else {
        s.to_string()
    }
}

impl TuneCache {
    /// An empty cache for `fingerprint`.
    pub fn new(fingerprint: Fingerprint) -> Self {
        Self {
            fingerprint,
            entries: BTreeMap::new(),
        }
    }

    /// The file's text (see the module doc).
    pub fn render(&self) -> String {
        let mut s = format!("{MAGIC}\n");
        for (name, value) in Fingerprint::FIELDS.iter().zip(self.fingerprint.values()) {
            s += &format!("# {name}\t{}\n", dash(value));
        }
        s += COLUMNS;
        s.push('\n');
        for (k, ms) in &self.entries {
            let best = best(ms).map(|m| &m.candidate);
            let mut rows: Vec<&Measurement> = ms.iter().collect();
            rows.sort_by(|a, b| a.candidate.cmp(&b.candidate));
            for m in rows {
                let c = &m.candidate;
                let time = m.time_us.map_or("failed".to_string(), |t| format!("{t}"));
                s += &format!(
                    "{}\t{:016x}\t{:016x}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                    dash(&k.kernel),
                    k.variant_hash,
                    k.source_hash,
                    k.volume,
                    dash(&k.formats),
                    dash(&k.device),
                    dash(&c.compile),
                    dims(&c.launch.block),
                    dims(&c.launch.grid),
                    c.launch.shared_bytes,
                    time,
                    if Some(c) == best { "*" } else { "" }
                );
            }
        }
        s
    }

    /// Parses a file's text, checking its fingerprint against `expected`.
    pub fn parse(text: &str, expected: &Fingerprint) -> Result<Self, CacheProblem> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let corrupt = |line: usize, reason: String| CacheProblem::Corrupt { line, reason };
        match lines.next() {
            Some((_, MAGIC)) => {}
            Some((n, MAGIC_V1)) => {
                return Err(corrupt(
                    n,
                    "tune cache format v1 (no source_hash column), this program writes v2".into(),
                ))
            }
            Some((n, l)) => return Err(corrupt(n, format!("expected {MAGIC:?}, found {l:?}"))),
            None => return Err(corrupt(1, "the file is empty".into())),
        }
        let mut found = Vec::new();
        for (i, name) in Fingerprint::FIELDS.into_iter().enumerate() {
            let (n, l) = lines
                .next()
                .ok_or_else(|| corrupt(i + 2, format!("missing header field {name}")))?;
            let value = l
                .strip_prefix(&format!("# {name}\t"))
                .ok_or_else(|| corrupt(n, format!("expected header field {name}, found {l:?}")))?;
            found.push(undash(value));
        }
        for ((name, want), got) in Fingerprint::FIELDS
            .iter()
            .zip(expected.values())
            .zip(&found)
        {
            if want != got {
                return Err(CacheProblem::Mismatch {
                    field: name,
                    expected: want.to_string(),
                    found: got.clone(),
                });
            }
        }
        match lines.next() {
            Some((_, COLUMNS)) => {}
            Some((n, l)) => {
                return Err(corrupt(
                    n,
                    format!("expected the column header, found {l:?}"),
                ))
            }
            None => {
                let n = Fingerprint::FIELDS.len() + 2;
                return Err(corrupt(n, "missing the column header".into()));
            }
        }
        let mut cache = TuneCache::new(expected.clone());
        for (n, line) in lines {
            let (key, m) = parse_row(line).map_err(|reason| corrupt(n, reason))?;
            cache.entries.entry(key).or_default().push(m);
        }
        Ok(cache)
    }
}

fn parse_row(line: &str) -> Result<(TuneKey, Measurement), String> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 12 {
        return Err(format!(
            "expected 12 tab-separated fields, found {}",
            f.len()
        ));
    }
    let num = |i: usize, what: &str| -> Result<u64, String> {
        f[i].parse()
            .map_err(|_| format!("{what} must be a non-negative integer, found {:?}", f[i]))
    };
    let small = |i: usize, what: &str| -> Result<u32, String> {
        u32::try_from(num(i, what)?).map_err(|_| format!("{what} {} is too large", f[i]))
    };
    let extents = |i: usize, what: &str| -> Result<[u32; 3], String> {
        parse_dims(f[i])
            .filter(|d| d.iter().all(|&e| e > 0))
            .ok_or_else(|| {
                format!(
                    "{what} must be one to three positive integers joined by 'x', found {:?}",
                    f[i]
                )
            })
    };
    let variant_hash = u64::from_str_radix(f[1], 16)
        .map_err(|_| format!("variant_hash must be hexadecimal, found {:?}", f[1]))?;
    let source_hash = u64::from_str_radix(f[2], 16)
        .map_err(|_| format!("source_hash must be hexadecimal, found {:?}", f[2]))?;
    let time_us = match f[10] {
        "failed" => None,
        t => match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
            _ => {
                return Err(format!(
                    "time_us must be a non-negative number or 'failed', found {t:?}"
                ))
            }
        },
    };
    if !matches!(f[11], "" | "*") {
        return Err(format!("best must be '*' or empty, found {:?}", f[11]));
    }
    let key = TuneKey {
        kernel: undash(f[0]),
        variant_hash,
        source_hash,
        volume: usize::try_from(num(3, "volume")?).map_err(|_| "volume too large".to_string())?,
        formats: undash(f[4]),
        device: undash(f[5]),
    };
    let candidate = Candidate {
        compile: undash(f[6]),
        launch: LaunchConfig {
            block: extents(7, "block")?,
            grid: extents(8, "grid")?,
            shared_bytes: small(9, "shared_bytes")?,
        },
    };
    Ok((key, Measurement { candidate, time_us }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp() -> Fingerprint {
        Fingerprint::new("cg1", "Test GPU\twith tab", "sm_90", "13.0", "13.0")
    }

    fn m(block: u32, t: Option<f64>) -> Measurement {
        Measurement {
            candidate: Candidate {
                compile: String::new(),
                launch: LaunchConfig::covering(1000, block, 0),
            },
            time_us: t,
        }
    }

    #[test]
    fn round_trips_and_marks_the_best_row() {
        let mut c = TuneCache::new(fp());
        let k = TuneKey::new(
            "wilson_hop",
            0xdead_beef,
            0x51f0,
            1000,
            "spinor=f32",
            "Test GPU sm_90",
        );
        c.entries.insert(
            k.clone(),
            vec![m(128, Some(12.5)), m(16, Some(9.25)), m(1024, None)],
        );
        let text = c.render();
        // Hand-written expectation of the row of the fastest candidate.
        assert!(
            text.contains("wilson_hop\t00000000deadbeef\t00000000000051f0\t1000\tspinor=f32\tTest GPU sm_90\t-\t16\t63\t0\t9.25\t*\n"),
            "{text}"
        );
        assert!(text.contains("\t1024\t1\t0\tfailed\t\n"));
        assert!(text.contains("# gpu_name\tTest GPU with tab\n"));
        let back = TuneCache::parse(&text, &fp()).unwrap();
        let ms = &back.entries[&k];
        assert_eq!(ms.len(), 3);
        assert_eq!(best(ms).unwrap().candidate.launch.block, [16, 1, 1]);
        assert_eq!(back.render(), text);
    }

    #[test]
    fn corruption_is_reported_with_its_line() {
        let mut c = TuneCache::new(fp());
        c.entries
            .insert(TuneKey::new("k", 1, 2, 8, "", ""), vec![m(32, Some(1.0))]);
        let good = c.render();
        let header_lines = 8;
        let cases = [
            (String::new(), 1),
            ("garbage".to_string(), 1),
            (
                good.replace("\t0000000000000001\t", "\tx\t"),
                header_lines + 1,
            ),
            (
                good.replace("\t0000000000000002\t", "\ty\t"),
                header_lines + 1,
            ),
            (good.replace(MAGIC, MAGIC_V1), 1),
            (good.replace("\t32\t", "\t-32\t"), header_lines + 1),
            (good.replace("\t*", "\tbest"), header_lines + 1),
            (format!("{good}truncated\trow\n"), header_lines + 2),
            (good.replace("# sm\t", "# sx\t"), 5),
        ];
        for (text, line) in cases {
            match TuneCache::parse(&text, &fp()) {
                Err(CacheProblem::Corrupt { line: l, .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("expected corruption at line {line}, got {other:?}"),
            }
        }
    }

    #[test]
    fn files_written_before_multi_dimensional_blocks_still_read() {
        // A v2 file as the program wrote it before blocks had three dimensions
        // (hand-written): its rows are 1-D launches.
        let header: String = Fingerprint::FIELDS
            .iter()
            .zip(fp().values())
            .map(|(n, v)| format!("# {n}\t{v}\n"))
            .collect();
        let text = format!(
            "{MAGIC}\n{header}{COLUMNS}\nwilson_hop\t0000000000000001\t0000000000000002\t4096\tspinor=f32\tGPU\t-\t16\t256\t13568\t9.5\t*\n"
        );
        let c = TuneCache::parse(&text, &fp()).unwrap();
        let key = TuneKey::new("wilson_hop", 1, 2, 4096, "spinor=f32", "GPU");
        assert_eq!(
            c.entries[&key][0].candidate.launch,
            LaunchConfig::covering(4096, 16, 13_568)
        );
        assert_eq!(c.render(), text, "1-D rows are written as before");
        // 2-D and 3-D launches round-trip.
        let mut c = TuneCache::new(fp());
        let launch = |block, grid| Measurement {
            candidate: Candidate {
                compile: String::new(),
                launch: LaunchConfig {
                    block,
                    grid,
                    shared_bytes: 0,
                },
            },
            time_us: Some(2.0),
        };
        c.entries.insert(
            key.clone(),
            // In the order rows are written (sorted), so the parse compares equal.
            vec![
                launch([8, 4, 2], [4, 4, 4]),
                launch([32, 4, 1], [128, 3, 1]),
            ],
        );
        let text = c.render();
        assert!(text.contains("\t32x4\t128x3\t0\t2\t"), "{text}");
        assert!(text.contains("\t8x4x2\t4x4x4\t0\t2\t"), "{text}");
        assert_eq!(TuneCache::parse(&text, &fp()).unwrap(), c);
        // A zero or malformed extent is corruption, named.
        let row = 1 + text.lines().position(|l| l.contains("\t32x4\t")).unwrap();
        for bad in ["\t32x0\t", "\t32x\t", "\t32x4x1x1\t"] {
            let broken = text.replacen("\t32x4\t", bad, 1);
            match TuneCache::parse(&broken, &fp()) {
                Err(CacheProblem::Corrupt { line, reason }) if line == row => {
                    assert!(reason.contains("block"), "{reason}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_different_fingerprint_is_a_mismatch() {
        let text = TuneCache::new(fp()).render();
        let other = Fingerprint::new("cg2", "Test GPU with tab", "sm_90", "13.0", "13.0");
        assert_eq!(
            TuneCache::parse(&text, &other),
            Err(CacheProblem::Mismatch {
                field: "codegen_hash",
                expected: "cg2".into(),
                found: "cg1".into()
            })
        );
    }
}
