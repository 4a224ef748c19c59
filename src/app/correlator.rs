//! The logic of `qdsl correlator`: the pion two-point function from a point-source
//! propagator, and its effective mass.
//!
//! * Wilson: with γ5-hermiticity S(x₀, x) = γ5 S(x, x₀)† γ5, the pion
//!   C(t) = Σ_x tr[γ5 S(x, x₀) γ5 S(x₀, x)] = Σ_x tr[S(x, x₀)† S(x, x₀)]
//!   = Σ_x Σ_{αa,σb} |S_{αa,σb}(x, x₀)|², positive by construction.
//! * Staggered: with ε-hermiticity G(x₀, x) = ε(x₀) ε(x) G(x, x₀)†, ε(x) = (−1)^{x+y+z+t},
//!   the Goldstone pion (spin-taste γ5 ⊗ ξ5, whose interpolator carries ε(x)) is
//!   C(t) = Σ_x ε(x) ε(x₀) tr[G(x, x₀) G(x₀, x)] = Σ_x Σ_{a,b} |G_ab(x, x₀)|²: the (−1)^x
//!   signs of the operator cancel those of the hermiticity relation.
//!
//! Staggered here is any of the staggered actions (naive, asqtad, HISQ); the clover and
//! twisted-mass actions of `qdsl solve` are refused ([`full_solver`]).
//!
//! In both cases t = (x_t − x₀,t) mod L_t, and C(t) is the squared norm of the
//! propagator's columns summed over the time slice, which [`pion_correlator`] computes.
//! The effective mass is m_eff(t) = ln[C(t)/C(t + 1)].
//!
//! [`Normalisation`]: the report's C(t) is that sum (`none`), or the sum divided by
//! (L_x L_y L_z)² (`milc`), neither changes m_eff. The `milc` divisor is the ratio issue 15
//! found between MILC's printed pion correlators and the bare sum (4096 on a 4³×8
//! lattice). MILC's `ks_spectrum` (`spectrum_ks.c`) divides the summed correlator by the
//! number of contributions (`num_corr_occur`) and scales it by the `meson_factor` of the
//! input's `correlator` line; its spatial-volume division (`space_vol`) is commented out
//! there. No MILC correlator output is among the recorded data (`tests/data/README.md`),
//! so this convention is pinned by the ratio, not yet by MILC's own numbers.
//!
//! Staggered C(t) also carries a component alternating as (−1)^t: on a free field
//! A⁻¹(x, x₀) = (4m² − D²)⁻¹ vanishes unless every coordinate of x − x₀ is even, so the
//! 4m²|A⁻¹|² part of |G|² = |(2m − D) A⁻¹|² lives on even t only, and the D A⁻¹ part
//! hops once in space (even t) or in time (odd t). Its m_eff(t) therefore alternates;
//! a staggered mass needs a fit with an oscillating term (or even t only).

