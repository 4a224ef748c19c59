//! Per-slice reductions of fields holding N right-hand sides as slices (sites
//! s·n .. (s + 1)·n of a field of N·n sites): ‖x_s‖² and ⟨x_s, y_s⟩ of every slice s
//! in one launch, in f64, deterministic as [`super::reduction_source`] (fixed-order
//! block sums, then one block per slice over its partials).

use super::{decode_record, prelude, reduction_name, HostReal, REDUCTION_BLOCK};
use crate::device::format::UnsupportedFormat;
use crate::device::layout::DeviceLayout;
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use std::fmt::Write;

/// Partial sums per slice: at most this many blocks along x (grid.y = the slices).
pub const SLICE_PARTIALS: u32 = 256;

/// The kernel name prefix, e.g. `qdsl_reduce_slices_f32_24`.
pub fn slice_reduction_name(layout: &DeviceLayout) -> String {
    reduction_name(layout).replacen("qdsl_reduce_", "qdsl_reduce_slices_", 1)
}

/// The two kernels: `_partial` (grid x blocks per slice, y the slices; partial sums
/// `partials[2 (s · gridDim.x + b)]`) and `_final` (one block per slice along y:
/// `result[2 s]`, re and im); blocks of [`REDUCTION_BLOCK`] threads.
pub fn slice_reduction_program(layout: &DeviceLayout) -> Result<KernelProgram, UnsupportedFormat> {
    let name = slice_reduction_name(layout);
    let fixed = Geometry::linear().with_fixed_block(REDUCTION_BLOCK);
    let partial = KernelInterface {
        name: format!("{name}_partial"),
        params: vec![
            ParamDecl::new("x", ParamKind::read(Elem::U8)),
            ParamDecl::new("xn", ParamKind::read(Elem::F32).or_null()),
            ParamDecl::new("y", ParamKind::read(Elem::U8)),
            ParamDecl::new("yn", ParamKind::read(Elem::F32).or_null()),
            ParamDecl::new("slice_sites", ParamKind::I32),
            ParamDecl::new("stride", ParamKind::I32),
            ParamDecl::new("dot", ParamKind::I32),
            ParamDecl::new("partials", ParamKind::write(Elem::F64)),
            ParamDecl::new("status", ParamKind::write(Elem::I32)),
        ],
        geometry: fixed,
    };
    let fin = KernelInterface {
        name: format!("{name}_final"),
        params: vec![
            ParamDecl::new("partials", ParamKind::read(Elem::F64)),
            ParamDecl::new("blocks", ParamKind::I32),
            ParamDecl::new("result", ParamKind::write(Elem::F64)),
        ],
        geometry: fixed.with_max_grid_x(1),
    };
    Ok(KernelProgram {
        source: slice_reduction_source(layout)?,
        options: super::options(),
        kernels: vec![partial, fin],
        name,
    })
}

/// The CUDA source of [`slice_reduction_program`].
pub fn slice_reduction_source(layout: &DeviceLayout) -> Result<String, UnsupportedFormat> {
    let name = slice_reduction_name(layout);
    let n = layout.host_reals;
    let b = REDUCTION_BLOCK;
    let mut s = prelude(layout, HostReal::F64, "per-slice reduction");
    s += &decode_record(layout, HostReal::F64)?;
    let _ = write!(
        s,
        "__device__ void qdsl_block_sum(double re, double im, double* out) {{\n    \
         __shared__ double sre[{b}], sim[{b}];\n    \
         sre[threadIdx.x] = re; sim[threadIdx.x] = im;\n    __syncthreads();\n    \
         for (int h = {b} / 2; h > 0; h /= 2) {{\n        \
         if (threadIdx.x < h) {{ sre[threadIdx.x] += sre[threadIdx.x + h]; sim[threadIdx.x] += sim[threadIdx.x + h]; }}\n        \
         __syncthreads();\n    }}\n    \
         if (threadIdx.x == 0) {{ out[0] = sre[0]; out[1] = sim[0]; }}\n}}\n\
         // Slice blockIdx.y: sites blockIdx.y * slice_sites + [0, slice_sites).\n\
         extern \"C\" __global__ void {name}_partial(const unsigned char* __restrict__ x, const float* __restrict__ xn, const unsigned char* __restrict__ y, const float* __restrict__ yn, int slice_sites, int stride, int dot, double* partials, int* status) {{\n    \
         double re = 0.0, im = 0.0;\n    int bad = 0;\n    \
         const int first = blockIdx.y * slice_sites;\n    \
         for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < slice_sites; k += gridDim.x * blockDim.x) {{\n        \
         const int site = first + k;\n        \
         double a[{n}], c[{n}];\n        \
         qdsl_decode_record(x, xn, site, 0, stride, a, &bad);\n        \
         if (dot) qdsl_decode_record(y, yn, site, 0, stride, c, &bad);\n        \
         for (int q = 0; q + 1 < {n}; q += 2) {{\n            \
         if (dot) {{ re += a[q] * c[q] + a[q + 1] * c[q + 1]; im += a[q] * c[q + 1] - a[q + 1] * c[q]; }}\n            \
         else {{ re += a[q] * a[q] + a[q + 1] * a[q + 1]; }}\n        }}\n    }}\n    \
         if (bad) atomicOr(status, bad);\n    \
         qdsl_block_sum(re, im, partials + 2 * (blockIdx.y * gridDim.x + blockIdx.x));\n}}\n\
         extern \"C\" __global__ void {name}_final(const double* __restrict__ partials, int blocks, double* result) {{\n    \
         double re = 0.0, im = 0.0;\n    \
         const double* p = partials + 2 * blockIdx.y * blocks;\n    \
         for (int i = threadIdx.x; i < blocks; i += blockDim.x) {{ re += p[2 * i]; im += p[2 * i + 1]; }}\n    \
         qdsl_block_sum(re, im, result + 2 * blockIdx.y);\n}}\n"
    );
    Ok(s)
}
