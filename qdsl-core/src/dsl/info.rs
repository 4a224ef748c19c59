//! [`KernelInfo`]: what a kernel variant costs — flops and bytes per output site — and
//! which knobs it has.

use super::ir::FieldShape;
use super::knobs::KnobSet;
use super::lower::{Lowered, ReadSites, SpinLowering};
use super::variant::{OutputSites, Recon, StorageFormat, Variant};
use crate::format::link::ScaledLinkFormat;
use std::collections::BTreeSet;

/// Bytes moved per output site under the two byte models of DESIGN.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteModels {
    /// QUDA's model: every term reads its source site and its links (neighbour reads
    /// counted as often as they occur), plus the output (and x for xpay).
    pub quda: usize,
    /// The minimal model: each input element read once, the output written once.
    pub minimal: usize,
}

/// The bytes of an operator made of several kernels: each model summed.
impl std::ops::Add for ByteModels {
    type Output = ByteModels;
    fn add(self, other: ByteModels) -> ByteModels {
        ByteModels {
            quda: self.quda + other.quda,
            minimal: self.minimal + other.minimal,
        }
    }
}

impl std::iter::Sum for ByteModels {
    fn sum<I: Iterator<Item = ByteModels>>(iter: I) -> ByteModels {
        iter.fold(
            ByteModels {
                quda: 0,
                minimal: 0,
            },
            |a, b| a + b,
        )
    }
}

/// The byte models of one combination of storage formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatBytes {
    /// Spinor storage format.
    pub spinor: StorageFormat,
    /// Gauge storage format.
    pub gauge: StorageFormat,
    /// Gauge compression.
    pub recon: Recon,
    /// Bytes per output site.
    pub bytes: ByteModels,
}

/// The cost and knobs of one kernel variant.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelInfo {
    /// Kernel name (snake case).
    pub name: String,
    /// The variant described.
    pub variant: Variant,
    /// Floating-point operations per output site, counted as the standard counts do
    /// (Wilson hop 1320, naive staggered 570, improved staggered 1146): per term, the
    /// projection (12 for 1 ± γ_μ), 66 per 3 × 3 matrix times colour vector per row and
    /// link, 2 per real scaled by a coefficient ≠ ±1, 2 per real accumulated (the first
    /// term's accumulation is free); xpay adds 3 per output real (a·x + b·y). A clover
    /// term A(x) ψ(x) costs [`CLOVER_FLOPS`] = 504 for the matrix. A dense N × N link
    /// ([`super::lower::Lowered::dense`]) times the whole N-vector costs N² complex
    /// products and N(N − 1) complex sums, 8N² − 2N, with 2N per accumulation (coarse hop,
    /// N = 48: 8 · 8N² − 2N = 147 360).
    pub flops_per_site: usize,
    /// Bytes per output site of this variant.
    pub bytes: ByteModels,
    /// Bytes per output site for every storage format and compression (xpay and sites
    /// as in the variant).
    pub bytes_by_format: Vec<FormatBytes>,
    /// The knobs of the kernel and the values the spec allows for each.
    pub knobs: Vec<(&'static str, Vec<&'static str>)>,
}

impl KernelInfo {
    /// The info of `variant` of a lowered spec.
    pub fn new(lowered: &Lowered, variant: &Variant) -> Self {
        let mut bytes_by_format = Vec::new();
        for spinor in StorageFormat::EVERY {
            for gauge in StorageFormat::EVERY {
                for recon in Recon::EVERY {
                    let v = Variant {
                        spinor,
                        gauge,
                        recon,
                        ..*variant
                    };
                    bytes_by_format.push(FormatBytes {
                        spinor,
                        gauge,
                        recon,
                        bytes: bytes_per_site(lowered, &v),
                    });
                }
            }
        }
        let mut allowed = lowered.ir.knobs;
        if !lowered.dagger_supported {
            allowed.dagger[1] = false;
        }
        let knobs = KnobSet::VALUES
            .iter()
            .map(|&(name, values)| {
                let flags = allowed
                    .flags_mut(name)
                    .map(|f| f.to_vec())
                    .unwrap_or_default();
                (
                    name,
                    values
                        .iter()
                        .zip(flags)
                        .filter(|(_, ok)| *ok)
                        .map(|(v, _)| *v)
                        .collect(),
                )
            })
            .collect();
        KernelInfo {
            name: lowered.ir.name.clone(),
            variant: *variant,
            flops_per_site: flops_per_site(lowered, variant.xpay),
            bytes: bytes_per_site(lowered, variant),
            bytes_by_format,
            knobs,
        }
    }
}

