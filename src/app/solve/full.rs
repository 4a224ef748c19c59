//! The full system M ψ = η, a source and a solution on every site, through the even-odd
//! Schur complement on the even sites (the system every solve runs, on either backend);
//! the source preparation and the reconstruction of the odd sites run on the host in f64.
//!
//! * Wilson, M = 1 − κ H = [[1, −κ H_eo], [−κ H_oe, 1]]:
//!   b = η_e + κ H_eo η_o,  M̂ ψ_e = b,  ψ_o = η_o + κ H_oe ψ_e.
//! * Staggered, asqtad and HISQ, M = 2m + D = [[2m, D_eo], [D_oe, 2m]]:
//!   b = 2m η_e − D_eo η_o,  (4m² − D_eo D_oe) ψ_e = b,  ψ_o = (η_o − D_oe ψ_e)/(2m),
//!   which needs m > 0. This is MILC's M = 2m + D: its `ksvector.ans.Minv` is M⁻¹ η.
//! * Clover and twisted mass (and every Wilson-like action with open or SF boundaries),
//!   M = [[D_ee, −½H_eo], [−½H_oe, D_oo]], D = A + iμγ5: the host operator's Schur
//!   complement prepares b = η_e + ½ H_eo D_oo⁻¹ η_o and reconstructs
//!   ψ_o = D_oo⁻¹ (η_o + ½ H_oe ψ_e). With open or SF boundaries η is first set to zero
//!   on the slices where the quark fields vanish.

use super::grid::check_grid;
use super::system::{HostSystem, PARITY};
use super::{Action, FermionBoundary, Setup, SolveBackend, SolveConfig, SolveError, SolveReport};
use crate::app::propagator::{join_parities, split_parities};
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, ProcessGrid};
use qdsl_kernels::WilsonHop;
use qdsl_runtime::operator::cpu::{hop_variant, HostHop};
use qdsl_runtime::solver::{ProgressCallback, SolverError};

/// A field in f64.
type F64 = ColourSpinorField<f64>;

/// The result of [`solve_full_on`].
#[derive(Clone, Debug)]
pub struct FullSolveReport {
    /// The even-site solve M̂ ψ_e = b (its `source` is b, its `solution` ψ_e).
    pub report: SolveReport,
    /// The solution ψ = M⁻¹ η on every site.
    pub solution: F64,
}

/// The full-lattice layout of the fields of `action`: 1 spin (staggered actions) or 4,
/// 3 colours.
pub fn full_layout(action: Action, lattice: Lattice) -> SpinorLayout {
    if action.is_wilson_like() {
        SpinorLayout::wilson(lattice, SiteSubset::Full)
    } else {
        SpinorLayout::staggered(lattice, SiteSubset::Full)
    }
}

/// Solves M ψ = η for a source `eta` on every site (layout [`full_layout`]) through the
/// even-site Schur complement on `backend` (equations in the [module docs](self)).
pub fn solve_full_on(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    eta: &F64,
    progress: Option<ProgressCallback>,
) -> Result<FullSolveReport, SolveError> {
    solve_full_on_grid(backend, gauge, config, eta, ProcessGrid::single(), progress)
}

