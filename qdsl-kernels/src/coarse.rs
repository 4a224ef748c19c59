//! The multigrid coarse operator on 2 spins × N_c colours with dense spin-colour links
//! ([`qdsl_core::field::DenseLinkField`]): its hopping term D_c ([`CoarseHop`]) and the
//! whole operator M = X − D_c with the site-local dense matrix X ([`CoarseOp`]).

use qdsl_macros::stencil;

stencil! {
    /// Coarse hop D_c on 2 × 24 fields (N = 48) with dense links (QUDA's coarse dslash):
    ///
    /// out(x) = Σ_μ [ Y⁺_μ(x) φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂) ],
    ///
    /// each Y an N × N complex matrix on the whole spin-colour vector ((Y φ)_r =
    /// Σ_c Y_{rc} φ_c, r = σ · 24 + a). Y⁺ (`yf`) is QUDA's Y_{−μ}, the link of the forward
    /// hop, Y⁻ (`yb`) its Y_{+μ}, applied adjoint on the backward hop; with yb = yf the
    /// hop is hermitian. The coarse operator is M = X − D_c with the site-local X (xpay
    /// with a diagonal X). 8 · (8N² − 2N) + 7 · 2N = 147 360 flops per site; f64 and
    /// f32 only, recon 18 (the links are stored whole).
    #[knobs(dagger = [false], spinor = [f64, f32], gauge = [f64, f32], recon = [18])]
    pub coarse_hop(out: Spinor<2, 24>, phi: Spinor<2, 24>, yf: Gauge<48>, yb: Gauge<48>) {
        for mu in 0..4 {
            out += yf[mu](x) * phi(x + mu);
            out += yb[mu](x - mu).dagger() * phi(x - mu);
        }
    }
}

stencil! {
    /// The whole multigrid coarse operator M = X − D_c on 2 × 24 fields (N = 48), QUDA's
    /// coarse dslash with its coarse clover:
    ///
    /// out(x) = X(x) φ(x) − Σ_μ [ Y⁺_μ(x) φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂) ],
    ///
    /// X(x) (`xm`, a `SiteMatrix<48>`) a dense N × N matrix per site, Y⁺, Y⁻ the links of
    /// [`crate::CoarseHop`] (D_c). With Y⁻ = Y⁺ and hermitian X, M is hermitian.
    /// 9 · (8N² − 2N) + 8 · 2N = 165 792 flops per site; f64 and f32 only, recon 18.
    #[knobs(dagger = [false], spinor = [f64, f32], gauge = [f64, f32], recon = [18])]
    pub coarse_op(out: Spinor<2, 24>, phi: Spinor<2, 24>, xm: SiteMatrix<48>, yf: Gauge<48>, yb: Gauge<48>) {
        out += xm(x) * phi(x);
        for mu in 0..4 {
            out -= yf[mu](x) * phi(x + mu);
            out -= yb[mu](x - mu).dagger() * phi(x - mu);
        }
    }
}
