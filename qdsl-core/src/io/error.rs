//! The error type of gauge-file reading and writing.

use crate::lattice::{Coords, GeometryError};
use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong reading or writing a gauge file.
///
/// Every variant names the file, where in it the problem lies (header field, record,
/// byte offset, site and direction) and what was expected against what was found.
#[derive(Debug, Error)]
pub enum IoError {
    /// The operating system refused to open, read or write the file.
    #[error("{}: cannot {action}: {source}", path.display())]
    Os {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },

    /// The file ends before a header, record or payload does.
    #[error(
        "{}: truncated {what} at byte offset {offset}: expected {expected} bytes, found {found}",
        path.display()
    )]
    Truncated {
        path: PathBuf,
        what: String,
        offset: u64,
        expected: u64,
        found: u64,
    },

    /// A magic number (file or record signature) is wrong.
    #[error(
        "{}: wrong magic number for {what} at byte offset {offset}: expected {expected}, found {found}",
        path.display()
    )]
    BadMagic {
        path: PathBuf,
        what: String,
        offset: u64,
        expected: String,
        found: String,
    },

    /// The content matches none of the supported formats.
    #[error(
        "{}: unrecognised gauge-file format: expected a MILC magic number (20103; or 59354, \
         53546 for MILC's older formats), \
         `BEGIN_HEADER` (NERSC), a LIME record (magic 0x456789ab) or an openQCD header \
         matching the file size; found first bytes {found}",
        path.display()
    )]
    UnknownFormat { path: PathBuf, found: String },

    /// A checksum recorded in the file disagrees with the one computed from the payload.
    #[error("{}: {what} mismatch: expected {expected} (recorded), computed {computed}", path.display())]
    ChecksumMismatch {
        path: PathBuf,
        what: String,
        expected: String,
        computed: String,
    },

    /// The payload size disagrees with the size the header's lattice dimensions imply.
    #[error(
        "{}: {what}: lattice {dims:?} needs {expected} bytes, found {found}",
        path.display()
    )]
    SizeMismatch {
        path: PathBuf,
        what: String,
        dims: [usize; 4],
        expected: u64,
        found: u64,
    },

    /// Header lattice dimensions are not a valid lattice (zero, odd, or too many sites).
    #[error("{}: invalid lattice dimensions {dims:?} in {field}: {source}", path.display())]
    BadLattice {
        path: PathBuf,
        field: String,
        dims: [usize; 4],
        /// Boxed to keep the error small (it is returned on every read path).
        source: Box<GeometryError>,
    },

    /// A header field or record holds a value that is out of range or inconsistent.
    #[error("{}: {field}: expected {expected}, found {found}", path.display())]
    BadHeader {
        path: PathBuf,
        field: String,
        expected: String,
        found: String,
    },

    /// A required header field or record is absent.
    #[error("{}: missing {what}", path.display())]
    Missing { path: PathBuf, what: String },

    /// A header line, XML element or number cannot be parsed.
    #[error("{}: malformed {what} at {location}: expected {expected}, found {found:?}", path.display())]
    Malformed {
        path: PathBuf,
        what: String,
        location: String,
        expected: String,
        found: String,
    },

    /// A data type, floating-point format or site order qdsl does not read.
    #[error("{}: unsupported {what}: found {found:?}, supported: {supported}", path.display())]
    Unsupported {
        path: PathBuf,
        what: String,
        found: String,
        supported: String,
    },

    /// A link holds NaN or infinity.
    #[error(
        "{}: link U_{mu}(x = {coords:?}) (lexicographic site {site}) has a non-finite \
         component {component} (of 18 reals) = {value}; expected finite numbers",
        path.display()
    )]
    NonFinite {
        path: PathBuf,
        site: usize,
        coords: Coords,
        mu: usize,
        component: usize,
        value: f64,
    },

    /// A link is further from U(3) than the tolerance allows.
    #[error(
        "{}: link U_{mu}(x = {coords:?}) (lexicographic site {site}) is not unitary: \
         expected ‖U†U − 1‖ ≤ {tolerance:e}, found {deviation:e}",
        path.display()
    )]
    NonUnitary {
        path: PathBuf,
        site: usize,
        coords: Coords,
        mu: usize,
        deviation: f64,
        tolerance: f64,
    },

    /// A header-recorded observable (plaquette, link trace) disagrees with the field.
    #[error(
        "{}: {observable} mismatch: expected {recorded} (recorded in the header), computed \
         {computed} (difference {:e}, tolerance {tolerance:e})",
        path.display(), (recorded - computed).abs()
    )]
    ObservableMismatch {
        path: PathBuf,
        observable: String,
        recorded: f64,
        computed: f64,
        tolerance: f64,
    },

    /// The writer cannot represent the request (an option out of range, a clashing key).
    #[error("{}: cannot write {what}: expected {expected}, found {found:?}", path.display())]
    Unwritable {
        path: PathBuf,
        what: String,
        expected: String,
        found: String,
    },
}
