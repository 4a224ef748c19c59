//! `qdsl correlator`: read a gauge configuration, compute the point-source propagator
//! (every spin and colour) and print the pion correlator C(t) with its effective mass.

use super::action_args::ActionArgs;
use super::fermion_file_args::PropagatorOutputArgs;
use super::gauge_read::{read_config, GaugeReadArgs};
use super::grid_args::GridArgs;
use super::mobius::{MobiusArgs, MobiusJob};
use super::CliError;
use crate::app::correlator::{measure, parse_normalisation, CorrelatorConfig, Normalisation};
use crate::app::precision::Precision;
use crate::app::propagator::SolveSettings;
use crate::app::solve::Action;
use clap::Args;
use qdsl_core::io::UnitarityCheck;
use qdsl_core::lattice::Coords;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::solver::{SolverKind, SolverOptions};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CorrelatorArgs {
    /// The gauge configuration (thin links; any supported format).
    config: PathBuf,
    /// The action, its parameters and the time boundary. With --boundary open or sf the
    /// propagator vanishes on the boundary slices and the source must lie between them;
    /// C(t) is then meaningful only where x0 and x0 + t are far from the boundaries.
    #[command(flatten)]
    physics: ActionArgs,
    /// Source position x,y,z,t (open and sf boundaries: 0 < t, and t < L_t − 1 for open).
    #[arg(long, default_value = "0,0,0,0", value_delimiter = ',')]
    source: Vec<usize>,
    /// Solver of the even-odd systems (default: cgnr for the Wilson-like actions, cg for staggered).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Iteration precision: f64 (pure), or f32, tf32, bf16, f16, fixed16, packed20,
    /// packed30 (mixed with f64 reliable updates; all but f32 emulated on the CPU).
    #[arg(long, default_value = "f64")]
    precision: Precision,
    /// Target relative residual of each solve.
    #[arg(long, default_value_t = 1e-10)]
    tol: f64,
    /// Iteration limit of each solve.
    #[arg(long, default_value_t = 10_000)]
    max_iter: usize,
    #[command(flatten)]
    pub(super) mobius: MobiusArgs,
    /// `--action mobius`: the 12 solves' iterations decomposed over a process grid (see
    /// `qdsl solve --grid`).
    #[command(flatten)]
    grid: GridArgs,
    #[command(flatten)]
    propagator_output: PropagatorOutputArgs,
    /// Normalisation of C(t): none (C(t) = Σ_x Σ_ab |G_ab(x, x0)|², the bare sum over the
    /// time slice, spins and colours) or milc (MILC's ks_spectrum print-out of a
    /// point-source pion with its test inputs' `correlator … 1 * 1/(vol3)^2 pion5` line:
    /// the sum divided by (Lx Ly Lz)², 4096 on 4³×8). The table and the JSON state it.
    #[arg(long, default_value = "none", value_parser = parse_normalisation)]
    normalisation: Normalisation,
    /// Write the correlator as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    read: GaugeReadArgs,
}

impl CorrelatorArgs {
    /// The source position from --source: exactly 4 coordinates.
    fn origin(&self) -> Result<Coords, String> {
        match self.source.as_slice() {
            &[x, y, z, t] => Ok([x, y, z, t]),
            other => Err(format!(
                "--source needs 4 coordinates x,y,z,t, found {}",
                other.len()
            )),
        }
    }
}

