//! Compressed long links of improved staggered fermions: links that are one uniform real
//! multiple of U(3) matrices.
//!
//! Asqtad long links are L = c·U U U (U ∈ SU(3), c = −1/(24 u0²)), HISQ long links
//! L = c·W W W with W ∈ U(3); the staggered phases and the antiperiodic time sign (±1,
//! MILC convention) are folded in. So every link is
//!
//! ```text
//! L = c·W,   W = e^{iφ}·V ∈ U(3),   V ∈ SU(3),   c real, the same for the whole field
//! ```
//!
//! (the signs of c and of the staggered phase are phases of W: −1 = e^{iπ}). The formats
//! store the unit-scale W = L/c, so that every stored real lies in [−1, 1] (fixed point
//! fits), and the decoder multiplies by the per-field scale c (a kernel parameter on the
//! device). With ψ = arg det W = 3φ (mod 2π), since det W = e^{3iφ}·det V = e^{3iφ}:
//!
//! * **recon 13**: rows 0 and 1 of W (12 reals) and t = ψ/π. Row 2 is
//!   `w2 = e^{iπt}·conj(w0 × w1)`, because w0 × w1 = e^{2iφ}·(v0 × v1) = e^{2iφ}·conj(v2)
//!   for V ∈ SU(3), so e^{3iφ}·conj(w0 × w1) = e^{iφ}·v2 = w2. In the rows r_k = c·w_k of
//!   L itself this reads r2 = e^{iπt}·conj(r0 × r1)/c with |c| = |r0|.
//! * **recon 9**: V = e^{−iψ/3}·W (det V = e^{−iψ}·det W = 1 exactly) in QUDA's recon-8
//!   parametrisation ([`Compression::Recon8`](super::Compression::Recon8), 8 reals) and
//!   t = ψ/π; W = e^{iπt/3}·V̂. The cube root's branch does not matter: any φ with
//!   e^{3iφ} = det W gives an SU(3) V and the same W.
//!
//! Decoding, in the compute type T and this order: rebuild W from the stored reals
//! (recon 13: row 2 = (cos πt, sin πt)·conj(w0 × w1), the cross product as in
//! [`Compression::Recon12`](super::Compression::Recon12); recon 9: V̂ by the recon-8
//! reconstruction, (cos(πt/3), sin(πt/3))·V̂; recon 12 + sign: the recon-12
//! reconstruction), then L̂ = c·Ŵ element by element (c·s for recon 12 + sign).
//!
//! * **recon 12 + sign**: asqtad's long links are more than c·U(3): with SU(3) thin links
//!   W = L/c = s·V, V ∈ SU(3), where s = ±1 is the link's staggered sign, known from its
//!   coordinates ([`crate::lattice::staggered_link_sign`] with n = 3: η_μ(x) and the
//!   antiperiodic time crossings), and c is a real of either sign (asqtad's Naik
//!   coefficient −1/(24 u0²)). So rows 0 and 1 of V (12 reals) are enough, as QUDA's
//!   recon 12 for long links, which recomputes the phase in the kernel:
//!   `L = (c·s)·V, v2 = conj(v0 × v1)`. The format itself sees one real per link, its
//!   *link scale* c·s ([`ScaledCompression::link_scale`]): encode and decode take it in
//!   place of c, and W = L/(c·s) must be SU(3). HISQ's long links (det W a general phase)
//!   need recon 13 or 9.
//!
//! Recon 9 inherits recon 8's ill-conditioning for V near diagonal (see the module docs
//! of [`super`]); products of three links are far from diagonal in practice.

use super::recon::{params_12, params_8, reconstruct_12, reconstruct_8};
use super::LinkStorage;
use crate::field::GaugeField;
use crate::format::FormatError;
use crate::lattice::{staggered_link_sign, Coords, Lattice};
use crate::math::ColourMatrix;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;
use std::fmt;
use thiserror::Error;

