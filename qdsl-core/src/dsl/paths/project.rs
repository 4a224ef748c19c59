//! The CUDA C++ of the HISQ U(3) projection W = V (V†V)^{−1/2}, link by link, in place:
//! the closed form of [`crate::math::ColourMatrix::polar_u3`] (eigenvalues of Q = V†V
//! from the trigonometric solution of its characteristic cubic, the smallest one as
//! |det V|²/(g₀g₁), then (V†V)^{−1/2} = f₀ + f₁Q + f₂Q² by Cayley–Hamilton) and its one
//! Newton step W = (W₀ + W₀^{−†})/2, so that the GPU and the CPU compute the same thing.
//!
//! `u3_project(links, bad, nlinks, threshold)`: one thread per link (18 reals each);
//! a link whose V is not finite or whose g₂/g₀ ≤ `threshold` is left as it is and flagged
//! `bad[i] = 1`. `u3_project_pullback` ([`project_pullback_source`]) is its derivative,
//! the closed form of [`crate::dsl::paths::fermion_force::polar`], sharing the
//! eigenvalue code (`polar_core`).

use crate::dsl::emit::cuda::library;
use crate::dsl::DslError;
use crate::real::Real;

/// The kernel's name.
pub const PROJECT_KERNEL: &str = "u3_project";

/// The relative threshold on g₂/g₀ below which a link counts as singular for real type
/// `T`: 4√ε, as on the CPU.
pub fn singular_threshold<T: Real>() -> f64 {
    4.0 * T::epsilon().to_f64().sqrt()
}

/// The device functions both kernels share, after [`library::MATRIX`]: `polar_core`
/// (V scaled to ‖V‖_F = 1, Q = V†V, its eigenvalues from the trigonometric solution of
/// the characteristic cubic, the smallest as |det V|²/(g₀g₁)) and
/// `inverse_sqrt_coefficients` (u, v, w and f₀, f₁, f₂), as
/// [`crate::math::ColourMatrix::polar_u3`] computes them.
const POLAR_CORE: &str = r#"// V scaled in place to ||V||_F = 1 (*scale: the factor divided out), Q = V^+ V and its
// eigenvalues g0 >= g1 >= g2; false for a V that is zero, not finite or singular
// (g2 <= threshold g0)
__device__ bool polar_core(mat& v, mat& q, real* scale, real g[3], real threshold) {
    real big = 0;
    for (int k = 0; k < 9; k++) big = fmax(big, fmax(fabs(v.re[k]), fabs(v.im[k])));
    if (!(big > 0) || !isfinite(big)) return false;
    real n2 = 0;
    for (int k = 0; k < 9; k++) {
        v.re[k] /= big; v.im[k] /= big;
        n2 += v.re[k] * v.re[k] + v.im[k] * v.im[k];
    }
    real inv = rsqrt(n2);
    for (int k = 0; k < 9; k++) { v.re[k] *= inv; v.im[k] *= inv; }
    *scale = big * sqrt(n2);
    q = adjoint_mul(v, v);
    // eigenvalues g0 >= g1 >= g2 of the hermitian Q
    real m = (q.re[0] + q.re[4] + q.re[8]) / (real)3;
    mat a = q;
    for (int i = 0; i < 3; i++) a.re[4 * i] -= m;
    real p = 0;
    for (int k = 0; k < 9; k++) p += a.re[k] * a.re[k] + a.im[k] * a.im[k];
    p /= (real)6;
    real g0 = m, g1 = m;
    if (p > 0) {
        real det_a = 0, cre, cim;
        for (int j = 0; j < 3; j++) {
            cofactor(a, 0, j, &cre, &cim);
            det_a += a.re[j] * cre - a.im[j] * cim;
        }
        real sp = sqrt(p);
        real r = fmin(fmax(det_a / (2 * p * sp), (real)-1), (real)1);
        real phi = acos(r) / (real)3;
        const real third = (real)2.0943951023931954923;
        g0 = m + 2 * sp * cos(phi);
        g1 = m + 2 * sp * cos(phi + 2 * third);
    }
    real dre = 0, dim = 0, cre, cim;
    for (int j = 0; j < 3; j++) {
        cofactor(v, 0, j, &cre, &cim);
        dre += v.re[j] * cre - v.im[j] * cim;
        dim += v.re[j] * cim + v.im[j] * cre;
    }
    real g2 = (dre * dre + dim * dim) / (g0 * g1);
    g[0] = g0; g[1] = g1; g[2] = g2;
    return g2 > threshold * g0;
}
// x = (u, v, w) of s_k = sqrt(g_k) and f of (V^+V)^(-1/2) = f0 + f1 Q + f2 Q^2
__device__ void inverse_sqrt_coefficients(const real g[3], real x[3], real f[3]) {
    real s0 = sqrt(g[0]), s1 = sqrt(g[1]), s2 = sqrt(g[2]);
    real u = s0 + s1 + s2, vv = s0 * s1 + s0 * s2 + s1 * s2, w = s0 * s1 * s2;
    real d = w * (u * vv - w);
    f[0] = (u * vv * vv - w * (u * u + vv)) / d; f[1] = (2 * u * vv - u * u * u - w) / d; f[2] = u / d;
    x[0] = u; x[1] = vv; x[2] = w;
}
"#;

