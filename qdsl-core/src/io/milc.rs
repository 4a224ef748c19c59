//! MILC v5 binary gauge files.
//!
//! Layout (MILC code, `io_lat4.c`; the same in `tests/data/README.md`): a 96-byte header
//!
//! | offset | field |
//! |---|---|
//! | 0 | int32 magic number 20103 (read byte-swapped ⇒ the file has the other byte order) |
//! | 4 | `int32 dims[4]` = Lx, Ly, Lz, Lt |
//! | 20 | `char time_stamp[64]` (NUL-padded) |
//! | 84 | int32 order: 0 = natural (lexicographic) site order, 1 = site list |
//! | 88 | uint32 sum29 |
//! | 92 | uint32 sum31 |
//!
//! then the links in single precision: sites lexicographic (x fastest), μ = x, y, z, t,
//! each link a row-major 3×3 complex matrix `[re, im]` (72 bytes, 288 per site), in the
//! byte order of the magic number. The checksum (see [`super::checksum`]) runs over the
//! payload's 32-bit words in that byte order. MILC's binary gauge format stores single
//! precision only (`fsu3_matrix`), so the writer always writes f32. Files of MILC's older
//! formats (versions 1–4, 1996) are read by [`super::milc_legacy`].

use super::bytes::{encode_u32, read_file, write_file, ByteOrder, Bytes, Precision};
use super::checksum::milc_checksum;
use super::links::LinkCodec;
use super::{
    check_links, checksum_mismatch, exact_payload, lattice_from_header, Check, GaugeFile,
    GaugeFileFormat, IoError, ReadOptions,
};
use crate::field::GaugeField;
use crate::Real;
use std::path::Path;

/// The MILC v5 magic number.
pub const MILC_MAGIC: u32 = 20103;
/// Bytes of the MILC v5 header.
pub const HEADER_BYTES: u64 = 96;
const TIME_STAMP_BYTES: usize = 64;

/// Options of [`write_milc`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MilcWriteOptions {
    /// Byte order of the header and the payload (default little-endian).
    pub byte_order: ByteOrder,
    /// The header's time stamp, at most 63 bytes (MILC writes `ctime` output there).
    pub time_stamp: String,
}

impl Default for MilcWriteOptions {
    fn default() -> Self {
        Self {
            byte_order: ByteOrder::Little,
            time_stamp: String::new(),
        }
    }
}

/// The byte order whose reading of the first word is the MILC magic number, if any.
pub(crate) fn magic_order(first: [u8; 4]) -> Option<ByteOrder> {
    if u32::from_le_bytes(first) == MILC_MAGIC {
        Some(ByteOrder::Little)
    } else if u32::from_be_bytes(first) == MILC_MAGIC {
        Some(ByteOrder::Big)
    } else {
        None
    }
}

/// Reads a MILC v5 file: checks the magic number, the site order and sum29/sum31, then
/// the links (see [`ReadOptions`]).
pub fn read_milc(path: impl AsRef<Path>, options: &ReadOptions) -> Result<GaugeFile, IoError> {
    let path = path.as_ref();
    decode(&read_file(path)?, path, options)
}

