//! SciDAC / QIO fermion files: LIME files (see [`super::lime`]) whose binary records hold
//! colour vectors or Dirac fermions, the record types of USQCD's QIO library, which MILC
//! and Chroma write.
//!
//! A file is a sequence of LIME messages. The first holds `scidac-private-file-xml`
//! (`<spacetime>4</spacetime>`, `<dims>Lx Ly Lz Lt</dims>`) and `scidac-file-xml` (free
//! user metadata). Each field record is one further message:
//!
//! | record | holds |
//! |---|---|
//! | `scidac-private-record-xml` | `<datatype>` (`USQCD_F3_ColorVector`, `QDP_D3_DiracFermion`, …), `<precision>` F/D, `<colors>` 3, `<spins>`, `<typesize>` (bytes of one vector: 24/48 for a colour vector, 96/192 for a Dirac fermion), `<datacount>` (vectors per site) |
//! | `scidac-record-xml` | user metadata; for a propagator column `<usqcdPropInfo>` with `<spin>` and `<color>` (Dirac) or `<usqcdKSPropInfo>` with `<color>` (staggered) |
//! | `scidac-binary-data` (or `ildg-binary-data`) | big-endian reals, sites lexicographic (x fastest), per site `datacount` vectors `[spin][colour][re, im]` |
//! | `scidac-checksum` | `<suma>`, `<sumb>` (see [`super::checksum`]) |
//!
//! MILC's `ksvector.*.sample.l8` files are of this kind: one `QDP_F3_ColorVector` record
//! (f32, typesize 24, datacount 1) with a checksum, the file XML listing the asqtad
//! parameters.
//!
//! Reading: every field record of a colour-vector or Dirac-fermion datatype gives
//! `datacount` columns; records whose user XML marks them as a propagator *source*
//! (`usqcdPropSourceInfo`, …) and records of other datatypes (e.g. a complex source
//! field) are skipped and listed in the metadata. When the records carry
//! `<spin>`/`<color>` labels the columns are ordered by them (σ · 3 + b), else by file
//! order. Writing: one record per column; a propagator's (3 or 12 columns) records get
//! the USQCD `usqcdKSPropInfo`/`usqcdPropInfo` labels, its file XML a `<qdslPropagator>`
//! element (qdsl writes no source record, so it claims none of QIO's propagator-file types).

use super::bytes::{read_file, write_file, ByteOrder, Precision};
use super::checksum::scidac_checksum;
use super::fermion::{
    column_shape, FermionCodec, FermionFile, FermionFileFormat, FermionKind, FermionWriteOptions,
    FERMION_COLOURS,
};
use super::lime::{encode_lime, find_record, parse_lime, LimeRecord};
use super::lime_gauge::{
    checksum_xml, describe, private_file, private_file_xml, required, verify_checksum, CHECKSUM,
    PRIVATE_FILE, PRIVATE_RECORD, XML_HEAD,
};
use super::xml::{element, escape, parse, record_text};
use super::{lattice_from_header, IoError};
use crate::field::ColourSpinorField;
use crate::lattice::Lattice;
use crate::Real;
use std::path::Path;

const RECORD_XML: &str = "scidac-record-xml";
const BINARY_RECORDS: [&str; 2] = ["scidac-binary-data", "ildg-binary-data"];

/// Reads a SciDAC / QIO fermion file (a vector or a propagator's columns).
pub fn read_scidac_fermion(path: impl AsRef<Path>) -> Result<FermionFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path)
}

/// What a `scidac-private-record-xml` declares about one binary record.
struct RecordInfo {
    kind: Option<FermionKind>,
    datatype: String,
    precision: Precision,
    datacount: usize,
}

/// One field record read: its columns, and the σ · 3 + b label its XML gives.
struct FieldRecord {
    label: Option<usize>,
    record_offset: u64,
    columns: Vec<ColourSpinorField<f64>>,
}

