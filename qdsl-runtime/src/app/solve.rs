//! The logic of `qdsl solve`: build the even-odd preconditioned operator of an action
//! from thin gauge links, make a source on one parity and solve M̂ x = b.
//!
//! * Wilson: M̂ = 1 − κ² H_eo H_oe on the even sites, antiperiodic in time.
//! * Naive staggered, asqtad and HISQ: MILC's A = 4m² − D_eo D_oe on the even sites,
//!   the staggered phases and the antiperiodic time boundary folded into the links;
//!   asqtad smears the thin links with tadpole factor u0 (default u0 = P^{1/4}, P the
//!   average plaquette, MILC's convention); HISQ builds its links with
//!   [`hisq_links`] (no tadpole factor, u0 = 1) and the Naik correction ε.
//! * Clover and twisted mass (CPU only): M̂ = D_ee − ¼ H_eo D_oo⁻¹ H_oe with
//!   D = (m + 4) + (c_sw/2)σ·F + iμγ5, m = 1/(2κ) − 4, antiperiodic in time
//!   ([`EvenOddClover`]). Its normalisation is the mass one: at c_sw = μ = 0 it is
//!   (m + 4) times the Wilson M̂ above, so its solution is the Wilson one divided by
//!   (m + 4).
//!
//! [`SolveConfig`] names the [`Action`] and carries its parameters (κ or m, u0, c_sw, μ,
//! ε); [`solve_on`] checks that the action gets exactly the ones it uses.
//!
//! Backends ([`SolveBackend`]): the CPU (host fields, the generated Rust operators) or
//! the GPU (device vectors and operators of [`crate::solver::device`]); the same
//! solvers run on both through [`solve_fields`]. Whatever the backend, the residual
//! ‖b − M̂ x‖/‖b‖ of the report is recomputed at the end on the CPU in f64, with the
//! host operator, from the (downloaded) solution: an independent check of a GPU solve.
//!
//! Precisions: the solution and the true residual are f64; the iteration runs in f64,
//! f32, 16-bit fixed point or f16 (on the CPU the narrow formats are emulated by
//! [`QuantizedField`], on the GPU they are stored in that format).

use crate::backend::{Backend, BackendChoice};
use crate::device::Gpu;
use crate::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use crate::operator::device::codegen_hash;
use crate::operator::EvenOddClover;
use crate::solver::device::{
    DeviceContext, DeviceOperator, DevicePrecision, DeviceVector, Double, Single,
};
use crate::solver::{
    ConvertFrom, Fixed16, Half, LinearOperator, ProgressCallback, QuantizedField,
    QuantizedOperator, SolveResult, SolverError, SolverField, SolverKind, SolverOptions,
};
use crate::tune::{default_path, Tuner};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, FieldError, GaugeField, SpinorLayout};
use qdsl_core::gauge::plaquette;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::{asqtad_links, fold_staggered_phases, hisq_links};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// The fermion action whose even-odd operator is solved (the correlator supports
/// the first four, see [`crate::app::correlator`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Wilson fermions, hopping parameter κ.
    Wilson,
    /// Naive staggered fermions, quark mass m.
    Staggered,
    /// Asqtad improved staggered fermions, quark mass m, tadpole factor u0.
    Asqtad,
    /// HISQ improved staggered fermions, quark mass m, Naik correction ε (u0 = 1).
    Hisq,
    /// Wilson-clover fermions, hopping parameter κ, clover coefficient c_sw.
    Clover,
    /// Twisted-mass (clover) fermions, hopping parameter κ, twist μ, c_sw (default 0).
    TwistedMass,
}

impl Action {
    /// Every action, in the order of [`Self::NAMES`].
    pub const ALL: [Action; 6] = [
        Action::Wilson,
        Action::Staggered,
        Action::Asqtad,
        Action::Hisq,
        Action::Clover,
        Action::TwistedMass,
    ];

    /// The names [`FromStr`] accepts.
    pub const NAMES: [&'static str; 6] = [
        "wilson",
        "staggered",
        "asqtad",
        "hisq",
        "clover",
        "twisted-mass",
    ];

