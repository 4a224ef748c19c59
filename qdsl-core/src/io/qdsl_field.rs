//! qdsl's own fermion-file format: plain binary after a one-line JSON header.
//!
//! ```text
//! qdsl-field\n
//! {"format":"qdsl-field","version":1,"kind":"dirac-fermion","lattice":[8,8,8,8],…}\n
//! <payload>
//! ```
//!
//! The header is one JSON object on one line (compact, so it holds no newline) with
//!
//! | key | value |
//! |---|---|
//! | `format`, `version` | `"qdsl-field"`, 1 |
//! | `kind` | `"colour-vector"` (1 spin) or `"dirac-fermion"` (4 spins) |
//! | `lattice` | `[Lx, Ly, Lz, Lt]` |
//! | `spins`, `colours` | 1 or 4 (agreeing with `kind`), 3 |
//! | `columns` | vectors per site: 1 for a vector, 3 or 12 for a propagator |
//! | `precision` | `"f32"` or `"f64"` (IEEE-754) |
//! | `byte_order` | `"little-endian"` (written) or `"big-endian"` (also read) |
//! | `site_order`, `site_layout` | documentation: `"lexicographic, x fastest"`, `"[column][spin][colour][re, im]"` |
//! | `payload_bytes` | V × columns × spins × 3 × 2 × (4 or 8) |
//! | `checksum` | `{"suma": hex, "sumb": hex}`: the SciDAC sums of the payload, one CRC-32 per site (all columns) |
//! | `metadata` | an object of strings (`info`: the writer's description) |
//!
//! The payload follows the header's newline: for each site in lexicographic order (x
//! fastest, then y, z, t), each column, each spin, each colour, the real and imaginary
//! parts. Unknown header keys are ignored (later versions may add some).

use super::bytes::{read_file, write_file, ByteOrder, Bytes, Precision};
use super::checksum::scidac_checksum;
use super::fermion::{
    column_shape, FermionCodec, FermionFile, FermionFileFormat, FermionKind, FermionWriteOptions,
    FERMION_COLOURS,
};
use super::{exact_payload, lattice_from_header, Check, IoError};
use crate::field::ColourSpinorField;
use crate::Real;
use serde_json::{json, Map, Value};
use std::path::Path;

/// The first line of every qdsl field file.
pub const MAGIC_LINE: &str = "qdsl-field\n";
/// The header version written and read.
pub const VERSION: u64 = 1;
/// The longest header line read (a guard against a file without a newline).
const MAX_HEADER_BYTES: usize = 1 << 20;

/// Reads a qdsl field file.
pub fn read_qdsl_field(path: impl AsRef<Path>) -> Result<FermionFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path)
}

