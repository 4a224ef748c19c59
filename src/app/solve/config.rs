//! [`SolveConfig`] and its [`Source`]; the check of an action's parameters and the
//! report's parameter line.

use super::{wilson_mass, Action, Precision, SolveError};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::gauge::{FieldStrengthTrace, OpenBoundary, OpenBoundaryKind, SfBoundaryFields};
use qdsl_runtime::solver::SolverKind;

/// The right-hand side b, on the even sites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Independent complex Gaussian components (unit variance per real part) from `seed`.
    Gaussian {
        /// Seed of the random stream.
        seed: u64,
    },
    /// δ at the origin, spin 0, colour 0.
    Point,
}

/// The fermions' time boundary (space is periodic): one the hops wrap across, or
/// openQCD's open or Schrödinger-functional boundaries, across which no hop goes
/// ([`OpenBoundary`]; Wilson, clover and twisted mass only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FermionBoundary {
    /// Periodic or antiperiodic: the kernels' sign on the hops that wrap.
    Wrap(TimeBoundary),
    /// Open or SF, with the boundary improvement coefficients c_F (and c_F').
    Open(OpenBoundary),
}

impl From<TimeBoundary> for FermionBoundary {
    fn from(b: TimeBoundary) -> Self {
        FermionBoundary::Wrap(b)
    }
}

impl FermionBoundary {
    /// The boundary `qdsl solve` names: `name` periodic, antiperiodic, open or sf (ASCII
    /// case ignored) with `--cf` c_F (default 1) and `--cf-prime` c_F' (sf only, default
    /// c_F). c_F with a wrapping boundary, or c_F' with open ones, is an error.
    pub fn from_flags(
        name: &str,
        c_f: Option<f64>,
        c_f_prime: Option<f64>,
    ) -> Result<Self, String> {
        let wrap = match name.to_ascii_lowercase().as_str() {
            "periodic" => Some(TimeBoundary::Periodic),
            "antiperiodic" => Some(TimeBoundary::Antiperiodic),
            "open" | "sf" => None,
            _ => {
                return Err(format!(
                    "unknown time boundary {name:?}: expected periodic, antiperiodic, open or sf"
                ))
            }
        };
        if let Some(b) = wrap {
            return match (c_f, c_f_prime) {
                (None, None) => Ok(b.into()),
                _ => Err("--cf and --cf-prime apply to --boundary open or sf only".to_string()),
            };
        }
        let c_f_value = c_f.unwrap_or(1.0);
        if name.eq_ignore_ascii_case("sf") {
            let prime = c_f_prime.unwrap_or(c_f_value);
            return Ok(FermionBoundary::Open(OpenBoundary::sf(c_f_value, prime)));
        }
        match c_f_prime {
            None => Ok(FermionBoundary::Open(OpenBoundary::open(c_f_value))),
            Some(_) => Err(
                "--cf-prime applies to --boundary sf only (open boundaries take --cf at both \
                 ends)"
                    .to_string(),
            ),
        }
    }

    /// The boundary with openQCD's SF boundary gauge fields of angles φ = (φ₁, φ₂) at
    /// x0 = 0 and φ' at x0 = T ([`SfBoundaryFields`]): both or neither, and SF
    /// boundaries only. Neither leaves the boundary as it is (the stored spatial links of
    /// x0 = 0 serve as C and C').
    pub fn with_sf_angles(
        self,
        phi: Option<[f64; 2]>,
        phi_prime: Option<[f64; 2]>,
    ) -> Result<Self, String> {
        match (self, phi, phi_prime) {
            (_, None, None) => Ok(self),
            (FermionBoundary::Open(b), Some(phi), Some(prime))
                if b.kind == OpenBoundaryKind::Sf =>
            {
                Ok(FermionBoundary::Open(
                    b.with_sf_fields(SfBoundaryFields::new(phi, prime)),
                ))
            }
            (FermionBoundary::Open(b), _, _) if b.kind == OpenBoundaryKind::Sf => Err(
                "--sf-phi and --sf-phi-prime go together: openQCD's SF boundary fields at \
                 x0 = 0 and x0 = T"
                    .to_string(),
            ),
            _ => Err("--sf-phi and --sf-phi-prime apply to --boundary sf only".to_string()),
        }
    }

    /// The words of the report: "antiperiodic time", "open time boundaries, c_F = 1.3".
    pub fn describe(&self) -> String {
        match self {
            FermionBoundary::Wrap(TimeBoundary::Periodic) => "periodic time".to_string(),
            FermionBoundary::Wrap(TimeBoundary::Antiperiodic) => "antiperiodic time".to_string(),
            FermionBoundary::Open(b) => b.to_string(),
        }
    }
}

