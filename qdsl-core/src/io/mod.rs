//! Gauge-configuration files: reading and writing MILC v5, NERSC, ILDG and SciDAC (LIME
//! containers) and openQCD, reading MILC's older formats (versions 1–4, 1996), with every
//! checksum and header observable verified.
//!
//! [`read_gauge`] recognises the format from the file's content (never its name) and
//! returns a [`GaugeFile`]: the field in f64 on the checkerboard layout of
//! [`GaugeField`], the format, the stored precision and byte order, the header's
//! key-value pairs, and the list of [`Check`]s that passed. Each format also has its own
//! `read_*` and `write_*` functions ([`milc`], [`nersc`], [`lime_gauge`], [`openqcd`]);
//! the LIME container itself is in [`lime`]. Fermion files (colour vectors, Dirac
//! fermions, propagators: SciDAC and qdsl's own format) are in [`fermion`].
//!
//! Every reader, whatever the format:
//! 1. verifies the format's checksum, where it has one, before decoding the values
//!    (MILC sum29/sum31, NERSC CHECKSUM, SciDAC suma/sumb; openQCD files have none);
//! 2. rejects NaN and infinity in any link ([`IoError::NonFinite`]);
//! 3. rejects links with ‖U†U − 1‖_F above the tolerance of [`ReadOptions::unitarity`]
//!    ([`IoError::NonUnitary`]; by default [`unitarity_limit`], which scales with the
//!    stored precision and the lattice); smeared links (MILC's fat and long links) are
//!    not unitary: read them with [`UnitarityCheck::Off`]; openQCD files with open time
//!    boundaries (all time links of the last time slice zero) pass with those links
//!    exempt ([`Check::OpenTimeBoundary`]);
//! 4. compares the observables a header or metadata record holds (NERSC PLAQUETTE and
//!    LINK_TRACE, the openQCD plaquette, the plaquettes and link traces of LIME metadata:
//!    see [`recorded_observables`]) with [`crate::gauge::plaquette`] and
//!    [`crate::gauge::link_trace`].
//!
//! A recorded checksum that disagrees with the payload is an error
//! ([`IoError::ChecksumMismatch`]) unless [`ReadOptions::checksum`] is
//! [`ChecksumPolicy::Warn`]: the file is then read and the mismatch recorded as
//! [`Check::ChecksumMismatchIgnored`]. MILC's pre-v5 formats (versions 1–4, 1996) are
//! read too ([`milc_legacy`]); they have no checksum.
//!
//! No input makes a reader panic or allocate more than the file's size implies: lattice
//! dimensions are validated by [`Lattice::new`](crate::lattice::Lattice::new) and the
//! payload size they imply is compared with the file before anything is allocated.

mod bytes;
pub mod checksum;
mod detect;
mod error;
pub mod fermion;
pub mod lime;
pub mod lime_gauge;
mod links;
pub mod milc;
pub mod milc_legacy;
pub mod nersc;
pub mod openqcd;
pub mod qdsl_field;
pub mod recorded_observables;
pub mod scidac_fermion;
mod unitarity_limit;
mod xml;

pub use bytes::{ByteOrder, Precision};
pub use detect::{detect_format, read_gauge, DetectedFormat};
pub use error::IoError;
pub use fermion::{
    read_fermion, write_fermion, FermionFile, FermionFileFormat, FermionKind, FermionWriteOptions,
};
pub use lime_gauge::LimeFlavour;
pub use milc_legacy::MilcLegacyVersion;
pub use nersc::NerscStorage;
pub use unitarity_limit::{unitarity_limit, ROUNDING_STEPS};

use crate::field::GaugeField;
use crate::lattice::Lattice;
use bytes::Bytes;
use links::{verify_links_except, UnitarityLimit};
use std::path::{Path, PathBuf};

