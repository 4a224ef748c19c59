//! The staggered family. The staggered phases η_μ(x) and the antiperiodic time boundary
//! live in the links (MILC conventions, DESIGN.md); the time boundary knob of these
//! kernels therefore stays periodic in normal use.

use qdsl_macros::stencil;

stencil! {
    /// Naive staggered hop D (phases in the links U):
    ///
    /// out(x) = Σ_μ [ U_μ(x) χ(x + μ̂) − U_μ†(x − μ̂) χ(x − μ̂) ],
    ///
    /// the staggered operator being M = 2m + D (xpay with a = 2m, b = 1). 570 flops per
    /// site. Links carry phases (±SU(3)), so only recon 18 applies.
    #[knobs(recon = [18])]
    pub naive_staggered_hop(out: ColourVector, chi: ColourVector, u: Gauge) {
        for mu in 0..4 {
            out += u[mu](x) * chi(x + mu);
            out -= u[mu](x - mu).dagger() * chi(x - mu);
        }
    }
}

stencil! {
    /// Improved staggered hop D (asqtad, HISQ) with fat links F and long (Naik) links L,
    /// phases folded into both:
    ///
    /// out(x) = Σ_μ [ F_μ(x) χ(x + μ̂) − F_μ†(x − μ̂) χ(x − μ̂)
    ///              + L_μ(x) χ(x + 3μ̂) − L_μ†(x − 3μ̂) χ(x − 3μ̂) ],
    ///
    /// the operator being M = 2m + D. 1146 flops per site. Fat links are U(3)-like sums
    /// of paths and both carry phases, so only recon 18 applies.
    #[knobs(recon = [18])]
    pub improved_staggered_hop(out: ColourVector, chi: ColourVector, fat: Gauge, long: Gauge) {
        for mu in 0..4 {
            out += fat[mu](x) * chi(x + mu);
            out -= fat[mu](x - mu).dagger() * chi(x - mu);
            out += long[mu](x) * chi(x + 3 * mu);
            out -= long[mu](x - 3 * mu).dagger() * chi(x - 3 * mu);
        }
    }
}
