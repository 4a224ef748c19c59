//! `qdsl emit` for the `link_paths!` smearings and gauge forces of the catalog: `--plan`
//! prints the GPU tree (the staple levels nested by Horner's rule, what one thread per
//! link computes), for a smearing its staged plan (the levels stored as fields, one pass
//! each), its pull-back's gather plan and the CPU plan's product counts; `--cuda` the
//! CUDA source and `--ptx` the PTX with ptxas's report, of the staged plan's kernels by
//! default (`--link-plan tree`: the one-kernel tree), of the pull-back's with
//! `--pullback`, in the precision `--precision` (f64 or f32) and, for a smearing, the
//! input compression `--recon` (12, the default as for the stencils: recon 12 + phase;
//! 18: plain links; 8 is refused by the generator); the NVRTC compile time goes to
//! stderr with the report.

use super::emit::EmitArgs;
use super::CliError;
use qdsl_core::dsl::paths::cuda::links_kernel;
use qdsl_core::dsl::paths::force::force_kernel;
use qdsl_core::dsl::paths::reverse::ReversePlan;
use qdsl_core::dsl::paths::reverse_cuda::reverse_source;
use qdsl_core::dsl::paths::{
    ForcePlan, LinkPathsInfo, PathKnobs, PathPlan, PathTree, PlanKind, Staging,
};
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_kernels::catalog::{actions, smearings};
use qdsl_runtime::jit::{cache, ptxas, Arch, Jit};
use std::time::Instant;

/// What `qdsl emit` prints for the link-path kernel `args.kernel`; `Ok(false)` when the
/// name is no smearing or gauge action of the catalog.
pub fn run(args: &EmitArgs) -> Result<bool, CliError> {
    let is_link_path = smearings().iter().any(|s| s.name == args.kernel)
        || actions().iter().any(|a| a.name == args.kernel);
    if !is_link_path {
        return Ok(false);
    }
    let f64 = match args.variant.precision {
        StorageFormat::F64 => true,
        StorageFormat::F32 => false,
        other => {
            return Err(format!(
                "{}: link-path kernels are generated in f64 or f32, not {}",
                args.kernel,
                other.name()
            )
            .into())
        }
    };
    let (tree, plan, source, entry) =
        if let Some(s) = smearings().into_iter().find(|s| s.name == args.kernel) {
            let spec = (s.spec)();
            let plan = if args.staged {
                PlanKind::Staged
            } else {
                args.link_plan.kind()
            };
            let knobs = PathKnobs::with_input(args.variant.variant().recon).with_plan(plan);
            let source = if args.pullback {
                // The pull-back reads the thin links in recon 18 (HISQ's W is made so).
                let reverse = ReversePlan::new(&spec)?;
                let knobs = PathKnobs::default();
                if f64 {
                    reverse_source::<f64>(&reverse, &knobs)
                } else {
                    reverse_source::<f32>(&reverse, &knobs)
                }
            } else if f64 {
                (s.cuda_f64)(&knobs)
            } else {
                (s.cuda_f32)(&knobs)
            };
            (
                PathTree::new(&spec)?,
                PathPlan::new(&spec)?,
                source,
                links_kernel(&spec.name),
            )
        } else if let Some(a) = actions().into_iter().find(|a| a.name == args.kernel) {
            let plan = ForcePlan::new(&(a.spec)())?;
            let source = if f64 {
                (a.force_f64)()
            } else {
                (a.force_f32)()
            };
            (
                plan.tree.clone(),
                plan.staples.clone(),
                source,
                force_kernel(&plan.action.name),
            )
        } else {
            return Ok(false);
        };
    if args.plan {
        print!("{tree}");
        if smearings().iter().any(|s| s.name == args.kernel) {
            print!("{}", Staging::new(&tree));
            print!("{}", ReversePlan::new(&tree.spec)?);
        }
        let info = LinkPathsInfo::new(&plan);
        println!(
            "per site: {} paths; GPU {} matrix products (4 links × {}), one launch; CPU plan {} \
             products ({} without sharing), {} flops",
            info.paths_per_site,
            info.gpu_products,
            tree.products_per_link(),
            info.products_with_reuse,
            info.products_without_reuse,
            info.flops_per_site
        );
        return Ok(true);
    }
    if !(args.cuda || args.ptx) {
        return Err(format!(
            "{}: a link-path kernel has --plan, --cuda and --ptx, not the stencil stages",
            args.kernel
        )
        .into());
    }
    let source = source?;
    if args.cuda {
        print!("{source}");
        return Ok(true);
    }
    let arch = args.arch.unwrap_or(Arch::SM_90);
    let jit = Jit::new(
        &cache::cache_root(),
        std::env::var_os(qdsl_runtime::jit::DUMP_DIR_ENV).map(Into::into),
    )?;
    let t0 = Instant::now();
    let ptx = jit.compile(&entry, &source, arch, &[])?;
    eprintln!(
        "nvrtc {arch}: {entry}: {} bytes of source, {:.0} ms (a cached PTX loads in less)",
        source.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
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
    Ok(true)
}