/// [`solve_full_on`] with the even-site solve decomposed over `grid`
/// ([`super::solve_on_grid`]); the source preparation and the reconstruction run on the
/// whole lattice on the host, as for a GPU solve.
pub fn solve_full_on_grid(
    backend: &SolveBackend,
    gauge: &GaugeField<f64>,
    config: &SolveConfig,
    eta: &F64,
    grid: ProcessGrid,
    progress: Option<ProgressCallback>,
) -> Result<FullSolveReport, SolveError> {
    let action = config.action;
    let unsupported = |reason| SolveError::FullSystemUnsupported { action, reason };
    if !action.is_wilson_like() && config.mass == Some(0.0) {
        return Err(unsupported(
            "the odd sites are reconstructed with 1/(2m), so m > 0",
        ));
    }
    let lattice = *gauge.lattice();
    full_layout(action, lattice).expect_same(eta.layout())?;
    let ext = match grid.size() {
        1 => None,
        _ => Some(check_grid(backend, gauge, config, grid)?),
    };
    let setup = Setup::new(gauge, config, progress)?;
    let mut eta = eta.clone();
    if let FermionBoundary::Open(open) = config.boundary {
        open.project(&mut eta);
        if eta.data().iter().all(|z| z.norm_sqr() == 0.0) {
            return Err(SolveError::OpenBoundary(format!(
                "the source lies entirely on time slices where the quark fields vanish \
                 ({open}): put it on 0 < t < L_t − 1 (open) or 0 < t (SF)"
            )));
        }
    }
    let (eta_e, eta_o) = split_parities(&eta)?;
    let b = schur_source(&setup.system, &eta_e, &eta_o)?;
    let report = match ext {
        None => setup.solve(backend, config, lattice, b)?,
        Some(ext) => setup.solve_on_ranks(backend, config, lattice, ext, b)?,
    };
    let psi_o = odd_solution(&setup.system, &eta_o, &report.solution)?;
    let solution = join_parities(&report.solution, &psi_o)?;
    Ok(FullSolveReport { report, solution })
}

/// The even-site right-hand side b of the Schur complement.
fn schur_source(system: &HostSystem, eta_e: &F64, eta_o: &F64) -> Result<F64, SolveError> {
    let mut b = eta_e.clone();
    match system {
        HostSystem::Wilson { kappa, .. } => hop_xpay(system, &mut b, eta_o, eta_e, 1.0, *kappa)?,
        HostSystem::Staggered { mass, .. } => {
            hop_xpay(system, &mut b, eta_o, eta_e, 2.0 * mass, -1.0)?
        }
        HostSystem::Clover { op, .. } => b = op.prepare_source(eta_e, eta_o)?,
    }
    Ok(b)
}

/// The odd-site solution from the even one.
fn odd_solution(system: &HostSystem, eta_o: &F64, psi_e: &F64) -> Result<F64, SolveError> {
    let mut psi_o = eta_o.clone();
    match system {
        HostSystem::Wilson { kappa, .. } => {
            hop_xpay(system, &mut psi_o, psi_e, eta_o, 1.0, *kappa)?
        }
        HostSystem::Staggered { mass, .. } => {
            let inverse = 0.5 / mass;
            hop_xpay(system, &mut psi_o, psi_e, eta_o, inverse, -inverse)?
        }
        HostSystem::Clover { op, .. } => psi_o = op.reconstruct(psi_e, eta_o)?,
    }
    Ok(psi_o)
}

