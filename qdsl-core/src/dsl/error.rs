//! Errors of the DSL pipeline: lowering, emission and running generated CPU code.

use thiserror::Error;

/// The part of a term a lowering error points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermPart {
    /// The whole term.
    Whole,
    /// Its source field.
    Source,
}

/// What went wrong lowering a spec, emitting a variant, or running generated CPU code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DslError {
    /// The spec is not well formed (the macro reports these with a span; this variant
    /// covers IR values built by hand).
    #[error("invalid stencil spec `{kernel}`: {reason}")]
    InvalidSpec { kernel: String, reason: String },
    /// One term of the spec is not well formed: lowering names the term (counted in the
    /// order the spec's statements produce them) and the part of it at fault, so that
    /// the macro reports the error at that token.
    #[error("invalid stencil spec `{kernel}`, term {}: {reason}", term + 1)]
    InvalidTerm {
        kernel: String,
        term: usize,
        part: TermPart,
        reason: String,
    },
    /// A knob value this spec or this generator does not support.
    #[error("kernel `{kernel}` does not support {knob}: {reason}")]
    UnsupportedVariant {
        kernel: String,
        knob: &'static str,
        reason: String,
    },
    /// A field passed to generated CPU code does not have the shape the spec declares.
    #[error("kernel `{kernel}`, field `{field}`: expected {expected}, found {found}")]
    FieldMismatch {
        kernel: String,
        field: String,
        expected: String,
        found: String,
    },
    /// A field cannot be held in the variant's storage format (generated CPU code rounds
    /// every field through the format, as the device stores it).
    #[error("kernel `{kernel}`, field `{field}`: cannot store it as {format}: {detail}")]
    Storage {
        kernel: String,
        field: String,
        format: String,
        detail: String,
    },
}

impl DslError {
    /// The reason of a malformed spec or term (without the kernel's name), `None` for the
    /// other errors.
    pub fn spec_reason(&self) -> Option<&str> {
        match self {
            DslError::InvalidSpec { reason, .. } | DslError::InvalidTerm { reason, .. } => {
                Some(reason)
            }
            _ => None,
        }
    }
}
