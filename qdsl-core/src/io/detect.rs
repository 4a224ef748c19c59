//! Format recognition by content, and the format-independent reader.
//!
//! Signatures, tried in order: a LIME record magic 0x456789ab (big-endian) at offset 0;
//! the text `BEGIN_HEADER` (NERSC); the MILC magic 20103 in either byte order; the magic
//! numbers of MILC's older formats (59354: versions 1–4, 53546: 1996); an openQCD
//! header (four positive even int32 extents) whose implied size is exactly the file's.
//! openQCD files have no magic number, hence the size test; an odd first word (MILC's v5
//! magic is odd) can never be an openQCD time extent, and the older MILC magic numbers
//! (even) would be time extents of files of terabytes.

use super::bytes::{hex_preview, read_file, Bytes};
use super::lime::LIME_MAGIC;
use super::{lime_gauge, milc, milc_legacy, nersc, openqcd, GaugeFile, IoError, ReadOptions};
use std::path::Path;

/// The container a file's content identifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DetectedFormat {
    /// MILC v5 binary.
    Milc,
    /// MILC's binary formats before v5 (versions 1–4, 1996).
    MilcLegacy,
    /// NERSC archive.
    Nersc,
    /// A LIME file (ILDG or SciDAC: which one depends on its binary record).
    Lime,
    /// openQCD exported format.
    OpenQcd,
}

/// Identifies the format of a file's bytes, `None` if no signature matches.
pub fn detect_format(data: &[u8]) -> Option<DetectedFormat> {
    let first: Option<[u8; 4]> = data.get(..4).and_then(|s| s.try_into().ok());
    if first.map(u32::from_be_bytes) == Some(LIME_MAGIC) {
        return Some(DetectedFormat::Lime);
    }
    if nersc::has_magic(data) {
        return Some(DetectedFormat::Nersc);
    }
    if first.and_then(milc::magic_order).is_some() {
        return Some(DetectedFormat::Milc);
    }
    if first.and_then(milc_legacy::legacy_magic).is_some() {
        return Some(DetectedFormat::MilcLegacy);
    }
    let b = Bytes::new(data, Path::new(""));
    match openqcd::header_lattice(b) {
        Ok(lattice) if openqcd::file_bytes(&lattice) == b.len() => Some(DetectedFormat::OpenQcd),
        _ => None,
    }
}

/// Reads a gauge file of any supported format, recognised by content (see
/// [`detect_format`]), with all of its format's checks; `ReadOptions::default()` requires
/// unitary links, [`ReadOptions::smeared_links`] only finite ones.
pub fn read_gauge(path: impl AsRef<Path>, options: &ReadOptions) -> Result<GaugeFile, IoError> {
    let path = path.as_ref();
    let data = read_file(path)?;
    match detect_format(&data) {
        Some(DetectedFormat::Milc) => milc::decode(&data, path, options),
        Some(DetectedFormat::Nersc) => nersc::decode(&data, path, options),
        Some(DetectedFormat::Lime) => lime_gauge::decode(&data, path, options),
        Some(DetectedFormat::OpenQcd) => openqcd::decode(&data, path, options),
        Some(DetectedFormat::MilcLegacy) => milc_legacy::decode(&data, path, options),
        None => Err(IoError::UnknownFormat {
            path: path.to_path_buf(),
            found: hex_preview(&data),
        }),
    }
}
