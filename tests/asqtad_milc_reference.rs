//! The hand-written asqtad smearing of `reference_links` against MILC: on unit links it
//! gives the analytic tree-level values, and from MILC's 8⁴ sample configuration it
//! reproduces the fat and long links MILC itself computed (u0 = 0.502) to f32 rounding.

mod common;
mod reference_links;

use common::data;
use qdsl::core::field::GaugeField;
use qdsl::core::io::{read_gauge, ReadOptions};
use qdsl::core::lattice::Lattice;
use reference_links::{asqtad_fat_paths, asqtad_links, staggered_phase, AsqtadCoefficients};

#[test]
fn asqtad_path_count_is_milcs() {
    // 1 + 6 three-staples + 24 five-staples + 48 seven-staples + 6 Lepage.
    assert_eq!(
        asqtad_fat_paths(2, &AsqtadCoefficients::milc(1.0)).len(),
        85
    );
}

#[test]
fn unit_links_give_tree_level_asqtad() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let u0 = 0.8;
    let (fat, long) = asqtad_links(&GaugeField::unit(lat), u0);
    let fat_expected = 5.0 / 8.0 + 3.0 / (8.0 * u0 * u0) + 1.0 / (8.0 * u0.powi(6));
    let long_expected = -1.0 / (24.0 * u0 * u0);
    for cb in 0..lat.volume() {
        let c = lat.coords_of_cb(cb);
        for mu in 0..4 {
            // The time boundary: fat links of the last slice and long links of the last
            // three slices cross it once.
            let lt = lat.extent(3);
            let fat_sign = if mu == 3 && c[3] == lt - 1 { -1.0 } else { 1.0 };
            let long_sign = if mu == 3 && c[3] >= lt - 3 { -1.0 } else { 1.0 };
            let eta = staggered_phase(c, mu);
            let f = fat.link(cb, mu);
            let l = long.link(cb, mu);
            for i in 0..3 {
                for j in 0..3 {
                    let diag = if i == j { 1.0 } else { 0.0 };
                    assert!((f[(i, j)].re - fat_sign * eta * fat_expected * diag).abs() < 1e-14);
                    assert!((l[(i, j)].re - long_sign * eta * long_expected * diag).abs() < 1e-14);
                    assert!(f[(i, j)].im.abs() < 1e-14 && l[(i, j)].im.abs() < 1e-14);
                }
            }
        }
    }
}

#[test]
fn reproduces_milcs_fat_and_long_links() {
    let thin = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let milc_fat = read_gauge(data("milc/fat.l8"), &ReadOptions::smeared_links()).unwrap();
    let milc_long = read_gauge(data("milc/long.l8"), &ReadOptions::smeared_links()).unwrap();
    let (fat, long) = asqtad_links(&thin.field, 0.502);
    for (ours, milc, name) in [
        (&fat, &milc_fat.field, "fat"),
        (&long, &milc_long.field, "long"),
    ] {
        let scale = milc
            .links()
            .iter()
            .map(|m| m.max_abs_component())
            .fold(0.0, f64::max);
        let worst = ours
            .links()
            .iter()
            .zip(milc.links())
            .map(|(a, b)| (*a - *b).max_abs_component())
            .fold(0.0, f64::max);
        eprintln!("{name}: max abs difference {worst:.3e}, largest element {scale:.4}");
        // MILC computed in f32 and stored f32: agreement to f32 rounding of the largest
        // element (a few ulp of the sum of 85 paths).
        assert!(
            worst <= 4e-6 * scale,
            "{name}: max |Δ| = {worst:e}, max |link| = {scale}"
        );
    }
}

/// What the GPU kernels compute — the `link_paths!` trees of `AsqtadFat` and
/// `AsqtadLong` evaluated link by link, the staple levels nested by Horner's rule
/// (`qdsl_core::dsl::paths::tree`, the kernels' CPU reference) — reproduces MILC's own
/// fat and long links of its 8⁴ sample (u0 = 0.502) to f32 rounding, and the HISQ trees
/// (fat7, the U(3) projection, HisqFat and the Naik link with ε folded into the term
/// coefficients as the device does) give `qdsl_kernels::hisq_links`.
#[test]
fn the_gpu_trees_reproduce_milcs_fat_and_long_links() {
    use qdsl::core::dsl::paths::{tree, LinkPaths};
    use qdsl::kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat};
    let thin = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let v = fold_staggered_phases(&thin.field);
    let fat = tree::smear_cpu(&AsqtadFat::tree().unwrap(), &v, 0.502);
    let long = tree::smear_cpu(&AsqtadLong::tree().unwrap(), &v, 0.502);
    for (ours, file) in [(&fat, "milc/fat.l8"), (&long, "milc/long.l8")] {
        let milc = read_gauge(data(file), &ReadOptions::smeared_links()).unwrap();
        let scale = milc
            .field
            .links()
            .iter()
            .map(|m| m.max_abs_component())
            .fold(0.0, f64::max);
        let worst = ours
            .links()
            .iter()
            .zip(milc.field.links())
            .map(|(a, b)| (*a - *b).max_abs_component())
            .fold(0.0, f64::max);
        assert!(worst <= 4e-6 * scale, "{file}: max |Δ| = {worst:e}");
    }
    // HISQ, ε = −0.1: the device's recipe on the host against the CPU chain.
    let eps = -0.1;
    let mut w = tree::smear_cpu(&Fat7::tree().unwrap(), &v, 1.0);
    for link in w.links_mut() {
        *link = link.polar_u3().unwrap();
    }
    let (fat_c, long_c) = qdsl::kernels::naik_epsilon_coefficients(eps).unwrap();
    let x = tree::evaluate_cpu(&HisqFat::tree().unwrap(), &w, &fat_c).unwrap();
    let l = tree::evaluate_cpu(&AsqtadLong::tree().unwrap(), &w, &long_c).unwrap();
    let (cx, cl) = qdsl::kernels::hisq_links(&thin.field, eps).unwrap();
    for (ours, cpu, name) in [(&x, &cx, "X"), (&l, &cl, "L")] {
        let worst = ours
            .links()
            .iter()
            .zip(cpu.links())
            .map(|(a, b)| (*a - *b).max_abs_component())
            .fold(0.0, f64::max);
        assert!(worst < 1e-12, "HISQ {name}: max |Δ| = {worst:e}");
    }
    assert!(tree::evaluate_cpu(&HisqFat::tree().unwrap(), &w, &long_c).is_err());
}
