//! Closed Wilson loops: plaquette, rectangle (and the link trace).

use crate::field::GaugeField;
use crate::math::ColourMatrix;
use crate::reduce::ordered_sum_by_index;
use crate::Real;

/// The average plaquette, split as other codes print it.
///
/// `average` is P = ⟨Re tr U_□⟩/3 over all sites and all 6 planes (1 for unit links);
/// `spatial` and `temporal` are MILC's "ss" and "st": ⟨Re tr U_□⟩ over the 3 space-space
/// and the 3 space-time planes (3 for unit links), so P = (ss + st)/6.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaquetteSummary {
    /// P = ⟨Re tr U_□⟩/3 over all 6 planes (1 for unit links).
    pub average: f64,
    /// MILC's "ss": ⟨Re tr U_□⟩ over the xy, xz, yz planes (3 for unit links).
    pub spatial: f64,
    /// MILC's "st": ⟨Re tr U_□⟩ over the xt, yt, zt planes (3 for unit links).
    pub temporal: f64,
}

/// Plaquettes U_μν(x) = U_μ(x) U_ν(x+μ̂) U_μ†(x+ν̂) U_ν†(x), summed in f64.
///
/// Summed in the fixed order of [`ordered_sum_by_index`] (the same bits for any thread
/// count). Returns P = (1/(6V)) Σ_x Σ_{μ<ν} Re tr U_μν(x) / 3 and MILC's ss and st averages.
pub fn plaquette<T: Real>(u: &GaugeField<T>) -> PlaquetteSummary {
    let lat = *u.lattice();
    let PlanePair(ss, st) = ordered_sum_by_index(lat.volume(), |cb| {
        let mut ss = 0.0;
        let mut st = 0.0;
        for mu in 0..4 {
            let x_mu = lat.neighbour_cb(cb, mu, 1);
            for nu in mu + 1..4 {
                let x_nu = lat.neighbour_cb(cb, nu, 1);
                let left = *u.link(cb, mu) * *u.link(x_mu, nu);
                let right = *u.link(cb, nu) * *u.link(x_nu, mu);
                let re_tr = left.mul_adjoint(&right).trace().re.to_f64();
                if nu == 3 {
                    st += re_tr;
                } else {
                    ss += re_tr;
                }
            }
        }
        PlanePair(ss, st)
    });
    let v = lat.volume() as f64;
    let (spatial, temporal) = (ss / (3.0 * v), st / (3.0 * v));
    PlaquetteSummary {
        average: (spatial + temporal) / 6.0,
        spatial,
        temporal,
    }
}

/// The average link trace (1/(4V)) Σ_{x,μ} Re tr U_μ(x) / 3 (1 for unit links), as in
/// the NERSC header's LINK_TRACE.
pub fn link_trace<T: Real>(u: &GaugeField<T>) -> f64 {
    let links = u.links();
    let sum: f64 = ordered_sum_by_index(links.len(), |i| links[i].trace().re.to_f64());
    sum / (3.0 * u.links().len() as f64)
}

/// The average rectangle: the 2×1 and 1×2 Wilson loops, normalised like the plaquette
/// (1 for unit links),
///
/// R = (1/(12V)) Σ_x Σ_{μ<ν} [Re tr R_μν(x) + Re tr R_νμ(x)] / 3,
///
/// R_μν(x) = U_μ(x) U_μ(x+μ̂) U_ν(x+2μ̂) U_μ†(x+μ̂+ν̂) U_μ†(x+ν̂) U_ν†(x)
///
/// (two links along μ, one along ν). Both orientations are summed in each of the 6
/// planes, 12 loops per site; their sum enters the Symanzik and Iwasaki gauge actions.
/// Accumulated in f64, in a fixed order (the same bits for any thread count).
pub fn rectangle<T: Real>(u: &GaugeField<T>) -> f64 {
    let sum: f64 = ordered_sum_by_index(u.lattice().volume(), |cb| {
        let mut sum = 0.0;
        for mu in 0..4 {
            for nu in mu + 1..4 {
                sum += re_trace_loop(u, cb, &[mu, mu, nu], &[nu, mu, mu]);
                sum += re_trace_loop(u, cb, &[nu, nu, mu], &[mu, nu, nu]);
            }
        }
        sum
    });
    sum / (36.0 * u.lattice().volume() as f64)
}

