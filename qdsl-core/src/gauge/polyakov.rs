//! The Polyakov loop: the trace of the product of time links around the periodic time
//! direction.

use super::loops::forward_path;
use crate::field::GaugeField;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// The spatially averaged Polyakov loop
///
/// L = (1/V₃) Σ_x⃗ tr[U_t(x⃗, 0) U_t(x⃗, 1) ⋯ U_t(x⃗, L_t − 1)] / 3,
///
/// V₃ = L_x L_y L_z (1 for unit links; gauge invariant; zero on average in the confined
/// phase). Accumulated in f64 in a fixed order.
pub fn polyakov_loop<T: Real>(u: &GaugeField<T>) -> Complex<f64> {
    let lat = *u.lattice();
    let [lx, ly, lz, lt] = lat.dims();
    let time_dirs = vec![3; lt];
    let per_site: Vec<Complex<f64>> = (0..lx * ly * lz)
        .into_par_iter()
        .map(|lex3| {
            // x⃗ with t = 0: the lexicographic index of (x⃗, 0) is lex3.
            let (p, _) = forward_path(u, lat.lex_to_cb(lex3), &time_dirs);
            let t = p.trace();
            Complex::new(t.re.to_f64(), t.im.to_f64())
        })
        .collect();
    per_site.into_iter().sum::<Complex<f64>>() / (3.0 * (lx * ly * lz) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;
    use crate::math::ColourMatrix;

    /// Constant time links U_t = diag(e^{iα}, e^{iβ}, e^{−i(α+β)}) give
    /// L = (e^{iαL_t} + e^{iβL_t} + e^{−i(α+β)L_t})/3; spatial links do not enter.
    #[test]
    fn constant_time_links_give_analytic_value() {
        let lat = Lattice::new([2, 4, 2, 6]).unwrap();
        let (a, b) = (0.3, -0.7);
        let phase = |x: f64| Complex::from_polar(1.0, x);
        let u = GaugeField::<f64>::from_fn(lat, |c, mu| {
            if mu == 3 {
                ColourMatrix::from_fn(|i, j| match (i, j) {
                    (0, 0) => phase(a),
                    (1, 1) => phase(b),
                    (2, 2) => phase(-a - b),
                    _ => Complex::new(0.0, 0.0),
                })
            } else {
                // Arbitrary spatial links, different per site.
                ColourMatrix::scalar(phase(0.1 * (c[0] + 2 * c[1] + mu) as f64))
            }
        });
        let lt = 6.0;
        let expected = (phase(a * lt) + phase(b * lt) + phase(-(a + b) * lt)) / 3.0;
        assert!((polyakov_loop(&u) - expected).norm() < 1e-14);
        assert!((expected - Complex::new(1.0, 0.0)).norm() > 0.5);
        let unit = GaugeField::<f32>::unit(lat);
        assert_eq!(polyakov_loop(&unit), Complex::new(1.0, 0.0));
    }
}
