//! Link payloads in lexicographic site order (MILC, NERSC, ILDG, SciDAC), and the checks
//! every reader applies to the links it has decoded.
//!
//! A lexicographic payload holds, for each site x (x fastest, then y, z, t) and each
//! direction μ = x, y, z, t, one link U_μ(x) as `rows` rows of 3 complex numbers, each
//! `[re, im]`, row-major. With two stored rows (NERSC `4D_SU3_GAUGE`) the third row of
//! an SU(3) matrix is reconstructed as `u₂ = (u₀ × u₁)*`, i.e.
//! `u₂ⱼ = conj(ε_jkl u₀ₖ u₁ₗ)`.

use super::bytes::{decode_real, encode_real, ByteOrder, Precision};
use super::IoError;
use crate::field::GaugeField;
use crate::lattice::{Coords, Lattice};
use crate::math::{ColourMatrix, ColourVector};
use crate::Real;
use num_complex::Complex;
use std::path::Path;

/// The stored layout of one link in a lexicographic payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkCodec {
    pub precision: Precision,
    pub order: ByteOrder,
    /// Stored rows per link: 3 (full matrix) or 2 (third row reconstructed).
    pub rows: usize,
}

impl LinkCodec {
    /// Bytes of one stored link: rows × 3 × 2 reals.
    pub fn link_bytes(&self) -> usize {
        self.rows * 6 * self.precision.bytes()
    }

    /// Bytes of one stored site (4 links).
    pub fn site_bytes(&self) -> usize {
        4 * self.link_bytes()
    }

    /// Bytes of the payload of a whole lattice, V × site bytes (no overflow: V < 2³¹ and
    /// a site holds at most 288 bytes).
    pub fn payload_bytes(&self, lattice: &Lattice) -> u64 {
        lattice.volume() as u64 * self.site_bytes() as u64
    }

    /// Decodes a payload of exactly [`Self::payload_bytes`] bytes into a field.
    /// Values are not checked here: see [`verify_links`].
    pub fn decode(
        &self,
        payload: &[u8],
        lattice: Lattice,
        path: &Path,
        what: &str,
    ) -> Result<GaugeField<f64>, IoError> {
        let expected = self.payload_bytes(&lattice);
        if payload.len() as u64 != expected {
            return Err(IoError::SizeMismatch {
                path: path.to_path_buf(),
                what: what.to_string(),
                dims: lattice.dims(),
                expected,
                found: payload.len() as u64,
            });
        }
        let mut field = GaugeField::unit(lattice);
        let bytes = self.precision.bytes();
        for (lex, site) in payload.chunks_exact(self.site_bytes()).enumerate() {
            let cb = lattice.lex_to_cb(lex);
            for (mu, link) in site.chunks_exact(self.link_bytes()).enumerate() {
                let mut r = [0.0f64; 18];
                for (x, chunk) in r.iter_mut().zip(link.chunks_exact(bytes)) {
                    *x = decode_real(chunk, self.precision, self.order);
                }
                let mut u = ColourMatrix::from_reals(&r);
                if self.rows == 2 {
                    u.0[2] = third_row(&u);
                }
                *field.link_mut(cb, mu) = u;
            }
        }
        Ok(field)
    }

    /// Encodes a field (any precision) in lexicographic order.
    pub fn encode<T: Real>(&self, field: &GaugeField<T>) -> Vec<u8> {
        let lattice = field.lattice();
        let mut out = Vec::with_capacity(lattice.volume() * self.site_bytes());
        for lex in 0..lattice.volume() {
            let cb = lattice.lex_to_cb(lex);
            for mu in 0..4 {
                let r = field.link(cb, mu).to_reals();
                for &x in &r[..6 * self.rows] {
                    encode_real(x.to_f64(), self.precision, self.order, &mut out);
                }
            }
        }
        out
    }
}

/// The third row of an SU(3) matrix from its first two: `u₂ = (u₀ × u₁)*`.
pub(crate) fn third_row(u: &ColourMatrix<f64>) -> [Complex<f64>; 3] {
    ColourVector(u.0[0]).cross(&ColourVector(u.0[1])).conj().0
}

/// What [`verify_links`] enforces besides finiteness.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum UnitarityLimit {
    /// No unitarity requirement.
    Off,
    /// ‖U†U − 1‖_F ≤ the tolerance for every link.
    Within(f64),
}

/// Checks every link, in lexicographic order, for NaN/infinity and (unless `limit` is
/// `Off`) for ‖U†U − 1‖_F ≤ tolerance; returns the largest deviation found (the readers
/// call it through [`super::check_links`]).
#[cfg(test)]
pub(crate) fn verify_links(
    field: &GaugeField<f64>,
    limit: UnitarityLimit,
    path: &Path,
) -> Result<f64, IoError> {
    verify_links_except(field, limit, path, |_, _| false)
}