/// A gauge-file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GaugeFileFormat {
    /// MILC v5 binary (96-byte header, single precision).
    Milc,
    /// MILC's binary formats before v5 (versions 1–4, 1996; single precision).
    MilcLegacy(MilcLegacyVersion),
    /// A LIME file with an `ildg-binary-data` or a `scidac-binary-data` record.
    Lime(LimeFlavour),
    /// NERSC archive (text header, two or three stored rows).
    Nersc(NerscStorage),
    /// openQCD's exported format (links at odd points, little-endian f64).
    OpenQcd,
}

impl std::fmt::Display for GaugeFileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GaugeFileFormat::Milc => "MILC v5",
            GaugeFileFormat::MilcLegacy(version) => version.name(),
            GaugeFileFormat::Lime(LimeFlavour::Ildg) => "ILDG (LIME)",
            GaugeFileFormat::Lime(LimeFlavour::Scidac) => "SciDAC (LIME)",
            GaugeFileFormat::Nersc(NerscStorage::TwoRow) => "NERSC 4D_SU3_GAUGE (two rows)",
            GaugeFileFormat::Nersc(NerscStorage::Full) => "NERSC 4D_SU3_GAUGE_3x3",
            GaugeFileFormat::OpenQcd => "openQCD",
        })
    }
}

/// How strictly readers require links to be unitary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnitarityCheck {
    /// No unitarity requirement (smeared links, open-boundary zero links).
    Off,
    /// max ‖U†U − 1‖_F ≤ [`unitarity_limit`] of the stored precision and the number of
    /// links (ε · 256 · √(2 ln 4V)).
    ForPrecision,
    /// ‖U†U − 1‖_F ≤ the given tolerance.
    Within(f64),
}

impl UnitarityCheck {
    fn limit(self, precision: Precision, links: usize) -> UnitarityLimit {
        match self {
            UnitarityCheck::Off => UnitarityLimit::Off,
            UnitarityCheck::ForPrecision => {
                UnitarityLimit::Within(unitarity_limit(precision, links))
            }
            UnitarityCheck::Within(t) => UnitarityLimit::Within(t),
        }
    }
}

/// What a reader does when a recorded checksum disagrees with the payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChecksumPolicy {
    /// The mismatch is an error ([`IoError::ChecksumMismatch`]).
    #[default]
    Verify,
    /// The file is read; the mismatch is recorded as [`Check::ChecksumMismatchIgnored`]
    /// (MILC's behaviour: it warns).
    Warn,
}

/// Options every reader takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadOptions {
    /// The unitarity requirement on the links (default: [`UnitarityCheck::ForPrecision`]).
    pub unitarity: UnitarityCheck,
    /// What a checksum mismatch does (default: [`ChecksumPolicy::Verify`]).
    pub checksum: ChecksumPolicy,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            unitarity: UnitarityCheck::ForPrecision,
            checksum: ChecksumPolicy::Verify,
        }
    }
}

impl ReadOptions {
    /// Options for smeared (non-unitary) link files: only finiteness is checked.
    pub fn smeared_links() -> Self {
        Self {
            unitarity: UnitarityCheck::Off,
            ..Self::default()
        }
    }
}

/// One verification a reader performed and passed.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// MILC's sum29 and sum31 matched the payload.
    MilcChecksum { sum29: u32, sum31: u32 },
    /// The NERSC CHECKSUM matched the payload.
    NerscChecksum(u32),
    /// The `scidac-checksum` record's suma and sumb matched the binary data.
    ScidacChecksum { suma: u32, sumb: u32 },
    /// A recorded checksum did not match, and [`ChecksumPolicy::Warn`] let the file be
    /// read anyway (the only entry of `checks` that did not pass).
    ChecksumMismatchIgnored {
        /// Which checksum, and where it is recorded.
        what: String,
        /// The recorded value.
        expected: String,
        /// The value computed from the payload.
        computed: String,
    },
    /// A header-recorded observable agreed with the one computed from the field.
    Observable {
        /// Header name ("PLAQUETTE", "LINK_TRACE", "openQCD plaquette ⟨Re tr U_p⟩").
        name: String,
        /// The value in the header.
        recorded: f64,
        /// The value computed from the links read.
        computed: f64,
        /// The largest |recorded − computed| accepted.
        tolerance: f64,
    },
    /// openQCD's open time boundary: every time link U_t(x) of the last time slice
    /// x0 = L_t − 1 is exactly zero (openQCD stores open boundaries so); those links are
    /// exempt from the unitarity requirement, every other link is held to it.
    OpenTimeBoundary {
        /// The number of zero links found (L_x L_y L_z).
        zero_links: usize,
    },
    /// Every link was finite; the largest ‖U†U − 1‖_F found, and the tolerance it passed
    /// (`None` when the unitarity requirement was off).
    Links {
        /// max over links of ‖U†U − 1‖_F.
        max_unitarity_deviation: f64,
        /// The tolerance it was held to.
        tolerance: Option<f64>,
    },
}

