//! MILC's binary gauge formats before v5: versions 1–4 and the 1996 format.
//!
//! Layout, from MILC's own readers (`read_v3_gauge_hdr`, `read_1996_gauge_hdr` and
//! `r_serial` in `generic/io_lat4.c`), in the byte order of the magic number:
//!
//! | format | magic | header | then |
//! |---|---|---|---|
//! | versions 1–4 | 59354 (`GAUGE_VERSION_NUMBER_V1`) | int32 magic, int32 dims[4] (Lx, Ly, Lz, Lt), f32 c1, f32 c2: 28 bytes | the links |
//! | 1996 | 53546 (`GAUGE_VERSION_NUMBER_1996`) | int32 magic, int32 dims[4], int32 header_bytes, int32 order, then a descriptor and parameters; `header_bytes` long | a 4-byte unused checksum, then the links |
//!
//! The links are those of v5 ([`super::milc`]): single precision, sites in natural
//! (lexicographic, x fastest) order, μ = x, y, z, t, each a row-major 3×3 complex matrix.
//! Neither format has a checksum, so the payload's size, which must be exactly
//! V × 288 bytes to the end of the file, and the unitarity of the links are what
//! verify the decoding. A 1996 file in another site order than natural (`order` ≠ 0) is
//! refused, as are versions 1–4 written with 64-bit header integers (first word 0), which
//! are not recognised.

use super::bytes::{u32_from, ByteOrder, Bytes, Precision};
use super::links::LinkCodec;
use super::{
    check_links, exact_payload, lattice_from_header, GaugeFile, GaugeFileFormat, IoError,
    ReadOptions,
};
use std::path::Path;

/// The magic number of MILC's gauge files of versions 1–4.
pub const MILC_V1_TO_V4_MAGIC: u32 = 59354;
/// The magic number of MILC's 1996 gauge format.
pub const MILC_1996_MAGIC: u32 = 53546;
/// Bytes of the version 1–4 header (magic, dims, c1, c2).
const V1_TO_V4_HEADER_BYTES: u64 = 28;
/// The 1996 format's unused checksum word between the header and the links.
const UNUSED_1996_CHECKSUM_BYTES: u64 = 4;

/// Which pre-v5 MILC format a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MilcLegacyVersion {
    /// Versions 1–4 (magic 59354).
    V1To4,
    /// The 1996 format (magic 53546).
    Format1996,
}

impl MilcLegacyVersion {
    /// How the format is called in messages and summaries.
    pub fn name(self) -> &'static str {
        match self {
            MilcLegacyVersion::V1To4 => "MILC version 1–4",
            MilcLegacyVersion::Format1996 => "MILC 1996 format",
        }
    }
}

/// The pre-v5 MILC format and byte order whose magic number the first word is, if any.
pub(crate) fn legacy_magic(first: [u8; 4]) -> Option<(MilcLegacyVersion, ByteOrder)> {
    [ByteOrder::Little, ByteOrder::Big]
        .into_iter()
        .find_map(|order| match u32_from(first, order) {
            MILC_V1_TO_V4_MAGIC => Some((MilcLegacyVersion::V1To4, order)),
            MILC_1996_MAGIC => Some((MilcLegacyVersion::Format1996, order)),
            _ => None,
        })
}

/// Decodes the bytes of a MILC version 1–4 or 1996 gauge file (see the module docs).
pub(crate) fn decode(
    data: &[u8],
    path: &Path,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let b = Bytes::new(data, path);
    let first = b.array::<4>(0, "MILC header (magic number)")?;
    let (version, order) = legacy_magic(first).ok_or_else(|| IoError::BadMagic {
        path: path.to_path_buf(),
        what: "MILC pre-v5 header".to_string(),
        offset: 0,
        expected: format!("{MILC_V1_TO_V4_MAGIC} or {MILC_1996_MAGIC} in either byte order"),
        found: format!("0x{:08x} (as big-endian)", u32::from_be_bytes(first)),
    })?;
    let header = format!("{} header", version.name());
    let mut dims = [0i64; 4];
    for (mu, d) in dims.iter_mut().enumerate() {
        *d = b.i32(4 + 4 * mu as u64, order, &format!("{header} dims"))? as i64;
    }
    let lattice = lattice_from_header(dims, &format!("{header} dims (offset 4)"), path)?;
    let (payload_offset, metadata) = match version {
        MilcLegacyVersion::V1To4 => {
            let c1 = f32::from_bits(b.u32(20, order, &format!("{header} c1"))?);
            let c2 = f32::from_bits(b.u32(24, order, &format!("{header} c2"))?);
            let metadata = vec![
                ("c1".to_string(), c1.to_string()),
                ("c2".to_string(), c2.to_string()),
            ];
            (V1_TO_V4_HEADER_BYTES, metadata)
        }
        MilcLegacyVersion::Format1996 => {
            let header_bytes = b.i32(20, order, &format!("{header} header_bytes"))?;
            let site_order = b.i32(24, order, &format!("{header} order"))?;
            if site_order != 0 {
                return Err(IoError::Unsupported {
                    path: path.to_path_buf(),
                    what: format!(
                        "site order of a {} file (header field `order`)",
                        version.name()
                    ),
                    found: site_order.to_string(),
                    supported: "0 (natural lexicographic order)".to_string(),
                });
            }
            let header_bytes = u64::try_from(header_bytes)
                .ok()
                .filter(|&h| h >= 28)
                .ok_or_else(|| IoError::BadHeader {
                    path: path.to_path_buf(),
                    field: format!("{header} header_bytes (offset 20)"),
                    expected: "at least 28 (magic, dims, header_bytes, order)".to_string(),
                    found: header_bytes.to_string(),
                })?;
            let metadata = vec![
                ("header_bytes".to_string(), header_bytes.to_string()),
                ("order".to_string(), site_order.to_string()),
            ];
            (header_bytes + UNUSED_1996_CHECKSUM_BYTES, metadata)
        }
    };
    let codec = LinkCodec {
        precision: Precision::Single,
        order,
        rows: 3,
    };
    let what = format!("{} payload", version.name());
    let expected = codec.payload_bytes(&lattice);
    let payload = exact_payload(b, payload_offset, expected, &lattice, &what)?;
    let field = codec.decode(payload, lattice, path, &what)?;
    let mut checks = Vec::new();
    check_links(
        &field,
        options.unitarity,
        Precision::Single,
        path,
        &mut checks,
    )?;
    Ok(GaugeFile {
        path: path.to_path_buf(),
        field,
        format: GaugeFileFormat::MilcLegacy(version),
        precision: Precision::Single,
        byte_order: order,
        metadata,
        checks,
    })
}
