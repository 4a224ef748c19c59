//! The twisted-mass family: the site-local twist i γ5 (DeGrand–Rossi γ5 = diag(1, 1, −1, −1)).

use qdsl_macros::stencil;

stencil! {
    /// The twist T = i γ5 on each site: out(x) = i γ5 ψ(x) (rows 0, 1 times i, rows 2, 3
    /// times −i). With xpay (x = ψ, a, b) it is the twisted-mass diagonal block
    ///
    /// A ψ = (a + i b γ5) ψ: a = m + 4, b = μ gives A = (m + 4) + i μ γ5, and
    /// a = (m + 4)/d, b = −μ/d with d = (m + 4)² + μ² gives A⁻¹ (since γ5² = 1);
    ///
    /// the twisted-mass Wilson operator in mass normalisation is then
    /// D(μ) ψ = A ψ − ½ H ψ (the [`crate::WilsonHop`] with xpay x = A ψ, a = 1, b = −½), and
    /// its even-odd preconditioned form uses A⁻¹ on one parity. γ5 D(μ) γ5 = D(−μ)†.
    pub twisted_mass_twist(out: Spinor, psi: Spinor) {
        out += (i * gamma(5)) * psi(x);
    }
}