use super::propagator::{
    point_propagator, FullSolver, Propagator, PropagatorError, SolveSettings, StaggeredEvenOdd,
    WilsonEvenOdd,
};
use super::solve::{check_hisq_u0, tadpole_factor, Action};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{Coords, Lattice};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a correlator could not be measured or written.
#[derive(Debug, Error)]
pub enum CorrelatorError {
    /// A parameter is missing, unused by the action or out of range.
    #[error("{0}")]
    Parameter(String),
    /// The propagator failed.
    #[error(transparent)]
    Propagator(#[from] PropagatorError),
    /// The JSON file could not be written.
    #[error("cannot write the correlator to {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// "periodic" or "antiperiodic": the time boundary of the fermions.
pub fn parse_boundary(s: &str) -> Result<TimeBoundary, String> {
    match s.to_ascii_lowercase().as_str() {
        "periodic" => Ok(TimeBoundary::Periodic),
        "antiperiodic" => Ok(TimeBoundary::Antiperiodic),
        _ => Err(format!(
            "unknown time boundary {s:?}: expected periodic or antiperiodic"
        )),
    }
}

/// How the reported C(t) is normalised (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Normalisation {
    /// C(t) = Σ_x Σ_ab |G_ab(x, x₀)|² (Wilson: Σ over spin and colour), no factor.
    #[default]
    None,
    /// MILC's as issue 15 measured it: the sum divided by the source volume factor
    /// (L_x L_y L_z)² (see the module docs for what is and is not checked).
    Milc,
}

impl Normalisation {
    /// The name `--normalisation` takes.
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::None => "none",
            Normalisation::Milc => "milc",
        }
    }

    /// What C(t) is, as an equation.
    pub fn definition(self) -> &'static str {
        match self {
            Normalisation::None => "C(t) = Σ_x Σ_ab |G_ab(x, x0)|²",
            Normalisation::Milc => "C(t) = Σ_x Σ_ab |G_ab(x, x0)|² / (Lx Ly Lz)²",
        }
    }

    /// The number the bare sum is divided by on `lattice`.
    pub fn divisor(self, lattice: &Lattice) -> f64 {
        match self {
            Normalisation::None => 1.0,
            Normalisation::Milc => {
                let spatial = (0..3).map(|mu| lattice.extent(mu) as f64).product::<f64>();
                spatial * spatial
            }
        }
    }
}

/// "none" or "milc": the normalisation of C(t).
pub fn parse_normalisation(s: &str) -> Result<Normalisation, String> {
    match s.to_ascii_lowercase().as_str() {
        "none" => Ok(Normalisation::None),
        "milc" => Ok(Normalisation::Milc),
        _ => Err(format!(
            "unknown normalisation {s:?}: expected none or milc"
        )),
    }
}

fn boundary_name(b: TimeBoundary) -> &'static str {
    match b {
        TimeBoundary::Periodic => "periodic",
        TimeBoundary::Antiperiodic => "antiperiodic",
    }
}

/// C(t) = Σ_{x: x_t − x₀,t ≡ t} Σ_columns Σ_components |S(x, x₀)|² (see the module docs).
pub fn pion_correlator(propagator: &Propagator, lattice: &Lattice) -> Vec<f64> {
    let extent = lattice.extent(3);
    let t0 = propagator.origin[3];
    let mut c = vec![0.0; extent];
    for column in &propagator.columns {
        let layout = column.layout();
        for i in 0..layout.sites_per_slice() {
            let t = (layout.coords_of_site(i)[3] + extent - t0) % extent;
            c[t] += column.site(0, i).iter().map(|z| z.norm_sqr()).sum::<f64>();
        }
    }
    c
}

/// m_eff(t) = ln[C(t)/C(t + 1)] for t = 0 … L_t − 2; `None` where a ratio is not positive.
pub fn effective_mass(c: &[f64]) -> Vec<Option<f64>> {
    c.windows(2)
        .map(|w| {
            let ratio = w[0] / w[1];
            (ratio.is_finite() && ratio > 0.0).then(|| ratio.ln())
        })
        .collect()
}

/// What a correlator measurement needs besides the gauge links.
#[derive(Clone)]
pub struct CorrelatorConfig {
    /// The action: Wilson, naive staggered, asqtad or HISQ ([`CORRELATOR_ACTIONS`]).
    pub action: Action,
    /// κ (Wilson only, > 0).
    pub kappa: Option<f64>,
    /// Quark mass m (staggered, asqtad and HISQ only, > 0: the staggered point-source
    /// solve needs M invertible).
    pub mass: Option<f64>,
    /// Tadpole factor u0; `None`: 1 for Wilson and naive staggered (no tadpole
    /// improvement), P^{1/4} for asqtad (MILC). Not a HISQ parameter (u0 = 1).
    pub u0: Option<f64>,
    /// Naik correction ε of the HISQ links (HISQ only, default 0).
    pub epsilon_naik: Option<f64>,
    /// The fermions' time boundary.
    pub boundary: TimeBoundary,
    /// The source position x₀.
    pub origin: Coords,
    /// How the even-odd systems are solved.
    pub settings: SolveSettings,
    /// The normalisation of the reported C(t).
    pub normalisation: Normalisation,
}

