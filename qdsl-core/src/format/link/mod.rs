//! Gauge-link storage: a storage for each real ([`LinkStorage`]) combined with a
//! compression ([`Compression`]) into a [`LinkFormat`].
//!
//! | compression | stored reals | valid for |
//! |---|---|---|
//! | `Full` (recon 18) | the 18 reals, row-major (re, im) | any 3×3 matrix (fixed point: \|v\| ≤ 1) |
//! | `Recon12` | rows 0 and 1 (12 reals) | s·SU(3), s = ±1 |
//! | `Recon8` | arg v00/π, arg v20/π, v01, v02, v10 (8 reals) | s·SU(3), s = ±1 |
//!
//! Long links of improved staggered fermions, a uniform real multiple of U(3) matrices,
//! have their own compressions, recon 13, recon 12 + sign and recon 9
//! ([`ScaledLinkFormat`], module `scaled`).
//!
//! A link record is the stored reals one after the other, each in the storage's width:
//! `bytes_per_link = reals × bytes_per_real`, no padding.
//!
//! **Signs.** Staggered links carry the staggered phase and the antiperiodic boundary
//! folded in: L = s·V with V ∈ SU(3) and s = ±1 (det L = s). The compressed formats store
//! V = s·L and the decoder, which knows s from the site's coordinates, returns s·V̂; the
//! sign is a [`LinkSign`] passed to both. `Full` stores L itself and ignores the sign.
//!
//! **Only for SU(3).** Reconstruction is exact only for V ∈ SU(3): U(3) links (HISQ fat
//! links after the unitary projection, whose det is a phase) and general smeared links
//! must use `Full`. [`LinkFormat::encode`] checks V ∈ SU(3) and returns
//! [`FormatError::NotSpecialUnitary`] otherwise; [`SuCheck`] chooses the check.
//!
//! **Recon 8 is ill-conditioned near diagonal links** (r² = |v01|² + |v02|² = 1 − |v00|²
//! → 0, which includes weak-field links near the identity): the 2×2 block is divided by
//! r², so the absolute error δ of v01, v02 is amplified like δ/r. With fixed-point storage
//! δ = 1/(2Q) is constant and the error grows like 1/r (measured: ×50 from ε = 0.3 to
//! ε = 0.003 off the identity in fixed16); float storage rounds small elements relatively
//! (δ ∝ r) and stays accurate. When the stored r is exactly 0 the block is set to
//! diag(conj v00, 1), exact for the identity. Separately, |v00| and |v20| come from
//! square roots and lose half their digits when they are small. QUDA's recon 8 has the
//! same parametrisation and the same failure modes. [`LinkFormat::error_bound`] gives the
//! per-link bound (infinite where it gives up); `SuCheck::RoundTrip` rejects links whose
//! actual error exceeds a tolerance.
//!
//! **Bit-exactness.** Encoding is done in f64 on the host; decoding uses only IEEE
//! operations in the compute type, in the order documented on the reconstruction code, so
//! a kernel compiled without FMA contraction reproduces recon 18 and 12 bit for bit;
//! recon 8 also calls sin and cos, which no two math libraries round identically.

mod bound;
mod recon;
mod scaled;
#[cfg(test)]
mod scaled_tests;
mod storage;
#[cfg(test)]
mod tests;

pub use scaled::{
    round_scaled_field, staggered_scale, uniform_scale, ScaledCompression, ScaledLinkError,
    ScaledLinkFormat, SCALED_TOLERANCE,
};
pub use storage::LinkStorage;

use crate::format::scalar::{unit_roundoff_of, FloatWidth};
use crate::format::FormatError;
use crate::math::ColourMatrix;
use crate::Real;
use std::f64::consts::PI;
use std::fmt;

/// Real numbers in an uncompressed link.
pub const LINK_REALS: usize = 18;

