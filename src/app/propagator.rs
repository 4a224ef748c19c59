//! Point-source propagators on the full lattice, from even-odd preconditioned solves.
//!
//! A [`FullSolver`] returns ψ = M⁻¹ η on the full lattice for one source η; the solve
//! behind it (CPU here, a device backend later) is its business.
//! [`point_propagator`] solves for every spin and colour of a point source at x₀ and
//! returns S(x, x₀) column by column.
//!
//! * [`WilsonEvenOdd`]: M = 1 − κ H (DESIGN.md; κ normalisation, so S = M⁻¹ is
//!   1/(2κ) times the propagator of the mass normalisation (m + 4) − H/2). With
//!   M = [[1, −κ H_eo], [−κ H_oe, 1]] the Schur complement on the even sites gives
//!
//!   M̂ ψ_e = η_e + κ H_eo η_o,  M̂ = 1 − κ² H_eo H_oe,  ψ_o = η_o + κ H_oe ψ_e.
//!
//! * [`StaggeredEvenOdd`]: M = 2m + D with D anti-Hermitian and odd (it maps one parity
//!   to the other), so M M† = M†M = 4m² − D² is block diagonal, A_p = 4m² − D_pq D_qp on
//!   each parity p, and
//!
//!   ψ = M† (M M†)⁻¹ η:  y_p = A_p⁻¹ η_p,  ψ_p = 2m y_p − D_pq y_q.
//!
//! * [`CloverEvenOdd`]: clover and twisted mass in mass normalisation, M = D − ½H with
//!   D = A + iμγ5 (A = (m + 4) + (c_sw/2)σ·F, m = 1/(2κ) − 4), through the Schur
//!   complement of [`EvenOddClover`]:
//!
//!   b = η_e + ½ H_eo D_oo⁻¹ η_o,  M̂ ψ_e = b,  ψ_o = D_oo⁻¹ (η_o + ½ H_oe ψ_e);
//!
//!   with openQCD's open or SF time boundaries ([`OpenBoundary`]) it solves the
//!   boundary's clover system ([`OpenBoundary::clover_fields`]) with η set to zero on the
//!   slices where the quark fields vanish. Wilson with such a boundary is this solver
//!   at c_sw = μ = 0, its solution multiplied by 1/(2κ) = m + 4 to stay in the κ
//!   normalisation of [`WilsonEvenOdd`] (1 − κH = 2κ (m + 4 − ½H)).
//!
//! The tadpole factor u0 divides the thin links (U → U/u0) for Wilson and naive
//! staggered fermions; asqtad takes it in its path coefficients (MILC); HISQ has none
//! (its links are reunitarised, u0 = 1).

use super::precision::Precision;
use super::solve::{wilson_mass, Action, FermionBoundary};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, FieldError, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::{clover_field_with, FieldStrengthTrace, OpenBoundary};
use qdsl_core::lattice::{Coords, Parity};
use qdsl_kernels::{asqtad_links, fold_staggered_phases, hisq_links};
use qdsl_runtime::operator::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use qdsl_runtime::operator::EvenOddClover;
use qdsl_runtime::solver::{
    LinearOperator, SolveResult, SolverError, SolverField, SolverKind, SolverOptions,
};
use thiserror::Error;

/// A full-lattice field in f64.
type F64 = ColourSpinorField<f64>;