/// The result of [`measure`].
#[derive(Clone, Debug)]
pub struct CorrelatorReport {
    /// The action.
    pub action: Action,
    /// The lattice.
    pub lattice: Lattice,
    /// The operator's parameters, e.g. "κ = 0.12, u0 = 1, antiperiodic time".
    pub parameters: String,
    /// The source position.
    pub origin: Coords,
    /// C(t), t = 0 … L_t − 1 from the source, normalised as `normalisation` says.
    pub correlator: Vec<f64>,
    /// The normalisation of `correlator`.
    pub normalisation: Normalisation,
    /// m_eff(t) = ln[C(t)/C(t + 1)].
    pub effective_mass: Vec<Option<f64>>,
    /// Even-odd solves run, and their iterations in total.
    pub solves: usize,
    /// Total iterations of the solves.
    pub iterations: usize,
    /// The largest final true residual of the solves.
    pub worst_residual: f64,
    /// Wall-clock time of the set-up: checking the parameters, smearing the links
    /// (asqtad, HISQ) and building the operator.
    pub setup: Duration,
    /// Wall-clock time of the propagator's solves.
    pub elapsed: Duration,
    /// The point-source propagator the correlator was contracted from.
    pub propagator: Propagator,
}

/// The actions the correlator supports (clover and twisted mass are `qdsl solve` only).
pub const CORRELATOR_ACTIONS: [Action; 4] = [
    Action::Wilson,
    Action::Staggered,
    Action::Asqtad,
    Action::Hisq,
];

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Builds the full-lattice solver of `config.action`, checking that it gets exactly its
/// parameters; returns it with a description of the parameters.
pub fn full_solver(
    gauge: &GaugeField<f64>,
    config: &CorrelatorConfig,
) -> Result<(Box<dyn FullSolver>, String), CorrelatorError> {
    let bad = |m: String| CorrelatorError::Parameter(m);
    let action = config.action;
    if !CORRELATOR_ACTIONS.contains(&action) {
        return Err(bad(format!(
            "the correlator supports wilson, staggered, asqtad, hisq, not the {action} action"
        )));
    }
    if let Some(eps) = config.epsilon_naik {
        if action != Action::Hisq {
            return Err(bad(format!(
                "--epsilon-naik does not apply to the {action} action (hisq only)"
            )));
        }
        if !eps.is_finite() {
            return Err(bad(format!(
                "--epsilon-naik must be a finite number, found {eps}"
            )));
        }
    }
    if let Some(u0) = config.u0.filter(|&u0| !positive(u0)) {
        return Err(bad(format!(
            "--u0 must be a positive finite number, found {u0}"
        )));
    }
    let boundary = config.boundary;
    let settings = config.settings.clone();
    match action {
        Action::Wilson => {
            if config.mass.is_some() {
                return Err(bad(
                    "--mass does not apply to the wilson action (it takes --kappa)".into(),
                ));
            }
            let kappa = config
                .kappa
                .ok_or_else(|| bad("the wilson action needs --kappa K".into()))?;
            if !positive(kappa) {
                return Err(bad(format!(
                    "--kappa must be a positive finite number, found {kappa}"
                )));
            }
            let u0 = config.u0.unwrap_or(1.0);
            let text = format!("κ = {kappa}, u0 = {u0}, {} time", boundary_name(boundary));
            Ok((
                Box::new(WilsonEvenOdd::new(gauge, kappa, u0, boundary, settings)),
                text,
            ))
        }
        _ => {
            if config.kappa.is_some() {
                return Err(bad(format!(
                    "--kappa does not apply to the {action} action (it takes --mass)"
                )));
            }
            if action == Action::Hisq {
                check_hisq_u0(config.u0).map_err(|e| bad(e.to_string()))?;
            }
            let mass = config
                .mass
                .ok_or_else(|| bad(format!("the {action} action needs --mass M")))?;
            if !positive(mass) {
                return Err(bad(format!(
                    "--mass must be a positive finite number, found {mass}"
                )));
            }
            let u0 = match action {
                Action::Asqtad => tadpole_factor(gauge, config.u0),
                _ => config.u0.unwrap_or(1.0),
            };
            let epsilon_naik = config.epsilon_naik.unwrap_or(0.0);
            let time = boundary_name(boundary);
            let text = match action {
                Action::Hisq => format!("m = {mass}, ε_Naik = {epsilon_naik}, u0 = 1, {time} time"),
                _ => format!("m = {mass}, u0 = {u0:.6}, {time} time"),
            };
            let solver =
                StaggeredEvenOdd::new(gauge, action, mass, u0, epsilon_naik, boundary, settings)?;
            Ok((Box::new(solver), text))
        }
    }
}

