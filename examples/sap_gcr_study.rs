//! The SAP+GCR studies of docs/sap_gcr.md on one gauge configuration (e.g. a quenched
//! β = 6.0 ensemble made by `qdsl generate`):
//!
//! 1. a grid of static SAP settings (blocks 4⁴ and 2⁴, ncy ∈ {1, 2, 4, 8},
//!    nmr ∈ {2, 4, 8}) against the adaptive variant (maxima ncy = nmr = 8, and 4) and plain
//!    GCR, at a well-conditioned and a near-critical κ: outer iterations, work in M
//!    applications and time;
//! 2. the precision study: the GCR vectors (SAP in f32), then SAP's block vectors (GCR
//!    in f64), stored in each of f64, f32, tf32, bf16, f16, fixed16, packed20, packed30,
//!    posit8 (es 0), posit16 (es 1), posit32 (es 2): iterations, restarts, resets; with
//!    SVG plots of the residual histories.
//!
//! Wilson-clover, c_sw = 1.769 (the non-perturbative value at β = 6.0), antiperiodic
//! time, Gaussian source of seed 1 on every site, GCR(16), tolerance 1e-10.
//!
//! Run with `cargo run --release --example sap_gcr_study -- CONFIG OUTDIR KAPPA_WELL
//! KAPPA_CRITICAL [grid|precision|all|adaptive [K,MR_FRACTION,CYCLE_FRACTION[,MR_TOLERANCE]]]`;
//! `adaptive` runs only plain GCR and the adaptive rows (blocks 4⁴ and 2⁴, maxima (8, 8)
//! and (4, 4)), with the given adaptive parameters (default: [`AdaptiveSap::default`]).

use qdsl::app::precision::Precision;
use qdsl::app::precision_study::write_titled_histories_svg;
use qdsl::app::sap_gcr::study::{
    grid_settings, grid_table, precision_table, run_grid, run_precisions, study_rows,
    StudiedVectors,
};
use qdsl::app::sap_gcr::{SapGcrOutcome, SapGcrSetup};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_runtime::solver::sap::{AdaptiveSap, SapParams};
use qdsl_runtime::solver::SolverOptions;
use std::path::PathBuf;

const CSW: f64 = 1.769;
const TOLERANCE: f64 = 1e-10;
/// The adaptive parameters the command line takes, in order.
const ADAPTIVE_USAGE: &str = "K,MR_FRACTION,CYCLE_FRACTION[,MR_TOLERANCE]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err(
            "usage: sap_gcr_study CONFIG OUTDIR KAPPA_WELL KAPPA_CRITICAL [grid|precision|all]"
                .into(),
        );
    }
    let config = PathBuf::from(&args[1]);
    let out = PathBuf::from(&args[2]);
    let kappas: [f64; 2] = [args[3].parse()?, args[4].parse()?];
    let what = args.get(5).map_or("all", String::as_str);
    std::fs::create_dir_all(&out)?;
    let file = read_gauge(&config, &ReadOptions::default())?;
    let gauge = file.field;
    let layout = SpinorLayout::wilson(*gauge.lattice(), SiteSubset::Full);
    let eta = ColourSpinorField::<f64>::gaussian(layout, 1);
    let base = |kappa| SapGcrSetup {
        kappa,
        csw: CSW,
        boundary: TimeBoundary::Antiperiodic,
        sap: None,
        nkv: 16,
        outer: Precision::F64,
        inner: Precision::F64,
        options: SolverOptions {
            max_iterations: 3000,
            ..SolverOptions::with_tolerance(TOLERANCE)
        },
    };
    println!(
        "{} ({:?}): Wilson-clover c_sw = {CSW}, antiperiodic time, GCR(16), tolerance {TOLERANCE:.0e}",
        config.display(),
        gauge.lattice().dims()
    );
    let mut adaptive = AdaptiveSap::default();
    if let Some(list) = args.get(6) {
        let v: Vec<f64> = list
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{ADAPTIVE_USAGE} {list:?}: {e}"))?;
        if !(3..=4).contains(&v.len()) {
            return Err(format!("{ADAPTIVE_USAGE} {list:?}: three or four numbers").into());
        }
        adaptive = AdaptiveSap {
            min_steps: v[0] as usize,
            stall_fraction: v[1],
            cycle_fraction: v[2],
            block_tolerance: v.get(3).copied().unwrap_or(adaptive.block_tolerance),
            ..adaptive
        };
    }
    if what == "grid" || what == "all" || what == "adaptive" {
        let (ncys, nmrs): (&[usize], &[usize]) = if what == "adaptive" {
            (&[], &[])
        } else {
            (&[1, 2, 4, 8], &[2, 4, 8])
        };
        println!(
            "adaptive: k = {}, MR fraction {}, cycle fraction {}, MR tolerance {}",
            adaptive.min_steps,
            adaptive.stall_fraction,
            adaptive.cycle_fraction,
            adaptive.block_tolerance
        );
        let mut settings = grid_settings(&[[4; 4], [2; 4]], ncys, nmrs, (8, 8), adaptive);
        settings.extend(grid_settings(&[[4; 4], [2; 4]], &[], &[], (4, 4), adaptive));
        for kappa in kappas {
            println!("\n## κ = {kappa} (m = {:.5})\n", 0.5 / kappa - 4.0);
            let rows = run_grid(&gauge, &base(kappa), &settings, &eta, |row| {
                let r = &row.outcome.gcr.result;
                eprintln!(
                    "  {:<50} {:>5} its {:>9.0} work {:>7.2} s {}",
                    row.label, r.iterations, row.outcome.work, row.outcome.seconds, r.convergence
                );
            })?;
            let table = grid_table(&rows);
            println!("{table}");
            std::fs::write(out.join(format!("grid_kappa_{kappa}.md")), &table)?;
        }
    }
    if what == "precision" || what == "all" {
        let kappa = kappas[0];
        let sap = SapParams {
            block: [4; 4],
            ncy: 8,
            nmr: 8,
            adaptive: Some(AdaptiveSap::default()),
            ..SapParams::default()
        };
        for (which, name) in [
            (StudiedVectors::Outer, "outer"),
            (StudiedVectors::Inner, "inner"),
        ] {
            println!("\n## precision of the {name} vectors, κ = {kappa}, adaptive SAP 4⁴\n");
            let mut setup = SapGcrSetup {
                sap: Some(sap),
                ..base(kappa)
            };
            // A format that cannot converge shows itself within 300 outer iterations.
            setup.options.max_iterations = 300;
            let rows = run_precisions(&gauge, &setup, which, &eta, |f, o: &SapGcrOutcome| {
                let r = &o.gcr.result;
                eprintln!("  {f:<9} {:>5} its {}", r.iterations, r.convergence);
            })?;
            let table = precision_table(&rows);
            println!("{table}");
            std::fs::write(out.join(format!("precision_{name}.md")), &table)?;
            let title = format!("SAP+GCR, Wilson-clover κ = {kappa}: {name} vectors stored in …");
            let plot = out.join(format!("precision_{name}.svg"));
            write_titled_histories_svg(&study_rows(&rows), TOLERANCE, &title, &plot)?;
            println!("plot: {}", plot.display());
        }
    }
    Ok(())
}