/// Decodes the bytes of a MILC v5 file.
pub(crate) fn decode(
    data: &[u8],
    path: &Path,
    options: &ReadOptions,
) -> Result<GaugeFile, IoError> {
    let b = Bytes::new(data, path);
    let first = b.array::<4>(0, "MILC header (magic number)")?;
    if super::milc_legacy::legacy_magic(first).is_some() {
        return super::milc_legacy::decode(data, path, options);
    }
    let order = magic_order(first).ok_or_else(|| IoError::BadMagic {
        path: path.to_path_buf(),
        what: "MILC v5 header".to_string(),
        offset: 0,
        expected: format!("{MILC_MAGIC} (0x{MILC_MAGIC:08x}) in either byte order"),
        found: format!("0x{:08x} (as big-endian)", u32::from_be_bytes(first)),
    })?;
    let header = b.slice(0, HEADER_BYTES, "MILC header")?;
    let mut dims = [0i64; 4];
    for (mu, d) in dims.iter_mut().enumerate() {
        *d = b.i32(4 + 4 * mu as u64, order, "MILC dims")? as i64;
    }
    let lattice = lattice_from_header(dims, "MILC header dims (offset 4)", path)?;
    let site_order = b.i32(84, order, "MILC order")?;
    if site_order != 0 {
        return Err(IoError::Unsupported {
            path: path.to_path_buf(),
            what: "MILC site order (header field `order` at offset 84)".to_string(),
            found: site_order.to_string(),
            supported: "0 (natural lexicographic order)".to_string(),
        });
    }
    let recorded = (
        b.u32(88, order, "MILC sum29")?,
        b.u32(92, order, "MILC sum31")?,
    );

    let codec = LinkCodec {
        precision: Precision::Single,
        order,
        rows: 3,
    };
    let expected = codec.payload_bytes(&lattice);
    let payload = exact_payload(b, HEADER_BYTES, expected, &lattice, "MILC payload")?;
    let sums = milc_checksum(payload, order);
    let mut checks = Vec::new();
    if (sums.mod29, sums.mod31) == recorded {
        checks.push(Check::MilcChecksum {
            sum29: sums.mod29,
            sum31: sums.mod31,
        });
    } else {
        let mismatch = IoError::ChecksumMismatch {
            path: path.to_path_buf(),
            what: "MILC checksum (header sum29, sum31 at offsets 88, 92)".to_string(),
            expected: format!("sum29 = {:08x}, sum31 = {:08x}", recorded.0, recorded.1),
            computed: format!("sum29 = {:08x}, sum31 = {:08x}", sums.mod29, sums.mod31),
        };
        checks.push(checksum_mismatch(mismatch, options.checksum)?);
    }
    let field = codec.decode(payload, lattice, path, "MILC payload")?;
    check_links(
        &field,
        options.unitarity,
        Precision::Single,
        path,
        &mut checks,
    )?;

    let stamp = &header[20..20 + TIME_STAMP_BYTES];
    let stamp = &stamp[..stamp.iter().position(|&c| c == 0).unwrap_or(stamp.len())];
    let metadata = vec![
        (
            "time_stamp".to_string(),
            String::from_utf8_lossy(stamp).into_owned(),
        ),
        ("order".to_string(), site_order.to_string()),
        ("sum29".to_string(), format!("{:08x}", recorded.0)),
        ("sum31".to_string(), format!("{:08x}", recorded.1)),
    ];
    Ok(GaugeFile {
        path: path.to_path_buf(),
        field,
        format: GaugeFileFormat::Milc,
        precision: Precision::Single,
        byte_order: order,
        metadata,
        checks,
    })
}

/// Writes a field as a MILC v5 file (single precision, natural order, sum29/sum31).
pub fn write_milc<T: Real>(
    path: impl AsRef<Path>,
    field: &GaugeField<T>,
    options: &MilcWriteOptions,
) -> Result<(), IoError> {
    let path = path.as_ref();
    let stamp = options.time_stamp.as_bytes();
    if stamp.len() >= TIME_STAMP_BYTES {
        return Err(IoError::Unwritable {
            path: path.to_path_buf(),
            what: "MILC time stamp".to_string(),
            expected: format!("at most {} bytes", TIME_STAMP_BYTES - 1),
            found: options.time_stamp.clone(),
        });
    }
    let order = options.byte_order;
    let codec = LinkCodec {
        precision: Precision::Single,
        order,
        rows: 3,
    };
    let payload = codec.encode(field);
    let sums = milc_checksum(&payload, order);
    let mut out = Vec::with_capacity(HEADER_BYTES as usize + payload.len());
    encode_u32(MILC_MAGIC, order, &mut out);
    for l in field.lattice().dims() {
        // Extents fit i32: the volume does (Lattice::new).
        encode_u32(l as u32, order, &mut out);
    }
    out.extend_from_slice(stamp);
    out.resize(20 + TIME_STAMP_BYTES, 0);
    encode_u32(0, order, &mut out);
    encode_u32(sums.mod29, order, &mut out);
    encode_u32(sums.mod31, order, &mut out);
    out.extend_from_slice(&payload);
    write_file(path, &out)
}
