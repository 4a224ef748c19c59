//! The format table: sizes and precision of every storage format, for the benchmark's
//! byte models and `KernelInfo`.

use super::fermion::FermionFormat;
use super::link::{Compression, LinkFormat, LinkStorage};

/// Reals of a Wilson spinor site: 4 spins × 3 colours × (re, im).
pub const WILSON_SITE_REALS: usize = 24;
/// Reals of a staggered colour-vector site: 3 colours × (re, im).
pub const STAGGERED_SITE_REALS: usize = 6;

/// One row of the format table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormatInfo {
    /// The fermion format.
    pub format: FermionFormat,
    /// Its name ("f32", "fixed16", "packed20", …).
    pub name: &'static str,
    /// Nominal bits of one stored real, without the norm or shared exponent.
    pub bits_per_real: u32,
    /// Bytes of a Wilson site (24 reals), norm and padding included.
    pub bytes_per_wilson_site: usize,
    /// Bytes of a staggered site (6 reals), norm and padding included.
    pub bytes_per_staggered_site: usize,
    /// Bytes of a gauge link stored in the same width, for recon 18, 12 and 8; `None` for
    /// the packed formats, which are fermion-only.
    pub bytes_per_link: Option<[usize; 3]>,
    /// Leading-order relative error: per unit of |v| for the float formats (u = 2^−p;
    /// 0 for f64, exact for f64 data), per unit of the site's max |v| for fixed point
    /// (1/(2Q)), per unit of the group's max for packed (1/Q, a strict upper bound).
    pub epsilon: f64,
}

impl FormatInfo {
    /// The row of `format`.
    pub fn of(format: FermionFormat) -> Self {
        let link_storage = LinkStorage::from_name(format.name());
        Self {
            format,
            name: format.name(),
            bits_per_real: format.bits_per_real(),
            bytes_per_wilson_site: format.bytes_per_site(WILSON_SITE_REALS),
            bytes_per_staggered_site: format.bytes_per_site(STAGGERED_SITE_REALS),
            bytes_per_link: link_storage
                .map(|s| Compression::ALL.map(|c| LinkFormat::new(s, c).bytes_per_link())),
            epsilon: match format {
                FermionFormat::Float(w) if w.precision() == 53 => 0.0,
                FermionFormat::Float(w) => w.unit_roundoff(),
                FermionFormat::Fixed(w) => 0.5 / w.max_int() as f64,
                FermionFormat::Packed(w) => 1.0 / w.max_int() as f64,
            },
        }
    }

    /// Every format, in the order of [`FermionFormat::ALL`].
    pub fn table() -> [Self; 8] {
        FermionFormat::ALL.map(Self::of)
    }

    /// The row named `name`, if any.
    pub fn by_name(name: &str) -> Option<Self> {
        FermionFormat::from_name(name).map(Self::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_hand_counts() {
        // (name, bits, Wilson bytes, staggered bytes, link bytes 18/12/8)
        type Row = (&'static str, u32, usize, usize, Option<[usize; 3]>);
        let expected: [Row; 8] = [
            ("f64", 64, 192, 48, Some([144, 96, 64])),
            ("f32", 32, 96, 24, Some([72, 48, 32])),
            ("f16", 16, 48, 12, Some([36, 24, 16])),
            ("bf16", 16, 48, 12, Some([36, 24, 16])),
            ("fixed16", 16, 52, 16, Some([36, 24, 16])),
            ("fixed8", 8, 28, 10, Some([18, 12, 8])),
            ("packed20", 20, 64, 16, None),
            ("packed30", 30, 96, 24, None),
        ];
        for (row, (name, bits, wilson, staggered, link)) in FormatInfo::table().iter().zip(expected)
        {
            assert_eq!(
                (
                    row.name,
                    row.bits_per_real,
                    row.bytes_per_wilson_site,
                    row.bytes_per_staggered_site,
                    row.bytes_per_link
                ),
                (name, bits, wilson, staggered, link)
            );
            assert_eq!(FormatInfo::by_name(name), Some(*row));
        }
        assert_eq!(FormatInfo::by_name("f8"), None);
    }

    #[test]
    fn epsilons_are_the_documented_precisions_and_bound_the_format() {
        let eps = FormatInfo::table().map(|r| r.epsilon);
        assert_eq!(
            eps[..4],
            [0.0, 2f64.powi(-24), 2f64.powi(-11), 2f64.powi(-8)]
        );
        assert!((eps[4] - 1.526e-5).abs() < 1e-8 && (eps[5] - 3.937e-3).abs() < 1e-6);
        assert!((eps[6] - 1.907e-6).abs() < 1e-9 && (eps[7] - 1.863e-9).abs() < 1e-12);
        // Packed: ε is a strict bound of the format's own error_bound per unit of max.
        for row in &FormatInfo::table()[6..] {
            for m in [1.0, 0.75, 1.0 + 1e-9, 123.0] {
                assert!(row.format.error_bound::<f64>(m) < row.epsilon * m);
            }
        }
    }
}