/// Which reals of an SU(3) link are stored (QUDA's "reconstruct" 18, 12, 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// All 18 reals, row-major, (re, im) per element; no reconstruction, exact for any
    /// matrix.
    Full,
    /// Rows 0 and 1 of V = s·L (12 reals, row-major, (re, im)); row 2 is rebuilt as
    ///
    /// ```text
    /// v_2k = conj(a_i·b_j − a_j·b_i),   (i, j, k) = (1, 2, 0), (2, 0, 1), (0, 1, 2)
    /// ```
    ///
    /// with a, b rows 0 and 1 (exact for SU(3): orthonormal rows, phase fixed by det = 1).
    Recon12,
    /// QUDA's reconstruct-8 parametrisation of V = s·L, angles in units of π:
    ///
    /// ```text
    /// stored: [ arg(v00)/π, arg(v20)/π, Re v01, Im v01, Re v02, Im v02, Re v10, Im v10 ]
    ///         arg = atan2(Im, Re) ∈ [−π, π], atan2(0, 0) = 0: every stored real in [−1, 1]
    /// rebuilt, in this order:
    ///   r²  = Re v01² + Im v01² + Re v02² + Im v02²          (= 1 − |v00|² = |v10|² + |v20|²)
    ///   v00 = (cos πt0, sin πt0) · √max(0, 1 − r²)
    ///   v20 = (cos πt2, sin πt2) · √max(0, r² − (Re v10² + Im v10²))
    ///   if r² = 0:  v11 = conj v00, v12 = v21 = 0, v22 = 1
    ///   else: inv = 1/r², A = conj(v00)·v10, B = conj(v00)·v20,
    ///     v11 = −(conj(v20)·conj(v02) + A·v01)·inv,   v12 = (conj(v20)·conj(v01) − A·v02)·inv,
    ///     v21 =  (conj(v10)·conj(v02) − B·v01)·inv,   v22 = −(conj(v10)·conj(v01) + B·v02)·inv
    /// ```
    ///
    /// The block formulas follow from unitarity of rows and columns and det V = 1.
    /// |v20|² is taken as r² − |v10|² rather than QUDA's 1 − |v00|² − |v10|², which
    /// cancels when |v00| ≈ 1. The r² = 0 branch (first row and column do not determine
    /// the block) is exact for the identity and diag(e^{iα}, e^{−iα}, 1) only.
    Recon8,
}

impl Compression {
    /// Every compression.
    pub const ALL: [Self; 3] = [Self::Full, Self::Recon12, Self::Recon8];

    /// Stored reals: 18, 12, 8.
    pub const fn reals(self) -> usize {
        match self {
            Self::Full => 18,
            Self::Recon12 => 12,
            Self::Recon8 => 8,
        }
    }

    /// Short name: "recon18", "recon12", "recon8".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Full => "recon18",
            Self::Recon12 => "recon12",
            Self::Recon8 => "recon8",
        }
    }
}

/// The ±1 a staggered link carries (its staggered phase and boundary sign): L = s·V.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LinkSign {
    /// s = +1.
    #[default]
    Plus,
    /// s = −1.
    Minus,
}

impl LinkSign {
    /// s as a real: +1 or −1.
    pub fn value<T: Real>(self) -> T {
        match self {
            Self::Plus => T::one(),
            Self::Minus => -T::one(),
        }
    }
}

/// What [`LinkFormat::encode_checked`] verifies before storing a compressed link
/// (`Full` is never checked: it is exact for any matrix).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SuCheck {
    /// Nothing: the caller guarantees V = s·L ∈ SU(3). A non-SU(3) link then decodes to a
    /// different matrix, silently.
    Skip,
    /// V ∈ SU(3) to a tolerance: ‖V†V − 1‖_F ≤ tol and |det V − 1| ≤ tol, computed in f64.
    /// Catches U(3) links, wrong signs, non-unitary matrices.
    Su3(f64),
    /// The actual round trip in the compute type: max over the 18 reals of
    /// |decode(encode(L)) − L| ≤ tol. Also catches recon-8 links too close to degenerate.
    RoundTrip(f64),
}

impl SuCheck {
    /// Tolerance of the default check, `Su3(1e-5)`: far above the ~1e−7 deviation of links
    /// stored in f32 files, far below the O(1) failure of a U(3) link or a wrong sign.
    pub const DEFAULT_TOLERANCE: f64 = 1e-5;
}