/// Why a propagator could not be computed.
#[derive(Debug, Error)]
pub enum PropagatorError {
    /// The source position or a field shape was wrong.
    #[error("propagator field error: {0}")]
    Field(#[from] FieldError),
    /// The solver refused its options or an operation failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// A solve for one column did not converge: the propagator would be wrong.
    #[error(
        "the solve for source spin {spin}, colour {colour} did not converge: {reason} after \
         {iterations} iterations (true residual {residual:.3e})"
    )]
    NotConverged {
        /// Source spin.
        spin: usize,
        /// Source colour.
        colour: usize,
        /// How the solve ended.
        reason: String,
        /// Iterations done.
        iterations: usize,
        /// Its final true residual ‖b − M̂ x‖/‖b‖.
        residual: f64,
    },
    /// Smearing the asqtad or HISQ links failed.
    #[error("{action} link smearing failed: {message}")]
    Smearing {
        /// The action (asqtad or HISQ).
        action: Action,
        /// Why.
        message: String,
    },
    /// An open or SF boundary does not fit the lattice, or the point source lies on a
    /// slice where the quark fields vanish.
    #[error("{0}")]
    OpenBoundary(String),
    /// A staggered propagator was asked for an action that is not staggered.
    #[error("the {action} action is not a staggered action (staggered, asqtad, hisq)")]
    NotStaggered {
        /// The action.
        action: Action,
    },
}

/// ψ = M⁻¹ η on the full lattice, one source at a time.
pub trait FullSolver {
    /// The layout of sources and solutions (full lattice).
    fn layout(&self) -> SpinorLayout;

    /// ψ ← M⁻¹ η; returns the results of the even-odd solves it ran (one per parity
    /// solved).
    fn solve(&self, eta: &F64, psi: &mut F64) -> Result<Vec<SolveResult>, PropagatorError>;
}

/// How the even-odd systems are solved.
#[derive(Clone)]
pub struct SolveSettings {
    /// The solver (Wilson: cgnr, cgne or bicgstab; staggered: cg on A).
    pub solver: SolverKind,
    /// The iteration precision (the solution and true residual are f64).
    pub precision: Precision,
    /// Tolerance, iteration limit, reliable updates.
    pub options: SolverOptions,
}

impl SolveSettings {
    /// Solves M̂ x = b (x₀ = 0) with `high` (f64) and, for an f32 iteration, `single`.
    fn run<OH, OS>(
        &self,
        high: &OH,
        single: &OS,
        b: &F64,
        x: &mut F64,
    ) -> Result<SolveResult, SolverError>
    where
        OH: LinearOperator<F64>,
        OS: LinearOperator<ColourSpinorField<f32>>,
    {
        x.set_zero();
        self.precision
            .solve(self.solver, high, single, b, x, &self.options)
    }
}

/// The (even, odd) halves of a full-lattice field (checkerboard order: even sites first).
pub fn split_parities(full: &F64) -> Result<(F64, F64), FieldError> {
    let layout = full.layout().with_subset(SiteSubset::Full);
    layout.expect_same(full.layout())?;
    let half = layout.lattice().half_volume() * layout.site_len();
    let part =
        |p, data: &[_]| F64::from_data(layout.with_subset(SiteSubset::Single(p)), data.to_vec());
    Ok((
        part(Parity::Even, &full.data()[..half])?,
        part(Parity::Odd, &full.data()[half..])?,
    ))
}

/// The full-lattice field whose halves are `even` and `odd`.
pub fn join_parities(even: &F64, odd: &F64) -> Result<F64, FieldError> {
    let layout = even.layout().with_subset(SiteSubset::Full);
    layout
        .with_subset(SiteSubset::Single(Parity::Odd))
        .expect_same(odd.layout())?;
    let mut data = even.data().to_vec();
    data.extend_from_slice(odd.data());
    F64::from_data(layout, data)
}

/// The thin links prepared for an action: divided by u0 (Wilson-like, naive staggered;
/// asqtad and HISQ take no division), and for
/// staggered fermions with a periodic time boundary the t-links of the last time slice
/// negated, so that the antiperiodic sign [`fold_staggered_phases`] folds in cancels.
pub fn prepared_links(
    gauge: &GaugeField<f64>,
    action: Action,
    boundary: TimeBoundary,
    u0: f64,
) -> GaugeField<f64> {
    let lattice = *gauge.lattice();
    let last = lattice.extent(3) - 1;
    let scale = if matches!(action, Action::Asqtad | Action::Hisq) {
        1.0
    } else {
        1.0 / u0
    };
    let flip = !action.is_wilson_like() && boundary == TimeBoundary::Periodic;
    GaugeField::from_fn(lattice, |c, mu| {
        let sign = if flip && mu == 3 && c[3] == last {
            -1.0
        } else {
            1.0
        };
        gauge.link_at(c, mu).scale(scale * sign)
    })
}

