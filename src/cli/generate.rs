//! `qdsl generate`: quenched gauge-field generation ([`crate::app::generate`]) with a
//! progress bar, checkpoints (ILDG LIME f64 + state file), a plaquette history (JSON and
//! SVG) and `--resume` after a crash.

use super::check::parse_dims;
use super::CliError;
use crate::app::generate::{
    generate, ActionKind, Algorithm, GenerateParams, RunControl, UpdateRecord,
};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use qdsl_core::gauge::generate::Integrator;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::device::Gpu;
use std::path::PathBuf;
use std::rc::Rc;

/// The molecular-dynamics integrator of `--algorithm hmc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IntegratorArg {
    /// Leapfrog.
    Leapfrog,
    /// Omelyan 2MN.
    Omelyan,
}

/// The start of a new run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StartArg {
    /// Unit links.
    Cold,
    /// Haar-random links.
    Hot,
}

/// Arguments of `qdsl generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The gauge action.
    #[arg(long, value_enum, default_value = "wilson")]
    action: ActionKind,
    /// The coupling β.
    #[arg(long)]
    beta: f64,
    /// The lattice extents L0,L1,L2,L3 (even; multiples of 4 for the heatbath of the
    /// rectangle actions).
    #[arg(long, value_parser = parse_dims)]
    lattice: [usize; 4],
    /// heatbath (+ over-relaxation) or hmc.
    #[arg(long, value_enum, default_value = "heatbath")]
    algorithm: Algorithm,
    /// Updates after thermalisation (heatbath sweeps or HMC trajectories).
    #[arg(long)]
    sweeps: u64,
    /// Over-relaxation sweeps per heatbath sweep.
    #[arg(long, default_value_t = 4)]
    or_per_hb: usize,
    /// HMC: molecular-dynamics steps per trajectory.
    #[arg(long, default_value_t = 10)]
    md_steps: usize,
    /// HMC: the integrator.
    #[arg(long, value_enum, default_value = "omelyan")]
    integrator: IntegratorArg,
    /// HMC: the trajectory length τ.
    #[arg(long, default_value_t = 1.0)]
    tau: f64,
    /// Thermalisation updates (measured, not saved).
    #[arg(long, default_value_t = 0)]
    therm: u64,
    /// A checkpoint every this many updates after thermalisation (0: only at the end).
    #[arg(long, default_value_t = 0)]
    save_every: u64,
    /// The run directory (checkpoints cfg_NNNNNN.lime, state.json, history.json,
    /// history.svg).
    #[arg(long)]
    save: PathBuf,
    /// The seed of all random streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The start of a new run.
    #[arg(long, value_enum, default_value = "cold")]
    start: StartArg,
    /// Continue the run in --save from its last checkpoint (same parameters; --sweeps
    /// may grow).
    #[arg(long)]
    resume: bool,
}

/// The GPU of the run: `--backend cuda` requires one, `auto` (the default) takes one
/// when present and says so when it falls back to the CPU.
pub(super) fn device(choice: Option<BackendChoice>) -> Result<Option<Rc<Gpu>>, CliError> {
    let gpu = match BackendChoice::from_env(choice)? {
        BackendChoice::Cpu => None,
        BackendChoice::Cuda => Some(Gpu::open(0).map_err(|e| format!("--backend cuda: {e}"))?),
        BackendChoice::Auto => match Gpu::open(0) {
            Ok(g) => Some(g),
            Err(e) => {
                eprintln!("qdsl generate: no usable GPU ({e}); generating on the CPU");
                None
            }
        },
    };
    match &gpu {
        Some(_) => println!("qdsl generate: updates on the GPU (f64)"),
        None => println!("qdsl generate: updates on the CPU"),
    }
    Ok(gpu.map(Rc::new))
}

