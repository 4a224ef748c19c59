//! The LIME container (Lattice QCD Interchange Message Encapsulation, USQCD c-lime): the
//! envelope of ILDG and SciDAC files.
//!
//! A LIME file is a sequence of records. Each has a 144-byte big-endian header
//!
//! | offset | field |
//! |---|---|
//! | 0 | u32 magic 0x456789ab |
//! | 4 | u16 version (1) |
//! | 6 | u16 flags: bit 15 message begin (MB), bit 14 message end (ME) |
//! | 8 | u64 payload length in bytes |
//! | 16 | `char type[128]`, NUL-padded |
//!
//! followed by the payload, padded with zeros to a multiple of 8 bytes. Records are
//! grouped into messages: the first record of a message has MB set, the last ME. Readers
//! look records up by type, never by position (writers order them differently).

use super::bytes::{ByteOrder, Bytes};
use super::IoError;
use std::path::Path;

/// The LIME record magic number.
pub const LIME_MAGIC: u32 = 0x4567_89ab;
/// The LIME format version c-lime writes.
pub const LIME_VERSION: u16 = 1;
/// Bytes of a LIME record header.
pub const LIME_HEADER_BYTES: u64 = 144;
const TYPE_BYTES: usize = 128;
const MESSAGE_BEGIN: u16 = 0x8000;
const MESSAGE_END: u16 = 0x4000;

/// One record of a LIME file, borrowing its payload from the file's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimeRecord<'a> {
    /// The record type (e.g. `ildg-binary-data`).
    pub type_name: String,
    /// The message-begin flag.
    pub message_begin: bool,
    /// The message-end flag.
    pub message_end: bool,
    /// Byte offset of the record's header in the file.
    pub offset: u64,
    /// The payload (without padding).
    pub data: &'a [u8],
}

impl LimeRecord<'_> {
    /// Byte offset of the payload in the file.
    pub fn data_offset(&self) -> u64 {
        self.offset + LIME_HEADER_BYTES
    }
}

/// Splits a LIME file into its records, checking every header's magic number and
/// version and that every payload lies inside the file. The final record's padding may
/// be missing.
pub fn parse_lime<'a>(data: &'a [u8], path: &Path) -> Result<Vec<LimeRecord<'a>>, IoError> {
    let b = Bytes::new(data, path);
    let mut records = Vec::new();
    let mut offset = 0u64;
    loop {
        let what = format!("LIME record header #{}", records.len());
        b.slice(offset, LIME_HEADER_BYTES, &what)?;
        let magic = b.u32(offset, ByteOrder::Big, &what)?;
        if magic != LIME_MAGIC {
            return Err(IoError::BadMagic {
                path: path.to_path_buf(),
                what,
                offset,
                expected: format!("0x{LIME_MAGIC:08x}"),
                found: format!("0x{magic:08x}"),
            });
        }
        let version = b.u16(offset + 4, ByteOrder::Big, &what)?;
        if version != LIME_VERSION {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                field: format!(
                    "LIME version of record #{} at offset {offset}",
                    records.len()
                ),
                expected: LIME_VERSION.to_string(),
                found: version.to_string(),
            });
        }
        let flags = b.u16(offset + 6, ByteOrder::Big, &what)?;
        let length = b.u64(offset + 8, ByteOrder::Big, &what)?;
        let raw_type = b.slice(offset + 16, TYPE_BYTES as u64, &what)?;
        let type_end = raw_type.iter().position(|&c| c == 0).unwrap_or(TYPE_BYTES);
        let type_name = std::str::from_utf8(&raw_type[..type_end])
            .map_err(|_| IoError::Malformed {
                path: path.to_path_buf(),
                what: format!("type of LIME record #{}", records.len()),
                location: format!("byte offset {}", offset + 16),
                expected: "an ASCII record type".to_string(),
                found: String::from_utf8_lossy(&raw_type[..type_end]).into_owned(),
            })?
            .to_string();
        let data_offset = offset + LIME_HEADER_BYTES;
        let payload = b.slice(
            data_offset,
            length,
            &format!("payload of LIME record `{type_name}`"),
        )?;
        records.push(LimeRecord {
            type_name,
            message_begin: flags & MESSAGE_BEGIN != 0,
            message_end: flags & MESSAGE_END != 0,
            offset,
            data: payload,
        });
        // The payload lies inside the file, so these sums cannot overflow.
        offset = data_offset + length + padding(length);
        if offset >= b.len() {
            return Ok(records);
        }
    }
}

