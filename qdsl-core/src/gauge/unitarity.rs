//! How far a gauge field is from SU(3), and projecting it back.

use super::GaugeError;
use crate::field::GaugeField;
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// Deviation of the links of a gauge field from SU(3), over all 4V links:
///
/// * `max_unitarity`, `mean_unitarity`: ‖U†U − 1‖_F (Frobenius norm);
/// * `max_det`, `mean_det`: |det U − 1|.
///
/// All zero (to rounding, ~10⁻¹⁵ in f64 and ~10⁻⁷ in f32) for an SU(3) field; the
/// `unitarity` pair alone is zero for U(3) links.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitarityReport {
    /// max over links of ‖U†U − 1‖_F.
    pub max_unitarity: f64,
    /// (1/4V) Σ over links of ‖U†U − 1‖_F.
    pub mean_unitarity: f64,
    /// max over links of |det U − 1|.
    pub max_det: f64,
    /// (1/4V) Σ over links of |det U − 1|.
    pub mean_det: f64,
}

/// Measures ‖U†U − 1‖_F and |det U − 1| over every link (see [`UnitarityReport`]),
/// in f64, in a fixed order. A non-finite link makes the maxima and means NaN.
pub fn unitarity_report<T: Real>(u: &GaugeField<T>) -> UnitarityReport {
    let one = Complex::new(T::one(), T::zero());
    let per_link: Vec<(f64, f64)> = u
        .links()
        .par_iter()
        .map(|l| {
            let unitarity = l.unitarity_deviation().to_f64();
            let d = l.determinant() - one;
            let det = Complex::new(d.re.to_f64(), d.im.to_f64()).norm_sqr().sqrt();
            (unitarity, det)
        })
        .collect();
    let n = per_link.len() as f64;
    // f64::max ignores NaN; propagate it explicitly so a broken field is visible.
    let max = |a: f64, b: f64| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    };
    let (mut report, mut sum_u, mut sum_d) = (
        UnitarityReport {
            max_unitarity: 0.0,
            mean_unitarity: 0.0,
            max_det: 0.0,
            mean_det: 0.0,
        },
        0.0,
        0.0,
    );
    for (du, dd) in per_link {
        report.max_unitarity = max(report.max_unitarity, du);
        report.max_det = max(report.max_det, dd);
        sum_u += du;
        sum_d += dd;
    }
    report.mean_unitarity = sum_u / n;
    report.mean_det = sum_d / n;
    report
}

/// Projects every link back to SU(3) with [`ColourMatrix::reunitarize`] (Gram–Schmidt
/// on the first two rows, third row (r₀ × r₁)*):
///
/// U → (u, v, (u × v)*),  u = r₀/|r₀|,  v ∝ r₁ − ⟨u, r₁⟩u.
///
/// Used after many updates or after reading a single-precision file, where rounding
/// has moved links off the group. A link whose rows are degenerate or non-finite is an
/// error naming its site and direction (the first such link in checkerboard order), and
/// the field is then left unchanged.
///
/// [`ColourMatrix::reunitarize`]: crate::math::ColourMatrix::reunitarize
pub fn reunitarize<T: Real>(u: &mut GaugeField<T>) -> Result<(), GaugeError> {
    let projected: Vec<_> = u.links().par_iter().map(|l| l.reunitarize()).collect();
    if let Some(k) = projected.iter().position(|l| !l.is_finite()) {
        return Err(GaugeError::DegenerateLink {
            coords: u.lattice().coords_of_cb(k / 4),
            mu: k % 4,
        });
    }
    u.links_mut().copy_from_slice(&projected);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;
    use crate::math::ColourMatrix;

    /// A link scaled by 1 + δ has U†U − 1 = ((1+δ)² − 1)·1, Frobenius norm
    /// √3 · (2δ + δ²), and det − 1 = (1+δ)³ − 1: checked on one perturbed link of a unit
    /// field, with the means divided by the 4V links; reunitarisation restores it.
    #[test]
    fn report_measures_a_known_perturbation_and_reunitarize_removes_it() {
        let lat = Lattice::new([2, 2, 2, 4]).unwrap();
        let mut u = GaugeField::<f64>::unit(lat);
        let delta = 1e-3;
        *u.link_mut(5, 2) = ColourMatrix::identity().scale(1.0 + delta);
        let r = unitarity_report(&u);
        let du = 3f64.sqrt() * (2.0 * delta + delta * delta);
        let dd = (1.0 + delta).powi(3) - 1.0;
        assert!((r.max_unitarity - du).abs() < 1e-15, "{r:?}");
        assert!((r.max_det - dd).abs() < 1e-15, "{r:?}");
        assert!((r.mean_unitarity - du / 128.0).abs() < 1e-17);
        assert!((r.mean_det - dd / 128.0).abs() < 1e-17);
        reunitarize(&mut u).unwrap();
        let one = ColourMatrix::identity();
        assert!(u.links().iter().all(|l| (*l - one).norm_sqr() < 1e-30));
    }

    #[test]
    fn reunitarize_projects_random_perturbations_back_to_su3() {
        let lat = Lattice::new([4, 2, 2, 2]).unwrap();
        let mut u = GaugeField::<f64>::random(lat, 3);
        let noise = GaugeField::<f64>::random(lat, 4);
        for (l, n) in u.links_mut().iter_mut().zip(noise.links()) {
            *l += n.scale(1e-4);
        }
        let before = unitarity_report(&u);
        assert!(
            before.max_unitarity > 1e-5 && before.max_det > 1e-5,
            "{before:?}"
        );
        reunitarize(&mut u).unwrap();
        let after = unitarity_report(&u);
        assert!(
            after.max_unitarity < 1e-14 && after.max_det < 1e-14,
            "{after:?}"
        );
    }

    #[test]
    fn degenerate_and_nan_links_are_reported_and_leave_the_field_alone() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let mut u = GaugeField::<f32>::random(lat, 1);
        let original = u.clone();
        *u.link_mut(3, 1) = ColourMatrix::zero();
        let broken = u.clone();
        let err = reunitarize(&mut u).unwrap_err();
        let coords = lat.coords_of_cb(3);
        assert_eq!(err, GaugeError::DegenerateLink { coords, mu: 1 });
        assert!(err.to_string().contains("U_1(x)"), "{err}");
        assert_eq!(u, broken);
        let mut v = original;
        v.link_mut(0, 0).0[1][1].re = f32::NAN;
        assert!(matches!(
            reunitarize(&mut v),
            Err(GaugeError::DegenerateLink { mu: 0, .. })
        ));
        assert!(unitarity_report(&v).max_unitarity.is_nan());
    }
}