impl Default for SuCheck {
    fn default() -> Self {
        Self::Su3(Self::DEFAULT_TOLERANCE)
    }
}

/// A gauge-link storage format: a [`LinkStorage`] for each stored real and a
/// [`Compression`].
///
/// Round-trip bound ([`Self::error_bound`]), per real component, for an SU(3) link:
/// `Full`: the element bound e of the storage (for |v| ≤ 1: f64 0, f32 2^−25,
/// f16 2^−12, bf16 2^−9, fixed16 1/65534, fixed8 1/254, plus compute rounding);
/// `Recon12`: about 4e on row 2; `Recon8`: e amplified by up to ~1/r and √, unbounded
/// near degenerate links (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkFormat {
    /// How each stored real is held.
    pub storage: LinkStorage,
    /// Which reals are stored.
    pub compression: Compression,
}

impl LinkFormat {
    /// The format `storage` with `compression`.
    pub const fn new(storage: LinkStorage, compression: Compression) -> Self {
        Self {
            storage,
            compression,
        }
    }

    /// Name such as "f32/recon12".
    pub fn name(&self) -> String {
        format!("{}/{}", self.storage.name(), self.compression.name())
    }

    /// Bytes of one link: reals × bytes per real (e.g. f32 recon12: 48).
    pub const fn bytes_per_link(&self) -> usize {
        self.compression.reals() * self.storage.bytes_per_real()
    }

    /// Encodes `link` (L = s·V) with the default check ([`SuCheck::default`]).
    pub fn encode<T: Real>(
        &self,
        link: &ColourMatrix<T>,
        sign: LinkSign,
        out: &mut [u8],
    ) -> Result<(), FormatError> {
        self.encode_checked(link, sign, SuCheck::default(), out)
    }

    /// Encodes `link` into `out` ([`Self::bytes_per_link`] bytes).
    ///
    /// Reals are computed in f64 from the link (exactly, except the recon-8 angles
    /// atan2(Im, Re)/π) and rounded into the storage. Errors: [`FormatError::BufferSize`];
    /// [`FormatError::NonFinite`] for NaN/±∞ (component = index among the 18 reals);
    /// [`FormatError::OutOfRange`] for a fixed-point real beyond ±(Q + ½)/Q
    /// (component = index among the stored reals); [`FormatError::NotSpecialUnitary`] or
    /// [`FormatError::Reconstruction`] when `check` fails.
    pub fn encode_checked<T: Real>(
        &self,
        link: &ColourMatrix<T>,
        sign: LinkSign,
        check: SuCheck,
        out: &mut [u8],
    ) -> Result<(), FormatError> {
        self.check_len(out.len())?;
        let format = || self.name();
        let l = link.cast::<f64>();
        if let Some((component, &value)) = l
            .to_reals()
            .iter()
            .enumerate()
            .find(|(_, x)| !x.is_finite())
        {
            return Err(FormatError::NonFinite {
                format: format(),
                component,
                value,
            });
        }
        let v = l.scale(sign.value());
        if let (SuCheck::Su3(tolerance), true) = (check, self.compression != Compression::Full) {
            let unitarity = v.unitarity_deviation();
            let det_error = (v.determinant() - num_complex::Complex::new(1.0, 0.0)).norm();
            if !(unitarity <= tolerance && det_error <= tolerance) {
                return Err(FormatError::NotSpecialUnitary {
                    format: format(),
                    unitarity,
                    det_error,
                    tolerance,
                });
            }
        }
        let reals: Vec<f64> = match self.compression {
            Compression::Full => l.to_reals().to_vec(),
            Compression::Recon12 => recon::params_12(&v).to_vec(),
            Compression::Recon8 => recon::params_8(&v).to_vec(),
        };
        let width = self.storage.bytes_per_real();
        for (component, (&x, chunk)) in reals.iter().zip(out.chunks_exact_mut(width)).enumerate() {
            self.storage.write(x, chunk, component, &format)?;
        }
        if let (SuCheck::RoundTrip(tolerance), true) =
            (check, self.compression != Compression::Full)
        {
            let back = self.decode::<T>(out, sign)?;
            let found = (back - *link).max_abs_component().to_f64();
            if found.is_nan() || found > tolerance {
                return Err(FormatError::Reconstruction {
                    format: format(),
                    found,
                    tolerance,
                });
            }
        }
        Ok(())
    }

