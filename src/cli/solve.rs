//! `qdsl solve`: read a gauge configuration, build an even-odd operator and solve
//! M̂ x = b with a progress bar, on the GPU if there is one (the global `--backend`
//! flag or `$QDSL_BACKEND`: auto, cpu or cuda); print a summary and write the history
//! (JSON, SVG). Every action runs on both backends.

use super::action_args::ActionArgs;
use super::fermion_file_args::FullSystemArgs;
use super::gauge_read::{read_config, GaugeReadArgs};
use super::grid_args::GridArgs;
use super::mobius::{MobiusArgs, MobiusJob};
use super::mspcg_args::MspcgArgs;
use super::solver_arg::SolverArg;
use super::CliError;
use crate::app::history::{write_json, write_plot};
use crate::app::mobius::MobiusSolver;
use crate::app::precision::{self, Precision};
use crate::app::solve::{
    full_layout, solve_full_on_grid, solve_on, solve_on_grid, Action, SolveBackend, SolveConfig,
    SolveReport, Source,
};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use qdsl_core::io::UnitarityCheck;
use qdsl_core::lattice::ProcessGrid;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::solver::{Progress, ProgressCallback, SolverKind, SolverOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod sap_gcr;
pub use sap_gcr::SapGcrArgs;

#[derive(Debug, Args)]
pub struct SolveArgs {
    /// The gauge configuration (thin links; any supported format).
    config: PathBuf,
    #[command(flatten)]
    physics: ActionArgs,
    /// Solver: cg, cgnr, cgne or bicgstab on the even-odd system (cg needs a Hermitian
    /// operator: the staggered actions); mspcg (--action mobius: multi-splitting
    /// preconditioned CG on M̂†M̂ with --blocks, --inner, --no-snake; on the CPU); or
    /// sap-gcr (Wilson and clover: SAP-preconditioned GCR on the full system, flags
    /// --block --ncy --nmr --nkv --adaptive).
    #[arg(long, default_value = "cgnr")]
    solver: SolverArg,
    /// Iteration precision: f64 (pure), or f32, fixed16 or fixed8 (16- or 8-bit fixed
    /// point), f16, packed20 or packed30 (bit-packed, shared exponent), each mixed with
    /// f64 through reliable updates.
    #[arg(long, default_value = "f64", value_parser = Precision::parse_device)]
    precision: Precision,
    /// Target relative residual ‖b − M̂x‖/‖b‖.
    #[arg(long, default_value_t = 1e-10)]
    tol: f64,
    /// Iteration limit.
    #[arg(long, default_value_t = 10_000)]
    max_iter: usize,
    /// Seed of the random source: Gaussian on the even sites, or `--source gaussian|z2`
    /// on every site.
    #[arg(long, default_value_t = 1, conflicts_with = "point_source")]
    seed: u64,
    /// A point source at the origin (spin 0, colour 0) instead of a random one.
    #[arg(long)]
    point_source: bool,
    /// Replicate the configuration periodically before solving: N times in every
    /// direction, or `NX,NY,NZ,NT` per direction (a large lattice derived from a real
    /// one, e.g. 8⁴ × 4 → 32⁴, 8⁴ × 6,6,6,12 → 48³×96; local observables such as the
    /// plaquette are unchanged).
    #[arg(long, default_value = "1", value_parser = parse_tiling)]
    tile: [usize; 4],
    /// Write the convergence history as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Plot log10 of the residual against the iteration to this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Solve several right-hand sides at once: N Gaussian sources (seeds --seed,
    /// --seed + 1, …) or `propagator` (the 12 spin-colour point sources at the origin; 3
    /// colour sources for staggered), on the even sites, with block CGNR (Wilson-like
    /// actions) or block CG (staggered) and the multi-RHS kernels; a per-source report.
    #[arg(long, value_parser = super::solve_sources::parse_sources, conflicts_with_all = ["point_source", "json", "plot"])]
    sources: Option<super::solve_sources::SourcesArg>,
    #[command(flatten)]
    pub(super) mobius: MobiusArgs,
    #[command(flatten)]
    mspcg: MspcgArgs,
    #[command(flatten)]
    full: FullSystemArgs,
    #[command(flatten)]
    read: GaugeReadArgs,
    #[command(flatten)]
    grid: GridArgs,
    #[command(flatten)]
    sap_gcr: SapGcrArgs,
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
    println!("  backend     {}", report.backend);
    if let Some(warning) = precision_note(report) {
        println!("  note        {warning}");
    }
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
    let t = &report.times;
    println!(
        "  set-up      {:.3} s (file read {:.3} s; links, operator, JIT and tuning {:.3} s)",
        t.total_setup().as_secs_f64(),
        t.file_read.as_secs_f64(),
        t.setup.as_secs_f64()
    );
    if t.jit.count + t.loads.count + t.tuning.count > 0 {
        println!(
            "  of which    JIT: NVRTC {}, module loads {}; tuning {} kernels",
            t.jit, t.loads, t.tuning
        );
    }
    println!(
        "  solve       {:.3} s, {:.2} GFLOP/s (operator flops of the solve only)",
        t.solve.as_secs_f64(),
        report.gflops
    );
}

/// A note on the CPU emulation of narrow formats (they are stored as such on the GPU).
/// `--action mobius` (CGNR on the asymmetric M̂: f64, or f64–f32 and, on the GPU,
/// f64–fixed16).
fn run_mobius(args: &SolveArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    if !matches!(
        args.solver,
        SolverArg::Kind(SolverKind::Cgnr) | SolverArg::Mspcg
    ) {
        return Err(format!(
            "--action mobius solves with cgnr (CG on M̂†M̂) or mspcg, not {}",
            args.solver
        )
        .into());
    }
    if !MobiusSolver::PRECISIONS.contains(&args.precision) {
        return Err(format!(
            "--action mobius iterates in {}, not {}",
            precision::list(&MobiusSolver::PRECISIONS),
            args.precision.describe()
        )
        .into());
    }
    MobiusJob {
        backend: MobiusJob::backend(choice)?,
        config: &args.config,
        read: &args.read,
        params: args.mobius.params(args.physics.mass)?,
        boundary: args.physics.wrapping_boundary("--action mobius")?,
        precision: args.precision,
        options: SolverOptions {
            max_iterations: args.max_iter,
            ..SolverOptions::with_tolerance(args.tol)
        },
        mspcg: args.mspcg.config(args.solver, args.mobius.m5inv)?,
        reduced: args.mspcg.reduced(args.physics.mu)?,
        json: args.json.as_deref(),
        plot: args.plot.as_deref(),
        grid: args.grid.grid,
        m5inv: args.mobius.m5inv,
    }
    .solve(args.seed)
}

fn precision_note(report: &SolveReport) -> Option<&'static str> {
    (report.precision.is_emulated() && report.backend == "CPU").then_some(
        "the low precision is emulated on the CPU (f64 fields rounded through the format)",
    )
}

