//! ILDG and SciDAC gauge configurations: LIME files (see [`super::lime`]) whose binary
//! record holds the links.
//!
//! The binary data (`ildg-binary-data` or `scidac-binary-data`) is big-endian, sites in
//! lexicographic order (x fastest; ILDG writes it as `U[t][z][y][x][μ][row][col][re,im]`),
//! four links per site (μ = x, y, z, t), each a row-major 3×3 complex matrix. The lattice
//! and the precision are declared by whichever of these records the file carries (all
//! that are present must agree):
//!
//! * `ildg-format`: `<field>su3gauge</field>`, `<precision>` 32 or 64, `<lx>` `<ly>`
//!   `<lz>` `<lt>`;
//! * `scidac-private-file-xml`: `<spacetime>4</spacetime>`, `<dims>Lx Ly Lz Lt</dims>`;
//! * `scidac-private-record-xml`: `<precision>` F (or S) / D, `<colors>3</colors>`,
//!   `<typesize>` 72 / 144 (bytes of one 3×3 matrix), `<datacount>4</datacount>`.
//!
//! A `scidac-checksum` record (`<suma>`, `<sumb>` in hex), when present, is verified
//! against the binary data (see [`super::checksum`]); plaquettes and link traces recorded
//! in the text records are checked against the links (see [`super::recorded_observables`]). The files of different writers
//! carry different records (tmLQCD: `ildg-format` only; MILC's SciDAC files: no
//! `ildg-format`), so records are found by type.

use super::bytes::{read_file, write_file, ByteOrder, Precision};
use super::checksum::scidac_checksum;
use super::lime::{encode_lime, find_record, parse_lime, LimeRecord};
use super::links::LinkCodec;
use super::recorded_observables::{check_recorded, lime_metadata_observables};
use super::xml::{element, escape, parse, parse_hex_u32, record_text};
use super::{
    check_links, checksum_mismatch, lattice_from_header, Check, GaugeFile, GaugeFileFormat,
    IoError, ReadOptions,
};
use crate::field::GaugeField;
use crate::gauge::{link_trace, plaquette};
use crate::Real;
use std::path::Path;

/// Which binary record a LIME gauge file carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimeFlavour {
    /// `ildg-binary-data` with an `ildg-format` record (ILDG).
    Ildg,
    /// `scidac-binary-data` (SciDAC / QIO).
    Scidac,
}

impl LimeFlavour {
    /// The type of the record holding the links.
    pub fn binary_record(self) -> &'static str {
        match self {
            LimeFlavour::Ildg => "ildg-binary-data",
            LimeFlavour::Scidac => "scidac-binary-data",
        }
    }
}

/// Options of [`write_lime_gauge`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimeWriteOptions {
    /// ILDG or SciDAC binary record (default ILDG).
    pub flavour: LimeFlavour,
    /// Stored precision (default double).
    pub precision: Precision,
    /// Payload of the `scidac-file-xml` record (user file metadata, written as given).
    pub file_xml: String,
    /// Payload of the `scidac-record-xml` record (user record metadata), written as given;
    /// empty (the default): qdsl's own, a `usqcdInfo` document (as MILC and Grid write)
    /// recording the plaquette P and the link trace of the stored links to 17 digits in
    /// `<plaq>` and `<linktr>`, which readers check (see [`super::recorded_observables`]).
    pub record_xml: String,
    /// The `<date>` of `scidac-private-record-xml`; omitted when `None` (so that writing
    /// the same field twice gives the same bytes).
    pub date: Option<String>,
    /// ILDG logical file name, written as an `ildg-data-lfn` record (ILDG flavour only).
    pub lfn: Option<String>,
}

impl Default for LimeWriteOptions {
    fn default() -> Self {
        Self {
            flavour: LimeFlavour::Ildg,
            precision: Precision::Double,
            file_xml:
                r#"<?xml version="1.0" encoding="UTF-8"?><title>qdsl gauge configuration</title>"#
                    .to_string(),
            record_xml: String::new(),
            date: None,
            lfn: None,
        }
    }
}