/// The projection kernel, after [`POLAR_CORE`].
const SOURCE: &str = r#"extern "C" __global__ void u3_project(real* links, int* bad, int nlinks, real threshold) {
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= nlinks) return;
    mat v = load(links + 18 * l), q;
    real scale, g[3], x[3], f[3];
    if (!polar_core(v, q, &scale, g, threshold)) { bad[l] = 1; return; }
    inverse_sqrt_coefficients(g, x, f);
    mat q2 = mul(q, q);
    mat h;
    for (int k = 0; k < 9; k++) {
        h.re[k] = f[1] * q.re[k] + f[2] * q2.re[k];
        h.im[k] = f[1] * q.im[k] + f[2] * q2.im[k];
    }
    for (int i = 0; i < 3; i++) h.re[4 * i] += f[0];
    mat w0 = mul(v, h);
    // one Newton step: W = (W0 + W0^{-+})/2, (W0^{-+})_ij = conj(C_ij / det W0)
    real wre = 0, wim = 0, cre, cim;
    for (int j = 0; j < 3; j++) {
        cofactor(w0, 0, j, &cre, &cim);
        wre += w0.re[j] * cre - w0.im[j] * cim;
        wim += w0.re[j] * cim + w0.im[j] * cre;
    }
    real dn = wre * wre + wim * wim;
    mat out;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            cofactor(w0, i, j, &cre, &cim);
            // C / det = C conj(det) / |det|^2, then conjugated
            real qre = (cre * wre + cim * wim) / dn, qim = (cim * wre - cre * wim) / dn;
            out.re[3 * i + j] = (real)0.5 * (w0.re[3 * i + j] + qre);
            out.im[3 * i + j] = (real)0.5 * (w0.im[3 * i + j] - qim);
        }
    store(links + 18 * l, out);
}
"#;

/// The pullback kernel's name.
pub const PROJECT_PULLBACK_KERNEL: &str = "u3_project_pullback";

