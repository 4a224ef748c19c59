//! The gauge field: four links U_μ(x) per site.

use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;
use crate::Real;

/// A gauge field on a 4D lattice: the links U_μ(x), μ = x, y, z, t, stored site-major
/// (`links[4 · cb + μ]`, `cb` the checkerboard index of x).
#[derive(Clone, Debug, PartialEq)]
pub struct GaugeField<T: Real> {
    lattice: Lattice,
    links: Vec<ColourMatrix<T>>,
}

impl<T: Real> GaugeField<T> {
    /// All links equal to the identity (the free field).
    pub fn unit(lattice: Lattice) -> Self {
        Self {
            lattice,
            links: vec![ColourMatrix::identity(); 4 * lattice.volume()],
        }
    }

    /// Builds a field from `f(coords, μ)`.
    pub fn from_fn(lattice: Lattice, mut f: impl FnMut(Coords, usize) -> ColourMatrix<T>) -> Self {
        let mut field = Self::unit(lattice);
        for cb in 0..lattice.volume() {
            let c = lattice.coords_of_cb(cb);
            for mu in 0..4 {
                field.links[4 * cb + mu] = f(c, mu);
            }
        }
        field
    }

    /// The lattice the field lives on.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// U_μ(x) for the site with checkerboard index `cb`.
    #[inline]
    pub fn link(&self, cb: usize, mu: usize) -> &ColourMatrix<T> {
        &self.links[4 * cb + mu]
    }

    /// Mutable U_μ(x) for the site with checkerboard index `cb`.
    #[inline]
    pub fn link_mut(&mut self, cb: usize, mu: usize) -> &mut ColourMatrix<T> {
        &mut self.links[4 * cb + mu]
    }

    /// U_μ(x) for the site with coordinates `c`.
    #[inline]
    pub fn link_at(&self, c: Coords, mu: usize) -> &ColourMatrix<T> {
        self.link(self.lattice.cb_index(c), mu)
    }

    /// All links, `links[4 · cb + μ]`.
    pub fn links(&self) -> &[ColourMatrix<T>] {
        &self.links
    }

    /// All links, mutable, `links[4 · cb + μ]`.
    pub fn links_mut(&mut self) -> &mut [ColourMatrix<T>] {
        &mut self.links
    }

    /// The same field in another precision.
    pub fn cast<U: Real>(&self) -> GaugeField<U> {
        GaugeField {
            lattice: self.lattice,
            links: self.links.iter().map(|u| u.cast()).collect(),
        }
    }
}
