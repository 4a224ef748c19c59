//! Closed Wilson loops: plaquette (and, through the same machinery, the link trace).

use crate::field::GaugeField;
use crate::Real;
use rayon::prelude::*;

/// The average plaquette, split as other codes print it.
///
/// `average` is P = ⟨Re tr U_□⟩/3 over all sites and all 6 planes (1 for unit links);
/// `spatial` and `temporal` are MILC's "ss" and "st": ⟨Re tr U_□⟩ over the 3 space-space
/// and the 3 space-time planes (3 for unit links), so P = (ss + st)/6.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaquetteSummary {
    pub average: f64,
    pub spatial: f64,
    pub temporal: f64,
}

/// Plaquettes U_μν(x) = U_μ(x) U_ν(x+μ̂) U_μ†(x+ν̂) U_ν†(x), summed in f64.
///
/// Returns P = (1/(6V)) Σ_x Σ_{μ<ν} Re tr U_μν(x) / 3 and MILC's ss and st averages.
pub fn plaquette<T: Real>(u: &GaugeField<T>) -> PlaquetteSummary {
    let lat = *u.lattice();
    let (ss, st) = (0..lat.volume())
        .into_par_iter()
        .map(|cb| {
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
            (ss, st)
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
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
    let sum: f64 = u.links().par_iter().map(|l| l.trace().re.to_f64()).sum();
    sum / (3.0 * u.links().len() as f64)
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
    }
}