/// Flops of one clover matrix times a 4 × 3 spinor, by QUDA's count: 2 chiral blocks ×
/// 6 rows × (2 for the real diagonal times a complex + 5 off-diagonal complex products × 6
/// + 5 complex additions × 2) = 2 · 6 · 42 = 504.
pub const CLOVER_FLOPS: usize = 2 * 6 * (2 + 5 * 6 + 5 * 2);

/// Bytes of one clover site on the device: 72 reals in the compute precision (f64 for
/// f64 spinors, f32 otherwise).
pub fn clover_site_bytes(v: &Variant) -> usize {
    crate::field::CLOVER_SITE_REALS * v.spinor.compute().bytes()
}

/// Flops per output site (see [`KernelInfo::flops_per_site`]).
pub fn flops_per_site(lowered: &Lowered, xpay: bool) -> usize {
    let out_reals = 2 * lowered.nspin * lowered.ncolour;
    // Dense links: one N × N product on the whole vector (8N² − 2N flops) per term.
    let nc = lowered.dense.unwrap_or(lowered.ncolour);
    let matvec = nc * (6 * nc) + (nc - 1) * 2 * nc;
    let mut flops = 0;
    for t in &lowered.terms {
        let (project, rows) = match t.spin {
            SpinLowering::Projected { .. } => (2 * nc * 2, 2),
            SpinLowering::Rows { nspin } => (0, if lowered.dense.is_some() { 1 } else { nspin }),
            // ±i is exact (no flops).
            SpinLowering::Twisted => (0, 4),
            SpinLowering::Clover { .. } => (CLOVER_FLOPS, 4),
        };
        let scale = if t.coeff.abs() == 1.0 {
            0
        } else {
            2 * rows * nc
        };
        flops += project + rows * matvec * t.term.links.len() + scale + out_reals;
    }
    flops -= out_reals;
    if xpay {
        flops += 3 * out_reals;
    }
    flops
}

/// Bytes per output site under both models (see [`ByteModels`]).
pub fn bytes_per_site(lowered: &Lowered, v: &Variant) -> ByteModels {
    let out_reals = 2 * lowered.nspin * lowered.ncolour;
    // One site record of the spinor format (a fixed-point site includes its f32 norm).
    let site_bytes = v.spinor.codec().site_bytes(out_reals);
    let link_bytes = match lowered.dense {
        Some(n) => 2 * n * n * v.gauge.bytes(),
        None => v.gauge.codec().link_bytes(v.recon),
    };
    // Compressed long links (`long_recon` 13, 12 + sign, 9): the record and the phase.
    let bytes_of = |field: &str| match v.long_recon.compression() {
        Some(c) if super::long_links::is_long(&lowered.ir, field) => {
            ScaledLinkFormat::new(v.gauge.codec().link_storage(), c).bytes_per_link()
        }
        _ => link_bytes,
    };
    let extra = if v.xpay { 2 } else { 1 } * site_bytes;
    let mut quda = extra;
    for t in &lowered.terms {
        let links: usize = t.term.links.iter().map(|l| bytes_of(&l.field)).sum();
        quda += site_bytes + links;
        if matches!(t.spin, SpinLowering::Clover { .. }) {
            quda += clover_site_bytes(v);
        }
    }
    let full = v.sites == OutputSites::Full;
    let mut minimal = extra;
    for input in &lowered.inputs {
        if input.reads == ReadSites::Gauge {
            continue;
        }
        if input.decl.shape == FieldShape::Clover {
            minimal += clover_site_bytes(v);
            continue;
        }
        let sites = if input.reads == ReadSites::Both && !full {
            2
        } else {
            1
        };
        minimal += sites * site_bytes;
    }
    // Distinct links per output site: (field, μ, parity of the link's site relative to x).
    let links: BTreeSet<(&str, usize, i32)> = lowered
        .terms
        .iter()
        .flat_map(|t| t.term.links.iter())
        .map(|l| {
            (
                l.field.as_str(),
                l.mu,
                if full { 0 } else { l.at.rem_euclid(2) },
            )
        })
        .collect();
    minimal += links.iter().map(|(f, _, _)| bytes_of(f)).sum::<usize>();
    ByteModels { quda, minimal }
}

#[cfg(test)]
mod tests {
    use super::ByteModels;

    /// Byte models add model by model: three kernels of (1248, 576), (96, 48) and
    /// (1320, 624) bytes move (2664, 1248); no kernel, none.
    #[test]
    fn byte_models_add_model_by_model() {
        let b = |quda, minimal| ByteModels { quda, minimal };
        let kernels = [b(1248, 576), b(96, 48), b(1320, 624)];
        assert_eq!(kernels.into_iter().sum::<ByteModels>(), b(2664, 1248));
        assert_eq!(kernels[0] + kernels[1], b(1344, 624));
        assert_eq!(std::iter::empty().sum::<ByteModels>(), b(0, 0));
    }
}
