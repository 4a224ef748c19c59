//! The gauge field: four links U_μ(x) per site.

use super::random_su3::{gaussian_su3_algebra, haar_su3};
use super::rng::{RandomStream, StreamDomain};
use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

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

    /// Builds a field from `f(coords, μ)` in parallel (rayon over sites). `f` must be a
    /// pure function of its arguments for the result to be reproducible.
    pub fn par_from_fn(
        lattice: Lattice,
        f: impl Fn(Coords, usize) -> ColourMatrix<T> + Sync + Send,
    ) -> Self {
        let mut field = Self::unit(lattice);
        field
            .links
            .par_chunks_mut(4)
            .enumerate()
            .for_each(|(cb, site)| {
                let c = lattice.coords_of_cb(cb);
                for (mu, link) in site.iter_mut().enumerate() {
                    *link = f(c, mu);
                }
            });
        field
    }

    /// The field replicated `reps[μ]` times along each direction μ: on the lattice of
    /// extents reps[μ]·L_μ, U'_μ(x) = U_μ(x mod L). A periodic tiling keeps every local
    /// observable (plaquette, rectangle, unitarity) of the original: a large lattice
    /// derived from a real configuration, for benchmarks and solver studies. An error if
    /// a factor is zero or the tiled lattice is invalid.
    pub fn tiled(&self, reps: [usize; 4]) -> Result<Self, crate::lattice::GeometryError> {
        let dims = self.lattice.dims();
        let tiled = std::array::from_fn(|mu| dims[mu].checked_mul(reps[mu]).unwrap_or(0));
        let big = Lattice::new(tiled)?;
        Ok(Self::par_from_fn(big, |c, mu| {
            let x = std::array::from_fn(|d| c[d] % dims[d]);
            *self.link_at(x, mu)
        }))
    }

    /// A "hot" field: every link an independent Haar-random SU(3) matrix
    /// ([`haar_su3`](super::haar_su3): Gaussian QR with the phase fix, then det = 1).
    ///
    /// The link U_μ(x) comes from its own stream ([`StreamDomain::GaugeLinks`], index
    /// 4 · lex(x) + μ with lex the lexicographic site index), so the field is the same
    /// for any number of threads and any storage order, and bit-identical on every
    /// machine. Links are built in f64 and rounded to `T`: the f32 field is the f64
    /// field rounded. Its plaquette averages to 0 (±O(1/√(6V))).
    pub fn random(lattice: Lattice, seed: u64) -> Self {
        Self::from_link_streams(lattice, seed, StreamDomain::GaugeLinks, haar_su3)
    }

    /// A weak field, links near the identity:
    ///
    /// U_μ(x) = exp(i ε H_μ(x)),  H = Σ_{a=1}^{8} h_a λ_a/2,  h_a ~ N(0, 1),
    ///
    /// ([`gaussian_su3_algebra`](super::gaussian_su3_algebra); [`ColourMatrix::exp`]).
    /// Streams as in [`Self::random`] but in [`StreamDomain::WeakGaugeLinks`]. For small
    /// ε the average plaquette is 1 − (8/3) ε² + O(ε⁴): the plaquette's exponent is
    /// iε K with K a sum of four independent H's, E tr K² = 4 · E tr H² = 16, and
    /// Re tr e^{iεK}/3 = 1 − ε² tr K²/6 + O(ε⁴) (odd orders average to zero under
    /// H → −H).
    ///
    /// Reproducibility: the draws are portable and independent of the thread count. The
    /// exponential evaluates its power series (pure arithmetic, identical everywhere) for
    /// links with ε² tr H²/2 < 0.02 (E tr H² = 4: every link for ε ≲ 0.05, most for
    /// ε ≲ 0.1); larger arguments go through the platform's trigonometric functions,
    /// whose last bit may differ between machines.
    pub fn weak(lattice: Lattice, seed: u64, epsilon: f64) -> Self {
        let i_eps = Complex::new(0.0, epsilon);
        Self::from_link_streams(lattice, seed, StreamDomain::WeakGaugeLinks, |s| {
            gaussian_su3_algebra(s).scale_complex(i_eps).exp()
        })
    }

    /// Fills every link from `link(stream)` with the stream (seed, domain, 4 · lex + μ),
    /// in parallel, rounding the f64 result to `T`.
    fn from_link_streams(
        lattice: Lattice,
        seed: u64,
        domain: StreamDomain,
        link: impl Fn(&mut RandomStream) -> ColourMatrix<f64> + Sync + Send,
    ) -> Self {
        Self::par_from_fn(lattice, |c, mu| {
            let index = 4 * lattice.lex_index(c) as u64 + mu as u64;
            link(&mut RandomStream::new(seed, domain, index)).cast()
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gauge::{plaquette, rectangle, unitarity_report};

    fn lattice() -> Lattice {
        Lattice::new([4, 4, 4, 4]).unwrap()
    }

    #[test]
    fn unit_field_has_unit_loops_exactly() {
        let u = GaugeField::<f64>::unit(lattice());
        assert_eq!(plaquette(&u).average, 1.0);
        assert_eq!(rectangle(&u), 1.0);
    }

    /// Hot links: SU(3) to 1e−14; plaquette of the hot field ~0 (|P| < 0.05 on 4⁴, where
    /// its standard deviation is 1/(3√(6·256)) ≈ 0.009).
    #[test]
    fn hot_field_is_su3_and_disordered() {
        let u = GaugeField::<f64>::random(lattice(), 2024);
        let r = unitarity_report(&u);
        assert!(r.max_unitarity < 1e-14 && r.max_det < 1e-14, "{r:?}");
        let p = plaquette(&u).average;
        assert!(p.abs() < 0.05, "{p}");
        assert!(rectangle(&u).abs() < 0.05);
    }

    /// Link U_μ(x) is the Haar matrix of the stream (seed, GaugeLinks, 4 lex(x) + μ),
    /// whatever the checkerboard storage order; the f32 field is the f64 field rounded.
    #[test]
    fn links_come_from_their_own_streams() {
        let lat = Lattice::new([4, 2, 2, 6]).unwrap();
        let u = GaugeField::<f64>::random(lat, 77);
        for lex in [0, 1, 5, 37, lat.volume() - 1] {
            let c = lat.coords_of_lex(lex);
            for mu in 0..4 {
                let mut s = RandomStream::new(77, StreamDomain::GaugeLinks, (4 * lex + mu) as u64);
                assert_eq!(*u.link_at(c, mu), haar_su3(&mut s));
            }
        }
        assert_eq!(GaugeField::<f32>::random(lat, 77), u.cast::<f32>());
    }

    /// The same seed gives the same field in a 1-thread and a 2-thread pool (hot and
    /// weak); different seeds give different fields.
    #[test]
    fn fields_do_not_depend_on_thread_count() {
        let in_pool = |threads, weak: bool| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    if weak {
                        GaugeField::<f64>::weak(lattice(), 5, 0.3)
                    } else {
                        GaugeField::<f64>::random(lattice(), 5)
                    }
                })
        };
        for weak in [false, true] {
            let one = in_pool(1, weak);
            assert_eq!(one, in_pool(2, weak));
            assert_ne!(one.links()[0], ColourMatrix::identity());
        }
        assert_ne!(
            GaugeField::<f64>::random(lattice(), 5),
            GaugeField::random(lattice(), 6)
        );
        assert_ne!(
            GaugeField::<f64>::weak(lattice(), 5, 0.1),
            GaugeField::weak(lattice(), 6, 0.1)
        );
    }

    /// Weak field: SU(3), and 1 − P = (8/3) ε² (1 + O(ε²)) (derivation on
    /// [`GaugeField::weak`]). On 8⁴ (24576 plaquettes) the ratio's statistical spread is
    /// ~0.8 % (measured over seeds), so it must be 1 within 4 %, at two values of ε (a
    /// wrong normalisation of H, or correlated links, moves it by a factor).
    #[test]
    fn weak_field_plaquette_follows_its_small_epsilon_expansion() {
        let lat = Lattice::new([8, 8, 8, 8]).unwrap();
        for (eps, seed) in [(0.05, 1), (0.02, 2)] {
            let u = GaugeField::<f64>::weak(lat, seed, eps);
            let r = unitarity_report(&u);
            assert!(r.max_unitarity < 1e-14 && r.max_det < 1e-14, "{r:?}");
            let p = plaquette(&u).average;
            let ratio = (1.0 - p) / (8.0 / 3.0 * eps * eps);
            assert!(
                (ratio - 1.0).abs() < 0.04,
                "eps {eps}: P = {p}, ratio {ratio}"
            );
        }
    }

    /// Tiling a hot 4⁴ field 2 × 1 × 1 × 2: every link equals the original at x mod L,
    /// the plaquette and rectangle are unchanged (they are averages of local loops), and
    /// a zero factor is an error.
    #[test]
    fn tiling_replicates_links_and_keeps_local_observables() {
        let u = GaugeField::<f64>::random(lattice(), 5);
        let t = u.tiled([2, 1, 1, 2]).unwrap();
        assert_eq!(t.lattice().dims(), [8, 4, 4, 8]);
        for cb in (0..t.lattice().volume()).step_by(7) {
            let c = t.lattice().coords_of_cb(cb);
            for mu in 0..4 {
                let x = [c[0] % 4, c[1] % 4, c[2] % 4, c[3] % 4];
                assert_eq!(t.link(cb, mu), u.link_at(x, mu));
            }
        }
        assert!((plaquette(&t).average - plaquette(&u).average).abs() < 1e-13);
        assert!((rectangle(&t) - rectangle(&u)).abs() < 1e-13);
        assert!(u.tiled([1, 0, 1, 1]).is_err());
    }
}