/// How a link L = c·W (W ∈ U(3)) is compressed; see the module docs for the identities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaledCompression {
    /// Rows 0, 1 of W and arg(det W)/π: 13 reals.
    Recon13,
    /// Rows 0, 1 of V = L/(c·s) ∈ SU(3), s the link's staggered sign (from its
    /// coordinates, not stored): 12 reals.
    Recon12,
    /// Recon 8 of V = e^{−i arg(det W)/3}·W and arg(det W)/π: 9 reals.
    Recon9,
}

impl ScaledCompression {
    /// Every compression.
    pub const ALL: [Self; 3] = [Self::Recon13, Self::Recon12, Self::Recon9];

    /// Stored reals: 13, 12 or 9.
    pub const fn reals(self) -> usize {
        match self {
            Self::Recon13 => 13,
            Self::Recon12 => 12,
            Self::Recon9 => 9,
        }
    }

    /// Whether the last stored real is the phase t = arg(det W)/π (recon 13, 9); recon
    /// 12 + sign stores none, its sign comes from the coordinates.
    pub const fn stores_phase(self) -> bool {
        !matches!(self, Self::Recon12)
    }

    /// The reals of the link record proper, the phase not counted: 12, 12, 8.
    pub const fn record_reals(self) -> usize {
        match self {
            Self::Recon13 | Self::Recon12 => 12,
            Self::Recon9 => 8,
        }
    }

    /// Short name: "recon13", "recon12+sign", "recon9".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Recon13 => "recon13",
            Self::Recon12 => "recon12+sign",
            Self::Recon9 => "recon9",
        }
    }

    /// The scale that encodes and decodes link μ at `coords` of a field with scale c
    /// (`field_scale`) whose links are `steps` sites long: c·s for recon 12 + sign (s =
    /// [`staggered_link_sign`]), c itself for recon 13 and 9.
    pub fn link_scale(
        self,
        field_scale: f64,
        lattice: &Lattice,
        coords: Coords,
        mu: usize,
        steps: usize,
    ) -> f64 {
        match self {
            Self::Recon12 => {
                field_scale * f64::from(staggered_link_sign(lattice, coords, mu, steps))
            }
            Self::Recon13 | Self::Recon9 => field_scale,
        }
    }

    /// The scale c of the field `u` of `steps`-site links in this compression, checked
    /// on every link: [`uniform_scale`] (c > 0) for recon 13 and 9,
    /// [`staggered_scale`] (c of either sign) for recon 12 + sign.
    pub fn field_scale<T: Real>(
        self,
        u: &GaugeField<T>,
        steps: usize,
        tolerance: f64,
    ) -> Result<f64, ScaledLinkError> {
        match self {
            Self::Recon12 => staggered_scale(u, steps, tolerance),
            Self::Recon13 | Self::Recon9 => uniform_scale(u, tolerance),
        }
    }
}

/// A storage for each real and a [`ScaledCompression`]: the format of a field of links
/// L = c·W, W ∈ U(3), with the uniform scale c given separately to encode and decode.
/// A record is the stored reals one after the other (`bytes_per_link = reals × bytes per
/// real`), the phase t = arg(det W)/π last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScaledLinkFormat {
    /// How each stored real is held.
    pub storage: LinkStorage,
    /// Which reals are stored.
    pub compression: ScaledCompression,
}

impl ScaledLinkFormat {
    /// The format `storage` with `compression`.
    pub const fn new(storage: LinkStorage, compression: ScaledCompression) -> Self {
        Self {
            storage,
            compression,
        }
    }

    /// Name such as "f32/recon13".
    pub fn name(&self) -> String {
        format!("{}/{}", self.storage.name(), self.compression.name())
    }

    /// Bytes of one link: reals × bytes per real (f32 recon 13: 52, f32 recon 12 +
    /// sign: 48, f32 recon 9: 36).
    pub const fn bytes_per_link(&self) -> usize {
        self.compression.reals() * self.storage.bytes_per_real()
    }

