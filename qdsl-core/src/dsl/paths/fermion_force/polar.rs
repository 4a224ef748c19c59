//! The derivative of the HISQ U(3) projection W = V (V†V)^{−1/2} in closed form: the
//! Cayley–Hamilton form of [`ColourMatrix::polar_u3`] differentiated in reverse mode, as
//! the GPU kernel of [`crate::dsl::paths::project::project_pullback_source`] computes it
//! (the same steps, line by line).
//!
//! **Forward.** With V̂ = V/κ (κ = ‖V‖_F; W does not change), Q = V̂†V̂ with eigenvalues
//! g_k, s_k = √g_k, the symmetric functions u = s₀ + s₁ + s₂, v = s₀s₁ + s₀s₂ + s₁s₂,
//! w = s₀s₁s₂ and d = w(uv − w):
//!
//! R = Q^{−1/2} = f₀ + f₁Q + f₂Q²,  f₀ = n₀/d = [uv² − w(u² + v)]/d,
//! f₁ = n₁/d = [2uv − u³ − w]/d,  f₂ = n₂/d = u/d,  W = V̂ R.
//!
//! **Reverse.** For dS = Re tr[G_W† dW] and B = G_W† V̂ (R is hermitian):
//!
//! dS = Re tr[(G_W R)† dV̂] + Re tr[B dR],
//! Re tr[B dR] = Σ_i a_i df_i + Re tr[(f₁B + f₂(QB + BQ)) dQ],  a_i = Re tr[B Q^i].
//!
//! The f_i depend on Q through u, v, w only, and those through the invariants
//! c₁ = tr Q, c₂ = (c₁² − tr Q²)/2, c₃ = det Q = w² (u² = c₁ + 2v, v² = c₂ + 2wu), whose
//! differentials are traces against dQ: dc₁ = tr dQ, dc₂ = tr[(c₁ − Q) dQ],
//! dc₃ = tr[adj(Q) dQ], adj(Q) = Q² − c₁Q + c₂ (Cayley–Hamilton). So, with
//! x̄ = Σ_i a_i (∂n_i/∂x − f_i ∂d/∂x)/d for x = u, v, w,
//!
//! v̄' = v̄ + ū/u,  e = 2(uv − w),  c̄₁ = ū/(2u) + v̄' w/e,  c̄₂ = v̄' u/e,
//! c̄₃ = (w̄ + 2u² v̄'/e)/(2w),
//!
//! Σ_i a_i df_i = Re tr[(c̄₁ + c̄₂(c₁ − Q) + c̄₃ adj Q) dQ], and with dQ = dV̂†V̂ + V̂†dV̂
//! and M = c̄₁ + c̄₂(c₁ − Q) + c̄₃ adj Q + f₁B + f₂(QB + BQ):
//!
//! G_V = [G_W R + V̂ (M + M†)]/κ.
//!
//! No step divides by a difference of eigenvalues (uv − w is positive: it equals
//! (s₀ + s₁)(s₀ + s₂)(s₁ + s₂)), so degenerate eigenvalues (V unitary) need no special
//! case — the reason MILC's and QUDA's HISQ forces differentiate the f_i rather than an
//! eigen-decomposition. The forward Newton step W ← (W + W^{−†})/2 has the identity as
//! its derivative on U(3) (dW = −W dW† W there), so it does not enter.
//!
//! References: the Cayley–Hamilton form of (V†V)^{−1/2} and the derivative of its f_i,
//! A. Hasenfratz, R. Hoffmann and S. Schaefer, JHEP 05 (2007) 029 [hep-lat/0702028];
//! its use in the HISQ force, A. Bazavov et al. (MILC), Phys. Rev. D 82 (2010) 074501
//! [arXiv:1004.0342]; QUDA computes the same derivative in its unitarize-force kernel
//! (include/kernels/unitarize_force.cuh, with coefficients b_ij of the f_i's
//! derivatives). The derivation through c₁, c₂, c₃ above is this code's own.

use crate::math::{inverse_sqrt_coefficients, ColourMatrix, MatrixError, PolarCore};
use crate::real::Real;
use num_complex::Complex;

/// The gradient G_V with respect to V of a function of W = V (V†V)^{−1/2}, given its
/// gradient `grad_w` with respect to W: dS = Re tr[G_W† dW] = Re tr[G_V† dV] (see the
/// module documentation for the formula).
///
/// Errors: those of [`ColourMatrix::polar_u3`] for a V that is not finite or singular.
pub fn pullback_polar_u3<T: Real>(
    v: &ColourMatrix<T>,
    grad_w: &ColourMatrix<T>,
) -> Result<ColourMatrix<T>, MatrixError> {
    let PolarCore {
        v: vh,
        scale,
        q,
        eigenvalues,
    } = v.polar_core()?;
    let [s0, s1, s2] = eigenvalues.map(T::sqrt);
    let [f0, f1, f2] = inverse_sqrt_coefficients(eigenvalues);
    let u = s0 + s1 + s2;
    let vs = s0 * s1 + s0 * s2 + s1 * s2;
    let w = s0 * s1 * s2;
    let d = w * (u * vs - w);
    let q2 = q * q;
    let r = with_diagonal(q.scale(f1) + q2.scale(f2), f0);
    let b = grad_w.adjoint_mul(&vh);
    let a = [b.trace().re, (b * q).trace().re, (b * q2).trace().re];
    let [ubar, vbar, wbar] = symmetric_function_adjoints([u, vs, w], [f0, f1, f2], d, a);
    let two = T::from_f64(2.0);
    let vbar = vbar + ubar / u;
    let e = two * (u * vs - w);
    let c1bar = ubar / (two * u) + vbar * w / e;
    let c2bar = vbar * u / e;
    let c3bar = (wbar + two * u * u * vbar / e) / (two * w);
    let c1 = q.trace().re;
    let c2 = (c1 * c1 - q2.trace().re) / two;
    // M = c̄₁ + c̄₂(c₁ − Q) + c̄₃(Q² − c₁Q + c₂) + f₁B + f₂(QB + BQ).
    let m = with_diagonal(
        q2.scale(c3bar) - q.scale(c2bar + c3bar * c1) + b.scale(f1) + (q * b + b * q).scale(f2),
        c1bar + c2bar * c1 + c3bar * c2,
    );
    Ok((*grad_w * r + vh * (m + m.adjoint())).scale(scale.recip()))
}

/// [ū, v̄, w̄]: x̄ = Σ_i a_i ∂f_i/∂x for f_i = n_i/d (the module documentation's n_i, d) at
/// x = (u, v, w), given the values f and d.
fn symmetric_function_adjoints<T: Real>(x: [T; 3], f: [T; 3], d: T, a: [T; 3]) -> [T; 3] {
    let [u, v, w] = x;
    let (one, two, three) = (T::one(), T::from_f64(2.0), T::from_f64(3.0));
    // ∂d/∂x and ∂n_i/∂x, x = u, v, w.
    let dd = [w * v, w * u, u * v - two * w];
    let dn = [
        [v * v - two * w * u, two * u * v - w, -(u * u + v)],
        [two * v - three * u * u, two * u, -one],
        [one, T::zero(), T::zero()],
    ];
    std::array::from_fn(|k| (0..3).map(|i| a[i] * (dn[i][k] - f[i] * dd[k])).sum::<T>() / d)
}

/// m + c·1.
fn with_diagonal<T: Real>(mut m: ColourMatrix<T>, c: T) -> ColourMatrix<T> {
    for i in 0..3 {
        m.0[i][i] += Complex::new(c, T::zero());
    }
    m
}
