//! Gauge transformations g(x) ∈ SU(3) acting on links and on colour-spinor fields.

use super::GaugeError;
use crate::field::{
    haar_su3, ColourSpinorField, FieldError, GaugeField, RandomStream, StreamDomain,
};
use crate::lattice::{Coords, Lattice};
use crate::math::{ColourMatrix, ColourVector, NC};
use crate::Real;
use rayon::prelude::*;

/// A gauge transformation: one SU(3) matrix g(x) per site, stored by checkerboard index.
///
/// It acts on links and on colour-spinor fields as
///
/// U_μ(x) → g(x) U_μ(x) g†(x + μ̂),  ψ_{s,σ}(x) → g(x) ψ_{s,σ}(x)
///
/// (every s-slice and spin alike), which leaves closed Wilson loops and the covariant
/// bilinears ψ†(x) U_μ(x) ψ(x+μ̂) unchanged. Periodic wrap-around is assumed: g(x + L μ̂)
/// = g(x).
#[derive(Clone, Debug, PartialEq)]
pub struct GaugeTransform<T: Real> {
    lattice: Lattice,
    g: Vec<ColourMatrix<T>>,
}

impl<T: Real> GaugeTransform<T> {
    /// The identity transformation g(x) = 1.
    pub fn identity(lattice: Lattice) -> Self {
        Self {
            lattice,
            g: vec![ColourMatrix::identity(); lattice.volume()],
        }
    }

    /// Builds g(x) = f(x), visiting sites in checkerboard order. `f` should return SU(3)
    /// matrices (not checked; see [`super::unitarity_report`] for a check on links).
    pub fn from_fn(lattice: Lattice, mut f: impl FnMut(Coords) -> ColourMatrix<T>) -> Self {
        Self {
            lattice,
            g: (0..lattice.volume())
                .map(|cb| f(lattice.coords_of_cb(cb)))
                .collect(),
        }
    }

    /// A random transformation: g(x) Haar-distributed on SU(3)
    /// ([`haar_su3`](crate::field::haar_su3)), drawn from the stream
    /// ([`StreamDomain::GaugeTransform`], lex(x)), built in f64 and rounded to `T`. The
    /// result does not depend on the number of threads.
    pub fn random(lattice: Lattice, seed: u64) -> Self {
        let g = (0..lattice.volume())
            .into_par_iter()
            .map(|cb| {
                let lex = lattice.cb_to_lex(cb) as u64;
                haar_su3(&mut RandomStream::new(
                    seed,
                    StreamDomain::GaugeTransform,
                    lex,
                ))
                .cast()
            })
            .collect();
        Self { lattice, g }
    }

    /// The lattice the transformation lives on.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// g(x) for the site with checkerboard index `cb`.
    pub fn at(&self, cb: usize) -> &ColourMatrix<T> {
        &self.g[cb]
    }

    /// U_μ(x) → g(x) U_μ(x) g†(x + μ̂) for every link. The lattices must agree.
    pub fn apply_to_links(&self, u: &mut GaugeField<T>) -> Result<(), GaugeError> {
        self.expect_lattice(u.lattice())?;
        let lat = self.lattice;
        u.links_mut()
            .par_chunks_mut(4)
            .enumerate()
            .for_each(|(cb, site)| {
                for (mu, link) in site.iter_mut().enumerate() {
                    let forward = lat.neighbour_cb(cb, mu, 1);
                    *link = (self.g[cb] * *link).mul_adjoint(&self.g[forward]);
                }
            });
        Ok(())
    }

    /// ψ_{s,σ}(x) → g(x) ψ_{s,σ}(x) for every site the field holds (one parity or all),
    /// every s-slice and every spin. The lattices must agree and the field must have 3
    /// colours.
    pub fn apply_to_fermion(&self, psi: &mut ColourSpinorField<T>) -> Result<(), GaugeError> {
        let layout = *psi.layout();
        self.expect_lattice(layout.lattice())?;
        if layout.ncolour() != NC {
            return Err(FieldError::ColourCount {
                operation: "a gauge transformation",
                expected: NC,
                found: layout.ncolour(),
            }
            .into());
        }
        let sites = layout.sites_per_slice();
        psi.data_mut()
            .par_chunks_mut(layout.site_len())
            .enumerate()
            .for_each(|(k, site)| {
                let g = &self.g[layout.cb_of_site(k % sites)];
                for spin in site.chunks_exact_mut(NC) {
                    let v = *g * ColourVector([spin[0], spin[1], spin[2]]);
                    spin.copy_from_slice(&v.0);
                }
            });
        Ok(())
    }

    /// `Ok` when `found` is this transformation's lattice.
    fn expect_lattice(&self, found: &Lattice) -> Result<(), FieldError> {
        if *found == self.lattice {
            Ok(())
        } else {
            Err(FieldError::LatticeMismatch {
                expected: self.lattice,
                found: *found,
            })
        }
    }
}
