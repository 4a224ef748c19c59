//! The CUDA source of the device vectors' one BLAS kernel, generated per pair of
//! layouts (output y, input x):
//!
//! y_k ← [x read] a·x_k + [y read] b·y_k        (complex a, b; k over complex components)
//!
//! which is axpy (a, b = 1), xpay (a = 1, b), scale (no x), copy and precision
//! conversion (a = 1, no y) and set-to-zero (neither read). Which operands are read is
//! the `mode` argument (bit 0: x, bit 1: y), so an unread operand's NaN never leaks in.
//!
//! The format code is NOT re-implemented here: the program embeds the device fields'
//! own conversion code ([`crate::device::codegen::conversion_source`]) in namespaces —
//! `qdsl_x` and `qdsl_y` decode x and y into the compute type, `qdsl_out` encodes y from
//! f64 reals (fixed point: a new per-site norm max|y_k| from the new values). The
//! compute type is f64 when either format is f64, else f32 (narrow formats: decode →
//! f32 → re-encode). Coefficients are rounded to the compute type, as on the host.
//! Format errors (overflow of f16, non-finite values given to fixed point) set bits of
//! a status word, as the conversion kernels do.

use super::precision::compute_precision;
use crate::device::codegen::{conversion_source, site_params, Direction};
use crate::device::format::{DeviceFormat, HostReal, UnsupportedFormat};
use crate::device::DeviceLayout;
use qdsl_core::dsl::{
    Elem, Geometry, KernelInterface, KernelProgram, LaunchSpace, ParamDecl, ParamKind,
};
use qdsl_core::format::FermionFormat;
use std::fmt::Write;

/// Mode bit: x is read.
pub const READ_X: i32 = 1;
/// Mode bit: y is read.
pub const READ_Y: i32 = 2;

/// The fermion format of a device layout (BLAS runs on fermion fields only).
fn fermion(layout: &DeviceLayout) -> Result<FermionFormat, UnsupportedFormat> {
    match layout.format {
        DeviceFormat::Fermion(f) => Ok(f),
        DeviceFormat::Link(_) => Err(UnsupportedFormat {
            format: format!(
                "{} (a link format: BLAS needs fermion fields)",
                layout.format
            ),
        }),
    }
}

/// The compute precision of y ← f(x, y): f64 if either format is f64, else f32.
pub fn compute_type(y: &DeviceLayout, x: &DeviceLayout) -> Result<HostReal, UnsupportedFormat> {
    let (fy, fx) = (fermion(y)?, fermion(x)?);
    Ok(match (compute_precision(fy), compute_precision(fx)) {
        (HostReal::F32, HostReal::F32) => HostReal::F32,
        _ => HostReal::F64,
    })
}

/// The kernel's name, e.g. `qdsl_blas_fixed16_f64_24` (y format, x format, reals per
/// site).
pub fn blas_name(y: &DeviceLayout, x: &DeviceLayout) -> String {
    format!(
        "qdsl_blas_{}_{}_{}",
        y.format.name(),
        x.format.name(),
        y.host_reals
    )
}

/// The BLAS kernel of [`blas_source`] with its interface: x, xn, yn null when unread or
/// absent, at most 65 535 blocks (a grid-stride loop); knob space: 1-D blocks of
/// [`qdsl_core::dsl::knob_space::LINEAR_BLOCKS`], 256 by default, no occupancy
/// throttling, no compile knobs.
pub fn blas_program(
    y: &DeviceLayout,
    x: &DeviceLayout,
) -> Result<KernelProgram, UnsupportedFormat> {
    let name = blas_name(y, x);
    let params = [
        ParamDecl::new("x", ParamKind::read(Elem::U8).or_null()),
        ParamDecl::new("xn", ParamKind::read(Elem::F32).or_null()),
        ParamDecl::new("y", ParamKind::write(Elem::U8)),
        ParamDecl::new("yn", ParamKind::write(Elem::F32).or_null()),
        ParamDecl::new("a_re", ParamKind::F64),
        ParamDecl::new("a_im", ParamKind::F64),
        ParamDecl::new("b_re", ParamKind::F64),
        ParamDecl::new("b_im", ParamKind::F64),
        ParamDecl::new("mode", ParamKind::I32),
    ];
    Ok(KernelProgram {
        source: blas_source(y, x)?,
        options: crate::device::codegen::options(),
        kernels: vec![KernelInterface {
            name: name.clone(),
            params: params.into_iter().chain(site_params()).collect(),
            geometry: Geometry::linear()
                .with_max_grid_x(65_535)
                .with_launch_space(LaunchSpace::linear(256).without_throttle()),
        }],
        name,
    })
}

