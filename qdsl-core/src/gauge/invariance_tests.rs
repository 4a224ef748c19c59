//! Physics checks across the gauge utilities: gauge invariance of loops, covariance of
//! fermion fields, and that a change which is not a gauge transformation is noticed.

use super::*;
use crate::field::{ColourSpinorField, FieldError, GaugeField, SiteSubset, SpinorLayout};
use crate::lattice::{Lattice, Lattice5D, Parity};
use crate::math::ColourVector;
use num_complex::Complex;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 4]).unwrap()
}

/// Largest element-wise difference between the links of two fields.
fn max_link_diff(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
    a.links()
        .iter()
        .zip(b.links())
        .map(|(x, y)| (*x - *y).max_abs_component())
        .fold(0.0, f64::max)
}

/// (P, R, L): plaquette, rectangle and Polyakov loop.
fn loops(u: &GaugeField<f64>) -> (f64, f64, Complex<f64>) {
    (plaquette(u).average, rectangle(u), polyakov_loop(u))
}

/// Plaquette, rectangle and Polyakov loop of a hot and of a weak field are unchanged by
/// a random gauge transformation to 1e−12, while the links themselves (and the link
/// trace, which is not gauge invariant) change at O(1).
#[test]
fn loops_are_gauge_invariant() {
    for u in [
        GaugeField::<f64>::random(lattice(), 1),
        GaugeField::<f64>::weak(lattice(), 1, 0.2),
    ] {
        let g = GaugeTransform::random(lattice(), 2);
        let mut v = u.clone();
        g.apply_to_links(&mut v).unwrap();
        let ((p0, r0, l0), (p1, r1, l1)) = (loops(&u), loops(&v));
        assert!((p0 - p1).abs() < 1e-12, "{p0} {p1}");
        assert!((r0 - r1).abs() < 1e-12, "{r0} {r1}");
        assert!((l0 - l1).norm() < 1e-12, "{l0} {l1}");
        assert!(max_link_diff(&u, &v) > 0.1);
        let after = unitarity_report(&v);
        assert!(
            after.max_unitarity < 1e-13 && after.max_det < 1e-13,
            "{after:?}"
        );
    }
    let u = GaugeField::<f64>::weak(lattice(), 1, 0.2);
    let mut v = u.clone();
    GaugeTransform::random(lattice(), 2)
        .apply_to_links(&mut v)
        .unwrap();
    assert!((link_trace(&u) - link_trace(&v)).abs() > 0.1);
}

/// U_μ(x) → g(x) U_μ(x) g†(x − μ̂) (the neighbour in the wrong direction) is not a gauge
/// transformation: on a smooth field the plaquette and rectangle move far from their
/// values, so the invariance test above would catch such a bug. (Conjugation
/// g(x) U g†(x) would be a poor probe: it keeps links near 1 near 1.)
#[test]
fn a_non_gauge_change_is_detected() {
    let u = GaugeField::<f64>::weak(lattice(), 7, 0.1);
    let g = GaugeTransform::<f64>::random(lattice(), 8);
    let mut wrong = u.clone();
    for cb in 0..lattice().volume() {
        for mu in 0..4 {
            let back = lattice().neighbour_cb(cb, mu, -1);
            let l = wrong.link_mut(cb, mu);
            *l = (*g.at(cb) * *l).mul_adjoint(g.at(back));
        }
    }
    let (p0, r0, _) = loops(&u);
    let (p1, r1, _) = loops(&wrong);
    assert!(p0 > 0.9 && r0 > 0.8, "{p0} {r0}");
    assert!((p0 - p1).abs() > 0.3, "{p0} {p1}");
    assert!((r0 - r1).abs() > 0.3, "{r0} {r1}");
}

