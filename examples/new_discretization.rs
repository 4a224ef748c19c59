//! A new discretization written from scratch, outside the catalog: a Wilson-type hop
//! with a Naik-like three-site term whose link product is spelled out,
//!
//! out(x) = Σ_μ (1 − γ_μ) [ (9/8) U_μ(x) ψ(x+μ̂) − (1/24) U_μ(x) U_μ(x+μ̂) U_μ(x+2μ̂) ψ(x+3μ̂) ]
//!        + (1 + γ_μ) [ (9/8) U_μ†(x−μ̂) ψ(x−μ̂)
//!                      − (1/24) U_μ†(x−μ̂) U_μ†(x−2μ̂) U_μ†(x−3μ̂) ψ(x−3μ̂) ].
//!
//! It runs on the CPU (the generated `apply_cpu`) and prints its generated CUDA. Then the
//! hop K becomes the operator M = 1 − κ K, even-odd preconditioned in a few lines (its
//! blocks D_ee = D_oo = 1, D_eo = −κ K_eo, D_oe = −κ K_oe, and the generic Schur
//! complement M̂ = 1 − κ² K_eo K_oe), and M ψ = η is solved: source preparation, CGNR on
//! M̂ (on the GPU when there is one, else on the CPU), reconstruction of the odd sites,
//! and the residual of the full system checked with the full operator from the blocks.
//! Run with `cargo run --example new_discretization`.

use qdsl::app::propagator::{join_parities, split_parities};
use qdsl::app::solve::SolveBackend;
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{Compression, LinkFormat};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_macros::stencil;
use qdsl_runtime::backend::BackendChoice;
use qdsl_runtime::device::DeviceField;
use qdsl_runtime::operator::{DeviceHopBlocks, HopAdjoint, HopBlocks, HostHop, Schur};
use qdsl_runtime::solver::device::{DeviceContext, DeviceOperator, DeviceVector, Double};
use qdsl_runtime::solver::{cgnr, SolveResult, SolverField, SolverOptions};
use std::sync::Arc;

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

/// The hop K with its links, as the even-odd layer sees a host hop.
struct NaikHop(GaugeField<f64>);

impl HostHop for NaikHop {
    type Real = f64;

    fn apply(
        &self,
        variant: &Variant,
        out: &mut ColourSpinorField<f64>,
        psi: &ColourSpinorField<f64>,
        xpay: Option<Xpay<'_, f64>>,
    ) -> Result<(), DslError> {
        NaikWilsonHop.apply_cpu(variant, out, psi, &self.0, xpay)
    }

    fn flops_per_site(&self, variant: &Variant) -> usize {
        NaikWilsonHop::info(variant).map_or(0, |i| i.flops_per_site)
    }

    fn layout(&self, subset: SiteSubset) -> SpinorLayout {
        SpinorLayout::wilson(*self.0.lattice(), subset)
    }

    /// K† = γ5 K γ5: the generated dagger variant.
    fn adjoint(&self) -> HopAdjoint {
        HopAdjoint::DaggerKnob
    }
}

/// κ of M = 1 − κ K.
const KAPPA: f64 = 0.1;
const BOUNDARY: TimeBoundary = TimeBoundary::Antiperiodic;

/// Solves M̂ x = b on the GPU: the device blocks of the same stencil (its CUDA kernels,
/// f64), the generic Schur complement, CGNR on device vectors; x downloaded.
fn solve_on_gpu(
    ctx: &Arc<DeviceContext>,
    u: &GaugeField<f64>,
    b: &ColourSpinorField<f64>,
    x: &mut ColourSpinorField<f64>,
    opts: &SolverOptions,
) -> Result<SolveResult, Box<dyn std::error::Error>> {
    let formats = Variant {
        spinor: StorageFormat::F64,
        gauge: StorageFormat::F64,
        boundary: BOUNDARY,
        ..Variant::default()
    };
    let links = LinkFormat::new(StorageFormat::F64.link_storage(), Compression::Full);
    let d_u = DeviceField::from_gauge(ctx.gpu(), u, links)?;
    let blocks = DeviceHopBlocks::of::<NaikWilsonHop>(
        ctx.gpu(),
        vec![d_u],
        *u.lattice(),
        &formats,
        Parity::Even,
        1.0,
        -KAPPA,
        HopAdjoint::DaggerKnob,
    )?;
    let op = DeviceOperator::<Double>::of_hops(ctx, Schur::complement(blocks));
    let b_dev = DeviceVector::<Double>::upload(ctx, b)?;
    let mut x_dev = b_dev.zeros_like();
    let result = cgnr(&op, &op, &b_dev, &mut x_dev, opts)?;
    if let Some(e) = ctx.take_error() {
        return Err(e.into());
    }
    *x = x_dev.download(*b.layout())?;
    Ok(result)
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

    // The even-odd operator of M = 1 − κ K on random links: its blocks, the generic
    // Schur complement on the even sites, then M ψ = η.
    let u = GaugeField::<f64>::random(lattice, 2);
    let blocks = HopBlocks::new(NaikHop(u.clone()), 1.0, -KAPPA, Parity::Even, BOUNDARY);
    let m_hat = Schur::complement(blocks);
    let eta = ColourSpinorField::<f64>::gaussian(layout, 3);
    let (eta_e, eta_o) = split_parities(&eta)?;
    let b = m_hat.prepare_source(&eta_e, &eta_o)?;
    let mut x_e = b.zeros_like();
    let opts = SolverOptions::with_tolerance(1e-10);
    let (result, backend) =
        match SolveBackend::select(BackendChoice::Auto, &mut |m| eprintln!("{m}"))? {
            SolveBackend::Cuda(ctx) => (solve_on_gpu(&ctx, &u, &b, &mut x_e, &opts)?, "GPU"),
            SolveBackend::Cpu => (cgnr(&m_hat, &m_hat, &b, &mut x_e, &opts)?, "CPU"),
        };
    let x_o = m_hat.reconstruct(&x_e, &eta_o)?;
    let (mut m_e, mut m_o) = (x_e.zeros_like(), x_o.zeros_like());
    m_hat.apply_full((&mut m_e, &mut m_o), (&x_e, &x_o), false)?;
    let mut residual = join_parities(&m_e, &m_o)?;
    residual.axpy(qdsl_core::Complex::new(-1.0, 0.0), &eta)?;
    println!(
        "M = 1 - {KAPPA} K, 8^4 random links: CGNR on the even-odd M̂ ({backend}) {} in {} \
         iterations; full system |M psi - eta|/|eta| = {:.2e}",
        result.convergence,
        result.iterations,
        (residual.norm_sqr() / eta.norm_sqr()).sqrt()
    );
    Ok(())
}
