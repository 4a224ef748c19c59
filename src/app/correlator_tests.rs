//! The correlator's tests: parameters, normalisations (MILC's against a hand-written
//! dense point-source correlator), open boundaries against the periodic Wilson equation.

use super::*;
use crate::app::precision::Precision;
use crate::app::propagator::split_parities;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::lattice::Parity;
use qdsl_runtime::operator::cpu::EvenOddWilson;
use qdsl_runtime::solver::{SolverField, SolverKind, SolverOptions};

/// C(t) = A e^{−m t} has m_eff(t) = m exactly; a non-positive ratio is `None`.
#[test]
fn effective_mass_of_an_exponential_is_its_mass() {
    let c: Vec<f64> = (0..6).map(|t| 3.0 * (-0.37 * t as f64).exp()).collect();
    for m in effective_mass(&c) {
        assert!((m.unwrap() - 0.37).abs() < 1e-14);
    }
    assert_eq!(effective_mass(&[1.0, -1.0, 0.0]), vec![None, None]);
}

fn config(action: Action) -> CorrelatorConfig {
    CorrelatorConfig {
        action,
        kappa: None,
        mass: None,
        u0: None,
        epsilon_naik: None,
        csw: None,
        mu: None,
        clover_trace: FieldStrengthTrace::Keep,
        boundary: TimeBoundary::Antiperiodic.into(),
        origin: [0; 4],
        settings: SolveSettings {
            solver: SolverKind::Cgnr,
            precision: Precision::F64,
            options: SolverOptions::with_tolerance(1e-10),
        },
        normalisation: Normalisation::None,
    }
}

fn message(gauge: &GaugeField<f64>, c: &CorrelatorConfig) -> String {
    match full_solver(gauge, c) {
        Err(e) => e.to_string(),
        Ok(_) => "accepted".into(),
    }
}

/// Each action gets exactly its parameters, in range, with messages naming the flag.
#[test]
fn parameters_are_checked() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([2; 4]).unwrap());
    let mut c = config(Action::Wilson);
    assert!(message(&gauge, &c).contains("needs --kappa"));
    c.kappa = Some(-0.1);
    assert!(message(&gauge, &c).contains("--kappa must be a positive"));
    c.kappa = Some(0.1);
    assert_eq!(message(&gauge, &c), "accepted");
    c.mass = Some(0.1);
    assert!(message(&gauge, &c).contains("--mass does not apply"));
    let mut c = config(Action::Staggered);
    c.mass = Some(0.0);
    assert!(message(&gauge, &c).contains("--mass must be a positive"));
    c.mass = Some(0.1);
    c.u0 = Some(0.0);
    assert!(message(&gauge, &c).contains("--u0 must be a positive"));
    c.u0 = None;
    c.kappa = Some(0.1);
    assert!(message(&gauge, &c).contains("--kappa does not apply"));
}

/// Clover needs --csw and twisted mass --mu; neither takes --mass, Wilson takes
/// neither; ε and u0 are checked against HISQ.
#[test]
fn clover_twisted_mass_and_hisq_parameters_are_checked() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([2; 4]).unwrap());
    let mut c = config(Action::Clover);
    c.kappa = Some(0.12);
    assert!(message(&gauge, &c).contains("the clover action needs --csw"));
    c.csw = Some(-1.0);
    assert!(message(&gauge, &c).contains("--csw must be a finite number ≥ 0"));
    c.csw = Some(1.0);
    assert_eq!(message(&gauge, &c), "accepted");
    c.mu = Some(0.1);
    assert!(message(&gauge, &c).contains("--mu does not apply to the clover action"));
    c.action = Action::TwistedMass;
    assert_eq!(message(&gauge, &c), "accepted");
    c.mu = None;
    assert!(message(&gauge, &c).contains("needs --mu"));
    c.action = Action::Wilson;
    assert!(message(&gauge, &c).contains("--csw does not apply to the wilson action"));
    let mut c = config(Action::Asqtad);
    (c.mass, c.epsilon_naik) = (Some(0.1), Some(0.0));
    assert!(message(&gauge, &c).contains("--epsilon-naik does not apply to the asqtad"));
    c.action = Action::Hisq;
    assert_eq!(message(&gauge, &c), "accepted");
    c.epsilon_naik = Some(f64::NAN);
    assert!(message(&gauge, &c).contains("--epsilon-naik must be a finite"));
    (c.epsilon_naik, c.u0) = (None, Some(0.9));
    assert!(message(&gauge, &c).contains("--u0 does not apply to the hisq"));
    // u0 = 1 by construction: accepted.
    c.u0 = Some(1.0);
    assert_eq!(message(&gauge, &c), "accepted");
}

