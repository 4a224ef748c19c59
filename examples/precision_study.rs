//! The mixed-precision study of Gruber et al. (Lattice 2021) with qdsl: CGNR on the
//! even-odd Wilson normal equations M̂†M̂ x = M̂† b (M̂ = 1 − κ² H_eo H_oe) of the real
//! configuration tests/data/milc/lat.sample.l8 at κ = 0.124, Gaussian source, with the
//! iteration stored in f64, f32, tf32, bf16, f16, fixed16, packed20 and packed30
//! (reductions in f64, solution and true residual in f64, reliable updates), to a true
//! residual of 1e−10. Prints a table of iterations and reliable updates and writes an
//! SVG plot of the residual histories.
//!
//! Run with `cargo run --release --example precision_study [-- PLOT.svg [KAPPA]]`
//! (default plot: target/precision_study.svg).

use qdsl::app::precision_study::{run_study, study_table, write_histories_svg};
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::Parity;
use qdsl_runtime::solver::SolverOptions;
use std::path::{Path, PathBuf};

/// κ unless given as the second argument.
const KAPPA: f64 = 0.124;
const TOLERANCE: f64 = 1e-10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plot = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/precision_study.svg"));
    let kappa = match std::env::args().nth(2) {
        Some(k) => k.parse::<f64>().map_err(|e| format!("bad κ {k:?}: {e}"))?,
        None => KAPPA,
    };
    let config = root.join("tests/data/milc/lat.sample.l8");
    let file = read_gauge(&config, &ReadOptions::default())?;
    let layout = SpinorLayout::wilson(*file.field.lattice(), SiteSubset::Single(Parity::Even));
    let b = ColourSpinorField::gaussian(layout, 1);
    let opts = SolverOptions {
        max_iterations: 5000,
        polak_ribiere: true,
        ..SolverOptions::with_tolerance(TOLERANCE)
    };
    println!(
        "{}: CGNR on the even-odd Wilson M̂, κ = {kappa}, antiperiodic time, tolerance {TOLERANCE:.0e}",
        config.display()
    );
    let rows = run_study(&file.field, kappa, &b, &opts)?;
    print!("{}", study_table(&rows));
    if let Some(parent) = plot.parent() {
        std::fs::create_dir_all(parent)?;
    }
    write_histories_svg(&rows, TOLERANCE, &plot)?;
    println!("plot: {}", plot.display());
    Ok(())
}