/// The full-lattice Wilson solver through the even-odd Schur complement on the even
/// sites (equations in the [module docs](self)): the generic source preparation and
/// reconstruction of [`qdsl_runtime::operator::Schur`].
pub struct WilsonEvenOdd {
    high: EvenOddWilson<f64>,
    low: EvenOddWilson<f32>,
    settings: SolveSettings,
}

impl WilsonEvenOdd {
    /// M = 1 − κ H for links `gauge`/u0 with the time `boundary`.
    pub fn new(
        gauge: &GaugeField<f64>,
        kappa: f64,
        u0: f64,
        boundary: TimeBoundary,
        settings: SolveSettings,
    ) -> Self {
        let gauge = prepared_links(gauge, Action::Wilson, boundary, u0);
        let low = EvenOddWilson::new(gauge.cast(), kappa, Parity::Even, boundary);
        let high = EvenOddWilson::new(gauge, kappa, Parity::Even, boundary);
        Self {
            high,
            low,
            settings,
        }
    }
}

impl FullSolver for WilsonEvenOdd {
    /// 4 spins × 3 colours on every site.
    fn layout(&self) -> SpinorLayout {
        self.high.layout().with_subset(SiteSubset::Full)
    }

    /// b = η_e + κ H_eo η_o; M̂ ψ_e = b; ψ_o = η_o + κ H_oe ψ_e.
    fn solve(&self, eta: &F64, psi: &mut F64) -> Result<Vec<SolveResult>, PropagatorError> {
        let (eta_e, eta_o) = split_parities(eta)?;
        let b = self.high.prepare_source(&eta_e, &eta_o)?;
        let mut psi_e = b.clone();
        let result = self.settings.run(&self.high, &self.low, &b, &mut psi_e)?;
        let psi_o = self.high.reconstruct(&psi_e, &eta_o)?;
        *psi = join_parities(&psi_e, &psi_o)?;
        Ok(vec![result])
    }
}

/// The full-lattice clover / twisted-mass solver in mass normalisation, also Wilson with
/// open or SF boundaries (equations in the [module docs](self)).
pub struct CloverEvenOdd {
    high: EvenOddClover<f64>,
    low: EvenOddClover<f32>,
    /// The open or SF boundary whose vanishing slices η is projected off.
    open: Option<OpenBoundary>,
    /// The factor the solution is multiplied by: 1, or 1/(2κ) for Wilson (κ
    /// normalisation).
    scale: f64,
    settings: SolveSettings,
}

impl CloverEvenOdd {
    /// M = A + iμγ5 − ½H for the links `gauge`/u0 with hopping parameter κ, c_sw and μ,
    /// the fermions' time `boundary` and the field strength's `trace` convention; `kappa_normalised` (Wilson) returns
    /// (1 − κH)⁻¹ η = (m + 4) M⁻¹ η instead of M⁻¹ η. An error if the boundary does not
    /// fit the lattice or A is singular.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gauge: &GaugeField<f64>,
        kappa: f64,
        csw: f64,
        mu: f64,
        u0: f64,
        boundary: FermionBoundary,
        trace: FieldStrengthTrace,
        kappa_normalised: bool,
        settings: SolveSettings,
    ) -> Result<Self, PropagatorError> {
        let mass = wilson_mass(kappa);
        let (links, clover, wrap, open) = match boundary {
            FermionBoundary::Wrap(b) => {
                let links = prepared_links(gauge, Action::Clover, b, u0);
                let clover = clover_field_with(&links, mass, csw, trace);
                (links, clover, b, None)
            }
            FermionBoundary::Open(open) => {
                let links = prepared_links(gauge, Action::Clover, TimeBoundary::Periodic, u0);
                let (hops, clover) = open
                    .clover_fields(&links, mass, csw, trace)
                    .map_err(|e| PropagatorError::OpenBoundary(e.to_string()))?;
                // No link crosses the time boundary: the kernels' wrap sign is moot.
                (hops, clover, TimeBoundary::Periodic, Some(open))
            }
        };
        let high = EvenOddClover::from_clover(links, &clover, mu, Parity::Even, wrap)?;
        Ok(Self {
            low: high.cast(),
            high,
            open,
            scale: if kappa_normalised { mass + 4.0 } else { 1.0 },
            settings,
        })
    }

    /// The open or SF boundary, if any.
    pub fn open_boundary(&self) -> Option<OpenBoundary> {
        self.open
    }
}

