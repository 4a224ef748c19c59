//! Which gauge fields of a spec are *long* links.
//!
//! A gauge field is long when every term that reads it reads it as the single link of a
//! hop of three sites (L_μ(x) χ(x + 3μ̂), L_μ†(x − 3μ̂) χ(x − 3μ̂): asqtad's and HISQ's Naik
//! links). Long fields are stored with [`Variant::long_recon`]; every other gauge field
//! with [`Variant::recon`].

use super::ir::{FieldShape, Ir};
use super::variant::{LongRecon, Variant};
use super::DslError;

/// The length of a long link in lattice steps: the hop it is read on.
pub const LONG_LINK_STEPS: usize = 3;

/// The names of the long gauge fields of `ir`, in declaration order.
pub fn long_link_fields(ir: &Ir) -> Vec<&str> {
    ir.fields
        .iter()
        .filter(|f| matches!(f.shape, FieldShape::Gauge { .. }))
        .filter(|f| {
            let mut reads = ir
                .terms
                .iter()
                .filter(|t| t.links.iter().any(|l| l.field == f.name))
                .peekable();
            reads.peek().is_some()
                && reads.all(|t| {
                    t.hop.steps.unsigned_abs() as usize == LONG_LINK_STEPS && t.links.len() == 1
                })
        })
        .map(|f| f.name.as_str())
        .collect()
}

/// Whether `field` is a long gauge field of `ir`.
pub fn is_long(ir: &Ir, field: &str) -> bool {
    long_link_fields(ir).contains(&field)
}

/// Ok unless `variant` compresses long links (`long_recon` ≠ 18) of a spec that has none.
pub fn check_long_recon(ir: &Ir, variant: &Variant) -> Result<(), DslError> {
    if variant.long_recon == LongRecon::R18 || !long_link_fields(ir).is_empty() {
        return Ok(());
    }
    Err(DslError::UnsupportedVariant {
        kernel: ir.name.clone(),
        knob: "long_recon",
        reason: format!(
            "long_recon = {}: the spec reads no gauge field as the single link of 3-site hops",
            variant.long_recon.reals()
        ),
    })
}
