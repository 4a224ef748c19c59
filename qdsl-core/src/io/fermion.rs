//! Fermion files: staggered colour vectors, Dirac fermions and propagators (their
//! columns), read and written in two formats.
//!
//! * SciDAC / QIO LIME ([`super::scidac_fermion`]): the USQCD record types MILC, Chroma
//!   and QIO write: `USQCD_ColorVector` (staggered, 3 colours) and `USQCD_DiracFermion`
//!   (4 spins × 3 colours) records, big-endian, with `scidac-checksum`s.
//! * qdsl's own plain binary with a JSON header ([`super::qdsl_field`]).
//!
//! A file holds one or more *columns*: a colour vector or a Dirac fermion is one column,
//! a propagator 3 (staggered: one per source colour) or 12 (Dirac: one per source spin σ
//! and colour b, index σ · 3 + b). Every column is a full-lattice [`ColourSpinorField`]
//! in f64 (the stored values widened exactly), indexed by checkerboard index like every
//! host field; files are lexicographic, x fastest, and each site's components are
//! spin-major, `[spin][colour][re, im]` (MILC's `wilson_vector` and Chroma's
//! `LatticeFermion` order, which both write as `USQCD_*_DiracFermion`).
//!
//! MILC's own vector files are SciDAC: the `ksvector.src`, `ksvector.ans.Minv` and
//! `ksvector.ans.MdaggerMinv` samples (`tests/data/milc`) are LIME files with one
//! `QDP_F3_ColorVector` record each (f32, big-endian, typesize 24, datacount 1, a
//! `scidac-checksum`), the file XML listing the asqtad parameters, the mass and the
//! boundary; MILC writes its USQCD propagators the same way, one `USQCD_*_ColorVector`
//! (staggered) or `USQCD_*_DiracFermion` record per source colour (and spin). MILC's
//! older native binary propagator formats (its own headers, not LIME) and single-record
//! `DiracPropagator` fields are not read: such a file is refused with an error naming
//! what was found.
//!
//! [`read_fermion`] recognises the format from the content; the readers reject NaN and
//! infinity, check the declared lattice, precision and shape against the payload size,
//! and verify every checksum present. Like the gauge readers they never panic and never
//! allocate more than the file's size implies.

use super::bytes::{decode_real, encode_real, read_file, ByteOrder, Precision};
use super::lime::LIME_MAGIC;
use super::{qdsl_field, scidac_fermion, Check, IoError};
use crate::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use crate::lattice::Lattice;
use crate::Real;
use num_complex::Complex;
use std::path::{Path, PathBuf};

/// Colours of every fermion file qdsl reads and writes.
pub const FERMION_COLOURS: usize = 3;

/// What one column of a fermion file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FermionKind {
    /// A staggered colour vector: 1 spin × 3 colours (USQCD `ColorVector`).
    ColourVector,
    /// A Dirac fermion: 4 spins × 3 colours (USQCD `DiracFermion`).
    DiracFermion,
}

impl FermionKind {
    /// Spin components per site.
    pub fn spins(self) -> usize {
        match self {
            FermionKind::ColourVector => 1,
            FermionKind::DiracFermion => 4,
        }
    }

    /// The kind with `spins` spin components (1 or 4).
    pub fn with_spins(spins: usize) -> Option<Self> {
        match spins {
            1 => Some(FermionKind::ColourVector),
            4 => Some(FermionKind::DiracFermion),
            _ => None,
        }
    }

    /// The USQCD type name without precision and colour count (`ColorVector`,
    /// `DiracFermion`).
    pub fn usqcd_name(self) -> &'static str {
        match self {
            FermionKind::ColourVector => "ColorVector",
            FermionKind::DiracFermion => "DiracFermion",
        }
    }

    /// The name of the kind in qdsl's own header (`colour-vector`, `dirac-fermion`).
    pub fn name(self) -> &'static str {
        match self {
            FermionKind::ColourVector => "colour-vector",
            FermionKind::DiracFermion => "dirac-fermion",
        }
    }

    /// Columns of a full propagator of this kind: 3 (staggered) or 12 (Dirac).
    pub fn propagator_columns(self) -> usize {
        self.spins() * FERMION_COLOURS
    }

    /// The layout of one column on the full lattice.
    pub fn layout(self, lattice: Lattice) -> SpinorLayout {
        match self {
            FermionKind::ColourVector => SpinorLayout::staggered(lattice, SiteSubset::Full),
            FermionKind::DiracFermion => SpinorLayout::wilson(lattice, SiteSubset::Full),
        }
    }
}

