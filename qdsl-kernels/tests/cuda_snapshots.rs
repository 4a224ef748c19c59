//! Snapshots of the generated CUDA C++ (reviewed, not blindly accepted): the full source
//! of representative variants of each catalog kernel, and a manifest naming every
//! variant's kernel with a hash of its source, so that a change in any of the 384
//! sources shows up in review. Also: the generator is deterministic.

use qdsl_core::dsl::variant::{fnv1a, OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::lattice::Parity;
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist, WilsonHop};

type Source = fn(&Variant) -> Result<String, qdsl_core::dsl::DslError>;
type Name = fn(&Variant) -> String;

fn f32_recon12_antiperiodic() -> Variant {
    Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    }
}

fn odd_dagger_xpay_f64() -> Variant {
    Variant {
        sites: OutputSites::Parity(Parity::Odd),
        dagger: true,
        xpay: true,
        ..Variant::default()
    }
}

#[test]
fn wilson_hop_sources() {
    insta::assert_snapshot!(
        "wilson_hop_even_f32_recon12_antiperiodic",
        WilsonHop::cuda_source(&f32_recon12_antiperiodic()).unwrap()
    );
    insta::assert_snapshot!(
        "wilson_hop_odd_dagger_xpay_f64_recon18",
        WilsonHop::cuda_source(&odd_dagger_xpay_f64()).unwrap()
    );
}

#[test]
fn staggered_hop_sources() {
    let full = Variant {
        sites: OutputSites::Full,
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    insta::assert_snapshot!(
        "naive_staggered_hop_full_f32_recon18",
        NaiveStaggeredHop::cuda_source(&full).unwrap()
    );
    insta::assert_snapshot!(
        "improved_staggered_hop_odd_dagger_xpay_f64",
        ImprovedStaggeredHop::cuda_source(&odd_dagger_xpay_f64()).unwrap()
    );
}

#[test]
fn twisted_mass_twist_sources() {
    insta::assert_snapshot!(
        "twisted_mass_twist_odd_dagger_xpay_f64",
        TwistedMassTwist::cuda_source(&odd_dagger_xpay_f64()).unwrap()
    );
}

/// The narrow storage formats: the fixed16 Wilson hop with recon 12 (norm arrays, raw
/// uint4/uint2 loads, the fixed-point encode on store), the f16 Wilson hop with recon 8
/// and xpay (the recon-8 reconstruction, f16 decode and encode), and the fixed16
/// improved staggered hop with xpay (odd-size records in 4-byte chunks, x's norms).
#[test]
fn narrow_storage_sources() {
    let fixed16 = Variant {
        spinor: StorageFormat::Fixed16,
        gauge: StorageFormat::Fixed16,
        recon: Recon::R12,
        ..Variant::default()
    };
    insta::assert_snapshot!(
        "wilson_hop_even_fixed16_recon12",
        WilsonHop::cuda_source(&fixed16).unwrap()
    );
    let f16_recon8 = Variant {
        spinor: StorageFormat::F16,
        gauge: StorageFormat::F16,
        recon: Recon::R8,
        xpay: true,
        ..Variant::default()
    };
    insta::assert_snapshot!(
        "wilson_hop_even_xpay_f16_recon8",
        WilsonHop::cuda_source(&f16_recon8).unwrap()
    );
    let staggered = Variant {
        sites: OutputSites::Parity(Parity::Odd),
        xpay: true,
        recon: Recon::R18,
        ..fixed16
    };
    insta::assert_snapshot!(
        "improved_staggered_hop_odd_xpay_fixed16_recon18",
        ImprovedStaggeredHop::cuda_source(&staggered).unwrap()
    );
}

/// One line per variant of every catalog kernel: kernel name, variant, source length and
/// FNV-1a hash of the source.
#[test]
fn manifest_of_every_variant() {
    let mut manifest = String::new();
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
    for (source, name) in kernels {
        for v in Variant::all() {
            let Ok(src) = source(&v) else {
                manifest.push_str(&format!("{} [{v}] excluded by the spec\n", name(&v)));
                continue;
            };
            manifest.push_str(&format!(
                "{} [{v}] {} bytes, fnv {:016x}\n",
                name(&v),
                src.len(),
                fnv1a(src.as_bytes())
            ));
        }
    }
    insta::assert_snapshot!("catalog_manifest", manifest);
}

/// Same spec and variant → byte-identical source; different variants → different
/// sources and entry names; the entry name is the one in the source.
#[test]
fn generator_is_deterministic() {
    let all = Variant::all();
    let mut seen = std::collections::HashSet::new();
    for v in &all {
        let a = WilsonHop::cuda_source(v).unwrap();
        assert_eq!(a, WilsonHop::cuda_source(v).unwrap());
        assert!(a.contains(&format!(
            "extern \"C\" __global__ void {}(",
            WilsonHop::kernel_name(v)
        )));
        assert!(seen.insert(a));
    }
}
