//! The kernel registry: every spec of this crate, as values. Generated at build time from
//! the `stencil!` and `link_paths!` invocations in `src/` (see `build_registry.rs`): a
//! kernel is added to the catalog by writing its spec, and everything that walks the
//! catalog — `qdsl info`, `qdsl emit`, `qdsl check`, the tune fingerprint, the manifest
//! of generated sources — sees it.

use qdsl_core::dsl::paths::{ActionSpec, GaugeAction, LinkPaths, PathKnobs, PathSpec};
use qdsl_core::dsl::{CompiledKernel, DslError, Ir, KernelInfo, Stencil, Variant};

/// One `stencil!` kernel, with its generators.
#[derive(Clone, Debug)]
pub struct StencilEntry {
    /// The kernel's name (snake case, as in its spec).
    pub name: String,
    /// Its IR.
    pub ir: fn() -> Ir,
    /// The CUDA source of a variant.
    pub cuda: fn(&Variant) -> Result<String, DslError>,
    /// A variant's kernel with its interface (what the launcher binds).
    pub compiled: fn(&Variant) -> Result<CompiledKernel, DslError>,
    /// The `extern "C"` name of a variant's kernel.
    pub kernel_name: fn(&Variant) -> String,
    /// Flops, bytes and knobs of a variant.
    pub info: fn(&Variant) -> Result<KernelInfo, DslError>,
    /// Whether the spec supports a variant.
    pub supports: fn(&Variant) -> bool,
}

impl StencilEntry {
    /// The entry of the spec `S`.
    pub fn of<S: Stencil>() -> Self {
        StencilEntry {
            name: S::ir().name,
            ir: S::ir,
            cuda: S::cuda_source,
            compiled: S::compiled,
            kernel_name: S::kernel_name,
            info: S::info,
            supports: S::supports,
        }
    }
}

/// One `link_paths!` smearing, with its CUDA generators in f64 and f32.
#[derive(Clone, Debug)]
pub struct SmearingEntry {
    /// The smearing's name.
    pub name: String,
    /// Its spec.
    pub spec: fn() -> PathSpec,
    /// The CUDA source in f64 for input knobs.
    pub cuda_f64: fn(&PathKnobs) -> Result<String, DslError>,
    /// The CUDA source in f32 for input knobs.
    pub cuda_f32: fn(&PathKnobs) -> Result<String, DslError>,
}

impl SmearingEntry {
    /// The entry of the spec `P`.
    pub fn of<P: LinkPaths>() -> Self {
        SmearingEntry {
            name: P::spec().name,
            spec: P::spec,
            cuda_f64: P::cuda_source_with::<f64>,
            cuda_f32: P::cuda_source_with::<f32>,
        }
    }
}

/// One `link_paths!` gauge action, with its force's CUDA generators.
#[derive(Clone, Debug)]
pub struct ActionEntry {
    /// The action's name.
    pub name: String,
    /// Its spec.
    pub spec: fn() -> ActionSpec,
    /// The force kernel's CUDA source in f64.
    pub force_f64: fn() -> Result<String, DslError>,
    /// The force kernel's CUDA source in f32.
    pub force_f32: fn() -> Result<String, DslError>,
}

impl ActionEntry {
    /// The entry of the spec `A`.
    pub fn of<A: GaugeAction>() -> Self {
        ActionEntry {
            name: A::spec().name,
            spec: A::spec,
            force_f64: A::force_cuda_source::<f64>,
            force_f32: A::force_cuda_source::<f32>,
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

/// The stencil named `name`, or the list of names in the error.
pub fn find_stencil(name: &str) -> Result<StencilEntry, String> {
    let all = stencils();
    let names: Vec<String> = all.iter().map(|e| e.name.clone()).collect();
    all.into_iter().find(|e| e.name == name).ok_or_else(|| {
        format!(
            "no kernel {name:?} in the catalog; kernels: {}",
            names.join(", ")
        )
    })
}
