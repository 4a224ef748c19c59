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
//! Staggered here is any of the staggered actions (naive, asqtad, HISQ). Clover obeys
//! the same γ5-hermiticity as Wilson, so its C(t) is the same sum; its propagator is in
//! mass normalisation, S = M⁻¹ with M = (m + 4) + clover − H/2 (Wilson's is κ
//! normalised, (1 − κH)⁻¹). For twisted mass γ5 M(μ) γ5 = M(−μ)†, so the same sum of the
//! μ propagator is the charged pion tr[γ5 S_u γ5 S_d] with S_d = S(−μ).
//!
//! Open and Schrödinger-functional time boundaries (openQCD's, Wilson-like actions only,
//! [`CloverEvenOdd`]): the propagator vanishes on the boundary slices (x0 = 0, and
//! x0 = L_t − 1 for open) and the source must lie between. The table still runs over
//! t = (x_t − x₀,t) mod L_t, so the slices at and near the boundaries (and those the
//! wrap reaches past them) carry boundary effects, not the pion's exponential decay:
//! C(t) and m_eff are meaningful only for x₀ and x₀ + t both far from the boundaries.
//!
//! In both cases t = (x_t − x₀,t) mod L_t, and C(t) is the squared norm of the
//! propagator's columns summed over the time slice, which [`pion_correlator`] computes.
//! The effective mass is m_eff(t) = ln[C(t)/C(t + 1)].
//!
//! [`Normalisation`]: the report's C(t) is that sum (`none`), MILC's normalisation of
//! the same correlator (`milc`, see below), or the sum divided by (L_x L_y L_z)²
//! (`volume-squared`); none of them changes m_eff.
//!
//! # MILC's normalisation (facts from MILC's source, milc_qcd `ks_spectrum`)
//!
//! * `generic_ks/ks_meson_mom.c`, `ks_meson_cont_mom`: the meson correlator of the
//!   propagators src1, src2 accumulates Σ_x e^{ip·x} (O_st src1)†(x)·src2(x) per time
//!   slice (for `pion5`, O_st src1 = src1: the sink sign (−1)^x is in the spin-taste
//!   operator), then `norm_v` multiplies it by the correlator line's phase and real
//!   `meson_factor` (the input's `* ddd` or `/ ddd`);
//! * `ks_spectrum/spectrum_ks.c`, `spectrum_ks_diag_gen_meson` sums that over the source
//!   colours, and `spectrum_ks_print_diag` prints it times `norm_fac = 1/num_corr_occur`
//!   (the number of correlator lines with the same label); its spatial-volume division
//!   (`space_vol = nx*ny*nz`) is commented out;
//! * MILC's own point-source inputs (e.g. `ks_spectrum/test/*.sample-in`) write the pion
//!   line as `correlator PION_PS p000  1 * 1 pion5 0 0 0 E E E`: phase 1, factor 1, one
//!   occurrence. (The wall-source inputs put `* 1/vol3` there themselves, "Normalization
//!   is 1/vol3".) The older `generic_ks/spectrum2.c` likewise prints the sum divided by
//!   the number of sources only.
//!
//! So for one point source MILC prints C(t) = Σ_colours Σ_x |G(x, x₀)|² with M = 2m + D
//! (MILC's `ksvector.ans.Minv` convention, checked in `tests/ksvector_milc_solve.rs`):
//! the bare sum, divisor 1. The divisor (L_x L_y L_z)² that issue 15 reported as MILC's
//! (4096 on 4³×8) is not in MILC's code; it remains available as `volume-squared`. No
//! MILC correlator output is among the recorded data (`tests/data/README.md`), so the
//! convention is pinned by MILC's source and a hand-written correlator in the tests, not
//! by MILC's printed numbers.
//!
//! Staggered C(t) also carries a component alternating as (−1)^t: on a free field
//! A⁻¹(x, x₀) = (4m² − D²)⁻¹ vanishes unless every coordinate of x − x₀ is even, so the
//! 4m²|A⁻¹|² part of |G|² = |(2m − D) A⁻¹|² lives on even t only, and the D A⁻¹ part
//! hops once in space (even t) or in time (odd t). Its m_eff(t) therefore alternates;
//! a staggered mass needs a fit with an oscillating term (or even t only).

