//! The Wilson-clover family: the site-local clover matrix A(x) (a
//! [`qdsl_core::field::CloverField`]: two hermitian chiral 6 × 6 blocks per site) and the
//! Wilson-clover operator built on it.

use qdsl_macros::stencil;

stencil! {
    /// The Wilson-clover operator in mass normalisation (DeGrand–Rossi γ basis):
    ///
    /// out(x) = A(x) ψ(x) − ½ Σ_μ [ (1 − γ_μ) U_μ(x) ψ(x + μ̂) + (1 + γ_μ) U_μ†(x − μ̂) ψ(x − μ̂) ],
    ///
    /// i.e. M = A − H/2 with H the [`crate::WilsonHop`] and A(x) = (m + 4) + (c_sw/4)·
    /// Σ_{μν} σ_μν F_μν(x) the clover field (any hermitian A, block diagonal in chirality).
    /// γ5 M γ5 = M† for hermitian A. Flops per site: 504 (clover) + 8 × 180 (projected
    /// hops scaled by −½) = 1944.
    pub wilson_clover(out: Spinor, psi: Spinor, u: Gauge, a: Clover) {
        out += a(x) * psi(x);
        for mu in 0..4 {
            out -= 0.5 * (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
            out -= 0.5 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * psi(x - mu);
        }
    }
}

stencil! {
    /// The clover matrix on each site: out(x) = A(x) ψ(x), both chiral 6 × 6 blocks
    /// (504 flops per site). Passing the inverse clover field A⁻¹ gives A⁻¹ ψ, the
    /// diagonal block of even-odd preconditioning,
    ///
    /// M̂ ψ_o = ψ_o − ¼ A_oo⁻¹ H_oe A_ee⁻¹ H_eo ψ_o,
    ///
    /// with H the [`crate::WilsonHop`]; with xpay, out = a·x + b·A ψ.
    pub clover_apply(out: Spinor, psi: Spinor, a: Clover) {
        out += a(x) * psi(x);
    }
}
