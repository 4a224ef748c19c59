//! Fixed-point gauge links with a global scale (`link_scale = global`, QUDA's fat-link
//! fixed point: v = s·q/Q, s = max |entry| of the field, passed as `scale_<field>`):
//! the CPU hop on MILC's real asqtad links (fat.l8 reaches 8.3, beyond unit-scale fixed
//! point) against the hand-written textbook hop on the exact links within a bound derived
//! from Q and the scales, the CUDA source against the unit-scale one line by line, the
//! refusals, and NVRTC compiles without spills of every catalog kernel's new variants.

mod nvrtc;
mod stencil_support;

use qdsl_core::dsl::codec::global_link_scale;
use qdsl_core::dsl::storage::round_gauge_field_for;
use qdsl_core::dsl::variant::{LinkScale, LongRecon, OutputSites, Recon, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, SiteSubset, SpinorLayout};
use qdsl_core::format::{FixedWidth, LinkStorage};
use qdsl_core::lattice::Parity;
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist, WilsonHop};
use stencil_support::*;

fn global(spinor: StorageFormat, gauge: StorageFormat, sites: OutputSites) -> Variant {
    Variant {
        sites,
        spinor,
        gauge,
        link_scale: LinkScale::Global,
        ..Variant::default()
    }
}

/// max |z| over a plain field.
fn max_abs(p: &Plain) -> f64 {
    p.iter()
        .flatten()
        .flatten()
        .map(|z| z.norm())
        .fold(0.0, f64::max)
}