/// Runs the measurement and prints the table; a solve that does not converge is an error.
/// `--action mobius` iterates on the backend of `choice` (the other actions on the CPU).
pub fn run(args: &CorrelatorArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    if args.physics.action == Action::Mobius {
        return MobiusJob {
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
            mspcg: None,
            reduced: None,
            json: None,
            plot: None,
            grid: args.grid.grid,
            m5inv: args.mobius.m5inv,
        }
        .correlator(args.origin()?);
    }
    args.mobius.refuse_for(args.physics.action)?;
    if let Some(grid) = args.grid.grid {
        return Err(format!(
            "--grid {grid}: qdsl correlator runs decomposed for --action mobius only, not {}",
            args.physics.action
        )
        .into());
    }
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
    let origin = args.origin()?;
    let physics = &args.physics;
    let boundary = physics.fermion_boundary()?;
    let solver = args.solver.unwrap_or(if physics.action.is_wilson_like() {
        SolverKind::Cgnr
    } else {
        SolverKind::Cg
    });
    let config = CorrelatorConfig {
        action: physics.action,
        kappa: physics.kappa,
        mass: physics.mass,
        u0: physics.u0,
        epsilon_naik: physics.epsilon_naik,
        clover_trace: physics.clover_trace,
        csw: physics.csw,
        mu: physics.mu,
        boundary,
        origin,
        settings: SolveSettings {
            solver,
            precision: args.precision,
            options: SolverOptions {
                max_iterations: args.max_iter,
                polak_ribiere: args.precision.is_mixed(),
                ..SolverOptions::with_tolerance(args.tol)
            },
        },
        normalisation: args.normalisation,
    };
    println!("{}", file.path.display());
    let report = measure(&file.field, &config)?;
    println!("  action      {} ({})", report.action, report.parameters);
    println!(
        "  lattice     {}, point source at {:?}",
        report.lattice, report.origin
    );
    println!(
        "  solves      {} ({}, iteration in {}), {} iterations, worst true residual {:.3e}",
        report.solves, solver, args.precision, report.iterations, report.worst_residual,
    );
    println!(
        "  time        set-up {:.3} s (file read {:.3} s, links and operator {:.3} s), \
         solves {:.3} s",
        read_seconds + report.setup.as_secs_f64(),
        read_seconds,
        report.setup.as_secs_f64(),
        report.elapsed.as_secs_f64()
    );
    println!(
        "  normalised  {} (--normalisation {}, divisor {})",
        report.normalisation.definition(),
        report.normalisation.name(),
        report.normalisation.divisor(&report.lattice)
    );
    print!("{}", report.table());
    if let Some(path) = &args.json {
        report.write_json(path)?;
        println!("  json        {}", path.display());
    }
    let info = format!(
        "qdsl correlator: point-source propagator S(x, x0), x0 = {:?}, {} action ({})",
        report.origin, report.action, report.parameters
    );
    args.propagator_output.write(&report.propagator, info)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use super::*;
    use crate::app::solve::{Action, FermionBoundary};
    use clap::Parser;
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::gauge::{OpenBoundary, SfBoundaryFields};

    fn parse(args: &[&str]) -> Result<CorrelatorArgs, String> {
        let argv = ["qdsl", "correlator", "lat"].iter().chain(args);
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Correlator(a) => Ok(*a),
            _ => Err("not the correlator command".into()),
        }
    }

    #[test]
    fn flags_parse_with_defaults() {
        let a = parse(&["--kappa", "0.12"]).unwrap();
        assert_eq!(a.physics.action, Action::Wilson);
        assert_eq!(
            a.physics.fermion_boundary(),
            Ok(TimeBoundary::Antiperiodic.into())
        );
        assert_eq!(a.source, vec![0, 0, 0, 0]);
        assert_eq!(a.precision, Precision::F64);
        assert_eq!(a.solver, None);
        let a = parse(&[
            "--action",
            "asqtad",
            "--mass",
            "0.05",
            "--boundary",
            "periodic",
            "--source",
            "1,2,3,4",
            "--precision",
            "tf32",
        ])
        .unwrap();
        assert_eq!(a.physics.action, Action::Asqtad);
        assert_eq!(
            a.physics.fermion_boundary(),
            Ok(TimeBoundary::Periodic.into())
        );
        assert_eq!(a.origin(), Ok([1, 2, 3, 4]));
        assert_eq!(a.precision, Precision::Tf32);
        let a = parse(&[
            "--action",
            "hisq",
            "--mass",
            "0.05",
            "--epsilon-naik",
            "-0.1",
        ])
        .unwrap();
        assert_eq!(
            (a.physics.action, a.physics.epsilon_naik),
            (Action::Hisq, Some(-0.1))
        );
        let a = parse(&[
            "--action",
            "clover",
            "--kappa",
            "0.12",
            "--csw",
            "1.2",
            "--boundary",
            "sf",
            "--cf",
            "1.1",
            "--cf-prime",
            "0.9",
        ])
        .unwrap();
        assert_eq!(
            a.physics.fermion_boundary(),
            Ok(FermionBoundary::Open(OpenBoundary::sf(1.1, 0.9)))
        );
        let a = parse(&[
            "--boundary",
            "sf",
            "--sf-phi",
            "0.5,-1",
            "--sf-phi-prime",
            "1,0.25",
        ])
        .unwrap();
        let fields = SfBoundaryFields::new([0.5, -1.0], [1.0, 0.25]);
        assert_eq!(
            a.physics.fermion_boundary(),
            Ok(FermionBoundary::Open(
                OpenBoundary::sf(1.0, 1.0).with_sf_fields(fields)
            ))
        );
    }

    /// `--grid` decomposes the Möbius correlator's solves; another action refuses it
    /// naming the grid, before reading the configuration.
    #[test]
    fn grid_is_for_the_mobius_correlator_only() {
        let mobius = parse(&["--action", "mobius", "--grid", "1,1,1,2"]).unwrap();
        assert_eq!(mobius.grid.grid.map(|g| g.size()), Some(2));
        let wilson = parse(&["--kappa", "0.12", "--grid", "1,1,1,2"]).unwrap();
        let e = run(&wilson, Some(BackendChoice::Cpu))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--grid 1,1,1,2") && e.contains("mobius only"),
            "{e}"
        );
    }

    /// The correlator refuses flags it cannot honour, naming them.
    #[test]
    fn bad_flags_are_refused_with_the_expected_values() {
        let bad = parse(&["--boundary", "dirichlet"]).unwrap();
        assert!(bad
            .physics
            .fermion_boundary()
            .unwrap_err()
            .contains("periodic, antiperiodic, open or sf"));
        let refused = |args: &[&str]| parse(args).unwrap().physics.fermion_boundary().unwrap_err();
        assert!(refused(&[
            "--boundary",
            "sf",
            "--sf-phi",
            "1,2,3",
            "--sf-phi-prime",
            "0,0"
        ])
        .contains("--sf-phi needs two angles"));
        assert!(refused(&["--boundary", "sf", "--sf-phi", "1,2"]).contains("go together"));
        assert!(refused(&[
            "--boundary",
            "open",
            "--sf-phi",
            "1,2",
            "--sf-phi-prime",
            "0,0"
        ])
        .contains("--boundary sf only"));
        let cf = parse(&["--cf", "1.2"]).unwrap();
        assert!(cf.physics.fermion_boundary().unwrap_err().contains("--cf"));
        assert!(parse(&["--precision", "f8"])
            .unwrap_err()
            .contains("packed30"));
        let three = parse(&["--source", "1,2,3"]).unwrap().origin();
        assert!(three
            .unwrap_err()
            .contains("4 coordinates x,y,z,t, found 3"));
    }
}
