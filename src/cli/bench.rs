//! `qdsl bench`: the copy roofline, then each kernel and operator at each size; a table
//! on stdout and a JSON file; `--compare-quda` adds the ratios to QUDA's H100 numbers.

use super::CliError;
use crate::bench::cpu::{cpu_json, render_cpu, run_cpu_bench};
use crate::bench::grid_operator::GridOperator;
use crate::bench::{default_cases, render, run_bench, to_json, BenchOptions};
use clap::Args;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::device::Gpu;
use qdsl_runtime::operator::device::codegen_hash;
use qdsl_runtime::tune::{default_path, Tuner};
use std::path::PathBuf;

/// Arguments of `qdsl bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Lattice extents L of the L⁴ lattices, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "24,32")]
    pub sizes: Vec<usize>,
    /// Only cases whose label (e.g. "wilson_hop f32 recon12") contains this.
    #[arg(long)]
    pub case: Option<String>,
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    /// Timed launches; the median is reported.
    #[arg(long, default_value_t = 200)]
    pub reps: usize,
    /// MiB copied by the bandwidth measurement.
    #[arg(long, default_value_t = 1024)]
    pub copy_mib: usize,
    /// The JSON output file.
    #[arg(long, default_value = "bench.json")]
    pub json: PathBuf,
    /// Print QUDA's H100 time and the ratio QUDA/qdsl (> 1: qdsl faster).
    #[arg(long)]
    pub compare_quda: bool,
    /// Instead of the kernel table: strong scaling of the distributed device hops over
    /// this process grid (rank r on GPU r; QDSL_GRID_TRANSPORT=host: every rank on GPU
    /// 0) on every L⁴ of --sizes, or every --lattice where given (global; local with
    /// --weak): interior, pack, exchange and exterior times, overlap on and off, GFLOP/s
    /// per GPU and efficiency.
    /// Repeatable: every grid in turn (`--grid 1,1,1,2 --grid 1,1,1,4 --grid 1,1,2,2`:
    /// 1 → 2 → 4 GPUs in one call).
    #[arg(long, value_parser = |t: &str| qdsl_core::lattice::ProcessGrid::parse(t).map_err(|e| e.to_string()))]
    pub grid: Vec<qdsl_core::lattice::ProcessGrid>,
    /// With --grid: lattices X,Y,Z,T (repeatable, e.g. 48,48,48,96), instead of --sizes.
    #[arg(long, requires = "grid", value_parser = parse_dims)]
    pub lattice: Vec<[usize; 4]>,
    /// With --grid: weak scaling (each lattice per rank) instead of strong.
    #[arg(long, requires = "grid", conflicts_with = "strong_and_weak")]
    pub weak: bool,
    /// With --grid: strong scaling, then weak scaling, in one run.
    #[arg(long, requires = "grid")]
    pub strong_and_weak: bool,
    /// With --grid: the transports timed in turn (peer, nccl, host); default the one
    /// QDSL_GRID_TRANSPORT names, or the default choice.
    #[arg(long, requires = "grid", value_delimiter = ',')]
    pub transports: Vec<String>,
    /// With --grid: instead of the hops, decomposed asqtad smearing against one GPU, f32
    /// and f64, both ways: the extended volume (the thin links exchanged once with a halo
    /// of 2, then the staged kernels on each rank's extended lattice) and the standard
    /// way (each rank's own sites, the staple fields exchanged between the passes); rank
    /// r on GPU r mod the GPU count.
    #[arg(long, requires = "grid")]
    pub smear: bool,
    /// With --grid: instead of the hops, the whole Möbius M̂ (Ls 12, f32, the operator a
    /// domain-wall solve iterates with) distributed, against one GPU's fused M̂.
    #[arg(long, requires = "grid", conflicts_with = "smear")]
    pub mobius: bool,
    /// With --grid: instead of the hops, the whole Wilson-clover M̂ (f32) distributed,
    /// against one GPU's.
    #[arg(long, requires = "grid", conflicts_with_all = ["smear", "mobius"])]
    pub clover: bool,
}

