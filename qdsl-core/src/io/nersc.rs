//! NERSC archive gauge files.
//!
//! Layout (the NERSC/"Gauge Connection" archive format, as written by Chroma, Grid,
//! MILC and others): a text header
//!
//! ```text
//! BEGIN_HEADER
//! KEY = VALUE        (one per line)
//! END_HEADER
//! ```
//!
//! then the links: sites lexicographic (x fastest), μ = x, y, z, t, each link its first
//! two rows (`DATATYPE = 4D_SU3_GAUGE`, third row reconstructed as `(u₀ × u₁)*`) or all
//! three (`4D_SU3_GAUGE_3x3`), row-major `[re, im]`. Keys read: `DIMENSION_1..4` (Lx, Ly,
//! Lz, Lt), `FLOATING_POINT` (`IEEE32BIG`, `IEEE32LITTLE`, `IEEE64BIG`, `IEEE64LITTLE`, or
//! `IEEE32` / `IEEE64` without a byte order), `CHECKSUM` (hex; see
//! [`super::checksum::nersc_checksum`]), and, when present, `PLAQUETTE` (⟨Re tr U_□⟩/3)
//! and `LINK_TRACE` (⟨Re tr U_μ⟩/3), which are compared with the field after reading.
//!
//! A `FLOATING_POINT` without byte order is ambiguous: the reader tries big-endian, then
//! little-endian, and accepts the order whose checksum, links and header observables all
//! pass.

use super::bytes::{read_file, write_file, ByteOrder, Bytes, Precision};
use super::checksum::nersc_checksum;
use super::links::LinkCodec;
use super::recorded_observables::{
    check_recorded, printed_resolution, Observable, RecordedObservable,
};
use super::{
    check_links, checksum_mismatch, exact_payload, lattice_from_header, Check, GaugeFile,
    GaugeFileFormat, IoError, ReadOptions,
};
use crate::field::GaugeField;
use crate::gauge::{link_trace, plaquette};
use crate::lattice::Lattice;
use crate::Real;
use std::path::Path;

/// How many rows of each link a NERSC file stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NerscStorage {
    /// `4D_SU3_GAUGE`: rows 0 and 1; row 2 = (row 0 × row 1)* (SU(3) links only).
    TwoRow,
    /// `4D_SU3_GAUGE_3x3`: the full matrix.
    Full,
}

impl NerscStorage {
    /// Stored rows per link.
    pub fn rows(self) -> usize {
        match self {
            NerscStorage::TwoRow => 2,
            NerscStorage::Full => 3,
        }
    }

    /// The header's DATATYPE value.
    pub fn datatype(self) -> &'static str {
        match self {
            NerscStorage::TwoRow => "4D_SU3_GAUGE",
            NerscStorage::Full => "4D_SU3_GAUGE_3x3",
        }
    }
}

pub use super::recorded_observables::OBSERVABLE_EPSILONS;

/// Options of [`write_nersc`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NerscWriteOptions {
    /// Stored precision (default double).
    pub precision: Precision,
    /// Byte order, written explicitly in FLOATING_POINT (default big-endian).
    pub byte_order: ByteOrder,
    /// Two or three stored rows (default three).
    pub storage: NerscStorage,
    /// Further `KEY = VALUE` lines (e.g. ENSEMBLE_ID, CREATOR), written after the
    /// generated ones; keys must not repeat the generated keys.
    pub extra_header: Vec<(String, String)>,
}

impl Default for NerscWriteOptions {
    fn default() -> Self {
        Self {
            precision: Precision::Double,
            byte_order: ByteOrder::Big,
            storage: NerscStorage::Full,
            extra_header: Vec::new(),
        }
    }
}

const BEGIN: &str = "BEGIN_HEADER";
const END: &str = "END_HEADER";

/// The parsed header: key-value pairs in file order and where the payload starts.
#[derive(Debug)]
struct Header {
    entries: Vec<(String, String)>,
    payload_offset: u64,
}

impl Header {
    fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn require(&self, key: &str, path: &Path) -> Result<&str, IoError> {
        self.get(key).ok_or_else(|| IoError::Missing {
            path: path.to_path_buf(),
            what: format!("NERSC header key {key}"),
        })
    }
}

