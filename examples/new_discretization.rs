//! A new discretization written from scratch, outside the catalog: a Wilson-type hop
//! with a Naik-like three-site term whose link product is spelled out,
//!
//! out(x) = Σ_μ (1 − γ_μ) [ (9/8) U_μ(x) ψ(x+μ̂) − (1/24) U_μ(x) U_μ(x+μ̂) U_μ(x+2μ̂) ψ(x+3μ̂) ]
//!        + (1 + γ_μ) [ (9/8) U_μ†(x−μ̂) ψ(x−μ̂)
//!                      − (1/24) U_μ†(x−μ̂) U_μ†(x−2μ̂) U_μ†(x−3μ̂) ψ(x−3μ̂) ].
//!
//! It runs on the CPU (the generated `apply_cpu`) and prints its generated CUDA.
//! Run with `cargo run --example new_discretization`.

use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Lattice;
use qdsl_macros::stencil;

stencil! {
    /// Wilson hop with a Naik-like three-site term (coefficients 9/8 and −1/24):
    /// out(x) = Σ_μ (1 − γ_μ)[(9/8) U_μ(x) ψ(x+μ̂) − (1/24) U_μ(x)U_μ(x+μ̂)U_μ(x+2μ̂) ψ(x+3μ̂)]
    ///        + (1 + γ_μ)[(9/8) U_μ†(x−μ̂) ψ(x−μ̂) − (1/24) U_μ†(x−μ̂)U_μ†(x−2μ̂)U_μ†(x−3μ̂) ψ(x−3μ̂)]
    pub naik_wilson_hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += 9.0 / 8.0 * (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
            out += 9.0 / 8.0 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * psi(x - mu);
            out += -1.0 / 24.0 * (1 - gamma(mu)) * u[mu](x) * u[mu](x + mu) * u[mu](x + 2 * mu) * psi(x + 3 * mu);
            out += -1.0 / 24.0 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * u[mu](x - 2 * mu).dagger() * u[mu](x - 3 * mu).dagger() * psi(x - 3 * mu);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lattice = Lattice::new([8, 8, 8, 8])?;
    let layout = SpinorLayout::wilson(lattice, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(layout, 1);
    let u = GaugeField::<f64>::unit(lattice);
    let mut out = ColourSpinorField::zeros(layout);
    let cpu = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    NaikWilsonHop.apply_cpu(&cpu, &mut out, &psi, &u, None)?;
    println!(
        "|psi|^2 = {:.6}, |D psi|^2 = {:.6} (CPU, 8^4, unit links)",
        psi.norm_sqr(),
        out.norm_sqr()
    );
    let gpu = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let info = NaikWilsonHop::info(&gpu)?;
    println!(
        "{}: {} flops/site, {} bytes/site (QUDA model), {} (minimal)",
        NaikWilsonHop::kernel_name(&gpu),
        info.flops_per_site,
        info.bytes.quda,
        info.bytes.minimal
    );
    println!("{}", NaikWilsonHop::cuda_source(&gpu)?);
    Ok(())
}
