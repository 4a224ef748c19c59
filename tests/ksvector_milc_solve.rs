//! MILC's asqtad solves reproduced: from MILC's source `ksvector.src.sample.l8` on its 8⁴
//! sample configuration (m = 0.1, u0 = 0.502, antiperiodic time: the files' own XML),
//! qdsl's full solve gives MILC's `ksvector.ans.Minv` = M⁻¹ η (M = 2m + D, both
//! parities) and its even-odd CG gives `ksvector.ans.MdaggerMinv` = (M†M)⁻¹ η, component
//! by component to f32 rounding of MILC's stored answers: an independent reference.

mod common;

use common::data;
use qdsl::app::propagator::{join_parities, split_parities};
use qdsl::app::solve::{solve_full_on, Action, Precision, SolveBackend, SolveConfig, Source};
use qdsl::core::dsl::variant::TimeBoundary;
use qdsl::core::field::ColourSpinorField;
use qdsl::core::io::{read_fermion, read_gauge, ReadOptions};
use qdsl::core::lattice::Parity;
use qdsl::kernels::asqtad_links;
use qdsl::runtime::operator::cpu::{EvenOddStaggered, StaggeredLinks};
use qdsl::runtime::solver::{SolverKind, SolverOptions};

const MASS: f64 = 0.1;
const U0: f64 = 0.502;

/// The largest |ours − theirs| over all components, relative to the largest |theirs|.
fn max_deviation(ours: &ColourSpinorField<f64>, theirs: &ColourSpinorField<f64>) -> f64 {
    assert_eq!(ours.layout(), theirs.layout());
    let scale = theirs.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
    let worst = ours
        .data()
        .iter()
        .zip(theirs.data())
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    worst / scale
}

/// MILC's vector in `rel` (one column).
fn milc_vector(rel: &str) -> ColourSpinorField<f64> {
    let mut file = read_fermion(data(rel)).unwrap();
    assert_eq!(file.columns.len(), 1);
    file.columns.remove(0)
}

#[test]
fn full_asqtad_solve_reproduces_milcs_minv_answer() {
    let gauge = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let eta = milc_vector("milc/ksvector.src.sample.l8");
    let answer = milc_vector("milc/ksvector.ans.Minv.sample.l8");
    let config = SolveConfig {
        clover_trace: Default::default(),
        action: Action::Asqtad,
        kappa: None,
        mass: Some(MASS),
        u0: Some(U0),
        csw: None,
        mu: None,
        epsilon_naik: None,
        solver: SolverKind::Cg,
        precision: Precision::F64,
        tolerance: 1e-12,
        max_iterations: 2000,
        source: Source::Point,
        boundary: TimeBoundary::Antiperiodic.into(),
    };
    let full = solve_full_on(&SolveBackend::Cpu, &gauge.field, &config, &eta, None).unwrap();
    assert!(full.report.result.is_converged());
    let deviation = max_deviation(&full.solution, &answer);
    println!(
        "M⁻¹η: {} CG iterations, max |ψ − ψ_MILC| / max |ψ_MILC| = {deviation:.3e}",
        full.report.result.iterations
    );
    // MILC stored its answer in f32 (relative rounding 6e-8 per component).
    assert!(deviation < 1e-6, "{deviation:e}");
}

#[test]
fn even_odd_cg_reproduces_milcs_mdagger_m_inverse_answer() {
    let gauge = read_gauge(data("milc/lat.sample.l8"), &ReadOptions::default()).unwrap();
    let eta = milc_vector("milc/ksvector.src.sample.l8");
    let answer = milc_vector("milc/ksvector.ans.MdaggerMinv.sample.l8");
    let (fat, long) = asqtad_links(&gauge.field, U0).unwrap();
    let links = StaggeredLinks::Improved { fat, long };
    // M†M = 4m² − D² is block diagonal: A_p = 4m² − D_pq D_qp on each parity.
    let (eta_e, eta_o) = split_parities(&eta).unwrap();
    let options = SolverOptions::with_tolerance(1e-12);
    let mut halves = Vec::new();
    for (parity, b) in [(Parity::Even, &eta_e), (Parity::Odd, &eta_o)] {
        let a = EvenOddStaggered::new(links.clone(), MASS, parity);
        let mut x = ColourSpinorField::zeros(*b.layout());
        let result = SolverKind::Cg
            .solve::<_, ColourSpinorField<f64>, _, _>(&a, &a, b, &mut x, &options)
            .unwrap();
        assert!(result.is_converged());
        halves.push(x);
    }
    let chi = join_parities(&halves[0], &halves[1]).unwrap();
    let deviation = max_deviation(&chi, &answer);
    println!("(M†M)⁻¹η: max |χ − χ_MILC| / max |χ_MILC| = {deviation:.3e}");
    assert!(deviation < 1e-6, "{deviation:e}");
}