/// Everything a solve needs besides the gauge links.
#[derive(Clone, Debug)]
pub struct SolveConfig {
    /// The action.
    pub action: Action,
    /// κ (Wilson, clover and twisted mass only): must be > 0.
    pub kappa: Option<f64>,
    /// Quark mass m (staggered, asqtad and HISQ only): must be ≥ 0.
    pub mass: Option<f64>,
    /// Tadpole factor u0 (asqtad only); `None`: P^{1/4}.
    pub u0: Option<f64>,
    /// Clover coefficient c_sw ≥ 0 (clover: required; twisted mass: default 0).
    pub csw: Option<f64>,
    /// Twisted mass μ (twisted mass only, required).
    pub mu: Option<f64>,
    /// Naik correction ε of the HISQ links (HISQ only, default 0).
    pub epsilon_naik: Option<f64>,
    /// Whether the clover term's field strength keeps its trace (QUDA's and openQCD's
    /// convention, the default) or removes it ([`FieldStrengthTrace`]; clover and twisted
    /// mass with c_sw ≠ 0).
    pub clover_trace: FieldStrengthTrace,
    /// The solver.
    pub solver: SolverKind,
    /// The iteration precision.
    pub precision: Precision,
    /// Target relative residual ‖b − M̂ x‖/‖b‖.
    pub tolerance: f64,
    /// Iteration limit.
    pub max_iterations: usize,
    /// The source.
    pub source: Source,
    /// The fermions' time boundary (space is periodic); the CLI's default is
    /// antiperiodic. Wilson-like operators apply a periodic or antiperiodic one in their
    /// hops; the staggered actions fold it into the links (MILC's convention: the
    /// t-links of the last time slice negated before smearing). Open and SF boundaries
    /// (Wilson-like actions only) enter through the fields: see [`OpenBoundary`].
    pub boundary: FermionBoundary,
}
/// The checked operator parameters of an action.
pub(super) enum Parameters {
    /// Wilson; clover and twisted mass with c_sw and μ (0 for Wilson).
    Wilson { kappa: f64, csw: f64, mu: f64 },
    /// Staggered, asqtad (u0) and HISQ (ε).
    Staggered {
        mass: f64,
        u0: Option<f64>,
        epsilon_naik: f64,
    },
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// HISQ's tadpole factor u0 = 1 (its links are reunitarised between the smearing
/// levels): `None` or `Some(1.0)` pass, any other value is [`SolveError::HisqU0`].
pub fn check_hisq_u0(u0: Option<f64>) -> Result<(), SolveError> {
    match u0 {
        Some(found) if found != 1.0 => Err(SolveError::HisqU0 { found }),
        _ => Ok(()),
    }
}

/// Checks that the action gets exactly the parameters it uses, and their ranges.
pub(super) fn check_parameters(config: &SolveConfig) -> Result<Parameters, SolveError> {
    let action = config.action;
    if action == Action::Mobius {
        return Err(SolveError::MobiusNotHere);
    }
    let wilson_like = action.is_wilson_like();
    let expected = if wilson_like { "--kappa" } else { "--mass" };
    if action == Action::Hisq {
        check_hisq_u0(config.u0)?;
    }
    let given = [
        ("--kappa", config.kappa.is_some()),
        ("--mass", config.mass.is_some()),
        ("--u0", config.u0.is_some()),
        ("--csw", config.csw.is_some()),
        ("--mu", config.mu.is_some()),
        ("--epsilon-naik", config.epsilon_naik.is_some()),
    ];
    if let Some(flag) = action.first_unused(&given) {
        return Err(SolveError::UnusedParameter {
            action,
            flag,
            expected,
        });
    }
    let missing = |flag| SolveError::MissingParameter { action, flag };
    if wilson_like {
        let kappa = config.kappa.ok_or(missing("--kappa K"))?;
        if !positive(kappa) {
            return Err(SolveError::InvalidKappa { found: kappa });
        }
        let csw = match action {
            Action::Clover => config.csw.ok_or(missing("--csw C"))?,
            _ => config.csw.unwrap_or(0.0),
        };
        if !(csw.is_finite() && csw >= 0.0) {
            return Err(SolveError::InvalidCsw { found: csw });
        }
        let mu = match action {
            Action::TwistedMass => config.mu.ok_or(missing("--mu MU"))?,
            _ => 0.0,
        };
        finite("--mu", mu)?;
        if config.solver == SolverKind::Cg {
            return Err(SolveError::NotHermitian { action });
        }
        Ok(Parameters::Wilson { kappa, csw, mu })
    } else {
        let mass = config.mass.ok_or(missing("--mass M"))?;
        if !(mass.is_finite() && mass >= 0.0) {
            return Err(SolveError::InvalidMass { found: mass });
        }
        if let Some(u0) = config.u0.filter(|&u0| !positive(u0)) {
            return Err(SolveError::InvalidU0 { found: u0 });
        }
        let epsilon_naik = config.epsilon_naik.unwrap_or(0.0);
        finite("--epsilon-naik", epsilon_naik)?;
        Ok(Parameters::Staggered {
            mass,
            u0: config.u0,
            epsilon_naik,
        })
    }
}

/// `Ok` if `value` of `flag` is finite.
fn finite(flag: &'static str, value: f64) -> Result<(), SolveError> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(SolveError::NotFinite { flag, found: value })
    }
}
/// The report's parameter line; clover and twisted mass also state their mass
/// normalisation.
pub(super) fn describe(
    action: Action,
    parameters: &Parameters,
    u0: f64,
    boundary: FermionBoundary,
) -> String {
    let time = boundary.describe();
    let wrapping = matches!(boundary, FermionBoundary::Wrap(_));
    match *parameters {
        Parameters::Wilson { kappa, .. } if action == Action::Wilson && wrapping => {
            format!("κ = {kappa}, {time}")
        }
        Parameters::Wilson { kappa, csw, mu } => {
            let m = wilson_mass(kappa);
            format!(
                "κ = {kappa} (m = {m:.6}), c_sw = {csw}, μ = {mu}, {time}; \
                 normalised as M = (m + 4) + clover + iμγ5 − H/2, i.e. {:.6} × the Wilson \
                 M̂ at c_sw = μ = 0",
                m + 4.0
            )
        }
        Parameters::Staggered { mass, .. } if action == Action::Asqtad => {
            format!("m = {mass}, u0 = {u0:.6}, {time}")
        }
        Parameters::Staggered {
            mass, epsilon_naik, ..
        } if action == Action::Hisq => {
            format!("m = {mass}, ε_Naik = {epsilon_naik}, u0 = 1, {time}")
        }
        Parameters::Staggered { mass, .. } => format!("m = {mass}, {time}"),
    }
}
