//! The gather plan against the scatter pull-back through the CPU plan
//! ([`super::super::fermion_force::pullback`], itself checked by finite differences).

use super::*;
use crate::dsl::paths::fermion_force;
use crate::dsl::paths::test_specs::spec;
use crate::dsl::paths::PathPlan;
use num_complex::Complex;

/// Asqtad fat (one-link, 3-, 5-, 7-staples, Lepage), fat7 (no Lepage), a spec with a
/// chain gap and reversed orientations, the Naik term and a bent three-hop path.
fn specs() -> Vec<PathSpec> {
    vec![
        spec(
            "asqtad_fat",
            &[
                (5.0 / 8.0, "+mu"),
                (-1.0 / 16.0, "+nu +mu -nu"),
                (1.0 / 64.0, "+nu +rho +mu -rho -nu"),
                (-1.0 / 384.0, "+nu +rho +sigma +mu -sigma -rho -nu"),
                (-1.0 / 16.0, "+nu +nu +mu -nu -nu"),
            ],
        ),
        spec(
            "fat7",
            &[
                (1.0 / 8.0, "+mu"),
                (-1.0 / 16.0, "+nu +mu -nu"),
                (1.0 / 64.0, "+nu +rho +mu -rho -nu"),
                (-1.0 / 384.0, "+nu +rho +sigma +mu -sigma -rho -nu"),
            ],
        ),
        spec(
            "gap",
            &[
                (0.3, "-nu +mu +nu"),
                (0.02, "+rho -nu +sigma +mu -sigma +nu -rho"),
                (0.1, "+nu +rho +mu -nu -rho"),
            ],
        ),
        spec("naik", &[(-1.0 / 24.0, "+mu +mu +mu")]),
        spec(
            "long",
            &[(-0.04, "+mu +mu +mu"), (0.01, "+nu +mu +mu +mu -nu")],
        ),
    ]
}

/// A general complex field (no unitarity): the sum of two random SU(3) fields, one
/// times i/2.
fn general_field(lat: Lattice, seed: u64) -> GaugeField<f64> {
    let a = GaugeField::<f64>::random(lat, seed);
    let b = GaugeField::<f64>::random(lat, seed + 1);
    let mut out = a.clone();
    for (o, m) in out.links_mut().iter_mut().zip(b.links()) {
        *o += m.scale_complex(Complex::new(0.0, 0.5));
    }
    out
}

#[test]
fn terms_split_into_the_chain_and_the_loose_ones() {
    let asqtad = ReversePlan::new(&specs()[0]).unwrap();
    assert_eq!(asqtad.chain, vec![vec![0], vec![1], vec![2], vec![3]]);
    assert_eq!(asqtad.loose, vec![4]);
    assert_eq!(asqtad.depth(), Some(3));
    assert_eq!(asqtad.stored_levels(), 1..3);
    // K1 (3 slots), K2 (3), then A1, A2.
    assert_eq!((asqtad.level_slot(1), asqtad.level_slot(2)), (0, 3));
    assert_eq!((asqtad.adjoint_slot(1), asqtad.adjoint_slot(2)), (6, 9));
    assert_eq!(asqtad.slots(), 12);
    assert_eq!(asqtad.launches(), 4 * 5 + 1);
    // Levels 96 + 48, adjoints 48 + 96, inline A3 48, wraps 4·3·(1 + 2 + 1)·8 = 384,
    // Lepage 4·6·5·4 = 480.
    assert_eq!(asqtad.products_per_site(), 144 + 144 + 48 + 384 + 480);
    let fat7 = ReversePlan::new(&specs()[1]).unwrap();
    assert!(fat7.loose.is_empty());
    assert_eq!(fat7.launches(), 20);
    // The gap: staple3 written "-nu +mu +nu" and the 7-staple with its names and signs
    // permuted are chain terms (levels 0 and 2 empty), the crossed 5-link is not.
    let gap = ReversePlan::new(&specs()[2]).unwrap();
    assert_eq!(gap.chain, vec![vec![], vec![0], vec![], vec![1]]);
    assert_eq!(gap.loose, vec![2]);
    assert_eq!((gap.slots(), gap.launches()), (12, 4 * 5 + 1));
    let naik = ReversePlan::new(&specs()[3]).unwrap();
    assert_eq!((naik.depth(), naik.loose.clone()), (None, vec![0]));
    assert_eq!((naik.slots(), naik.launches()), (0, 1));
    assert_eq!(naik.products_per_site(), 4 * 3 * 2);
    assert!(asqtad.to_string().contains("loose terms"), "{asqtad}");
}

/// The slot order is the kernels' (`field_slot`/`slot_used`): subsets of the three
/// directions other than μ ranked by their 3-bit masks.
#[test]
fn slot_sets_follow_the_kernels_order() {
    assert_eq!(slot_sets(0, 1), vec![0b0010, 0b0100, 0b1000]);
    assert_eq!(slot_sets(2, 2), vec![0b0011, 0b1001, 0b1010]);
    assert_eq!(slot_sets(3, 3), vec![0b0111]);
    assert_eq!(slot_sets(1, 0), vec![0]);
}

/// Every spec's gather equals the scatter pull-back through the plan to rounding, for
/// general complex links and gradients on an asymmetric lattice, in f64 and f32.
#[test]
fn gather_equals_the_scatter_pullback() {
    let lat = Lattice::new([4, 6, 4, 8]).unwrap();
    let u = general_field(lat, 3);
    let g = general_field(lat, 7);
    let u0 = 0.85;
    for s in specs() {
        let plan = ReversePlan::new(&s).unwrap();
        let coeffs: Vec<f64> = s.terms.iter().map(|t| t.tadpole_coeff(u0)).collect();
        let want = fermion_force::pullback(&PathPlan::new(&s).unwrap(), &u, u0, &g).unwrap();
        let got = pullback_cpu(&plan, &u, &g, &coeffs).unwrap();
        let scale = want
            .links()
            .iter()
            .map(|m| m.norm_sqr().sqrt())
            .fold(0.0, f64::max);
        let err = want
            .links()
            .iter()
            .zip(got.links())
            .map(|(a, b)| (*a - *b).norm_sqr().sqrt())
            .fold(0.0, f64::max);
        assert!(scale > 0.1, "{}: a gradient to compare", s.name);
        assert!(
            err < 1e-13 * scale,
            "{}: |gather − scatter| = {err:e}",
            s.name
        );
        let got32 = pullback_cpu(&plan, &u.cast::<f32>(), &g.cast::<f32>(), &coeffs).unwrap();
        let err32 = want
            .links()
            .iter()
            .zip(got32.cast::<f64>().links())
            .map(|(a, b)| (*a - *b).norm_sqr().sqrt())
            .fold(0.0, f64::max);
        assert!(err32 < 1e-5 * scale, "{} f32: {err32:e}", s.name);
    }
}

#[test]
fn wrong_coefficient_counts_are_refused() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let u = GaugeField::<f64>::random(lat, 1);
    let plan = ReversePlan::new(&specs()[0]).unwrap();
    let e = pullback_cpu(&plan, &u, &u, &[1.0]).unwrap_err().to_string();
    assert!(
        e.contains("expected 5 term coefficients") && e.contains("found 1"),
        "{e}"
    );
}