const ILDG_FORMAT: &str = "ildg-format";
pub(super) const PRIVATE_FILE: &str = "scidac-private-file-xml";
pub(super) const PRIVATE_RECORD: &str = "scidac-private-record-xml";
pub(super) const CHECKSUM: &str = "scidac-checksum";

/// What one record declares about the lattice and the precision.
pub(super) struct Declared {
    record: &'static str,
    pub(super) dims: Option<[i64; 4]>,
    precision: Option<Precision>,
}

/// Reads an ILDG or SciDAC gauge file: checks the LIME structure, the declared lattice
/// and precision against the binary record's size, the SciDAC checksum when present, and
/// the links (see [`ReadOptions`]).
pub fn read_lime_gauge(
    path: impl AsRef<Path>,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path, options)
}

/// Decodes the bytes of an ILDG or SciDAC gauge file.
pub(crate) fn decode(
    data: &[u8],
    path: &Path,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let records = parse_lime(data, path)?;
    let (flavour, binary) = [LimeFlavour::Ildg, LimeFlavour::Scidac]
        .into_iter()
        .find_map(|f| find_record(&records, f.binary_record()).map(|r| (f, r)))
        .ok_or_else(|| IoError::Missing {
            path: path.to_path_buf(),
            what: "LIME record `ildg-binary-data` or `scidac-binary-data`".to_string(),
        })?;

    let mut declared = Vec::new();
    if let Some(r) = find_record(&records, ILDG_FORMAT) {
        declared.push(ildg_format(record_text(r.data, ILDG_FORMAT, path)?, path)?);
    }
    if let Some(r) = find_record(&records, PRIVATE_FILE) {
        declared.push(private_file(
            record_text(r.data, PRIVATE_FILE, path)?,
            path,
        )?);
    }
    if let Some(r) = find_record(&records, PRIVATE_RECORD) {
        declared.push(private_record(
            record_text(r.data, PRIVATE_RECORD, path)?,
            path,
        )?);
    }
    let (dims_record, dims) = agreed(&declared, |d| d.dims, "lattice dimensions", path)?;
    let (_, precision) = agreed(&declared, |d| d.precision, "precision", path)?;
    let lattice = lattice_from_header(dims, &format!("record `{dims_record}`"), path)?;

    let codec = LinkCodec {
        precision,
        order: ByteOrder::Big,
        rows: 3,
    };
    let binary_what = format!(
        "`{}` record (payload at byte offset {})",
        binary.type_name,
        binary.data_offset()
    );
    let expected = codec.payload_bytes(&lattice);
    if binary.data.len() as u64 != expected {
        return Err(IoError::SizeMismatch {
            path: path.to_path_buf(),
            what: binary_what,
            dims: lattice.dims(),
            expected,
            found: binary.data.len() as u64,
        });
    }
    let mut checks = Vec::new();
    if let Some(r) = find_record(&records, CHECKSUM) {
        checks.push(
            verify_checksum(r, binary.data, codec.site_bytes(), path)
                .or_else(|e| checksum_mismatch(e, options.checksum))?,
        );
    }
    let field = codec.decode(binary.data, lattice, path, &binary_what)?;
    check_links(&field, options.unitarity, precision, path, &mut checks)?;

    let metadata: Vec<(String, String)> = records
        .iter()
        .filter(|r| r.offset != binary.offset)
        .map(|r| (r.type_name.clone(), describe(r)))
        .collect();
    let texts: Vec<(&str, &str)> = metadata
        .iter()
        .filter(|(record, _)| record != CHECKSUM)
        .map(|(record, text)| (record.as_str(), text.as_str()))
        .collect();
    let recorded = lime_metadata_observables(&texts, path)?;
    check_recorded(&recorded, &field, precision, path, &mut checks)?;
    Ok(GaugeFile {
        path: path.to_path_buf(),
        field,
        format: GaugeFileFormat::Lime(flavour),
        precision,
        byte_order: ByteOrder::Big,
        metadata,
        checks,
    })
}

