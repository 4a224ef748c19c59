//! The CUDA device functions of recon 8 ([`Compression::Recon8`]): the encoder's
//! parameters with the SU(3) check, and the reconstruction, written operation for
//! operation as qdsl-core's `format::link::recon` (`params_8`, `reconstruct_8`).
//!
//! Encode (in `double`, V = the link, sign +1):
//!
//! ```text
//! check: ‖V†V − 1‖_F ≤ tol and |det V − 1| ≤ tol (tol = SuCheck::DEFAULT_TOLERANCE),
//!        det V = Σ_k v0k (v1 × v2)_k; otherwise the status bit STATUS_NOT_SU3
//! p = [ atan2(Im v00, Re v00)/π, atan2(Im v20, Re v20)/π, v01, v02, v10 ]
//! ```
//!
//! Decode (in `host_t`), as documented on [`Compression::Recon8`]: r² = |v01|² + |v02|²,
//! v00 = e^{iπp0}·√max(0, 1 − r²), v20 = e^{iπp1}·√max(0, r² − |v10|²), and the 2×2 block
//! from unitarity and det V = 1 (conj v00 for r² = 0). Only sin/cos/atan2 are not
//! reproduced bit for bit (no two math libraries round them alike).
//!
//! [`Compression::Recon8`]: qdsl_core::format::Compression::Recon8

use super::{constant, HostReal};
use qdsl_core::format::SuCheck;
use std::f64::consts::PI;

/// `qdsl_recon8_params(const double* r, double* p, int* bad)`: the 8 stored reals `p` of
/// the link whose 18 row-major reals are `r`; sets `QDSL_NOT_SU3` in `*bad` when the link
/// is not SU(3) to [`SuCheck::DEFAULT_TOLERANCE`] (or not finite).
pub(super) fn params_source() -> String {
    let pi = constant(PI, HostReal::F64);
    let tol = constant(SuCheck::DEFAULT_TOLERANCE, HostReal::F64);
    format!(
        "// Recon 8: p = [arg(v00)/pi, arg(v20)/pi, v01, v02, v10]; V must be SU(3).\n\
         __device__ void qdsl_recon8_params(const double* r, double* p, int* bad) {{\n    \
         // ||V^dagger V - 1||_F^2 = sum_ij |sum_k conj(V_ki) V_kj - delta_ij|^2.\n    \
         double dev2 = 0.0;\n    \
         for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) {{\n        \
         double re = 0.0, im = 0.0;\n        \
         for (int k = 0; k < 3; k++) {{\n            \
         const double ar = r[2 * (3 * k + i)], ai = r[2 * (3 * k + i) + 1];\n            \
         const double br = r[2 * (3 * k + j)], bi = r[2 * (3 * k + j) + 1];\n            \
         re += ar * br + ai * bi;\n            im += ar * bi - ai * br;\n        }}\n        \
         if (i == j) re -= 1.0;\n        \
         dev2 += re * re + im * im;\n    }}\n    \
         // det V = sum_k v0k (v1 x v2)_k, (v1 x v2)_k = v1i v2j - v1j v2i, (i, j) = (k+1, k+2) mod 3.\n    \
         double dr = 0.0, di = 0.0;\n    \
         for (int k = 0; k < 3; k++) {{\n        \
         const int i = (k + 1) % 3, j = (k + 2) % 3;\n        \
         const double cr = (r[6 + 2 * i] * r[12 + 2 * j] - r[7 + 2 * i] * r[13 + 2 * j]) - (r[6 + 2 * j] * r[12 + 2 * i] - r[7 + 2 * j] * r[13 + 2 * i]);\n        \
         const double ci = (r[6 + 2 * i] * r[13 + 2 * j] + r[7 + 2 * i] * r[12 + 2 * j]) - (r[6 + 2 * j] * r[13 + 2 * i] + r[7 + 2 * j] * r[12 + 2 * i]);\n        \
         dr += r[2 * k] * cr - r[2 * k + 1] * ci;\n        \
         di += r[2 * k] * ci + r[2 * k + 1] * cr;\n    }}\n    \
         const double tol = {tol};\n    \
         if (!(sqrt(dev2) <= tol && hypot(dr - 1.0, di) <= tol)) *bad |= QDSL_NOT_SU3;\n    \
         const double pi = {pi};\n    \
         p[0] = atan2(r[1], r[0]) / pi;\n    \
         p[1] = atan2(r[13], r[12]) / pi;\n    \
         for (int k = 2; k < 8; k++) p[k] = r[k];\n}}\n"
    )
}

