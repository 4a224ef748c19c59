//! `qdsl smear`: the asqtad or HISQ fat and long links, or the fat7 links, of a thin-link
//! configuration, computed on the GPU when there is one (else on the CPU) and written to
//! files (SciDAC LIME f32 by default, as MILC writes fat.l8 and long.l8).
//!
//! Asqtad: F_μ(x) = 5/8 U_μ(x) − 1/(16u0²) Σ 3-staples + 1/(64u0⁴) Σ 5-staples
//! − 1/(384u0⁶) Σ 7-staples − 1/(16u0⁴) Σ Lepage and L_μ(x) = −1/(24u0²) U_μ(x)
//! U_μ(x+μ̂) U_μ(x+2μ̂), on links with MILC's staggered phases and antiperiodic time
//! boundary folded in. Fat7: 1/8, −1/16, 1/64, −1/384 for the one-link and the 3-, 5- and
//! 7-staples (no long links). HISQ (no tadpole factor): V = fat7(U), W = V(V†V)^(−1/2),
//! X_μ(x) = `HisqFat`(W) + (ε/8) W_μ(x) and L_μ(x) = −(1 + ε)/24 W_μ(x) W_μ(x+μ̂) W_μ(x+2μ̂)
//! with ε = `--epsilon-naik` (`qdsl_kernels::hisq_links` on the CPU,
//! [`qdsl_runtime::smear::hisq_links_gpu`] on the GPU).

use super::gauge_read::{read_config, GaugeReadArgs};
use super::CliError;
use crate::app::solve::check_hisq_u0;
use clap::{Args, ValueEnum};
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::paths::{PathKnobs, PlanKind};
use qdsl_core::field::GaugeField;
use qdsl_core::io::lime_gauge::{write_lime_gauge, LimeWriteOptions};
use qdsl_core::io::milc::{write_milc, MilcWriteOptions};
use qdsl_core::io::nersc::{write_nersc, NerscWriteOptions};
use qdsl_core::io::{LimeFlavour, Precision, UnitarityCheck};
use qdsl_kernels::{fold_staggered_phases, hisq_links, AsqtadFat, AsqtadLong, Fat7};
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::device::Gpu;
use qdsl_runtime::operator::device::codegen_hash;
use qdsl_runtime::smear::{hisq_links_gpu_with, GpuSmearer};
use qdsl_runtime::tune::{default_path, Tuner};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which smeared links to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LinkKind {
    /// Asqtad fat and long (Naik) links (--out-fat and --out-long).
    Asqtad,
    /// Fat7 links (--out-fat only).
    Fat7,
    /// HISQ fat (X) and long links (--out-fat and --out-long; no --u0, optional
    /// --epsilon-naik).
    Hisq,
}

/// The GPU plan of the link-path kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanArg {
    /// The staple levels stored as fields, one link direction at a time (the default;
    /// falls back to the tree, with a message, where its scratch does not fit).
    Staged,
    /// One kernel per link, no scratch.
    Tree,
}

impl PlanArg {
    /// The plan knob.
    pub fn kind(self) -> PlanKind {
        match self {
            PlanArg::Staged => PlanKind::Staged,
            PlanArg::Tree => PlanKind::Tree,
        }
    }
}

/// The file format of the written links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutFormat {
    /// SciDAC LIME (`scidac-binary-data`), as MILC writes fat and long links.
    Scidac,
    /// ILDG LIME (`ildg-binary-data`).
    Ildg,
    /// MILC v5 binary (single precision only).
    Milc,
    /// NERSC archive, 3 × 3 stored.
    Nersc,
}

/// The stored precision of the written links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutPrecision {
    /// 4-byte reals.
    F32,
    /// 8-byte reals.
    F64,
}

