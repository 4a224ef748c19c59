//! `qdsl solve --solver sap-gcr`: the full-lattice Wilson or Wilson-clover system
//! M ψ = η solved by GCR(n_kv) right-preconditioned with SAP, static or `--adaptive`
//! ([`crate::app::sap_gcr`]), on the CPU.

use super::SolveArgs;
use crate::app::history::{write_json_value, write_result_plot};
use crate::app::precision::Precision;
use crate::app::sap_gcr::{describe, outcome_json, solve_sap_gcr, SapGcrSetup};
use crate::app::solve::{full_layout, Action};
use crate::cli::gauge_read::read_config;
use crate::cli::CliError;
use clap::Args;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::io::UnitarityCheck;
use qdsl_runtime::solver::sap::{AdaptiveSap, Reduction, SapParams};
use qdsl_runtime::solver::{SolverField, SolverOptions};

/// The flags of `--solver sap-gcr`.
#[derive(Debug, Args)]
pub struct SapGcrArgs {
    /// SAP block extents x,y,z,t (each divides the lattice and leaves 1 or an even
    /// number of blocks per direction).
    #[arg(long, value_delimiter = ',', default_value = "4,4,4,4")]
    block: Vec<usize>,
    /// Schwarz cycles per SAP application (the maximum with --adaptive).
    #[arg(long, default_value_t = 4)]
    ncy: usize,
    /// MR steps per block solve (the maximum with --adaptive).
    #[arg(long, default_value_t = 4)]
    nmr: usize,
    /// GCR basis size (restart length).
    #[arg(long, default_value_t = 16)]
    nkv: usize,
    /// The adaptive SAP of Gruber et al.: ncy and nmr become maxima, cycles stop when one
    /// does not lower the residual (by the factor --cycle-fraction), a block's MR stops by
    /// its criteria (--mr-min-steps, --mr-fraction, the GCR tolerance, --mr-tolerance).
    #[arg(long)]
    adaptive: bool,
    /// Adaptive SAP: the cycles stop after one with ‖ρ_j‖ ≥ FRACTION · ‖ρ_{j−1}‖ (in (0, 1];
    /// 1: only when the norm did not decrease).
    #[arg(long)]
    cycle_fraction: Option<f64>,
    /// Adaptive SAP, MR criterion 4: a block stops once its residual is at most FRACTION
    /// of the one it started from (in [0, 1); 0: off).
    #[arg(long)]
    mr_tolerance: Option<f64>,
    /// Adaptive SAP, MR criterion 1: a block stops when a step leaves more than FRACTION
    /// of its residual (in (0, 1]) …
    #[arg(long)]
    mr_fraction: Option<f64>,
    /// … after at least this many steps (k).
    #[arg(long)]
    mr_min_steps: Option<usize>,
    /// Precision of SAP's block vectors: f64, f32, or an emulated format (tf32, bf16,
    /// f16, fixed16, packed20, packed30, posit8, posit16, posit32) with f64 arithmetic.
    #[arg(long, default_value = "f32")]
    sap_precision: Precision,
    /// Precision of SAP's block reductions: f64 or f32.
    #[arg(long, default_value = "f64", value_parser = parse_reduction)]
    sap_reduction: Reduction,
}

/// "f64" or "f32" (ASCII case ignored).
fn parse_reduction(s: &str) -> Result<Reduction, String> {
    match s.to_ascii_lowercase().as_str() {
        "f64" => Ok(Reduction::F64),
        "f32" => Ok(Reduction::F32),
        _ => Err(format!("{s:?}: expected f64 or f32")),
    }
}

impl SapGcrArgs {
    /// The SAP parameters; an error for a block list that is not 4 numbers.
    fn params(&self, tolerance: f64) -> Result<SapParams, CliError> {
        let block: [usize; 4] = self.block.as_slice().try_into().map_err(|_| {
            format!(
                "--block takes 4 extents x,y,z,t, found {} ({:?})",
                self.block.len(),
                self.block
            )
        })?;
        let reduction = self.sap_reduction;
        let tuned = [
            ("--cycle-fraction", self.cycle_fraction.is_some()),
            ("--mr-fraction", self.mr_fraction.is_some()),
            ("--mr-min-steps", self.mr_min_steps.is_some()),
            ("--mr-tolerance", self.mr_tolerance.is_some()),
        ];
        if !self.adaptive {
            if let Some((flag, _)) = tuned.iter().find(|(_, given)| *given) {
                return Err(format!("{flag} is a parameter of --adaptive SAP").into());
            }
        }
        let d = AdaptiveSap::default();
        Ok(SapParams {
            block,
            ncy: self.ncy,
            nmr: self.nmr,
            adaptive: self.adaptive.then_some(AdaptiveSap {
                outer_tolerance: tolerance,
                cycle_fraction: self.cycle_fraction.unwrap_or(d.cycle_fraction),
                stall_fraction: self.mr_fraction.unwrap_or(d.stall_fraction),
                min_steps: self.mr_min_steps.unwrap_or(d.min_steps),
                block_tolerance: self.mr_tolerance.unwrap_or(d.block_tolerance),
            }),
            reduction,
        })
    }
}

