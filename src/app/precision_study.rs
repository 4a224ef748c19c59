//! The mixed-precision study of Gruber et al. (Lattice 2021, porting openQ*D's solvers to
//! GPUs), done with qdsl on the CPU: CGNR on the even-odd Wilson normal equations
//! M̂†M̂ x = M̂† b, M̂ = 1 − κ² H_eo H_oe, with the solution and the true residual in f64
//! and the iteration stored in a low precision — f64, f32, TF32, bf16, f16, 16-bit fixed
//! point, 20- and 30-bit packed ([`Precision`]; all but f64 and f32 emulated) —
//! reductions (norms, inner products) always accumulated in f64, reliable updates with
//! the solvers' default δ. [`run_study`] returns one [`StudyRow`] per precision;
//! [`write_histories_svg`] plots their residual histories together.

use super::history::{draw_residual_plot, ResidualPlot};
use super::precision::Precision;
use plotters::prelude::*;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::lattice::Parity;
use qdsl_runtime::operator::cpu::EvenOddWilson;
use qdsl_runtime::solver::{
    ResidualKind, ResidualRecord, SolveResult, SolverError, SolverField, SolverKind, SolverOptions,
};
use std::path::Path;
use thiserror::Error;

type F64 = ColourSpinorField<f64>;

/// One solve of the study.
#[derive(Clone, Debug)]
pub struct StudyRow {
    /// The iteration precision.
    pub precision: Precision,
    /// The solver's result (iterations, reliable updates, true residual, history).
    pub result: SolveResult,
}

/// The study could not be run or plotted.
#[derive(Debug, Error)]
pub enum StudyError {
    /// The solver refused its options or an operation failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// The plot could not be drawn or written.
    #[error("cannot draw the plot {path}: {reason}")]
    Plot {
        /// The file.
        path: String,
        /// The cause.
        reason: String,
    },
}

/// Solves M̂ x = b by CGNR for κ on `gauge` (antiperiodic time, even sites) from x₀ = 0
/// once per precision of [`Precision::ALL`], with options `opts` (tolerance, δ,
/// limits).
pub fn run_study(
    gauge: &GaugeField<f64>,
    kappa: f64,
    b: &F64,
    opts: &SolverOptions,
) -> Result<Vec<StudyRow>, StudyError> {
    let boundary = TimeBoundary::Antiperiodic;
    let high = EvenOddWilson::new(gauge.clone(), kappa, Parity::Even, boundary);
    let single = EvenOddWilson::<f32>::new(gauge.cast(), kappa, Parity::Even, boundary);
    let mut rows = Vec::with_capacity(Precision::ALL.len());
    for precision in Precision::ALL {
        let mut x = b.zeros_like();
        let result = precision.solve(SolverKind::Cgnr, &high, &single, b, &mut x, opts)?;
        rows.push(StudyRow { precision, result });
    }
    Ok(rows)
}

/// The table "precision  result  iterations  reliable updates  true residual  seconds".
pub fn study_table(rows: &[StudyRow]) -> String {
    let mut out = format!(
        "{:<10} {:<26} {:>10} {:>8} {:>13} {:>9}\n",
        "precision", "result", "iterations", "updates", "true |r|/|b|", "seconds"
    );
    for row in rows {
        let r = &row.result;
        out += &format!(
            "{:<10} {:<26} {:>10} {:>8} {:>13.3e} {:>9.3}\n",
            row.precision.name(),
            r.convergence.to_string(),
            r.iterations,
            r.reliable_updates,
            r.true_residual,
            r.elapsed.as_secs_f64()
        );
    }
    out
}

/// (iteration, log₁₀ ‖r‖/‖b‖) of the iterated residuals of a history.
fn iterated_points(history: &[ResidualRecord]) -> Vec<(f64, f64)> {
    history
        .iter()
        .filter(|h| h.kind == ResidualKind::Iterated && h.residual > 0.0 && h.residual.is_finite())
        .map(|h| (h.iteration as f64, h.residual.log10()))
        .collect()
}

/// Plots log₁₀ ‖r‖/‖b‖ of the iterated residual against the iteration for every row, one
/// coloured line each, with the tolerance as a dashed level, to an SVG file.
pub fn write_histories_svg(
    rows: &[StudyRow],
    tolerance: f64,
    path: &Path,
) -> Result<(), StudyError> {
    let title = "CGNR, even-odd Wilson: iteration precision vs residual";
    write_titled_histories_svg(rows, tolerance, title, path)
}

/// [`write_histories_svg`] with another caption (e.g. for another solver's study).
pub fn write_titled_histories_svg(
    rows: &[StudyRow],
    tolerance: f64,
    title: &str,
    path: &Path,
) -> Result<(), StudyError> {
    let series: Vec<_> = rows
        .iter()
        .map(|r| iterated_points(&r.result.history))
        .collect();
    let tol = tolerance.log10();
    let ys = series.iter().flatten().map(|p| p.1);
    let (lo, hi) = ys.fold((tol, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let last = rows
        .iter()
        .map(|r| r.result.iterations)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let plot = ResidualPlot {
        title,
        y_desc: "log10 |r|/|b| (iterated)",
        size: (900, 560),
        last,
        tol,
        lo,
        hi,
    };
    draw_residual_plot(path, &plot, |chart| {
        for (i, (row, points)) in rows.iter().zip(series).enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points, colour))
                .map_err(|e| e.to_string())?
                .label(row.precision.name())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        Ok(())
    })
    .map_err(|reason| StudyError::Plot {
        path: path.display().to_string(),
        reason,
    })
}
