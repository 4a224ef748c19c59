//! The MSPCG study (the shape of Tu, Clark, Jung, Mawhinney, Table 1): outer iterations
//! of MSPCG on the even-odd Möbius M̂†M̂ with k = 3, 4, 6, 12 inner f32 CG iterations,
//! with and without the snake terms, against plain CG on M̂†M̂ (the same outer
//! iteration with the identity preconditioner: the same system, β and stopping
//! criterion ‖M̂†b̂ − M̂†M̂x‖ ≤ tol ‖M̂†b̂‖), on one gauge configuration, Gaussian 5D source (seed 1),
//! Möbius Ls 12, b5 1.5, c5 0.5, M5 1.8, antiperiodic time. Outer iterations in f64;
//! every solve's true residual is recomputed in f64 (on M̂†M̂ and on the 5D D).
//!
//! `cargo run --release --example mspcg_study -- CONFIG MASS BX,BY,BZ,BT [TOL] [INNER,…]
//! [backend=cpu|cuda] [precision=f64|f32|fixed16] [inner_precision=f32|fixed16|fixed8]
//! [m5inv=sweep|mma_f16|mma_bf16] [snake=both|yes|no] [ls=12] [plain=yes|no]
//! [directions=1,4,…]` (the outer FCG's kept directions, one row each; recipe and measured
//! tables: docs/mspcg.md). With `backend=cuda` the outer iteration runs on the GPU in
//! `precision` (mixed with f64) and the preconditioner there too; the seconds are the
//! iteration's (`iteration s`) and the whole solve's with set-up and JIT (`wall s`).

use qdsl::app::mobius::MobiusSolver;
use qdsl::app::mobius_mspcg::{solve_mspcg, solve_plain_cg, MspcgConfig};
use qdsl::app::precision::Precision;
use qdsl::app::solve::SolveBackend;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::operator::mobius::MobiusParams;
use qdsl_runtime::solver::mspcg::Snake;
use qdsl_runtime::solver::SolverOptions;
use std::time::Instant;

fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .map_err(|e| format!("{text:?}: {e}"))
        })
        .collect()
}

/// The `key=value` options after the positional arguments.
struct Options {
    backend: BackendChoice,
    precision: Precision,
    inner_precision: Precision,
    m5inv: M5invMode,
    snakes: Vec<Snake>,
    ls: usize,
    plain: bool,
    directions: Vec<usize>,
}