/// A fermion-file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FermionFileFormat {
    /// SciDAC / QIO LIME with USQCD records.
    Scidac,
    /// qdsl's plain binary with a JSON header.
    Qdsl,
}

impl std::fmt::Display for FermionFileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FermionFileFormat::Scidac => "SciDAC (LIME)",
            FermionFileFormat::Qdsl => "qdsl field (binary + JSON header)",
        })
    }
}

/// A fermion file read.
#[derive(Clone, Debug)]
pub struct FermionFile {
    /// The file read.
    pub path: PathBuf,
    /// Its format.
    pub format: FermionFileFormat,
    /// What each column is.
    pub kind: FermionKind,
    /// The columns, full-lattice fields in checkerboard order (one for a vector, 3 or 12
    /// for a propagator).
    pub columns: Vec<ColourSpinorField<f64>>,
    /// The precision of the stored reals.
    pub precision: Precision,
    /// The byte order of the stored reals.
    pub byte_order: ByteOrder,
    /// Metadata: LIME record types with their text payloads (binary records omitted),
    /// or the JSON header's `metadata` entries, in file order.
    pub metadata: Vec<(String, String)>,
    /// The verifications performed, all passed (checksums).
    pub checks: Vec<Check>,
}

impl FermionFile {
    /// The lattice of the columns.
    pub fn lattice(&self) -> &Lattice {
        // A reader never returns a file without columns.
        self.columns[0].layout().lattice()
    }

    /// The first metadata value stored under `key`.
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Options of the fermion writers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FermionWriteOptions {
    /// Stored precision (default double).
    pub precision: Precision,
    /// Free-text description of the file (SciDAC: the `scidac-file-xml` record; qdsl:
    /// the header's `metadata.info`).
    pub info: String,
}

impl Default for FermionWriteOptions {
    fn default() -> Self {
        Self {
            precision: Precision::Double,
            info: "written by qdsl".to_string(),
        }
    }
}

/// Reads a fermion file in any supported format (recognised from its first bytes: a
/// LIME record, or qdsl's header line).
pub fn read_fermion(path: impl AsRef<Path>) -> Result<FermionFile, IoError> {
    let path = path.as_ref();
    let data = read_file(path)?;
    if data.len() >= 4 && data[..4] == LIME_MAGIC.to_be_bytes() {
        scidac_fermion::decode(&data, path)
    } else if data.starts_with(qdsl_field::MAGIC_LINE.as_bytes()) {
        qdsl_field::decode(&data, path)
    } else {
        Err(IoError::BadMagic {
            path: path.to_path_buf(),
            what: "fermion file".to_string(),
            offset: 0,
            expected: format!(
                "a LIME record (0x{LIME_MAGIC:08x}) or the line {:?}",
                qdsl_field::MAGIC_LINE
            ),
            found: super::bytes::hex_preview(&data),
        })
    }
}

/// Writes `columns` (a vector, or the 3 or 12 columns of a propagator) in `format`.
pub fn write_fermion<T: Real>(
    path: impl AsRef<Path>,
    format: FermionFileFormat,
    columns: &[ColourSpinorField<T>],
    options: &FermionWriteOptions,
) -> Result<(), IoError> {
    match format {
        FermionFileFormat::Scidac => scidac_fermion::write_scidac_fermion(path, columns, options),
        FermionFileFormat::Qdsl => qdsl_field::write_qdsl_field(path, columns, options),
    }
}

/// The kind and lattice shared by `columns`: at least one, all full-lattice 4D fields of
/// the same layout with 3 colours and 1 or 4 spins; anything else cannot be written.
pub(crate) fn column_shape<T: Real>(
    columns: &[ColourSpinorField<T>],
    path: &Path,
) -> Result<(FermionKind, Lattice), IoError> {
    let unwritable = |expected: &str, found: String| IoError::Unwritable {
        path: path.to_path_buf(),
        what: "fermion columns".to_string(),
        expected: expected.to_string(),
        found,
    };
    let first = columns
        .first()
        .ok_or_else(|| unwritable("at least one column", "none".to_string()))?
        .layout();
    let kind = FermionKind::with_spins(first.nspin())
        .filter(|_| first.ncolour() == FERMION_COLOURS && first.ls() == 1)
        .filter(|_| first.subset() == SiteSubset::Full)
        .ok_or_else(|| {
            unwritable(
                "full-lattice 4D fields of 1 or 4 spins and 3 colours",
                first.to_string(),
            )
        })?;
    if let Some(other) = columns.iter().find(|c| c.layout() != first) {
        return Err(unwritable(
            &format!("every column of layout {first}"),
            other.layout().to_string(),
        ));
    }
    Ok((kind, *first.lattice()))
}

/// A lexicographic, site-major payload of `columns` fields: for each site (x fastest),
/// for each column, `spins × 3` complex numbers `[spin][colour][re, im]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FermionCodec {
    pub kind: FermionKind,
    pub columns: usize,
    pub precision: Precision,
    pub order: ByteOrder,
}