/// Decodes the bytes of a SciDAC fermion file.
pub(crate) fn decode(data: &[u8], path: &Path) -> Result<FermionFile, IoError> {
    let records = parse_lime(data, path)?;
    let file_record = find_record(&records, PRIVATE_FILE).ok_or_else(|| IoError::Missing {
        path: path.to_path_buf(),
        what: format!("LIME record `{PRIVATE_FILE}` (the lattice dimensions)"),
    })?;
    let dims = private_file(record_text(file_record.data, PRIVATE_FILE, path)?, path)?.dims;
    let dims = dims.ok_or_else(|| IoError::Missing {
        path: path.to_path_buf(),
        what: format!("<dims> in record `{PRIVATE_FILE}`"),
    })?;
    let lattice = lattice_from_header(dims, &format!("record `{PRIVATE_FILE}`"), path)?;

    let mut metadata = Vec::new();
    let mut checks = Vec::new();
    let mut fields: Vec<FieldRecord> = Vec::new();
    let mut shape: Option<(FermionKind, Precision, u64)> = None;
    for message in messages(&records) {
        let binary = message
            .iter()
            .find(|r| BINARY_RECORDS.contains(&r.type_name.as_str()));
        for r in message
            .iter()
            .filter(|r| Some(r.offset) != binary.map(|b| b.offset))
        {
            metadata.push((r.type_name.clone(), describe(r)));
        }
        let Some(binary) = binary else { continue };
        let private = message
            .iter()
            .find(|r| r.type_name == PRIVATE_RECORD)
            .ok_or_else(|| IoError::Missing {
                path: path.to_path_buf(),
                what: format!(
                    "record `{PRIVATE_RECORD}` in the message of the binary record at byte \
                     offset {}",
                    binary.offset
                ),
            })?;
        let info = record_info(record_text(private.data, PRIVATE_RECORD, path)?, path)?;
        let user_xml = match message.iter().find(|r| r.type_name == RECORD_XML) {
            Some(r) => record_text(r.data, RECORD_XML, path)?,
            None => "",
        };
        let Some(kind) = info.kind.filter(|_| !user_xml.contains("SourceInfo>")) else {
            metadata.push((
                binary.type_name.clone(),
                format!(
                    "(skipped: {} record of {} bytes at byte offset {})",
                    info.datatype,
                    binary.data.len(),
                    binary.offset
                ),
            ));
            continue;
        };
        if let Some((k, p, first)) = shape {
            if (k, p) != (kind, info.precision) {
                return Err(IoError::BadHeader {
                    path: path.to_path_buf(),
                    field: format!(
                        "datatype of the binary record at byte offset {}",
                        binary.offset
                    ),
                    expected: format!(
                        "{} at precision {} (as the record at byte offset {first})",
                        k.usqcd_name(),
                        p.name()
                    ),
                    found: format!(
                        "{} at precision {}",
                        kind.usqcd_name(),
                        info.precision.name()
                    ),
                });
            }
        }
        shape.get_or_insert((kind, info.precision, binary.offset));
        let codec = FermionCodec {
            kind,
            columns: info.datacount,
            precision: info.precision,
            order: ByteOrder::Big,
        };
        let what = format!(
            "`{}` record (payload at byte offset {})",
            binary.type_name,
            binary.data_offset()
        );
        check_size(&codec, &lattice, binary, &what, path)?;
        if let Some(sum) = message.iter().find(|r| r.type_name == CHECKSUM) {
            checks.push(verify_checksum(sum, binary.data, codec.site_bytes(), path)?);
        }
        fields.push(FieldRecord {
            label: column_label(user_xml, kind, path)?,
            record_offset: binary.offset,
            columns: codec.decode(binary.data, lattice, path, &what)?,
        });
    }
    let Some((kind, precision, _)) = shape else {
        return Err(IoError::Missing {
            path: path.to_path_buf(),
            what: "a binary record of datatype ColorVector or DiracFermion".to_string(),
        });
    };
    Ok(FermionFile {
        path: path.to_path_buf(),
        format: FermionFileFormat::Scidac,
        kind,
        columns: ordered_columns(fields, path)?,
        precision,
        byte_order: ByteOrder::Big,
        metadata,
        checks,
    })
}

/// The records grouped into LIME messages (a message starts at a record with the
/// message-begin flag; a file whose first record lacks it still starts one).
fn messages<'r, 'a>(records: &'r [LimeRecord<'a>]) -> Vec<&'r [LimeRecord<'a>]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, r) in records.iter().enumerate() {
        if r.message_begin && i > start {
            out.push(&records[start..i]);
            start = i;
        }
    }
    if start < records.len() {
        out.push(&records[start..]);
    }
    out
}