/// Zero bytes after a payload of `length` bytes: up to the next multiple of 8.
fn padding(length: u64) -> u64 {
    (8 - length % 8) % 8
}

/// The first record of the given type.
pub fn find_record<'r, 'a>(
    records: &'r [LimeRecord<'a>],
    type_name: &str,
) -> Option<&'r LimeRecord<'a>> {
    records.iter().find(|r| r.type_name == type_name)
}

/// Encodes records as a LIME file. Each inner slice is one message of `(type, payload)`
/// records: its first record gets the MB flag, its last the ME flag. A type name must be
/// shorter than 128 bytes (it is NUL-terminated); `path` only names the file in errors.
pub fn encode_lime(messages: &[&[(&str, &[u8])]], path: &Path) -> Result<Vec<u8>, IoError> {
    let mut out = Vec::new();
    for message in messages {
        for (i, (type_name, payload)) in message.iter().enumerate() {
            if type_name.len() >= TYPE_BYTES {
                return Err(IoError::Unwritable {
                    path: path.to_path_buf(),
                    what: "LIME record type".to_string(),
                    expected: format!("at most {} bytes", TYPE_BYTES - 1),
                    found: type_name.to_string(),
                });
            }
            let mut flags = 0u16;
            if i == 0 {
                flags |= MESSAGE_BEGIN;
            }
            if i + 1 == message.len() {
                flags |= MESSAGE_END;
            }
            out.extend_from_slice(&LIME_MAGIC.to_be_bytes());
            out.extend_from_slice(&LIME_VERSION.to_be_bytes());
            out.extend_from_slice(&flags.to_be_bytes());
            out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
            let type_start = out.len();
            out.extend_from_slice(type_name.as_bytes());
            out.resize(type_start + TYPE_BYTES, 0);
            out.extend_from_slice(payload);
            out.resize(out.len() + padding(payload.len() as u64) as usize, 0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_documented_header_layout() {
        let p = Path::new("t.lime");
        let bytes = encode_lime(
            &[&[("a-type", b"hello"), ("b", b"12345678")], &[("c", b"")]],
            p,
        )
        .unwrap();
        // Record 0: magic, version 1, MB only, length 5, type, 5 bytes + 3 padding.
        assert_eq!(&bytes[0..4], &[0x45, 0x67, 0x89, 0xab]);
        assert_eq!(&bytes[4..8], &[0, 1, 0x80, 0]);
        assert_eq!(&bytes[8..16], &5u64.to_be_bytes());
        assert_eq!(&bytes[16..22], b"a-type");
        assert!(bytes[22..144].iter().all(|&c| c == 0));
        assert_eq!(&bytes[144..152], b"hello\0\0\0");
        // Record 1 (ME) starts at 152, record 2 (MB and ME) at 152 + 144 + 8.
        assert_eq!(&bytes[158..160], &[0x40, 0]);
        assert_eq!(&bytes[304 + 6..304 + 8], &[0xc0, 0]);
        assert_eq!(bytes.len(), 304 + 144);

        let recs = parse_lime(&bytes, p).unwrap();
        let names: Vec<_> = recs.iter().map(|r| r.type_name.as_str()).collect();
        assert_eq!(names, ["a-type", "b", "c"]);
        assert_eq!(find_record(&recs, "b").unwrap().data, b"12345678");
        assert_eq!(find_record(&recs, "b").unwrap().data_offset(), 152 + 144);
        assert!(recs[0].message_begin && !recs[0].message_end);
        assert!(recs[2].message_begin && recs[2].message_end);
    }

    #[test]
    fn rejects_bad_magic_and_truncated_payloads() {
        let p = Path::new("t.lime");
        let mut bytes = encode_lime(&[&[("x", b"0123456789")]], p).unwrap();
        bytes.truncate(150);
        let e = parse_lime(&bytes, p).unwrap_err().to_string();
        assert!(e.contains("expected 10 bytes, found 6"), "{e}");
        bytes[0] = 0;
        assert!(matches!(
            parse_lime(&bytes, p),
            Err(IoError::BadMagic { offset: 0, .. })
        ));
        assert!(matches!(parse_lime(&[], p), Err(IoError::Truncated { .. })));
        assert!(encode_lime(&[&[(&"t".repeat(128), b"")]], p).is_err());
    }
}