/// True if the data starts like a NERSC header.
pub(crate) fn has_magic(data: &[u8]) -> bool {
    data.starts_with(BEGIN.as_bytes())
}

fn parse_header(data: &[u8], path: &Path) -> Result<Header, IoError> {
    if !has_magic(data) {
        return Err(IoError::BadMagic {
            path: path.to_path_buf(),
            what: "NERSC header".to_string(),
            offset: 0,
            expected: format!("`{BEGIN}`"),
            found: format!("{:?}", String::from_utf8_lossy(&data[..data.len().min(12)])),
        });
    }
    let end = data
        .windows(END.len())
        .position(|w| w == END.as_bytes())
        .ok_or_else(|| IoError::Missing {
            path: path.to_path_buf(),
            what: format!("`{END}` line closing the NERSC header"),
        })?;
    // The payload starts after the newline that ends the END_HEADER line.
    let payload_offset = data[end..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(data.len(), |i| end + i + 1) as u64;
    let text = std::str::from_utf8(&data[..end]).map_err(|e| IoError::Malformed {
        path: path.to_path_buf(),
        what: "NERSC header".to_string(),
        location: format!("byte offset {}", e.valid_up_to()),
        expected: "UTF-8 text".to_string(),
        found: "an invalid UTF-8 sequence".to_string(),
    })?;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| IoError::Malformed {
            path: path.to_path_buf(),
            what: "NERSC header line".to_string(),
            location: format!("line {}", n + 1),
            expected: "KEY = VALUE".to_string(),
            found: line.to_string(),
        })?;
        entries.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(Header {
        entries,
        payload_offset,
    })
}

fn malformed(key: &str, expected: &str, found: &str, path: &Path) -> IoError {
    IoError::Malformed {
        path: path.to_path_buf(),
        what: format!("NERSC header value of {key}"),
        location: key.to_string(),
        expected: expected.to_string(),
        found: found.to_string(),
    }
}

/// The storage from DATATYPE.
fn storage_of(value: &str, path: &Path) -> Result<NerscStorage, IoError> {
    match value.to_ascii_uppercase().as_str() {
        "4D_SU3_GAUGE" => Ok(NerscStorage::TwoRow),
        "4D_SU3_GAUGE_3X3" => Ok(NerscStorage::Full),
        _ => Err(IoError::Unsupported {
            path: path.to_path_buf(),
            what: "NERSC DATATYPE".to_string(),
            found: value.to_string(),
            supported: "4D_SU3_GAUGE, 4D_SU3_GAUGE_3x3".to_string(),
        }),
    }
}

/// Precision and byte order from FLOATING_POINT (`None`: unspecified byte order).
fn floating_point_of(value: &str, path: &Path) -> Result<(Precision, Option<ByteOrder>), IoError> {
    use ByteOrder::{Big, Little};
    use Precision::{Double, Single};
    Ok(match value.to_ascii_uppercase().as_str() {
        "IEEE32" => (Single, None),
        "IEEE32BIG" => (Single, Some(Big)),
        "IEEE32LITTLE" => (Single, Some(Little)),
        "IEEE64" => (Double, None),
        "IEEE64BIG" => (Double, Some(Big)),
        "IEEE64LITTLE" => (Double, Some(Little)),
        _ => {
            return Err(IoError::Unsupported {
                path: path.to_path_buf(),
                what: "NERSC FLOATING_POINT".to_string(),
                found: value.to_string(),
                supported: "IEEE32, IEEE32BIG, IEEE32LITTLE, IEEE64, IEEE64BIG, IEEE64LITTLE"
                    .to_string(),
            })
        }
    })
}

/// Reads a NERSC file: checks the header, CHECKSUM, the links (see [`ReadOptions`]) and
/// the header's PLAQUETTE and LINK_TRACE.
pub fn read_nersc(path: impl AsRef<Path>, options: &ReadOptions) -> Result<GaugeFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path, options)
}