/// A record's text, or its size when it is binary.
pub(super) fn describe(r: &LimeRecord<'_>) -> String {
    let end = r.data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    match std::str::from_utf8(&r.data[..end]) {
        Ok(text) => text.to_string(),
        Err(_) => format!("({} bytes of binary data)", r.data.len()),
    }
}

/// The value all declaring records agree on, with the first record that declared it.
fn agreed<V: PartialEq + std::fmt::Debug + Copy>(
    declared: &[Declared],
    get: impl Fn(&Declared) -> Option<V>,
    what: &str,
    path: &Path,
) -> Result<(&'static str, V), IoError> {
    let mut found: Option<(&'static str, V)> = None;
    for d in declared {
        let Some(v) = get(d) else { continue };
        match found {
            None => found = Some((d.record, v)),
            Some((first, w)) if w != v => {
                return Err(IoError::BadHeader {
                    path: path.to_path_buf(),
                    field: format!("{what} in record `{}`", d.record),
                    expected: format!("{w:?} (as declared in record `{first}`)"),
                    found: format!("{v:?}"),
                })
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| IoError::Missing {
        path: path.to_path_buf(),
        what: format!(
            "{what}: none of the records `{ILDG_FORMAT}`, `{PRIVATE_FILE}`, `{PRIVATE_RECORD}` \
             declares them"
        ),
    })
}

/// A required element.
pub(super) fn required<'a>(
    xml: &'a str,
    tag: &str,
    record: &str,
    path: &Path,
) -> Result<&'a str, IoError> {
    element(xml, tag, record, path)?.ok_or_else(|| IoError::Missing {
        path: path.to_path_buf(),
        what: format!("XML element <{tag}> in record `{record}`"),
    })
}

fn ildg_format(xml: &str, path: &Path) -> Result<Declared, IoError> {
    let field = required(xml, "field", ILDG_FORMAT, path)?;
    if field != "su3gauge" {
        return Err(IoError::Unsupported {
            path: path.to_path_buf(),
            what: format!("<field> in record `{ILDG_FORMAT}`"),
            found: field.to_string(),
            supported: "su3gauge".to_string(),
        });
    }
    let precision = match required(xml, "precision", ILDG_FORMAT, path)? {
        "32" => Precision::Single,
        "64" => Precision::Double,
        other => {
            return Err(IoError::Unsupported {
                path: path.to_path_buf(),
                what: format!("<precision> in record `{ILDG_FORMAT}`"),
                found: other.to_string(),
                supported: "32, 64".to_string(),
            })
        }
    };
    let mut dims = [0i64; 4];
    for (d, tag) in dims.iter_mut().zip(["lx", "ly", "lz", "lt"]) {
        let text = required(xml, tag, ILDG_FORMAT, path)?;
        *d = parse(text, tag, ILDG_FORMAT, "an integer extent", path)?;
    }
    Ok(Declared {
        record: ILDG_FORMAT,
        dims: Some(dims),
        precision: Some(precision),
    })
}

pub(super) fn private_file(xml: &str, path: &Path) -> Result<Declared, IoError> {
    if let Some(n) = element(xml, "spacetime", PRIVATE_FILE, path)? {
        if n != "4" {
            return Err(IoError::Unsupported {
                path: path.to_path_buf(),
                what: format!("<spacetime> in record `{PRIVATE_FILE}`"),
                found: n.to_string(),
                supported: "4".to_string(),
            });
        }
    }
    let text = required(xml, "dims", PRIVATE_FILE, path)?;
    let parts: Vec<&str> = text.split_whitespace().collect();
    let malformed = || IoError::Malformed {
        path: path.to_path_buf(),
        what: format!("XML element <dims> in record `{PRIVATE_FILE}`"),
        location: "<dims>".to_string(),
        expected: "four integers Lx Ly Lz Lt".to_string(),
        found: text.to_string(),
    };
    if parts.len() != 4 {
        return Err(malformed());
    }
    let mut dims = [0i64; 4];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p.parse().map_err(|_| malformed())?;
    }
    Ok(Declared {
        record: PRIVATE_FILE,
        dims: Some(dims),
        precision: None,
    })
}