    /// The stored reals of `link` = c·W (in f64, before storage rounding), `scale` = c
    /// (for recon 12 + sign the link scale c·s, and W must be SU(3)). W is not checked
    /// (see [`ScaledCompression::field_scale`]); a W outside U(3) (recon 12 + sign:
    /// outside SU(3)) decodes to another matrix.
    pub fn params(&self, link: &ColourMatrix<f64>, scale: f64) -> Vec<f64> {
        let w = link.scale(1.0 / scale);
        let psi = w.determinant().arg();
        let t = psi / std::f64::consts::PI;
        let mut p = match self.compression {
            ScaledCompression::Recon13 | ScaledCompression::Recon12 => params_12(&w).to_vec(),
            ScaledCompression::Recon9 => {
                let v = w.scale_complex(Complex::from_polar(1.0, -psi / 3.0));
                params_8(&v).to_vec()
            }
        };
        if self.compression.stores_phase() {
            p.push(t);
        }
        p
    }

    /// Encodes `link` = c·W into `out` ([`Self::bytes_per_link`] bytes), `scale` = c
    /// (the link scale c·s for recon 12 + sign). Errors:
    /// [`FormatError::BufferSize`], [`FormatError::NonFinite`] (component among the 18
    /// reals of the link, or 18 for a scale that is zero or not finite),
    /// [`FormatError::OutOfRange`] for a fixed-point real beyond the format's range.
    pub fn encode<T: Real>(
        &self,
        link: &ColourMatrix<T>,
        scale: f64,
        out: &mut [u8],
    ) -> Result<(), FormatError> {
        self.check_len(out.len())?;
        let format = || self.name();
        let l = link.cast::<f64>();
        let reals = l.to_reals();
        if let Some((component, &value)) = reals.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(FormatError::NonFinite {
                format: format(),
                component,
                value,
            });
        }
        if !scale.is_finite() || scale == 0.0 {
            return Err(FormatError::NonFinite {
                format: format(),
                component: reals.len(),
                value: scale,
            });
        }
        let width = self.storage.bytes_per_real();
        for (component, (x, chunk)) in self
            .params(&l, scale)
            .into_iter()
            .zip(out.chunks_exact_mut(width))
            .enumerate()
        {
            self.storage.write(x, chunk, component, &format)?;
        }
        Ok(())
    }

    /// Decodes L̂ = c·Ŵ from `bytes`, computing in `T` in the order of the module docs
    /// (`scale`: the link scale c·s for recon 12 + sign). Errors:
    /// [`FormatError::BufferSize`]; [`FormatError::Corrupt`] for the fixed-point integer
    /// −2^(b−1).
    pub fn decode<T: Real>(&self, bytes: &[u8], scale: T) -> Result<ColourMatrix<T>, FormatError> {
        self.check_len(bytes.len())?;
        let format = || self.name();
        let width = self.storage.bytes_per_real();
        let mut p = Vec::with_capacity(self.compression.reals());
        for (component, chunk) in bytes.chunks_exact(width).enumerate() {
            p.push(self.storage.read::<T>(chunk, component, &format)?);
        }
        let t = p[p.len() - 1];
        let w = match self.compression {
            ScaledCompression::Recon12 => reconstruct_12(&p[..12]),
            ScaledCompression::Recon13 => {
                let mut w = reconstruct_12(&p[..12]);
                let (s, c) = (T::PI() * t).sin_cos();
                let phase = Complex::new(c, s);
                w.0[2] = w.0[2].map(|z| phase * z);
                w
            }
            ScaledCompression::Recon9 => {
                let three = T::from_f64(3.0);
                let (s, c) = (T::PI() * t / three).sin_cos();
                reconstruct_8(&p[..8]).scale_complex(Complex::new(c, s))
            }
        };
        Ok(w.scale(scale))
    }

    fn check_len(&self, found: usize) -> Result<(), FormatError> {
        let expected = self.bytes_per_link();
        if found == expected {
            Ok(())
        } else {
            Err(FormatError::BufferSize {
                format: self.name(),
                reals: super::LINK_REALS,
                expected,
                found,
            })
        }
    }
}