/// Decodes the bytes of a NERSC file.
pub(crate) fn decode(
    data: &[u8],
    path: &Path,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let header = parse_header(data, path)?;
    let storage = storage_of(header.require("DATATYPE", path)?, path)?;
    let (precision, order) = floating_point_of(header.require("FLOATING_POINT", path)?, path)?;
    let mut dims = [0i64; 4];
    for (i, d) in dims.iter_mut().enumerate() {
        let key = format!("DIMENSION_{}", i + 1);
        let v = header.require(&key, path)?;
        *d = v
            .parse()
            .map_err(|_| malformed(&key, "an integer", v, path))?;
    }
    let lattice = lattice_from_header(dims, "NERSC header DIMENSION_1..4", path)?;
    let checksum_text = header.require("CHECKSUM", path)?;
    let recorded = u32::from_str_radix(
        checksum_text.strip_prefix("0x").unwrap_or(checksum_text),
        16,
    )
    .map_err(|_| {
        malformed(
            "CHECKSUM",
            "a 32-bit hexadecimal number",
            checksum_text,
            path,
        )
    })?;
    let mut observables = Vec::new();
    for (key, observable) in [
        ("PLAQUETTE", Observable::Plaquette),
        ("LINK_TRACE", Observable::LinkTrace),
    ] {
        if let Some(v) = header.get(key) {
            let x: f64 = v.parse().map_err(|_| malformed(key, "a number", v, path))?;
            observables.push(RecordedObservable {
                name: key.to_string(),
                observable,
                recorded: x,
                resolution: printed_resolution(v),
            });
        }
    }

    let candidates = match order {
        Some(o) => vec![o],
        None => vec![ByteOrder::Big, ByteOrder::Little],
    };
    let codec = |order| LinkCodec {
        precision,
        order,
        rows: storage.rows(),
    };
    let expected = codec(ByteOrder::Big).payload_bytes(&lattice);
    let b = Bytes::new(data, path);
    let payload = exact_payload(
        b,
        header.payload_offset,
        expected,
        &lattice,
        "NERSC payload",
    )?;

    let attempt = |order: ByteOrder, checksum: Check| -> Result<GaugeFile, IoError> {
        let mut checks = vec![checksum];
        let field = codec(order).decode(payload, lattice, path, "NERSC payload")?;
        check_links(&field, options.unitarity, precision, path, &mut checks)?;
        check_recorded(&observables, &field, precision, path, &mut checks)?;
        Ok(GaugeFile {
            path: path.to_path_buf(),
            field,
            format: GaugeFileFormat::Nersc(storage),
            precision,
            byte_order: order,
            metadata: header.entries.clone(),
            checks,
        })
    };
    let mut computed = Vec::new();
    let mut last_error = None;
    for &order in &candidates {
        let sum = nersc_checksum(payload, precision, order);
        computed.push(format!("{sum:08x} ({})", order.name()));
        if sum != recorded {
            continue;
        }
        match attempt(order, Check::NerscChecksum(sum)) {
            Ok(file) => return Ok(file),
            Err(e) => last_error = Some(e),
        }
    }
    if let Some(e) = last_error {
        return Err(e);
    }
    let mismatch = IoError::ChecksumMismatch {
        path: path.to_path_buf(),
        what: "NERSC CHECKSUM (sum of the payload's 32-bit words)".to_string(),
        expected: format!("{recorded:08x}"),
        computed: computed.join(", "),
    };
    let ignored = checksum_mismatch(mismatch, options.checksum)?;
    // Checksum ignored: the first byte order whose links and header observables pass.
    let mut outcome = Err(IoError::Missing {
        path: path.to_path_buf(),
        what: "a byte order to try".to_string(),
    });
    for &order in &candidates {
        outcome = attempt(order, ignored.clone());
        if outcome.is_ok() {
            break;
        }
    }
    outcome
}

/// Keys the writer generates; `extra_header` may not repeat them.
const GENERATED_KEYS: [&str; 16] = [
    "HDR_VERSION",
    "DATATYPE",
    "STORAGE_FORMAT",
    "DIMENSION_1",
    "DIMENSION_2",
    "DIMENSION_3",
    "DIMENSION_4",
    "LINK_TRACE",
    "PLAQUETTE",
    "BOUNDARY_1",
    "BOUNDARY_2",
    "BOUNDARY_3",
    "BOUNDARY_4",
    "CHECKSUM",
    "FLOATING_POINT",
    "END_HEADER",
];

