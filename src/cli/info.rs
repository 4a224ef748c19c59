//! `qdsl info`: the backend, the device, NVRTC and ptxas, the cache locations, tuning, and
//! the kernels of the catalog.

use super::CliError;
use clap::Args;
use qdsl_core::dsl::Variant;
use qdsl_kernels::catalog::stencils as catalog;
use qdsl_runtime::backend::{self, BackendChoice};
use qdsl_runtime::jit::{self, cache, ptxas};
use qdsl_runtime::tune;

/// Arguments of `qdsl info` (none besides the global `--backend`).
#[derive(Debug, Args)]
pub struct InfoArgs {}

/// Prints the report to stdout (the CPU-fallback notice, if any, goes to stderr).
pub fn run(_args: &InfoArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    let choice = BackendChoice::from_env(choice)?;
    let backend = backend::select(choice)?;
    println!("backend:     {}", backend.describe());
    match (backend.device(), backend.kind()) {
        (Some(d), _) => {
            println!(
                "device:      {} ({}, {:.1} GiB, driver {})",
                d.name,
                d.arch,
                d.total_bytes as f64 / (1u64 << 30) as f64,
                d.driver_version_string()
            );
        }
        (None, _) => println!("device:      no GPU: CPU backend"),
    }
    match jit::Jit::new(&cache::cache_root(), None) {
        Ok(j) => {
            let (a, b) = j.nvrtc_version();
            println!("nvrtc:       {a}.{b}");
        }
        Err(e) => println!("nvrtc:       not available ({e})"),
    }
    match ptxas::find_ptxas() {
        Some(p) => println!("ptxas:       {}", p.display()),
        None => println!("ptxas:       not found"),
    }
    print!("{}", cache_report());
    println!("kernels:");
    for e in catalog() {
        let info = (e.info)(&Variant::default());
        match info {
            Ok(i) => println!(
                "  {:<24} {:>5} flops/site  knobs: {}",
                e.name,
                i.flops_per_site,
                i.knobs
                    .iter()
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(err) => println!("  {:<24} (invalid spec: {err})", e.name),
        }
    }
    Ok(())
}

/// The cache and tuning lines of the report.
pub fn cache_report() -> String {
    let root = cache::cache_root();
    let dump = std::env::var(jit::DUMP_DIR_ENV).unwrap_or_default();
    let tuning =
        match tune::TunePolicy::from_env_value(std::env::var(tune::TUNE_ENV).ok().as_deref()) {
            tune::TunePolicy::Launch => {
                "launch knobs of one build per kernel (QDSL_TUNE=full: compile knobs too)"
            }
            tune::TunePolicy::Full => "compile and launch knobs (QDSL_TUNE=full)",
            tune::TunePolicy::Off => "off (QDSL_TUNE=0)",
        };
    format!(
        "cache:       {} (set QDSL_CACHE_DIR to move it)\n\
         ptx cache:   {}\n\
         tune cache:  {}\n\
         dump dir:    {}\n\
         tuning:      {tuning}\n",
        root.display(),
        root.join("ptx").display(),
        tune::default_path().display(),
        if dump.is_empty() {
            "off (set QDSL_DUMP_DIR to dump every .cu and .ptx)".into()
        } else {
            dump
        },
    )
}
