//! Device fields: GPU memory holding a field in a storage format of qdsl-core, in the
//! structure-of-arrays layout of DESIGN.md, converted from and to host fields on the GPU.
//!
//! | module | holds |
//! |---|---|
//! | [`block_blas`] | tensor-core block inner products (`mma_tile!` kernels) of sets of device vectors |
//! | [`format`](mod@format) | [`DeviceFormat`]: a fermion or link format of `qdsl_core::format` |
//! | [`layout`] | [`DeviceLayout`]: the chunked structure of arrays and its offsets |
//! | [`codegen`] | the generator of the conversion and reduction kernels' CUDA source |
//! | [`reference`](mod@reference) | CPU references: the exact device image, and the kernels' arithmetic emulated |
//! | [`gpu`] | [`Gpu`]: a device with the JIT, loaded functions, allocation with clear OOM errors |
//! | [`kernel`] | the one launcher: a kernel's interface, arguments bound by name ([`kernel::Args`]), 1–3-D launches |
//! | [`launch`] | [`launch::KernelArgs`]: launches through `cuLaunchKernelEx`, as programmatic dependents on sm_90+ |
//! | [`field`] | [`DeviceField`]: upload/download with conversion on the GPU, norms and dots in f64 |
//! | [`dense`] | dense N × N link fields (the coarse operator's links): layout, upload, download |
//! | [`tuned`] | tuned launches of BLAS, reduction, conversion and link-path kernels through the one `Tunable` |
//! | [`long_links`] | [`long_links::DeviceLongLinks`]: compressed long links (recon 13/9), host encode and upload |
//!
//! Everything that needs a GPU fails with [`DeviceError::NoGpu`] where there is none.

pub mod block_blas;
pub mod codegen;
pub mod copy;
pub mod dense;
pub mod field;
pub mod format;
pub mod gpu;
#[cfg(test)]
mod gpu_tests;
pub mod kernel;
pub mod launch;
pub mod layout;
pub mod long_links;
pub mod reference;
pub mod tuned;

pub use field::DeviceField;
pub use format::{DeviceFormat, HostReal, UnsupportedFormat};
pub use gpu::{DeviceError, Gpu};
pub use layout::DeviceLayout;
