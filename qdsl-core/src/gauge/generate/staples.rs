//! The staple sum of a single link, from an action's loops, and the colouring of the
//! links into sets that can be updated at the same time.

use super::GenerateError;
use crate::dsl::paths::cpu::path_product;
use crate::dsl::paths::force::staple_spec;
use crate::dsl::paths::spec::ConcreteStep;
use crate::dsl::paths::ActionSpec;
use crate::field::GaugeField;
use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;

/// The concrete staple paths x → x + μ̂ of an action for each direction μ, with their
/// coefficients: the same paths (from
/// [`staple_spec`](crate::dsl::paths::force::staple_spec)) as the whole-field staples
/// of the force, evaluated for one link at a time. For a link U_μ(x),
///
/// S[U] = const − (β/3) Re tr[U_μ(x) Σ_μ(x)†],  Σ_μ(x) = Σ_k c_k P_k(x),
///
/// with P_k(x) the ordered product along staple k — provided no loop of the action runs
/// through the same link twice (the action spec guarantees it), so S is linear in each
/// link.
#[derive(Clone, Debug)]
pub struct LocalStaples {
    per_direction: [Vec<(f64, Vec<ConcreteStep>)>; 4],
}

impl LocalStaples {
    /// The staple paths of `action` (an error for an invalid spec).
    pub fn new(action: &ActionSpec) -> Result<Self, GenerateError> {
        let spec = staple_spec(action)?;
        Ok(Self {
            per_direction: std::array::from_fn(|mu| spec.concrete_paths(mu, 1.0)),
        })
    }

    /// Σ_μ(x) = Σ_k c_k P_k(x) for the link U_μ(x).
    pub fn staple_sum(&self, u: &GaugeField<f64>, x: Coords, mu: usize) -> ColourMatrix<f64> {
        self.per_direction[mu]
            .iter()
            .fold(ColourMatrix::zero(), |sum, (c, path)| {
                sum + path_product(u, x, path).scale(*c)
            })
    }

    /// The displacements y − x of the μ-links U_μ(y) that occur in the staples of U_μ(x)
    /// (as integer vectors, before wrapping around the lattice).
    pub fn same_direction_displacements(&self, mu: usize) -> Vec<[i64; 4]> {
        let mut out = Vec::new();
        for (_, path) in &self.per_direction[mu] {
            let mut site = [0i64; 4];
            for &(d, o) in path {
                let mut next = site;
                next[d] += o as i64;
                if d == mu {
                    let y = if o > 0 { site } else { next };
                    if !out.contains(&y) {
                        out.push(y);
                    }
                }
                site = next;
            }
        }
        out
    }
}

/// A partition of the links U_μ(x) of one direction into colours such that no link's
/// staples contain another link of its colour: the links of one colour are updated at
/// the same time (in parallel), each from the others' current values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colouring {
    /// Colour = parity of x₀ + x₁ + x₂ + x₃ (2 colours): enough when every same-direction
    /// link in a staple is an odd displacement away (the plaquette action). Needs even
    /// extents.
    Parity,
    /// Colour = (x_μ mod 2) + 2 · ((Σ_{ν≠μ} x_ν) mod 4) (8 colours): enough for the
    /// rectangle staples, whose μ-links are ±μ̂, ±ν̂, ±ν̂ ± μ̂ and ±2ν̂ away. Needs L_μ even
    /// and every other extent a multiple of 4.
    Mod2Mod4,
}

impl Colouring {
    /// The colour of site x for the links of direction μ.
    pub fn colour(&self, x: Coords, mu: usize) -> usize {
        match self {
            Colouring::Parity => x.iter().sum::<usize>() % 2,
            Colouring::Mod2Mod4 => {
                let rest: usize = (0..4).filter(|&d| d != mu).map(|d| x[d]).sum();
                x[mu] % 2 + 2 * (rest % 4)
            }
        }
    }