    /// Decodes a link from `bytes` ([`Self::bytes_per_link`] bytes), computing in `T`;
    /// compressed formats return s·V̂ for the given sign. Errors:
    /// [`FormatError::BufferSize`]; [`FormatError::Corrupt`] for the fixed-point integer
    /// −2^(b−1).
    pub fn decode<T: Real>(
        &self,
        bytes: &[u8],
        sign: LinkSign,
    ) -> Result<ColourMatrix<T>, FormatError> {
        self.check_len(bytes.len())?;
        let format = || self.name();
        let mut p = [T::zero(); LINK_REALS];
        let width = self.storage.bytes_per_real();
        for (component, (x, chunk)) in p.iter_mut().zip(bytes.chunks_exact(width)).enumerate() {
            *x = self.storage.read(chunk, component, &format)?;
        }
        Ok(match self.compression {
            Compression::Full => ColourMatrix::from_reals(&p),
            Compression::Recon12 => recon::reconstruct_12(&p).scale(sign.value()),
            Compression::Recon8 => recon::reconstruct_8(&p).scale(sign.value()),
        })
    }

    /// Bound on every real component of |decode(encode(L)) − L_ref| (computing in `T`), where `link` is
    /// the reference L_ref = s·V (V ∈ SU(3), given in f64) and L is L_ref rounded to `T`
    /// and encoded with the right sign.
    ///
    /// Each stored real x of the reference carries e(|x|) = [`LinkStorage::real_bound`]
    /// plus its rounding into `T` (relative, ≤ u_T/2; 0 for f64) plus, for the
    /// compressions, dev = ‖L†L − 1‖_F + |det(s·L) − 1|, the reference's own distance
    /// from SU(3) (so that an f64 link that is SU(3) only to rounding obeys the bound).
    ///
    /// * `Full`: the largest e(|x|) over the 18 reals;
    /// * `Recon12`: e on rows 0 and 1, about 4e on row 2 (cross-product propagation);
    /// * `Recon8`: the step-by-step propagation through the square roots, the angles and
    ///   the division by r² = 1 − |v00|²; `f64::INFINITY` for near-degenerate links (see
    ///   the module docs). The angles carry [`LinkStorage::element_bound`] (not a value
    ///   of `T`), π·that in radians, plus the atan2 and sin/cos roundings.
    pub fn error_bound<T: Real>(&self, link: &ColourMatrix<f64>) -> f64 {
        let u = unit_roundoff_of::<T>();
        let input = FloatWidth::of::<T>();
        let storage = self.storage;
        let det = link.determinant();
        let dev = link.unitarity_deviation() + (det.re.abs() - 1.0).hypot(det.im);
        match self.compression {
            Compression::Full => bound::full(link, &|x| {
                storage.real_bound::<T>(x) + input.rounding_bound(x)
            }),
            Compression::Recon12 => {
                let e = |x: f64| storage.real_bound::<T>(x) + input.rounding_bound(x) + dev;
                bound::recon12(link, &e, u, dev)
            }
            Compression::Recon8 => {
                let e = |x: f64| storage.real_bound::<T>(x) + input.rounding_bound(x) + dev;
                let angle = storage.element_bound::<T>(false) + 4.0 * f64::EPSILON;
                let d_theta = PI * angle + 1.0001 * (u + dev) + (4.0 + PI) * u;
                bound::recon8(link, &e, d_theta, u)
            }
        }
    }

    fn check_len(&self, found: usize) -> Result<(), FormatError> {
        let expected = self.bytes_per_link();
        if found == expected {
            Ok(())
        } else {
            Err(FormatError::BufferSize {
                format: self.name(),
                reals: LINK_REALS,
                expected,
                found,
            })
        }
    }
}

impl fmt::Display for LinkFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