/// [`verify_links`] with the unitarity requirement lifted for the links U_μ(x) with
/// `exempt(x, μ)` (they must still be finite; their deviation is not counted in the
/// maximum).
pub(crate) fn verify_links_except(
    field: &GaugeField<f64>,
    limit: UnitarityLimit,
    path: &Path,
    exempt: impl Fn(Coords, usize) -> bool,
) -> Result<f64, IoError> {
    let lattice = field.lattice();
    let mut max_deviation = 0.0f64;
    for lex in 0..lattice.volume() {
        let coords: Coords = lattice.coords_of_lex(lex);
        let cb = lattice.lex_to_cb(lex);
        for mu in 0..4 {
            let u = field.link(cb, mu);
            let r = u.to_reals();
            if let Some(component) = r.iter().position(|x| !x.is_finite()) {
                return Err(IoError::NonFinite {
                    path: path.to_path_buf(),
                    site: lex,
                    coords,
                    mu,
                    component,
                    value: r[component],
                });
            }
            if exempt(coords, mu) {
                continue;
            }
            let deviation = u.unitarity_deviation();
            max_deviation = max_deviation.max(deviation);
            if let UnitarityLimit::Within(tolerance) = limit {
                // A NaN deviation (from overflowing products) fails too.
                if deviation.is_nan() || deviation > tolerance {
                    return Err(IoError::NonUnitary {
                        path: path.to_path_buf(),
                        site: lex,
                        coords,
                        mu,
                        deviation,
                        tolerance,
                    });
                }
            }
        }
    }
    Ok(max_deviation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_su3() -> ColourMatrix<f64> {
        // A rotation by θ in the (0,1) plane times a diagonal phase diag(e^{iφ}, e^{-iφ}, 1):
        // unitary with determinant 1.
        let (c, s) = (0.6f64, 0.8f64);
        let p = Complex::from_polar(1.0, 0.3);
        let rot = ColourMatrix::from_fn(|i, j| match (i, j) {
            (0, 0) | (1, 1) => Complex::new(c, 0.0),
            (0, 1) => Complex::new(-s, 0.0),
            (1, 0) => Complex::new(s, 0.0),
            (2, 2) => Complex::new(1.0, 0.0),
            _ => Complex::new(0.0, 0.0),
        });
        let ph = ColourMatrix::from_fn(|i, j| match (i, j) {
            (0, 0) => p,
            (1, 1) => p.conj(),
            (2, 2) => Complex::new(1.0, 0.0),
            _ => Complex::new(0.0, 0.0),
        });
        rot * ph
    }

    #[test]
    fn third_row_reconstructs_su3() {
        let u = sample_su3();
        let r = third_row(&u);
        for (a, b) in r.iter().zip(&u.0[2]) {
            assert!((a - b).norm() < 1e-15, "{a} vs {b}");
        }
        // Identity: (e0 × e1)* = e2.
        let one = ColourMatrix::<f64>::identity();
        assert_eq!(third_row(&one), one.0[2]);
    }

    #[test]
    fn payload_is_lexicographic_x_fastest_mu_inner() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        // Tag each link by (lex, μ) in its (0,0) real part.
        let field = GaugeField::from_fn(lat, |c, mu| {
            ColourMatrix::scalar(Complex::new((lat.lex_index(c) * 4 + mu) as f64, 0.0))
        });
        let codec = LinkCodec {
            precision: Precision::Double,
            order: ByteOrder::Little,
            rows: 3,
        };
        let p = codec.encode(&field);
        assert_eq!(p.len() as u64, codec.payload_bytes(&lat));
        for k in 0..4 * lat.volume() {
            let off = k * 144;
            let mut a = [0u8; 8];
            a.copy_from_slice(&p[off..off + 8]);
            assert_eq!(f64::from_le_bytes(a), k as f64);
        }
        let back = codec.decode(&p, lat, Path::new("t"), "payload").unwrap();
        assert_eq!(back, field);
    }

    #[test]
    fn verify_reports_first_bad_link() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let mut field = GaugeField::<f64>::unit(lat);
        let c = [1, 0, 1, 0];
        field.link_mut(lat.cb_index(c), 2).0[1][1] = Complex::new(1.5, 0.0);
        match verify_links(&field, UnitarityLimit::Within(1e-6), Path::new("f")) {
            Err(IoError::NonUnitary {
                coords,
                mu,
                deviation,
                ..
            }) => {
                assert_eq!((coords, mu), (c, 2));
                // U†U − 1 = diag(0, 1.25, 0).
                assert!((deviation - 1.25).abs() < 1e-15);
            }
            other => panic!("expected NonUnitary, got {other:?}"),
        }
        assert!(
            (verify_links(&field, UnitarityLimit::Off, Path::new("f")).unwrap() - 1.25).abs()
                < 1e-15
        );
        field.link_mut(lat.cb_index(c), 2).0[0][2] = Complex::new(0.0, f64::NAN);
        assert!(matches!(
            verify_links(&field, UnitarityLimit::Off, Path::new("f")),
            Err(IoError::NonFinite {
                component: 5,
                mu: 2,
                ..
            })
        ));
    }
}
