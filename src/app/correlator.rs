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
//! [`Normalisation`]: the report's C(t) is that sum (`none`) or MILC's normalisation of
//! the same correlator (`milc`: the sum divided by (L_x L_y L_z)², see below); neither
//! changes m_eff.
//!
//! # MILC's normalisation (facts from MILC's source and its test inputs, milc_qcd `ks_spectrum`)
//!
//! * `generic_ks/ks_meson_mom.c`, `ks_meson_cont_mom`: the meson correlator of the
//!   propagators src1, src2 accumulates Σ_x e^{ip·x} (O_st src1)†(x)·src2(x) per time
//!   slice (for `pion5`, O_st src1 = src1: the sink sign (−1)^x is in the spin-taste
//!   operator), then `norm_v` multiplies it by the correlator line's phase and real
//!   `meson_factor` (the input's `* ddd` or `/ ddd`);
//! * `ks_spectrum/spectrum_ks.c`, `spectrum_ks_diag_gen_meson` sums that over the source
//!   colours, and `spectrum_ks_print_diag` prints it times `norm_fac = 1/num_corr_occur`
//!   (the number of correlator lines with the same label); the code itself divides by no
//!   volume (its `space_vol` division is commented out): the volume factor is the
//!   input's `meson_factor`;
//! * MILC's test inputs of the point-source pion put it there:
//!   `ks_spectrum/test/ks_spectrum_asqtad.periodic.1.sample-in` (4³×8) reads
//!   `# Normalization is 1/(vol3)^2` and `correlator POINT_KAON_5 p000 1 * 0.000244141
//!   pion5 0 0 0 E E E` (0.000244141 = 1/4096 = 1/(4·4·4)²; its wall-source lines carry
//!   1/(vol3)³), one occurrence per label.
//!
//! So MILC prints, for one point source, C(t) = Σ_colours Σ_x |G(x, x₀)|² / (L_x L_y L_z)²
//! with M = 2m + D (MILC's `ksvector.ans.Minv` convention, checked in
//! `tests/ksvector_milc_solve.rs`): 4096 times smaller than the bare sum on 4³×8, the
//! ratio issue 15 found between MILC's printed pion correlators and the bare sum. No
//! MILC correlator output is among the recorded data (`tests/data/README.md`), so the
//! convention is pinned by MILC's source and inputs and a hand-written correlator in the
//! tests, not by MILC's printed numbers.
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
    /// MILC's `ks_spectrum` print-out of a point-source pion with its test inputs'
    /// correlator line `1 * 1/(vol3)^2`: the sum divided by (L_x L_y L_z)² (module docs).
    Milc,
}

impl Normalisation {
    /// The names `--normalisation` takes.
    pub const NAMES: [&'static str; 2] = ["none", "milc"];

    /// The name `--normalisation` takes.
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::None => Self::NAMES[0],
            Normalisation::Milc => Self::NAMES[1],
        }
    }

    /// What C(t) is, as an equation.
    pub fn definition(self) -> &'static str {
        match self {
            Normalisation::None => "C(t) = Σ_x Σ_ab |G_ab(x, x0)|²",
            Normalisation::Milc => {
                "C(t) = Σ_x Σ_ab |G_ab(x, x0)|² / (Lx Ly Lz)², MILC's ks_spectrum point-source \
                 pion (meson factor 1/(vol3)^2, one occurrence)"
            }
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
    [Normalisation::None, Normalisation::Milc]
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
#[path = "correlator_tests.rs"]
mod tests;
