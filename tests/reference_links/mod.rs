//! Hand-written reference link smearing for the tests: plain path walks over coordinates,
//! written without the DSL, following MILC's asqtad conventions (see DESIGN.md,
//! "Staggered", and tests/data/README.md). Generated smearing kernels are checked against
//! this, and this is checked against MILC's own fat and long links.
#![allow(dead_code)] // each test binary uses a different subset

use qdsl::core::field::GaugeField;
use qdsl::core::lattice::{Coords, Lattice};
use qdsl::core::math::ColourMatrix;

/// One step of a gauge path: direction μ (0..4) and orientation (+1 forward, −1 backward).
pub type Step = (usize, isize);

/// MILC's staggered phase η_μ(x): η_t = 1, η_x = (−1)^t, η_y = (−1)^(t+x),
/// η_z = (−1)^(t+x+y).
pub fn staggered_phase(c: Coords, mu: usize) -> f64 {
    let [x, y, _, t] = c;
    let exponent = match mu {
        0 => t,
        1 => t + x,
        2 => t + x + y,
        _ => 0,
    };
    if exponent % 2 == 0 {
        1.0
    } else {
        -1.0
    }
}

/// The links with MILC's staggered phases and the antiperiodic time boundary folded in:
/// U'_μ(x) = η_μ(x) U_μ(x), and U'_t(x) → −U'_t(x) on the last time slice.
pub fn fold_staggered_phases(u: &GaugeField<f64>) -> GaugeField<f64> {
    let lat = *u.lattice();
    GaugeField::from_fn(lat, |c, mu| {
        let boundary = if mu == 3 && c[3] == lat.extent(3) - 1 {
            -1.0
        } else {
            1.0
        };
        u.link_at(c, mu).scale(staggered_phase(c, mu) * boundary)
    })
}

/// The ordered product of links along `path` starting at `x`: a forward step in μ
/// multiplies by U_μ(y) and moves to y + μ̂; a backward step moves to y − μ̂ and multiplies
/// by U_μ(y − μ̂)†.
pub fn path_product(u: &GaugeField<f64>, x: Coords, path: &[Step]) -> ColourMatrix<f64> {
    let lat = u.lattice();
    let mut y = x;
    let mut product = ColourMatrix::identity();
    for &(mu, orientation) in path {
        if orientation > 0 {
            product *= *u.link_at(y, mu);
            y = lat.shift(y, mu, 1).0;
        } else {
            y = lat.shift(y, mu, -1).0;
            product *= u.link_at(y, mu).adjoint();
        }
    }
    product
}

/// The asqtad path coefficients (MILC): one-link 5/8, Naik −1/24, 3-staple −1/16,
/// 5-staple 1/64, 7-staple −1/384, Lepage −1/16, each divided by u0^(length − 1).
pub struct AsqtadCoefficients {
    pub one_link: f64,
    pub naik: f64,
    pub staple3: f64,
    pub staple5: f64,
    pub staple7: f64,
    pub lepage: f64,
}

impl AsqtadCoefficients {
    pub fn milc(u0: f64) -> Self {
        Self {
            one_link: 5.0 / 8.0,
            naik: -1.0 / 24.0 / u0.powi(2),
            staple3: -1.0 / 16.0 / u0.powi(2),
            staple5: 1.0 / 64.0 / u0.powi(4),
            staple7: -1.0 / 384.0 / u0.powi(6),
            lepage: -1.0 / 16.0 / u0.powi(4),
        }
    }
}

/// The reversed path with every step inverted, so that `[a, μ, reverse(a)]` is a staple.
fn back(steps: &[Step]) -> Vec<Step> {
    steps.iter().rev().map(|&(d, o)| (d, -o)).collect()
}

/// Every path of the asqtad fat link of direction μ with its coefficient: the one link,
/// the 3-, 5- and 7-staples over all distinct transverse directions and orientations, and
/// the Lepage term.
pub fn asqtad_fat_paths(mu: usize, c: &AsqtadCoefficients) -> Vec<(f64, Vec<Step>)> {
    let transverse = |used: &[usize]| {
        (0..4)
            .filter(|d| *d != mu && !used.contains(d))
            .flat_map(|d| [(d, 1isize), (d, -1isize)])
            .collect::<Vec<Step>>()
    };
    let staple = |outer: &[Step]| [outer, &[(mu, 1)], &back(outer)].concat();
    let mut paths = vec![(c.one_link, vec![(mu, 1)])];
    for nu in transverse(&[]) {
        paths.push((c.staple3, staple(&[nu])));
        paths.push((c.lepage, staple(&[nu, nu])));
        for rho in transverse(&[nu.0]) {
            paths.push((c.staple5, staple(&[nu, rho])));
            for sigma in transverse(&[nu.0, rho.0]) {
                paths.push((c.staple7, staple(&[nu, rho, sigma])));
            }
        }
    }
    paths
}

/// Asqtad fat and long links from thin links `u` (phases folded in here):
/// F_μ(x) = Σ_paths c_p P_p(x), L_μ(x) = c_Naik U'_μ(x) U'_μ(x+μ̂) U'_μ(x+2μ̂).
pub fn asqtad_links(u: &GaugeField<f64>, u0: f64) -> (GaugeField<f64>, GaugeField<f64>) {
    let v = fold_staggered_phases(u);
    let c = AsqtadCoefficients::milc(u0);
    let paths: Vec<_> = (0..4).map(|mu| asqtad_fat_paths(mu, &c)).collect();
    let lat: Lattice = *u.lattice();
    let fat = GaugeField::from_fn(lat, |x, mu| {
        paths[mu]
            .iter()
            .fold(ColourMatrix::zero(), |sum, (coeff, path)| {
                sum + path_product(&v, x, path).scale(*coeff)
            })
    });
    let long = GaugeField::from_fn(lat, |x, mu| {
        path_product(&v, x, &[(mu, 1); 3]).scale(c.naik)
    });
    (fat, long)
}
