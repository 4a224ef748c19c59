//! A solve's convergence history as JSON ([`history_json`]) and as an SVG plot of
//! log₁₀ ‖r‖/‖b‖ against the iteration ([`write_plot`]).

use super::solve::SolveReport;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use qdsl_runtime::solver::{ResidualKind, ResidualRecord, SolveResult};
use serde_json::{json, Value};
use std::path::Path;
use thiserror::Error;

/// Writing the history failed.
#[derive(Debug, Error)]
pub enum HistoryError {
    /// The JSON file could not be written.
    #[error("cannot write the history to {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The plot could not be drawn or written.
    #[error("cannot draw the plot {path}: {reason}")]
    Plot {
        /// The file.
        path: String,
        /// The cause.
        reason: String,
    },
}

fn kind_name(kind: ResidualKind) -> &'static str {
    match kind {
        ResidualKind::Iterated => "iterated",
        ResidualKind::True => "true",
    }
}

/// A residual history as JSON, one `{iteration, residual, kind}` per record.
pub(crate) fn history_records(history: &[ResidualRecord]) -> Vec<Value> {
    history
        .iter()
        .map(|h| {
            json!({
                "iteration": h.iteration,
                "residual": h.residual,
                "kind": kind_name(h.kind),
            })
        })
        .collect()
}

/// The report as JSON: the set-up (action, parameters, lattice, backend, solver,
/// precision, tolerance), the outcome (converged, reason, iterations, reliable updates,
/// true residual, recomputed residual, seconds, GFLOP/s) and `history`, one entry
/// `{iteration, residual, kind}` per record (residual = ‖r‖/‖b‖, kind "iterated" or
/// "true").
pub fn history_json(report: &SolveReport) -> Value {
    let r = &report.result;
    let history = history_records(&r.history);
    json!({
        "action": report.action.name(),
        "parameters": report.parameters,
        "lattice": report.lattice.dims(),
        "backend": report.backend,
        "solver": report.solver.name(),
        "precision": report.precision.describe(),
        "tolerance": report.tolerance,
        "converged": r.is_converged(),
        "reason": r.convergence.to_string(),
        "iterations": r.iterations,
        "reliable_updates": r.reliable_updates,
        "true_residual": r.true_residual,
        "recomputed_residual": report.recomputed_residual,
        "seconds": r.elapsed.as_secs_f64(),
        "file_read_seconds": report.times.file_read.as_secs_f64(),
        "setup_seconds": report.times.setup.as_secs_f64(),
        "setup_jit": {"nvrtc_compiles": report.times.jit.count, "nvrtc_seconds": report.times.jit.time.as_secs_f64(), "module_loads": report.times.loads.count, "module_load_seconds": report.times.loads.time.as_secs_f64()},
        "setup_tuning": {"kernels": report.times.tuning.count, "seconds": report.times.tuning.time.as_secs_f64()},
        "solve_seconds": report.times.solve.as_secs_f64(),
        "operator_applications": r.operator_applications,
        "gflops": report.gflops,
        "history": history,
    })
}

/// Writes [`history_json`] (pretty-printed) to `path`.
pub fn write_json(report: &SolveReport, path: &Path) -> Result<(), HistoryError> {
    write_value(&history_json(report), path)
}

/// Writes a JSON value, pretty-printed, to `path`.
pub fn write_value(value: &Value, path: &Path) -> Result<(), HistoryError> {
    let text =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    std::fs::write(path, text + "\n").map_err(|source| HistoryError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// (iteration, log₁₀ residual) of the records of one kind with a positive residual.
fn points(history: &[ResidualRecord], kind: ResidualKind) -> Vec<(f64, f64)> {
    history
        .iter()
        .filter(|h| h.kind == kind && h.residual > 0.0 && h.residual.is_finite())
        .map(|h| (h.iteration as f64, h.residual.log10()))
        .collect()
}

/// The chart of a residual plot: iteration on x, log₁₀ ‖r‖/‖b‖ on y.
pub(crate) type ResidualChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What every residual plot shares: an SVG of `size` pixels with `title`, x from 0 to
/// `last` iterations, y (labelled `y_desc`) spanning [lo, hi] and the tolerance level
/// `tol` (all log₁₀), which is drawn dashed after the caller's series, then the legend.
pub(crate) struct ResidualPlot<'s> {
    /// The caption.
    pub title: &'s str,
    /// The y-axis label.
    pub y_desc: &'s str,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// The last iteration (x range 0..last).
    pub last: f64,
    /// log₁₀ of the tolerance.
    pub tol: f64,
    /// The smallest and largest log₁₀ residual plotted.
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
}

/// Draws `plot` to `path` with the caller's series (`series` adds them to the chart);
/// a drawing error is returned as its message.
pub(crate) fn draw_residual_plot(
    path: &Path,
    plot: &ResidualPlot<'_>,
    series: impl FnOnce(&mut ResidualChart<'_, '_>) -> Result<(), String>,
) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, plot.size).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(plot.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            0.0..plot.last,
            (plot.lo - 0.5).floor()..(plot.hi + 0.5).ceil(),
        )
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc(plot.y_desc)
        .draw()
        .map_err(|x| e(&x))?;
    series(&mut chart)?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, plot.tol), (plot.last, plot.tol)],
            6,
            4,
            BLACK.into(),
        ))
        .map_err(|x| e(&x))?
        .label("tolerance")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// Draws log₁₀ ‖r‖/‖b‖ against the iteration as an SVG file: the iterated residual as
/// a line, the true residuals (start, reliable updates, end) as dots, and the tolerance
/// as a dashed level.
pub fn write_plot(report: &SolveReport, path: &Path) -> Result<(), HistoryError> {
    let title = format!(
        "{} {} {}, {}",
        report.action,
        report.solver,
        report.precision.describe(),
        report.result.convergence
    );
    write_result_plot(&report.result, report.tolerance, &title, path)
}

/// [`write_plot`] for any solve result, with its tolerance and a caption.
pub fn write_result_plot(
    result: &SolveResult,
    tolerance: f64,
    title: &str,
    path: &Path,
) -> Result<(), HistoryError> {
    let history = &result.history;
    let iterated = points(history, ResidualKind::Iterated);
    let true_points = points(history, ResidualKind::True);
    let tol = tolerance.log10();
    let ys = iterated.iter().chain(&true_points).map(|p| p.1);
    let (lo, hi) = ys.fold((tol, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let plot = ResidualPlot {
        title,
        y_desc: "log10 |r|/|b|",
        size: (800, 500),
        last: result.iterations.max(1) as f64,
        tol,
        lo,
        hi,
    };
    draw_residual_plot(path, &plot, |chart| {
        let e = |e: &dyn std::fmt::Display| e.to_string();
        chart
            .draw_series(LineSeries::new(iterated, &BLUE))
            .map_err(|x| e(&x))?
            .label("iterated residual")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
        chart
            .draw_series(PointSeries::of_element(
                true_points,
                4,
                &RED,
                &|c, s, st| Circle::new(c, s, st.filled()),
            ))
            .map_err(|x| e(&x))?
            .label("true residual")
            .legend(|(x, y)| Circle::new((x + 10, y), 4, RED.filled()));
        Ok(())
    })
    .map_err(|reason| HistoryError::Plot {
        path: path.display().to_string(),
        reason,
    })
}
