//! The storage precisions of device Krylov vectors as types ([`DevicePrecision`]), so
//! that the solvers' mixed-precision type parameters (and their tolerance checks, which
//! need the unit round-off before any field exists) work on the GPU as on the host.
//!
//! A device precision is a host storage marker ([`SpinorStorage`]: the format and its
//! unit round-off, one definition for the host emulation and the GPU) that the device
//! kernels also store vectors in; declaring that is one line,
//! `impl DevicePrecision for Marker {}`. The iteration precisions a solve chooses at run
//! time name these markers in the registry of the `qdsl` program (`app::precision`).

use super::super::{Fixed16, Fixed8, Half, Packed20, Packed30, SpinorStorage};
use crate::device::HostReal;
use qdsl_core::format::FermionFormat;

/// A fermion storage format device vectors are kept in: its [`SpinorStorage::FORMAT`]
/// and [`SpinorStorage::UNIT_ROUNDOFF`] (relative to the largest component of its site
/// for fixed point, of its group for packed, to itself for floats).
pub trait DevicePrecision: SpinorStorage {}

/// IEEE binary64 storage: u = 2⁻⁵³.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Double;

/// IEEE binary32 storage: u = 2⁻²⁴.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Single;

impl SpinorStorage for Double {
    const FORMAT: FermionFormat = FermionFormat::F64;
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
}

impl SpinorStorage for Single {
    const FORMAT: FermionFormat = FermionFormat::F32;
    const UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;
}

impl DevicePrecision for Double {}
impl DevicePrecision for Single {}
/// 16-bit fixed point with an f32 norm per site (u = 1/(2 · 32767)).
impl DevicePrecision for Fixed16 {}
/// 8-bit fixed point with an f32 norm per site (u = 1/(2 · 127)): the kernels decode to
/// f32, compute, and re-encode.
impl DevicePrecision for Fixed8 {}
/// IEEE binary16 (u = 2⁻¹¹).
impl DevicePrecision for Half {}
/// 20-bit packed groups of 6 with a shared power-of-two scale (u = 1/(2¹⁹ − 1) of the
/// group's largest component).
impl DevicePrecision for Packed20 {}
/// 30-bit packed groups (u = 1/(2²⁹ − 1)); computed in f64 (see [`compute_precision`]).
impl DevicePrecision for Packed30 {}

/// The precision arithmetic on a format runs in: f64 for f64 and packed30 storage (a
/// 30-bit integer needs 30 significant bits, beyond f32's 24, and its round-off
/// 2⁻²⁹ is below f32's 2⁻²⁴), f32 for every other format (decode → f32 → re-encode;
/// packed20's 20-bit integers are exact in f32).
pub fn compute_precision(format: FermionFormat) -> HostReal {
    if format == FermionFormat::F64 || format == FermionFormat::PACKED30 {
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
        assert_eq!(Fixed16::UNIT_ROUNDOFF, 0.5 / 32767.0);
        assert_eq!(Fixed8::UNIT_ROUNDOFF, 0.5 / 127.0);
        assert_eq!(Half::UNIT_ROUNDOFF, 2f64.powi(-11));
        assert_eq!(compute_precision(Double::FORMAT), HostReal::F64);
        assert_eq!(compute_precision(Single::FORMAT), HostReal::F32);
        assert_eq!(compute_precision(FermionFormat::FIXED16), HostReal::F32);
        assert_eq!(compute_precision(FermionFormat::FIXED8), HostReal::F32);
        // Packed: u = 1/Q, Q = 2^(b−1) − 1; 20-bit integers fit f32's 24-bit
        // significand, 30-bit ones do not (2^29 − 1 is not an f32).
        assert_eq!(Packed20::UNIT_ROUNDOFF, 1.0 / 524_287.0);
        assert_eq!(Packed30::UNIT_ROUNDOFF, 1.0 / 536_870_911.0);
        assert_eq!((524_287.0f32) as f64, 524_287.0);
        assert_ne!((536_870_911.0f32) as f64, 536_870_911.0);
        assert_eq!(compute_precision(Packed20::FORMAT), HostReal::F32);
        assert_eq!(compute_precision(Packed30::FORMAT), HostReal::F64);
    }
}