/// `milc` divides every C(t) by (L_x L_y L_z)² (4096 on 4³×8); m_eff is unchanged, and
/// the JSON names the normalisation with its divisor.
#[test]
fn milc_normalisation_divides_by_the_squared_spatial_volume() {
    assert_eq!(parse_normalisation("MILC"), Ok(Normalisation::Milc));
    assert_eq!(parse_normalisation("none"), Ok(Normalisation::None));
    assert!(parse_normalisation("volume-squared")
        .unwrap_err()
        .contains("none, milc"));
    let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
    assert_eq!(Normalisation::Milc.divisor(&lattice), 4096.0);
    let gauge = GaugeField::<f64>::unit(lattice);
    let mut c = config(Action::Staggered);
    c.mass = Some(0.2);
    c.settings.solver = SolverKind::Cg;
    let bare = measure(&gauge, &c).unwrap();
    c.normalisation = Normalisation::Milc;
    let scaled = measure(&gauge, &c).unwrap();
    for (b, m) in bare.correlator.iter().zip(&scaled.correlator) {
        assert!((b / m / 4096.0 - 1.0).abs() < 1e-12, "{b} vs {m}");
    }
    for (b, m) in bare.effective_mass.iter().zip(&scaled.effective_mass) {
        assert!((b.unwrap() - m.unwrap()).abs() < 1e-12);
    }
    let json = scaled.json();
    assert_eq!(json["normalisation"]["name"], "milc");
    assert_eq!(json["normalisation"]["divisor"], 4096.0);
    assert!(json["setup_seconds"].as_f64().is_some() && json["solve_seconds"].as_f64().is_some());
}

/// MILC's point-source pion, computed here independently of the library's operators
/// and solvers: the dense naive staggered M = 2m + D on a random 2⁴ field,
/// D_xy = Σ_μ η_μ(x)[U_μ(x) δ_{y,x+μ̂} − U_μ†(x−μ̂) δ_{y,x−μ̂}] with MILC's phases
/// (η_x = (−1)^t, η_y = (−1)^{t+x}, η_z = (−1)^{t+x+y}, η_t = 1) and the antiperiodic
/// time boundary, inverted by Gauss–Jordan; then MILC's print-out of its test inputs'
/// `correlator POINT_KAON_5 p000 1 * 1/(vol3)^2 pion5` line: meson_factor (1/(2·2·2)²)
/// / num_corr_occur (1) times Σ_b Σ_x (G e_b)†(x) (G e_b)(x) per time slice
/// (`ks_meson_cont_mom` with the pion5 sink, `spectrum_ks_print_diag`).
/// `--normalisation milc` reproduces it.
#[test]
fn milc_normalisation_is_milcs_point_source_printout() {
    let lattice = Lattice::new([2, 2, 2, 4]).unwrap();
    let gauge = GaugeField::<f64>::random(lattice, 23);
    let mass = 0.3;
    let mut c = config(Action::Staggered);
    (c.mass, c.origin, c.normalisation) = (Some(mass), [1, 0, 1, 2], Normalisation::Milc);
    c.settings.solver = SolverKind::Cg;
    c.settings.options = SolverOptions::with_tolerance(1e-13);
    let ours = measure(&gauge, &c).unwrap().correlator;

    let volume = lattice.volume();
    let n = 3 * volume;
    let index = |x: Coords, a: usize| 3 * lattice.lex_index(x) + a;
    let mut m = vec![vec![num_complex::Complex::new(0.0, 0.0); n]; n];
    for lex in 0..volume {
        let x = lattice.coords_of_lex(lex);
        for a in 0..3 {
            m[index(x, a)][index(x, a)] += 2.0 * mass;
        }
        for mu in 0..4 {
            let eta = match mu {
                0 => (-1.0f64).powi(x[3] as i32),
                1 => (-1.0f64).powi((x[3] + x[0]) as i32),
                2 => (-1.0f64).powi((x[3] + x[0] + x[1]) as i32),
                _ => 1.0,
            };
            let lt = lattice.extent(3);
            let up = lattice.shift(x, mu, 1).0;
            let down = lattice.shift(x, mu, -1).0;
            // The antiperiodic sign on the hops that cross the time boundary.
            let sign_up = if mu == 3 && x[3] == lt - 1 { -1.0 } else { 1.0 };
            let sign_down = if mu == 3 && x[3] == 0 { -1.0 } else { 1.0 };
            let u = gauge.link_at(x, mu);
            let u_down = gauge.link_at(down, mu);
            for a in 0..3 {
                for b in 0..3 {
                    m[index(x, a)][index(up, b)] += eta * sign_up * u[(a, b)];
                    m[index(x, a)][index(down, b)] -= eta * sign_down * u_down[(b, a)].conj();
                }
            }
        }
    }
    let inverse = dense_inverse(m);
    let vol3 = (lattice.extent(0) * lattice.extent(1) * lattice.extent(2)) as f64;
    let (factor, occurrences) = (1.0 / (vol3 * vol3), 1.0);
    let mut milc = vec![0.0; lattice.extent(3)];
    for lex in 0..volume {
        let x = lattice.coords_of_lex(lex);
        let t = (x[3] + lattice.extent(3) - c.origin[3]) % lattice.extent(3);
        for b in 0..3 {
            for a in 0..3 {
                milc[t] += inverse[index(x, a)][index(c.origin, b)].norm_sqr();
            }
        }
    }
    for (t, (q, w)) in ours.iter().zip(&milc).enumerate() {
        let w = w * factor / occurrences;
        assert!((q - w).abs() <= 1e-9 * w, "t = {t}: {q} vs MILC's {w}");
    }
}

