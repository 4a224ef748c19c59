//! `--action mobius` of `qdsl solve` and `qdsl correlator`: the Möbius parameters
//! (`--ls`, `--b5`, `--c5`, `--m5`; the quark mass is the commands' `--mass`) and the two
//! front ends over [`crate::app::mobius`] (the iteration on the GPU or the CPU).

use super::gauge_read::{read_config, GaugeReadArgs};
use super::mspcg_args::ReducedLsConfig;
use super::mspcg_reduced::obtain_transfer;
use super::CliError;
use crate::app::history::{write_json_value, write_result_plot};
use crate::app::mobius::{correlators, params_from_flags, MobiusSolver};
use crate::app::mobius_grid::MobiusGrid;
use crate::app::mobius_mspcg::{mspcg_json, solve_mspcg, MspcgConfig};
use crate::app::mspcg_reduced::solve_reduced;
use crate::app::precision::Precision;
use crate::app::solve::SolveBackend;
use clap::Args;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::ColourSpinorField;
use qdsl_core::io::UnitarityCheck;
use qdsl_core::lattice::{Coords, ProcessGrid};
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::operator::mobius::MobiusParams;
use qdsl_runtime::solver::mspcg::Snake;
use qdsl_runtime::solver::SolverOptions;
use std::path::Path;
use std::time::Instant;

/// The Möbius domain-wall parameters (Brower–Neff–Orginos; `--action mobius`).
#[derive(Debug, Args, Clone, Copy, PartialEq)]
pub struct MobiusArgs {
    /// Möbius: the extent Ls of the fifth dimension.
    #[arg(long)]
    pub ls: Option<usize>,
    /// Möbius: b5 (default 1; with --c5 0 Shamir's domain wall).
    #[arg(long, allow_negative_numbers = true)]
    pub b5: Option<f64>,
    /// Möbius: c5 (default 0).
    #[arg(long, allow_negative_numbers = true)]
    pub c5: Option<f64>,
    /// Möbius: the domain-wall height M5 > 0 (QUDA's m5 is −M5).
    #[arg(long, allow_negative_numbers = true)]
    pub m5: Option<f64>,
    /// Möbius: how the iteration operator of a mixed solve applies M5⁻¹: sweep (the
    /// default: two O(Ls) recurrences), dense (the Ls × Ls rows), mma_f16 or mma_bf16
    /// (the rows on the tensor cores, operands scaled per column; real b5, c5, Ls ≤ 16).
    /// With --solver mspcg: the preconditioner's inner operator's (GPU).
    #[arg(long, value_parser = parse_m5inv)]
    pub m5inv: Option<M5invMode>,
}

/// A `--m5inv` word.
pub(super) fn parse_m5inv(word: &str) -> Result<M5invMode, String> {
    M5invMode::from_name(word).ok_or_else(|| {
        let names: Vec<&str> = M5invMode::ALL.iter().map(|m| m.name()).collect();
        format!("expected one of {}, found {word:?}", names.join(", "))
    })
}