/// The CUDA source of [`blas_name`]; signature
/// `(const unsigned char* x, const float* xn, unsigned char* y, float* yn,
///   double a_re, double a_im, double b_re, double b_im, int mode, int sites,
///   int stride, int* status)`.
/// An error for link formats, layouts of different shapes, and formats device fields
/// do not implement.
pub fn blas_source(y: &DeviceLayout, x: &DeviceLayout) -> Result<String, UnsupportedFormat> {
    blas_text(y, x, &blas_name(y, x), Coefficients::Scalar)
}

/// Where the BLAS kernel's coefficients come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coefficients {
    /// Four scalar arguments a_re, a_im, b_re, b_im.
    Scalar,
    /// An array of 4 N doubles, (a_re, a_im, b_re, b_im) per slice of `slice_sites`
    /// sites (N right-hand sides).
    PerSlice,
}

/// The name of the per-slice BLAS kernel, e.g. `qdsl_blas_slices_f32_f32_24`.
pub fn slice_blas_name(y: &DeviceLayout, x: &DeviceLayout) -> String {
    blas_name(y, x).replacen("qdsl_blas_", "qdsl_blas_slices_", 1)
}

/// The BLAS kernel with one pair of coefficients per slice, for fields holding N
/// right-hand sides as slices of `slice_sites` sites: y_s ← [x] a_s·x_s + [y] b_s·y_s,
/// the coefficients `coeffs[4 s ..]` = (a_re, a_im, b_re, b_im) of slice s = site /
/// slice_sites; otherwise [`blas_program`]'s kernel (same codecs, modes and status).
pub fn slice_blas_program(
    y: &DeviceLayout,
    x: &DeviceLayout,
) -> Result<KernelProgram, UnsupportedFormat> {
    let name = slice_blas_name(y, x);
    let params = [
        ParamDecl::new("x", ParamKind::read(Elem::U8).or_null()),
        ParamDecl::new("xn", ParamKind::read(Elem::F32).or_null()),
        ParamDecl::new("y", ParamKind::write(Elem::U8)),
        ParamDecl::new("yn", ParamKind::write(Elem::F32).or_null()),
        ParamDecl::new("coeffs", ParamKind::read(Elem::F64)),
        ParamDecl::new("slice_sites", ParamKind::I32),
        ParamDecl::new("mode", ParamKind::I32),
    ];
    Ok(KernelProgram {
        source: blas_text(y, x, &name, Coefficients::PerSlice)?,
        options: crate::device::codegen::options(),
        kernels: vec![KernelInterface {
            name: name.clone(),
            params: params.into_iter().chain(site_params()).collect(),
            geometry: Geometry::linear()
                .with_max_grid_x(65_535)
                .with_launch_space(LaunchSpace::linear(256).without_throttle()),
        }],
        name,
    })
}

/// The device fields' own conversion code for a kernel writing y from x, in namespaces:
/// `qdsl_x` decodes x into `compute`, `qdsl_y` (with `decode_y`) decodes y (an alias of
/// `qdsl_x` when the layouts are equal), `qdsl_out` encodes y from f64 reals.
pub(crate) fn codec_namespaces(
    y: &DeviceLayout,
    x: &DeviceLayout,
    compute: HostReal,
    decode_y: bool,
) -> Result<String, UnsupportedFormat> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "namespace qdsl_x {{\n{}}}",
        conversion_source(x, compute, Direction::Decode)?
    );
    if decode_y && x == y {
        s += "namespace qdsl_y = qdsl_x;\n";
    } else if decode_y {
        let _ = writeln!(
            s,
            "namespace qdsl_y {{\n{}}}",
            conversion_source(y, compute, Direction::Decode)?
        );
    }
    let _ = writeln!(
        s,
        "namespace qdsl_out {{\n{}}}",
        conversion_source(y, HostReal::F64, Direction::Encode)?
    );
    Ok(s)
}