/// The inverse of a dense complex matrix by Gauss–Jordan elimination with partial
/// pivoting.
fn dense_inverse(
    mut a: Vec<Vec<num_complex::Complex<f64>>>,
) -> Vec<Vec<num_complex::Complex<f64>>> {
    let n = a.len();
    let mut inv: Vec<Vec<num_complex::Complex<f64>>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| num_complex::Complex::new(f64::from(u8::from(i == j)), 0.0))
                .collect()
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].norm().total_cmp(&a[j][col].norm()))
            .unwrap_or(col);
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let p = a[col][col].inv();
        for j in 0..n {
            a[col][j] *= p;
            inv[col][j] *= p;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = a[r][col];
            for j in 0..n {
                let (ac, ic) = (a[col][j], inv[col][j]);
                a[r][j] -= f * ac;
                inv[r][j] -= f * ic;
            }
        }
    }
    inv
}

/// On unit links HISQ at ε = 0 has fat 9/8 and long −1/24 (times the phases), the
/// asqtad links at u0 = 1: the free 4³×8 correlators agree (periodic time, so the
/// boundary flip is applied to both); at ε = −0.1 the Naik term changes and so does
/// C(t).
#[test]
fn free_hisq_correlator_is_asqtad_at_zero_naik_correction() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([4, 4, 4, 8]).unwrap());
    let mut c = config(Action::Asqtad);
    (c.mass, c.u0, c.boundary) = (Some(0.2), Some(1.0), TimeBoundary::Periodic.into());
    c.settings.solver = SolverKind::Cg;
    let asqtad = measure(&gauge, &c).unwrap().correlator;
    (c.action, c.u0) = (Action::Hisq, None);
    let hisq = measure(&gauge, &c).unwrap();
    assert!(
        hisq.parameters.starts_with("m = 0.2, ε_Naik = 0, u0 = 1"),
        "{}",
        hisq.parameters
    );
    for (h, a) in hisq.correlator.iter().zip(&asqtad) {
        assert!((h - a).abs() <= 1e-9 * a, "{h} vs {a}");
    }
    c.epsilon_naik = Some(-0.1);
    let naik = measure(&gauge, &c).unwrap().correlator;
    assert!((naik[2] - asqtad[2]).abs() > 1e-4 * asqtad[2], "{naik:?}");
}

/// Free field on 4³×8, staggered m = 0.2: the report's table has one line per time
/// slice plus a header, C(t) is symmetric about L_t/2 (the free field is
/// time-reflection invariant), and the JSON carries the same numbers.
#[test]
fn free_staggered_report_is_symmetric_and_consistent() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([4, 4, 4, 8]).unwrap());
    let mut c = config(Action::Staggered);
    c.mass = Some(0.2);
    c.settings.solver = SolverKind::Cg;
    let report = measure(&gauge, &c).unwrap();
    let corr = &report.correlator;
    for t in 1..8 {
        assert!((corr[t] - corr[8 - t]).abs() <= 1e-9 * corr[t], "{corr:?}");
    }
    assert!(corr.iter().all(|&x| x > 0.0));
    assert_eq!(report.table().lines().count(), 9);
    assert_eq!(report.solves, 6);
    let json = report.json();
    assert_eq!(json["correlator"][3].as_f64(), Some(corr[3]));
    assert_eq!(json["effective_mass"].as_array().map(Vec::len), Some(7));
}

/// Clover at c_sw = 0 is Wilson in mass normalisation, S_clover = 2κ S_Wilson
/// (1 − κH = 2κ (m + 4 − H/2)), so C_clover(t) = (2κ)² C_Wilson(t) on a random field.
#[test]
fn clover_at_zero_csw_is_the_wilson_correlator_times_two_kappa_squared() {
    let gauge = GaugeField::<f64>::random(Lattice::new([4, 4, 4, 6]).unwrap(), 5);
    let mut c = config(Action::Wilson);
    (c.kappa, c.origin) = (Some(0.11), [1, 0, 2, 1]);
    c.settings.solver = SolverKind::BiCgStab;
    c.settings.options = SolverOptions::with_tolerance(1e-12);
    let wilson = measure(&gauge, &c).unwrap().correlator;
    (c.action, c.csw) = (Action::Clover, Some(0.0));
    let clover = measure(&gauge, &c).unwrap();
    assert!(clover.parameters.contains("mass normalisation"));
    let factor = (2.0 * 0.11_f64).powi(2);
    for (k, w) in clover.correlator.iter().zip(&wilson) {
        assert!((k - factor * w).abs() <= 1e-9 * factor * w, "{k} vs {w}");
    }
}