impl FullSolver for CloverEvenOdd {
    /// 4 spins × 3 colours on every site.
    fn layout(&self) -> SpinorLayout {
        self.high.layout().with_subset(SiteSubset::Full)
    }

    /// η projected off the vanishing slices (open, SF); b = η_e + ½ H_eo D_oo⁻¹ η_o;
    /// M̂ ψ_e = b; ψ_o = D_oo⁻¹ (η_o + ½ H_oe ψ_e); ψ scaled to the normalisation.
    fn solve(&self, eta: &F64, psi: &mut F64) -> Result<Vec<SolveResult>, PropagatorError> {
        let mut eta = eta.clone();
        if let Some(open) = &self.open {
            open.project(&mut eta);
        }
        let (eta_e, eta_o) = split_parities(&eta)?;
        let b = self.high.prepare_source(&eta_e, &eta_o)?;
        let mut psi_e = b.clone();
        let result = self.settings.run(&self.high, &self.low, &b, &mut psi_e)?;
        let psi_o = self.high.reconstruct(&psi_e, &eta_o)?;
        *psi = join_parities(&psi_e, &psi_o)?;
        if self.scale != 1.0 {
            psi.data_mut().iter_mut().for_each(|z| *z *= self.scale);
        }
        Ok(vec![result])
    }
}

/// The full-lattice staggered solver M = 2m + D through CG on A_p = 4m² − D_pq D_qp on
/// each parity, then ψ = M† y (equations in the [module docs](self)): the generic
/// [`qdsl_runtime::operator::Schur`] in its normal form, and M† from its blocks.
pub struct StaggeredEvenOdd {
    /// A on (even, odd), in f64 and f32.
    high: [EvenOddStaggered<f64>; 2],
    low: [EvenOddStaggered<f32>; 2],
    settings: SolveSettings,
}

impl StaggeredEvenOdd {
    /// M = 2m + D for naive (`Action::Staggered`), asqtad (tadpole factor u0) or HISQ
    /// (Naik correction `epsilon_naik`, u0 unused) links built from the thin links `gauge`
    /// (phases and the time `boundary` folded in). Any other action is
    /// [`PropagatorError::NotStaggered`].
    pub fn new(
        gauge: &GaugeField<f64>,
        action: Action,
        mass: f64,
        u0: f64,
        epsilon_naik: f64,
        boundary: TimeBoundary,
        settings: SolveSettings,
    ) -> Result<Self, PropagatorError> {
        let thin = prepared_links(gauge, action, boundary, u0);
        let smearing = |message: String| PropagatorError::Smearing { action, message };
        let links = match action {
            Action::Staggered => StaggeredLinks::Naive(fold_staggered_phases(&thin)),
            Action::Asqtad => {
                let (fat, long) = asqtad_links(&thin, u0).map_err(|e| smearing(e.to_string()))?;
                StaggeredLinks::Improved { fat, long }
            }
            Action::Hisq => {
                let (fat, long) =
                    hisq_links(&thin, epsilon_naik).map_err(|e| smearing(e.to_string()))?;
                StaggeredLinks::Improved { fat, long }
            }
            other => return Err(PropagatorError::NotStaggered { action: other }),
        };
        let low_links = links.cast::<f32>();
        let parities = [Parity::Even, Parity::Odd];
        Ok(Self {
            high: parities.map(|p| EvenOddStaggered::new(links.clone(), mass, p)),
            low: parities.map(|p| EvenOddStaggered::new(low_links.clone(), mass, p)),
            settings,
        })
    }
}