/// The improved staggered hop (fat links and long links read as recon 18, both with
/// their global scale) on MILC's fat.l8 and long.l8, f32 spinors, fixed16 and fixed8
/// links, even, odd and full output, against the textbook on the links as read. Each
/// stored real of a field with scale s is within e = s·(1/(2Q) + 2^−53 + 2.0001·u32) of
/// the file's ([`LinkStorage::element_bound`] times s), so each output component moves by
/// at most Σ over the 8 fat and 8 long hops and 3 colours of |ΔU_ab|·|χ_b| ≤
/// 8·3·√2·(e_fat + e_long)·max|χ|; the f32 arithmetic adds 3e-6 of max|out| (as the other
/// f32 hops). The same hop on the links rounded by `round_gauge_field_for` (the host side
/// of the codec) matches the textbook on those to f32 arithmetic: the CPU path rounds
/// exactly so. Unit-scale fixed point refuses these links, naming the field.
#[test]
fn milc_asqtad_links_with_a_global_scale_match_the_textbook_hop() {
    let (fat, long) = (milc("fat.l8"), milc("long.l8"));
    let (s_fat, s_long) = (global_link_scale(&fat), global_link_scale(&long));
    assert!(s_fat > 1.0, "fat.l8 reaches beyond 1: {s_fat}");
    let lat = *fat.lattice();
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = to_plain(&ColourSpinorField::gaussian(full, 21));
    let want = textbook_improved_staggered_hop(&fat, &long, &chi);
    let (chi_max, out_max) = (max_abs(&chi), max_abs(&want));
    let mut checked = 0;
    for (gauge, width) in [
        (StorageFormat::Fixed16, FixedWidth::Bits16),
        (StorageFormat::Fixed8, FixedWidth::Bits8),
    ] {
        let e = LinkStorage::Fixed(width).element_bound::<f32>(true);
        let bound = 8.0 * 3.0 * 2f64.sqrt() * e * (s_fat + s_long) * chi_max + 3e-6 * out_max;
        for sites in [
            OutputSites::Parity(Parity::Even),
            OutputSites::Parity(Parity::Odd),
            OutputSites::Full,
        ] {
            let v = global(StorageFormat::F32, gauge, sites);
            assert!(ImprovedStaggeredHop::supports(&v), "{v}");
            let (out_s, in_s) = match sites {
                OutputSites::Parity(p) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
                OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
            };
            let chi_f = from_plain(&chi, SpinorLayout::staggered(lat, in_s)).cast::<f32>();
            let mut out = ColourSpinorField::<f32>::zeros(SpinorLayout::staggered(lat, out_s));
            ImprovedStaggeredHop
                .apply_cpu(&v, &mut out, &chi_f, &fat.cast(), &long.cast(), None)
                .unwrap();
            let err = rel_diff(&out, &want) * out_max;
            println!("{v}: max |Δ out| {err:.3e} (bound {bound:.3e}, max |out| {out_max:.3})");
            assert!(err <= bound, "{v}: {err:e} > {bound:e}");
            // The host side of the codec on the f32 links the hop was given, then the
            // textbook on the rounded links.
            let (mut fat_r, mut long_r) = (fat.cast::<f32>(), long.cast::<f32>());
            let s32 = |s: f64| Some(f64::from(s as f32));
            assert_eq!(round_gauge_field_for(&v, &mut fat_r).unwrap(), s32(s_fat));
            assert_eq!(round_gauge_field_for(&v, &mut long_r).unwrap(), s32(s_long));
            let want_r = textbook_improved_staggered_hop(&fat_r.cast(), &long_r.cast(), &chi);
            let err_r = rel_diff(&out, &want_r);
            assert!(err_r < 3e-6, "{v}: {err_r:e} against the rounded links");
            // Unit scale: fat.l8 does not fit.
            let unit = Variant {
                link_scale: LinkScale::Unit,
                ..v
            };
            let e = ImprovedStaggeredHop
                .apply_cpu(&unit, &mut out, &chi_f, &fat.cast(), &long.cast(), None)
                .unwrap_err()
                .to_string();
            assert!(e.contains("fat") && e.contains(gauge.name()), "{e}");
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

/// The global-scale source differs from the unit-scale one only where the scale enters:
/// the variant's name and hash (header, entry name), one `const real scale_<field>`
/// parameter per gauge field, and the factor `scale_<field>` beside `inv_q_<fmt>()` in
/// each link's accumulation (8 fat and 8 long terms of the improved hop).
#[test]
fn global_scale_source_differs_only_where_the_scale_enters() {
    let unit = Variant {
        link_scale: LinkScale::Unit,
        xpay: true,
        ..global(
            StorageFormat::Fixed16,
            StorageFormat::Fixed16,
            OutputSites::Parity(Parity::Odd),
        )
    };
    let v = Variant {
        link_scale: LinkScale::Global,
        ..unit
    };
    let (a, b) = (
        ImprovedStaggeredHop::cuda_source(&unit).unwrap(),
        ImprovedStaggeredHop::cuda_source(&v).unwrap(),
    );
    let (ha, hb) = (
        format!("{:016x}", unit.stable_hash()),
        format!("{:016x}", v.stable_hash()),
    );
    assert!(b.contains("const real scale_fat,") && b.contains("const real scale_long,"));
    assert!(!a.contains("scale_fat") && !a.contains("scale_long"));
    for field in ["fat", "long"] {
        let factor = format!("scale_{field} * inv_q_fixed16()");
        assert_eq!(b.matches(&factor).count(), 8, "{factor}");
    }
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(lb.len(), la.len() + 2, "two parameter lines more");
    let mut ia = la.iter().peekable();
    for line in &lb {
        if line.contains("const real scale_") {
            continue;
        }
        let other = ia.next().expect("a line of the unit source");
        if line == other {
            continue;
        }
        let explained = line.contains(&hb) && other.contains(&ha)
            || line.contains("link_scale=global")
            || line
                .replace("scale_fat * ", "")
                .replace("scale_long * ", "")
                == **other;
        assert!(explained, "unexplained difference:\n{other}\n{line}");
    }
}

/// A global scale needs fixed-point recon-18 links: f32 links and recon 12 are refused by
/// the knob's name, and `supports` says no.
#[test]
fn global_scale_needs_fixed_point_recon18_links() {
    let f32_links = global(
        StorageFormat::F32,
        StorageFormat::F32,
        OutputSites::Parity(Parity::Even),
    );
    let r12 = Variant {
        recon: Recon::R12,
        ..global(
            StorageFormat::Fixed16,
            StorageFormat::Fixed16,
            OutputSites::Parity(Parity::Even),
        )
    };
    for v in [f32_links, r12] {
        let e = WilsonHop::cuda_source(&v).unwrap_err().to_string();
        assert!(e.contains("link_scale"), "{e}");
        assert!(!WilsonHop::supports(&v));
    }
}

/// The global-scale variants: fixed16 and fixed8 links under every spinor format (f64,
/// f32, the link format itself), plain and with dagger + xpay, and for the improved hop
/// with long recon 12 + sign (the long links keep their own scale c); those a kernel's
/// knobs exclude are left out.
fn global_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for gauge in [StorageFormat::Fixed16, StorageFormat::Fixed8] {
        for spinor in [StorageFormat::F64, StorageFormat::F32, gauge] {
            for (dagger, xpay) in [(false, false), (true, true)] {
                for long_recon in [LongRecon::R18, LongRecon::R12] {
                    out.push(Variant {
                        dagger,
                        xpay,
                        long_recon,
                        ..global(spinor, gauge, OutputSites::Parity(Parity::Odd))
                    });
                }
            }
        }
    }
    out
}

/// Every global-scale variant of every catalog hop compiles with NVRTC for sm_80 and
/// sm_90 and ptxas reports no spills.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn global_scale_variants_compile_without_spills() {
    type Source = fn(&Variant) -> Result<String, qdsl_core::dsl::DslError>;
    type Name = fn(&Variant) -> String;
    let kernels: [(Source, Name); 4] = [
        (WilsonHop::cuda_source, WilsonHop::kernel_name),
        (
            NaiveStaggeredHop::cuda_source,
            NaiveStaggeredHop::kernel_name,
        ),
        (
            ImprovedStaggeredHop::cuda_source,
            ImprovedStaggeredHop::kernel_name,
        ),
        (TwistedMassTwist::cuda_source, TwistedMassTwist::kernel_name),
    ];
    let tc = nvrtc::Toolchain::load();
    let mut compiled = 0;
    for (source, kernel_name) in kernels {
        for v in global_variants() {
            let Ok(src) = source(&v) else { continue };
            let name = kernel_name(&v);
            for arch in ["sm_80", "sm_90"] {
                tc.compile_checked(&src, &name, arch, std::slice::from_ref(&name), true);
            }
            compiled += 1;
        }
    }
    // Long recon 12 + sign only for the improved hop: 12 + 12 + 24 + 12.
    assert_eq!(compiled, 60);
}

/// The interface the runtime binds by: a globally scaled fat field is followed by its
/// codec's `FieldScale` argument (same input index), and with long recon 12 + sign the long field keeps its
/// own `LongScale` instead (written out by hand, in signature order up to the xpay).
#[test]
fn the_interface_lists_each_scale_after_its_field() {
    use qdsl_core::dsl::codec::{ArgOwner, ExtraArg};
    use qdsl_core::dsl::KernelParam as P;
    let v = Variant {
        long_recon: LongRecon::R12,
        ..global(
            StorageFormat::Fixed16,
            StorageFormat::Fixed16,
            OutputSites::Parity(Parity::Even),
        )
    };
    let params = ImprovedStaggeredHop::compiled(&v).unwrap().params;
    let input = |name: &str, index| P::Input {
        name: name.into(),
        index,
    };
    let want = [
        P::Output("out".into()),
        P::Extra {
            arg: ExtraArg::SiteNorm,
            field: "out".into(),
            owner: ArgOwner::Output,
        },
        input("chi", 0),
        P::Extra {
            arg: ExtraArg::SiteNorm,
            field: "chi".into(),
            owner: ArgOwner::Input(0),
        },
        input("fat", 1),
        P::Extra {
            arg: ExtraArg::FieldScale,
            field: "fat".into(),
            owner: ArgOwner::Input(1),
        },
        input("long", 2),
        P::LongScale {
            name: "long".into(),
            long: 0,
        },
    ];
    assert_eq!(params[..want.len()], want, "{params:?}");
}
