//! `qdsl emit KERNEL --ir|--lowered|--kernel-ir|--interface|--cuda|--ptx`: print each
//! stage of what the generator made for one variant — the spec's IR, the lowered spec
//! (projectors, dagger coefficients, where each input is read), the kernel IR after its
//! passes (parameters, prologue, stages of typed statements, epilogue; see
//! `qdsl_core::dsl::kernel_ir`), the compiled kernel's interface
//! (entry name, parameters in signature order with what binds to each, launch geometry,
//! source hash), the CUDA source, the PTX. A `fused5d!` chain of the catalog
//! (`qdsl_kernels::domain_wall`) is found by name too (`--ls` sets its Ls).
//! For a `link_paths!` smearing or gauge action,
//! `--plan`, `--cuda` and `--ptx` ([`super::emit_paths`]).

use super::variant_args::VariantArgs;
use super::CliError;
use clap::{ArgGroup, Args};
use qdsl_kernels::catalog::find_stencil as find;
use qdsl_runtime::backend::{Backend, CudaBackend};
use qdsl_runtime::jit::{cache, ptxas, Arch, Jit};

/// Arguments of `qdsl emit`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["ir", "lowered", "kernel_ir", "interface", "cuda", "ptx", "plan"])))]
pub struct EmitArgs {
    /// Kernel name (see `qdsl info`).
    pub kernel: String,
    /// Print the IR.
    #[arg(long)]
    pub ir: bool,
    /// Print the lowered spec (spin projection, dagger coefficients, input parities).
    #[arg(long)]
    pub lowered: bool,
    /// Print the kernel IR after the passes (what the CUDA printer prints): parameters,
    /// prologue, stages of typed statements, epilogue.
    #[arg(long)]
    pub kernel_ir: bool,
    /// Print the compiled kernel's interface: entry name, parameters in signature order
    /// (what the launcher binds to each), launch geometry and source hash.
    #[arg(long)]
    pub interface: bool,
    /// Print the CUDA C++ source.
    #[arg(long)]
    pub cuda: bool,
    /// Print the PTX (compiled by NVRTC; no GPU needed) and ptxas's register and spill
    /// report on stderr.
    #[arg(long)]
    pub ptx: bool,
    /// Print the plan of a `link_paths!` smearing or gauge force: the GPU tree of nested
    /// staples and the product counts.
    #[arg(long)]
    pub plan: bool,
    /// With --cuda or --ptx of a `link_paths!` smearing: its GPU plan, `staged` (the
    /// default, as `qdsl smear`: the staple levels stored as fields by one kernel per
    /// level) or `tree` (one kernel per link, no scratch).
    #[arg(long, value_enum, default_value = "staged")]
    pub link_plan: super::smear::PlanArg,
    /// Accepted for older scripts: the staged plan is the default (`--link-plan`).
    #[arg(long, hide = true)]
    pub staged: bool,
    /// With --cuda or --ptx of a `link_paths!` smearing: the kernels of its pull-back
    /// (the fermion force's smearing part; the gather plan, no atomics) instead of the
    /// smearing's.
    #[arg(long)]
    pub pullback: bool,
    /// Architecture for --ptx (default: the GPU's own, else sm_90).
    #[arg(long)]
    pub arch: Option<Arch>,
    /// Ls of a `fused5d!` chain's kernel (its compile-time fifth-dimension extent).
    #[arg(long, default_value_t = 12)]
    pub ls: usize,
    /// How a `fused5d!` chain that lists M5⁻¹ applies it: sweep (the default), dense,
    /// mma_f16 or mma_bf16 (the tensor cores).
    #[arg(long, value_parser = super::mobius::parse_m5inv, default_value = "sweep")]
    pub m5inv: qdsl_core::dsl::fused5d::M5invMode,
    /// The variant.
    #[command(flatten)]
    pub variant: VariantArgs,
}