impl FermionCodec {
    /// Reals of one column at one site.
    fn reals_per_column(&self) -> usize {
        2 * self.kind.spins() * FERMION_COLOURS
    }

    /// Bytes of one column at one site (the USQCD `typesize`).
    pub fn column_bytes(&self) -> usize {
        self.reals_per_column() * self.precision.bytes()
    }

    /// Bytes of one site, all columns.
    pub fn site_bytes(&self) -> usize {
        self.columns * self.column_bytes()
    }

    /// Bytes of the payload of a lattice (u64: the product cannot overflow for a valid
    /// lattice and a column count read from a file of that size).
    pub fn payload_bytes(&self, lattice: &Lattice) -> u64 {
        (lattice.volume() as u64).saturating_mul(self.site_bytes() as u64)
    }

    /// Encodes the columns (validated by [`column_shape`]) in lexicographic order.
    pub fn encode<T: Real>(&self, columns: &[ColourSpinorField<T>]) -> Vec<u8> {
        let lattice = *columns[0].layout().lattice();
        let mut out = Vec::with_capacity(lattice.volume() * self.site_bytes());
        for lex in 0..lattice.volume() {
            let cb = lattice.lex_to_cb(lex);
            for column in columns {
                for z in column.site(0, cb) {
                    encode_real(z.re.to_f64(), self.precision, self.order, &mut out);
                    encode_real(z.im.to_f64(), self.precision, self.order, &mut out);
                }
            }
        }
        out
    }

    /// Decodes a payload of exactly [`Self::payload_bytes`] bytes into full-lattice
    /// columns; a NaN or infinity is an error naming the column, site and component.
    pub fn decode(
        &self,
        payload: &[u8],
        lattice: Lattice,
        path: &Path,
        what: &str,
    ) -> Result<Vec<ColourSpinorField<f64>>, IoError> {
        let expected = self.payload_bytes(&lattice);
        if payload.len() as u64 != expected {
            return Err(IoError::SizeMismatch {
                path: path.to_path_buf(),
                what: what.to_string(),
                dims: lattice.dims(),
                expected,
                found: payload.len() as u64,
            });
        }
        let layout = self.kind.layout(lattice);
        let mut columns = vec![ColourSpinorField::<f64>::zeros(layout); self.columns];
        let real_bytes = self.precision.bytes();
        for (lex, site) in payload.chunks_exact(self.site_bytes()).enumerate() {
            let cb = lattice.lex_to_cb(lex);
            for (c, stored) in site.chunks_exact(self.column_bytes()).enumerate() {
                let components = stored.chunks_exact(2 * real_bytes);
                for (k, (z, pair)) in columns[c]
                    .site_mut(0, cb)
                    .iter_mut()
                    .zip(components)
                    .enumerate()
                {
                    let (re, im) = pair.split_at(real_bytes);
                    let re = decode_real(re, self.precision, self.order);
                    let im = decode_real(im, self.precision, self.order);
                    if !(re.is_finite() && im.is_finite()) {
                        return Err(non_finite(path, what, &lattice, lex, c, k, re, im));
                    }
                    *z = Complex::new(re, im);
                }
            }
        }
        Ok(columns)
    }
}

