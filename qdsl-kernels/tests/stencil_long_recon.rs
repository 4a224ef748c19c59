//! The improved staggered hop with compressed long links (`long_recon` 13, 12 + sign and
//! 9): the CPU emulation (long links rounded through the format) against a hand-written
//! textbook hop on the exact links — on HISQ-like U(3) links, on asqtad long links built
//! from random thin links, and on MILC's own long links of its 8⁴ sample —, the CUDA
//! variants through NVRTC and ptxas (no spills), reviewed snapshots, and the refusals.

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::long_links::long_link_fields;
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::storage::round_long_field;
use qdsl_core::dsl::variant::{LongRecon, OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{
    fold_staggered_phases, AsqtadLong, ImprovedStaggeredHop, NaiveStaggeredHop, WilsonHop,
};
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

fn variant(long_recon: LongRecon, precision: StorageFormat, sites: OutputSites) -> Variant {
    Variant {
        sites,
        spinor: precision,
        gauge: precision,
        long_recon,
        ..Variant::default()
    }
}

/// Asqtad long links of random thin links on `lat`: L = −1/(24 u0²)·V V V with MILC's
/// phases and antiperiodic time folded into V (u0 = 0.9), so L = c·s·SU(3) with s the
/// staggered sign of each link.
fn asqtad_like_long(lat: Lattice) -> GaugeField<f64> {
    AsqtadLong::smear_cpu(&fold_staggered_phases(&random_gauge(lat, 41)), 0.9).unwrap()
}

/// The CPU hop of every `long_recons` × {f64, f32} × {even, odd, full} variant, which
/// rounds the long links through the compression itself, against the textbook on the
/// exact links. Relative-error bounds: f64 storage `tol64` (1e-13 for links that are
/// c·U(3) to rounding: the compression is then exact up to rounding; links read from an
/// f32 file are unitary only to ~1e-7 and the rebuilt rows differ by that); f32 3e-6 (f32
/// arithmetic, as for recon 18) — the long terms carry |c| ≈ 0.05 times the format's
/// error on W (≤ 1e-6 for recon 13 and 12 + sign, ≤ 5e-5 for recon 9 in qdsl-core's
/// format tests), below that. Also: the field's scale is `scale` (signed for recon 12 +
/// sign, |c| otherwise). Returns the number of variants checked.
fn check_against_textbook(
    (fat, long): (&GaugeField<f64>, &GaugeField<f64>),
    long_recons: &[LongRecon],
    scale: f64,
    tol64: f64,
) -> usize {
    let lat = *fat.lattice();
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = to_plain(&ColourSpinorField::gaussian(full, 21));
    let want = textbook_improved_staggered_hop(fat, long, &chi);
    let mut checked = 0;
    for &long_recon in long_recons {
        for precision in [StorageFormat::F64, StorageFormat::F32] {
            for sites in [
                OutputSites::Parity(Parity::Even),
                OutputSites::Parity(Parity::Odd),
                OutputSites::Full,
            ] {
                let v = variant(long_recon, precision, sites);
                assert!(ImprovedStaggeredHop::supports(&v), "{v}");
                let c = round_long_field(&v, &mut long.clone()).expect("storable long links");
                let want_c = if long_recon == LongRecon::R12 {
                    scale
                } else {
                    scale.abs()
                };
                assert_eq!(
                    c.map(|c| (c - want_c).abs() < 1e-12),
                    Some(true),
                    "{v}: {c:?}"
                );
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
                        .apply_cpu(&v, &mut out, &chi_f, fat, long, None)
                        .unwrap();
                    (rel_diff(&out, &want), tol64)
                } else {
                    let mut out = ColourSpinorField::<f32>::zeros(out_layout);
                    ImprovedStaggeredHop
                        .apply_cpu(&v, &mut out, &chi_f.cast(), &fat.cast(), &long.cast(), None)
                        .unwrap();
                    (rel_diff(&out, &want), 3e-6)
                };
                assert!(err < tol, "{v}: relative error {err:e}");
                checked += 1;
            }
        }
    }
    checked
}

/// Recon 13 and 9 on HISQ-like long links (U(3) products with phases): the CPU hop of
/// every variant against the textbook (see [`check_against_textbook`]).
#[test]
fn compressed_long_links_match_the_textbook_hop() {
    let lat = Lattice::new([4, 4, 2, 8]).unwrap();
    let (fat, long) = (random_matrices(lat, 23), hisq_like_long(lat));
    let recons = [LongRecon::R13, LongRecon::R9];
    let checked = check_against_textbook((&fat, &long), &recons, NAIK, 1e-13);
    assert_eq!(checked, 12);
}

/// Recon 12 + sign (and 13, 9) on asqtad long links built from random thin links: the
/// CPU hop against the textbook, the scale found being asqtad's Naik coefficient
/// −1/(24 u0²) with its sign. Also on L_t = 2, where a t-directed long link from the
/// last slice crosses the antiperiodic boundary twice (no sign) and one from t = 0 once.
#[test]
fn recon12_sign_long_links_match_the_textbook_hop() {
    let naik = -1.0 / (24.0 * 0.81);
    let all = [LongRecon::R13, LongRecon::R12, LongRecon::R9];
    for dims in [[4, 4, 2, 8], [2, 4, 4, 2]] {
        let lat = Lattice::new(dims).unwrap();
        let (fat, long) = (random_matrices(lat, 23), asqtad_like_long(lat));
        let checked = check_against_textbook((&fat, &long), &all, naik, 1e-13);
        assert_eq!(checked, 18, "{dims:?}");
    }
}