/// Wilson with open boundaries, c_F = 1.3, on a random 4³×6 field: every column ψ of
/// the propagator vanishes on x0 = 0 and x0 = 5, and on the active slices solves the
/// ordinary (periodic, independently written) Wilson equation (1 − κH)ψ = η plus the
/// boundary term 2κ(c_F − 1)ψ on x0 = 1 and 4 (openQCD's c_F in κ normalisation). The
/// boundary slices' C(t) are zero, the others positive.
#[test]
fn open_boundary_propagator_solves_the_wilson_equation_on_the_active_slices() {
    let lattice = Lattice::new([4, 4, 4, 6]).unwrap();
    let gauge = GaugeField::<f64>::random(lattice, 11);
    let (kappa, c_f) = (0.115, 1.3);
    let mut c = config(Action::Wilson);
    c.kappa = Some(kappa);
    c.boundary = FermionBoundary::from_flags("open", Some(c_f), None).unwrap();
    c.origin = [1, 2, 3, 2];
    c.settings.solver = SolverKind::BiCgStab;
    c.settings.options = SolverOptions::with_tolerance(1e-12);
    let report = measure(&gauge, &c).unwrap();
    assert!(report
        .parameters
        .contains("open time boundaries, c_F = 1.3"));
    let wilson = EvenOddWilson::new(gauge, kappa, Parity::Even, TimeBoundary::Periodic);
    let layout = report.propagator.columns[0].layout();
    for (column, psi) in report.propagator.columns.iter().enumerate() {
        let (spin, colour) = (column / 3, column % 3);
        let eta = ColourSpinorField::point_source(*layout, 0, c.origin, spin, colour).unwrap();
        let (psi_e, psi_o) = split_parities(psi).unwrap();
        let (mut out_e, mut out_o) = (psi_e.zeros_like(), psi_o.zeros_like());
        wilson
            .apply_full((&mut out_e, &mut out_o), (&psi_e, &psi_o), false)
            .unwrap();
        let out = crate::app::propagator::join_parities(&out_e, &out_o).unwrap();
        let mut worst = 0.0_f64;
        for i in 0..layout.sites_per_slice() {
            let x0 = layout.coords_of_site(i)[3];
            if x0 == 0 || x0 == 5 {
                assert!(psi.site(0, i).iter().all(|z| z.norm() == 0.0), "x0 = {x0}");
                continue;
            }
            let boundary = if x0 == 1 || x0 == 4 {
                2.0 * kappa * (c_f - 1.0)
            } else {
                0.0
            };
            for k in 0..12 {
                let lhs = out.site(0, i)[k] + psi.site(0, i)[k] * boundary;
                worst = worst.max((lhs - eta.site(0, i)[k]).norm());
            }
        }
        assert!(worst < 1e-9, "column {column}: {worst:e}");
    }
    let corr = &report.correlator;
    // t = x0 − 2 mod 6: x0 = 5 is t = 3, x0 = 0 is t = 4.
    assert_eq!((corr[3], corr[4]), (0.0, 0.0), "{corr:?}");
    assert!([0, 1, 2, 5].iter().all(|&t| corr[t] > 0.0), "{corr:?}");
}

/// With SF boundaries only x0 = 0 vanishes; a source there is refused naming the
/// slice, as are open boundaries for a staggered action.
#[test]
fn open_boundary_sources_and_actions_are_checked() {
    let gauge = GaugeField::<f64>::unit(Lattice::new([2, 2, 2, 4]).unwrap());
    let mut c = config(Action::Wilson);
    c.kappa = Some(0.1);
    c.boundary = FermionBoundary::from_flags("sf", None, None).unwrap();
    let message_sf = message(&gauge, &c);
    assert!(message_sf.contains("time slice t = 0 where the quark fields vanish"));
    c.origin = [0, 0, 0, 3];
    assert_eq!(message(&gauge, &c), "accepted");
    c.boundary = FermionBoundary::from_flags("open", None, None).unwrap();
    assert!(message(&gauge, &c).contains("t = 3 where the quark fields vanish"));
    let mut c = config(Action::Asqtad);
    c.mass = Some(0.1);
    c.boundary = FermionBoundary::from_flags("open", None, None).unwrap();
    assert!(message(&gauge, &c).contains("apply to the wilson, clover and twisted-mass"));
}