/// What was checked, in one line: "MILC checksum sum29 = …", "plaquette: recorded …,
/// computed …", "checksum mismatch ignored: …" (`qdsl inspect`, the Python `checks`).
impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::ChecksumMismatchIgnored {
                what,
                expected,
                computed,
            } => write!(
                f,
                "{what} mismatch ignored: expected {expected}, found {computed}"
            ),
            Check::MilcChecksum { sum29, sum31 } => {
                write!(
                    f,
                    "MILC checksum sum29 = {sum29:#010x}, sum31 = {sum31:#010x}"
                )
            }
            Check::NerscChecksum(sum) => write!(f, "NERSC CHECKSUM = {sum:08x}"),
            Check::ScidacChecksum { suma, sumb } => {
                write!(f, "SciDAC checksum suma = {suma:#x}, sumb = {sumb:#x}")
            }
            Check::Observable {
                name,
                recorded,
                computed,
                tolerance,
            } => write!(
                f,
                "{name}: recorded {recorded}, computed {computed:.16e} (tolerance {tolerance:.1e})"
            ),
            Check::OpenTimeBoundary { zero_links } => write!(
                f,
                "open time boundary (openQCD): the {zero_links} time links of the last time \
                 slice are zero, exempt from the unitarity check"
            ),
            Check::Links {
                max_unitarity_deviation,
                tolerance: Some(t),
            } => write!(
                f,
                "links finite and unitary: max |U†U − 1| = {max_unitarity_deviation:.2e} \
                 (tolerance {t:.1e})"
            ),
            Check::Links {
                max_unitarity_deviation,
                tolerance: None,
            } => write!(
                f,
                "links finite (unitarity not required): max |U†U − 1| = \
                 {max_unitarity_deviation:.2e}"
            ),
        }
    }
}

/// A gauge configuration read from a file.
#[derive(Clone, Debug)]
pub struct GaugeFile {
    /// The file read.
    pub path: PathBuf,
    /// The links, U_μ(x), in f64 (the stored values widened exactly).
    pub field: GaugeField<f64>,
    /// The file's format.
    pub format: GaugeFileFormat,
    /// The precision of the stored reals.
    pub precision: Precision,
    /// The byte order of the stored reals.
    pub byte_order: ByteOrder,
    /// Header key-value pairs (NERSC), header fields (MILC, openQCD) or LIME record types
    /// with their text payloads (binary records omitted), in file order.
    pub metadata: Vec<(String, String)>,
    /// The verifications performed, all passed except a
    /// [`Check::ChecksumMismatchIgnored`] (only under [`ChecksumPolicy::Warn`]).
    pub checks: Vec<Check>,
}