/// `qdsl_recon8_rebuild(host_t* r)`: overwrites the 8 stored reals in `r[0..8]` with the
/// 18 row-major reals of the rebuilt link, computed in `host`'s type.
pub(super) fn rebuild_source(host: HostReal) -> String {
    let (sqrt, sin, cos, fmax) = match host {
        HostReal::F64 => ("sqrt", "sin", "cos", "fmax"),
        HostReal::F32 => ("sqrtf", "sinf", "cosf", "fmaxf"),
    };
    let pi = constant(PI, host);
    let mut s = String::from(
        "struct qdsl_c { host_t re, im; };\n\
         __device__ __forceinline__ qdsl_c qdsl_mul(qdsl_c a, qdsl_c b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }\n\
         __device__ __forceinline__ qdsl_c qdsl_add(qdsl_c a, qdsl_c b) { return {a.re + b.re, a.im + b.im}; }\n\
         __device__ __forceinline__ qdsl_c qdsl_sub(qdsl_c a, qdsl_c b) { return {a.re - b.re, a.im - b.im}; }\n\
         __device__ __forceinline__ qdsl_c qdsl_neg(qdsl_c a) { return {-a.re, -a.im}; }\n\
         __device__ __forceinline__ qdsl_c qdsl_cj(qdsl_c a) { return {a.re, -a.im}; }\n\
         __device__ __forceinline__ qdsl_c qdsl_scale(qdsl_c a, host_t t) { return {a.re * t, a.im * t}; }\n",
    );
    s += &format!(
        "__device__ void qdsl_recon8_rebuild(host_t* r) {{\n    \
         host_t p[8];\n    for (int k = 0; k < 8; k++) p[k] = r[k];\n    \
         const host_t zero = (host_t)0, one = (host_t)1, pi = {pi};\n    \
         const qdsl_c v01 = {{p[2], p[3]}}, v02 = {{p[4], p[5]}}, v10 = {{p[6], p[7]}};\n    \
         const host_t r2 = p[2] * p[2] + p[3] * p[3] + p[4] * p[4] + p[5] * p[5];\n    \
         const host_t t0 = pi * p[0], t2 = pi * p[1];\n    \
         const qdsl_c v00 = qdsl_scale({{{cos}(t0), {sin}(t0)}}, {sqrt}({fmax}(one - r2, zero)));\n    \
         const qdsl_c v20 = qdsl_scale({{{cos}(t2), {sin}(t2)}}, {sqrt}({fmax}(r2 - (p[6] * p[6] + p[7] * p[7]), zero)));\n    \
         qdsl_c v11, v12, v21, v22;\n    \
         if (r2 == zero) {{\n        \
         v11 = qdsl_cj(v00);\n        v12 = {{zero, zero}};\n        v21 = {{zero, zero}};\n        v22 = {{one, zero}};\n    \
         }} else {{\n        \
         const host_t inv = one / r2;\n        \
         const qdsl_c a = qdsl_mul(qdsl_cj(v00), v10), b = qdsl_mul(qdsl_cj(v00), v20);\n        \
         v11 = qdsl_scale(qdsl_neg(qdsl_add(qdsl_mul(qdsl_cj(v20), qdsl_cj(v02)), qdsl_mul(a, v01))), inv);\n        \
         v12 = qdsl_scale(qdsl_sub(qdsl_mul(qdsl_cj(v20), qdsl_cj(v01)), qdsl_mul(a, v02)), inv);\n        \
         v21 = qdsl_scale(qdsl_sub(qdsl_mul(qdsl_cj(v10), qdsl_cj(v02)), qdsl_mul(b, v01)), inv);\n        \
         v22 = qdsl_scale(qdsl_neg(qdsl_add(qdsl_mul(qdsl_cj(v10), qdsl_cj(v01)), qdsl_mul(b, v02))), inv);\n    }}\n    \
         const qdsl_c v[9] = {{v00, v01, v02, v10, v11, v12, v20, v21, v22}};\n    \
         for (int k = 0; k < 9; k++) {{ r[2 * k] = v[k].re; r[2 * k + 1] = v[k].im; }}\n}}\n"
    );
    s
}
