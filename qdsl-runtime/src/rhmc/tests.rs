//! The fermion force against fourth-order finite differences of the action, for asqtad
//! and HISQ, the plain inverse and a rational form.

use super::*;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::generate::Hmc;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::rational::PartialFraction;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 4]).unwrap()
}

/// U_μ(x) → e^{tX_μ(x)} U_μ(x).
fn moved(u: &GaugeField<f64>, x: &GaugeField<f64>, t: f64) -> GaugeField<f64> {
    let mut out = u.clone();
    for (o, m) in out.links_mut().iter_mut().zip(x.links()) {
        *o = m.scale(t).exp() * *o;
    }
    out
}

/// f'(0) by [8(f(h) − f(−h)) − (f(2h) − f(−2h))]/12h, h = 1e−3.
fn derivative(f: impl Fn(f64) -> f64) -> f64 {
    let h = 1e-3;
    (8.0 * (f(h) - f(-h)) - (f(2.0 * h) - f(-2.0 * h))) / (12.0 * h)
}

fn fermion(smearing: StaggeredSmearing, parity: Parity) -> StaggeredFermion {
    StaggeredFermion {
        smearing,
        mass: 0.2,
        parity,
        tolerance: 1e-13,
    }
}

/// dS/dt along a random su(3) direction X equals Σ tr[X F] of the force, to 1e−8
/// relative (measured 1.7e−10 asqtad, 1.1e−10 HISQ; CG at 1e−13, the fourth-order
/// difference), for S = φ†A⁻¹φ (asqtad u0 = 0.9,
/// even φ) and a two-shift rational form (HISQ with ε = −0.1, odd φ), on a rough 4⁴
/// field (weak field of width 0.4).
#[test]
fn fermion_force_matches_finite_differences() {
    let u = GaugeField::<f64>::weak(lattice(), 21, 0.4);
    let inverse = PartialFraction {
        norm: 0.0,
        residues: vec![1.0],
        shifts: vec![0.0],
    };
    let rational = PartialFraction {
        norm: 0.3,
        residues: vec![0.7, 0.2],
        shifts: vec![0.05, 0.8],
    };
    for (f, r) in [
        (
            fermion(StaggeredSmearing::Asqtad { u0: 0.9 }, Parity::Even),
            &inverse,
        ),
        (
            fermion(StaggeredSmearing::Hisq { epsilon_naik: -0.1 }, Parity::Odd),
            &rational,
        ),
    ] {
        let layout = SpinorLayout::staggered(lattice(), SiteSubset::Single(f.parity));
        let phi = ColourSpinorField::<f64>::gaussian(layout, 4);
        let force = f.force(&u, &phi, r).unwrap();
        let x = Hmc::momenta(lattice(), 5, 0);
        let exact: f64 = x
            .links()
            .iter()
            .zip(force.links())
            .map(|(x, f)| (*x * *f).trace().re)
            .sum();
        let fd = derivative(|t| f.action(&moved(&u, &x, t), &phi, r).unwrap());
        assert!(
            (fd - exact).abs() < 1e-8 * exact.abs(),
            "{:?}: finite difference {fd}, force {exact}",
            f.smearing
        );
    }
}
