//! The floating-point types qdsl computes in.

use num_traits::{Float, FloatConst, NumAssign};
use std::fmt::{Debug, Display, LowerExp};
use std::iter::Sum;

/// A real scalar qdsl computes in: `f32` or `f64`.
///
/// Everything generic in [`crate::math`] and [`crate::field`] is written once over this
/// trait; the conversions to and from `f64` are how mixed-precision code moves values.
/// Each precision also carries the CPU stencil engine compiled for it
/// ([`crate::dsl::cpu::LaneEngine`]).
pub trait Real:
    Float
    + FloatConst
    + NumAssign
    + Sum
    + Default
    + Debug
    + Display
    + LowerExp
    + Send
    + Sync
    + 'static
    + crate::dsl::cpu::LaneEngine
{
    /// Number of bytes of one value.
    const BYTES: usize;
    /// Short name used in reports and file headers ("f32", "f64").
    const NAME: &'static str;

    /// Converts from `f64` (rounding to nearest for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Converts to `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Real for f32 {
    const BYTES: usize = 4;
    const NAME: &'static str = "f32";
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    const BYTES: usize = 8;
    const NAME: &'static str = "f64";
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}