/// MILC's own asqtad links of its 8⁴ sample (another code's data): its long links are
/// c·s·SU(3) with s the staggered sign of qdsl's convention and c = −1/(24 u0²) for
/// MILC's u0 = 0.502, and the hop with long recon 12 + sign (and 13, 9) on fat.l8 and
/// long.l8 matches the textbook on the links as read.
#[test]
fn milc_long_links_are_recon12_sign_links() {
    let (fat, long) = (milc("fat.l8"), milc("long.l8"));
    // MILC stores f32: the recomputed scale agrees with −1/(24 u0²) to f32 rounding.
    let naik = -1.0 / (24.0 * 0.502 * 0.502);
    let v = variant(
        LongRecon::R12,
        StorageFormat::F64,
        OutputSites::Parity(Parity::Even),
    );
    let c = round_long_field(&v, &mut long.clone()).unwrap().unwrap();
    assert!((c - naik).abs() < 1e-6 * naik.abs(), "{c} vs {naik}");
    let all = [LongRecon::R13, LongRecon::R12, LongRecon::R9];
    assert_eq!(check_against_textbook((&fat, &long), &all, c, 1e-7), 18);
}

/// Recon 12 + sign needs long links whose determinant is the staggered sign times c³:
/// HISQ-like U(3) long links, and asqtad long links whose phases were folded with
/// another convention (here without the antiperiodic time boundary), are refused by the
/// CPU hop with an error that names the compression, a link and the way out.
#[test]
fn recon12_sign_refuses_links_of_another_kind() {
    let lat = Lattice::new([4, 4, 2, 8]).unwrap();
    let fat = random_matrices(lat, 23);
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(lat, SiteSubset::Single(Parity::Odd)),
        5,
    );
    let v = variant(
        LongRecon::R12,
        StorageFormat::F64,
        OutputSites::Parity(Parity::Even),
    );
    let periodic = {
        let folded = fold_staggered_phases(&random_gauge(lat, 41));
        // Undo the time-boundary flip of the last slice's t links.
        let undone = GaugeField::from_fn(lat, |x, mu| {
            let l = *folded.link_at(x, mu);
            if mu == 3 && x[3] + 1 == lat.extent(3) {
                l.scale(-1.0)
            } else {
                l
            }
        });
        AsqtadLong::smear_cpu(&undone, 0.9).unwrap()
    };
    for (long, what) in [(hisq_like_long(lat), "HISQ-like"), (periodic, "periodic")] {
        let mut out = ColourSpinorField::<f64>::zeros(SpinorLayout::staggered(
            lat,
            SiteSubset::Single(Parity::Even),
        ));
        let e = ImprovedStaggeredHop
            .apply_cpu(&v, &mut out, &chi, &fat, &long, None)
            .unwrap_err()
            .to_string();
        for needle in ["recon12+sign", "staggered sign", "site", "recon 13 or 9"] {
            assert!(e.contains(needle), "{what}: {needle:?} not in {e}");
        }
    }
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
    // Recon 12 + sign: no phase array; each long term's factor is the computed sign of
    // its link (at x forward, at x − 3μ̂ backward) times the scale.
    let v12 = Variant {
        long_recon: LongRecon::R12,
        ..v
    };
    let src = ImprovedStaggeredHop::cuda_source(&v12).unwrap();
    assert!(
        !src.contains("phase_long") && !src.contains("unpack_link8"),
        "{src}"
    );
    assert!(src.contains("const real scale_long,"));
    for mu in 0..4 {
        for at in [0, -3] {
            let factor = format!("staggered_sign<{mu}, 3, {at}>(x, L3) * scale_long");
            assert_eq!(src.matches(&factor).count(), 1, "{factor}");
        }
    }
}

/// Bytes per even output site, f32, by hand: out 24 B, 16 χ reads of 24 B, 8 fat links
/// of 72 B and 8 long links of 72 B (recon 18), 52 B (recon 13: 13 reals), 48 B (recon
/// 12 + sign: no phase), 36 B (recon 9) in QUDA's model; the minimal model reads χ once (24 B) and each of the 8 + 8 distinct
/// links once.
#[test]
fn byte_models_count_compressed_long_links() {
    for (long_recon, long_bytes) in [
        (LongRecon::R18, 72),
        (LongRecon::R13, 52),
        (LongRecon::R12, 48),
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

/// The CUDA source of f32, f64 and fixed16 variants with long recon 13, 12 + sign and 9
/// (both parities' worth of knobs: xpay, dagger) compiles with NVRTC for sm_80 and sm_90
/// and ptxas reports no spills. Skips with a message where libnvrtc is absent.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn compressed_long_link_variants_compile_without_spills() {
    let tc = nvrtc::Toolchain::load();
    for long_recon in [LongRecon::R13, LongRecon::R12, LongRecon::R9] {
        for precision in [
            StorageFormat::F32,
            StorageFormat::F64,
            StorageFormat::Fixed16,
        ] {
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

/// The generated source of the f32 long-recon-12 + sign hop (reviewed).
#[test]
fn long_recon12_sign_source_snapshot() {
    let v = variant(
        LongRecon::R12,
        StorageFormat::F32,
        OutputSites::Parity(Parity::Even),
    );
    insta::assert_snapshot!(
        "improved_staggered_hop_even_f32_long_recon12_sign",
        ImprovedStaggeredHop::cuda_source(&v).unwrap()
    );
}