impl fmt::Display for ScaledLinkFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What goes wrong when a gauge field is treated as uniformly scaled U(3) links.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ScaledLinkError {
    /// A link is not the field's scale times a U(3) matrix: ‖W†W − 1‖_F (W = L/c) exceeds
    /// the tolerance.
    #[error(
        "link U_{mu} at site {coords:?} (checkerboard index {site}) is not {scale:e} × a U(3) \
         matrix: ‖W†W − 1‖_F = {found:e} for W = L/c, expected ≤ {tolerance:e}"
    )]
    NotScaledUnitary {
        /// Checkerboard index of the site.
        site: usize,
        /// Its coordinates (x, y, z, t).
        coords: Coords,
        /// Direction of the link.
        mu: usize,
        /// The field's scale c.
        scale: f64,
        /// ‖W†W − 1‖_F found.
        found: f64,
        /// Tolerance.
        tolerance: f64,
    },
    /// A link is not c·s·V with V ∈ SU(3) and s its staggered sign (recon 12 + sign):
    /// s·det(L/|c|) differs from σ = sign(c), the value the field's first link gives.
    #[error(
        "link U_{mu} at site {coords:?} (checkerboard index {site}) is not c·s·V with V ∈ SU(3) \
         and s = {sign} its staggered sign ({steps}-site link; MILC phases, antiperiodic time): \
         s·det(L/|c|) = {found} with |c| = {scale:e}, expected {expected} (the field's first \
         link) to {tolerance:e}; links whose determinant is a general phase (HISQ) need \
         recon 13 or 9"
    )]
    NotStaggeredSu3 {
        /// Checkerboard index of the site.
        site: usize,
        /// Its coordinates (x, y, z, t).
        coords: Coords,
        /// Direction of the link.
        mu: usize,
        /// Its staggered sign s.
        sign: i32,
        /// Length of the links in lattice steps.
        steps: usize,
        /// |c|.
        scale: f64,
        /// s·det(L/|c|) found.
        found: Complex<f64>,
        /// σ = ±1 expected.
        expected: f64,
        /// Tolerance on |found − expected|.
        tolerance: f64,
    },
    /// The field's scale is zero or not finite (an empty or zero field, or non-finite links).
    #[error("the uniform scale of the links is {found}, expected a finite non-zero real")]
    BadScale {
        /// The scale found or given.
        found: f64,
    },
    /// Encoding a link failed.
    #[error("link U_{mu} at site {coords:?} (checkerboard index {site}): {source}")]
    Format {
        /// Checkerboard index of the site.
        site: usize,
        /// Its coordinates.
        coords: Coords,
        /// Direction of the link.
        mu: usize,
        /// The format's error.
        source: FormatError,
    },
}

/// Default tolerance of [`uniform_scale`] on ‖W†W − 1‖_F: far above the ~1e−7 relative
/// rounding of links stored in f32 files, far below the O(1) deviation of a smeared
/// (non-unitary) field such as fat links.
pub const SCALED_TOLERANCE: f64 = 1e-5;

/// The uniform scale c > 0 of a field of links L = c·W, W ∈ U(3), checked on every link.
///
/// c = the median over links of |det L|^{1/3} (|det L| = c³ for every link; the median
/// ignores a minority of bad links, which are then named); every link must satisfy
/// ‖W†W − 1‖_F ≤ `tolerance` for W = L/c, else [`ScaledLinkError::NotScaledUnitary`]
/// names the first failing link in checkerboard order (site, direction, deviation). The
/// sign of c is a phase of W, so c is returned positive.
pub fn uniform_scale<T: Real>(u: &GaugeField<T>, tolerance: f64) -> Result<f64, ScaledLinkError> {
    let links = u.links();
    let mut roots: Vec<f64> = links
        .par_iter()
        .map(|l| l.cast::<f64>().determinant().norm().cbrt())
        .collect();
    let mid = roots.len() / 2;
    let scale = match roots.is_empty() {
        true => 0.0,
        false => *roots.select_nth_unstable_by(mid, f64::total_cmp).1,
    };
    if !scale.is_finite() || scale == 0.0 {
        return Err(ScaledLinkError::BadScale { found: scale });
    }
    let bad = links.par_iter().enumerate().find_first(|(_, l)| {
        let d = l.cast::<f64>().scale(1.0 / scale).unitarity_deviation();
        d.is_nan() || d > tolerance
    });
    if let Some((k, l)) = bad {
        let (site, mu) = (k / 4, k % 4);
        return Err(ScaledLinkError::NotScaledUnitary {
            site,
            coords: u.lattice().coords_of_cb(site),
            mu,
            scale,
            found: l.cast::<f64>().scale(1.0 / scale).unitarity_deviation(),
            tolerance,
        });
    }
    Ok(scale)
}

