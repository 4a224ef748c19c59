//! The improved staggered hop with compressed long links (`long_recon` 13 and 9): the CPU
//! emulation (long links rounded through the format) against a hand-written textbook hop
//! on the exact links, the CUDA variants through NVRTC and ptxas (no spills), a reviewed
//! snapshot, and the refusals.

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::long_links::long_link_fields;
use qdsl_core::dsl::storage::round_long_field;
use qdsl_core::dsl::variant::{LongRecon, OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::math::ColourMatrix;
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop};
use stencil_support::*;

/// HISQ's Naik coefficient with its ε correction, −(1 + ε)/24, here ε = 0.07.
const NAIK: f64 = -1.07 / 24.0;

/// HISQ-like long links: L_μ(x) = c·s(x)·e^{iα}·U1 U2 U3 with Haar SU(3) U_k, a staggered
/// sign s(x) = (−1)^{x_0 + x_1} and a phase α that varies over links (U(3) products).
fn hisq_like_long(lat: Lattice) -> GaugeField<f64> {
    let u = [31, 32, 33].map(|seed| random_gauge(lat, seed));
    GaugeField::from_fn(lat, |x, mu| {
        let sign = if (x[0] + x[1]) % 2 == 0 { 1.0 } else { -1.0 };
        let alpha = 0.37 * (lat.lex_index(x) * 4 + mu) as f64;
        let w = *u[0].link_at(x, mu) * *u[1].link_at(x, mu) * *u[2].link_at(x, mu);
        w.scale_complex(C::from_polar(NAIK * sign, alpha))
    })
}

/// Textbook improved staggered hop on the full lattice (periodic; phases in the links):
/// out(x) = Σ_μ F_μ(x)χ(x+μ̂) − F_μ†(x−μ̂)χ(x−μ̂) + L_μ(x)χ(x+3μ̂) − L_μ†(x−3μ̂)χ(x−3μ̂).
fn textbook(fat: &GaugeField<f64>, long: &GaugeField<f64>, chi: &Plain) -> Plain {
    let lat = *fat.lattice();
    let mut out = vec![vec![[C::new(0.0, 0.0); 3]; 1]; lat.volume()];
    for (lex, o) in out.iter_mut().enumerate() {
        let x = lat.coords_of_lex(lex);
        for mu in 0..4 {
            for (links, n) in [(fat, 1), (fat, -1), (long, 3), (long, -3)] {
                let (y, _) = lat.shift(x, mu, n);
                let (m, sign): (ColourMatrix<f64>, f64) = if n > 0 {
                    (*links.link_at(x, mu), 1.0)
                } else {
                    (links.link_at(y, mu).adjoint(), -1.0)
                };
                let source = &chi[lat.lex_index(y)][0];
                for (a, row) in m.0.iter().enumerate() {
                    for (z, s) in row.iter().zip(source) {
                        o[0][a] += z * s * sign;
                    }
                }
            }
        }
    }
    out
}

fn variant(long_recon: LongRecon, precision: StorageFormat, sites: OutputSites) -> Variant {
    Variant {
        sites,
        spinor: precision,
        gauge: precision,
        long_recon,
        ..Variant::default()
    }
}