/// Runs the solve on the backend of `choice` (flag, else `$QDSL_BACKEND`, else auto;
/// the CPU for an action the GPU has no operator for, see [`SolveBackend::select_for`]);
/// a solve that does not converge is an error after the summary and the
/// history have been printed and written.
pub fn run(args: &SolveArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    let physics = &args.physics;
    args.mspcg.config(args.solver, None)?;
    if args.solver == SolverArg::SapGcr {
        return sap_gcr::run(args);
    }
    if physics.action == Action::Mobius {
        return run_mobius(args, choice);
    }
    args.mobius.refuse_for(physics.action)?;
    let solver = args.solver.kind(physics.action)?;
    let boundary = physics.fermion_boundary()?;
    let backend = SolveBackend::select_for(
        BackendChoice::from_env(choice)?,
        physics.action,
        &mut |line| eprintln!("{line}"),
    )?;
    let read = read_config(
        &args.config,
        &args.read,
        UnitarityCheck::ForPrecision,
        false,
    )
    .map_err(|e| format!("cannot read the gauge configuration: {e}"))?;
    read.print_notes();
    let read_seconds = read.seconds;
    let file = read.file;
    let config = SolveConfig {
        action: physics.action,
        kappa: physics.kappa,
        mass: physics.mass,
        u0: physics.u0,
        csw: physics.csw,
        mu: physics.mu,
        epsilon_naik: physics.epsilon_naik,
        clover_trace: physics.clover_trace,
        solver,
        precision: args.precision,
        tolerance: args.tol,
        max_iterations: args.max_iter,
        source: if args.point_source {
            Source::Point
        } else {
            Source::Gaussian { seed: args.seed }
        },
        boundary,
    };
    let gauge = tile_configuration(&file.field, args.tile)?;
    println!("{}", file.path.display());
    if args.tile != [1; 4] {
        println!("tiled {:?}×: {:?}", args.tile, gauge.lattice().dims());
    }
    if let Some(sources) = args.sources {
        if args.full.source(args.seed).is_some() {
            return Err(
                "--sources solves the even-odd system on the even sites: it does not take --source"
                    .into(),
            );
        }
        return super::solve_sources::run_sources(sources, args.seed, &backend, &gauge, &config);
    }
    let full_source = match args.full.source(args.seed) {
        Some(source) => {
            let eta = source.build(full_layout(physics.action, *gauge.lattice()))?;
            Some((source, eta))
        }
        None => None,
    };
    let (bar, callback) = progress_bar(args.max_iter);
    let report = match full_source {
        None => {
            let outcome = match args.grid.grid {
                Some(grid) => solve_on_grid(&backend, &gauge, &config, grid, Some(callback)),
                None => solve_on(&backend, &gauge, &config, Some(callback)),
            };
            bar.finish_and_clear();
            let mut report = outcome?;
            report.times.file_read = Duration::from_secs_f64(read_seconds);
            print_summary(&report);
            report
        }
        Some((source, eta)) => {
            let grid = args.grid.grid.unwrap_or_else(ProcessGrid::single);
            let outcome = solve_full_on_grid(&backend, &gauge, &config, &eta, grid, Some(callback));
            bar.finish_and_clear();
            let mut full = outcome?;
            full.report.times.file_read = Duration::from_secs_f64(read_seconds);
            print_summary(&full.report);
            args.full.finish(&full, &source)?;
            full.report
        }
    };
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

/// `--tile`: one count for every direction (`4`) or one per direction (`6,6,6,12`), each
/// 1..=64.
pub(crate) fn parse_tiling(text: &str) -> Result<[usize; 4], String> {
    let counts = if text.contains(',') {
        super::check::parse_dims(text)?
    } else {
        let n = text
            .trim()
            .parse::<usize>()
            .map_err(|e| format!("--tile {text:?}: {e} (expected N or NX,NY,NZ,NT)"))?;
        [n; 4]
    };
    match counts.iter().find(|&&n| !(1..=64).contains(&n)) {
        Some(n) => Err(format!("--tile {text:?}: {n} is outside 1..=64")),
        None => Ok(counts),
    }
}

/// The configuration replicated `tile` times per direction, or an error naming the counts.
pub(crate) fn tile_configuration(
    field: &qdsl_core::field::GaugeField<f64>,
    tile: [usize; 4],
) -> Result<qdsl_core::field::GaugeField<f64>, String> {
    field
        .tiled(tile)
        .map_err(|e| format!("cannot tile the configuration {tile:?} times: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_tiling;

    /// `--tile` takes one count or four, and names a bad one.
    #[test]
    fn tilings_are_parsed_and_bad_ones_named() {
        assert_eq!(parse_tiling("4").unwrap(), [4; 4]);
        assert_eq!(parse_tiling("6,6,6,12").unwrap(), [6, 6, 6, 12]);
        let e = parse_tiling("6,0,6,12").unwrap_err();
        assert!(e.contains("0 is outside 1..=64"), "{e}");
        let e = parse_tiling("6,6,12").unwrap_err();
        assert!(e.contains("found 3"), "{e}");
        assert!(parse_tiling("x").unwrap_err().contains("NX,NY,NZ,NT"));
    }
}