/// Runs `qdsl generate` (on the GPU when `choice` allows and one is present).
pub fn run(args: &GenerateArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    let gpu = device(choice)?;
    let dims = args.lattice;
    let params = GenerateParams {
        action: args.action,
        beta: args.beta,
        dims,
        algorithm: args.algorithm,
        sweeps: args.sweeps,
        or_per_hb: args.or_per_hb,
        md_steps: args.md_steps,
        integrator: match args.integrator {
            IntegratorArg::Leapfrog => Integrator::Leapfrog,
            IntegratorArg::Omelyan => Integrator::Omelyan,
        },
        tau: args.tau,
        therm: args.therm,
        save_every: args.save_every,
        seed: args.seed,
        hot_start: args.start == StartArg::Hot,
    };
    let bar = ProgressBar::new(args.therm + args.sweeps);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} [{elapsed_precise}, eta {eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut accepted = 0u64;
    let mut trajectories = 0u64;
    let mut progress = |n: u64, _total: u64, r: &UpdateRecord| {
        bar.set_position(n + 1);
        let mut msg = format!("P = {:.6}", r.plaquette);
        if let (Some(dh), Some(acc)) = (r.delta_h, r.accepted) {
            trajectories += 1;
            accepted += u64::from(acc);
            msg.push_str(&format!(
                "  dH = {dh:+.3e}  acc {:.0} %",
                100.0 * accepted as f64 / trajectories as f64
            ));
        }
        bar.set_message(msg);
    };
    let report = generate(
        &params,
        &args.save,
        args.resume,
        RunControl {
            progress: &mut progress,
            stop_after: None,
            gpu,
        },
    )?;
    bar.finish();
    if report.resumed_from > 0 {
        println!("resumed after update {}", report.resumed_from);
    }
    let measured = report.measured(args.therm);
    if measured.len() >= 4 {
        let ac = measured.autocorrelation_time();
        println!(
            "plaquette {:.6} ± {:.6} over {} updates after {} of thermalisation (tau_int {:.2}, window {})",
            measured.mean(),
            ac.error,
            measured.len(),
            args.therm,
            ac.tau_int,
            ac.window
        );
    }
    for c in &report.checkpoints {
        println!("wrote {}", c.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use clap::Parser;

    /// The flags parse (defaults: wilson, heatbath, 4 OR sweeps, Omelyan), a lattice of
    /// three extents is refused, and a tiny run writes its files.
    #[test]
    fn generate_flags_parse_and_a_tiny_run_writes_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let save = dir.path().join("run");
        let save = save.to_str().unwrap();
        let args = |extra: &[&str]| {
            let mut a = vec![
                "qdsl", "generate", "--beta", "5.5", "--sweeps", "2", "--save", save,
            ];
            a.extend_from_slice(extra);
            a.into_iter().map(String::from).collect::<Vec<_>>()
        };
        assert!(Cli::try_parse_from(args(&["--lattice", "4,4,4"])).is_err());
        assert!(
            Cli::try_parse_from(args(&["--lattice", "4,4,4,4", "--algorithm", "metropolis"]))
                .is_err()
        );
        let cli = Cli::try_parse_from(args(&[
            "--lattice",
            "4,4,4,4",
            "--therm",
            "1",
            "--seed",
            "3",
        ]))
        .unwrap();
        cli.run().unwrap();
        for f in [
            "cfg_000003.lime",
            "state.json",
            "history.json",
            "history.svg",
        ] {
            assert!(std::path::Path::new(save).join(f).exists(), "{f}");
        }
        // A second start into the same directory is refused; with --resume and more
        // sweeps it continues.
        let again = Cli::try_parse_from(args(&[
            "--lattice",
            "4,4,4,4",
            "--therm",
            "1",
            "--seed",
            "3",
        ]))
        .unwrap();
        assert!(again.run().is_err());
        let mut more = args(&[
            "--lattice",
            "4,4,4,4",
            "--therm",
            "1",
            "--seed",
            "3",
            "--resume",
        ]);
        more[5] = "3".into();
        Cli::try_parse_from(more).unwrap().run().unwrap();
        assert!(std::path::Path::new(save).join("cfg_000004.lime").exists());
    }
}
