//! SAP+GCR on the full-lattice Wilson-clover system M ψ = η (`qdsl solve --solver
//! sap-gcr`), and the studies of docs/sap_gcr.md.
//!
//! M = A − ½ H in mass normalisation with m = 1/(2κ) − 4 ([`FullClover`]); c_sw = 0 is
//! Wilson's M = (m + 4)(1 − κ H). The system is solved by flexible GCR(n_kv)
//! right-preconditioned by SAP ([`qdsl_runtime::solver::sap`]), static or adaptive, or
//! by plain GCR for comparison. Three precisions are chosen separately: the GCR vectors
//! (`outer`), the SAP block vectors (`inner`: f64, f32, or an emulated storage format
//! with f64 arithmetic) and the block reductions (f64 or f32, in [`SapParams`]); the
//! solution and the true residual are f64.
//!
//! | module | holds |
//! |---|---|
//! | [`study`] | the grid of static settings against the adaptive variant, and the precision study with its plot |

pub mod study;

use super::precision::{AnyPrecisionPreconditioner, Precision};
use super::solve::wilson_mass;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_runtime::operator::FullClover;
use qdsl_runtime::solver::sap::{Sap, SapParams, SapStats};
use qdsl_runtime::solver::{
    GcrResult, Identity, LinearOperator, SolverError, SolverField, SolverOptions,
};
use serde_json::{json, Value};
use std::time::Instant;

type F64 = ColourSpinorField<f64>;

/// What to solve and how.
#[derive(Clone, Debug)]
pub struct SapGcrSetup {
    /// Hopping parameter κ (m = 1/(2κ) − 4).
    pub kappa: f64,
    /// Clover coefficient (0: Wilson).
    pub csw: f64,
    /// Time boundary of the fermions.
    pub boundary: TimeBoundary,
    /// SAP's parameters, `None` for plain GCR.
    pub sap: Option<SapParams>,
    /// GCR basis size n_kv (restart length).
    pub nkv: usize,
    /// Precision of the GCR vectors.
    pub outer: Precision,
    /// Precision of SAP's block vectors (f64, f32 or an emulated format with f64
    /// arithmetic).
    pub inner: Precision,
    /// Tolerance (also the adaptive SAP's τ), iteration limit, reliable-update δ.
    pub options: SolverOptions,
}

/// The outcome of [`solve_sap_gcr`].
#[derive(Clone, Debug)]
pub struct SapGcrOutcome {
    /// The GCR solve (result, history) and its restarts.
    pub gcr: GcrResult,
    /// SAP's work (zero for plain GCR).
    pub sap: SapStats,
    /// ‖η − M ψ‖/‖η‖ recomputed here in f64 after the solve.
    pub recomputed_residual: f64,
    /// Wall-clock seconds of the solve (operators built, GCR run).
    pub seconds: f64,
    /// M applications in units of one M on the lattice: GCR's plus SAP's work.
    pub work: f64,
}

/// Solves M ψ = η on `gauge` from ψ = 0 per `setup` (module docs).
pub fn solve_sap_gcr(
    gauge: &GaugeField<f64>,
    setup: &SapGcrSetup,
    eta: &F64,
    psi: &mut F64,
) -> Result<SapGcrOutcome, SolverError> {
    let start = Instant::now();
    let op = FullClover::new(
        gauge.clone(),
        wilson_mass(setup.kappa),
        setup.csw,
        setup.boundary,
    );
    let single = op.cast::<f32>();
    let lattice = *gauge.lattice();
    psi.set_zero();
    let opts = &setup.options;
    let config = |e: qdsl_runtime::solver::sap::SapError| SolverError::operator(e);
    let run = |p: &mut dyn AnyPrecisionPreconditioner, psi: &mut F64| {
        setup.outer.gcr(&op, &single, p, setup.nkv, eta, psi, opts)
    };
    let (gcr, sap) = match setup.sap {
        None => (run(&mut Identity, psi)?, SapStats::default()),
        Some(params) if setup.inner == Precision::F32 => {
            let mut sap = Sap::new(&single, lattice, params).map_err(config)?;
            sap.set_outer_tolerance(opts.tolerance);
            (run(&mut sap, psi)?, sap.stats())
        }
        Some(params) => {
            let mut sap = Sap::new(&op, lattice, params)
                .map_err(config)?
                .with_rounding(setup.inner.rounding());
            sap.set_outer_tolerance(opts.tolerance);
            (run(&mut sap, psi)?, sap.stats())
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let mut r = eta.zeros_like();
    op.apply(&mut r, psi)?;
    r.xpay(eta, qdsl_core::Complex::new(-1.0, 0.0))?;
    let recomputed_residual = (r.norm_sqr() / eta.norm_sqr()).sqrt();
    let work = gcr.result.operator_applications as f64 + sap.work;
    Ok(SapGcrOutcome {
        gcr,
        sap,
        recomputed_residual,
        seconds,
        work,
    })
}

/// A one-line description of the SAP settings: "plain GCR(16)", or
/// "SAP 4x4x4x4 ncy 4 nmr 4 [adaptive] + GCR(16)".
pub fn describe(setup: &SapGcrSetup) -> String {
    match &setup.sap {
        None => format!("plain GCR({})", setup.nkv),
        Some(p) => format!(
            "SAP {}x{}x{}x{} ncy {} nmr {}{} + GCR({})",
            p.block[0],
            p.block[1],
            p.block[2],
            p.block[3],
            p.ncy,
            p.nmr,
            if p.adaptive.is_some() {
                " adaptive (maxima)"
            } else {
                ""
            },
            setup.nkv
        ),
    }
}

/// The solve as JSON: set-up, outcome, SAP's work and the residual history (records as
/// in [`super::history::history_json`]).
pub fn outcome_json(setup: &SapGcrSetup, lattice: [usize; 4], outcome: &SapGcrOutcome) -> Value {
    let r = &outcome.gcr.result;
    let s = &outcome.sap;
    json!({
        "solver": "sap-gcr",
        "method": describe(setup),
        "kappa": setup.kappa,
        "csw": setup.csw,
        "lattice": lattice,
        "outer_precision": setup.outer.name(),
        "inner_precision": setup.inner.name(),
        "reduction": setup.sap.map(|p| format!("{:?}", p.reduction).to_lowercase()),
        "tolerance": setup.options.tolerance,
        "converged": r.is_converged(),
        "reason": r.convergence.to_string(),
        "iterations": r.iterations,
        "restarts": outcome.gcr.restarts,
        "reliable_updates": r.reliable_updates,
        "true_residual": r.true_residual,
        "recomputed_residual": outcome.recomputed_residual,
        "seconds": outcome.seconds,
        "operator_applications": r.operator_applications,
        "sap": {
            "applications": s.applications,
            "cycles": s.cycles,
            "mr_block_steps": s.mr_block_steps,
            "operator_applications": s.operator_applications,
            "work": s.work,
        },
        "work_in_m_applications": outcome.work,
        "history": super::history::history_entries(&r.history),
    })
}

#[cfg(test)]
mod tests;