impl MobiusArgs {
    /// An error naming the first Möbius flag given to another action.
    pub fn refuse_for(&self, action: impl std::fmt::Display) -> Result<(), String> {
        let given = [
            ("--ls", self.ls.is_some()),
            ("--b5", self.b5.is_some()),
            ("--c5", self.c5.is_some()),
            ("--m5", self.m5.is_some()),
            ("--m5inv", self.m5inv.is_some()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((flag, _)) => Err(format!(
                "{flag} is a parameter of --action mobius, not of --action {action}"
            )),
            None => Ok(()),
        }
    }

    /// The parameters with quark mass `mass`.
    pub fn params(&self, mass: Option<f64>) -> Result<MobiusParams, String> {
        params_from_flags(self.ls, self.b5, self.c5, self.m5, mass)
    }
}

/// What both commands share: the configuration, the parameters, the boundary and the
/// solver's precision and tolerance.
pub struct MobiusJob<'a> {
    /// Where the iteration runs.
    pub backend: SolveBackend,
    /// The gauge file.
    pub config: &'a Path,
    /// Its reading options.
    pub read: &'a GaugeReadArgs,
    /// The parameters.
    pub params: MobiusParams,
    /// The fermions' time boundary.
    pub boundary: TimeBoundary,
    /// f64, or f32 or fixed16 (GPU) mixed with f64.
    pub precision: Precision,
    /// Tolerance and iteration limit.
    pub options: SolverOptions,
    /// `--solver mspcg` (`qdsl solve` only): its blocks, inner iterations, snake terms.
    pub mspcg: Option<MspcgConfig>,
    /// `--solver mspcg --reduced-ls …`: the reduced-Ls preconditioner's T and μ.
    pub reduced: Option<ReducedLsConfig>,
    /// Where to write the history as JSON (`qdsl solve --solver mspcg`).
    pub json: Option<&'a Path>,
    /// Where to plot it.
    pub plot: Option<&'a Path>,
    /// `--grid`: the iteration decomposed over ranks ([`crate::app::mobius_grid`]).
    pub grid: Option<ProcessGrid>,
    /// `--m5inv`: how the mixed solve's iteration operator applies M5⁻¹ (with
    /// `--solver mspcg`: the inner operator's, held by the MSPCG config).
    pub m5inv: Option<M5invMode>,
}

