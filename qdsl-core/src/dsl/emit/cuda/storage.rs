//! How fields are read and written: the chunked structure-of-arrays loads and stores
//! ([`crate::dsl::layout`]) and the inline gauge reconstruction.

use super::Src;
use crate::dsl::layout::SoaLayout;

/// The load/store/unpack helpers every kernel source includes after the arithmetic.
pub(super) fn storage_helpers(src: &mut Src) {
    src.0.push_str(
        r#"// Chunk c of site i is element c * stride + i (qdsl_core::dsl::layout).
template <int N> __device__ __forceinline__ void load(real* r, const float4* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float4 v = p[c * stride + i]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
}
template <int N> __device__ __forceinline__ void load(real* r, const float2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const float2 v = p[c * stride + i]; r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N> __device__ __forceinline__ void load(real* r, const double2* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { const double2 v = p[c * stride + i]; r[2 * c] = v.x; r[2 * c + 1] = v.y; }
}
template <int N> __device__ __forceinline__ void load(real* r, const double* __restrict__ p, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { r[c] = p[c * stride + i]; }
}
template <int N> __device__ __forceinline__ void store(float4* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_float4(r[4 * c], r[4 * c + 1], r[4 * c + 2], r[4 * c + 3]); }
}
template <int N> __device__ __forceinline__ void store(float2* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_float2(r[2 * c], r[2 * c + 1]); }
}
template <int N> __device__ __forceinline__ void store(double2* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = make_double2(r[2 * c], r[2 * c + 1]); }
}
template <int N> __device__ __forceinline__ void store(double* __restrict__ p, const real* r, int i, int stride) {
#pragma unroll
    for (int c = 0; c < N; c++) { p[c * stride + i] = r[c]; }
}

// Link U (3 x 3, row-major) from its stored reals; recon 12 rebuilds row 2 = conj(row 0 x row 1).
template <bool RECON12> __device__ __forceinline__ void unpack_link(cplx (&m)[3][3], const real* g) {
#pragma unroll
    for (int a = 0; a < (RECON12 ? 2 : 3); a++) {
#pragma unroll
        for (int b = 0; b < 3; b++) { m[a][b] = {g[6 * a + 2 * b], g[6 * a + 2 * b + 1]}; }
    }
    if (RECON12) {
#pragma unroll
        for (int b = 0; b < 3; b++) {
            const int b1 = (b + 1) % 3, b2 = (b + 2) % 3;
            const cplx x = c_sub(c_mul(m[0][b1], m[1][b2]), c_mul(m[0][b2], m[1][b1]));
            m[2][b] = {x.re, -x.im};
        }
    }
}

"#,
    );
}

/// The kernel parameters that carry a field's data: its chunk pointer `<base>` (the
/// stride parameter `stride_<base without "f_">` comes with the other integers).
pub(super) fn pointer_params(base: &str, layout: &SoaLayout, output: bool) -> Vec<String> {
    let ty = layout.cuda_type();
    let constness = if output { "" } else { "const " };
    vec![format!("{constness}{ty}* __restrict__ {base}")]
}

/// The stride parameter of the field whose pointer is `base` (`f_psi` → `stride_psi`,
/// `xpay_x` → `stride_xpay_x`).
fn stride_of(base: &str) -> String {
    format!("stride_{}", base.strip_prefix("f_").unwrap_or(base))
}

/// Declares `real <dest>[reals]` and loads site `site` of the field at `base` into it,
/// in the compute type.
pub(super) fn load_site(
    s: &mut Src,
    indent: usize,
    base: &str,
    layout: &SoaLayout,
    site: &str,
    dest: &str,
) {
    s.line(indent, &format!("real {dest}[{}];", layout.reals));
    s.line(
        indent,
        &format!(
            "load<{}>({dest}, {base}, {site}, {});",
            layout.chunks(),
            stride_of(base)
        ),
    );
}

/// Declares `cplx m[3][3]` and loads into it the link U_μ at checkerboard site `site` of
/// the gauge field at `base`, reconstructing compressed links.
pub(super) fn load_link(
    s: &mut Src,
    indent: usize,
    base: &str,
    layout: &SoaLayout,
    mu: usize,
    site: &str,
) {
    let stride = stride_of(base);
    s.line(
        indent,
        &format!("real g[{}];", layout.chunks() * layout.reals_per_chunk()),
    );
    s.line(
        indent,
        &format!(
            "load<{c}>(g, {base} + {mu} * {c} * {stride}, {site}, {stride});",
            c = layout.chunks()
        ),
    );
    s.line(indent, "cplx m[3][3];");
    s.line(indent, "unpack_link<RECON12>(m, g);");
}

/// Stores the reals `src` (compute type) to site `site` of the field at `base`.
pub(super) fn store_site(
    s: &mut Src,
    indent: usize,
    base: &str,
    layout: &SoaLayout,
    site: &str,
    src: &str,
) {
    s.line(
        indent,
        &format!(
            "store<{}>({base}, {src}, {site}, {});",
            layout.chunks(),
            stride_of(base)
        ),
    );
}
