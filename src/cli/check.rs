//! `qdsl check`: every kernel variant on the GPU against the CPU reference, on random
//! fields and on real configurations, then the even-odd operators; a table of relative
//! errors and a non-zero exit on any failure. Without a GPU it prints why and exits
//! non-zero (the CPU path is covered by the test suite, not by this command).

use super::CliError;
use crate::check::{render, run_check, CheckOptions};
use clap::Args;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::device::Gpu;
use std::path::PathBuf;

/// Parses `L0,L1,L2,L3`.
pub fn parse_dims(s: &str) -> Result<[usize; 4], String> {
    let v: Vec<usize> = s
        .split(',')
        .map(|x| x.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("expected four extents L0,L1,L2,L3, found {s:?}: {e}"))?;
    <[usize; 4]>::try_from(v).map_err(|v| {
        format!(
            "expected four extents L0,L1,L2,L3, found {} in {s:?}",
            v.len()
        )
    })
}

/// The default data directory: `$QDSL_DATA_DIR`, else the repository's tests/data.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("QDSL_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data"))
}

/// Arguments of `qdsl check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Lattice of the random-field runs, L0,L1,L2,L3 (L0 even).
    #[arg(long, default_value = "4,4,4,8", value_parser = parse_dims)]
    pub lattice: [usize; 4],
    /// Seed of the random fields.
    #[arg(long, default_value_t = 2024)]
    pub seed: u64,
    /// Only kernels (and operators: wilson_eo, asqtad_eo, clover_eo; the open- and
    /// sf-boundary rows are `wilson_eo open`, `clover_eo open`, `clover_eo sf` on
    /// openqcd/gauge.bc_0.bin) whose name contains this.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Directory with milc/lat.sample.l8, milc/fat.l8, milc/long.l8 and
    /// openqcd/gauge.bc_0.bin (default:
    /// $QDSL_DATA_DIR, else the repository's tests/data).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// Runs the check and prints the table; an error (non-zero exit) without a GPU or on
/// any failed comparison.
pub fn run(args: &CheckArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    if BackendChoice::from_env(choice)? == BackendChoice::Cpu {
        return Err("qdsl check compares GPU kernels with the CPU reference: it needs the CUDA backend, and --backend/QDSL_BACKEND says cpu".into());
    }
    let gpu = Gpu::open(0).map_err(|e| {
        format!("qdsl check needs a GPU ({e}); nothing was compared (the CPU kernels are tested by `cargo test`)")
    })?;
    let opts = CheckOptions {
        dims: args.lattice,
        seed: args.seed,
        filter: args.kernel.clone(),
        data_dir: args.data_dir.clone().unwrap_or_else(default_data_dir),
    };
    let rows = run_check(&gpu, &opts, &mut |row| {
        if row.outcome.is_failure() {
            eprintln!(
                "qdsl check: FAIL {} {} {}",
                row.kernel, row.variant, row.data
            );
        }
    });
    print!("{}", render(&rows));
    let failures = rows.iter().filter(|r| r.outcome.is_failure()).count();
    if rows.is_empty() {
        return Err("no kernel matched; nothing was compared".into());
    }
    if failures > 0 {
        return Err(format!("{failures} comparisons failed (see the table)").into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_parse_and_errors_name_the_input() {
        assert_eq!(parse_dims("4, 4,4,8"), Ok([4, 4, 4, 8]));
        let e = parse_dims("4,4,4").unwrap_err();
        assert!(e.contains("found 3"), "{e}");
        assert!(parse_dims("4,x,4,4").unwrap_err().contains("\"4,x,4,4\""));
    }
}