/// The source of the BLAS kernel `name` with `coefficients`.
fn blas_text(
    y: &DeviceLayout,
    x: &DeviceLayout,
    name: &str,
    coefficients: Coefficients,
) -> Result<String, UnsupportedFormat> {
    if (y.sites, y.stride, y.host_reals) != (x.sites, x.stride, x.host_reals) {
        return Err(UnsupportedFormat {
            format: format!(
                "{} ← {} with different shapes ({} and {} sites, {} and {} reals)",
                y.format, x.format, y.sites, x.sites, y.host_reals, x.host_reals
            ),
        });
    }
    let compute = compute_type(y, x)?;
    let n = y.host_reals;
    let real = compute.cuda_type();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// qdsl device BLAS: y ({}) <- [mode&1] a*x ({}) + [mode&2] b*y, {n} reals per site, computed in {real}.\n\
         // Generated by qdsl-runtime from the device fields' conversion code.",
        y.format, x.format
    );
    s += &codec_namespaces(y, x, compute, true)?;
    let (coefficient_params, outside, inside) = match coefficients {
        Coefficients::Scalar => (
            "double a_re, double a_im, double b_re, double b_im".to_string(),
            format!("const {real} ar = ({real})a_re, ai = ({real})a_im, br = ({real})b_re, bi = ({real})b_im;\n    "),
            String::new(),
        ),
        Coefficients::PerSlice => (
            "const double* __restrict__ coeffs, int slice_sites".to_string(),
            String::new(),
            format!("const double* cf = coeffs + 4 * (site / slice_sites); // this site's slice\n        \
                     const {real} ar = ({real})cf[0], ai = ({real})cf[1], br = ({real})cf[2], bi = ({real})cf[3];\n        "),
        ),
    };
    let _ = write!(
        s,
        "extern \"C\" __global__ void {name}(const unsigned char* __restrict__ x, const float* __restrict__ xn, unsigned char* y, float* yn, {coefficient_params}, int mode, int sites, int stride, int* status) {{\n    \
         {outside}int bad = 0;\n    \
         for (int site = blockIdx.x * blockDim.x + threadIdx.x; site < sites; site += gridDim.x * blockDim.x) {{\n        \
         {inside}{real} u[{n}], v[{n}];\n        \
         double r[{n}];\n        \
         if (mode & {READ_X}) qdsl_x::qdsl_decode_record(x, xn, site, 0, stride, u, &bad);\n        \
         if (mode & {READ_Y}) qdsl_y::qdsl_decode_record(y, yn, site, 0, stride, v, &bad);\n        \
         for (int k = 0; k < {n}; k += 2) {{\n            \
         {real} re = 0, im = 0;\n            \
         if (mode & {READ_X}) {{ re += ar * u[k] - ai * u[k + 1]; im += ar * u[k + 1] + ai * u[k]; }}\n            \
         if (mode & {READ_Y}) {{ re += br * v[k] - bi * v[k + 1]; im += br * v[k + 1] + bi * v[k]; }}\n            \
         r[k] = (double)re; r[k + 1] = (double)im;\n        }}\n        \
         qdsl_out::qdsl_encode_record(r, y, yn, site, 0, stride, &bad);\n    }}\n    \
         if (bad) atomicOr(status, bad);\n}}\n"
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::codegen::OPTIONS;
    use crate::jit::Arch;

    fn layout(format: FermionFormat, reals: usize) -> DeviceLayout {
        DeviceLayout::new(DeviceFormat::Fermion(format), reals, 100).unwrap()
    }

    /// The formats of device Krylov vectors.
    const FORMATS: [FermionFormat; 6] = [
        FermionFormat::F64,
        FermionFormat::F32,
        FermionFormat::FIXED16,
        FermionFormat::F16,
        FermionFormat::PACKED20,
        FermionFormat::PACKED30,
    ];

    /// f64 when either side is f64; f32 between narrow formats; the names say y, x, reals.
    #[test]
    fn compute_types_and_names() {
        let (d, s, q) = (
            layout(FermionFormat::F64, 24),
            layout(FermionFormat::F32, 24),
            layout(FermionFormat::FIXED16, 24),
        );
        assert_eq!(compute_type(&d, &q).unwrap(), HostReal::F64);
        assert_eq!(compute_type(&q, &d).unwrap(), HostReal::F64);
        assert_eq!(compute_type(&s, &q).unwrap(), HostReal::F32);
        assert_eq!(blas_name(&q, &d), "qdsl_blas_fixed16_f64_24");
        let src = blas_source(&q, &q).unwrap();
        assert!(src.contains("namespace qdsl_y = qdsl_x;"), "{src}");
        assert!(src.contains("const float ar = (float)a_re"), "{src}");
    }

    /// Different shapes and link formats are refused, naming the formats.
    #[test]
    fn mismatched_shapes_are_refused() {
        let e = blas_source(
            &layout(FermionFormat::F32, 24),
            &layout(FermionFormat::F64, 6),
        )
        .unwrap_err();
        assert!(e.to_string().contains("24 and 6 reals"), "{e}");
    }

    /// Packed vectors: packed20 computes in f32 beside itself and f32, packed30 in f64
    /// (beside anything); both embed the group codec of the device fields.
    #[test]
    fn packed_compute_types() {
        let (p20, p30, s) = (
            layout(FermionFormat::PACKED20, 24),
            layout(FermionFormat::PACKED30, 24),
            layout(FermionFormat::F32, 24),
        );
        assert_eq!(compute_type(&p20, &p20).unwrap(), HostReal::F32);
        assert_eq!(compute_type(&p20, &s).unwrap(), HostReal::F32);
        assert_eq!(compute_type(&p30, &p30).unwrap(), HostReal::F64);
        assert_eq!(compute_type(&s, &p30).unwrap(), HostReal::F64);
        let src = blas_source(&p20, &s).unwrap();
        assert!(
            src.contains("qdsl_pack(") && src.contains("qdsl_unpack("),
            "{src}"
        );
    }

    /// The per-slice BLAS kernel differs from the scalar one only in where the
    /// coefficients come from, and NVRTC compiles it and the per-slice reductions for
    /// every vector format, Wilson and staggered (skipped where libnvrtc is absent).
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn per_slice_kernels_compile_for_sm_90() {
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        let opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
        for reals in [24, 6] {
            for f in FORMATS {
                let (y, x) = (layout(f, reals), layout(FermionFormat::F64, reals));
                for (y, x) in [(y, y), (y, x)] {
                    let p = slice_blas_program(&y, &x).unwrap();
                    assert!(p.source.contains("coeffs + 4 * (site / slice_sites)"));
                    assert!(!p.source.contains("a_re"), "{}", p.name);
                    let ptx = jit
                        .compile(&p.name, &p.source, Arch::SM_90, &opts)
                        .unwrap_or_else(|e| panic!("{e}\n{}", p.source));
                    assert!(ptx.ptx.contains(&format!(".entry {}", p.name)));
                }
                let r = crate::device::codegen::slice_reduction_program(&layout(f, reals)).unwrap();
                let ptx = jit
                    .compile(&r.name, &r.source, Arch::SM_90, &opts)
                    .unwrap_or_else(|e| panic!("{e}\n{}", r.source));
                for k in &r.kernels {
                    assert!(
                        ptx.ptx.contains(&format!(".entry {}", k.name)),
                        "{}",
                        k.name
                    );
                }
            }
        }
    }

    /// NVRTC compiles the kernel of every pair of vector formats, Wilson and staggered
    /// (skipped where libnvrtc is absent).
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn every_blas_kernel_compiles_for_sm_90() {
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        let opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
        for reals in [24, 6] {
            for fy in FORMATS {
                for fx in FORMATS {
                    let (y, x) = (layout(fy, reals), layout(fx, reals));
                    let (name, src) = (blas_name(&y, &x), blas_source(&y, &x).unwrap());
                    let ptx = jit
                        .compile(&name, &src, Arch::SM_90, &opts)
                        .unwrap_or_else(|e| panic!("{e}\n{src}"));
                    assert!(ptx.ptx.contains(&format!(".entry {name}")), "{name}");
                }
            }
        }
    }
}
