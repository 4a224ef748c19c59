//! The one error type of the storage formats.

use thiserror::Error;

/// What can go wrong when encoding reals into a storage format or decoding them back.
///
/// Every variant names the format (e.g. `"fixed16"`, `"f16/recon8"`), and where it applies
/// the component (index of the real within the site, group or link) and the offending value.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FormatError {
    /// The byte buffer does not have the size the format needs for this many reals.
    #[error(
        "{format}: a site of {reals} reals needs a buffer of {expected} bytes, found {found} bytes"
    )]
    BufferSize {
        /// Format name.
        format: String,
        /// Number of reals of the site (18 for a link).
        reals: usize,
        /// Bytes the format needs.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// A NaN or infinity was given to a format that cannot represent it (fixed point,
    /// bit-packed, every link format).
    #[error("{format}: component {component} is {value}, expected a finite real")]
    NonFinite {
        /// Format name.
        format: String,
        /// Index of the component within the site (or link).
        component: usize,
        /// The value found.
        value: f64,
    },
    /// A finite value too large for the format (it would become infinite, or its norm or
    /// exponent does not fit).
    #[error(
        "{format}: component {component} = {value:e} overflows the format \
         (largest accepted magnitude about {max:e})"
    )]
    Overflow {
        /// Format name.
        format: String,
        /// Index of the component within the site.
        component: usize,
        /// The value found.
        value: f64,
        /// The largest magnitude the format accepts (approximately, see the format's docs).
        max: f64,
    },
    /// A link element outside the range a fixed-point link format can hold without a norm.
    #[error(
        "{format}: link component {component} = {value} is outside the fixed-point range \
         |v| < {limit} (expected an element of a unitary matrix, |v| ≤ 1)"
    )]
    OutOfRange {
        /// Format name.
        format: String,
        /// Index of the real within the 18 reals of the link (row-major, re/im).
        component: usize,
        /// The value found.
        value: f64,
        /// The exclusive upper limit of |v|.
        limit: f64,
    },
    /// Bytes that no encoder of this format produces.
    #[error("{format}: corrupt data: {detail}")]
    Corrupt {
        /// Format name.
        format: String,
        /// What was expected and what was found.
        detail: String,
    },
    /// A link given to a compressed format is not sign × SU(3) (checked by
    /// `SuCheck::Su3`): a U(3) link such as a HISQ fat link, a wrong staggered sign, or a
    /// non-unitary matrix.
    #[error(
        "{format}: link × sign is not in SU(3): ‖V†V − 1‖ = {unitarity:e}, |det V − 1| = \
         {det_error:e}, tolerance {tolerance:e} (expected an SU(3) link times the given sign; \
         U(3) or smeared links need recon18)"
    )]
    NotSpecialUnitary {
        /// Format name.
        format: String,
        /// ‖V†V − 1‖_F of V = sign × link.
        unitarity: f64,
        /// |det V − 1|.
        det_error: f64,
        /// The tolerance it was checked against.
        tolerance: f64,
    },
    /// A compressed link does not reconstruct to the input within the tolerance (checked
    /// by `SuCheck::RoundTrip`): not sign × SU(3), or recon-8 too close to degenerate.
    #[error(
        "{format}: link does not survive compression: max component error {found:e} \
         exceeds the tolerance {tolerance:e} (expected sign × SU(3), not near-degenerate \
         for recon8; use recon12 or recon18)"
    )]
    Reconstruction {
        /// Format name.
        format: String,
        /// Largest |decoded − input| over the 18 reals.
        found: f64,
        /// The tolerance it was checked against.
        tolerance: f64,
    },
}
