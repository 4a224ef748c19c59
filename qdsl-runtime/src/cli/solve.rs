//! `qdsl solve`: read a gauge configuration, build an even-odd operator and solve
//! M̂ x = b with a progress bar; print a summary and write the history (JSON, SVG).

use super::CliError;
use crate::app::history::{write_json, write_plot};
use crate::app::solve::{solve, Action, Precision, SolveConfig, SolveReport, Source};
use crate::solver::{Progress, ProgressCallback, SolverKind};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use qdsl_core::io::{read_gauge, ReadOptions};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct SolveArgs {
    /// The gauge configuration (thin links; any supported format).
    config: PathBuf,
    /// The action: wilson, staggered (naive) or asqtad.
    #[arg(long, default_value = "wilson")]
    action: Action,
    /// Hopping parameter κ > 0 (Wilson).
    #[arg(long, allow_negative_numbers = true)]
    kappa: Option<f64>,
    /// Quark mass m ≥ 0 (staggered, asqtad).
    #[arg(long, allow_negative_numbers = true)]
    mass: Option<f64>,
    /// Tadpole factor u0 of the asqtad smearing (default: P^(1/4), P the plaquette).
    #[arg(long, allow_negative_numbers = true)]
    u0: Option<f64>,
    /// Solver: cg, cgnr, cgne or bicgstab (cg needs a Hermitian operator: staggered).
    #[arg(long, default_value = "cgnr")]
    solver: SolverKind,
    /// Iteration precision: f64 (pure) or f32 (mixed f64–f32 with reliable updates).
    #[arg(long, default_value = "f64")]
    precision: Precision,
    /// Target relative residual ‖b − M̂x‖/‖b‖.
    #[arg(long, default_value_t = 1e-10)]
    tol: f64,
    /// Iteration limit.
    #[arg(long, default_value_t = 10_000)]
    max_iter: usize,
    /// Seed of the Gaussian random source (even sites).
    #[arg(long, default_value_t = 1, conflicts_with = "point_source")]
    seed: u64,
    /// A point source at the origin (spin 0, colour 0) instead of a random one.
    #[arg(long)]
    point_source: bool,
    /// Write the convergence history as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Plot log10 of the residual against the iteration to this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// A progress bar over the iteration limit showing the iterated residual.
fn progress_bar(max_iter: usize) -> (ProgressBar, ProgressCallback) {
    let bar = ProgressBar::new(max_iter as u64);
    let style = ProgressStyle::with_template("{spinner} iteration {pos:>6}  {msg}  [{elapsed}]")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    let handle = bar.clone();
    let callback: ProgressCallback = Arc::new(move |p: &Progress| {
        handle.set_position(p.iteration as u64);
        handle.set_message(format!(
            "|r|/|b| = {:.3e} (target {:.0e})",
            p.residual, p.tolerance
        ));
    });
    (bar, callback)
}

fn print_summary(report: &SolveReport) {
    let r = &report.result;
    println!("  action      {} ({})", report.action, report.parameters);
    println!(
        "  lattice     {}, even-odd preconditioned, even sites",
        report.lattice
    );
    println!("  backend     {} backend", report.backend);
    println!(
        "  solver      {}, precision {}",
        report.solver,
        report.precision.describe()
    );
    println!(
        "  result      {} (tolerance {:.1e})",
        r.convergence, report.tolerance
    );
    println!(
        "  iterations  {}, reliable updates {}",
        r.iterations, r.reliable_updates
    );
    println!(
        "  residual    true {:.3e} at the end of the solve, recomputed {:.3e}",
        r.true_residual, report.recomputed_residual
    );
    println!(
        "  time        {:.3} s, {:.2} GFLOP/s (operator flops)",
        r.elapsed.as_secs_f64(),
        report.gflops
    );
}

/// Runs the solve; a solve that does not converge is an error after the summary and the
/// history have been printed and written.
pub fn run(args: &SolveArgs) -> Result<(), CliError> {
    let file = read_gauge(&args.config, &ReadOptions::default())
        .map_err(|e| format!("cannot read the gauge configuration: {e}"))?;
    let config = SolveConfig {
        action: args.action,
        kappa: args.kappa,
        mass: args.mass,
        u0: args.u0,
        solver: args.solver,
        precision: args.precision,
        tolerance: args.tol,
        max_iterations: args.max_iter,
        source: if args.point_source {
            Source::Point
        } else {
            Source::Gaussian { seed: args.seed }
        },
    };
    println!("{}", file.path.display());
    let (bar, callback) = progress_bar(args.max_iter);
    let outcome = solve(&file.field, &config, Some(callback));
    bar.finish_and_clear();
    let report = outcome?;
    print_summary(&report);
    if let Some(path) = &args.json {
        write_json(&report, path)?;
        println!("  history     {}", path.display());
    }
    if let Some(path) = &args.plot {
        write_plot(&report, path)?;
        println!("  plot        {}", path.display());
    }
    if !report.result.is_converged() {
        return Err(format!(
            "the solve did not converge: {} after {} iterations (true residual {:.3e}, \
             tolerance {:.1e})",
            report.result.convergence,
            report.result.iterations,
            report.result.true_residual,
            report.tolerance
        )
        .into());
    }
    Ok(())
}