use super::propagator::{
    point_propagator, CloverEvenOdd, FullSolver, Propagator, PropagatorError, SolveSettings,
    StaggeredEvenOdd, WilsonEvenOdd,
};
use super::solve::{check_hisq_u0, tadpole_factor, Action, FermionBoundary};
use qdsl_core::field::GaugeField;
use qdsl_core::gauge::{FieldStrengthTrace, OpenBoundary};
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

/// How the reported C(t) is normalised (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Normalisation {
    /// C(t) = Σ_x Σ_ab |G_ab(x, x₀)|² (Wilson: Σ over spin and colour), no factor.
    #[default]
    None,
    /// MILC's `ks_spectrum` print-out of a point-source pion with its inputs' `1 * 1`
    /// correlator line: the sum times meson_factor/num_corr_occur = 1 (module docs).
    Milc,
    /// The sum divided by (L_x L_y L_z)², the squared spatial volume (issue 15's
    /// reading of MILC, which MILC's source does not bear out).
    VolumeSquared,
}

impl Normalisation {
    /// The names `--normalisation` takes.
    pub const NAMES: [&'static str; 3] = ["none", "milc", "volume-squared"];

    /// The name `--normalisation` takes.
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::None => Self::NAMES[0],
            Normalisation::Milc => Self::NAMES[1],
            Normalisation::VolumeSquared => Self::NAMES[2],
        }
    }

    /// What C(t) is, as an equation.
    pub fn definition(self) -> &'static str {
        match self {
            Normalisation::None => "C(t) = Σ_x Σ_ab |G_ab(x, x0)|²",
            Normalisation::Milc => {
                "C(t) = (meson_factor / num_corr_occur) Σ_x Σ_ab |G_ab(x, x0)|², MILC's \
                 ks_spectrum with its point-source line `1 * 1`: factor 1"
            }
            Normalisation::VolumeSquared => "C(t) = Σ_x Σ_ab |G_ab(x, x0)|² / (Lx Ly Lz)²",
        }
    }

    /// The number the bare sum is divided by on `lattice`.
    pub fn divisor(self, lattice: &Lattice) -> f64 {
        match self {
            // MILC: multiplied by meson_factor = 1, divided by num_corr_occur = 1.
            Normalisation::None | Normalisation::Milc => 1.0,
            Normalisation::VolumeSquared => {
                let spatial = (0..3).map(|mu| lattice.extent(mu) as f64).product::<f64>();
                spatial * spatial
            }
        }
    }
}

