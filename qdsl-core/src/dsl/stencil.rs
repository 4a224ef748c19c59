//! The trait every generated kernel implements.

use super::emit::cuda;
use super::info::KernelInfo;
use super::interface::CompiledKernel;
use super::ir::Ir;
use super::lower::{lower, Lowered};
use super::variant::Variant;
use super::DslError;

/// A kernel defined by a `stencil!` spec. The macro generates a unit struct implementing
/// it (plus an inherent `apply_cpu` method, the Rust emitter's output, typed by the
/// spec's fields). Everything else is derived from the spec at run time, so any
/// [`Variant`] can be generated (and JIT-compiled) on demand.
pub trait Stencil {
    /// The spec as data.
    fn ir() -> Ir;

    /// The lowered spec (an error only for IR that the macro would have rejected).
    fn lowered() -> Result<Lowered, DslError> {
        lower(&Self::ir())
    }

    /// The CUDA C++ source of one variant; deterministic (same spec and variant →
    /// byte-identical source).
    fn cuda_source(variant: &Variant) -> Result<String, DslError> {
        cuda::emit(&Self::lowered()?, variant)
    }

    /// The variant's kernel with its interface (entry name, parameters in signature
    /// order, launch geometry): what the runtime launches.
    fn compiled(variant: &Variant) -> Result<CompiledKernel, DslError> {
        cuda::compile(&Self::lowered()?, variant)
    }

    /// The `extern "C"` name of the variant's CUDA kernel: `<name>_<variant hash>`.
    fn kernel_name(variant: &Variant) -> String {
        cuda::kernel_name(&Self::ir().name, variant)
    }

    /// Whether the spec supports `variant`: its knob values are allowed by the spec's
    /// `#[knobs(...)]`, dagger is defined for its fields, and compressed long links
    /// (`long_recon` ≠ 18) only where the spec has long links, a global link scale only
    /// with fixed-point recon-18 links ([`Variant::link_scale_conflict`]).
    fn supports(variant: &Variant) -> bool {
        match Self::lowered() {
            Ok(l) => {
                l.ir.knobs.check(&l.ir.name, variant).is_ok()
                    && (l.dagger_supported || !variant.dagger)
                    && super::long_links::check_long_recon(&l.ir, variant).is_ok()
                    && variant.link_scale_conflict().is_none()
            }
            Err(_) => false,
        }
    }

    /// Flops, bytes and knobs of one variant.
    fn info(variant: &Variant) -> Result<KernelInfo, DslError> {
        Ok(KernelInfo::new(&Self::lowered()?, variant))
    }
}