impl GaugeFile {
    /// The first metadata value stored under `key`.
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Applies the link checks (finiteness, unitarity) and records them in `checks`.
pub(crate) fn check_links(
    field: &GaugeField<f64>,
    unitarity: UnitarityCheck,
    precision: Precision,
    path: &Path,
    checks: &mut Vec<Check>,
) -> Result<(), IoError> {
    check_links_except(field, unitarity, precision, path, checks, |_, _| false)
}

/// [`check_links`] with the unitarity requirement lifted for the links U_μ(x) with
/// `exempt(x, μ)` (openQCD's zero links of open boundaries); they must still be finite.
pub(crate) fn check_links_except(
    field: &GaugeField<f64>,
    unitarity: UnitarityCheck,
    precision: Precision,
    path: &Path,
    checks: &mut Vec<Check>,
    exempt: impl Fn(crate::lattice::Coords, usize) -> bool,
) -> Result<(), IoError> {
    let limit = unitarity.limit(precision, 4 * field.lattice().volume());
    let max_unitarity_deviation = verify_links_except(field, limit, path, exempt)?;
    checks.push(Check::Links {
        max_unitarity_deviation,
        tolerance: match limit {
            UnitarityLimit::Off => None,
            UnitarityLimit::Within(t) => Some(t),
        },
    });
    Ok(())
}

/// A checksum mismatch under `policy`: the error itself ([`ChecksumPolicy::Verify`]), or
/// the [`Check::ChecksumMismatchIgnored`] to record ([`ChecksumPolicy::Warn`]).
/// `mismatch` is an [`IoError::ChecksumMismatch`]; any other error is returned as is.
pub(crate) fn checksum_mismatch(
    mismatch: IoError,
    policy: ChecksumPolicy,
) -> Result<Check, IoError> {
    match (mismatch, policy) {
        (
            IoError::ChecksumMismatch {
                what,
                expected,
                computed,
                ..
            },
            ChecksumPolicy::Warn,
        ) => Ok(Check::ChecksumMismatchIgnored {
            what,
            expected,
            computed,
        }),
        (e, _) => Err(e),
    }
}

/// Compares a header-recorded observable with the computed one; `|recorded − computed|
/// ≤ tolerance` passes and is recorded in `checks`.
pub(crate) fn check_observable(
    name: &str,
    recorded: f64,
    computed: f64,
    tolerance: f64,
    path: &Path,
    checks: &mut Vec<Check>,
) -> Result<(), IoError> {
    // A non-finite recorded value, or NaN on either side, fails too.
    let difference = (recorded - computed).abs();
    if !recorded.is_finite() || difference.is_nan() || difference > tolerance {
        return Err(IoError::ObservableMismatch {
            path: path.to_path_buf(),
            observable: name.to_string(),
            recorded,
            computed,
            tolerance,
        });
    }
    checks.push(Check::Observable {
        name: name.to_string(),
        recorded,
        computed,
        tolerance,
    });
    Ok(())
}

/// The lattice of header dimensions `[Lx, Ly, Lz, Lt]` read from `field`: negative values
/// and anything [`Lattice::new`] rejects (zero, odd, too many sites) are errors.
pub(crate) fn lattice_from_header(
    dims: [i64; 4],
    field: &str,
    path: &Path,
) -> Result<Lattice, IoError> {
    let mut extents = [0usize; 4];
    for (e, &d) in extents.iter_mut().zip(&dims) {
        *e = usize::try_from(d).map_err(|_| IoError::BadHeader {
            path: path.to_path_buf(),
            field: field.to_string(),
            expected: "four positive even lattice extents".to_string(),
            found: format!("{dims:?}"),
        })?;
    }
    Lattice::new(extents).map_err(|source| IoError::BadLattice {
        path: path.to_path_buf(),
        field: field.to_string(),
        dims: extents,
        source: Box::new(source),
    })
}

/// The payload of `expected` bytes that starts at `offset` and runs to the end of the
/// file: a shorter file is [`IoError::Truncated`], a longer one [`IoError::SizeMismatch`].
pub(crate) fn exact_payload<'a>(
    bytes: Bytes<'a, '_>,
    offset: u64,
    expected: u64,
    lattice: &Lattice,
    what: &str,
) -> Result<&'a [u8], IoError> {
    let found = bytes.len().saturating_sub(offset);
    if found > expected {
        return Err(IoError::SizeMismatch {
            path: bytes.path.to_path_buf(),
            what: format!("{what} (file longer than the header implies)"),
            dims: lattice.dims(),
            expected,
            found,
        });
    }
    bytes.slice(offset, expected, &format!("{what} of a {lattice} lattice"))
}