/// The payload must be exactly V × datacount × typesize bytes.
fn check_size(
    codec: &FermionCodec,
    lattice: &Lattice,
    binary: &LimeRecord<'_>,
    what: &str,
    path: &Path,
) -> Result<(), IoError> {
    let expected = codec.payload_bytes(lattice);
    if binary.data.len() as u64 != expected {
        return Err(IoError::SizeMismatch {
            path: path.to_path_buf(),
            what: format!(
                "{what}, {} × {} bytes per site",
                codec.columns,
                codec.column_bytes()
            ),
            dims: lattice.dims(),
            expected,
            found: binary.data.len() as u64,
        });
    }
    Ok(())
}

/// Parses and checks a `scidac-private-record-xml`. A datatype that is neither a colour
/// vector nor a Dirac fermion gives `kind: None` (the record is skipped).
fn record_info(xml: &str, path: &Path) -> Result<RecordInfo, IoError> {
    let r = PRIVATE_RECORD;
    let unsupported = |tag: &str, found: &str, supported: &str| IoError::Unsupported {
        path: path.to_path_buf(),
        what: format!("<{tag}> in record `{r}`"),
        found: found.to_string(),
        supported: supported.to_string(),
    };
    let datatype = required(xml, "datatype", r, path)?;
    let kind = [FermionKind::ColourVector, FermionKind::DiracFermion]
        .into_iter()
        .find(|k| datatype.ends_with(k.usqcd_name()));
    let precision = match required(xml, "precision", r, path)? {
        "F" | "S" => Precision::Single,
        "D" => Precision::Double,
        other => return Err(unsupported("precision", other, "F, S, D")),
    };
    let Some(kind) = kind else {
        return Ok(RecordInfo {
            kind: None,
            datatype: datatype.to_string(),
            precision,
            datacount: 0,
        });
    };
    if let Some(c) = element(xml, "colors", r, path)? {
        if c != FERMION_COLOURS.to_string() {
            return Err(unsupported("colors", c, "3"));
        }
    }
    // MILC writes no <spins> for colour vectors; QIO writers give the spin count or 0.
    if let Some(s) = element(xml, "spins", r, path)? {
        let fits = s == kind.spins().to_string() || s == "0";
        if !fits {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                field: format!("<spins> in record `{r}` (datatype {datatype})"),
                expected: format!("{} (or 0)", kind.spins()),
                found: s.to_string(),
            });
        }
    }
    let column_bytes = 2 * kind.spins() * FERMION_COLOURS * precision.bytes();
    let typesize = required(xml, "typesize", r, path)?;
    if typesize != column_bytes.to_string() {
        return Err(IoError::BadHeader {
            path: path.to_path_buf(),
            field: format!("<typesize> in record `{r}`"),
            expected: format!(
                "{column_bytes} (one {datatype} at precision {})",
                precision.name()
            ),
            found: typesize.to_string(),
        });
    }
    let datacount: usize = match element(xml, "datacount", r, path)? {
        None => 1,
        Some(text) => parse(text, "datacount", r, "a count of vectors per site", path)?,
    };
    // A bound that keeps the site size far from overflow; real files hold ≤ 12.
    if datacount == 0 || datacount > 1024 {
        return Err(IoError::BadHeader {
            path: path.to_path_buf(),
            field: format!("<datacount> in record `{r}`"),
            expected: "1 to 1024 vectors per site".to_string(),
            found: datacount.to_string(),
        });
    }
    Ok(RecordInfo {
        kind: Some(kind),
        datatype: datatype.to_string(),
        precision,
        datacount,
    })
}

