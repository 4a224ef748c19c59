//! The CUDA C++ of the HISQ U(3) projection W = V (V†V)^{−1/2}, link by link, in place:
//! the closed form of [`crate::math::ColourMatrix::polar_u3`] (eigenvalues of Q = V†V
//! from the trigonometric solution of its characteristic cubic, the smallest one as
//! |det V|²/(g₀g₁), then (V†V)^{−1/2} = f₀ + f₁Q + f₂Q² by Cayley–Hamilton) and its one
//! Newton step W = (W₀ + W₀^{−†})/2, so that the GPU and the CPU compute the same thing.
//!
//! `u3_project(links, bad, nlinks, threshold)`: one thread per link (18 reals each);
//! a link whose V is not finite or whose g₂/g₀ ≤ `threshold` is left as it is and flagged
//! `bad[i] = 1`.

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

/// The kernel, after [`library::MATRIX`].
const SOURCE: &str = r#"extern "C" __global__ void u3_project(real* links, int* bad, int nlinks, real threshold) {
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= nlinks) return;
    mat v = load(links + 18 * l);
    real big = 0;
    for (int k = 0; k < 9; k++) big = fmax(big, fmax(fabs(v.re[k]), fabs(v.im[k])));
    if (!(big > 0) || !isfinite(big)) { bad[l] = 1; return; }
    real n2 = 0;
    for (int k = 0; k < 9; k++) {
        v.re[k] /= big; v.im[k] /= big;
        n2 += v.re[k] * v.re[k] + v.im[k] * v.im[k];
    }
    real inv = rsqrt(n2);
    for (int k = 0; k < 9; k++) { v.re[k] *= inv; v.im[k] *= inv; }
    mat q = adjoint_mul(v, v);
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
    if (!(g2 > threshold * g0)) { bad[l] = 1; return; }
    real s0 = sqrt(g0), s1 = sqrt(g1), s2 = sqrt(g2);
    real u = s0 + s1 + s2, vv = s0 * s1 + s0 * s2 + s1 * s2, w = s0 * s1 * s2;
    real d = w * (u * vv - w);
    real f0 = (u * vv * vv - w * (u * u + vv)) / d, f1 = (2 * u * vv - u * u * u - w) / d, f2 = u / d;
    mat q2 = mul(q, q);
    mat h;
    for (int k = 0; k < 9; k++) {
        h.re[k] = f1 * q.re[k] + f2 * q2.re[k];
        h.im[k] = f1 * q.im[k] + f2 * q2.im[k];
    }
    for (int i = 0; i < 3; i++) h.re[4 * i] += f0;
    mat w0 = mul(v, h);
    // one Newton step: W = (W0 + W0^{-+})/2, (W0^{-+})_ij = conj(C_ij / det W0)
    real wre = 0, wim = 0;
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

/// The CUDA C++ source of the projection kernel for real type `T` (`float` or `double`).
pub fn project_source<T: Real>() -> Result<String, DslError> {
    let real = match T::BYTES {
        4 => "float",
        8 => "double",
        other => {
            return Err(DslError::UnsupportedVariant {
                kernel: PROJECT_KERNEL.into(),
                knob: "precision",
                reason: format!("expected a 4- or 8-byte real, found {other} bytes"),
            })
        }
    };
    Ok(format!(
        "// HISQ U(3) projection W = V (V^+V)^(-1/2), one Newton step\ntypedef {real} real;\n{}{SOURCE}",
        library::MATRIX
    ))
}