    /// The CUDA C++ of [`Self::colour`]: `int link_colour(const int x[4], int mu)`, the
    /// same formula.
    pub fn cuda(&self) -> &'static str {
        match self {
            Colouring::Parity => "// the colour of the mu-link at x: the parity of x0 + x1 + x2 + x3\n__device__ __forceinline__ int link_colour(const int x[4], int mu) { return (x[0] + x[1] + x[2] + x[3]) & 1; }\n",
            Colouring::Mod2Mod4 => "// the colour of the mu-link at x: (x_mu mod 2) + 2 ((sum of the other x_nu) mod 4)\n__device__ __forceinline__ int link_colour(const int x[4], int mu) { return (x[mu] & 1) + 2 * ((x[0] + x[1] + x[2] + x[3] - x[mu]) & 3); }\n",
        }
    }

    /// A short name (`parity`, `mod2mod4`), for kernel and program names.
    pub fn tag(&self) -> &'static str {
        match self {
            Colouring::Parity => "parity",
            Colouring::Mod2Mod4 => "mod2mod4",
        }
    }

    /// The number of colours.
    pub fn count(&self) -> usize {
        match self {
            Colouring::Parity => 2,
            Colouring::Mod2Mod4 => 8,
        }
    }

    /// Whether the displacement d of a same-direction link changes the colour (for any x,
    /// on lattices meeting [`Self::fits`]).
    fn separates(&self, d: &[i64; 4], mu: usize) -> bool {
        match self {
            Colouring::Parity => d.iter().sum::<i64>().rem_euclid(2) == 1,
            Colouring::Mod2Mod4 => {
                let rest: i64 = (0..4).filter(|&k| k != mu).map(|k| d[k]).sum();
                d[mu].rem_euclid(2) == 1 || rest.rem_euclid(4) != 0
            }
        }
    }

    /// Whether the colouring is consistent around the periodic lattice.
    fn fits(&self, lattice: &Lattice) -> bool {
        let dims = lattice.dims();
        match self {
            Colouring::Parity => dims.iter().all(|l| l % 2 == 0),
            Colouring::Mod2Mod4 => dims.iter().all(|l| l % 4 == 0),
        }
    }

    /// The first colouring (fewest colours) that separates every link from the
    /// same-direction links of its staples and fits the lattice; an error naming the
    /// extents otherwise.
    pub fn for_staples(staples: &LocalStaples, lattice: &Lattice) -> Result<Self, GenerateError> {
        let candidates = [Colouring::Parity, Colouring::Mod2Mod4];
        let separating: Vec<Colouring> = candidates
            .into_iter()
            .filter(|c| {
                (0..4).all(|mu| {
                    staples
                        .same_direction_displacements(mu)
                        .iter()
                        .all(|d| c.separates(d, mu))
                })
            })
            .collect();
        separating
            .iter()
            .copied()
            .find(|c| c.fits(lattice))
            .ok_or_else(|| GenerateError::Lattice {
                dims: lattice.dims(),
                expected: match separating.first() {
                    Some(Colouring::Parity) => "even extents (checkerboard update)",
                    Some(Colouring::Mod2Mod4) => {
                        "extents that are multiples of 4 (the rectangle staples need 8 colours)"
                    }
                    None => "an action whose staples a checkerboard of at most 8 colours separates",
                }
                .to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::paths::force::{staples_cpu, ForcePlan};
    use crate::gauge::generate::test_actions::{symanzik, wilson};

    /// The single-link staple sum equals the force's whole-field staples (the CPU plan),
    /// link by link, for Wilson and Symanzik on a hot 4⁴ field.
    #[test]
    fn local_staples_equal_the_whole_field_staples() {
        let lat = Lattice::new([4, 4, 4, 4]).unwrap();
        let u = GaugeField::<f64>::random(lat, 3);
        for action in [wilson(), symanzik()] {
            let whole = staples_cpu(&ForcePlan::new(&action).unwrap(), &u).unwrap();
            let local = LocalStaples::new(&action).unwrap();
            for cb in 0..lat.volume() {
                let x = lat.coords_of_cb(cb);
                for mu in 0..4 {
                    let d = (local.staple_sum(&u, x, mu) - *whole.link(cb, mu)).max_abs_component();
                    assert!(d < 1e-13, "{}: cb {cb} mu {mu}: {d}", action.name);
                }
            }
        }
    }

    /// Wilson: the parity checkerboard; Symanzik: 8 colours, and an error on 6⁴. The
    /// chosen colouring really separates: on 8⁴, no link's staples contain a
    /// same-direction link of its colour (checked site by site).
    #[test]
    fn colourings_separate_every_staple() {
        let l4 = Lattice::new([4, 4, 4, 4]).unwrap();
        let l6 = Lattice::new([6, 6, 6, 6]).unwrap();
        let w = LocalStaples::new(&wilson()).unwrap();
        let s = LocalStaples::new(&symanzik()).unwrap();
        assert_eq!(Colouring::for_staples(&w, &l6).unwrap(), Colouring::Parity);
        assert_eq!(
            Colouring::for_staples(&s, &l4).unwrap(),
            Colouring::Mod2Mod4
        );
        let err = Colouring::for_staples(&s, &l6).unwrap_err().to_string();
        assert!(
            err.contains("multiples of 4") && err.contains("[6, 6, 6, 6]"),
            "{err}"
        );
        let l8 = Lattice::new([8, 8, 8, 8]).unwrap();
        for (staples, colouring) in [(&w, Colouring::Parity), (&s, Colouring::Mod2Mod4)] {
            for mu in 0..4 {
                let ds = staples.same_direction_displacements(mu);
                assert!(!ds.is_empty());
                for x in l8.sites_lex() {
                    for d in &ds {
                        let y: Coords =
                            std::array::from_fn(|k| (x[k] as i64 + d[k]).rem_euclid(8) as usize);
                        assert_ne!(colouring.colour(x, mu), colouring.colour(y, mu));
                    }
                }
            }
        }
    }
}
