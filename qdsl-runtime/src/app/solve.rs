//! The logic of `qdsl solve`: build the even-odd preconditioned operator of an action
//! from thin gauge links, make a source on one parity and solve M̂ x = b.
//!
//! * Wilson: M̂ = 1 − κ² H_eo H_oe on the even sites, antiperiodic in time.
//! * Naive staggered and asqtad: MILC's A = 4m² − D_eo D_oe on the even sites, the
//!   staggered phases and the antiperiodic time boundary folded into the links; asqtad
//!   smears the thin links with tadpole factor u0 (default u0 = P^{1/4}, P the average
//!   plaquette, MILC's convention).
//!
//! Only the CPU backend exists for now: [`solve_fields`] is generic over the field type
//! and takes the operators as trait objects, so a device backend needs only to build
//! its operators and fields and call it.

use crate::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use crate::solver::{
    ConvertFrom, LinearOperator, ProgressCallback, SolveResult, SolverError, SolverField,
    SolverKind, SolverOptions,
};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, FieldError, GaugeField, SpinorLayout};
use qdsl_core::gauge::plaquette;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::{asqtad_links, fold_staggered_phases};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;
use thiserror::Error;

/// The fermion action whose even-odd operator is solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Wilson fermions, hopping parameter κ.
    Wilson,
    /// Naive staggered fermions, quark mass m.
    Staggered,
    /// Asqtad improved staggered fermions, quark mass m, tadpole factor u0.
    Asqtad,
}

impl Action {
    /// The names [`FromStr`] accepts.
    pub const NAMES: [&'static str; 3] = ["wilson", "staggered", "asqtad"];

    /// The action's name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Wilson => Self::NAMES[0],
            Action::Staggered => Self::NAMES[1],
            Action::Asqtad => Self::NAMES[2],
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Action {
    type Err = String;

    /// "wilson", "staggered" or "asqtad" (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Action::Wilson, Action::Staggered, Action::Asqtad]
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown action {s:?}: expected wilson, staggered or asqtad"))
    }
}

/// The precision the iteration runs in; the solution and the true residual are always
/// kept in f64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Pure f64.
    F64,
    /// Mixed f64–f32: iteration in f32, reliable updates in f64.
    F32,
}

impl Precision {
    /// A description for the summary: "f64" or "f64–f32 (reliable updates)".
    pub fn describe(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f64–f32 (reliable updates)",
        }
    }
}

impl FromStr for Precision {
    type Err = String;

    /// "f64" or "f32".
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f64" => Ok(Precision::F64),
            "f32" => Ok(Precision::F32),
            _ => Err(format!(
                "unknown precision {s:?}: expected f64 (pure) or f32 (mixed f64–f32)"
            )),
        }
    }
}

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

/// Everything a solve needs besides the gauge links.
#[derive(Clone, Debug)]
pub struct SolveConfig {
    /// The action.
    pub action: Action,
    /// κ (Wilson only): must be > 0.
    pub kappa: Option<f64>,
    /// Quark mass m (staggered and asqtad only): must be ≥ 0.
    pub mass: Option<f64>,
    /// Tadpole factor u0 (asqtad only); `None`: P^{1/4}.
    pub u0: Option<f64>,
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
}

