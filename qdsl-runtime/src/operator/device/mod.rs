//! Generated stencil kernels on the GPU ([`DeviceStencil`]: compile for the device's
//! architecture, bind their parameters by name through [`crate::device::kernel`], launch
//! with tuned parameters) and the even-odd blocks on device fields (the operators are the generic
//! [`crate::operator::Schur`] of them).

use crate::device::DeviceFormat;
use crate::device::{DeviceError, DeviceField, DeviceLayout};
use crate::tune::TuneError;
use qdsl_core::dsl::ir::{FieldShape, Role};
use qdsl_core::dsl::lower::{lower, ReadSites};
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{DslError, Ir, Variant};
use qdsl_core::format::LinkFormat;
use qdsl_core::lattice::Lattice;

/// Errors of device kernels and operators.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A device operation failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The spec or variant was rejected by the generator.
    #[error(transparent)]
    Dsl(#[from] DslError),
    /// Tuning failed.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// The even-odd layer refused an operation.
    #[error(transparent)]
    Schur(#[from] crate::operator::even_odd::SchurError),
    /// A field does not fit the kernel variant.
    #[error("{kernel}: field {field}: expected {expected}, found {found}")]
    Field {
        /// The kernel.
        kernel: String,
        /// The field (parameter name).
        field: String,
        /// What the variant needs.
        expected: String,
        /// What was given.
        found: String,
    },
}

/// The xpay operands of a device launch: out = a·x + b·(D ψ).
#[derive(Clone, Copy, Debug)]
pub struct DeviceXpay<'a> {
    /// The factor a of x (rounded to the compute type).
    pub a: f64,
    /// The field x (same layout as the output).
    pub x: &'a DeviceField,
    /// The factor b of D ψ (rounded to the compute type).
    pub b: f64,
}

/// What a field argument must look like: sites, records per site, stored reals per
/// record and bytes per real (the storage format itself is checked by
/// [`expected_format`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldShapeCheck {
    /// Sites.
    pub sites: usize,
    /// Records per site (4 for gauge fields).
    pub subs: usize,
    /// Stored reals per record.
    pub reals: usize,
    /// Bytes per stored real.
    pub real_bytes: usize,
}

impl FieldShapeCheck {
    /// Compares a device layout with this expectation; the error text names both.
    pub fn check(&self, layout: &DeviceLayout) -> Result<(), (String, String)> {
        let found = FieldShapeCheck {
            sites: layout.sites,
            subs: layout.subs,
            reals: layout.stored_reals,
            real_bytes: layout.real_bytes,
        };
        if found == *self {
            Ok(())
        } else {
            Err((
                self.describe(),
                format!("{} ({})", found.describe(), layout.format),
            ))
        }
    }

    fn describe(&self) -> String {
        format!(
            "{} sites × {} × {} reals of {} bytes",
            self.sites, self.subs, self.reals, self.real_bytes
        )
    }
}

/// How a kernel uses one of its fields (from the lowered spec, computed once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldUse {
    /// The field's name.
    pub name: String,
    /// Whether it is the output.
    pub out: bool,
    /// Whether it is a gauge field (else a colour-spinor or clover field).
    pub gauge: bool,
    /// Matrices per site of a gauge field: 4 links, or 1 for a dense site matrix
    /// (`SiteMatrix<N>`, [`qdsl_core::field::DenseKind::SiteMatrix`]).
    pub per_site: usize,
    /// `Some(N)` for a dense link field (a gauge field of a spec with dense N × N links,
    /// [`qdsl_core::dsl::lower::Lowered::dense`]): 4 records of 2N² reals per site in
    /// the native gauge format ([`dense_link_format`]).
    pub dense: Option<usize>,
    /// Whether it is a clover field: 72 reals per site in the compute precision (f64 for
    /// f64 spinors, else f32), on the output's sites.
    pub clover: bool,
    /// Whether it is read at both parities (then stored on the whole lattice).
    pub both_parities: bool,
}

/// The uses of every field of a spec in declaration order, and the reals per spinor
/// site (2 · spins · colours).
pub fn field_uses(ir: &Ir) -> Result<(Vec<FieldUse>, usize), DslError> {
    let lowered = lower(ir)?;
    let uses = ir
        .fields
        .iter()
        .map(|f| FieldUse {
            name: f.name.clone(),
            out: f.role == Role::Out,
            gauge: matches!(f.shape, FieldShape::Gauge { .. }),
            per_site: if f.shape.is_site_matrix() { 1 } else { 4 },
            dense: lowered
                .dense
                .filter(|_| matches!(f.shape, FieldShape::Gauge { .. })),
            clover: f.shape == FieldShape::Clover,
            both_parities: lowered
                .inputs
                .iter()
                .any(|i| i.decl.name == f.name && i.reads == ReadSites::Both),
        })
        .collect();
    Ok((uses, 2 * lowered.nspin * lowered.ncolour))
}

