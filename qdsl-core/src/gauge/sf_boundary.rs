//! The boundary gauge fields of openQCD's Schrödinger-functional (SF) boundaries: the
//! spatial links at x0 = 0 and at x0 = T are fixed, constant abelian fields
//! (openQCD `modules/lattice/bcnds.c`, `set_bc` and its notes; `modules/flags/sf_parms.c`):
//!
//! C_k = diag(e^{iφ₁/L_k}, e^{iφ₂/L_k}, e^{iφ₃/L_k}) at x0 = 0,
//! C'_k = the same with φ' at x0 = T,   φ₃ = −φ₁ − φ₂ (so det C_k = 1),
//!
//! for k = 1, 2, 3 and L_k the lattice extent in direction k. The time extent is
//! T = L_t (openQCD: N0 for SF), so the slice x0 = T is the slice x0 = 0 after the wrap
//! and a gauge field on L_t slices has room for one of the two boundary fields only;
//! openQCD keeps C' in a buffer appended to the local field. The time links
//! U_0(x0 = T − 1) from the last slice to T are ordinary, active links.
//!
//! For the Dirac operator the quark fields vanish on x0 = 0 (= T), so the boundary links
//! enter only through the clover term of the slices next to the boundary: the leaves of
//! x0 = 1 reach the spatial links of x0 = 0 (C), those of x0 = T − 1 the spatial links
//! of x0 = T (C') through U_0(x0 = T − 1). [`SfBoundaryFields::clover_field`] computes
//! the clover field with C on x0 = 1 and C' on x0 = T − 1 (every other slice's leaves
//! stay away from the boundary), which is what
//! [`super::OpenBoundary::clover_fields`] uses when the SF boundary carries these
//! fields.

use super::{clover_field_with, FieldStrengthTrace};
use crate::field::{CloverField, GaugeField};
use crate::lattice::Lattice;
use crate::math::ColourMatrix;
use num_complex::Complex;

/// The angles φ (x0 = 0) and φ' (x0 = T) of openQCD's SF boundary fields (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SfBoundaryFields {
    /// φ₁, φ₂, φ₃ = −φ₁ − φ₂ at x0 = 0.
    pub phi: [f64; 3],
    /// φ'₁, φ'₂, φ'₃ = −φ'₁ − φ'₂ at x0 = T.
    pub phi_prime: [f64; 3],
}

/// The constant abelian link diag(e^{iφ_a/extent}) of angles `phi`.
pub fn abelian_link(phi: &[f64; 3], extent: usize) -> ColourMatrix<f64> {
    ColourMatrix::from_fn(|a, b| {
        if a == b {
            Complex::from_polar(1.0, phi[a] / extent as f64)
        } else {
            Complex::new(0.0, 0.0)
        }
    })
}

impl SfBoundaryFields {
    /// The fields of openQCD's two angles per boundary (φ₁, φ₂) and (φ'₁, φ'₂); the third
    /// is minus their sum.
    pub fn new(phi: [f64; 2], phi_prime: [f64; 2]) -> Self {
        let third = |p: [f64; 2]| [p[0], p[1], -p[0] - p[1]];
        Self {
            phi: third(phi),
            phi_prime: third(phi_prime),
        }
    }

    /// C_k (`prime` false) or C'_k (`prime` true) on `lattice`, k = 0, 1, 2 the spatial
    /// directions.
    pub fn link(&self, lattice: &Lattice, k: usize, prime: bool) -> ColourMatrix<f64> {
        let phi = if prime { &self.phi_prime } else { &self.phi };
        abelian_link(phi, lattice.extent(k))
    }

    /// `gauge` with the spatial links of slice x0 = 0 set to C (`prime` false) or C'
    /// (`prime` true): the field the leaves next to that boundary see.
    pub fn with_boundary_links(&self, gauge: &GaugeField<f64>, prime: bool) -> GaugeField<f64> {
        let lattice = *gauge.lattice();
        GaugeField::from_fn(lattice, |c, mu| {
            if c[3] == 0 && mu < 3 {
                self.link(&lattice, mu, prime)
            } else {
                *gauge.link_at(c, mu)
            }
        })
    }

    /// The full-lattice clover field A = (m + 4) + (c_sw/2) σ·F (mass normalisation,
    /// [`clover_field_with`]) of the SF lattice: from the links with C on x0 = 0 everywhere
    /// except x0 = L_t − 1 = T − 1, whose leaves see C' on x0 = T (module docs); the
    /// field strength's `trace` as [`clover_field_with`].
    pub fn clover_field(
        &self,
        gauge: &GaugeField<f64>,
        mass: f64,
        c_sw: f64,
        trace: FieldStrengthTrace,
    ) -> CloverField<f64> {
        let lattice = *gauge.lattice();
        let near = self.with_boundary_links(gauge, false);
        let mut a = clover_field_with(&near, mass, c_sw, trace);
        let far = clover_field_with(&self.with_boundary_links(gauge, true), mass, c_sw, trace);
        let last = lattice.extent(3) - 1;
        for cb in 0..lattice.volume() {
            if lattice.coords_of_cb(cb)[3] == last {
                a.site_mut(cb).copy_from_slice(far.site(cb));
            }
        }
        a
    }
}