/// Arguments of `qdsl smear`.
#[derive(Debug, Args)]
pub struct SmearArgs {
    /// The thin-link configuration (any format `qdsl inspect` reads), without phases.
    pub config: PathBuf,
    /// Which links: asqtad or hisq (fat and long) or fat7 (fat only).
    #[arg(long, value_enum)]
    pub links: LinkKind,
    /// The tadpole factor u0 (> 0) of asqtad and fat7 (required there): each path of
    /// length L is divided by u0^(L−1). HISQ has u0 = 1 by construction (1 is accepted).
    #[arg(long)]
    pub u0: Option<f64>,
    /// The Naik-term mass correction ε of HISQ (default 0): X += (ε/8) W, L ← (1 + ε) L.
    #[arg(long, allow_negative_numbers = true)]
    pub epsilon_naik: Option<f64>,
    /// Output file of the fat links.
    #[arg(long)]
    pub out_fat: PathBuf,
    /// Output file of the long links (asqtad and hisq; required there).
    #[arg(long)]
    pub out_long: Option<PathBuf>,
    /// File format of the outputs.
    #[arg(long, value_enum, default_value = "scidac")]
    pub format: OutFormat,
    /// Stored precision of the outputs.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: OutPrecision,
    /// The GPU plan of the smearing kernels (ignored on the CPU).
    #[arg(long, value_enum, default_value = "staged")]
    pub plan: PlanArg,
    #[command(flatten)]
    pub read: GaugeReadArgs,
}

const NEED_OUT_LONG: &str =
    "--links asqtad and --links hisq write fat and long links: --out-long is required";

/// The tadpole factor of asqtad and fat7 (HISQ: 1, which its smearing does not use).
fn tadpole(args: &SmearArgs) -> f64 {
    args.u0.unwrap_or(1.0)
}

/// Checks `--u0` and `--epsilon-naik` against `--links`.
fn validate_coefficients(args: &SmearArgs) -> Result<(), String> {
    match (args.links, args.u0) {
        (LinkKind::Hisq, u0) => check_hisq_u0(u0).map_err(|e| e.to_string())?,
        (_, None) => return Err("--links asqtad and --links fat7 need --u0".into()),
        (_, Some(u0)) if !(u0.is_finite() && u0 > 0.0) => {
            return Err(format!("--u0 must be a finite number > 0, found {u0}"))
        }
        _ => {}
    }
    match (args.links, args.epsilon_naik) {
        (LinkKind::Hisq, Some(e)) if !e.is_finite() => {
            Err(format!("--epsilon-naik must be finite, found {e}"))
        }
        (LinkKind::Asqtad | LinkKind::Fat7, Some(e)) => Err(format!(
            "--epsilon-naik is a HISQ coefficient (--links hisq), but {e} was given"
        )),
        _ => Ok(()),
    }
}

/// Checks the flags against each other before any work.
fn validate(args: &SmearArgs) -> Result<(), String> {
    validate_coefficients(args)?;
    match (args.links, &args.out_long) {
        (LinkKind::Asqtad | LinkKind::Hisq, None) => return Err(NEED_OUT_LONG.into()),
        (LinkKind::Fat7, Some(p)) => {
            return Err(format!(
                "--links fat7 has no long links, but --out-long {} was given",
                p.display()
            ))
        }
        _ => {}
    }
    if args.format == OutFormat::Milc && args.precision == OutPrecision::F64 {
        return Err(
            "--format milc stores single precision only: use --precision f32 or another --format"
                .into(),
        );
    }
    if args.out_long.as_deref() == Some(args.out_fat.as_path()) {
        return Err(format!(
            "--out-fat and --out-long name the same file {}",
            args.out_fat.display()
        ));
    }
    Ok(())
}

/// Spec `S` on links `v` (phases folded in): on the GPU (its link-path kernels' launches
/// from the tuner: under the default policy a cached winner or the default launch) if
/// given, else on the CPU.
fn smear<S: LinkPaths>(
    gpu: Option<&(Gpu, Tuner)>,
    v: &GaugeField<f64>,
    u0: f64,
    plan: PlanKind,
) -> Result<GaugeField<f64>, CliError> {
    Ok(match gpu {
        Some((gpu, tuner)) => {
            GpuSmearer::<f64>::with_knobs::<S>(gpu, PathKnobs::default().with_plan(plan))?
                .smear_with(gpu, Some(tuner), v, u0)?
        }
        None => S::smear_cpu(v, u0)?,
    })
}

