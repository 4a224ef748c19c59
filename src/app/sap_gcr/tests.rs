use super::study::{grid_settings, grid_table, precision_table};
use super::*;
use qdsl_core::lattice::Lattice;
use qdsl_runtime::solver::sap::{AdaptiveSap, Reduction};

fn setup(sap: Option<SapParams>) -> SapGcrSetup {
    SapGcrSetup {
        kappa: 0.12,
        csw: 1.0,
        boundary: TimeBoundary::Antiperiodic,
        sap,
        nkv: 8,
        outer: Precision::F64,
        inner: Precision::F64,
        options: SolverOptions::with_tolerance(1e-10),
    }
}

/// On a random 4⁴ field every combination of outer f64/f32/f16/posit16 with inner
/// f64/f32/bf16/posit16, static and adaptive, f32 reductions included, reaches the
/// tolerance with a residual recomputed in f64; the JSON carries the counts and history.
#[test]
fn precisions_combine_and_converge() {
    let u = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 3);
    let eta = F64::gaussian(
        qdsl_core::field::SpinorLayout::wilson(*u.lattice(), qdsl_core::field::SiteSubset::Full),
        2,
    );
    let formats = [
        Precision::F64,
        Precision::F32,
        Precision::F16,
        Precision::Posit16,
    ];
    let inner_formats = [
        Precision::F64,
        Precision::F32,
        Precision::Bf16,
        Precision::Posit16,
    ];
    for (outer, inner) in formats.into_iter().zip(inner_formats) {
        for adaptive in [None, Some(AdaptiveSap::default())] {
            let params = SapParams {
                block: [2; 4],
                ncy: 3,
                nmr: 3,
                adaptive,
                reduction: if outer == Precision::F32 {
                    Reduction::F32
                } else {
                    Reduction::F64
                },
            };
            let s = SapGcrSetup {
                outer,
                inner,
                ..setup(Some(params))
            };
            let mut psi = eta.zeros_like();
            let out = solve_sap_gcr(&u, &s, &eta, &mut psi).unwrap();
            let what = format!("{outer}/{inner} adaptive={}", adaptive.is_some());
            assert!(
                out.gcr.result.is_converged(),
                "{what}: {:?}",
                out.gcr.result.convergence
            );
            assert!(
                out.recomputed_residual <= 1e-10,
                "{what}: {:e}",
                out.recomputed_residual
            );
            assert!(out.sap.applications >= out.gcr.result.iterations);
            let json = outcome_json(&s, [4; 4], &out);
            assert_eq!(json["iterations"], out.gcr.result.iterations);
            assert_eq!(
                json["history"].as_array().unwrap().len(),
                out.gcr.result.history.len()
            );
        }
    }
}

/// The grid and precision tables have a row per solve, with the plain GCR row first
/// and the relative columns computed against the best static setting (1.00 for it).
#[test]
fn study_tables() {
    let u = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 4);
    let eta = F64::gaussian(
        qdsl_core::field::SpinorLayout::wilson(*u.lattice(), qdsl_core::field::SiteSubset::Full),
        1,
    );
    let settings = grid_settings(&[[2; 4]], &[1, 2], &[2], (4, 4), AdaptiveSap::default());
    assert_eq!(settings.len(), 3);
    let rows = study::run_grid(&u, &setup(None), &settings, &eta, |_| {}).unwrap();
    let table = grid_table(&rows);
    assert_eq!(table.lines().count(), 2 + 4, "{table}");
    assert!(table.lines().nth(2).unwrap().starts_with("| plain GCR(8)"));
    assert!(table.contains("| 1.00 |"), "{table}");
    let rows: Vec<_> = rows
        .into_iter()
        .map(|r| (Precision::F64, r.outcome))
        .collect();
    assert_eq!(precision_table(&rows).lines().count(), 2 + 4);
}