/// Decodes the bytes of a qdsl field file.
pub(crate) fn decode(data: &[u8], path: &Path) -> Result<FermionFile, IoError> {
    let bytes = Bytes::new(data, path);
    let start = MAGIC_LINE.len();
    if !data.starts_with(MAGIC_LINE.as_bytes()) {
        return Err(IoError::BadMagic {
            path: path.to_path_buf(),
            what: "qdsl field file".to_string(),
            offset: 0,
            expected: format!("{MAGIC_LINE:?}"),
            found: super::bytes::hex_preview(data),
        });
    }
    let window = &data[start..data.len().min(start + MAX_HEADER_BYTES)];
    let end = window
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| IoError::Malformed {
            path: path.to_path_buf(),
            what: "JSON header".to_string(),
            location: format!("byte offset {start}"),
            expected: format!("one line of at most {MAX_HEADER_BYTES} bytes ending in a newline"),
            found: format!("{} bytes without a newline", window.len()),
        })?;
    let header: Value = serde_json::from_slice(&window[..end]).map_err(|e| IoError::Malformed {
        path: path.to_path_buf(),
        what: "JSON header".to_string(),
        location: format!("line 2, column {}", e.column()),
        expected: "a JSON object".to_string(),
        found: e.to_string(),
    })?;
    let h = Header {
        json: &header,
        path,
    };
    h.expect_str("format", "qdsl-field")?;
    let version = h.u64("version")?;
    if version != VERSION {
        return Err(h.bad("version", &VERSION.to_string(), &version.to_string()));
    }
    let kind = match h.str("kind")? {
        "colour-vector" => FermionKind::ColourVector,
        "dirac-fermion" => FermionKind::DiracFermion,
        other => return Err(h.bad("kind", "\"colour-vector\" or \"dirac-fermion\"", other)),
    };
    let spins = h.u64("spins")?;
    if spins != kind.spins() as u64 {
        return Err(h.bad(
            "spins",
            &format!("{} (a {})", kind.spins(), kind.name()),
            &spins.to_string(),
        ));
    }
    let colours = h.u64("colours")?;
    if colours != FERMION_COLOURS as u64 {
        return Err(h.bad("colours", "3", &colours.to_string()));
    }
    let dims = h.dims()?;
    let lattice = lattice_from_header(dims, "header key \"lattice\"", path)?;
    let columns = h.u64("columns")?;
    if !(1..=1024).contains(&columns) {
        return Err(h.bad("columns", "1 to 1024", &columns.to_string()));
    }
    let precision = match h.str("precision")? {
        "f32" => Precision::Single,
        "f64" => Precision::Double,
        other => return Err(h.bad("precision", "\"f32\" or \"f64\"", other)),
    };
    let order = match h.str("byte_order")? {
        "little-endian" => ByteOrder::Little,
        "big-endian" => ByteOrder::Big,
        other => return Err(h.bad("byte_order", "\"little-endian\" or \"big-endian\"", other)),
    };
    let codec = FermionCodec {
        kind,
        columns: columns as usize,
        precision,
        order,
    };
    let expected = codec.payload_bytes(&lattice);
    let recorded = h.u64("payload_bytes")?;
    if recorded != expected {
        return Err(h.bad(
            "payload_bytes",
            &format!("{expected} (the lattice, columns and precision of the header)"),
            &recorded.to_string(),
        ));
    }
    let offset = (start + end + 1) as u64;
    let payload = exact_payload(bytes, offset, expected, &lattice, "payload")?;
    let check = h.verify_checksum(payload, codec.site_bytes())?;
    let what = format!("payload at byte offset {offset}");
    let columns = codec.decode(payload, lattice, path, &what)?;
    let metadata = match header.get("metadata") {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(FermionFile {
        path: path.to_path_buf(),
        format: FermionFileFormat::Qdsl,
        kind,
        columns,
        precision,
        byte_order: order,
        metadata,
        checks: vec![check],
    })
}

/// The parsed header, with the file's path for errors.
struct Header<'a> {
    json: &'a Value,
    path: &'a Path,
}

impl Header<'_> {
    fn bad(&self, key: &str, expected: &str, found: &str) -> IoError {
        IoError::BadHeader {
            path: self.path.to_path_buf(),
            field: format!("header key \"{key}\""),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }

    fn get(&self, key: &str) -> Result<&Value, IoError> {
        self.json.get(key).ok_or_else(|| IoError::Missing {
            path: self.path.to_path_buf(),
            what: format!("header key \"{key}\""),
        })
    }

    fn str(&self, key: &str) -> Result<&str, IoError> {
        let v = self.get(key)?;
        v.as_str()
            .ok_or_else(|| self.bad(key, "a string", &v.to_string()))
    }

    fn u64(&self, key: &str) -> Result<u64, IoError> {
        let v = self.get(key)?;
        v.as_u64()
            .ok_or_else(|| self.bad(key, "a non-negative integer", &v.to_string()))
    }

    fn expect_str(&self, key: &str, expected: &str) -> Result<(), IoError> {
        let found = self.str(key)?;
        if found != expected {
            return Err(self.bad(key, &format!("{expected:?}"), found));
        }
        Ok(())
    }

    fn dims(&self) -> Result<[i64; 4], IoError> {
        let v = self.get("lattice")?;
        let bad = || self.bad("lattice", "four integers [Lx, Ly, Lz, Lt]", &v.to_string());
        let list = v.as_array().filter(|a| a.len() == 4).ok_or_else(bad)?;
        let mut dims = [0i64; 4];
        for (d, x) in dims.iter_mut().zip(list) {
            *d = x.as_i64().ok_or_else(bad)?;
        }
        Ok(dims)
    }

    fn verify_checksum(&self, payload: &[u8], site_bytes: usize) -> Result<Check, IoError> {
        let sums = self.get("checksum")?;
        let hex = |key: &str| -> Result<u32, IoError> {
            let v = sums.get(key).and_then(Value::as_str).unwrap_or_default();
            u32::from_str_radix(v, 16)
                .map_err(|_| self.bad(&format!("checksum.{key}"), "a 32-bit hexadecimal string", v))
        };
        let (suma, sumb) = (hex("suma")?, hex("sumb")?);
        let computed = scidac_checksum(payload, site_bytes);
        if (computed.mod29, computed.mod31) != (suma, sumb) {
            return Err(IoError::ChecksumMismatch {
                path: self.path.to_path_buf(),
                what: "SciDAC checksum of the payload (header key \"checksum\")".to_string(),
                expected: format!("suma = {suma:08x}, sumb = {sumb:08x}"),
                computed: format!(
                    "suma = {:08x}, sumb = {:08x}",
                    computed.mod29, computed.mod31
                ),
            });
        }
        Ok(Check::ScidacChecksum { suma, sumb })
    }
}