/// Writes `field` to `path` in the chosen format and precision.
fn write(
    path: &Path,
    field: &GaugeField<f64>,
    args: &SmearArgs,
    what: &str,
) -> Result<(), CliError> {
    let precision = match args.precision {
        OutPrecision::F32 => Precision::Single,
        OutPrecision::F64 => Precision::Double,
    };
    let lime = |flavour| LimeWriteOptions {
        flavour,
        precision,
        file_xml: format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><title>qdsl {what} links</title>"#
        ),
        record_xml: format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><info><links>{what}</links>{}</info>"#,
            match (args.u0, args.epsilon_naik) {
                (Some(u0), _) => format!("<u0>{u0}</u0>"),
                (None, e) => format!("<epsilon_naik>{}</epsilon_naik>", e.unwrap_or(0.0)),
            }
        ),
        ..LimeWriteOptions::default()
    };
    match args.format {
        OutFormat::Scidac => write_lime_gauge(path, field, &lime(LimeFlavour::Scidac))?,
        OutFormat::Ildg => write_lime_gauge(path, field, &lime(LimeFlavour::Ildg))?,
        OutFormat::Milc => write_milc(path, field, &MilcWriteOptions::default())?,
        OutFormat::Nersc => write_nersc(
            path,
            field,
            &NerscWriteOptions {
                precision,
                ..NerscWriteOptions::default()
            },
        )?,
    }
    println!("{what} links written to {}", path.display());
    Ok(())
}

/// Reads the configuration, builds the links (GPU when chosen or found) and writes them.
pub fn run(args: &SmearArgs, choice: Option<BackendChoice>) -> Result<(), CliError> {
    validate(args)?;
    let gpu = match BackendChoice::from_env(choice)? {
        BackendChoice::Cpu => None,
        BackendChoice::Cuda => Some(Gpu::open(0).map_err(|e| format!("--backend cuda: {e}"))?),
        BackendChoice::Auto => match Gpu::open(0) {
            Ok(g) => Some(g),
            Err(e) => {
                eprintln!("qdsl smear: no usable GPU ({e}); smearing on the CPU");
                None
            }
        },
    }
    .map(|gpu| {
        let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()));
        (gpu, tuner)
    });
    let read = read_config(
        &args.config,
        &args.read,
        UnitarityCheck::ForPrecision,
        false,
    )
    .map_err(|e| format!("reading the thin links {}: {e}", args.config.display()))?;
    read.print_notes();
    let u = &read.file.field;
    let smearing = Instant::now();
    let v = fold_staggered_phases(u);
    let device = if gpu.is_some() {
        "GPU, kernel compilation included"
    } else {
        "CPU"
    };
    let u0 = tadpole(args);
    let plan = args.plan.kind();
    let (links, what): ([Option<GaugeField<f64>>; 2], _) = match args.links {
        LinkKind::Asqtad => {
            let fat = smear::<AsqtadFat>(gpu.as_ref(), &v, u0, plan)?;
            let long = smear::<AsqtadLong>(gpu.as_ref(), &v, u0, plan)?;
            eprintln!("qdsl smear: asqtad links, u0 = {u0}");
            ([Some(fat), Some(long)], ["asqtad fat", "asqtad long"])
        }
        LinkKind::Fat7 => {
            let fat = smear::<Fat7>(gpu.as_ref(), &v, u0, plan)?;
            eprintln!("qdsl smear: fat7 links, u0 = {u0}");
            ([Some(fat), None], ["fat7", ""])
        }
        LinkKind::Hisq => {
            let epsilon = args.epsilon_naik.unwrap_or(0.0);
            let (fat, long) = match &gpu {
                Some((gpu, tuner)) => hisq_links_gpu_with(gpu, Some(tuner), u, epsilon, plan)?,
                None => hisq_links(u, epsilon)?,
            };
            eprintln!("qdsl smear: HISQ links, epsilon_naik = {epsilon}");
            ([Some(fat), Some(long)], ["hisq fat", "hisq long"])
        }
    };
    let smearing = smearing.elapsed().as_secs_f64();
    let writing = Instant::now();
    let [fat, long] = links;
    if let Some(fat) = fat {
        write(&args.out_fat, &fat, args, what[0])?;
    }
    if let Some(long) = long {
        let out_long = args.out_long.as_deref().ok_or(NEED_OUT_LONG)?;
        write(out_long, &long, args, what[1])?;
    }
    eprintln!(
        "qdsl smear: file read {:.3} s, smearing {smearing:.3} s ({device}), writing {:.3} s",
        read.seconds,
        writing.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
#[path = "smear_tests.rs"]
mod tests;