/// Runs `--solver sap-gcr`: Wilson or clover only, wrapping time boundaries, a Gaussian
/// source on every site (`--seed`); summary, JSON and plot; an error if it did not
/// converge.
pub(super) fn run(args: &SolveArgs) -> Result<(), CliError> {
    let physics = &args.physics;
    if !matches!(physics.action, Action::Wilson | Action::Clover) {
        return Err(format!(
            "--solver sap-gcr solves the Wilson and clover actions, not {}",
            physics.action
        )
        .into());
    }
    let kappa = physics
        .kappa
        .ok_or("--solver sap-gcr needs --kappa K (m = 1/(2κ) − 4)")?;
    if !(kappa.is_finite() && kappa > 0.0) {
        return Err(format!("--kappa {kappa}: expected a positive number").into());
    }
    let csw = match physics.action {
        Action::Wilson => 0.0,
        _ => physics.csw.ok_or("--action clover needs --csw C")?,
    };
    let boundary = physics.wrapping_boundary("--solver sap-gcr")?;
    let read = read_config(
        &args.config,
        &args.read,
        UnitarityCheck::ForPrecision,
        false,
    )
    .map_err(|e| format!("cannot read the gauge configuration: {e}"))?;
    read.print_notes();
    let gauge = super::tile_configuration(&read.file.field, args.tile)?;
    let setup = SapGcrSetup {
        kappa,
        csw,
        boundary,
        sap: Some(args.sap_gcr.params(args.tol)?),
        nkv: args.sap_gcr.nkv,
        outer: args.precision,
        inner: args.sap_gcr.sap_precision,
        options: SolverOptions {
            max_iterations: args.max_iter,
            ..SolverOptions::with_tolerance(args.tol)
        },
    };
    let lattice = *gauge.lattice();
    let eta = ColourSpinorField::<f64>::gaussian(full_layout(physics.action, lattice), args.seed);
    let mut psi = eta.zeros_like();
    let outcome = solve_sap_gcr(&gauge, &setup, &eta, &mut psi)?;
    let r = &outcome.gcr.result;
    println!("{}", read.file.path.display());
    println!(
        "  action      {} (κ = {kappa}, m = {:.6}, c_sw = {csw}), full lattice {:?}, M = (m + 4) + clover − H/2",
        physics.action,
        0.5 / kappa - 4.0,
        lattice.dims()
    );
    println!(
        "  solver      {}, GCR vectors {}, SAP vectors {}",
        describe(&setup),
        setup.outer,
        setup.inner
    );
    println!(
        "  result      {} (tolerance {:.1e})",
        r.convergence, args.tol
    );
    println!(
        "  iterations  {} outer, {} restarts, {} reliable updates",
        r.iterations, outcome.gcr.restarts, r.reliable_updates
    );
    println!(
        "  SAP         {} applications, {} cycles, {} MR block steps, work {:.1} M applications in all",
        outcome.sap.applications, outcome.sap.cycles, outcome.sap.mr_block_steps, outcome.work
    );
    println!(
        "  residual    true {:.3e}, recomputed {:.3e}",
        r.true_residual, outcome.recomputed_residual
    );
    println!("  solve       {:.3} s", outcome.seconds);
    if let Some(path) = &args.json {
        write_json_value(&outcome_json(&setup, lattice.dims(), &outcome), path)?;
        println!("  history     {}", path.display());
    }
    if let Some(path) = &args.plot {
        let title = format!("{} {}, {}", physics.action, describe(&setup), r.convergence);
        write_result_plot(r, args.tol, &title, path)?;
        println!("  plot        {}", path.display());
    }
    if !r.is_converged() {
        return Err(format!(
            "the solve did not converge: {} after {} iterations (true residual {:.3e})",
            r.convergence, r.iterations, r.true_residual
        )
        .into());
    }
    Ok(())
}
