//! The SAP+GCR studies of docs/sap_gcr.md.
//!
//! * [`run_grid`]: a grid of static (block, ncy, nmr) settings and adaptive ones on one
//!   system: outer iterations, work in M applications and time per setting
//!   ([`grid_table`]); the issue asks the adaptive variant to stay within 1.5× of the best
//!   static setting and never among the pathological slow ones.
//! * [`run_precisions`]: one SAP setting with the GCR vectors, or SAP's block vectors, in
//!   each [`Precision`] (f64 … posit32): iterations, restarts and reliable updates
//!   (resets) per format ([`precision_table`]; plot with
//!   [`crate::app::precision_study::write_titled_histories_svg`]).

use super::{describe, solve_sap_gcr, SapGcrOutcome, SapGcrSetup};
use crate::app::precision::Precision;
use crate::app::precision_study::StudyRow;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_runtime::solver::sap::{AdaptiveSap, SapParams};
use qdsl_runtime::solver::{SolverError, SolverField};

type F64 = ColourSpinorField<f64>;

/// One solve of a study.
#[derive(Clone, Debug)]
pub struct GridRow {
    /// The setting, as [`describe`] prints it.
    pub label: String,
    /// Whether it is the adaptive variant.
    pub adaptive: bool,
    /// The outcome.
    pub outcome: SapGcrOutcome,
}

/// The static settings of the grid: every block of `blocks` with every ncy of `ncys` and
/// nmr of `nmrs`; then the adaptive variant on every block with maxima `adaptive_max`
/// (ncy, nmr) and the adaptive parameters `adaptive` (their τ replaced by the solve's
/// tolerance).
pub fn grid_settings(
    blocks: &[[usize; 4]],
    ncys: &[usize],
    nmrs: &[usize],
    adaptive_max: (usize, usize),
    adaptive: AdaptiveSap,
) -> Vec<SapParams> {
    let mut out = Vec::new();
    for &block in blocks {
        for &ncy in ncys {
            for &nmr in nmrs {
                out.push(SapParams {
                    block,
                    ncy,
                    nmr,
                    ..SapParams::default()
                });
            }
        }
    }
    for &block in blocks {
        out.push(SapParams {
            block,
            ncy: adaptive_max.0,
            nmr: adaptive_max.1,
            adaptive: Some(adaptive),
            ..SapParams::default()
        });
    }
    out
}

/// Solves M ψ = η once per setting of `settings` (and once with plain GCR first), the
/// rest of the set-up from `base`.
pub fn run_grid(
    gauge: &GaugeField<f64>,
    base: &SapGcrSetup,
    settings: &[SapParams],
    eta: &F64,
    mut progress: impl FnMut(&GridRow),
) -> Result<Vec<GridRow>, SolverError> {
    let mut rows = Vec::new();
    let plain = std::iter::once(None).chain(settings.iter().copied().map(Some));
    for sap in plain {
        let setup = SapGcrSetup {
            sap,
            ..base.clone()
        };
        let mut psi = eta.zeros_like();
        let outcome = solve_sap_gcr(gauge, &setup, eta, &mut psi)?;
        let row = GridRow {
            label: describe(&setup),
            adaptive: sap.is_some_and(|p| p.adaptive.is_some()),
            outcome,
        };
        progress(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The grid as a Markdown table: setting, converged, outer iterations, restarts, SAP
/// cycles, MR block steps, work (M applications), seconds, and time and work relative to
/// the best converged static SAP setting.
pub fn grid_table(rows: &[GridRow]) -> String {
    let best = |f: fn(&SapGcrOutcome) -> f64| {
        rows.iter()
            .filter(|r| r.label.starts_with("SAP") && !r.adaptive)
            .filter(|r| r.outcome.gcr.result.is_converged())
            .map(|r| f(&r.outcome))
            .fold(f64::INFINITY, f64::min)
    };
    let best_time = best(|o| o.seconds);
    let best_work = best(|o| o.work);
    let mut out = String::from(
        "| setting | converged | outer its | restarts | SAP cycles | MR block steps | work (M) | s | time / best | work / best |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let o = &row.outcome;
        let r = &o.gcr.result;
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} |\n",
            row.label,
            if r.is_converged() { "yes" } else { "no" },
            r.iterations,
            o.gcr.restarts,
            o.sap.cycles,
            o.sap.mr_block_steps,
            o.work,
            o.seconds,
            o.seconds / best_time,
            o.work / best_work,
        );
    }
    out
}

/// Which vectors the precision study stores in the format under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudiedVectors {
    /// GCR's vectors (SAP in f32).
    Outer,
    /// SAP's block vectors (GCR in f64).
    Inner,
}

/// Solves M ψ = η with `base` once per format of [`Precision::ALL`], the format
/// applied to the vectors `which`.
pub fn run_precisions(
    gauge: &GaugeField<f64>,
    base: &SapGcrSetup,
    which: StudiedVectors,
    eta: &F64,
    mut progress: impl FnMut(Precision, &SapGcrOutcome),
) -> Result<Vec<(Precision, SapGcrOutcome)>, SolverError> {
    let mut rows = Vec::new();
    for format in Precision::ALL {
        let setup = match which {
            StudiedVectors::Outer => SapGcrSetup {
                outer: format,
                inner: Precision::F32,
                ..base.clone()
            },
            StudiedVectors::Inner => SapGcrSetup {
                outer: Precision::F64,
                inner: format,
                ..base.clone()
            },
        };
        let mut psi = eta.zeros_like();
        let outcome = solve_sap_gcr(gauge, &setup, eta, &mut psi)?;
        progress(format, &outcome);
        rows.push((format, outcome));
    }
    Ok(rows)
}

/// The precision study as a Markdown table: format, result, outer iterations, restarts,
/// reliable updates (resets), true residual, seconds.
pub fn precision_table(rows: &[(Precision, SapGcrOutcome)]) -> String {
    let mut out = String::from(
        "| format | result | outer its | restarts | resets (reliable updates) | true residual | s |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for (format, o) in rows {
        let r = &o.gcr.result;
        out += &format!(
            "| {} | {} | {} | {} | {} | {:.2e} | {:.2} |\n",
            format,
            r.convergence,
            r.iterations,
            o.gcr.restarts,
            r.reliable_updates,
            o.recomputed_residual,
            o.seconds
        );
    }
    out
}

/// The rows as [`StudyRow`]s for the shared history plot.
pub fn study_rows(rows: &[(Precision, SapGcrOutcome)]) -> Vec<StudyRow> {
    rows.iter()
        .map(|(precision, o)| StudyRow {
            precision: *precision,
            result: o.gcr.result.clone(),
        })
        .collect()
}