/// The product of links along a forward path from the site `cb`,
/// P = U_{d₀}(x) U_{d₁}(x + d̂₀) ⋯, and the checkerboard index of its end point.
pub(crate) fn forward_path<T: Real>(
    u: &GaugeField<T>,
    cb: usize,
    dirs: &[usize],
) -> (ColourMatrix<T>, usize) {
    let lat = u.lattice();
    dirs.iter()
        .fold((ColourMatrix::identity(), cb), |(p, site), &d| {
            (p * *u.link(site, d), lat.neighbour_cb(site, d, 1))
        })
}

/// Re tr (P_a P_b†) for two forward paths a and b from the site `cb` that end at the
/// same site: the real trace of the closed loop "along a, back along b". In f64.
fn re_trace_loop<T: Real>(u: &GaugeField<T>, cb: usize, a: &[usize], b: &[usize]) -> f64 {
    let (pa, end_a) = forward_path(u, cb, a);
    let (pb, end_b) = forward_path(u, cb, b);
    debug_assert_eq!(end_a, end_b);
    pa.re_trace_mul(&pb.adjoint()).to_f64()
}

/// Space-space and space-time plaquette sums of one site, added component-wise.
struct PlanePair(f64, f64);

impl std::iter::Sum for PlanePair {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(PlanePair(0.0, 0.0), |a, b| PlanePair(a.0 + b.0, a.1 + b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;

    #[test]
    fn unit_field_has_unit_plaquette_and_trace() {
        let u = GaugeField::<f64>::unit(Lattice::new([4, 4, 2, 6]).unwrap());
        let p = plaquette(&u);
        assert!((p.average - 1.0).abs() < 1e-15);
        assert!((p.spatial - 3.0).abs() < 1e-15 && (p.temporal - 3.0).abs() < 1e-15);
        assert!((link_trace(&u) - 1.0).abs() < 1e-15);
        assert_eq!(rectangle(&u), 1.0);
    }

    /// A constant abelian magnetic flux φ = 2πk/Lx through every xy plaquette:
    /// U_y(x) = diag(e^{iφx}, e^{−iφx}, 1), all other links 1. A loop enclosing area A in
    /// the xy plane has trace 1 + 2 cos(Aφ); loops in the other 5 planes have trace 3. So
    ///
    /// P = [5 + (1 + 2 cos φ)/3]/6,  R = [5 + (1 + 2 cos 2φ)/3]/6
    ///
    /// (both rectangle orientations enclose area 2).
    #[test]
    fn constant_flux_gives_analytic_loops() {
        let lat = Lattice::new([6, 4, 2, 4]).unwrap();
        let phi = 2.0 * std::f64::consts::PI / 6.0;
        let u = GaugeField::<f64>::from_fn(lat, |c, mu| {
            let mut m = ColourMatrix::identity();
            if mu == 1 {
                let z = num_complex::Complex::from_polar(1.0, phi * c[0] as f64);
                (m.0[0][0], m.0[1][1]) = (z, z.conj());
            }
            m
        });
        let p = (5.0 + (1.0 + 2.0 * phi.cos()) / 3.0) / 6.0;
        let r = (5.0 + (1.0 + 2.0 * (2.0 * phi).cos()) / 3.0) / 6.0;
        assert!(
            (plaquette(&u).average - p).abs() < 1e-14,
            "{} {p}",
            plaquette(&u).average
        );
        assert!((rectangle(&u) - r).abs() < 1e-14, "{} {r}", rectangle(&u));
        // The two differ (φ = 60°: P = 17/18, R = 5/6): the test sees the loop's area.
        assert!((p - r).abs() > 0.1);
    }
}