/// The column σ · 3 + b a propagator record's user XML names (`<spin>`, `<color>`);
/// `None` without a `<color>` element.
fn column_label(xml: &str, kind: FermionKind, path: &Path) -> Result<Option<usize>, IoError> {
    let Some(colour) = element(xml, "color", RECORD_XML, path)? else {
        return Ok(None);
    };
    let colour: usize = parse(colour, "color", RECORD_XML, "a colour 0, 1 or 2", path)?;
    let spin: usize = match (kind, element(xml, "spin", RECORD_XML, path)?) {
        (FermionKind::DiracFermion, Some(s)) => {
            parse(s, "spin", RECORD_XML, "a spin 0 to 3", path)?
        }
        _ => 0,
    };
    if colour >= FERMION_COLOURS || spin >= kind.spins() {
        return Err(IoError::BadHeader {
            path: path.to_path_buf(),
            field: format!("<spin>, <color> in record `{RECORD_XML}`"),
            expected: format!("spin < {}, colour < {FERMION_COLOURS}", kind.spins()),
            found: format!("spin {spin}, colour {colour}"),
        });
    }
    Ok(Some(spin * FERMION_COLOURS + colour))
}

/// The columns of all records: by label when every record has one (each label once),
/// else in file order.
fn ordered_columns(
    mut fields: Vec<FieldRecord>,
    path: &Path,
) -> Result<Vec<ColourSpinorField<f64>>, IoError> {
    if fields.iter().all(|f| f.label.is_some()) {
        fields.sort_by_key(|f| f.label);
        if let Some(w) = fields.windows(2).find(|w| w[0].label == w[1].label) {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                field: format!(
                    "<spin>/<color> of the record at byte offset {}",
                    w[1].record_offset
                ),
                expected: "each source spin and colour once".to_string(),
                found: format!(
                    "column {} again (first at byte offset {})",
                    w[1].label.unwrap_or_default(),
                    w[0].record_offset
                ),
            });
        }
    }
    Ok(fields.into_iter().flat_map(|f| f.columns).collect())
}