/// Computes the point-source propagator at `config.origin` and the pion correlator.
pub fn measure(
    gauge: &GaugeField<f64>,
    config: &CorrelatorConfig,
) -> Result<CorrelatorReport, CorrelatorError> {
    let setup_start = Instant::now();
    let (solver, parameters) = full_solver(gauge, config)?;
    let setup = setup_start.elapsed();
    let start = Instant::now();
    let propagator = point_propagator(solver.as_ref(), config.origin)?;
    let elapsed = start.elapsed();
    let lattice = *gauge.lattice();
    let divisor = config.normalisation.divisor(&lattice);
    let correlator: Vec<f64> = pion_correlator(&propagator, &lattice)
        .into_iter()
        .map(|c| c / divisor)
        .collect();
    let results = || propagator.results.iter().flatten();
    Ok(CorrelatorReport {
        action: config.action,
        lattice,
        parameters,
        origin: config.origin,
        effective_mass: effective_mass(&correlator),
        correlator,
        normalisation: config.normalisation,
        solves: results().count(),
        iterations: results().map(|r| r.iterations).sum(),
        worst_residual: results().map(|r| r.true_residual).fold(0.0, f64::max),
        setup,
        elapsed,
        propagator,
    })
}

impl CorrelatorReport {
    /// The table "t  C(t)  m_eff(t)", one line per time slice.
    pub fn table(&self) -> String {
        let mut out = format!("{:>4}  {:>22}  {:>12}\n", "t", "C(t)", "m_eff(t)");
        for (t, c) in self.correlator.iter().enumerate() {
            let m = match self.effective_mass.get(t) {
                Some(Some(m)) => format!("{m:12.6}"),
                _ => format!("{:>12}", "-"),
            };
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{t:>4}  {c:22.15e}  {m}");
        }
        out
    }

    /// The report as JSON: set-up, solver totals, the normalisation (name, equation and
    /// divisor), the times (set-up and solve apart), and arrays `correlator` and
    /// `effective_mass` (null where undefined).
    pub fn json(&self) -> Value {
        json!({
            "action": self.action.name(),
            "lattice": self.lattice.dims(),
            "parameters": self.parameters,
            "origin": self.origin,
            "solves": self.solves,
            "iterations": self.iterations,
            "worst_true_residual": self.worst_residual,
            "seconds": self.elapsed.as_secs_f64(),
            "setup_seconds": self.setup.as_secs_f64(),
            "solve_seconds": self.elapsed.as_secs_f64(),
            "normalisation": {
                "name": self.normalisation.name(),
                "definition": self.normalisation.definition(),
                "divisor": self.normalisation.divisor(&self.lattice),
            },
            "correlator": self.correlator,
            "effective_mass": self.effective_mass,
        })
    }