/// Runs the bench on the GPU, or with `--backend cpu` the CPU cases
/// ([`crate::bench::cpu`]: the generated Rust of the hops, at most 50 timed runs each).
/// `auto` without a GPU is an error: the GPU table is the bench's purpose.
pub fn run(args: &BenchArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    if BackendChoice::from_env(choice)? == BackendChoice::Cpu {
        return run_cpu(args);
    }
    if !args.grid.is_empty() && args.smear {
        return run_grid_smear(args, &args.grid);
    }
    if !args.grid.is_empty() && (args.mobius || args.clover) {
        let operator = match args.mobius {
            true => GridOperator::Mobius,
            false => GridOperator::Clover,
        };
        return run_grid_operator(args, &args.grid, operator);
    }
    if !args.grid.is_empty() {
        return run_scaling(args, &args.grid);
    }
    let gpu = Gpu::open(0).map_err(|e| {
        format!("qdsl bench needs a GPU ({e}); `--backend cpu` times the CPU backend")
    })?;
    // Benchmarks search compile knobs too unless QDSL_TUNE says otherwise.
    let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()))
        .with_default_policy(qdsl_runtime::tune::TunePolicy::Full);
    let cases = default_cases()
        .into_iter()
        .filter(|c| args.case.as_deref().is_none_or(|f| c.label().contains(f)))
        .collect();
    let opts = BenchOptions {
        extents: args.sizes.clone(),
        cases,
        warmup: args.warmup,
        reps: args.reps,
        copy_bytes: args.copy_mib << 20,
        seed: 7,
    };
    let report = run_bench(&gpu, &tuner, &opts, &mut |line| {
        eprintln!("qdsl bench: {line}")
    })?;
    print!("{}", render(&report, args.compare_quda));
    let text = serde_json::to_string_pretty(&to_json(&report))?;
    std::fs::write(&args.json, text + "\n")
        .map_err(|e| format!("writing {}: {e}", args.json.display()))?;
    println!("wrote {}", args.json.display());
    Ok(())
}

/// The transports of `--transports`, or the one of [`GRID_TRANSPORT_VAR`]; an error
/// where one of `grids` does not fit the machine with one of them.
///
/// [`GRID_TRANSPORT_VAR`]: crate::app::solve::GRID_TRANSPORT_VAR
fn grid_transports(
    args: &BenchArgs,
    grids: &[qdsl_core::lattice::ProcessGrid],
) -> Result<Vec<crate::app::solve::GridTransport>, CliError> {
    use crate::app::solve::{check_gpu_grid, GridTransport};
    // The bench times named transports: `tuned` is timed as its untuned default, NCCL
    // (`--transports nccl,peer` times both).
    let named = |t: GridTransport| match t {
        GridTransport::Tuned => GridTransport::Nccl,
        t => t,
    };
    let transports: Vec<GridTransport> = match args.transports.as_slice() {
        [] => vec![named(GridTransport::from_env()?)],
        names => names
            .iter()
            .map(|n| GridTransport::parse(n).map(named))
            .collect::<Result<_, _>>()?,
    };
    for &grid in grids {
        for &t in &transports {
            check_gpu_grid(grid, t)?;
        }
    }
    Ok(transports)
}

/// The lattices of `--lattice`, or the L⁴ of `--sizes`.
fn grid_lattices(args: &BenchArgs) -> Vec<[usize; 4]> {
    match args.lattice.as_slice() {
        [] => args.sizes.iter().map(|&l| [l; 4]).collect(),
        given => given.to_vec(),
    }
}

/// Strong (false) and weak (true) scaling as `--weak` and `--strong-and-weak` ask.
fn scaling_kinds(args: &BenchArgs) -> Vec<bool> {
    match (args.weak, args.strong_and_weak) {
        (_, true) => vec![false, true],
        (weak, false) => vec![weak],
    }
}

/// Writes `value` to `--json` and says so.
fn write_json(args: &BenchArgs, value: &serde_json::Value) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(&args.json, text + "\n")
        .map_err(|e| format!("writing {}: {e}", args.json.display()))?;
    println!("wrote {}", args.json.display());
    Ok(())
}