/// The shape each field must have for `variant` on `lattice`: gauge fields V sites × 4
/// links of `recon` reals in the gauge format (dense N × N links: 2N² reals; a site
/// matrix: V sites × 1 matrix of 2N² reals); spinors `spinor_reals` reals in the
/// spinor format on V/2 sites for one output parity (V when read at both parities or
/// for the full lattice), times `ls` for 5D fields (Ls slices of those sites); clover
/// fields 72 reals in the compute precision on the output's (4D) sites.
pub fn shapes(
    uses: &[FieldUse],
    spinor_reals: usize,
    variant: &Variant,
    lattice: &Lattice,
    ls: usize,
) -> Vec<FieldShapeCheck> {
    let parity_out = matches!(variant.sites, OutputSites::Parity(_));
    let (v, half) = (lattice.volume(), lattice.half_volume());
    uses.iter()
        .map(|u| {
            if u.gauge {
                FieldShapeCheck {
                    sites: v,
                    subs: u.per_site,
                    reals: u.dense.map_or(variant.recon.reals(), |n| 2 * n * n),
                    real_bytes: variant.gauge.bytes(),
                }
            } else if u.clover {
                FieldShapeCheck {
                    sites: if parity_out { half } else { v },
                    subs: 1,
                    reals: qdsl_core::field::CLOVER_SITE_REALS,
                    real_bytes: clover_format(variant).bytes(),
                }
            } else {
                FieldShapeCheck {
                    sites: ls
                        * if parity_out && !u.both_parities {
                            half
                        } else {
                            v
                        },
                    subs: 1,
                    // Stored units of a site: its codec's bytes over the unit's (the
                    // reals, or a packed site's 32-bit words).
                    reals: variant.spinor.codec().record_bytes(spinor_reals)
                        / variant.spinor.bytes(),
                    real_bytes: variant.spinor.bytes(),
                }
            }
        })
        .collect()
}

/// The storage of clover fields for `variant`: the compute precision (f64 for f64
/// spinors, else f32), as the CUDA emitter reads them.
pub fn clover_format(variant: &Variant) -> StorageFormat {
    variant.spinor.compute()
}

/// The expected shape of every field of `variant` of a spec on `lattice`, in
/// declaration order ([`field_uses`] then [`shapes`]).
pub fn expected_shapes(
    ir: &Ir,
    variant: &Variant,
    lattice: &Lattice,
) -> Result<Vec<(String, FieldShapeCheck)>, DslError> {
    let (uses, reals) = field_uses(ir)?;
    let shapes = shapes(&uses, reals, variant, lattice, 1);
    Ok(uses.into_iter().map(|u| u.name).zip(shapes).collect())
}

/// The storage format a field of `variant` must have: gauge fields the gauge storage ×
/// compression (dense link fields [`dense_link_format`]), clover fields [`clover_format`], colour spinors the spinor format (with
/// per-site norms for fixed point).
pub fn expected_format(u: &FieldUse, variant: &Variant) -> DeviceFormat {
    if u.dense.is_some() {
        dense_link_format(variant)
    } else if u.gauge {
        DeviceFormat::Link(LinkFormat::new(
            variant.gauge.link_storage(),
            variant.recon.compression(),
        ))
    } else if u.clover {
        DeviceFormat::Fermion(clover_format(variant).fermion_format())
    } else {
        DeviceFormat::Fermion(variant.spinor.fermion_format())
    }
}

/// The device format of dense link fields for `variant`: the gauge storage (f64 or f32,
/// the only ones the dense emitter accepts) as a plain float format, each link stored
/// whole (see [`crate::device::dense`]).
pub fn dense_link_format(variant: &Variant) -> DeviceFormat {
    DeviceFormat::Fermion(variant.gauge.fermion_format())
}

/// Output sites of a variant: V/2 for one parity, V for the full lattice.
pub fn output_sites(variant: &Variant, lattice: &Lattice) -> usize {
    match variant.sites {
        OutputSites::Parity(_) => lattice.half_volume(),
        OutputSites::Full => lattice.volume(),
    }
}

/// Storage formats as the tune key records them, e.g. `spinor=f32 gauge=f32 recon=12`.
pub fn formats_key(variant: &Variant) -> String {
    format!(
        "spinor={} gauge={} recon={}",
        variant.spinor.name(),
        variant.gauge.name(),
        variant.recon.reals()
    )
}

mod clover;
mod even_odd;
#[cfg(test)]
mod schur_gpu_tests;
mod stencil;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod walk_gpu_tests;

pub use clover::{DeviceCloverBlocks, DeviceEvenOddClover};
pub(crate) use even_odd::HopKernels;
pub use even_odd::{device_spinor, DeviceEvenOddHop, DeviceHopBlocks, DeviceRun};
pub use stencil::{
    codegen_hash, stencil_interface, BoxLaunch, DeviceStencil, StencilArgs, StencilLaunch,
};