/// Σ_{s,x,μ,σ} ψ_{s,σ}(x)† U_μ(x) ψ_{s,σ}(x+μ̂): invariant under a simultaneous gauge
/// transformation of U and ψ, so it checks that both use g at the same sites.
fn covariant_bilinear(u: &GaugeField<f64>, psi: &ColourSpinorField<f64>) -> Complex<f64> {
    let layout = psi.layout();
    let lat = u.lattice();
    let v = |s, cb, spin: usize| {
        let site = psi.site(s, cb);
        ColourVector::from_fn(|a| site[3 * spin + a])
    };
    let mut sum = Complex::new(0.0, 0.0);
    for s in 0..layout.ls() {
        for cb in 0..lat.volume() {
            for mu in 0..4 {
                let fwd = lat.neighbour_cb(cb, mu, 1);
                for spin in 0..layout.nspin() {
                    sum += v(s, cb, spin).dot(&(*u.link(cb, mu) * v(s, fwd, spin)));
                }
            }
        }
    }
    sum
}

/// A gauge transformation of a 5D Wilson-type field preserves its norm and, applied to
/// the links too, the covariant bilinear; it changes the field itself. On a single
/// parity it equals the restriction of the full-lattice transformation.
#[test]
fn fermion_transformation_is_covariant_and_norm_preserving() {
    let l5 = Lattice5D::new(lattice().dims(), 2).unwrap();
    let layout = SpinorLayout::domain_wall(l5, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(layout, 3);
    let u = GaugeField::<f64>::random(lattice(), 4);
    let g = GaugeTransform::<f64>::random(lattice(), 5);
    let (mut psi_g, mut u_g) = (psi.clone(), u.clone());
    g.apply_to_fermion(&mut psi_g).unwrap();
    g.apply_to_links(&mut u_g).unwrap();
    let (n0, n1) = (psi.norm_sqr(), psi_g.norm_sqr());
    assert!((n0 - n1).abs() < 1e-13 * n0, "{n0} {n1}");
    let (b0, b1) = (
        covariant_bilinear(&u, &psi),
        covariant_bilinear(&u_g, &psi_g),
    );
    assert!((b0 - b1).norm() < 1e-12 * b0.norm().max(1.0), "{b0} {b1}");
    // Without transforming the links the bilinear changes.
    assert!((covariant_bilinear(&u, &psi_g) - b0).norm() > 1.0);
    let diff = psi
        .data()
        .iter()
        .zip(psi_g.data())
        .map(|(a, b)| (a - b).norm());
    assert!(diff.fold(0.0, f64::max) > 0.1);

    let odd = layout.with_subset(SiteSubset::Single(Parity::Odd));
    let mut chi = ColourSpinorField::<f64>::gaussian(odd, 3);
    g.apply_to_fermion(&mut chi).unwrap();
    for s in 0..2 {
        for i in 0..odd.sites_per_slice() {
            assert_eq!(chi.site(s, i), psi_g.site(s, odd.cb_of_site(i)));
        }
    }
}

#[test]
fn transformations_are_su3_thread_independent_and_checked() {
    let g = GaugeTransform::<f64>::random(lattice(), 9);
    for cb in 0..lattice().volume() {
        assert!(g.at(cb).unitarity_deviation() < 1e-14);
        assert!((g.at(cb).determinant() - Complex::new(1.0, 0.0)).norm() < 1e-14);
    }
    let in_pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| GaugeTransform::<f64>::random(lattice(), 9))
    };
    assert_eq!(in_pool(1), g);
    assert_eq!(in_pool(2), g);
    assert_ne!(GaugeTransform::<f64>::random(lattice(), 10), g);

    let other = Lattice::new([4, 4, 4, 6]).unwrap();
    let mut u = GaugeField::<f64>::unit(other);
    assert!(matches!(
        g.apply_to_links(&mut u),
        Err(GaugeError::Field(FieldError::LatticeMismatch { .. }))
    ));
    let coarse = SpinorLayout::new(lattice(), 1, SiteSubset::Full, 2, 4).unwrap();
    let mut x = ColourSpinorField::<f64>::zeros(coarse);
    let err = g.apply_to_fermion(&mut x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a gauge transformation needs 3 colours, the field has 4"
    );
    // The identity leaves everything alone.
    let mut w = GaugeField::<f64>::random(lattice(), 1);
    let w0 = w.clone();
    GaugeTransform::identity(lattice())
        .apply_to_links(&mut w)
        .unwrap();
    assert_eq!(w, w0);
}
