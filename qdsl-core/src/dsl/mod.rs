//! The kernel DSL: the IR the macros build, its lowering passes, and the emitters that
//! turn it into CUDA C++ and CPU Rust.
//!
//! ```text
//! stencil! tokens ──qdsl-macros──▶ ir::Ir ──lower──▶ lower::Lowered ──emit::cuda──▶ CUDA C++
//!                                                                  ──emit::rust──▶ CPU Rust
//!                                                                  ──info────────▶ KernelInfo
//! ```
//!
//! | module | holds |
//! |---|---|
//! | [`ir`] | the spec as data: fields (role, shape) and terms c · S · L · ψ(x + n μ̂) |
//! | [`spin`] | the DeGrand–Rossi γ matrices as sparse tables, and the (1 ± γ_μ) projector plan |
//! | [`lower`] | lowering: projector recognition, dagger conjugation, parity of each input |
//! | [`variant`] | the knobs of one spec (parity, dagger, xpay, formats, recon, boundary) |
//! | [`knobs`] | the knob values a spec allows |
//! | [`codec`] | one storage codec per format: the chunk rule, CUDA decode/encode, extra arguments, byte model, CPU rounding formats |
//! | [`layout`] | the device structure-of-arrays layout in 16-byte chunks |
//! | [`long_links`] | which gauge fields are long (Naik) links, stored with the `long_recon` knob |
//! | [`kernel_ir`] | the typed kernel IR between lowering and CUDA text: plan, named passes |
//! | [`emit`] | the CUDA C++ (printer of the kernel IR) and CPU Rust emitters |
//! | [`info`] | [`KernelInfo`]: flops and bytes per site, knobs |
//! | [`interface`] | [`CompiledKernel`]: a generated kernel's source with its parameters (what binds to each), launch geometry and source hash |
//! | [`knob_space`] | [`KnobSpace`]: what the tuner may vary — compile knobs, block extents in 1–3 dimensions, grid sizes — carried in every kernel's geometry |
//! | [`fused5d`] | `fused5d!` chains of 5D operators (a 4D hop and s-local pieces) fused into one kernel |
//! | [`mma`] | `mma_tile!` tensor-core tiles (block inner products): spec, plan, CUDA with inline PTX `mma.sync`, the CPU path emulating the rounding |
//! | [`dense`] | the dense-link path (multigrid coarse links): supported variants, CPU helpers |
//! | [`cpu`] | the small typed helpers the generated CPU code calls |
//! | [`storage`] | storage emulation: fields rounded through [`crate::format`] for the CPU path |

pub mod codec;
pub mod cpu;
pub mod dense;
pub mod emit;
mod error;
pub mod fused5d;
pub mod halo_spin;
pub mod info;
pub mod interface;
pub mod ir;
pub mod kernel_ir;
pub mod knob_space;
pub mod knobs;
pub mod layout;
pub mod long_links;
pub mod lower;
pub mod mma;
pub mod paths;
pub mod spin;
mod stencil;
pub mod storage;
pub mod variant;

pub use error::{DslError, TermPart};
pub use info::KernelInfo;
pub use interface::{
    BlockShape, CompiledKernel, Elem, Geometry, KernelInterface, KernelParam, KernelProgram,
    ParamDecl, ParamKind,
};
pub use ir::Ir;
pub use knob_space::{CompileSpace, Extents, KnobSpace, LaunchSpace};
pub use stencil::Stencil;
pub use variant::Variant;
