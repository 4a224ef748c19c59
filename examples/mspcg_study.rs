//! The MSPCG study (the shape of Tu, Clark, Jung, Mawhinney, Table 1): outer iterations
//! of MSPCG on the even-odd Möbius M̂†M̂ with k = 3, 4, 6, 12 inner f32 CG iterations,
//! with and without the snake terms, against plain CG on M̂†M̂ (the same outer
//! iteration with the identity preconditioner: the same system, β and stopping
//! criterion ‖M̂†b̂ − M̂†M̂x‖ ≤ tol ‖M̂†b̂‖), on one gauge configuration, Gaussian 5D source (seed 1),
//! Möbius Ls 12, b5 1.5, c5 0.5, M5 1.8, antiperiodic time. Outer iterations in f64;
//! every solve's true residual is recomputed in f64 (on M̂†M̂ and on the 5D D).
//!
//! `cargo run --release --example mspcg_study -- CONFIG MASS BX,BY,BZ,BT [TOL] [INNER,…]`
//! (recipe and measured table: docs/mspcg.md).

use qdsl::app::mobius::MobiusSolver;
use qdsl::app::mobius_mspcg::{solve_mspcg, solve_plain_cg, MspcgConfig};
use qdsl::app::precision::Precision;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::io::{read_gauge, ReadOptions};
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: mspcg_study CONFIG MASS BX,BY,BZ,BT [TOL] [INNER,…]".into());
    }
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
    let params = MobiusParams::mobius(12, 1.5, 0.5, 1.8, mass)?;
    let options = SolverOptions {
        max_iterations: 20_000,
        ..SolverOptions::with_tolerance(tol)
    };
    let solver = MobiusSolver::new(
        &file.field,
        params,
        TimeBoundary::Antiperiodic,
        Precision::F64,
        options,
    )?;
    let eta = ColourSpinorField::gaussian(solver.layout(), 1);
    println!(
        "{}: lattice {:?}, Möbius Ls 12, b5 1.5, c5 0.5, M5 1.8, m_f {mass}, blocks {blocks:?}, tolerance {tol:.0e} on M̂†M̂",
        args[1],
        file.field.lattice().dims()
    );
    let start = Instant::now();
    let plain = solve_plain_cg(&solver, &eta)?.solution;
    println!(
        "| solver | inner | snake | outer iterations | CG / outer | true residual (M̂†M̂) | ‖η − Dψ‖/‖η‖ | seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| CG on M̂†M̂ | – | – | {} | 1.00 | {:.2e} | {:.2e} | {:.1} |",
        plain.result.iterations,
        plain.result.true_residual,
        plain.residual,
        start.elapsed().as_secs_f64()
    );
    for snake in [Snake::Include, Snake::Exclude] {
        for &inner in &inners {
            let config = MspcgConfig {
                blocks,
                inner,
                snake,
            };
            let start = Instant::now();
            let sol = solve_mspcg(&solver, &eta, &config)?;
            let r = &sol.solution.result;
            let status = if r.is_converged() {
                String::new()
            } else {
                format!(" ({})", r.convergence)
            };
            println!(
                "| MSPCG | {inner} | {} | {}{status} | {:.2} | {:.2e} | {:.2e} | {:.1} |",
                if snake == Snake::Include { "yes" } else { "no" },
                r.iterations,
                plain.result.iterations as f64 / r.iterations as f64,
                r.true_residual,
                sol.solution.residual,
                start.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}