impl FullSolver for StaggeredEvenOdd {
    /// 1 spin × 3 colours on every site.
    fn layout(&self) -> SpinorLayout {
        self.high[0].layout().with_subset(SiteSubset::Full)
    }

    /// y_p = A_p⁻¹ η_p on both parities (a zero half costs nothing), ψ = M† y:
    /// ψ_p = 2m y_p − D_pq y_q.
    fn solve(&self, eta: &F64, psi: &mut F64) -> Result<Vec<SolveResult>, PropagatorError> {
        let (eta_e, eta_o) = split_parities(eta)?;
        let (mut y_e, mut y_o) = (eta_e.clone(), eta_o.clone());
        let results = vec![
            self.settings
                .run(&self.high[0], &self.low[0], &eta_e, &mut y_e)?,
            self.settings
                .run(&self.high[1], &self.low[1], &eta_o, &mut y_o)?,
        ];
        let (mut psi_e, mut psi_o) = (y_e.zeros_like(), y_o.zeros_like());
        self.high[0].apply_full((&mut psi_e, &mut psi_o), (&y_e, &y_o), true)?;
        *psi = join_parities(&psi_e, &psi_o)?;
        Ok(results)
    }
}

/// The propagator S(x, x₀) of a point source at x₀: column (σ, b) = M⁻¹ δ_{x x₀} δ_σ δ_b.
#[derive(Clone, Debug)]
pub struct Propagator {
    /// The source position x₀.
    pub origin: Coords,
    /// The columns, index σ · N_c + b (source spin σ, colour b).
    pub columns: Vec<F64>,
    /// The even-odd solves of each column.
    pub results: Vec<Vec<SolveResult>>,
}

impl Propagator {
    /// Column (σ, b): ψ = M⁻¹ δ_{x x₀} δ_σ δ_b, or `None` for σ, b out of range.
    pub fn column(&self, sigma: usize, b: usize) -> Option<&F64> {
        let layout = self.columns.first()?.layout();
        if sigma >= layout.nspin() || b >= layout.ncolour() {
            return None;
        }
        self.columns.get(sigma * layout.ncolour() + b)
    }
}

/// Solves M ψ = δ_{x x₀} δ_σ δ_b for every source spin σ and colour b; an error if a solve
/// does not converge (the propagator would be wrong).
pub fn point_propagator(
    solver: &dyn FullSolver,
    origin: Coords,
) -> Result<Propagator, PropagatorError> {
    let layout = solver.layout();
    let (nspin, ncolour) = (layout.nspin(), layout.ncolour());
    let mut columns = Vec::with_capacity(nspin * ncolour);
    let mut results = Vec::with_capacity(nspin * ncolour);
    for spin in 0..nspin {
        for colour in 0..ncolour {
            let eta = F64::point_source(layout, 0, origin, spin, colour)?;
            let mut psi = F64::zeros(layout);
            let column = solver.solve(&eta, &mut psi)?;
            if let Some(bad) = column.iter().find(|r| !r.is_converged()) {
                return Err(PropagatorError::NotConverged {
                    spin,
                    colour,
                    reason: bad.convergence.to_string(),
                    iterations: bad.iterations,
                    residual: bad.true_residual,
                });
            }
            columns.push(psi);
            results.push(column);
        }
    }
    Ok(Propagator {
        origin,
        columns,
        results,
    })
}
