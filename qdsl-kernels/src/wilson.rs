//! The Wilson family.

use qdsl_macros::stencil;

stencil! {
    /// Wilson hopping term H (DeGrand–Rossi γ basis):
    ///
    /// out(x) = Σ_μ [ (1 − γ_μ) U_μ(x) ψ(x + μ̂) + (1 + γ_μ) U_μ†(x − μ̂) ψ(x − μ̂) ],
    ///
    /// so that the Wilson operator is M = 1 − κ H, κ = 1/(2m + 8); in mass normalisation
    /// (m + 4) − H/2 (xpay with a = m + 4, b = −1/2). The projectors are lowered to half
    /// spinors: 1320 flops per site.
    pub wilson_hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
            out += (1 + gamma(mu)) * u[mu](x - mu).dagger() * psi(x - mu);
        }
    }
}
