//! `link_paths!` smearing with the input links in recon 12 + phase (rows 0 and 1 and
//! λ = det L), emulated on the CPU as the kernels round it: every rebuilt thin link is
//! within the gauge formats' own recon-12 bound ([`LinkFormat::error_bound`]), every
//! smeared link within that error propagated through the paths, MILC's fat.l8 and long.l8
//! are still reproduced from recon-12 thin links, and the U(3) HISQ input W (det W a phase,
//! not ±1) is rebuilt through its phase.

mod common;

use common::data;
use qdsl::core::dsl::paths::{LinkPaths, PathKnobs};
use qdsl::core::dsl::variant::Recon;
use qdsl::core::field::GaugeField;
use qdsl::core::format::{Compression, LinkFormat, LinkStorage};
use qdsl::core::io::{read_gauge, ReadOptions};
use qdsl::core::math::ColourMatrix;
use qdsl::kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, HisqFat};

fn recon12() -> PathKnobs {
    PathKnobs::with_input(Recon::R12)
}

fn thin() -> GaugeField<f64> {
    read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default())
        .unwrap()
        .field
}

/// ‖M‖_F.
fn frobenius(m: &ColourMatrix<f64>) -> f64 {
    m.norm_sqr().sqrt()
}

/// max over links of ‖a − b‖_F.
fn worst_frobenius(a: &GaugeField<f64>, b: &GaugeField<f64>) -> f64 {
    a.links()
        .iter()
        .zip(b.links())
        .map(|(x, y)| frobenius(&(*x - *y)))
        .fold(0.0, f64::max)
}

/// Σ over the concrete paths of one direction of |c| u0^(1−L) · L: a path product of
/// unitary links changes by at most Σ_k ‖ΔU_k‖_F when each link U_k changes by ΔU_k (to
/// first order), so ‖ΔF_μ‖_F ≤ this weight × max ‖ΔU‖_F.
fn path_weight<S: LinkPaths>(u0: f64) -> f64 {
    S::spec()
        .concrete_paths(0, u0)
        .iter()
        .map(|(c, p)| c.abs() * p.len() as f64)
        .sum()
}

/// The smeared links of spec `S` from recon-12 input against those from the exact input:
/// within the propagated input error (plus 1e−12 of f64 arithmetic), and not equal.
fn assert_within_propagated_bound<S: LinkPaths>(v: &GaugeField<f64>, u0: f64, input_error: f64) {
    let exact = S::smear_cpu(v, u0).unwrap();
    let compressed = S::smear_cpu_with(v, u0, &recon12()).unwrap();
    let found = worst_frobenius(&compressed, &exact);
    let bound = 1.001 * path_weight::<S>(u0) * input_error + 1e-12;
    let name = S::spec().name;
    eprintln!("{name}: max ‖ΔF‖_F = {found:.3e}, bound {bound:.3e}");
    assert!(found <= bound, "{name}: {found:e} > {bound:e}");
    assert!(
        found > 0.0,
        "{name}: the f32-stored links are not exactly unitary"
    );
}

/// The thin links of lat.sample.l8 (stored in f32, so unitary only to ~1e−7) with MILC's
/// phases: each rebuilt link obeys the recon-12 bound of the gauge formats for its sign,
/// and the asqtad fat, long and fat7 links obey the bound propagated through their paths.
#[test]
fn recon12_input_smearing_equals_the_uncompressed_to_the_format_bound() {
    let v = fold_staggered_phases(&thin());
    let rebuilt = qdsl::core::dsl::paths::knobs::emulate_input(&v, &recon12(), "test").unwrap();
    let format = LinkFormat::new(LinkStorage::F64, Compression::Recon12);
    for (i, (r, l)) in rebuilt.links().iter().zip(v.links()).enumerate() {
        let sign = if l.determinant().re > 0.0 { 1.0 } else { -1.0 };
        let bound = format.error_bound::<f64>(&l.scale(sign));
        let found = (*r - *l).max_abs_component();
        assert!(
            found <= bound,
            "link {i}: {found:e} > recon-12 bound {bound:e}"
        );
    }
    let input_error = worst_frobenius(&rebuilt, &v);
    assert!(input_error > 0.0 && input_error < 1e-5, "{input_error:e}");
    assert_within_propagated_bound::<AsqtadFat>(&v, 0.502, input_error);
    assert_within_propagated_bound::<AsqtadLong>(&v, 0.502, input_error);
    assert_within_propagated_bound::<Fat7>(&v, 1.0, input_error);
}

/// MILC's fat and long links of lat.sample.l8 (u0 = 0.502, f32 files) from recon-12 thin
/// links, to the same few-ulp agreement as from the uncompressed ones.
#[test]
fn recon12_inputs_still_reproduce_milcs_fat_and_long_links() {
    let v = fold_staggered_phases(&thin());
    let milc = |f: &str| {
        read_gauge(data(f), &ReadOptions::smeared_links())
            .unwrap()
            .field
    };
    for (ours, reference, name) in [
        (
            AsqtadFat::smear_cpu_with(&v, 0.502, &recon12()).unwrap(),
            milc("milc/fat.l8"),
            "fat",
        ),
        (
            AsqtadLong::smear_cpu_with(&v, 0.502, &recon12()).unwrap(),
            milc("milc/long.l8"),
            "long",
        ),
    ] {
        let worst = ours
            .links()
            .iter()
            .zip(reference.links())
            .map(|(a, b)| (*a - *b).max_abs_component())
            .fold(0.0, f64::max);
        let scale = reference
            .links()
            .iter()
            .map(|m| m.max_abs_component())
            .fold(0.0, f64::max);
        assert!(worst <= 4e-6 * scale, "{name}: max |Δ| = {worst:e}");
    }
    // In f32 (the kernels' single precision), recon-12 fat links agree with MILC too.
    let fat32 = AsqtadFat::smear_cpu_with(&v.cast::<f32>(), 0.502, &recon12()).unwrap();
    let reference = milc("milc/fat.l8");
    let worst = fat32
        .cast::<f64>()
        .links()
        .iter()
        .zip(reference.links())
        .map(|(a, b)| (*a - *b).max_abs_component())
        .fold(0.0, f64::max);
    assert!(worst <= 2e-5, "f32 fat: max |Δ| = {worst:e}");
}

/// The HISQ second level reads W = V(V†V)^(−1/2), in U(3) with det W a phase that is not
/// ±1: its recon-12 record stores that phase, W is rebuilt to f64 rounding and the level-2
/// links follow to the propagated bound. Without the phase (λ = 1, plain recon 12) row 2
/// would be off by |det W − 1|, which this configuration makes large.
#[test]
fn recon12_input_carries_the_u3_phase_of_hisq_w() {
    let v = Fat7::smear_cpu(&fold_staggered_phases(&thin()), 1.0).unwrap();
    let mut w = v.clone();
    for link in w.links_mut() {
        *link = link.polar_u3().unwrap();
    }
    let far_from_su3 = w
        .links()
        .iter()
        .map(|l| (l.determinant() - num_complex::Complex::new(1.0, 0.0)).norm())
        .fold(0.0, f64::max);
    assert!(far_from_su3 > 0.5, "det W − 1 reaches {far_from_su3}");
    let rebuilt = qdsl::core::dsl::paths::knobs::emulate_input(&w, &recon12(), "test").unwrap();
    let input_error = worst_frobenius(&rebuilt, &w);
    assert!(input_error < 1e-13, "{input_error:e}");
    assert_within_propagated_bound::<HisqFat>(&w, 1.0, input_error);
}
