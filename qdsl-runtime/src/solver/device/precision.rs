//! The storage precisions of device Krylov vectors as types ([`DevicePrecision`]), so
//! that the solvers' mixed-precision type parameters (and their tolerance checks, which
//! need the unit round-off before any field exists) work on the GPU as on the host.

use super::super::{Fixed16, Half};
use crate::device::HostReal;
use qdsl_core::format::FermionFormat;

/// A fermion storage format of device vectors, with its unit round-off.
pub trait DevicePrecision: Send + Sync + 'static {
    /// The storage format.
    const FORMAT: FermionFormat;
    /// The relative round-off u of one stored component (relative to the largest
    /// component of its site for fixed point, to itself for floats).
    const UNIT_ROUNDOFF: f64;
}

/// IEEE binary64 storage: u = 2⁻⁵³.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Double;

/// IEEE binary32 storage: u = 2⁻²⁴.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Single;

impl DevicePrecision for Double {
    const FORMAT: FermionFormat = FermionFormat::F64;
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
}

impl DevicePrecision for Single {
    const FORMAT: FermionFormat = FermionFormat::F32;
    const UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;
}

/// 16-bit fixed point with an f32 norm per site (u = 1/(2 · 32767)), the same marker as
/// the host emulation [`Fixed16`].
impl DevicePrecision for Fixed16 {
    const FORMAT: FermionFormat = FermionFormat::FIXED16;
    const UNIT_ROUNDOFF: f64 = <Fixed16 as super::super::SpinorStorage>::UNIT_ROUNDOFF;
}

/// IEEE binary16 (u = 2⁻¹¹), the same marker as the host emulation [`Half`].
impl DevicePrecision for Half {
    const FORMAT: FermionFormat = FermionFormat::F16;
    const UNIT_ROUNDOFF: f64 = <Half as super::super::SpinorStorage>::UNIT_ROUNDOFF;
}

/// The precision arithmetic on a format runs in: f64 for f64 storage, f32 for every
/// narrower format (decode → f32 → re-encode).
pub fn compute_precision(format: FermionFormat) -> HostReal {
    if format == FermionFormat::F64 {
        HostReal::F64
    } else {
        HostReal::F32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// u is half the spacing of the numbers near 1 (floats) or half a quantum of the
    /// site's largest component (fixed point); the arithmetic precision follows.
    #[test]
    fn round_offs_and_compute_precisions() {
        assert_eq!(1.0f64 + Double::UNIT_ROUNDOFF, 1.0);
        assert_ne!(1.0f64 + 2.0 * Double::UNIT_ROUNDOFF, 1.0);
        assert_eq!(1.0f32 + Single::UNIT_ROUNDOFF as f32, 1.0);
        assert_ne!(1.0f32 + 2.0 * Single::UNIT_ROUNDOFF as f32, 1.0);
        assert_eq!(<Fixed16 as DevicePrecision>::UNIT_ROUNDOFF, 0.5 / 32767.0);
        assert_eq!(<Half as DevicePrecision>::UNIT_ROUNDOFF, 2f64.powi(-11));
        assert_eq!(compute_precision(Double::FORMAT), HostReal::F64);
        assert_eq!(compute_precision(Single::FORMAT), HostReal::F32);
        assert_eq!(compute_precision(FermionFormat::FIXED16), HostReal::F32);
    }
}