/// The CPU hop of `v` on the long links rounded through `v.long_recon`, against the
/// textbook on the exact links. Relative-error bounds: f64 storage 1e-13 (rounding only);
/// f32 3e-6 (f32 arithmetic, as for recon 18) — the long terms carry |c| ≈ 0.045 times
/// the format's error on W (≤ 1e-6 for recon 13, ≤ 5e-5 for recon 9 in qdsl-core's format
/// tests), below that. Also: the scale found is |c|, and without the rounding (recon 18)
/// the f32 long links are not what the compressed kernel reads.
#[test]
fn compressed_long_links_match_the_textbook_hop() {
    let lat = Lattice::new([4, 4, 2, 8]).unwrap();
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = to_plain(&ColourSpinorField::gaussian(full, 21));
    let fat = random_matrices(lat, 23);
    let long = hisq_like_long(lat);
    let want = textbook(&fat, &long, &chi);
    let mut checked = 0;
    for long_recon in [LongRecon::R13, LongRecon::R9] {
        for precision in [StorageFormat::F64, StorageFormat::F32] {
            for sites in [
                OutputSites::Parity(Parity::Even),
                OutputSites::Parity(Parity::Odd),
                OutputSites::Full,
            ] {
                let v = variant(long_recon, precision, sites);
                assert!(ImprovedStaggeredHop::supports(&v), "{v}");
                let mut stored = long.clone();
                let scale = round_long_field(&v, &mut stored).expect("c·U(3) links");
                assert_eq!(scale.map(|c| (c + NAIK).abs() < 1e-15), Some(true));
                let (out_s, in_s) = match sites {
                    OutputSites::Parity(p) => {
                        (SiteSubset::Single(p), SiteSubset::Single(p.opposite()))
                    }
                    OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
                };
                let chi_f = from_plain(&chi, SpinorLayout::staggered(lat, in_s));
                let out_layout = SpinorLayout::staggered(lat, out_s);
                let (err, tol) = if precision == StorageFormat::F64 {
                    let mut out = ColourSpinorField::<f64>::zeros(out_layout);
                    ImprovedStaggeredHop
                        .apply_cpu(&v, &mut out, &chi_f, &fat, &stored, None)
                        .unwrap();
                    (rel_diff(&out, &want), 1e-13)
                } else {
                    let mut out = ColourSpinorField::<f32>::zeros(out_layout);
                    ImprovedStaggeredHop
                        .apply_cpu(
                            &v,
                            &mut out,
                            &chi_f.cast(),
                            &fat.cast(),
                            &stored.cast(),
                            None,
                        )
                        .unwrap();
                    (rel_diff(&out, &want), 3e-6)
                };
                assert!(err < tol, "{v}: relative error {err:e}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
}

/// Compressed long links need a spec with long links: the improved hop's only long field
/// is `long` (the naive hop has none); the Wilson and naive staggered hops refuse them by
/// name; the improved hop's source reads the long field's phase and scale
/// and leaves the fat field alone.
#[test]
fn long_recon_needs_long_links() {
    let v = variant(
        LongRecon::R9,
        StorageFormat::F32,
        OutputSites::Parity(Parity::Even),
    );
    for err in [
        WilsonHop::cuda_source(&v).unwrap_err(),
        NaiveStaggeredHop::cuda_source(&v).unwrap_err(),
    ] {
        assert!(err.to_string().contains("long_recon = 9"), "{err}");
    }
    assert!(!NaiveStaggeredHop::supports(&v));
    assert_eq!(long_link_fields(&ImprovedStaggeredHop::ir()), ["long"]);
    assert!(long_link_fields(&NaiveStaggeredHop::ir()).is_empty());
    let src = ImprovedStaggeredHop::cuda_source(&v).unwrap();
    assert!(src.contains("const float4* __restrict__ f_long,"), "{src}");
    assert!(src.contains("const float* __restrict__ phase_long,"));
    assert!(src.contains("const real scale_long,"));
    assert!(src.contains("unpack_link9(m, g, (real)phase_long["));
    assert!(!src.contains("phase_fat") && !src.contains("unpack_link13(m, g"));
}

/// Bytes per even output site, f32, by hand: out 24 B, 16 χ reads of 24 B, 8 fat links
/// of 72 B and 8 long links of 72 B (recon 18), 52 B (recon 13: 13 reals), 36 B (recon
/// 9) in QUDA's model; the minimal model reads χ once (24 B) and each of the 8 + 8 distinct
/// links once.
#[test]
fn byte_models_count_compressed_long_links() {
    for (long_recon, long_bytes) in [
        (LongRecon::R18, 72),
        (LongRecon::R13, 52),
        (LongRecon::R9, 36),
    ] {
        let v = variant(
            long_recon,
            StorageFormat::F32,
            OutputSites::Parity(Parity::Even),
        );
        let b = ImprovedStaggeredHop::info(&v).unwrap().bytes;
        assert_eq!(b.quda, 24 + 16 * 24 + 8 * 72 + 8 * long_bytes, "{v}");
        assert_eq!(b.minimal, 24 + 24 + 8 * 72 + 8 * long_bytes, "{v}");
    }
}

/// The CUDA source of f32 and f64 variants with long recon 13 and 9 (both parities'
/// worth of knobs: xpay, dagger) compiles with NVRTC for sm_80 and sm_90 and ptxas reports
/// no spills. Skips with a message where libnvrtc is absent.
#[test]
fn compressed_long_link_variants_compile_without_spills() {
    let Some(tc) = nvrtc::Toolchain::load() else {
        return;
    };
    for long_recon in [LongRecon::R13, LongRecon::R9] {
        for precision in [StorageFormat::F32, StorageFormat::F64] {
            for (dagger, xpay) in [(false, false), (true, true)] {
                let v = Variant {
                    dagger,
                    xpay,
                    ..variant(long_recon, precision, OutputSites::Parity(Parity::Odd))
                };
                let src = ImprovedStaggeredHop::cuda_source(&v).unwrap();
                let name = ImprovedStaggeredHop::kernel_name(&v);
                for arch in ["sm_80", "sm_90"] {
                    tc.compile_checked(&src, &name, arch, std::slice::from_ref(&name), true);
                }
            }
        }
    }
}

/// The generated source of the f32 long-recon-13 hop (reviewed).
#[test]
fn long_recon13_source_snapshot() {
    let v = variant(
        LongRecon::R13,
        StorageFormat::F32,
        OutputSites::Parity(Parity::Even),
    );
    insta::assert_snapshot!(
        "improved_staggered_hop_even_f32_long_recon13",
        ImprovedStaggeredHop::cuda_source(&v).unwrap()
    );
}