/// The scaling bench over `grid` ([`crate::bench::scaling`]): table on stdout, rows as
/// JSON.
fn run_scaling(
    args: &BenchArgs,
    grids: &[qdsl_core::lattice::ProcessGrid],
) -> Result<(), CliError> {
    use crate::bench::scaling::{render_scaling, scaling_json, ScalingCase, ScalingOptions};
    let opts = ScalingOptions {
        lattices: grid_lattices(args),
        grids: grids.to_vec(),
        weak: scaling_kinds(args),
        transports: grid_transports(args, grids)?,
        warmup: args.warmup,
        reps: args.reps,
        cases: ScalingCase::ALL
            .into_iter()
            .filter(|c| args.case.as_deref().is_none_or(|f| c.label().contains(f)))
            .collect(),
    };
    let rows =
        crate::bench::scaling::run_scaling(&opts, &mut |line| eprintln!("qdsl bench: {line}"))?;
    print!("{}", render_scaling(&rows));
    write_json(args, &scaling_json(&rows))
}

/// A whole distributed operator against one GPU over `grids`
/// ([`crate::bench::grid_operator`]): table on stdout, rows as JSON.
fn run_grid_operator(
    args: &BenchArgs,
    grids: &[qdsl_core::lattice::ProcessGrid],
    operator: GridOperator,
) -> Result<(), CliError> {
    use crate::bench::grid_operator::{
        grid_operator_json, render_grid_operator, run_grid_operator,
    };
    let transports = grid_transports(args, grids)?;
    let rows = run_grid_operator(
        operator,
        &grid_lattices(args),
        grids,
        (&scaling_kinds(args), &transports),
        (args.warmup, args.reps),
        &mut |line| eprintln!("qdsl bench: {line}"),
    )?;
    print!("{}", render_grid_operator(&rows));
    write_json(args, &grid_operator_json(&rows))
}

/// The extended-volume smearing bench over `grids` ([`crate::bench::grid_smear`]):
/// table on stdout, rows as JSON.
fn run_grid_smear(
    args: &BenchArgs,
    grids: &[qdsl_core::lattice::ProcessGrid],
) -> Result<(), CliError> {
    use crate::bench::grid_smear::{grid_smear_json, render_grid_smear, run_grid_smear};
    let rows = run_grid_smear(
        &grid_lattices(args),
        grids,
        (args.warmup, args.reps),
        &mut |line| eprintln!("qdsl bench: {line}"),
    )?;
    print!("{}", render_grid_smear(&rows));
    write_json(args, &grid_smear_json(&rows))
}

/// "X,Y,Z,T" as four extents, or an error naming the text.
fn parse_dims(text: &str) -> Result<[usize; 4], String> {
    let parts: Vec<usize> = text
        .split(',')
        .map(|p| p.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--lattice {text:?}: {e} (expected X,Y,Z,T)"))?;
    <[usize; 4]>::try_from(parts).map_err(|p| {
        format!(
            "--lattice {text:?}: {} extents, expected 4 (X,Y,Z,T)",
            p.len()
        )
    })
}

/// The CPU bench: table on stdout, rows as JSON.
fn run_cpu(args: &BenchArgs) -> Result<(), CliError> {
    let rows = run_cpu_bench(
        &args.sizes,
        args.case.as_deref(),
        args.warmup.min(5),
        args.reps.min(50),
        &mut |line| eprintln!("qdsl bench: {line}"),
    )?;
    print!("{}", render_cpu(&rows));
    let text = serde_json::to_string_pretty(&cpu_json(&rows))?;
    std::fs::write(&args.json, text + "\n")
        .map_err(|e| format!("writing {}: {e}", args.json.display()))?;
    println!("wrote {}", args.json.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_dims;

    /// `--lattice` takes four comma-separated extents and names a bad value.
    #[test]
    fn lattice_dims_are_parsed_and_bad_ones_named() {
        assert_eq!(parse_dims("48, 48,48,96").unwrap(), [48, 48, 48, 96]);
        let e = parse_dims("48,48,96").unwrap_err();
        assert!(e.contains("\"48,48,96\"") && e.contains("3 extents"), "{e}");
        let e = parse_dims("48,x,48,96").unwrap_err();
        assert!(e.contains("X,Y,Z,T"), "{e}");
    }
}