/// Prints the requested stage to stdout.
pub fn run(args: &EmitArgs) -> Result<(), CliError> {
    if let Some(chain) = qdsl_kernels::domain_wall::chains()
        .into_iter()
        .find(|e| e.name == args.kernel)
    {
        return run_fused(args, &chain);
    }
    if super::emit_paths::run(args)? {
        return Ok(());
    }
    let entry = find(&args.kernel)?;
    let variant = args.variant.variant();
    if args.ir {
        println!("{:#?}", (entry.ir)());
        return Ok(());
    }
    if args.lowered {
        println!("{:#?}", qdsl_core::dsl::lower::lower(&(entry.ir)())?);
        return Ok(());
    }
    if args.kernel_ir {
        let lowered = qdsl_core::dsl::lower::lower(&(entry.ir)())?;
        print!(
            "{}",
            qdsl_core::dsl::emit::cuda::kernel_ir(&lowered, &variant)?
        );
        return Ok(());
    }
    if args.interface {
        let k = (entry.compiled)(&variant)?;
        println!("kernel      {}", k.name);
        println!("variant     {variant}");
        println!(
            "source      {} bytes, fnv {:016x}",
            k.source.len(),
            k.source_hash()
        );
        println!(
            "geometry    one thread per output site, one grid row per 5D slice, {} bytes of shared memory per thread",
            k.geometry.shared_per_thread
        );
        println!("parameters");
        for (i, p) in k.params.iter().enumerate() {
            println!("  {i:>2}  {:<14} {p:?}", p.cuda_name());
        }
        return Ok(());
    }
    let source = (entry.cuda)(&variant)?;
    if args.cuda {
        print!("{source}");
        return Ok(());
    }
    print_ptx(args, &(entry.kernel_name)(&variant), &source)
}

/// The stages of a `fused5d!` chain's kernel (`--ir` and `--lowered` print the chain).
fn run_fused(
    args: &EmitArgs,
    entry: &qdsl_kernels::domain_wall::FusedEntry,
) -> Result<(), CliError> {
    let v = qdsl_core::dsl::fused5d::FusedVariant {
        variant: args.variant.variant(),
        ls: args.ls,
        m5inv: args.m5inv,
    };
    if args.ir || args.lowered {
        println!("{:#?}", (entry.chain)());
        return Ok(());
    }
    if args.kernel_ir {
        print!("{}", (entry.kernel_ir)(&v)?);
        return Ok(());
    }
    let k = (entry.compiled)(&v)?;
    if args.interface {
        println!("kernel      {}", k.name);
        println!("variant     {}", v.canonical());
        println!(
            "source      {} bytes, fnv {:016x}",
            k.source.len(),
            k.source_hash()
        );
        println!(
            "geometry    4D sites along x, the Ls slices of a site along y, {} bytes of shared memory per thread",
            k.geometry.shared_per_thread
        );
        println!("parameters");
        for (i, p) in k.params.iter().enumerate() {
            println!("  {i:>2}  {:<20} {p:?}", p.cuda_name());
        }
        return Ok(());
    }
    if args.cuda {
        print!("{}", k.source);
        return Ok(());
    }
    print_ptx(args, &k.name, &k.source)
}

/// Compiles `source` with NVRTC, prints the PTX and ptxas's report on stderr.
fn print_ptx(args: &EmitArgs, name: &str, source: &str) -> Result<(), CliError> {
    let arch = match args.arch {
        Some(a) => a,
        None => CudaBackend::new(0)
            .ok()
            .and_then(|b| b.device().map(|d| d.arch))
            .unwrap_or(Arch::SM_90),
    };
    let jit = Jit::new(
        &cache::cache_root(),
        std::env::var_os(qdsl_runtime::jit::DUMP_DIR_ENV).map(Into::into),
    )?;
    let ptx = jit.compile(name, source, arch, &[])?;
    print!("{}", ptx.ptx);
    match ptxas::report(&ptx.ptx, arch) {
        Ok(reports) => {
            for r in reports {
                eprintln!(
                    "ptxas {arch}: {}: {} registers, {} bytes stack, spill stores {} bytes, spill loads {} bytes",
                    r.function, r.registers, r.stack_frame, r.spill_stores, r.spill_loads
                );
            }
        }
        Err(e) => eprintln!("qdsl: no ptxas report: {e}"),
    }
    Ok(())
}
