//! Gauge actions, each written once as a `link_paths!` `action` spec of closed loops; the
//! action value and the gauge force derive from the loops
//! ([`qdsl_core::dsl::paths::GaugeAction`]).

use qdsl_macros::link_paths;

link_paths! {
    /// The Wilson gauge action S = β Σ_x Σ_{μ<ν} (1 − Re tr U_μν(x)/3), the plaquette
    /// U_μν(x) = U_μ(x) U_ν(x+μ̂) U_μ†(x+ν̂) U_ν†(x) (6 per site).
    pub action wilson_gauge(u: Gauge) {
        plaquette: 1 * [+mu, +nu, -mu, -nu];
    }
}

link_paths! {
    /// The tree-level Symanzik (Lüscher–Weisz) gauge action
    /// S = β Σ_x [c₀ Σ_{μ<ν} (1 − Re tr U_μν/3) + c₁ Σ_{rect} (1 − Re tr R/3)],
    /// c₀ = 5/3, c₁ = −1/12 (c₀ + 8c₁ = 1), the 2×1 rectangles R in both orientations of
    /// each plane (12 per site).
    pub action symanzik_gauge(u: Gauge) {
        plaquette: 5/3 * [+mu, +nu, -mu, -nu];
        rectangle: -1/12 * [+mu, +mu, +nu, -mu, -mu, -nu];
    }
}

link_paths! {
    /// The Iwasaki gauge action (Y. Iwasaki, UTHEP-118, 1983; renormalisation-group
    /// improved): S = β Σ_x [c₀ Σ_{μ<ν} (1 − Re tr U_μν/3) + c₁ Σ_{rect} (1 − Re tr R/3)],
    /// c₁ = −0.331, c₀ = 1 − 8c₁ = 3.648, the rectangles as in [`SymanzikGauge`].
    pub action iwasaki_gauge(u: Gauge) {
        plaquette: 3.648 * [+mu, +nu, -mu, -nu];
        rectangle: -0.331 * [+mu, +mu, +nu, -mu, -mu, -nu];
    }
}
