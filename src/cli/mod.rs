//! The `qdsl` command line: one module per subcommand.

mod action_args;
mod bench;
mod check;
mod correlator;
mod emit;
mod emit_paths;
mod fermion_file_args;
mod gauge_read;
mod generate;
mod generate_reference;
mod grid_args;
mod info;
mod inspect;
mod mobius;
mod mspcg_args;
mod mspcg_reduced;
mod smear;
mod solve;
mod solve_sources;
mod solver_arg;
mod variant_args;

use clap::{Parser, Subcommand};
use qdsl_runtime::backend::BackendChoice;

/// Boxed error returned by subcommands; `main` prints it with its chain of causes.
pub type CliError = Box<dyn std::error::Error + Send + Sync>;

/// qdsl: a kernel DSL for lattice QCD.
#[derive(Debug, Parser)]
#[command(name = "qdsl", version, about)]
pub struct Cli {
    /// Backend: cpu, cuda or auto (default: $QDSL_BACKEND, else auto: the GPU if there is
    /// one, else the CPU).
    #[arg(long, global = true)]
    backend: Option<BackendChoice>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read gauge configurations (MILC, NERSC, ILDG/SciDAC LIME, openQCD), verify their
    /// checksums and recorded observables, and print plaquette, link trace and unitarity;
    /// every file is reported, the exit status is non-zero if any failed.
    Inspect(inspect::InspectArgs),
    /// Print the backend, device, NVRTC version, cache locations and the kernel catalog.
    Info(info::InfoArgs),
    /// Print a kernel variant's IR, CUDA source or PTX.
    Emit(emit::EmitArgs),
    /// Run every kernel variant and the even-odd operators on the GPU against the CPU
    /// reference (random fields and real configurations); non-zero exit on any failure.
    Check(check::CheckArgs),
    /// Measure copy bandwidth, then each kernel and operator (24⁴ and 32⁴, one parity);
    /// a table and a JSON file; --compare-quda adds the ratios to QUDA's H100 numbers.
    Bench(Box<bench::BenchArgs>),
    /// Solve the even-odd Wilson, clover, twisted-mass, staggered, asqtad or HISQ system on a
    /// gauge configuration (on the GPU if there is one): progress, a summary (set-up and
    /// solve apart), the history as JSON and an SVG plot.
    Solve(Box<solve::SolveArgs>),
    /// Point-source propagator and pion correlator C(t) with effective mass (every action
    /// of solve; periodic, antiperiodic, or open/sf boundaries for the Wilson-like ones;
    /// CPU backend): a table and JSON stating the normalisation (--normalisation none:
    /// C(t) = Σ_x Σ_ab |G_ab(x, x0)|²; milc: divided by (Lx Ly Lz)²).
    Correlator(Box<correlator::CorrelatorArgs>),
    /// Build asqtad or HISQ fat and long links (or fat7 links) of a thin-link
    /// configuration, on the GPU if there is one, and write them (SciDAC LIME f32 by
    /// default).
    Smear(smear::SmearArgs),
    /// Generate quenched gauge configurations (heatbath + over-relaxation, or HMC; Wilson,
    /// Symanzik or Iwasaki action) on the GPU if there is one (`--backend cpu|cuda|auto`),
    /// else on the CPU: progress, checkpoints (ILDG LIME f64 and a
    /// state file; --resume continues after a crash), plaquette history as JSON and SVG.
    Generate(generate::GenerateArgs),
    /// The physics reference of generation: quenched Wilson ensembles at β = 5.7, 6.0,
    /// 6.2 (16⁴ by default, on the GPU if there is one) and each average plaquette
    /// against the published value with an autocorrelation-aware error; PASS/FAIL per β,
    /// non-zero exit on any failure.
    GenerateReference(generate_reference::ReferenceArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub fn run(self) -> Result<(), CliError> {
        match self.command {
            Command::Inspect(args) => inspect::run(&args),
            Command::Info(args) => info::run(&args, self.backend),
            Command::Emit(args) => emit::run(&args),
            Command::Check(args) => check::run(&args, self.backend),
            Command::Bench(args) => bench::run(&args, self.backend),
            Command::Smear(args) => smear::run(&args, self.backend),
            Command::Solve(args) => solve::run(&args, self.backend),
            Command::Correlator(args) => correlator::run(&args, self.backend),
            Command::Generate(args) => generate::run(&args, self.backend),
            Command::GenerateReference(args) => generate_reference::run(&args, self.backend),
        }
    }

    /// The arguments of `qdsl generate-reference`, if that is the subcommand.
    #[cfg(test)]
    fn reference_args(&self) -> Option<&generate_reference::ReferenceArgs> {
        match &self.command {
            Command::GenerateReference(a) => Some(a),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_backend_flag_and_variant_flags_parse() {
        let cli = Cli::try_parse_from(["qdsl", "info", "--backend", "cpu"]).unwrap();
        assert_eq!(cli.backend, Some(BackendChoice::Cpu));
        assert!(Cli::try_parse_from(["qdsl", "--backend", "tpu", "info"]).is_err());
        let cli = Cli::try_parse_from([
            "qdsl",
            "emit",
            "wilson_hop",
            "--cuda",
            "--recon",
            "18",
            "--precision",
            "f64",
            "--sites",
            "odd",
            "--dagger",
        ])
        .unwrap();
        let Command::Emit(e) = cli.command else {
            panic!("expected emit");
        };
        assert_eq!(
            e.variant.variant().canonical(),
            "sites=odd dagger=1 xpay=0 spinor=f64 gauge=f64 recon=18 boundary=periodic"
        );
        assert!(
            Cli::try_parse_from(["qdsl", "emit", "wilson_hop"]).is_err(),
            "one of --ir/--cuda/--ptx is required"
        );
        assert!(
            Cli::try_parse_from(["qdsl", "emit", "wilson_hop", "--cuda", "--recon", "13"]).is_err()
        );
        let cli =
            Cli::try_parse_from(["qdsl", "emit", "wilson_hop", "--cuda", "--recon", "8"]).unwrap();
        let Command::Emit(e) = cli.command else {
            panic!("expected emit");
        };
        assert_eq!(
            e.variant.variant().recon,
            qdsl_core::dsl::variant::Recon::R8
        );
    }

    /// `--precision` of a kernel variant: every format of both spinors and links by its
    /// name, stored in both; the spinor-only packed formats are refused.
    #[test]
    fn variant_precision_is_a_storage_format_of_both_fields() {
        use qdsl_core::dsl::variant::StorageFormat;
        let emit = |precision: &str| {
            Cli::try_parse_from([
                "qdsl",
                "emit",
                "wilson_hop",
                "--cuda",
                "--precision",
                precision,
            ])
        };
        for format in StorageFormat::EVERY {
            let Command::Emit(e) = emit(format.name()).unwrap().command else {
                panic!("expected emit");
            };
            let v = e.variant.variant();
            assert_eq!((v.spinor, v.gauge), (format, format));
        }
        for refused in ["packed20", "packed30", "F32", "f8"] {
            let e = emit(refused).unwrap_err().to_string();
            assert!(
                e.contains("possible values: f64, f32, f16, bf16, fixed16, fixed8"),
                "{e}"
            );
        }
    }
}