/// Writes `columns` (one vector, or the 3 or 12 columns of a propagator) as a SciDAC
/// file: one `USQCD_{F,D}3_{ColorVector,DiracFermion}` record per column, each with its
/// checksum.
pub fn write_scidac_fermion<T: Real>(
    path: impl AsRef<Path>,
    columns: &[ColourSpinorField<T>],
    options: &FermionWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let (kind, lattice) = column_shape(columns, path)?;
    let precision = options.precision;
    let codec = FermionCodec {
        kind,
        columns: 1,
        precision,
        order: ByteOrder::Big,
    };
    let propagator = columns.len() > 1 && columns.len() == kind.propagator_columns();
    let info = escape(&options.info);
    let file_xml = if propagator {
        format!(
            "{XML_HEAD}<qdslPropagator><version>1.0</version><type>{}</type>\
             <columns>{}</columns><info>{info}</info></qdslPropagator>",
            kind.usqcd_name(),
            columns.len()
        )
    } else {
        format!("{XML_HEAD}<info>{info}</info>")
    };
    let letter = match precision {
        Precision::Single => 'F',
        Precision::Double => 'D',
    };
    let private_record = format!(
        "{XML_HEAD}<scidacRecord><version>1.0</version><recordtype>0</recordtype>\
         <datatype>USQCD_{letter}3_{}</datatype><precision>{letter}</precision>\
         <colors>3</colors><spins>{}</spins><typesize>{}</typesize><datacount>1</datacount>\
         </scidacRecord>",
        kind.usqcd_name(),
        kind.spins(),
        codec.column_bytes()
    );
    let private_file = private_file_xml(&lattice);
    let mut bodies = Vec::with_capacity(columns.len());
    for (k, column) in columns.iter().enumerate() {
        let payload = codec.encode(std::slice::from_ref(column));
        let checksum = checksum_xml(scidac_checksum(&payload, codec.site_bytes()));
        let (spin, colour) = (k / FERMION_COLOURS, k % FERMION_COLOURS);
        let record_xml = match (propagator, kind) {
            (false, _) => format!("{XML_HEAD}<info>{info}</info>"),
            (true, FermionKind::ColourVector) => format!(
                "{XML_HEAD}<usqcdKSPropInfo><version>1.0</version><color>{colour}</color>\
                 <info>{info}</info></usqcdKSPropInfo>"
            ),
            (true, FermionKind::DiracFermion) => format!(
                "{XML_HEAD}<usqcdPropInfo><version>1.0</version><spin>{spin}</spin>\
                 <color>{colour}</color><info>{info}</info></usqcdPropInfo>"
            ),
        };
        bodies.push((record_xml, payload, checksum));
    }
    let head: [(&str, &[u8]); 2] = [
        (PRIVATE_FILE, private_file.as_bytes()),
        ("scidac-file-xml", file_xml.as_bytes()),
    ];
    let records: Vec<[(&str, &[u8]); 4]> = bodies
        .iter()
        .map(|(xml, payload, checksum)| {
            [
                (PRIVATE_RECORD, private_record.as_bytes()),
                (RECORD_XML, xml.as_bytes()),
                (BINARY_RECORDS[0], payload.as_slice()),
                (CHECKSUM, checksum.as_bytes()),
            ]
        })
        .collect();
    let mut messages: Vec<&[(&str, &[u8])]> = vec![&head];
    messages.extend(records.iter().map(|r| r.as_slice()));
    write_file(path, &encode_lime(&messages, path)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::SpinorLayout;
    use std::path::PathBuf;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("qdsl-scidac-fermion-{}-{name}", std::process::id()))
    }

    #[test]
    fn propagator_columns_round_trip_with_their_labels() {
        let lattice = Lattice::new([2, 2, 2, 4]).unwrap();
        let layout = FermionKind::DiracFermion.layout(lattice);
        let columns: Vec<_> = (0..12)
            .map(|k| ColourSpinorField::<f64>::gaussian(layout, k))
            .collect();
        let path = temp("prop");
        write_scidac_fermion(&path, &columns, &FermionWriteOptions::default()).unwrap();
        let file = read_scidac_fermion(&path).unwrap();
        assert_eq!(file.kind, FermionKind::DiracFermion);
        assert_eq!(file.columns, columns);
        assert_eq!(file.checks.len(), 12);
        let xml = file.metadata_value(RECORD_XML).unwrap();
        assert!(xml.contains("<spin>0</spin><color>0</color>"), "{xml}");

        // Records in another order are put back by their labels.
        let bytes = std::fs::read(&path).unwrap();
        let records = parse_lime(&bytes, &path).unwrap();
        let groups = messages(&records);
        let swapped: Vec<u8> = [0usize, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
            .iter()
            .flat_map(|&m| {
                let first = groups[m][0].offset as usize;
                let last = groups[m].last().unwrap();
                let end = (last.data_offset() as usize + last.data.len()).div_ceil(8) * 8;
                bytes[first..end.min(bytes.len())].to_vec()
            })
            .collect();
        std::fs::write(&path, &swapped).unwrap();
        assert_eq!(read_scidac_fermion(&path).unwrap().columns, columns);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn single_precision_vector_has_the_usqcd_record_set() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let v = ColourSpinorField::<f64>::gaussian(FermionKind::ColourVector.layout(lattice), 3);
        let path = temp("vector");
        let options = FermionWriteOptions {
            precision: Precision::Single,
            info: "a <test>".to_string(),
        };
        write_scidac_fermion(&path, std::slice::from_ref(&v), &options).unwrap();
        let file = read_scidac_fermion(&path).unwrap();
        let private = file.metadata_value(PRIVATE_RECORD).unwrap();
        for needle in [
            "<datatype>USQCD_F3_ColorVector</datatype>",
            "<typesize>24</typesize>",
            "<datacount>1</datacount>",
        ] {
            assert!(private.contains(needle), "{private}");
        }
        assert!(file
            .metadata_value("scidac-file-xml")
            .unwrap()
            .contains("a &lt;test&gt;"));
        assert_eq!(file.precision, Precision::Single);
        let max = file.columns[0]
            .data()
            .iter()
            .zip(v.data())
            .map(|(a, b)| (a - b).norm() / b.norm().max(1.0))
            .fold(0.0, f64::max);
        assert!(max < 1e-7, "{max}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn half_lattice_fields_are_refused() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let half = ColourSpinorField::<f64>::zeros(SpinorLayout::staggered(
            lattice,
            crate::field::SiteSubset::Single(crate::lattice::Parity::Odd),
        ));
        let e = write_scidac_fermion(temp("half"), &[half], &FermionWriteOptions::default())
            .unwrap_err();
        assert!(matches!(e, IoError::Unwritable { .. }), "{e}");
    }
}