impl MobiusJob<'_> {
    /// The backend of `choice` (flag, else `$QDSL_BACKEND`, else auto), one line on
    /// stderr where auto falls back to the CPU.
    pub fn backend(choice: Option<BackendChoice>) -> Result<SolveBackend, CliError> {
        Ok(SolveBackend::select(
            BackendChoice::from_env(choice)?,
            &mut |line| eprintln!("{line}"),
        )?)
    }

    fn solver(&self) -> Result<(MobiusSolver, f64), CliError> {
        let read = read_config(self.config, self.read, UnitarityCheck::ForPrecision, false)
            .map_err(|e| format!("cannot read the gauge configuration: {e}"))?;
        read.print_notes();
        println!("{}", read.file.path.display());
        let p = &self.params;
        println!(
            "  action      mobius (Ls {}, b5 {}, c5 {}, M5 {}, m_f {}), {:?} time",
            p.ls(),
            p.b5()[0].re,
            p.c5()[0].re,
            p.m5(),
            p.mass(),
            self.boundary
        );
        println!(
            "  lattice     {:?} × Ls {}, asymmetric even-odd M̂ (even sites), {}",
            read.file.field.lattice().dims(),
            p.ls(),
            self.backend.describe()
        );
        let solver = MobiusSolver::new(
            &read.file.field,
            self.params.clone(),
            self.boundary,
            self.precision,
            self.options.clone(),
        )?;
        let solver = match self.m5inv {
            None => solver,
            // MSPCG: the inner operator's mode (the config holds it).
            Some(_) if self.mspcg.is_some() => solver,
            Some(mode) if self.grid.is_some() => {
                return Err(format!(
                    "--m5inv {}: the M5⁻¹ mode applies to the CGNR iteration on one GPU or \
                     the CPU, or to MSPCG's inner iterations, not to a decomposed CGNR",
                    mode.name()
                )
                .into())
            }
            Some(mode) => solver.with_m5inv(mode)?,
        };
        let solver = match (self.grid, &self.backend) {
            (Some(grid), backend) => {
                let grid = MobiusGrid::new(grid, &read.file.field, backend, self.precision)?;
                println!("  ranks       {}", grid.describe());
                solver.on_grid(grid)
            }
            (None, SolveBackend::Cuda(ctx)) => solver.on_device(ctx)?,
            (None, SolveBackend::Cpu) => solver,
        };
        Ok((solver, read.seconds))
    }

    /// `qdsl solve --action mobius`: D ψ = η for a Gaussian 5D source (`seed`).
    pub fn solve(&self, seed: u64) -> Result<(), CliError> {
        if let (Some(grid), Some(_)) = (self.grid, &self.reduced) {
            return Err(format!(
                "--grid {grid}: --solver mspcg runs decomposed with the full-Ls preconditioner, \
                 not --reduced-ls"
            )
            .into());
        }
        let (solver, read_seconds) = self.solver()?;
        if let (Some(grid), Some(config)) = (solver.grid(), &self.mspcg) {
            grid.rank_blocks(config.blocks)?;
        }
        let eta = ColourSpinorField::gaussian(solver.layout(), seed);
        if let Some(config) = &self.mspcg {
            return self.solve_mspcg(&solver, &eta, config, read_seconds);
        }
        if self.json.is_some() || self.plot.is_some() {
            return Err("--action mobius writes --json and --plot with --solver mspcg".into());
        }
        let start = Instant::now();
        let sol = solver.solve(&eta)?;
        let r = &sol.result;
        println!(
            "  solver      CGNR on M̂ (CG on M̂†M̂), precision {}",
            self.precision.name()
        );
        println!(
            "  result      {} (tolerance {:.1e})",
            r.convergence, self.options.tolerance
        );
        println!(
            "  iterations  {}, reliable updates {}",
            r.iterations, r.reliable_updates
        );
        println!(
            "  residual    true {:.3e} on M̂, recomputed on the 5D D: ‖η − Dψ‖/‖η‖ = {:.3e}",
            r.true_residual, sol.residual
        );
        println!(
            "  time        file read {read_seconds:.3} s, solve {:.3} s (the iteration {:.3} s: the rest is set-up, source and residual), {:.2} GFLOP/s",
            start.elapsed().as_secs_f64(),
            r.elapsed.as_secs_f64(),
            r.operator_flops as f64 / r.elapsed.as_secs_f64().max(1e-9) / 1e9
        );
        if !r.is_converged() {
            return Err(format!("the solve did not converge: {}", r.convergence).into());
        }
        Ok(())
    }

    /// `qdsl solve --action mobius --solver mspcg`: the summary, the preconditioner's
    /// report (and its breakdown, if any), the JSON history and the plot.
    fn solve_mspcg(
        &self,
        solver: &MobiusSolver,
        eta: &ColourSpinorField<f64>,
        config: &MspcgConfig,
        read_seconds: f64,
    ) -> Result<(), CliError> {
        let (sol, reduced, solve_seconds) = match &self.reduced {
            None => {
                let start = Instant::now();
                let sol = solve_mspcg(solver, eta, config)?;
                (sol, None, start.elapsed().as_secs_f64())
            }
            Some(reduced) => {
                let (setup, info) = obtain_transfer(solver, config, reduced)?;
                let start = Instant::now();
                let sol = solve_reduced(solver, eta, config, setup)?;
                (sol, Some(info), start.elapsed().as_secs_f64())
            }
        };
        let r = &sol.solution.result;
        let snake = match config.snake {
            Snake::Include => "with snake terms",
            Snake::Exclude => "without snake terms (plain Dirichlet)",
        };
        let reduced_note = match &reduced {
            Some(info) => format!(
                ", reduced Ls {} (z = (T†K̂T + μ) r, μ {})",
                info["ls_hat"], info["mu"]
            ),
            None => String::new(),
        };
        println!(
            "  solver      MSPCG on M̂†M̂: blocks {:?}, {} inner {} CG iterations (M5⁻¹ {}), {snake}{reduced_note}; outer {}, FCG({})",
            config.blocks,
            config.inner,
            config.inner_precision.name(),
            config.m5inv.name(),
            self.precision.name(),
            config.directions
        );
        println!(
            "  result      {} (tolerance {:.1e})",
            r.convergence, self.options.tolerance
        );
        println!(
            "  iterations  {} outer ({} preconditioned), reliable updates {}, {} preconditioner applications",
            r.iterations, sol.pcg.preconditioned_iterations, r.reliable_updates, sol.pcg.preconditioner_applications
        );
        if let Some(b) = &sol.pcg.breakdown {
            println!(
                "  breakdown   preconditioner at outer iteration {}: {}; continued with plain CG from that iterate",
                b.iteration, b.fault
            );
        }
        println!(
            "  residual    true {:.3e} on M̂†M̂, recomputed on the 5D D: ‖η − Dψ‖/‖η‖ = {:.3e}",
            r.true_residual, sol.solution.residual
        );
        if let Some(bytes) = sol.face_bytes_per_iteration {
            println!(
                "  exchanged   {:.3} MiB per rank per outer iteration (the faces of M̂†M̂'s four hops; the preconditioner sends none)",
                bytes as f64 / (1 << 20) as f64
            );
        }
        println!(
            "  time        file read {read_seconds:.3} s, solve {solve_seconds:.3} s (the iteration {:.3} s: the rest is set-up, source and residual)",
            r.elapsed.as_secs_f64()
        );
        if let Some(path) = self.json {
            let mut value = mspcg_json(&sol, config, self.precision.name(), self.options.tolerance);
            value["reduced_ls"] = reduced.clone().unwrap_or(serde_json::Value::Null);
            write_json_value(&value, path)?;
            println!("  history     {}", path.display());
        }
        if let Some(path) = self.plot {
            let title = format!(
                "mobius MSPCG {:?} inner {}, {}",
                config.blocks, config.inner, r.convergence
            );
            write_result_plot(r, self.options.tolerance, &title, path)?;
            println!("  plot        {}", path.display());
        }
        if !r.is_converged() {
            return Err(format!("the solve did not converge: {}", r.convergence).into());
        }
        Ok(())
    }

    /// `qdsl correlator --action mobius`: the point-source pion and midpoint correlators
    /// and m_res.
    pub fn correlator(&self, origin: Coords) -> Result<(), CliError> {
        let (solver, _) = self.solver()?;
        let start = Instant::now();
        let c = correlators(&solver, origin)?;
        println!(
            "  solves      12 (CGNR, {}), {} iterations, worst ‖η − Dψ‖/‖η‖ {:.3e}, {:.3} s",
            self.precision.name(),
            c.iterations,
            c.worst_residual,
            start.elapsed().as_secs_f64()
        );
        println!("  source      point at {:?}", c.origin);
        println!("     t   C_pi(t)              C_mid(t)             m_res(t)");
        for t in 0..c.pion.len() {
            println!(
                "  {t:4}   {:<20.12e} {:<20.12e} {:.6e}",
                c.pion[t], c.midpoint[t], c.m_res_t[t]
            );
        }
        println!(
            "  m_res       {:.6e} (mean of m_res(t) over t ≠ 0)",
            c.m_res
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;
    use clap::Parser;

    fn mobius_args(command: &str, args: &[&str]) -> MobiusArgs {
        let argv = ["qdsl", command, "lat"]
            .into_iter()
            .chain(args.iter().copied());
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Solve(a) => a.mobius,
            Command::Correlator(a) => a.mobius,
            _ => panic!("not solve or correlator"),
        }
    }

    /// The command line parses in both commands into the Möbius parameters.
    #[test]
    fn mobius_flags_parse_in_solve_and_correlator() {
        let flags = [
            "--action", "mobius", "--ls", "12", "--b5", "1.5", "--c5", "0.5", "--m5", "1.8",
            "--mass", "0.01",
        ];
        for command in ["solve", "correlator"] {
            let m = mobius_args(command, &flags);
            let p = m.params(Some(0.01)).unwrap();
            assert_eq!((p.ls(), p.b5()[11].re, p.c5()[0].re), (12, 1.5, 0.5));
            assert_eq!((p.m5(), p.mass()), (1.8, 0.01));
        }
    }

    /// Missing Möbius flags are named; Möbius flags with another action are refused.
    #[test]
    fn missing_and_misplaced_flags_are_errors() {
        let m = mobius_args("solve", &["--action", "mobius", "--ls", "8"]);
        assert!(m.params(Some(0.1)).unwrap_err().contains("--m5"));
        let m = mobius_args("solve", &["--action", "mobius", "--m5", "1.8"]);
        assert!(m.params(Some(0.1)).unwrap_err().contains("--ls"));
        let m = mobius_args("solve", &["--action", "mobius", "--ls", "8", "--m5", "1.8"]);
        assert!(m.params(None).unwrap_err().contains("--mass"));
        let m = mobius_args("solve", &["--ls", "8", "--kappa", "0.12"]);
        assert!(m.refuse_for("wilson").unwrap_err().contains("--ls"));
        let m = mobius_args("correlator", &["--ls", "1", "--m5", "1.8", "--mass", "0.1"]);
        assert!(m
            .params(Some(0.1))
            .unwrap_err()
            .contains("Ls must be at least 2"));
    }

    fn sample_l4() -> String {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/milc/lat.sample.l4444")
            .display()
            .to_string()
    }

    /// `qdsl solve --action mobius` and `qdsl correlator --action mobius` run end to end
    /// on MILC's 4⁴ sample (the solve in f64–f32; each fails if a solve does not
    /// converge).
    #[test]
    fn solve_and_correlator_commands_run_on_a_real_configuration() {
        let config = sample_l4();
        let flags = |ls: &'static str| {
            vec![
                "--action", "mobius", "--ls", ls, "--b5", "1.5", "--c5", "0.5", "--m5", "1.8",
                "--mass", "0.1", "--tol", "1e-8",
            ]
        };
        let argv: Vec<&str> = ["qdsl", "solve", &config]
            .into_iter()
            .chain(flags("8"))
            .chain(["--precision", "f32"])
            .collect();
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Solve(a) => {
                super::super::solve::run(&a, Some(BackendChoice::Cpu)).expect("solve runs")
            }
            _ => unreachable!(),
        }
        let argv: Vec<&str> = ["qdsl", "correlator", &config]
            .into_iter()
            .chain(flags("4"))
            .collect();
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Correlator(a) => super::super::correlator::run(&a, Some(BackendChoice::Cpu))
                .expect("correlator runs"),
            _ => unreachable!(),
        }
        // A Wilson solve refuses a Möbius flag before reading anything.
        let argv = ["qdsl", "solve", &config, "--kappa", "0.12", "--m5", "1.8"];
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Solve(a) => {
                let err = super::super::solve::run(&a, None).unwrap_err().to_string();
                assert!(
                    err.contains("--m5 is a parameter of --action mobius"),
                    "{err}"
                );
            }
            _ => unreachable!(),
        }
    }

    /// `--m5inv` parses every mode and names the choices for a bad word; a tensor-core
    /// f64–f32 solve runs end to end on the CPU (the emulated roundings) and converges;
    /// the mode is refused in f64 and with another action; with --solver mspcg it is the
    /// inner operator's, which on the CPU is swept (refused, naming the GPU), as are
    /// inner vectors other than f32 (`--inner-precision`, a flag of --solver mspcg only).
    #[test]
    fn the_m5inv_flag_chooses_the_iteration_operators_m5_inverse() {
        for mode in M5invMode::ALL {
            let m = mobius_args("solve", &["--action", "mobius", "--m5inv", mode.name()]);
            assert_eq!(m.m5inv, Some(mode));
        }
        let argv = ["qdsl", "solve", "lat", "--m5inv", "tensor"];
        let err = Cli::try_parse_from(argv).unwrap_err().to_string();
        assert!(err.contains("sweep, dense, mma_f16, mma_bf16"), "{err}");
        let m = mobius_args("solve", &["--kappa", "0.12", "--m5inv", "dense"]);
        assert!(m.refuse_for("wilson").unwrap_err().contains("--m5inv"));
        let config = sample_l4();
        let run = |extra: &[&str]| {
            let argv: Vec<&str> = [
                "qdsl", "solve", &config, "--action", "mobius", "--ls", "8", "--b5", "1.5", "--c5",
                "0.5", "--m5", "1.8", "--mass", "0.1", "--tol", "1e-10",
            ]
            .iter()
            .chain(extra)
            .copied()
            .collect();
            match Cli::try_parse_from(argv).expect("parses").command {
                Command::Solve(a) => super::super::solve::run(&a, Some(BackendChoice::Cpu)),
                _ => unreachable!(),
            }
        };
        run(&["--precision", "f32", "--m5inv", "mma_bf16"]).expect("the solve converges");
        let err = run(&["--precision", "f64", "--m5inv", "mma_f16"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not f64"), "{err}");
        let err = run(&[
            "--precision",
            "f32",
            "--m5inv",
            "mma_f16",
            "--solver",
            "mspcg",
            "--blocks",
            "1,1,1,2",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("the others run on the GPU"), "{err}");
        let mspcg = ["--solver", "mspcg", "--blocks", "1,1,1,2"];
        let err = run(&[&mspcg[..], &["--inner-precision", "fixed16"]].concat())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--inner-precision fixed16 --m5inv sweep: on the CPU"),
            "{err}"
        );
        let err = run(&["--inner-precision", "fixed16"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--inner-precision is a flag of --solver mspcg"),
            "{err}"
        );
    }

    /// `qdsl solve --action mobius --solver mspcg` runs end to end on MILC's 4⁴ sample
    /// (blocks 1,1,1,2, 4 inner iterations, with and without snake terms), converges
    /// and writes its JSON history and plot, also on `--grid 1,1,1,2`; MSPCG flags
    /// without `--solver mspcg`, `--solver mspcg` without `--blocks`, blocks that are not
    /// whole per rank and `--reduced-ls` on a grid are refused.
    #[test]
    fn mspcg_solve_runs_and_writes_its_history() {
        let config = sample_l4();
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("h.json");
        let plot = dir.path().join("h.svg");
        let (json_s, plot_s) = (json.display().to_string(), plot.display().to_string());
        let base = [
            "qdsl", "solve", &config, "--action", "mobius", "--ls", "4", "--b5", "1.5", "--c5",
            "0.5", "--m5", "1.8", "--mass", "0.1", "--tol", "1e-8",
        ];
        let run = |extra: &[&str]| {
            let argv: Vec<&str> = base.iter().chain(extra).copied().collect();
            match Cli::try_parse_from(argv).expect("parses").command {
                Command::Solve(a) => super::super::solve::run(&a, Some(BackendChoice::Cpu)),
                _ => unreachable!(),
            }
        };
        for snake in [None, Some("--no-snake")] {
            let mut extra = vec![
                "--solver", "mspcg", "--blocks", "1,1,1,2", "--inner", "4", "--json", &json_s,
                "--plot", &plot_s,
            ];
            extra.extend(snake);
            run(&extra).expect("the MSPCG solve converges");
            let value: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            assert_eq!(value["solver"], "mspcg");
            assert_eq!(value["converged"], true);
            assert_eq!(value["snake_terms"], snake.is_none());
            assert!(value["true_residual"].as_f64().unwrap() <= 1e-8);
            assert!(value["recomputed_residual_5d"].as_f64().unwrap() < 1e-6);
            assert!(value["history"].as_array().unwrap().len() > 2);
            assert!(std::fs::metadata(&plot).unwrap().len() > 0);
        }
        let err = run(&["--blocks", "1,1,1,2"]).unwrap_err().to_string();
        assert!(
            err.contains("--blocks is a flag of --solver mspcg"),
            "{err}"
        );
        let err = run(&["--solver", "mspcg"]).unwrap_err().to_string();
        assert!(err.contains("needs --blocks"), "{err}");
        let err = run(&["--solver", "mspcg", "--blocks", "3,1,1,1"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("direction x"), "{err}");
        // Decomposed: the same solve on two CPU ranks, each with its block.
        let grid = [
            "--solver", "mspcg", "--blocks", "1,1,1,2", "--inner", "4", "--json", &json_s,
            "--grid", "1,1,1,2",
        ];
        run(&grid).expect("the decomposed MSPCG solve converges");
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(value["converged"], true);
        assert!(value["true_residual"].as_f64().unwrap() <= 1e-8);
        let err = run(&[
            "--solver", "mspcg", "--blocks", "1,1,1,1", "--grid", "1,1,1,2",
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("whole blocks"), "{err}");
        let err = run(&[
            &grid[..8],
            &[
                "--reduced-ls",
                "2",
                "--train-transfer",
                "t.json",
                "--grid",
                "1,1,1,2",
            ],
        ]
        .concat())
        .unwrap_err()
        .to_string();
        assert!(err.contains("not --reduced-ls"), "{err}");
    }
}
