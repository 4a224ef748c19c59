//! A spec written outside the catalog with three-link products along 3-site hops and
//! non-unit coefficients (the spec of `examples/new_discretization.rs`), against a
//! hand-written textbook operator; plus gauge covariance of the link paths.

// The textbook operator is written as index loops on purpose (as in a paper).
#![allow(clippy::needless_range_loop)]

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::variant::{OutputSites, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::Lattice;
use qdsl_core::math::ColourMatrix;
use qdsl_macros::stencil;
use stencil_support::*;

stencil! {
    /// out(x) = Σ_μ (1 − γ_μ)[(9/8) U_μ(x) ψ(x+μ̂) − (1/24) U_μ(x)U_μ(x+μ̂)U_μ(x+2μ̂) ψ(x+3μ̂)]
    ///        + (1 + γ_μ)[(9/8) U_μ†(x−μ̂) ψ(x−μ̂) − (1/24) U_μ†(x−μ̂)U_μ†(x−2μ̂)U_μ†(x−3μ̂) ψ(x−3μ̂)]
    pub naik_wilson_hop(out: Spinor, psi: Spinor, u: Gauge) {
        for mu in 0..4 {
            out += 9.0 / 8.0 * (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
            out += 9.0 / 8.0 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * psi(x - mu);
            out -= 1.0 / 24.0 * (1 - gamma(mu)) * u[mu](x) * u[mu](x + mu) * u[mu](x + 2 * mu) * psi(x + 3 * mu);
            out -= 1.0 / 24.0 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * u[mu](x - 2 * mu).dagger() * u[mu](x - 3 * mu).dagger() * psi(x - 3 * mu);
        }
    }
}

/// The parallel transporter from x + n μ̂ to x along μ: U_μ(x)…U_μ(x+(n−1)μ̂) for n > 0,
/// U_μ†(x−μ̂)…U_μ†(x+nμ̂) for n < 0.
fn transporter(u: &GaugeField<f64>, x: [usize; 4], mu: usize, n: isize) -> ColourMatrix<f64> {
    let lat = *u.lattice();
    let mut m = ColourMatrix::identity();
    for k in 0..n.unsigned_abs() as isize {
        let step = if n > 0 {
            *u.link_at(lat.shift(x, mu, k).0, mu)
        } else {
            u.link_at(lat.shift(x, mu, -k - 1).0, mu).adjoint()
        };
        m *= step;
    }
    m
}

/// Textbook: Σ_μ Σ_{n = ±1, ±3} c_n (1 ∓ s γ_μ) W_n(x) ψ(x + n μ̂) b(x, n), with c_{±1} = 9/8,
/// c_{±3} = −1/24, the projector sign − for forward hops (+ with `dagger`), b the
/// boundary sign.
fn textbook(u: &GaugeField<f64>, psi: &Plain, dagger: bool, antiperiodic: bool) -> Plain {
    let lat = *u.lattice();
    let g = gammas();
    let s = if dagger { -1.0 } else { 1.0 };
    let mut out = vec![vec![[C::new(0.0, 0.0); 3]; 4]; lat.volume()];
    for lex in 0..lat.volume() {
        let x = lat.coords_of_lex(lex);
        for mu in 0..4 {
            for (n, c) in [
                (1isize, 1.125),
                (-1, 1.125),
                (3, -1.0 / 24.0),
                (-3, -1.0 / 24.0),
            ] {
                let (y, wraps) = lat.shift(x, mu, n);
                let b = if antiperiodic && mu == 3 && wraps % 2 != 0 {
                    -1.0
                } else {
                    1.0
                };
                let w = transporter(u, x, mu, n);
                let proj = if n > 0 { -s } else { s };
                let mut v = [[C::new(0.0, 0.0); 3]; 4];
                for sp in 0..4 {
                    for a in 0..3 {
                        for bb in 0..3 {
                            v[sp][a] += w.0[a][bb] * psi[lat.lex_index(y)][sp][bb];
                        }
                    }
                }
                for sp in 0..4 {
                    for a in 0..3 {
                        let mut z = v[sp][a];
                        for t in 0..4 {
                            z += g[mu][sp][t] * v[t][a] * proj;
                        }
                        out[lex][sp][a] += z * (c * b);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn three_link_products_equal_the_textbook_for_every_variant() {
    let lat = Lattice::new([4, 4, 2, 8]).unwrap();
    let u = random_gauge(lat, 51);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = to_plain(&ColourSpinorField::gaussian(full, 52));
    for v in Variant::all().into_iter().filter(|v| !v.xpay) {
        let want = textbook(&u, &psi, v.dagger, v.boundary == TimeBoundary::Antiperiodic);
        let (out_s, in_s) = match v.sites {
            OutputSites::Parity(p) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
            OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
        };
        let input = from_plain(&psi, SpinorLayout::wilson(lat, in_s));
        let err = match v.spinor {
            StorageFormat::F64 => {
                let mut out = ColourSpinorField::<f64>::zeros(SpinorLayout::wilson(lat, out_s));
                NaikWilsonHop
                    .apply_cpu(&v, &mut out, &input, &u, None)
                    .unwrap();
                rel_diff(&out, &want) / 1e-13
            }
            // f32 and the narrow formats (which compute in f32).
            _ => {
                let mut out = ColourSpinorField::<f32>::zeros(SpinorLayout::wilson(lat, out_s));
                NaikWilsonHop
                    .apply_cpu(&v, &mut out, &input.cast(), &u.cast(), None)
                    .unwrap();
                rel_diff(&out, &want) / 3e-6
            }
        };
        assert!(err < 1.0, "{v}: error {err} × tolerance");
    }
    // Flops: per 1-hop 12 + 132 + 12 (9/8) + 24, per 3-hop 12 + 3·132 + 12 + 24; minus 24.
    let info = NaikWilsonHop::info(&Variant::default()).unwrap();
    assert_eq!(info.flops_per_site, 8 * 180 + 8 * 444 - 24);
}

/// Gauge covariance of the three-link paths: D[U^g](gψ) = g D[U]ψ.
#[test]
fn three_link_products_are_gauge_covariant() {
    let lat = Lattice::new([4, 4, 4, 6]).unwrap();
    let u = random_gauge(lat, 61);
    let g = random_transform(lat, 62);
    let ug = transform_links(&g, &u);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(full, 63);
    let rotate = |f: &ColourSpinorField<f64>| transform_field(&g, f);
    let v = Variant {
        sites: OutputSites::Full,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    };
    let mut a = ColourSpinorField::zeros(full);
    NaikWilsonHop
        .apply_cpu(&v, &mut a, &rotate(&psi), &ug, None)
        .unwrap();
    let mut b = ColourSpinorField::zeros(full);
    NaikWilsonHop.apply_cpu(&v, &mut b, &psi, &u, None).unwrap();
    let diff = max_abs_diff(&a, &rotate(&b));
    assert!(diff < 1e-12, "{diff:e}");
}

/// The three-link CUDA compiles (sm_90) without spills, in f32 recon 12 and f64 with
/// every other knob on.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn three_link_cuda_compiles_without_spills() {
    let nv = nvrtc::Nvrtc::load().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    let f32_r12 = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: qdsl_core::dsl::variant::Recon::R12,
        ..Variant::default()
    };
    let f64_all = Variant {
        sites: OutputSites::Full,
        dagger: true,
        xpay: true,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    };
    for v in [f32_r12, f64_all] {
        let name = NaikWilsonHop::kernel_name(&v);
        let ptx = nv
            .compile(&NaikWilsonHop::cuda_source(&v).unwrap(), &name, "sm_90")
            .unwrap();
        assert!(ptx.contains(&format!(".entry {name}(")));
        if let Ok(p) = nvrtc::ptxas() {
            let r = nvrtc::ptxas_report(&p, &ptx, "sm_90", &name).unwrap();
            assert_eq!(
                (r[0].1.spill_stores, r[0].1.spill_loads),
                (0, 0),
                "{v}: {r:?}"
            );
        }
    }
}