/// out ← a x + c H ψ (Wilson) or a x + c D ψ (staggered), `out` and `x` on the parity
/// opposite to ψ's.
fn hop_xpay(
    system: &HostSystem,
    out: &mut F64,
    psi: &F64,
    x: &F64,
    a: f64,
    c: f64,
) -> Result<(), SolveError> {
    let parity = match out.layout().subset() {
        SiteSubset::Single(p) => p,
        SiteSubset::Full => PARITY,
    };
    let xpay = Some(Xpay { a, x, b: c });
    match system {
        HostSystem::Wilson {
            gauge, boundary, ..
        } => WilsonHop
            .apply_cpu(
                &hop_variant::<f64>(parity, false, true, *boundary),
                out,
                psi,
                gauge,
                xpay,
            )
            .map_err(|e| SolverError::operator(e).into()),
        // The boundary is folded into the staggered links.
        HostSystem::Staggered { links, .. } => links
            .apply(
                &hop_variant::<f64>(parity, false, true, TimeBoundary::Periodic),
                out,
                psi,
                xpay,
            )
            .map_err(|e| SolverError::operator(e).into()),
        // The clover systems prepare and reconstruct through their Schur complement.
        HostSystem::Clover { .. } => Err(SolverError::Operator(
            "the clover hop with xpay is part of the Schur complement, not of hop_xpay".into(),
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::precision::Precision;
    use crate::app::propagator::{FullSolver, SolveSettings, StaggeredEvenOdd, WilsonEvenOdd};
    use crate::app::solve::Source;
    use qdsl_runtime::solver::{SolverKind, SolverOptions};

    fn config(action: Action, solver: SolverKind) -> SolveConfig {
        SolveConfig {
            clover_trace: Default::default(),
            action,
            kappa: None,
            mass: None,
            u0: None,
            csw: None,
            mu: None,
            epsilon_naik: None,
            solver,
            precision: Precision::F64,
            tolerance: 1e-12,
            max_iterations: 1000,
            source: Source::Point,
            boundary: TimeBoundary::Antiperiodic.into(),
        }
    }

    fn settings(solver: SolverKind) -> SolveSettings {
        SolveSettings {
            solver,
            precision: Precision::F64,
            options: SolverOptions::with_tolerance(1e-12),
        }
    }

    /// The largest |a − b| relative to the largest |b|.
    fn deviation(a: &F64, b: &F64) -> f64 {
        let scale = b.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
        let worst = a.data().iter().zip(b.data());
        worst.map(|(x, y)| (x - y).norm()).fold(0.0, f64::max) / scale
    }

    /// The full solutions agree with the propagator module's full solvers, which
    /// reconstruct differently (staggered: M† (M M†)⁻¹ η with two solves), for both time
    /// boundaries; clover at c_sw = 0 agrees with Wilson over m + 4.
    #[test]
    fn full_solutions_agree_with_the_propagator_solvers() {
        let lattice = Lattice::new([4, 4, 4, 4]).unwrap();
        let gauge = GaugeField::random(lattice, 3);
        for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
            let mut wilson = config(Action::Wilson, SolverKind::BiCgStab);
            (wilson.kappa, wilson.boundary) = (Some(0.11), boundary.into());
            let eta = ColourSpinorField::gaussian(full_layout(Action::Wilson, lattice), 4);
            let ours = solve_full_on(&SolveBackend::Cpu, &gauge, &wilson, &eta, None).unwrap();
            let settings_w = settings(SolverKind::BiCgStab);
            let reference = WilsonEvenOdd::new(&gauge, 0.11, 1.0, boundary, settings_w);
            let mut psi = F64::zeros(reference.layout());
            reference.solve(&eta, &mut psi).unwrap();
            assert!(deviation(&ours.solution, &psi) < 1e-9, "{boundary:?}");
            let psi_wilson = psi;

            let mut asqtad = config(Action::Asqtad, SolverKind::Cg);
            (asqtad.mass, asqtad.u0, asqtad.boundary) = (Some(0.2), Some(0.9), boundary.into());
            let eta = ColourSpinorField::gaussian(full_layout(Action::Asqtad, lattice), 5);
            let ours = solve_full_on(&SolveBackend::Cpu, &gauge, &asqtad, &eta, None).unwrap();
            let settings_s = settings(SolverKind::Cg);
            let reference =
                StaggeredEvenOdd::new(&gauge, Action::Asqtad, 0.2, 0.9, 0.0, boundary, settings_s)
                    .unwrap();
            let mut psi = F64::zeros(reference.layout());
            reference.solve(&eta, &mut psi).unwrap();
            assert!(deviation(&ours.solution, &psi) < 1e-9, "{boundary:?}");

            // Clover at c_sw = μ = 0 is (m + 4) × Wilson: ψ_clover = ψ_Wilson/(m + 4).
            let mut clover = config(Action::Clover, SolverKind::BiCgStab);
            (clover.kappa, clover.csw, clover.boundary) = (Some(0.11), Some(0.0), boundary.into());
            let eta = ColourSpinorField::gaussian(full_layout(Action::Wilson, lattice), 4);
            let ours = solve_full_on(&SolveBackend::Cpu, &gauge, &clover, &eta, None).unwrap();
            let mut scaled = psi_wilson.clone();
            let m4 = 0.5 / 0.11;
            scaled.data_mut().iter_mut().for_each(|z| *z /= m4);
            assert!(deviation(&ours.solution, &scaled) < 1e-9, "{boundary:?}");

            asqtad.mass = Some(0.0);
            assert!(matches!(
                solve_full_on(&SolveBackend::Cpu, &gauge, &asqtad, &eta, None),
                Err(SolveError::FullSystemUnsupported { .. })
            ));
        }
    }
}