/// Why a solve could not be set up or run.
#[derive(Debug, Error)]
pub enum SolveError {
    /// κ is not a positive finite number.
    #[error("--kappa must be a positive finite number (κ = 1/(2m + 8)), found {found}")]
    InvalidKappa {
        /// The κ given.
        found: f64,
    },
    /// The mass is negative or not finite.
    #[error("--mass must be a finite number ≥ 0, found {found}")]
    InvalidMass {
        /// The mass given.
        found: f64,
    },
    /// u0 is not a positive finite number.
    #[error("--u0 must be a positive finite number, found {found}")]
    InvalidU0 {
        /// The u0 given.
        found: f64,
    },
    /// The action needs a parameter that was not given.
    #[error("the {action} action needs {flag}")]
    MissingParameter {
        /// The action.
        action: Action,
        /// The flag it needs.
        flag: &'static str,
    },
    /// A parameter was given that the action does not use.
    #[error("{flag} does not apply to the {action} action (it takes {expected})")]
    UnusedParameter {
        /// The action.
        action: Action,
        /// The flag given.
        flag: &'static str,
        /// What the action takes instead.
        expected: &'static str,
    },
    /// CG was asked for on the Wilson M̂, which is not Hermitian.
    #[error("cg needs a Hermitian positive-definite operator, and the even-odd Wilson M̂ is not: use cgnr, cgne or bicgstab")]
    NotHermitian,
    /// Smearing the links failed.
    #[error("asqtad link smearing failed: {0}")]
    Smearing(String),
    /// Making the source failed.
    #[error("making the source failed: {0}")]
    Source(#[from] FieldError),
    /// The solver refused the options or an operation failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
}

/// The result of [`solve`].
#[derive(Clone, Debug)]
pub struct SolveReport {
    /// The action solved.
    pub action: Action,
    /// The lattice.
    pub lattice: Lattice,
    /// What the operator's parameters were, e.g. "κ = 0.12" or "m = 0.05, u0 = 0.8677".
    pub parameters: String,
    /// The backend that ran it ("CPU").
    pub backend: &'static str,
    /// The solver.
    pub solver: SolverKind,
    /// The iteration precision.
    pub precision: Precision,
    /// The tolerance asked for.
    pub tolerance: f64,
    /// The solver's result.
    pub result: SolveResult,
    /// ‖b − M̂ x‖/‖b‖ recomputed after the solve with one more f64 application.
    pub recomputed_residual: f64,
    /// Operator flops per second over the solve, in GFLOP/s.
    pub gflops: f64,
    /// The source b (even sites).
    pub source: ColourSpinorField<f64>,
    /// The solution x (even sites).
    pub solution: ColourSpinorField<f64>,
}

/// The checked operator parameters of an action.
enum Parameters {
    Wilson { kappa: f64 },
    Staggered { mass: f64, u0: Option<f64> },
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Checks that the action gets exactly the parameters it uses, and their ranges.
fn check_parameters(config: &SolveConfig) -> Result<Parameters, SolveError> {
    let action = config.action;
    let unused = |flag, expected| SolveError::UnusedParameter {
        action,
        flag,
        expected,
    };
    match action {
        Action::Wilson => {
            if config.mass.is_some() {
                return Err(unused("--mass", "--kappa"));
            }
            if config.u0.is_some() {
                return Err(unused("--u0", "--kappa"));
            }
            let kappa = config.kappa.ok_or(SolveError::MissingParameter {
                action,
                flag: "--kappa K",
            })?;
            if !positive(kappa) {
                return Err(SolveError::InvalidKappa { found: kappa });
            }
            if config.solver == SolverKind::Cg {
                return Err(SolveError::NotHermitian);
            }
            Ok(Parameters::Wilson { kappa })
        }
        Action::Staggered | Action::Asqtad => {
            if config.kappa.is_some() {
                return Err(unused("--kappa", "--mass"));
            }
            if action == Action::Staggered && config.u0.is_some() {
                return Err(unused(
                    "--u0",
                    "--mass (naive staggered links are not smeared)",
                ));
            }
            let mass = config.mass.ok_or(SolveError::MissingParameter {
                action,
                flag: "--mass M",
            })?;
            if !(mass.is_finite() && mass >= 0.0) {
                return Err(SolveError::InvalidMass { found: mass });
            }
            if let Some(u0) = config.u0.filter(|&u0| !positive(u0)) {
                return Err(SolveError::InvalidU0 { found: u0 });
            }
            Ok(Parameters::Staggered {
                mass,
                u0: config.u0,
            })
        }
    }
}

/// A CPU operator in precision T, as a trait object.
type CpuOperator<T> = Box<dyn LinearOperator<ColourSpinorField<T>> + Send + Sync>;

/// The links of the staggered operator, in f64 (phases and boundary folded in).
fn staggered_links(
    gauge: &GaugeField<f64>,
    action: Action,
    u0: f64,
) -> Result<StaggeredLinks<f64>, SolveError> {
    if action == Action::Asqtad {
        let (fat, long) =
            asqtad_links(gauge, u0).map_err(|e| SolveError::Smearing(e.to_string()))?;
        Ok(StaggeredLinks::Improved { fat, long })
    } else {
        Ok(StaggeredLinks::Naive(fold_staggered_phases(gauge)))
    }
}

/// The links cast to precision T.
fn cast_links<T: Real>(links: &StaggeredLinks<f64>) -> StaggeredLinks<T> {
    match links {
        StaggeredLinks::Naive(u) => StaggeredLinks::Naive(u.cast()),
        StaggeredLinks::Improved { fat, long } => StaggeredLinks::Improved {
            fat: fat.cast(),
            long: long.cast(),
        },
    }
}

/// The operators of an action in f64 and in the iteration precision L, and the layout
/// they act on.
struct Operators<L: Real> {
    high: CpuOperator<f64>,
    low: CpuOperator<L>,
    layout: SpinorLayout,
}

fn build<L: Real>(
    gauge: &GaugeField<f64>,
    parameters: &Parameters,
    action: Action,
    u0: f64,
) -> Result<Operators<L>, SolveError> {
    let parity = Parity::Even;
    match *parameters {
        Parameters::Wilson { kappa } => {
            let boundary = TimeBoundary::Antiperiodic;
            let high = EvenOddWilson::new(gauge.clone(), kappa, parity, boundary);
            let layout = high.layout();
            let low = EvenOddWilson::<L>::new(gauge.cast(), kappa, parity, boundary);
            Ok(Operators {
                high: Box::new(high),
                low: Box::new(low),
                layout,
            })
        }
        Parameters::Staggered { mass, .. } => {
            let links = staggered_links(gauge, action, u0)?;
            let low = EvenOddStaggered::<L>::new(cast_links(&links), mass, parity);
            let high = EvenOddStaggered::new(links, mass, parity);
            let layout = high.layout();
            Ok(Operators {
                high: Box::new(high),
                low: Box::new(low),
                layout,
            })
        }
    }
}

/// Solves M̂ x = b with x₀ = 0 for operators in precisions H (solution, true residual)
/// and L (iteration); returns the result and ‖b − M̂ x‖/‖b‖ recomputed with `high`.
/// Backend-independent: any field type implementing [`SolverField`] will do.
pub fn solve_fields<H, L>(
    high: &(dyn LinearOperator<H> + Send + Sync),
    low: &(dyn LinearOperator<L> + Send + Sync),
    solver: SolverKind,
    b: &H,
    x: &mut H,
    opts: &SolverOptions,
) -> Result<(SolveResult, f64), SolverError>
where
    H: SolverField + ConvertFrom<L>,
    L: SolverField + ConvertFrom<H>,
{
    x.set_zero();
    let result = solver.solve(high, low, b, x, opts)?;
    let mut r = b.zeros_like();
    high.apply(&mut r, x)?;
    r.xpay(b, qdsl_core::Complex::new(-1.0, 0.0))?;
    let b2 = b.norm_sqr();
    let recomputed = if b2 == 0.0 {
        r.norm_sqr().sqrt()
    } else {
        (r.norm_sqr() / b2).sqrt()
    };
    Ok((result, recomputed))
}

/// The tadpole factor the asqtad smearing uses: `u0`, else P^{1/4}.
pub fn tadpole_factor(gauge: &GaugeField<f64>, u0: Option<f64>) -> f64 {
    u0.unwrap_or_else(|| plaquette(gauge).average.powf(0.25))
}

fn run<L: Real>(
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    parameters: &Parameters,
    opts: &SolverOptions,
) -> Result<SolveReport, SolveError> {
    let u0 = match parameters {
        Parameters::Staggered { u0, .. } => tadpole_factor(gauge, *u0),
        Parameters::Wilson { .. } => 1.0,
    };
    let ops = build::<L>(gauge, parameters, config.action, u0)?;
    let b = match config.source {
        Source::Gaussian { seed } => ColourSpinorField::gaussian(ops.layout, seed),
        Source::Point => ColourSpinorField::point_source(ops.layout, 0, [0; 4], 0, 0)?,
    };
    let mut x = b.zeros_like();
    let (result, recomputed_residual) = solve_fields::<_, ColourSpinorField<L>>(
        ops.high.as_ref(),
        ops.low.as_ref(),
        config.solver,
        &b,
        &mut x,
        opts,
    )?;
    let seconds = result.elapsed.max(Duration::from_nanos(1)).as_secs_f64();
    let parameters = match parameters {
        Parameters::Wilson { kappa } => format!("κ = {kappa}, antiperiodic time"),
        Parameters::Staggered { mass, .. } if config.action == Action::Asqtad => {
            format!("m = {mass}, u0 = {u0:.6}, antiperiodic time")
        }
        Parameters::Staggered { mass, .. } => format!("m = {mass}, antiperiodic time"),
    };
    Ok(SolveReport {
        action: config.action,
        lattice: *gauge.lattice(),
        parameters,
        backend: "CPU",
        solver: config.solver,
        precision: config.precision,
        tolerance: config.tolerance,
        gflops: result.operator_flops as f64 / seconds / 1e9,
        result,
        recomputed_residual,
        source: b,
        solution: x,
    })
}

/// Checks the configuration, builds the even-odd operator of `config.action` from the
/// thin links `gauge` (CPU backend), makes the source on the even sites and solves
/// M̂ x = b from x₀ = 0, calling `progress` after every iteration.
///
/// A solve that does not converge is still a report (see
/// [`SolveResult::is_converged`]); errors are bad parameters and refused options.
pub fn solve(
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    let parameters = check_parameters(config)?;
    let opts = SolverOptions {
        max_iterations: config.max_iterations,
        progress,
        polak_ribiere: config.precision == Precision::F32,
        ..SolverOptions::with_tolerance(config.tolerance)
    };
    match config.precision {
        Precision::F64 => run::<f64>(gauge, config, &parameters, &opts),
        Precision::F32 => run::<f32>(gauge, config, &parameters, &opts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(action: Action) -> SolveConfig {
        SolveConfig {
            action,
            kappa: None,
            mass: None,
            u0: None,
            solver: SolverKind::Cg,
            precision: Precision::F64,
            tolerance: 1e-10,
            max_iterations: 100,
            source: Source::Point,
        }
    }

    #[test]
    fn parameters_are_checked_against_the_action() {
        let mut c = config(Action::Wilson);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::MissingParameter {
                flag: "--kappa K",
                ..
            })
        ));
        c.kappa = Some(0.0);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::InvalidKappa { found }) if found == 0.0
        ));
        c.kappa = Some(0.12);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::NotHermitian)
        ));
        c.solver = SolverKind::BiCgStab;
        assert!(check_parameters(&c).is_ok());
        c.mass = Some(0.1);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::UnusedParameter { flag: "--mass", .. })
        ));
        let mut c = config(Action::Asqtad);
        c.mass = Some(-0.01);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::InvalidMass { .. })
        ));
        c.mass = Some(0.01);
        c.u0 = Some(f64::NAN);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::InvalidU0 { .. })
        ));
        let mut c = config(Action::Staggered);
        c.mass = Some(0.01);
        c.u0 = Some(0.9);
        assert!(matches!(
            check_parameters(&c),
            Err(SolveError::UnusedParameter { flag: "--u0", .. })
        ));
    }

    /// Unit links: P = 1, so the default u0 = P^{1/4} = 1.
    #[test]
    fn default_tadpole_factor_is_the_fourth_root_of_the_plaquette() {
        let gauge = GaugeField::<f64>::unit(Lattice::new([2; 4]).unwrap());
        assert_eq!(tadpole_factor(&gauge, None), 1.0);
        assert_eq!(tadpole_factor(&gauge, Some(0.8)), 0.8);
    }

    /// Free field, point source, naive staggered, pure f64: A = 4m² − D_eo D_oe is
    /// Hermitian positive definite, CG converges, and the recomputed residual
    /// meets the tolerance.
    #[test]
    fn free_field_staggered_solve_converges() {
        let gauge = GaugeField::<f64>::unit(Lattice::new([4; 4]).unwrap());
        let mut c = config(Action::Staggered);
        c.mass = Some(0.1);
        let report = solve(&gauge, &c, None).unwrap();
        assert!(
            report.result.is_converged(),
            "{:?}",
            report.result.convergence
        );
        assert!(report.recomputed_residual <= 1e-10);
        assert_eq!(report.backend, "CPU");
    }

    #[test]
    fn names_parse() {
        assert_eq!("Asqtad".parse::<Action>(), Ok(Action::Asqtad));
        assert!("clover".parse::<Action>().unwrap_err().contains("wilson"));
        assert_eq!("f32".parse::<Precision>(), Ok(Precision::F32));
        assert!("f16".parse::<Precision>().is_err());
    }
}
