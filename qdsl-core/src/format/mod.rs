//! Storage formats ("bang per bit", after Clark et al., Lattice 2022).
//!
//! Kernels compute in `f32` or `f64` ([`Real`](crate::Real)); fields may be *stored* in
//! narrower formats to move fewer bytes. This module is the bit-exact definition of every
//! storage format — the generated GPU kernels decode the same bytes inline, and the CUDA
//! emitter reproduces these definitions — together with each format's round-trip error
//! bound, which the tests prove on large random samples.
//!
//! # Fermion sites ([`FermionFormat`])
//!
//! A site of N reals (24 Wilson, 6 staggered, any N) is one byte record:
//!
//! | name | record for N reals | per-component bound (m = site max \|v\|) | non-finite input |
//! |---|---|---|---|
//! | `f64` `f32` `f16` `bf16` | N little-endian IEEE values | u·\|v_i\| + η; 0 if the width holds T | stored (NaN, ±∞) |
//! | `fixed16` `fixed8` | f32 norm, then N signed b-bit ints | ≈ m/(2Q), Q = 32767 / 127 | error |
//! | `packed20` | ⌈N/6⌉ × 16 bytes: 6 × 20-bit ints + 8-bit exponent | < m_g/(2^19 − 1) ≈ 1.9e−6·m_g | error |
//! | `packed30` | ⌈N/6⌉ × 24 bytes: 6 × 30-bit ints + 8-bit exponent | < m_g/(2^29 − 1) ≈ 1.9e−9·m_g | error |
//!
//! (m_g: the max of the group of 6.) Finite values beyond a format's range are
//! [`FormatError::Overflow`] (f16: |v| ≥ 65520; fixed: m > `f32::MAX`; packed:
//! m_g > Q·2^127), never a silent infinity. Exact zeros round-trip to exact zeros
//! everywhere, with no 0/0. See [`fermion`] for the exact rounding rules and layouts.
//!
//! # Gauge links ([`LinkFormat`] = [`LinkStorage`] × [`Compression`])
//!
//! Storage `f64`, `f32`, `f16`, `bf16`, `fixed16`, `fixed8` (fixed point with the fixed
//! step 1/Q, no norm: elements of unitary matrices lie in [−1, 1]); compression recon 18
//! (18 reals), recon 12 (two rows, the third = conj(row0 × row1)), recon 8 (QUDA's
//! choice: arg v00/π, arg v20/π, v01, v02, v10). Recon 12 and 8 are exact only for
//! sign × SU(3) and are checked ([`SuCheck`]); staggered signs are passed as a
//! [`LinkSign`]. Bounds are per link ([`LinkFormat::error_bound`]); recon 8 is
//! ill-conditioned near diagonal links with fixed-point storage. See [`link`].
//!
//! # The table
//!
//! [`FormatInfo::table`] lists name, bits per real, bytes per Wilson and staggered site
//! and bytes per link under each compression, for the byte models of the benchmark.
//!
//! # Conventions common to all formats
//!
//! * Little-endian throughout; no padding inside records except the packed formats'
//!   documented zero fields.
//! * Rounding is to nearest with ties to even, computed exactly in software on the host
//!   (the `half` crate is used only to pack already-representable values, since its own
//!   f64 → f16 conversion is not correctly rounded).
//! * Bounds are stated for encoding from and decoding into the same compute type T; a
//!   decode into a narrower T adds T's own rounding.
//! * Decoders check what no encoder writes (a negative norm, the integer −2^(b−1), a
//!   packed exponent of 255, non-zero padding) and report [`FormatError::Corrupt`].

mod error;
pub mod fermion;
mod info;
pub mod link;
mod scalar;
#[cfg(test)]
pub(crate) mod testing;

pub use error::FormatError;
pub use fermion::{FermionFormat, PackedWidth};
pub use info::{FormatInfo, STAGGERED_SITE_REALS, WILSON_SITE_REALS};
pub use link::{Compression, LinkFormat, LinkSign, LinkStorage, SuCheck};
pub use scalar::{FixedWidth, FloatWidth};