fn check_extra(options: &NerscWriteOptions, path: &Path) -> Result<(), IoError> {
    for (k, v) in &options.extra_header {
        let bad_key = k.is_empty()
            || k.contains(['=', '\n', '\r'])
            || k.trim() != k
            || GENERATED_KEYS.contains(&k.as_str())
            || k == BEGIN;
        if bad_key || v.contains(['\n', '\r']) {
            return Err(IoError::Unwritable {
                path: path.to_path_buf(),
                what: "NERSC extra header line".to_string(),
                expected: "a key without '=', spaces or newlines that is not generated by the \
                           writer, and a one-line value"
                    .to_string(),
                found: format!("{k} = {v}"),
            });
        }
    }
    Ok(())
}

/// Writes a field as a NERSC file. The header holds HDR_VERSION, DATATYPE,
/// STORAGE_FORMAT, DIMENSION_1..4, LINK_TRACE and PLAQUETTE (computed from the links as
/// stored, in a fixed summation order, printed with 10 decimals), BOUNDARY_1..4 = PERIODIC (the gauge field is
/// periodic), CHECKSUM, FLOATING_POINT, then `extra_header`.
pub fn write_nersc<T: Real>(
    path: impl AsRef<Path>,
    field: &GaugeField<T>,
    options: &NerscWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    check_extra(options, path)?;
    let codec = LinkCodec {
        precision: options.precision,
        order: options.byte_order,
        rows: options.storage.rows(),
    };
    let payload = codec.encode(field);
    let lattice: Lattice = *field.lattice();
    // The observables of the field as a reader will see it (rounded, row 3 rebuilt).
    let stored = codec.decode(&payload, lattice, path, "NERSC payload")?;
    let fp = match (options.precision, options.byte_order) {
        (Precision::Single, ByteOrder::Big) => "IEEE32BIG",
        (Precision::Single, ByteOrder::Little) => "IEEE32LITTLE",
        (Precision::Double, ByteOrder::Big) => "IEEE64BIG",
        (Precision::Double, ByteOrder::Little) => "IEEE64LITTLE",
    };
    let [lx, ly, lz, lt] = lattice.dims();
    let (trace, plaq) = (link_trace(&stored), plaquette(&stored).average);
    let mut h = format!(
        "{BEGIN}\nHDR_VERSION = 1.0\nDATATYPE = {}\nSTORAGE_FORMAT = 1.0\n\
         DIMENSION_1 = {lx}\nDIMENSION_2 = {ly}\nDIMENSION_3 = {lz}\nDIMENSION_4 = {lt}\n\
         LINK_TRACE = {:.10}\nPLAQUETTE = {:.10}\n\
         BOUNDARY_1 = PERIODIC\nBOUNDARY_2 = PERIODIC\nBOUNDARY_3 = PERIODIC\nBOUNDARY_4 = PERIODIC\n\
         CHECKSUM = {:08x}\nFLOATING_POINT = {fp}\n",
        options.storage.datatype(),
        trace,
        plaq,
        nersc_checksum(&payload, options.precision, options.byte_order),
    );
    for (k, v) in &options.extra_header {
        h.push_str(&format!("{k} = {v}\n"));
    }
    h.push_str(END);
    h.push('\n');
    let mut out = h.into_bytes();
    out.extend_from_slice(&payload);
    write_file(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_parse_and_malformed_lines_are_named() {
        let p = Path::new("h");
        let h = parse_header(b"BEGIN_HEADER\nA = 1\n  B=x = y \nEND_HEADER\nDATA", p).unwrap();
        assert_eq!(h.get("A"), Some("1"));
        assert_eq!(h.get("B"), Some("x = y"));
        assert_eq!(h.payload_offset, 41);
        let e = parse_header(b"BEGIN_HEADER\nA 1\nEND_HEADER\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("KEY = VALUE"), "{e}");
        assert!(matches!(
            parse_header(b"BEGIN_HEADER\nA = 1\n", p),
            Err(IoError::Missing { .. })
        ));
    }
}