/// The error for a NaN or infinite component.
#[allow(clippy::too_many_arguments)]
fn non_finite(
    path: &Path,
    what: &str,
    lattice: &Lattice,
    lex: usize,
    column: usize,
    component: usize,
    re: f64,
    im: f64,
) -> IoError {
    IoError::Malformed {
        path: path.to_path_buf(),
        what: format!(
            "{what}: column {column}, component {component} (spin-major) at x = {:?}",
            lattice.coords_of_lex(lex)
        ),
        location: format!("lexicographic site {lex}"),
        expected: "finite numbers".to_string(),
        found: format!("{re} + {im}i"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_orders_sites_lexicographically_and_components_spin_major() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let layout = FermionKind::DiracFermion.layout(lattice);
        let psi = ColourSpinorField::<f64>::from_fn(layout, |_, x, s, c| {
            Complex::new(lattice.lex_index(x) as f64, (10 * s + c) as f64)
        });
        let codec = FermionCodec {
            kind: FermionKind::DiracFermion,
            columns: 1,
            precision: Precision::Single,
            order: ByteOrder::Big,
        };
        let bytes = codec.encode(std::slice::from_ref(&psi));
        assert_eq!(bytes.len() as u64, codec.payload_bytes(&lattice));
        assert_eq!(codec.column_bytes(), 96);
        // Site lex 1 (x = 1), spin 2, colour 1: re = 1, im = 21.
        let at = |k: usize| f32::from_be_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
        let k = 24 + 2 * (2 * 3 + 1);
        assert_eq!((at(k), at(k + 1)), (1.0, 21.0));
        let back = codec.decode(&bytes, lattice, Path::new("f"), "t").unwrap();
        assert_eq!(back, vec![psi]);
    }

    #[test]
    fn non_finite_components_are_named() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let codec = FermionCodec {
            kind: FermionKind::ColourVector,
            columns: 2,
            precision: Precision::Double,
            order: ByteOrder::Little,
        };
        let mut bytes = vec![0u8; codec.payload_bytes(&lattice) as usize];
        // Site 3, column 1, component 2, imaginary part.
        let at = 3 * codec.site_bytes() + codec.column_bytes() + 8 * 5;
        bytes[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
        let e = codec
            .decode(&bytes, lattice, Path::new("v.bin"), "payload")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v.bin") && e.contains("column 1, component 2") && e.contains("site 3"),
            "{e}"
        );
        assert!(codec
            .decode(&bytes[1..], lattice, Path::new("v.bin"), "payload")
            .is_err());
    }

    #[test]
    fn shapes_other_than_full_vectors_cannot_be_written() {
        let lattice = Lattice::new([2, 2, 2, 2]).unwrap();
        let p = Path::new("out");
        let none: [ColourSpinorField<f64>; 0] = [];
        assert!(column_shape(&none, p).is_err());
        let half = ColourSpinorField::<f64>::zeros(SpinorLayout::staggered(
            lattice,
            SiteSubset::Single(crate::lattice::Parity::Even),
        ));
        assert!(column_shape(&[half], p).is_err());
        let v = ColourSpinorField::<f64>::zeros(FermionKind::ColourVector.layout(lattice));
        let d = ColourSpinorField::<f64>::zeros(FermionKind::DiracFermion.layout(lattice));
        assert!(column_shape(&[v.clone(), d], p).is_err());
        assert_eq!(
            column_shape(&[v.clone(), v], p).unwrap(),
            (FermionKind::ColourVector, lattice)
        );
    }
}
