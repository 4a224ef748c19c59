//! Site-local terms: a spec with a mass term and hops reads its source on both parities.
//! Checked against the catalog's Wilson hop (itself checked against the textbook) used
//! through xpay: M ψ = (4 + m) ψ − H ψ / 2.

mod nvrtc;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::lower::ReadSites;
use qdsl_core::dsl::variant::{OutputSites, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{
    ColourSpinorField, GaugeField, RandomStream, SiteSubset, SpinorLayout, StreamDomain,
};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::WilsonHop;
use qdsl_macros::stencil;

stencil! {
    /// Wilson operator in mass normalisation, m = 0.1: out(x) = 4.1 ψ(x) − ½ H ψ(x).
    pub wilson_dirac(out: Spinor, psi: Spinor, u: Gauge) {
        out += 4.1 * psi(x);
        for mu in 0..4 {
            out -= 0.5 * (1 - gamma(mu)) * u[mu](x) * psi(x + mu);
            out -= 0.5 * (1 + gamma(mu)) * u[mu](x - mu).dagger() * psi(x - mu);
        }
    }
}

#[test]
fn local_and_hopping_terms_match_hop_plus_xpay() {
    let lat = Lattice::new([4, 4, 2, 6]).unwrap();
    let u = GaugeField::from_fn(lat, |x, mu| {
        qdsl_core::field::haar_su3(&mut RandomStream::new(
            71,
            StreamDomain::GaugeLinks,
            (4 * lat.lex_index(x) + mu) as u64,
        ))
    });
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let psi = ColourSpinorField::<f64>::gaussian(full, 72);
    assert_eq!(
        WilsonDirac::lowered()
            .unwrap()
            .input("psi")
            .map(|i| i.reads),
        Some(ReadSites::Both)
    );
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
            let v = Variant {
                sites,
                boundary,
                ..Variant::default()
            };
            let out_subset = match sites {
                OutputSites::Parity(p) => SiteSubset::Single(p),
                OutputSites::Full => SiteSubset::Full,
            };
            let out_layout = full.with_subset(out_subset);
            let restrict = |f: &ColourSpinorField<f64>, l: SpinorLayout| {
                ColourSpinorField::from_fn(l, |_, x, s, a| f.get(0, x, s, a).unwrap())
            };
            // The generated operator: the source is the full field (local + hop reads).
            let mut m = ColourSpinorField::zeros(out_layout);
            WilsonDirac.apply_cpu(&v, &mut m, &psi, &u, None).unwrap();
            // Reference: WilsonHop on the full lattice with xpay, restricted.
            let vf = Variant {
                sites: OutputSites::Full,
                xpay: true,
                ..v
            };
            let mut want = ColourSpinorField::zeros(full);
            WilsonHop
                .apply_cpu(
                    &vf,
                    &mut want,
                    &psi,
                    &u,
                    Some(Xpay {
                        a: 4.1,
                        x: &psi,
                        b: -0.5,
                    }),
                )
                .unwrap();
            let want = restrict(&want, out_layout);
            let diff = m
                .data()
                .iter()
                .zip(want.data())
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            assert!(diff < 1e-12, "{v}: {diff:e}");
        }
    }
    // A single-parity source is refused: local terms need the output's own parity too.
    let odd = ColourSpinorField::<f64>::zeros(full.with_subset(SiteSubset::Single(Parity::Odd)));
    let mut out = ColourSpinorField::zeros(full.with_subset(SiteSubset::Single(Parity::Even)));
    let err = WilsonDirac
        .apply_cpu(&Variant::default(), &mut out, &odd, &u, None)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("field `psi`: expected 4×4×2×6 × Ls 1, full lattice"),
        "{err}"
    );
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn local_terms_compile_for_the_gpu() {
    let nv = nvrtc::Nvrtc::load().unwrap_or_else(|why| panic!("NVRTC: {why}"));
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    let name = WilsonDirac::kernel_name(&v);
    let ptx = nv
        .compile(&WilsonDirac::cuda_source(&v).unwrap(), &name, "sm_90")
        .unwrap();
    assert!(ptx.contains(&format!(".entry {name}(")));
}