    /// Writes [`Self::json`] (pretty-printed) to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), CorrelatorError> {
        let text = serde_json::to_string_pretty(&self.json()).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|source| CorrelatorError::Write {
            path: path.display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::low_precision::LowPrecision;
    use qdsl_runtime::solver::{SolverKind, SolverOptions};

    /// C(t) = A e^{−m t} has m_eff(t) = m exactly; a non-positive ratio is `None`.
    #[test]
    fn effective_mass_of_an_exponential_is_its_mass() {
        let c: Vec<f64> = (0..6).map(|t| 3.0 * (-0.37 * t as f64).exp()).collect();
        for m in effective_mass(&c) {
            assert!((m.unwrap() - 0.37).abs() < 1e-14);
        }
        assert_eq!(effective_mass(&[1.0, -1.0, 0.0]), vec![None, None]);
    }

    #[test]
    fn boundaries_parse() {
        assert_eq!(parse_boundary("Periodic"), Ok(TimeBoundary::Periodic));
        assert_eq!(
            parse_boundary("antiperiodic"),
            Ok(TimeBoundary::Antiperiodic)
        );
        assert!(parse_boundary("open")
            .unwrap_err()
            .contains("periodic or antiperiodic"));
    }

    fn config(action: Action) -> CorrelatorConfig {
        CorrelatorConfig {
            action,
            kappa: None,
            mass: None,
            u0: None,
            epsilon_naik: None,
            boundary: TimeBoundary::Antiperiodic,
            origin: [0; 4],
            settings: SolveSettings {
                solver: SolverKind::Cgnr,
                precision: LowPrecision::F64,
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

    /// Clover and twisted mass are refused naming the supported actions; ε and u0 are
    /// checked against HISQ.
    #[test]
    fn clover_is_refused_and_hisq_parameters_are_checked() {
        let gauge = GaugeField::<f64>::unit(Lattice::new([2; 4]).unwrap());
        for action in [Action::Clover, Action::TwistedMass] {
            let mut c = config(action);
            c.kappa = Some(0.12);
            assert_eq!(
                message(&gauge, &c),
                format!(
                    "the correlator supports wilson, staggered, asqtad, hisq, not the {action} \
                     action"
                )
            );
        }
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

    /// `--normalisation milc` divides every C(t) by (L_x L_y L_z)² (4096 on 4³×8, the
    /// ratio issue 15 found between MILC's printed values and the bare sum); m_eff is
    /// unchanged, and the JSON names the normalisation with its divisor.
    #[test]
    fn milc_normalisation_divides_by_the_squared_spatial_volume() {
        assert_eq!(parse_normalisation("MILC"), Ok(Normalisation::Milc));
        assert_eq!(parse_normalisation("none"), Ok(Normalisation::None));
        assert!(parse_normalisation("qdp")
            .unwrap_err()
            .contains("none or milc"));
        let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
        assert_eq!(Normalisation::Milc.divisor(&lattice), 4096.0);
        let gauge = GaugeField::<f64>::unit(lattice);
        let mut c = config(Action::Staggered);
        c.mass = Some(0.2);
        c.settings.solver = SolverKind::Cg;
        let bare = measure(&gauge, &c).unwrap();
        c.normalisation = Normalisation::Milc;
        let milc = measure(&gauge, &c).unwrap();
        for (b, m) in bare.correlator.iter().zip(&milc.correlator) {
            assert!((b / m / 4096.0 - 1.0).abs() < 1e-12, "{b} vs {m}");
        }
        for (b, m) in bare.effective_mass.iter().zip(&milc.effective_mass) {
            assert!((b.unwrap() - m.unwrap()).abs() < 1e-12);
        }
        let json = milc.json();
        assert_eq!(json["normalisation"]["name"], "milc");
        assert_eq!(json["normalisation"]["divisor"], 4096.0);
        assert!(
            json["setup_seconds"].as_f64().is_some() && json["solve_seconds"].as_f64().is_some()
        );
    }

    /// On unit links HISQ at ε = 0 has fat 9/8 and long −1/24 (times the phases), the
    /// asqtad links at u0 = 1: the free 4³×8 correlators agree (periodic time, so the
    /// boundary flip is applied to both); at ε = −0.1 the Naik term changes and so does
    /// C(t).
    #[test]
    fn free_hisq_correlator_is_asqtad_at_zero_naik_correction() {
        let gauge = GaugeField::<f64>::unit(Lattice::new([4, 4, 4, 8]).unwrap());
        let mut c = config(Action::Asqtad);
        (c.mass, c.u0, c.boundary) = (Some(0.2), Some(1.0), TimeBoundary::Periodic);
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
}