fn private_record(xml: &str, path: &Path) -> Result<Declared, IoError> {
    let r = PRIVATE_RECORD;
    let unsupported = |tag: &str, found: &str, supported: &str| IoError::Unsupported {
        path: path.to_path_buf(),
        what: format!("<{tag}> in record `{r}`"),
        found: found.to_string(),
        supported: supported.to_string(),
    };
    if let Some(t) = element(xml, "datatype", r, path)? {
        if !t.contains("ColorMatrix") {
            return Err(unsupported(
                "datatype",
                t,
                "a colour-matrix type (e.g. QDP_F3_ColorMatrix)",
            ));
        }
    }
    let precision = match element(xml, "precision", r, path)? {
        None => None,
        Some("F") | Some("S") => Some(Precision::Single),
        Some("D") => Some(Precision::Double),
        Some(other) => return Err(unsupported("precision", other, "F, S, D")),
    };
    if let Some(c) = element(xml, "colors", r, path)? {
        if c != "3" {
            return Err(unsupported("colors", c, "3"));
        }
    }
    if let Some(n) = element(xml, "datacount", r, path)? {
        if n != "4" {
            return Err(unsupported("datacount", n, "4 (one matrix per direction)"));
        }
    }
    if let (Some(t), Some(p)) = (element(xml, "typesize", r, path)?, precision) {
        let bytes = 18 * p.bytes();
        if t != bytes.to_string() {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                field: format!("<typesize> in record `{r}`"),
                expected: format!("{bytes} (a 3×3 complex matrix at precision {p:?})"),
                found: t.to_string(),
            });
        }
    }
    Ok(Declared {
        record: PRIVATE_RECORD,
        dims: None,
        precision,
    })
}

/// Verifies the `scidac-checksum` record against the binary data.
pub(super) fn verify_checksum(
    record: &LimeRecord<'_>,
    payload: &[u8],
    site_bytes: usize,
    path: &Path,
) -> Result<Check, IoError> {
    let xml = record_text(record.data, CHECKSUM, path)?;
    let suma = parse_hex_u32(
        required(xml, "suma", CHECKSUM, path)?,
        "suma",
        CHECKSUM,
        path,
    )?;
    let sumb = parse_hex_u32(
        required(xml, "sumb", CHECKSUM, path)?,
        "sumb",
        CHECKSUM,
        path,
    )?;
    let sums = scidac_checksum(payload, site_bytes);
    if (sums.mod29, sums.mod31) != (suma, sumb) {
        return Err(IoError::ChecksumMismatch {
            path: path.to_path_buf(),
            what: format!(
                "SciDAC checksum (record `{CHECKSUM}` at byte offset {})",
                record.offset
            ),
            expected: format!("suma = {suma:08x}, sumb = {sumb:08x}"),
            computed: format!("suma = {:08x}, sumb = {:08x}", sums.mod29, sums.mod31),
        });
    }
    Ok(Check::ScidacChecksum { suma, sumb })
}

/// qdsl's record XML: a `usqcdInfo` document with the plaquette P = ⟨Re tr U_□⟩/3 and the
/// link trace ⟨Re tr U⟩/3 of `stored` (the links as stored), to 17 significant digits.
fn usqcd_info(stored: &GaugeField<f64>) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><usqcdInfo><version>1.0</version><plaq>{:.16e}</plaq><linktr>{:.16e}</linktr><info>written by qdsl</info></usqcdInfo>"#,
        plaquette(stored).average,
        link_trace(stored)
    )
}