fn options(extra: &[String]) -> Result<Options, String> {
    let mut o = Options {
        backend: BackendChoice::Cpu,
        precision: Precision::F64,
        inner_precision: Precision::F32,
        m5inv: M5invMode::Sweep,
        snakes: vec![Snake::Include, Snake::Exclude],
        ls: 12,
        plain: true,
        directions: vec![1],
    };
    for arg in extra {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("{arg:?}: expected key=value"))?;
        match key {
            "backend" => o.backend = value.parse().map_err(|e| format!("backend: {e}"))?,
            "precision" => o.precision = value.parse()?,
            "inner_precision" => o.inner_precision = value.parse()?,
            "m5inv" => {
                o.m5inv = M5invMode::from_name(value)
                    .ok_or_else(|| format!("m5inv={value}: sweep, dense, mma_f16 or mma_bf16"))?
            }
            "snake" => {
                o.snakes = match value {
                    "both" => vec![Snake::Include, Snake::Exclude],
                    "yes" => vec![Snake::Include],
                    "no" => vec![Snake::Exclude],
                    _ => return Err(format!("snake={value}: both, yes or no")),
                }
            }
            "ls" => o.ls = value.parse().map_err(|e| format!("ls={value}: {e}"))?,
            "plain" => o.plain = value == "yes",
            "directions" => o.directions = parse_list(value)?,
            _ => return Err(format!("unknown option {key:?}")),
        }
    }
    Ok(o)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let positional: Vec<String> = args.iter().filter(|a| !a.contains('=')).cloned().collect();
    let extra: Vec<String> = args.iter().filter(|a| a.contains('=')).cloned().collect();
    let args = positional;
    if args.len() < 4 {
        return Err(
            "usage: mspcg_study CONFIG MASS BX,BY,BZ,BT [TOL] [INNER,…] [key=value …]".into(),
        );
    }
    let o = options(&extra)?;
    let mass: f64 = args[2]
        .parse()
        .map_err(|e| format!("MASS {:?}: {e}", args[2]))?;
    let blocks: [usize; 4] = parse_list(&args[3])?
        .try_into()
        .map_err(|_| "BX,BY,BZ,BT: four counts")?;
    let tol: f64 = match args.get(4) {
        Some(t) => t.parse().map_err(|e| format!("TOL {t:?}: {e}"))?,
        None => 1e-8,
    };
    let inners = match args.get(5) {
        Some(list) => parse_list(list)?,
        None => vec![3, 4, 6, 12],
    };
    let file = read_gauge(std::path::Path::new(&args[1]), &ReadOptions::default())?;
    let params = MobiusParams::mobius(o.ls, 1.5, 0.5, 1.8, mass)?;
    let options = SolverOptions {
        max_iterations: 20_000,
        ..SolverOptions::with_tolerance(tol)
    };
    let solver = MobiusSolver::new(
        &file.field,
        params,
        TimeBoundary::Antiperiodic,
        o.precision,
        options,
    )?;
    let backend = SolveBackend::select(o.backend, &mut |line| eprintln!("{line}"))?;
    let solver = match &backend {
        SolveBackend::Cuda(ctx) => solver.on_device(ctx)?,
        SolveBackend::Cpu => solver,
    };
    let eta = ColourSpinorField::gaussian(solver.layout(), 1);
    println!(
        "{}: lattice {:?}, Möbius Ls {}, b5 1.5, c5 0.5, M5 1.8, m_f {mass}, blocks {blocks:?}, tolerance {tol:.0e} on M̂†M̂, {}, outer {}, inner {} (M5⁻¹ {})",
        args[1],
        file.field.lattice().dims(),
        o.ls,
        backend.describe(),
        o.precision.name(),
        o.inner_precision.name(),
        o.m5inv.name()
    );
    println!(
        "| solver | inner | snake | outer iterations | CG / outer | true residual (M̂†M̂) | ‖η − Dψ‖/‖η‖ | iteration s | wall s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // Without the baseline (plain=no) the CG / outer column is left empty.
    let mut plain_iterations = None;
    if o.plain {
        let start = Instant::now();
        let plain = solve_plain_cg(&solver, &eta)?.solution;
        plain_iterations = Some(plain.result.iterations);
        println!(
            "| CG on M̂†M̂ | – | – | {} | 1.00 | {:.2e} | {:.2e} | {:.2} | {:.2} |",
            plain.result.iterations,
            plain.result.true_residual,
            plain.residual,
            plain.result.elapsed.as_secs_f64(),
            start.elapsed().as_secs_f64()
        );
    }
    for &snake in &o.snakes {
        for &inner in &inners {
            for &directions in &o.directions {
                let config = MspcgConfig {
                    blocks,
                    inner,
                    snake,
                    inner_precision: o.inner_precision,
                    m5inv: o.m5inv,
                    directions,
                };
                let start = Instant::now();
                let sol = solve_mspcg(&solver, &eta, &config)?;
                let r = &sol.solution.result;
                let status = if r.is_converged() {
                    String::new()
                } else {
                    format!(" ({})", r.convergence)
                };
                let solver_name = match directions {
                    1 => "MSPCG".to_string(),
                    m => format!("MSPCG, FCG({m})"),
                };
                println!(
                    "| {solver_name} | {inner} | {} | {}{status} | {} | {:.2e} | {:.2e} | {:.2} | {:.2} |",
                    if snake == Snake::Include { "yes" } else { "no" },
                    r.iterations,
                    plain_iterations.map_or(String::new(), |n| format!(
                        "{:.2}",
                        n as f64 / r.iterations as f64
                    )),
                    r.true_residual,
                    sol.solution.residual,
                    r.elapsed.as_secs_f64(),
                    start.elapsed().as_secs_f64()
                );
            }
        }
    }
    Ok(())
}