    /// The action's name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Wilson => Self::NAMES[0],
            Action::Staggered => Self::NAMES[1],
            Action::Asqtad => Self::NAMES[2],
            Action::Hisq => Self::NAMES[3],
            Action::Clover => Self::NAMES[4],
            Action::TwistedMass => Self::NAMES[5],
        }
    }

    /// Whether the GPU backend has this action's operator (clover and twisted mass
    /// run on the CPU only).
    pub fn has_device_operator(self) -> bool {
        !matches!(self, Action::Clover | Action::TwistedMass)
    }

    /// Whether the action is one of the Wilson family (κ, four spins): Wilson, clover,
    /// twisted mass.
    pub fn is_wilson_like(self) -> bool {
        matches!(self, Action::Wilson | Action::Clover | Action::TwistedMass)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Action {
    type Err = String;

    /// One of [`Self::NAMES`] (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown action {s:?}: expected one of {}",
                    Self::NAMES.join(", ")
                )
            })
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
    /// Mixed f64–16-bit fixed point (per-site f32 norm), reliable updates in f64.
    Fixed16,
    /// Mixed f64–f16 (IEEE half), reliable updates in f64.
    F16,
}

impl Precision {
    /// Every precision, in the order of [`Self::NAMES`].
    pub const ALL: [Precision; 4] = [
        Precision::F64,
        Precision::F32,
        Precision::Fixed16,
        Precision::F16,
    ];

    /// The names [`FromStr`] accepts.
    pub const NAMES: [&'static str; 4] = ["f64", "f32", "fixed16", "f16"];

    /// A description for the summary: "f64" or "f64–<low> (reliable updates)".
    pub fn describe(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f64–f32 (reliable updates)",
            Precision::Fixed16 => "f64–fixed16 (reliable updates)",
            Precision::F16 => "f64–f16 (reliable updates)",
        }
    }

    /// Whether the iteration runs in a lower precision than the solution.
    pub fn is_mixed(self) -> bool {
        self != Precision::F64
    }
}

impl FromStr for Precision {
    type Err = String;

    /// "f64", "f32", "fixed16" or "f16" (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s))
            .map(|i| Self::ALL[i])
            .ok_or_else(|| {
                format!(
                    "unknown precision {s:?}: expected f64 (pure), or f32, fixed16 or f16 \
                     (mixed with f64)"
                )
            })
    }
}

/// Where a solve runs.
#[derive(Clone, Debug)]
pub enum SolveBackend {
    /// Host fields and the generated Rust operators.
    Cpu,
    /// Device vectors and operators on a GPU.
    Cuda(Arc<DeviceContext>),
}