/// The scale c of a field of links L = c·s·V — V ∈ SU(3), s = ±1 the staggered sign of
/// each `steps`-site link ([`staggered_link_sign`]), c a real of either sign — checked on
/// every link (recon 12 + sign).
///
/// |c| = [`uniform_scale`] (every L/|c| unitary to `tolerance`); since det L = c³·s,
/// every link's s·det(L/|c|) must then be σ = sign(c), the value of the field's first
/// link, to `tolerance`, else [`ScaledLinkError::NotStaggeredSu3`] names the first link
/// that differs (a U(3) field such as HISQ's long links, or phases of another convention).
/// Returns c = σ·|c|.
pub fn staggered_scale<T: Real>(
    u: &GaugeField<T>,
    steps: usize,
    tolerance: f64,
) -> Result<f64, ScaledLinkError> {
    let scale = uniform_scale(u, tolerance)?;
    let lattice = *u.lattice();
    let signed_det = |k: usize, l: &ColourMatrix<T>| {
        let sign = staggered_link_sign(&lattice, lattice.coords_of_cb(k / 4), k % 4, steps);
        (
            sign,
            l.cast::<f64>().scale(1.0 / scale).determinant() * f64::from(sign),
        )
    };
    let links = u.links();
    let Some(first) = links.first() else {
        return Err(ScaledLinkError::BadScale { found: scale });
    };
    let sigma = if signed_det(0, first).1.re < 0.0 {
        -1.0
    } else {
        1.0
    };
    let bad = links.par_iter().enumerate().find_first(|(k, l)| {
        let d = (signed_det(*k, l).1 - sigma).norm();
        d.is_nan() || d > tolerance
    });
    if let Some((k, l)) = bad {
        let (sign, found) = signed_det(k, l);
        return Err(ScaledLinkError::NotStaggeredSu3 {
            site: k / 4,
            coords: lattice.coords_of_cb(k / 4),
            mu: k % 4,
            sign,
            steps,
            scale,
            found,
            expected: sigma,
            tolerance,
        });
    }
    Ok(sigma * scale)
}

/// Rounds every link of `u` (links of `steps` sites) through `format` with the field's
/// scale `scale` (each link with its [`ScaledCompression::link_scale`]):
/// L ↦ decode(encode(L)), what a kernel reading the field in `format` sees.
pub fn round_scaled_field<T: Real>(
    format: ScaledLinkFormat,
    u: &mut GaugeField<T>,
    scale: f64,
    steps: usize,
) -> Result<(), ScaledLinkError> {
    if !scale.is_finite() || scale == 0.0 {
        return Err(ScaledLinkError::BadScale { found: scale });
    }
    let lattice = *u.lattice();
    u.links_mut()
        .par_iter_mut()
        .enumerate()
        .try_for_each(|(k, link)| {
            let (coords, mu) = (lattice.coords_of_cb(k / 4), k % 4);
            let c = format
                .compression
                .link_scale(scale, &lattice, coords, mu, steps);
            let mut bytes = vec![0u8; format.bytes_per_link()];
            format
                .encode(link, c, &mut bytes)
                .and_then(|()| format.decode(&bytes, T::from_f64(c)))
                .map(|l| *link = l)
                .map_err(|source| ScaledLinkError::Format {
                    site: k / 4,
                    coords,
                    mu,
                    source,
                })
        })
}
