//! Twisted mass: the twist kernel i γ5 ψ(x) against a textbook γ5 (the product
//! γ_x γ_y γ_z γ_t of the written-out DeGrand–Rossi matrices, not the DSL's table), the
//! inverse of the diagonal block, and γ5-hermiticity γ5 D(μ) γ5 = D(−μ)† of the
//! twisted-mass Wilson operator D(μ) = (m + 4) + i μ γ5 − ½ H assembled from the catalog.

mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{TwistedMassTwist, WilsonHop};
use stencil_support::*;

/// γ5 = γ_x γ_y γ_z γ_t from the dense matrices.
fn textbook_gamma5() -> [[C; 4]; 4] {
    let g = gammas();
    let mul = |a: &[[C; 4]; 4], b: &[[C; 4]; 4]| -> [[C; 4]; 4] {
        std::array::from_fn(|r| std::array::from_fn(|c| (0..4).map(|k| a[r][k] * b[k][c]).sum()))
    };
    mul(&mul(&mul(&g[0], &g[1]), &g[2]), &g[3])
}

/// Textbook (a + i b γ5) ψ on every site.
fn textbook_block(psi: &Plain, a: f64, b: f64) -> Plain {
    let g5 = textbook_gamma5();
    let i = C::new(0.0, 1.0);
    psi.iter()
        .map(|site| {
            (0..4)
                .map(|s| {
                    std::array::from_fn(|c| {
                        let twist: C = (0..4).map(|t| g5[s][t] * site[t][c]).sum();
                        site[s][c] * a + i * b * twist
                    })
                })
                .collect()
        })
        .collect()
}

/// (a + i b γ5) ψ by the twist kernel with xpay (x = ψ), precision T.
fn block<T: qdsl_core::Real>(
    v: &Variant,
    psi: &ColourSpinorField<T>,
    a: f64,
    b: f64,
) -> ColourSpinorField<T> {
    let mut out = ColourSpinorField::zeros(*psi.layout());
    let xpay = Xpay {
        a: T::from_f64(a),
        x: psi,
        b: T::from_f64(b),
    };
    let v = Variant { xpay: true, ..*v };
    TwistedMassTwist
        .apply_cpu(&v, &mut out, psi, Some(xpay))
        .unwrap();
    out
}

/// The twist block equals the textbook block for every output subset, dagger (Γ (iγ5) Γ =
/// iγ5, so the same), and f64/f32; the generated CUDA names the twist.
#[test]
fn twist_block_equals_textbook() {
    let lat = Lattice::new([4, 2, 2, 4]).unwrap();
    let psi = to_plain(&ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(lat, SiteSubset::Full),
        5,
    ));
    let (a, b) = (4.1, 0.37);
    let want = textbook_block(&psi, a, b);
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for dagger in [false, true] {
            let subset = match sites {
                OutputSites::Parity(p) => SiteSubset::Single(p),
                OutputSites::Full => SiteSubset::Full,
            };
            let field = from_plain(&psi, SpinorLayout::wilson(lat, subset));
            let v = Variant {
                sites,
                dagger,
                ..Variant::default()
            };
            let err = rel_diff(&block(&v, &field, a, b), &want);
            assert!(err < 1e-15, "{v}: {err:e}");
            let v32 = Variant {
                spinor: StorageFormat::F32,
                gauge: StorageFormat::F32,
                ..v
            };
            let err = rel_diff(&block(&v32, &field.cast::<f32>(), a, b), &want);
            assert!(err < 3e-7, "{v32}: {err:e}");
        }
    }
    let src = TwistedMassTwist::cuda_source(&Variant {
        xpay: true,
        ..Variant::default()
    })
    .unwrap();
    assert!(src.contains("i gamma5 = diag(i, i, -i, -i)"), "{src}");
    // The twist costs no flops; xpay 3 per real: 3 · 24.
    let info = TwistedMassTwist::info(&Variant {
        xpay: true,
        ..Variant::default()
    })
    .unwrap();
    assert_eq!(info.flops_per_site, 72);
}

/// A⁻¹ A = 1 with A = (m + 4) + i μ γ5 and A⁻¹ = ((m + 4) − i μ γ5)/((m + 4)² + μ²).
#[test]
fn inverse_block_inverts_the_block() {
    let lat = Lattice::new([4, 2, 2, 4]).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(SpinorLayout::wilson(lat, SiteSubset::Full), 6);
    let v = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let (m4, mu) = (4.0 - 0.2, 0.5);
    let d = m4 * m4 + mu * mu;
    let back = block(&v, &block(&v, &psi, m4, mu), m4 / d, -mu / d);
    assert!(rel_diff(&back, &to_plain(&psi)) < 1e-14);
}

/// D(μ) ψ = A ψ − ½ H ψ from the twist and Wilson hop kernels, full lattice.
fn twisted_mass_operator(
    u: &GaugeField<f64>,
    psi: &ColourSpinorField<f64>,
    m4: f64,
    mu: f64,
) -> ColourSpinorField<f64> {
    let v = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let a_psi = block(&v, psi, m4, mu);
    let mut out = ColourSpinorField::zeros(*psi.layout());
    let xpay = Xpay {
        a: 1.0,
        x: &a_psi,
        b: -0.5,
    };
    WilsonHop
        .apply_cpu(&Variant { xpay: true, ..v }, &mut out, psi, u, Some(xpay))
        .unwrap();
    out
}

/// γ5 D(μ) γ5 = D(−μ)†: ⟨φ, γ5 D(μ) γ5 ψ⟩ = ⟨D(−μ) φ, ψ⟩ on a random gauge field (fails for
/// a twist without the i, or for D(μ) in place of D(−μ)).
#[test]
fn twisted_mass_is_gamma5_hermitian_with_mu_flipped() {
    let lat = Lattice::new([4, 2, 4, 4]).unwrap();
    let u = random_gauge(lat, 8);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let phi = ColourSpinorField::<f64>::gaussian(full, 9);
    let psi = ColourSpinorField::<f64>::gaussian(full, 10);
    let g5 = |f: &ColourSpinorField<f64>| {
        let p = to_plain(f);
        let g = textbook_gamma5();
        let q: Plain = p
            .iter()
            .map(|site| {
                (0..4)
                    .map(|s| std::array::from_fn(|c| (0..4).map(|t| g[s][t] * site[t][c]).sum()))
                    .collect()
            })
            .collect();
        from_plain(&q, full)
    };
    let (m4, mu) = (4.1, 0.3);
    let lhs = inner(&phi, &g5(&twisted_mass_operator(&u, &g5(&psi), m4, mu)));
    let rhs = inner(&twisted_mass_operator(&u, &phi, m4, -mu), &psi);
    assert!((lhs - rhs).norm() < 1e-10 * lhs.norm(), "{lhs} vs {rhs}");
    let wrong = inner(&twisted_mass_operator(&u, &phi, m4, mu), &psi);
    assert!((lhs - wrong).norm() > 1e-3 * lhs.norm(), "μ must flip");
}