impl SolveBackend {
    /// The backend for `choice`: `cpu`, `cuda` (GPU 0, or an error saying why there is
    /// none) or `auto` (the GPU when a driver and a device are present, else the CPU
    /// after passing ONE line saying so and why to `notice`), as
    /// [`crate::backend::select_with`] decides. Operators are launched with the tune
    /// cache of [`default_path`].
    pub fn select(choice: BackendChoice, notice: &mut dyn FnMut(&str)) -> Result<Self, SolveError> {
        let open = || -> Result<Self, String> {
            let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
            let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()));
            let ctx = DeviceContext::new(gpu, tuner).map_err(|e| e.to_string())?;
            Ok(SolveBackend::Cuda(ctx))
        };
        match choice {
            BackendChoice::Cpu => Ok(SolveBackend::Cpu),
            BackendChoice::Cuda => open().map_err(SolveError::Backend),
            BackendChoice::Auto => Ok(open().unwrap_or_else(|why| {
                notice(&format!(
                    "qdsl: no usable GPU ({why}); using the CPU backend"
                ));
                SolveBackend::Cpu
            })),
        }
    }

    /// [`Self::select`] for `action`: where the GPU has no operator for it
    /// ([`Action::has_device_operator`]), `auto` falls back to the CPU after ONE
    /// line to `notice` saying so, and `cuda` is [`SolveError::NoDeviceOperator`].
    pub fn select_for(
        choice: BackendChoice,
        action: Action,
        notice: &mut dyn FnMut(&str),
    ) -> Result<Self, SolveError> {
        let backend = Self::select(choice, notice)?;
        match backend {
            SolveBackend::Cuda(_) if !action.has_device_operator() => {
                if choice == BackendChoice::Cuda {
                    return Err(SolveError::NoDeviceOperator { action });
                }
                notice(&format!(
                    "qdsl: the GPU backend has no {action} operator yet; using the CPU backend"
                ));
                Ok(SolveBackend::Cpu)
            }
            backend => Ok(backend),
        }
    }

    /// "CPU", or "cuda (<GPU name>)".
    pub fn describe(&self) -> String {
        match self {
            SolveBackend::Cpu => "CPU".to_string(),
            SolveBackend::Cuda(ctx) => {
                let name = ctx
                    .gpu()
                    .backend()
                    .device()
                    .map_or_else(|| "unknown GPU".to_string(), |d| d.name.clone());
                format!("cuda ({name})")
            }
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
    /// c_sw is negative or not finite.
    #[error("--csw must be a finite number ≥ 0, found {found}")]
    InvalidCsw {
        /// The c_sw given.
        found: f64,
    },
    /// The twisted mass μ or the Naik correction ε is not finite.
    #[error("{flag} must be a finite number, found {found}")]
    NotFinite {
        /// The flag.
        flag: &'static str,
        /// The value given.
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
    /// CG was asked for on a Wilson-like M̂ (Wilson, clover, twisted mass), which is
    /// not Hermitian.
    #[error("cg needs a Hermitian positive-definite operator, and the even-odd {action} M̂ is not: use cgnr, cgne or bicgstab")]
    NotHermitian {
        /// The action.
        action: Action,
    },
    /// The GPU backend was asked for an action it has no operator for.
    #[error("the GPU backend has no {action} operator yet: use --backend cpu")]
    NoDeviceOperator {
        /// The action.
        action: Action,
    },
    /// The CUDA backend was asked for and cannot be used.
    #[error("the CUDA backend is not available: {0}")]
    Backend(String),
    /// A GPU operation failed (building the operators, a transfer, a kernel).
    #[error("GPU solve failed: {0}")]
    Device(String),
    /// Smearing the links failed.
    #[error("{action} link smearing failed: {message}")]
    Smearing {
        /// The action (asqtad or HISQ).
        action: Action,
        /// Why.
        message: String,
    },
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
    /// What the operator's parameters were, e.g. "κ = 0.12" or "m = 0.05, u0 = 0.8677"
    /// (clover and twisted mass: also their normalisation).
    pub parameters: String,
    /// The backend that ran it ("CPU" or "cuda (<GPU name>)").
    pub backend: String,
    /// The solver.
    pub solver: SolverKind,
    /// The iteration precision.
    pub precision: Precision,
    /// The tolerance asked for.
    pub tolerance: f64,
    /// The solver's result.
    pub result: SolveResult,
    /// ‖b − M̂ x‖/‖b‖ recomputed after the solve with one more f64 application of the
    /// CPU operator (a GPU solution is downloaded first).
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

/// Checks that the action gets exactly the parameters it uses, and their ranges.
fn check_parameters(config: &SolveConfig) -> Result<Parameters, SolveError> {
    let action = config.action;
    let wilson_like = action.is_wilson_like();
    let expected = if wilson_like { "--kappa" } else { "--mass" };
    let given: [(&'static str, bool, bool); 6] = [
        ("--kappa", config.kappa.is_some(), wilson_like),
        ("--mass", config.mass.is_some(), !wilson_like),
        ("--u0", config.u0.is_some(), action == Action::Asqtad),
        (
            "--csw",
            config.csw.is_some(),
            matches!(action, Action::Clover | Action::TwistedMass),
        ),
        ("--mu", config.mu.is_some(), action == Action::TwistedMass),
        (
            "--epsilon-naik",
            config.epsilon_naik.is_some(),
            action == Action::Hisq,
        ),
    ];
    if let Some(&(flag, ..)) = given.iter().find(|(_, given, used)| *given && !used) {
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

/// A CPU operator in precision T, as a trait object.
type CpuOperator<T> = Box<dyn LinearOperator<ColourSpinorField<T>> + Send + Sync>;

/// The links of the staggered operator, in f64 (phases and boundary folded in).
/// Asqtad with tadpole factor `u0`, HISQ with Naik correction `epsilon_naik`.
fn staggered_links(
    gauge: &GaugeField<f64>,
    action: Action,
    u0: f64,
    epsilon_naik: f64,
) -> Result<StaggeredLinks<f64>, SolveError> {
    let smearing = |message: String| SolveError::Smearing { action, message };
    let (fat, long) = match action {
        Action::Asqtad => asqtad_links(gauge, u0).map_err(|e| smearing(e.to_string()))?,
        Action::Hisq => hisq_links(gauge, epsilon_naik).map_err(|e| smearing(e.to_string()))?,
        _ => return Ok(StaggeredLinks::Naive(fold_staggered_phases(gauge))),
    };
    Ok(StaggeredLinks::Improved { fat, long })
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

/// The system of an action on the host, in f64: what both backends build their
/// operators from.
enum HostSystem {
    Wilson {
        gauge: GaugeField<f64>,
        kappa: f64,
    },
    Staggered {
        links: StaggeredLinks<f64>,
        mass: f64,
    },
    /// Clover and twisted mass (no GPU operator).
    Clover {
        op: EvenOddClover<f64>,
        action: Action,
    },
}

/// The parity the system is solved on.
const PARITY: Parity = Parity::Even;
/// The time boundary of the fermions (folded into the staggered links).
const BOUNDARY: TimeBoundary = TimeBoundary::Antiperiodic;

impl HostSystem {
    fn new(
        gauge: &GaugeField<f64>,
        parameters: &Parameters,
        action: Action,
        u0: f64,
    ) -> Result<Self, SolveError> {
        Ok(match *parameters {
            Parameters::Wilson { kappa, .. } if action == Action::Wilson => HostSystem::Wilson {
                gauge: gauge.clone(),
                kappa,
            },
            Parameters::Wilson { kappa, csw, mu } => HostSystem::Clover {
                op: EvenOddClover::twisted(
                    gauge.clone(),
                    wilson_mass(kappa),
                    csw,
                    mu,
                    PARITY,
                    BOUNDARY,
                )?,
                action,
            },
            Parameters::Staggered {
                mass, epsilon_naik, ..
            } => HostSystem::Staggered {
                links: staggered_links(gauge, action, u0, epsilon_naik)?,
                mass,
            },
        })
    }

    /// The CPU operator in precision T and the layout it acts on.
    fn cpu_operator<T: Real>(&self) -> (CpuOperator<T>, SpinorLayout) {
        match self {
            HostSystem::Wilson { gauge, kappa } => {
                let op = EvenOddWilson::<T>::new(gauge.cast(), *kappa, PARITY, BOUNDARY);
                let layout = op.layout();
                (Box::new(op), layout)
            }
            HostSystem::Staggered { links, mass } => {
                let op = EvenOddStaggered::<T>::new(cast_links(links), *mass, PARITY);
                let layout = op.layout();
                (Box::new(op), layout)
            }
            HostSystem::Clover { op, .. } => {
                let op = op.cast::<T>();
                let layout = op.layout();
                (Box::new(op), layout)
            }
        }
    }

    /// The device operator for vectors of precision P.
    fn device_operator<P: DevicePrecision>(
        &self,
        ctx: &Arc<DeviceContext>,
    ) -> Result<DeviceOperator<P>, SolveError> {
        match self {
            HostSystem::Wilson { gauge, kappa } => {
                DeviceOperator::wilson(ctx, gauge, *kappa, PARITY, BOUNDARY)
            }
            HostSystem::Staggered { links, mass } => {
                DeviceOperator::staggered(ctx, links, *mass, PARITY)
            }
            HostSystem::Clover { action, .. } => {
                return Err(SolveError::NoDeviceOperator { action: *action })
            }
        }
        .map_err(|e| SolveError::Device(e.to_string()))
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
    Ok((result, relative_residual(high, b, x)?))
}

/// The bare mass m = 1/(2κ) − 4 of hopping parameter κ.
pub fn wilson_mass(kappa: f64) -> f64 {
    0.5 / kappa - 4.0
}

/// The tadpole factor the asqtad smearing uses: `u0`, else P^{1/4}.
pub fn tadpole_factor(gauge: &GaugeField<f64>, u0: Option<f64>) -> f64 {
    u0.unwrap_or_else(|| plaquette(gauge).average.powf(0.25))
}

/// The relative residual ‖b − M x‖/‖b‖ (‖b − M x‖ for b = 0) with the operator `op`.
fn relative_residual<F: SolverField, O: LinearOperator<F> + ?Sized>(
    op: &O,
    b: &F,
    x: &F,
) -> Result<f64, SolverError> {
    let mut r = b.zeros_like();
    op.apply(&mut r, x)?;
    r.xpay(b, qdsl_core::Complex::new(-1.0, 0.0))?;
    let b2 = b.norm_sqr();
    Ok(if b2 == 0.0 {
        r.norm_sqr().sqrt()
    } else {
        (r.norm_sqr() / b2).sqrt()
    })
}

/// Solves M̂ x = b on the host from the `x` given, iterating in `precision`: f64 with
/// `high` alone, f32 with `low`, fixed16 and f16 with [`QuantizedOperator`]`(high)` on
/// [`QuantizedField`]s (the format's rounding emulated in f64). The solution and the
/// true residual are f64 (`high`) whatever the precision.
pub fn solve_host(
    solver: SolverKind,
    precision: Precision,
    high: &dyn LinearOperator<ColourSpinorField<f64>>,
    low: &dyn LinearOperator<ColourSpinorField<f32>>,
    b: &ColourSpinorField<f64>,
    x: &mut ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<SolveResult, SolverError> {
    type F64Field = ColourSpinorField<f64>;
    match precision {
        Precision::F64 => solver.solve::<_, F64Field, _, _>(high, high, b, x, opts),
        Precision::F32 => solver.solve::<_, ColourSpinorField<f32>, _, _>(high, low, b, x, opts),
        Precision::Fixed16 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Fixed16>, _, _>(high, &low, b, x, opts)
        }
        Precision::F16 => {
            let low = QuantizedOperator(high);
            solver.solve::<_, QuantizedField<Half>, _, _>(high, &low, b, x, opts)
        }
    }
}

/// The device solve with f64 operator `high` and iteration operator `low`; returns the
/// result and the downloaded solution. A failure recorded in the context (see
/// [`crate::solver::device::context`]) is an error, not a result.
fn device_run<P: DevicePrecision>(
    ctx: &Arc<DeviceContext>,
    high: &DeviceOperator<Double>,
    low: &DeviceOperator<P>,
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let device = |e: crate::device::DeviceError| SolveError::Device(e.to_string());
    let b_dev = DeviceVector::<Double>::upload(ctx, b).map_err(device)?;
    let mut x_dev =
        DeviceVector::<Double>::zeros(ctx, b_dev.layout().host_reals, b_dev.layout().sites)
            .map_err(device)?;
    let outcome =
        solve_fields::<_, DeviceVector<P>>(high, low, config.solver, &b_dev, &mut x_dev, opts);
    if let Some(e) = ctx.take_error() {
        return Err(SolveError::Device(e));
    }
    let (result, _) = outcome?;
    let x = x_dev.download(*b.layout()).map_err(device)?;
    Ok((result, x))
}

/// The GPU solve in `config.precision`: (result, downloaded solution).
fn device_solve(
    ctx: &Arc<DeviceContext>,
    system: &HostSystem,
    config: &SolveConfig,
    b: &ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<(SolveResult, ColourSpinorField<f64>), SolveError> {
    let high = system.device_operator::<Double>(ctx)?;
    match config.precision {
        Precision::F64 => device_run(ctx, &high, &high, config, b, opts),
        Precision::F32 => {
            let low = system.device_operator::<Single>(ctx)?;
            device_run(ctx, &high, &low, config, b, opts)
        }
        Precision::Fixed16 => {
            let low = system.device_operator::<Fixed16>(ctx)?;
            device_run(ctx, &high, &low, config, b, opts)
        }
        Precision::F16 => {
            let low = system.device_operator::<Half>(ctx)?;
            device_run(ctx, &high, &low, config, b, opts)
        }
    }
}

/// Checks the configuration, builds the even-odd operator of `config.action` from the
/// thin links `gauge` on the CPU backend, makes the source on the even sites and solves
/// M̂ x = b from x₀ = 0, calling `progress` after every iteration
/// ([`solve_on`] with [`SolveBackend::Cpu`]).
///
/// A solve that does not converge is still a report (see
/// [`SolveResult::is_converged`]); errors are bad parameters and refused options.
pub fn solve(
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    solve_on(&SolveBackend::Cpu, gauge, config, progress)
}

/// [`solve`] on `backend`. On the GPU the links and the source are uploaded, the solve
/// runs on device vectors, and the solution is downloaded; the report's recomputed
/// residual then comes from the CPU f64 operator (an independent check). Errors also
/// include GPU failures ([`SolveError::Device`]). Clover and twisted mass have no GPU
/// operator: on [`SolveBackend::Cuda`] they are [`SolveError::NoDeviceOperator`].
pub fn solve_on(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    progress: Option<ProgressCallback>,
) -> Result<SolveReport, SolveError> {
    let action = config.action;
    if matches!(backend, SolveBackend::Cuda(_)) && !action.has_device_operator() {
        return Err(SolveError::NoDeviceOperator { action });
    }
    let parameters = check_parameters(config)?;
    let opts = SolverOptions {
        max_iterations: config.max_iterations,
        progress,
        polak_ribiere: config.precision.is_mixed(),
        ..SolverOptions::with_tolerance(config.tolerance)
    };
    let u0 = match parameters {
        Parameters::Staggered { u0, .. } if action == Action::Asqtad => tadpole_factor(gauge, u0),
        _ => 1.0,
    };
    let system = HostSystem::new(gauge, &parameters, action, u0)?;
    let (high, layout) = system.cpu_operator::<f64>();
    let b = match config.source {
        Source::Gaussian { seed } => ColourSpinorField::gaussian(layout, seed),
        Source::Point => ColourSpinorField::point_source(layout, 0, [0; 4], 0, 0)?,
    };
    let (result, x, recomputed_residual) = match backend {
        SolveBackend::Cpu => {
            let (low, _) = system.cpu_operator::<f32>();
            let mut x = b.zeros_like();
            let result = solve_host(
                config.solver,
                config.precision,
                high.as_ref(),
                low.as_ref(),
                &b,
                &mut x,
                &opts,
            )?;
            let residual = relative_residual(high.as_ref(), &b, &x)?;
            (result, x, residual)
        }
        SolveBackend::Cuda(ctx) => {
            let (result, x) = device_solve(ctx, &system, config, &b, &opts)?;
            let residual = relative_residual(high.as_ref(), &b, &x)?;
            (result, x, residual)
        }
    };
    let seconds = result.elapsed.max(Duration::from_nanos(1)).as_secs_f64();
    Ok(SolveReport {
        action,
        parameters: describe(action, &parameters, u0),
        lattice: *gauge.lattice(),
        backend: backend.describe(),
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

/// The report's parameter line; clover and twisted mass also state their mass
/// normalisation.
fn describe(action: Action, parameters: &Parameters, u0: f64) -> String {
    match *parameters {
        Parameters::Wilson { kappa, .. } if action == Action::Wilson => {
            format!("κ = {kappa}, antiperiodic time")
        }
        Parameters::Wilson { kappa, csw, mu } => {
            let m = wilson_mass(kappa);
            format!(
                "κ = {kappa} (m = {m:.6}), c_sw = {csw}, μ = {mu}, antiperiodic time; \
                 normalised as M = (m + 4) + clover + iμγ5 − H/2, i.e. {:.6} × the Wilson \
                 M̂ at c_sw = μ = 0",
                m + 4.0
            )
        }
        Parameters::Staggered { mass, .. } if action == Action::Asqtad => {
            format!("m = {mass}, u0 = {u0:.6}, antiperiodic time")
        }
        Parameters::Staggered {
            mass, epsilon_naik, ..
        } if action == Action::Hisq => {
            format!("m = {mass}, ε_Naik = {epsilon_naik}, u0 = 1, antiperiodic time")
        }
        Parameters::Staggered { mass, .. } => format!("m = {mass}, antiperiodic time"),
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
            csw: None,
            mu: None,
            epsilon_naik: None,
            solver: SolverKind::Cg,
            precision: Precision::F64,
            tolerance: 1e-10,
            max_iterations: 100,
            source: Source::Point,
        }
    }

    fn check(c: &SolveConfig) -> Result<Parameters, SolveError> {
        check_parameters(c)
    }

    #[test]
    fn parameters_are_checked_against_the_action() {
        let mut c = config(Action::Wilson);
        assert!(matches!(
            check(&c),
            Err(SolveError::MissingParameter {
                flag: "--kappa K",
                ..
            })
        ));
        c.kappa = Some(0.0);
        assert!(matches!(
            check(&c),
            Err(SolveError::InvalidKappa { found }) if found == 0.0
        ));
        c.kappa = Some(0.12);
        assert!(matches!(check(&c), Err(SolveError::NotHermitian { .. })));
        c.solver = SolverKind::BiCgStab;
        assert!(check(&c).is_ok());
        c.mass = Some(0.1);
        assert!(matches!(
            check(&c),
            Err(SolveError::UnusedParameter { flag: "--mass", .. })
        ));
        let mut c = config(Action::Asqtad);
        c.mass = Some(-0.01);
        assert!(matches!(check(&c), Err(SolveError::InvalidMass { .. })));
        c.mass = Some(0.01);
        c.u0 = Some(f64::NAN);
        assert!(matches!(check(&c), Err(SolveError::InvalidU0 { .. })));
        let mut c = config(Action::Staggered);
        c.mass = Some(0.01);
        c.u0 = Some(0.9);
        assert!(matches!(
            check(&c),
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

    /// `cpu` never touches the GPU; `auto` always yields a backend, with exactly one
    /// notice line when it falls back; `cuda` without a GPU is an error naming the cause.
    #[test]
    fn backend_selection_falls_back_with_one_line_or_fails_clearly() {
        let mut lines = Vec::new();
        let cpu = SolveBackend::select(BackendChoice::Cpu, &mut |l| lines.push(l.to_string()));
        assert_eq!(cpu.unwrap().describe(), "CPU");
        assert!(lines.is_empty());
        let auto =
            SolveBackend::select(BackendChoice::Auto, &mut |l| lines.push(l.to_string())).unwrap();
        match &auto {
            SolveBackend::Cpu => {
                assert_eq!(lines.len(), 1);
                assert!(
                    lines[0].ends_with("; using the CPU backend"),
                    "{}",
                    lines[0]
                );
                let e = SolveBackend::select(BackendChoice::Cuda, &mut |_| {}).unwrap_err();
                assert!(e
                    .to_string()
                    .starts_with("the CUDA backend is not available: "));
            }
            SolveBackend::Cuda(_) => {
                assert!(lines.is_empty());
                assert!(auto.describe().starts_with("cuda ("), "{}", auto.describe());
            }
        }
    }

    /// The CPU emulation of the narrow formats converges to 1e-10 on a random 4⁴
    /// Wilson system through reliable updates (fixed16: u = 1.5e-5, f16: u = 4.9e-4),
    /// the residual recomputed in f64.
    #[test]
    fn narrow_precisions_converge_through_reliable_updates() {
        let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 3);
        for precision in [Precision::Fixed16, Precision::F16] {
            let mut c = config(Action::Wilson);
            (c.kappa, c.solver, c.precision) = (Some(0.12), SolverKind::BiCgStab, precision);
            c.source = Source::Gaussian { seed: 2 };
            let report = solve(&gauge, &c, None).unwrap();
            assert!(
                report.result.is_converged(),
                "{precision:?}: {:?}",
                report.result.convergence
            );
            assert!(report.result.reliable_updates >= 1, "{precision:?}");
            assert!(report.recomputed_residual <= 1e-10, "{precision:?}");
        }
    }

    #[test]
    fn names_parse() {
        assert_eq!("Asqtad".parse::<Action>(), Ok(Action::Asqtad));
        assert_eq!("Twisted-Mass".parse::<Action>(), Ok(Action::TwistedMass));
        for (a, name) in Action::ALL.into_iter().zip(Action::NAMES) {
            assert_eq!(name.parse::<Action>(), Ok(a));
        }
        assert!("tm".parse::<Action>().unwrap_err().contains("hisq"));
        assert_eq!("f32".parse::<Precision>(), Ok(Precision::F32));
        assert_eq!("FIXED16".parse::<Precision>(), Ok(Precision::Fixed16));
        assert!("bf16".parse::<Precision>().unwrap_err().contains("fixed16"));
    }

    /// `action` with the Wilson-like defaults κ = 0.12, BiCGStab.
    fn wilson_like(action: Action) -> SolveConfig {
        let mut c = config(action);
        (c.kappa, c.solver) = (Some(0.12), SolverKind::BiCgStab);
        c
    }

    /// The new actions' flags: c_sw ≥ 0 required for clover, μ required for twisted
    /// mass, ε only for HISQ, and neither on Wilson; u0 is not a HISQ parameter; CG is
    /// refused on the non-Hermitian clover M̂.
    #[test]
    fn clover_twisted_mass_and_hisq_parameters_are_checked() {
        let err = |c: &SolveConfig| check_parameters(c).err().map(|e| e.to_string());
        let mut clover = wilson_like(Action::Clover);
        assert_eq!(
            err(&clover).as_deref(),
            Some("the clover action needs --csw C")
        );
        clover.csw = Some(-1.0);
        assert!(err(&clover)
            .unwrap()
            .starts_with("--csw must be a finite number ≥ 0"));
        clover.csw = Some(1.0);
        assert!(err(&clover).is_none());
        clover.mu = Some(0.1);
        assert!(err(&clover)
            .unwrap()
            .starts_with("--mu does not apply to the clover"));
        let mut tm = wilson_like(Action::TwistedMass);
        assert_eq!(
            err(&tm).as_deref(),
            Some("the twisted-mass action needs --mu MU")
        );
        tm.mu = Some(f64::INFINITY);
        assert!(err(&tm)
            .unwrap()
            .starts_with("--mu must be a finite number"));
        tm.mu = Some(0.05);
        assert!(err(&tm).is_none());
        tm.solver = SolverKind::Cg;
        assert!(err(&tm).unwrap().contains("even-odd twisted-mass M̂ is not"));
        let mut wilson = wilson_like(Action::Wilson);
        wilson.mu = Some(0.05);
        assert!(err(&wilson)
            .unwrap()
            .starts_with("--mu does not apply to the wilson"));
        let mut hisq = config(Action::Hisq);
        hisq.mass = Some(0.05);
        hisq.epsilon_naik = Some(f64::NAN);
        assert!(err(&hisq)
            .unwrap()
            .starts_with("--epsilon-naik must be a finite"));
        hisq.epsilon_naik = Some(-0.1);
        assert!(err(&hisq).is_none());
        hisq.u0 = Some(0.9);
        assert!(err(&hisq)
            .unwrap()
            .starts_with("--u0 does not apply to the hisq"));
        let asqtad = SolveConfig {
            action: Action::Asqtad,
            u0: None,
            epsilon_naik: Some(0.0),
            ..hisq
        };
        assert!(err(&asqtad)
            .unwrap()
            .starts_with("--epsilon-naik does not apply"));
    }

    /// ‖s·a − b‖/‖b‖ of two host fields.
    fn scaled_distance(a: &ColourSpinorField<f64>, s: f64, b: &ColourSpinorField<f64>) -> f64 {
        let mut d = b.clone();
        d.axpy(qdsl_core::Complex::new(-s, 0.0), a).unwrap();
        (d.norm_sqr() / b.norm_sqr()).sqrt()
    }

    /// ‖a − b‖/‖b‖.
    fn distance(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
        scaled_distance(a, 1.0, b)
    }

    /// At c_sw = μ = 0 the clover term is (m + 4)·1, so the clover M̂ is (m + 4) times
    /// the Wilson M̂ (m = 1/(2κ) − 4): on a random 4⁴ gauge field the same source gives
    /// the Wilson solution divided by (m + 4), in the same number of BiCGStab and CGNR
    /// iterations (Krylov methods are invariant under scaling the operator).
    #[test]
    fn clover_without_clover_term_is_scaled_wilson() {
        let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 5);
        for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
            let mut c = wilson_like(Action::Wilson);
            (c.solver, c.source) = (solver, Source::Gaussian { seed: 4 });
            let clover = SolveConfig {
                action: Action::Clover,
                csw: Some(0.0),
                ..c.clone()
            };
            let w = solve(&gauge, &c, None).unwrap();
            let cl = solve_on(&SolveBackend::Cpu, &gauge, &clover, None).unwrap();
            assert!(w.result.is_converged() && cl.result.is_converged());
            assert!(cl.recomputed_residual <= 1e-10);
            assert_eq!(cl.result.iterations, w.result.iterations, "{solver}");
            let scale = 0.5 / 0.12; // m + 4 = 1/(2κ)
            assert!(
                scaled_distance(&cl.solution, scale, &w.solution) < 1e-8,
                "{solver}"
            );
            assert!(
                cl.parameters.contains("4.166667 × the Wilson"),
                "{}",
                cl.parameters
            );
        }
    }

    /// The twisted-mass M̂ with μ > 0 (with and without a clover term) converges with
    /// BiCGStab and CGNR, and the twist changes the solution.
    #[test]
    fn twisted_mass_converges_with_bicgstab_and_cgnr() {
        let gauge = GaugeField::<f64>::random(Lattice::new([4; 4]).unwrap(), 6);
        let mut c = wilson_like(Action::TwistedMass);
        c.source = Source::Gaussian { seed: 8 };
        let mut solutions = Vec::new();
        for (csw, mu, solver) in [
            (None, 0.0, SolverKind::BiCgStab),
            (None, 0.1, SolverKind::BiCgStab),
            (None, 0.1, SolverKind::Cgnr),
            (Some(1.0), 0.1, SolverKind::BiCgStab),
        ] {
            (c.csw, c.mu, c.solver) = (csw, Some(mu), solver);
            let r = solve_on(&SolveBackend::Cpu, &gauge, &c, None).unwrap();
            assert!(r.result.is_converged(), "{csw:?} {mu} {solver}");
            assert!(r.recomputed_residual <= 1e-10, "{csw:?} {mu} {solver}");
            solutions.push(r.solution);
        }
        assert!(distance(&solutions[1], &solutions[0]) > 1e-3);
        assert!(distance(&solutions[2], &solutions[1]) < 1e-8);
        assert!(distance(&solutions[3], &solutions[1]) > 1e-3);
    }

    /// HISQ at ε = 0 on unit links has fat 9/8 and long −1/24 (times the phases), the
    /// asqtad links at u0 = 1: the same solution. On a random gauge field the
    /// reunitarised smearing differs from asqtad's and so do the solutions.
    #[test]
    fn hisq_matches_asqtad_on_the_free_field_only() {
        let lattice = Lattice::new([4; 4]).unwrap();
        let mut c = config(Action::Asqtad);
        (c.mass, c.u0, c.source) = (Some(0.1), Some(1.0), Source::Gaussian { seed: 3 });
        c.max_iterations = 2000;
        let hisq = SolveConfig {
            action: Action::Hisq,
            u0: None,
            ..c.clone()
        };
        let mut distances = Vec::new();
        for gauge in [GaugeField::unit(lattice), GaugeField::random(lattice, 9)] {
            let a = solve(&gauge, &c, None).unwrap();
            let h = solve_on(&SolveBackend::Cpu, &gauge, &hisq, None).unwrap();
            assert!(a.result.is_converged() && h.result.is_converged());
            assert!(h.recomputed_residual <= 1e-10);
            assert_eq!(h.action, Action::Hisq);
            distances.push(distance(&h.solution, &a.solution));
        }
        assert!(distances[0] < 1e-9, "{distances:?}");
        assert!(distances[1] > 1e-2, "{distances:?}");
    }
}