/// The derivative kernel, after [`POLAR_CORE`]: the steps of
/// [`crate::dsl::paths::fermion_force::pullback_polar_u3`] (its module states the
/// formula), one thread per link.
const PULLBACK_SOURCE: &str = r#"// Re tr[a b]
__device__ __forceinline__ real re_trace_mul(const mat& a, const mat& b) {
    real t = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) t += a.re[3 * i + k] * b.re[3 * k + i] - a.im[3 * i + k] * b.im[3 * k + i];
    return t;
}
// c0 a + c1 b + c2 c + d 1
__device__ __forceinline__ mat combine(real c0, const mat& a, real c1, const mat& b, real c2, const mat& c, real d) {
    mat m;
    for (int k = 0; k < 9; k++) {
        m.re[k] = c0 * a.re[k] + c1 * b.re[k] + c2 * c.re[k];
        m.im[k] = c0 * a.im[k] + c1 * b.im[k] + c2 * c.im[k];
    }
    for (int i = 0; i < 3; i++) m.re[4 * i] += d;
    return m;
}
// grad_v = G_V of W = V (V^+V)^(-1/2) given G_W = grad_w; a singular V is flagged
extern "C" __global__ void u3_project_pullback(real* grad_v, const real* links, const real* grad_w, int* bad, int nlinks, real threshold) {
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= nlinks) return;
    mat v = load(links + 18 * l), q;
    real scale, g[3], x[3], f[3];
    if (!polar_core(v, q, &scale, g, threshold)) { bad[l] = 1; return; }
    inverse_sqrt_coefficients(g, x, f);
    const real u = x[0], vs = x[1], w = x[2], d = w * (u * vs - w);
    const mat gw = load(grad_w + 18 * l);
    const mat q2 = mul(q, q);
    const mat b = adjoint_mul(gw, v);
    // G_W R, R = f0 + f1 Q + f2 Q^2
    mat t = mul(gw, combine(f[1], q, f[2], q2, 0, q, f[0]));
    // the adjoints of f_i, then of u, v, w, then of c1, c2, c3
    const real a[3] = {b.re[0] + b.re[4] + b.re[8], re_trace_mul(b, q), re_trace_mul(b, q2)};
    const real dd[3] = {w * vs, w * u, u * vs - 2 * w};
    const real dn[3][3] = {{vs * vs - 2 * w * u, 2 * u * vs - w, -(u * u + vs)},
                           {2 * vs - 3 * u * u, 2 * u, -1}, {1, 0, 0}};
    real bar[3];
    for (int k = 0; k < 3; k++) {
        real s = 0;
        for (int i = 0; i < 3; i++) s += a[i] * (dn[i][k] - f[i] * dd[k]);
        bar[k] = s / d;
    }
    const real vbar = bar[1] + bar[0] / u, e = 2 * (u * vs - w);
    const real c1bar = bar[0] / (2 * u) + vbar * w / e, c2bar = vbar * u / e;
    const real c3bar = (bar[2] + 2 * u * u * vbar / e) / (2 * w);
    const real c1 = q.re[0] + q.re[4] + q.re[8];
    const real c2 = (c1 * c1 - (q2.re[0] + q2.re[4] + q2.re[8])) / 2;
    // M = c1bar + c2bar (c1 - Q) + c3bar (Q^2 - c1 Q + c2) + f1 B + f2 (Q B + B Q)
    mat m = combine(c3bar, q2, -(c2bar + c3bar * c1), q, f[1], b, c1bar + c2bar * c1 + c3bar * c2);
    m = add(m, combine(f[2], add(mul(q, b), mul(b, q)), 0, q, 0, q, 0));
    // G_V = [G_W R + V (M + M^+)] / scale
    t = add(t, mul(v, add(m, adjoint(m))));
    const real inv = (real)1 / scale;
    for (int k = 0; k < 9; k++) { t.re[k] *= inv; t.im[k] *= inv; }
    store(grad_v + 18 * l, t);
}
"#;

/// The CUDA C++ source of the projection kernel for real type `T` (`float` or `double`).
pub fn project_source<T: Real>() -> Result<String, DslError> {
    Ok(format!(
        "// HISQ U(3) projection W = V (V^+V)^(-1/2), one Newton step\ntypedef {} real;\n{}{POLAR_CORE}{SOURCE}",
        real_name::<T>(PROJECT_KERNEL)?,
        library::MATRIX
    ))
}

/// The CUDA C++ source of the projection's derivative for real type `T`:
/// `u3_project_pullback(grad_v, links, grad_w, bad, nlinks, threshold)`, one thread per
/// link (18 reals each, the host layout): G_V of W = V (V†V)^{−1/2} given G_W; a link
/// whose V the projection would reject is flagged `bad[i] = 1` and its G_V not written.
pub fn project_pullback_source<T: Real>() -> Result<String, DslError> {
    Ok(format!(
        "// the derivative of the HISQ U(3) projection W = V (V^+V)^(-1/2)\ntypedef {} real;\n{}{POLAR_CORE}{PULLBACK_SOURCE}",
        real_name::<T>(PROJECT_PULLBACK_KERNEL)?,
        library::MATRIX
    ))
}

/// `float` or `double`; an error naming `kernel` for any other real type.
fn real_name<T: Real>(kernel: &str) -> Result<&'static str, DslError> {
    match T::BYTES {
        4 => Ok("float"),
        8 => Ok("double"),
        other => Err(DslError::UnsupportedVariant {
            kernel: kernel.into(),
            knob: "precision",
            reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sources share one `polar_core` and declare their kernels with the arguments
    /// the runtime passes.
    #[test]
    fn the_sources_share_the_eigenvalue_code() {
        for src in [
            project_source::<f32>().unwrap(),
            project_pullback_source::<f64>().unwrap(),
        ] {
            assert_eq!(src.matches("__device__ bool polar_core(").count(), 1);
        }
        assert!(project_pullback_source::<f32>().unwrap().contains(
            "u3_project_pullback(real* grad_v, const real* links, const real* grad_w, int* bad, int nlinks, real threshold)"
        ));
        assert!(project_source::<f64>()
            .unwrap()
            .contains("typedef double real;"));
    }
}