/// Writes `columns` (a vector or a propagator's columns) as a qdsl field file,
/// little-endian.
pub fn write_qdsl_field<T: Real>(
    path: impl AsRef<Path>,
    columns: &[ColourSpinorField<T>],
    options: &FermionWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let (kind, lattice) = column_shape(columns, path)?;
    let codec = FermionCodec {
        kind,
        columns: columns.len(),
        precision: options.precision,
        order: ByteOrder::Little,
    };
    let payload = codec.encode(columns);
    let sums = scidac_checksum(&payload, codec.site_bytes());
    let mut metadata = Map::new();
    metadata.insert("info".to_string(), Value::String(options.info.clone()));
    let header = json!({
        "format": "qdsl-field",
        "version": VERSION,
        "kind": kind.name(),
        "lattice": lattice.dims(),
        "spins": kind.spins(),
        "colours": FERMION_COLOURS,
        "columns": columns.len(),
        "precision": options.precision.name(),
        "byte_order": ByteOrder::Little.name(),
        "site_order": "lexicographic, x fastest",
        "site_layout": "[column][spin][colour][re, im]",
        "payload_bytes": payload.len(),
        "checksum": {"suma": format!("{:08x}", sums.mod29), "sumb": format!("{:08x}", sums.mod31)},
        "metadata": metadata,
    });
    let mut out = MAGIC_LINE.as_bytes().to_vec();
    out.extend_from_slice(header.to_string().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&payload);
    write_file(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;

    #[test]
    fn round_trips_and_documents_itself_in_the_header() {
        let lattice = Lattice::new([2, 2, 4, 2]).unwrap();
        let layout = FermionKind::ColourVector.layout(lattice);
        let columns: Vec<_> = (0..3)
            .map(|k| ColourSpinorField::<f64>::gaussian(layout, 10 + k))
            .collect();
        let path = std::env::temp_dir().join(format!("qdsl-field-{}.bin", std::process::id()));
        write_qdsl_field(&path, &columns, &FermionWriteOptions::default()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes[..400]);
        assert!(text.starts_with("qdsl-field\n{"), "{text}");
        assert!(text.contains("\"columns\":3") && text.contains("\"lattice\":[2,2,4,2]"));
        let file = read_qdsl_field(&path).unwrap();
        assert_eq!(file.columns, columns);
        assert_eq!(file.metadata_value("info"), Some("written by qdsl"));
        // Sites × 3 columns × 3 colours × 2 × 8 bytes after the header line.
        let header_end = bytes[11..].iter().position(|&b| b == b'\n').unwrap() + 12;
        assert_eq!(bytes.len() - header_end, 32 * 3 * 3 * 16);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn header_errors_name_the_key_expected_and_found() {
        let p = Path::new("f.qdsl");
        let with = |header: &str| [MAGIC_LINE.as_bytes(), header.as_bytes(), b"\n"].concat();
        let e = decode(&with(r#"{"format":"other"}"#), p)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"format\"") && e.contains("other") && e.contains("f.qdsl"),
            "{e}"
        );
        let e = decode(&with("{not json"), p).unwrap_err().to_string();
        assert!(e.contains("JSON header"), "{e}");
        let e = decode(MAGIC_LINE.as_bytes(), p).unwrap_err().to_string();
        assert!(e.contains("newline"), "{e}");
        let e = decode(
            &with(r#"{"format":"qdsl-field","version":1,"kind":"dirac-fermion","spins":1}"#),
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"spins\"") && e.contains("expected 4"), "{e}");
    }
}