/// Writes a field as an ILDG or SciDAC LIME file. Message 1: `scidac-private-file-xml`,
/// `scidac-file-xml`. Message 2: `scidac-private-record-xml`, `scidac-record-xml`, (ILDG:
/// `ildg-format`, `ildg-data-lfn` if given), the binary record, `scidac-checksum` — the
/// record set MILC and QIO write.
pub fn write_lime_gauge<T: Real>(
    path: impl AsRef<Path>,
    field: &GaugeField<T>,
    options: &LimeWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let codec = LinkCodec {
        precision: options.precision,
        order: ByteOrder::Big,
        rows: 3,
    };
    let payload = codec.encode(field);
    let sums = scidac_checksum(&payload, codec.site_bytes());
    let record_xml = if options.record_xml.is_empty() {
        let stored = codec.decode(&payload, *field.lattice(), path, "encoded links")?;
        usqcd_info(&stored)
    } else {
        options.record_xml.clone()
    };
    let [lx, ly, lz, lt] = field.lattice().dims();
    let xml_head = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
    let private_file = private_file_xml(field.lattice());
    let (letter, bytes) = match options.precision {
        Precision::Single => ('F', 4),
        Precision::Double => ('D', 8),
    };
    let date = options
        .date
        .as_ref()
        .map(|d| format!("<date>{}</date>", escape(d)))
        .unwrap_or_default();
    let private_record = format!(
        "{xml_head}<scidacRecord><version>1.1</version>{date}<recordtype>0</recordtype>\
         <datatype>QDP_{letter}3_ColorMatrix</datatype><precision>{letter}</precision>\
         <colors>3</colors><spins>1</spins><typesize>{}</typesize><datacount>4</datacount>\
         </scidacRecord>",
        18 * bytes
    );
    let ildg_format = format!(
        "{xml_head}<ildgFormat xmlns=\"http://www.lqcd.org/ildg\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.lqcd.org/ildg/filefmt.xsd\"><version>1.0</version>\
         <field>su3gauge</field><precision>{}</precision><lx>{lx}</lx><ly>{ly}</ly>\
         <lz>{lz}</lz><lt>{lt}</lt></ildgFormat>",
        options.precision.bits()
    );
    let checksum = checksum_xml(sums);
    let head: [(&str, &[u8]); 2] = [
        (PRIVATE_FILE, private_file.as_bytes()),
        ("scidac-file-xml", options.file_xml.as_bytes()),
    ];
    let mut body: Vec<(&str, &[u8])> = vec![
        (PRIVATE_RECORD, private_record.as_bytes()),
        ("scidac-record-xml", record_xml.as_bytes()),
    ];
    if options.flavour == LimeFlavour::Ildg {
        body.push((ILDG_FORMAT, ildg_format.as_bytes()));
        if let Some(lfn) = &options.lfn {
            body.push(("ildg-data-lfn", lfn.as_bytes()));
        }
    }
    body.push((options.flavour.binary_record(), &payload));
    body.push((CHECKSUM, checksum.as_bytes()));
    let bytes = encode_lime(&[&head, &body], path)?;
    write_file(path, &bytes)
}

/// The `scidac-private-file-xml` payload of a single-file (volfmt 0) 4D lattice.
pub(super) fn private_file_xml(lattice: &crate::lattice::Lattice) -> String {
    let [lx, ly, lz, lt] = lattice.dims();
    format!(
        "{XML_HEAD}<scidacFile><version>1.1</version><spacetime>4</spacetime>\
         <dims>{lx} {ly} {lz} {lt} </dims><volfmt>0</volfmt></scidacFile>"
    )
}

/// The `scidac-checksum` payload of the sums of a binary record.
pub(super) fn checksum_xml(sums: super::checksum::RotatedSums) -> String {
    format!(
        "{XML_HEAD}<scidacChecksum><version>1.0</version><suma>{:x}</suma><sumb>{:x}</sumb>\
         </scidacChecksum>",
        sums.mod29, sums.mod31
    )
}

/// The XML declaration every SciDAC writer puts first.
pub(super) const XML_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>"#;