/// "none", "milc" or "volume-squared": the normalisation of C(t).
pub fn parse_normalisation(s: &str) -> Result<Normalisation, String> {
    [
        Normalisation::None,
        Normalisation::Milc,
        Normalisation::VolumeSquared,
    ]
    .into_iter()
    .find(|n| n.name().eq_ignore_ascii_case(s))
    .ok_or_else(|| {
        format!(
            "unknown normalisation {s:?}: expected {}",
            Normalisation::NAMES.join(", ")
        )
    })
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
    /// The action: any of [`Action::ALL`].
    pub action: Action,
    /// κ (Wilson, clover and twisted mass only, > 0).
    pub kappa: Option<f64>,
    /// Quark mass m (staggered, asqtad and HISQ only, > 0: the staggered point-source
    /// solve needs M invertible).
    pub mass: Option<f64>,
    /// Tadpole factor u0; `None`: 1 for Wilson and naive staggered (no tadpole
    /// improvement), P^{1/4} for asqtad (MILC). Not a HISQ parameter (u0 = 1).
    pub u0: Option<f64>,
    /// Naik correction ε of the HISQ links (HISQ only, default 0).
    pub epsilon_naik: Option<f64>,
    /// Clover coefficient c_sw ≥ 0 (clover: required; twisted mass: default 0).
    pub csw: Option<f64>,
    /// Twisted mass μ (twisted mass only, required).
    pub mu: Option<f64>,
    /// The clover term's field-strength trace convention (clover, twisted mass).
    pub clover_trace: FieldStrengthTrace,
    /// The fermions' time boundary: periodic, antiperiodic, or open / SF (Wilson-like
    /// actions only; the source must lie on a slice where the quark fields live).
    pub boundary: FermionBoundary,
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

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Builds the full-lattice solver of `config.action`, checking that it gets exactly its
/// parameters (and, with an open or SF boundary, that the source lies on a slice where
/// the quark fields live); returns it with a description of the parameters.
pub fn full_solver(
    gauge: &GaugeField<f64>,
    config: &CorrelatorConfig,
) -> Result<(Box<dyn FullSolver>, String), CorrelatorError> {
    let bad = |m: String| CorrelatorError::Parameter(m);
    let action = config.action;
    let wilson_like = action.is_wilson_like();
    let takes = match action {
        Action::Wilson => "--kappa, optional --u0",
        Action::Clover => "--kappa, --csw, optional --u0",
        Action::TwistedMass => "--kappa, --mu, optional --csw, --u0",
        Action::Hisq => "--mass, optional --epsilon-naik",
        _ => "--mass, optional --u0",
    };
    // u0 is a parameter of every correlator action (it divides the thin links).
    let given = [
        ("--kappa", config.kappa.is_some()),
        ("--mass", config.mass.is_some()),
        ("--csw", config.csw.is_some()),
        ("--mu", config.mu.is_some()),
        ("--epsilon-naik", config.epsilon_naik.is_some()),
    ];
    if let Some(flag) = action.first_unused(&given) {
        return Err(bad(format!(
            "{flag} does not apply to the {action} action (it takes {takes})"
        )));
    }
    if let Some(eps) = config.epsilon_naik.filter(|e| !e.is_finite()) {
        return Err(bad(format!(
            "--epsilon-naik must be a finite number, found {eps}"
        )));
    }
    if let Some(u0) = config.u0.filter(|&u0| !positive(u0)) {
        return Err(bad(format!(
            "--u0 must be a positive finite number, found {u0}"
        )));
    }
    let boundary = config.boundary;
    let time = boundary.describe();
    let settings = config.settings.clone();
    if wilson_like {
        let kappa = config
            .kappa
            .ok_or_else(|| bad(format!("the {action} action needs --kappa K")))?;
        if !positive(kappa) {
            return Err(bad(format!(
                "--kappa must be a positive finite number, found {kappa}"
            )));
        }
        let u0 = config.u0.unwrap_or(1.0);
        let csw = match action {
            Action::Clover => config
                .csw
                .ok_or_else(|| bad("the clover action needs --csw C".into()))?,
            _ => config.csw.unwrap_or(0.0),
        };
        if !(csw.is_finite() && csw >= 0.0) {
            return Err(bad(format!(
                "--csw must be a finite number ≥ 0, found {csw}"
            )));
        }
        let mu = match action {
            Action::TwistedMass => config
                .mu
                .ok_or_else(|| bad("the twisted-mass action needs --mu MU".into()))?,
            _ => 0.0,
        };
        if !mu.is_finite() {
            return Err(bad(format!("--mu must be a finite number, found {mu}")));
        }
        if let FermionBoundary::Open(open) = boundary {
            check_open_source(gauge, config.origin, &open)?;
        }
        return match (action, boundary) {
            (Action::Wilson, FermionBoundary::Wrap(b)) => Ok((
                Box::new(WilsonEvenOdd::new(gauge, kappa, u0, b, settings)),
                format!("κ = {kappa}, u0 = {u0}, {time}"),
            )),
            (Action::Wilson, _) => Ok((
                Box::new(CloverEvenOdd::new(
                    gauge,
                    kappa,
                    0.0,
                    0.0,
                    u0,
                    boundary,
                    config.clover_trace,
                    true,
                    settings,
                )?),
                format!("κ = {kappa}, u0 = {u0}, {time}"),
            )),
            _ => Ok((
                Box::new(CloverEvenOdd::new(
                    gauge,
                    kappa,
                    csw,
                    mu,
                    u0,
                    boundary,
                    config.clover_trace,
                    false,
                    settings,
                )?),
                format!(
                    "κ = {kappa} (m = {:.6}), c_sw = {csw}, μ = {mu}, u0 = {u0}, {time}; \
                     S = M⁻¹ with M = (m + 4) + clover + iμγ5 − H/2 (mass normalisation)",
                    super::solve::wilson_mass(kappa)
                ),
            )),
        };
    }
    let FermionBoundary::Wrap(boundary) = boundary else {
        return Err(bad(format!(
            "open and sf boundaries apply to the wilson, clover and twisted-mass actions, not \
             to {action}"
        )));
    };
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
    let text = match action {
        Action::Hisq => format!("m = {mass}, ε_Naik = {epsilon_naik}, u0 = 1, {time}"),
        _ => format!("m = {mass}, u0 = {u0:.6}, {time}"),
    };
    let solver = StaggeredEvenOdd::new(gauge, action, mass, u0, epsilon_naik, boundary, settings)?;
    Ok((Box::new(solver), text))
}

/// An error if the source's time slice `origin[3]` is one where the quark fields vanish
/// under the boundary `open`: its propagator would be zero.
fn check_open_source(
    gauge: &GaugeField<f64>,
    origin: Coords,
    open: &OpenBoundary,
) -> Result<(), CorrelatorError> {
    let lt = gauge.lattice().extent(3);
    if open.vanishes(origin[3], lt) {
        return Err(CorrelatorError::Parameter(format!(
            "the source lies on time slice t = {} where the quark fields vanish ({open}): \
             choose --source x,y,z,t with 0 < t < L_t − 1 = {} (open) or 0 < t (sf)",
            origin[3],
            lt - 1
        )));
    }
    Ok(())
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

    /// `volume-squared` divides every C(t) by (L_x L_y L_z)² (4096 on 4³×8); m_eff is
    /// unchanged, and the JSON names the normalisation with its divisor.
    #[test]
    fn volume_squared_normalisation_divides_by_the_squared_spatial_volume() {
        assert_eq!(parse_normalisation("MILC"), Ok(Normalisation::Milc));
        assert_eq!(parse_normalisation("none"), Ok(Normalisation::None));
        assert_eq!(
            parse_normalisation("volume-squared"),
            Ok(Normalisation::VolumeSquared)
        );
        assert!(parse_normalisation("qdp")
            .unwrap_err()
            .contains("none, milc, volume-squared"));
        let lattice = Lattice::new([4, 4, 4, 8]).unwrap();
        assert_eq!(Normalisation::VolumeSquared.divisor(&lattice), 4096.0);
        let gauge = GaugeField::<f64>::unit(lattice);
        let mut c = config(Action::Staggered);
        c.mass = Some(0.2);
        c.settings.solver = SolverKind::Cg;
        let bare = measure(&gauge, &c).unwrap();
        c.normalisation = Normalisation::VolumeSquared;
        let scaled = measure(&gauge, &c).unwrap();
        for (b, m) in bare.correlator.iter().zip(&scaled.correlator) {
            assert!((b / m / 4096.0 - 1.0).abs() < 1e-12, "{b} vs {m}");
        }
        for (b, m) in bare.effective_mass.iter().zip(&scaled.effective_mass) {
            assert!((b.unwrap() - m.unwrap()).abs() < 1e-12);
        }
        let json = scaled.json();
        assert_eq!(json["normalisation"]["name"], "volume-squared");
        assert_eq!(json["normalisation"]["divisor"], 4096.0);
        assert!(
            json["setup_seconds"].as_f64().is_some() && json["solve_seconds"].as_f64().is_some()
        );
    }

    /// MILC's point-source pion, computed here independently of the library's operators
    /// and solvers: the dense naive staggered M = 2m + D on a random 2⁴ field,
    /// D_xy = Σ_μ η_μ(x)[U_μ(x) δ_{y,x+μ̂} − U_μ†(x−μ̂) δ_{y,x−μ̂}] with MILC's phases
    /// (η_x = (−1)^t, η_y = (−1)^{t+x}, η_z = (−1)^{t+x+y}, η_t = 1) and the antiperiodic
    /// time boundary, inverted by Gauss–Jordan; then MILC's print-out of the
    /// `correlator PION_PS p000 1 * 1 pion5` line: meson_factor (1) / num_corr_occur (1)
    /// times Σ_b Σ_x (G e_b)†(x) (G e_b)(x) per time slice (`ks_meson_cont_mom` with the
    /// pion5 sink, `spectrum_ks_print_diag`). `--normalisation milc` reproduces it.
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
        let (factor, occurrences) = (1.0, 1.0);
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
}
