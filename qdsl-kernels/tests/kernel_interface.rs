//! A generated kernel carries its own interface ([`CompiledKernel`]): the parameter list
//! the emitter printed the signature from. Checked two ways: against the signature read
//! back from the source text, for every supported variant of every catalog kernel, and
//! against hand-written lists for three variants that exercise norms, compressed long
//! links and xpay.

mod variant_space;

use qdsl_core::dsl::interface::Geometry;
use qdsl_core::dsl::variant::{LongRecon, StorageFormat};
use qdsl_core::dsl::{KernelParam, Stencil, Variant};
use qdsl_kernels::{
    CloverApply, CoarseHop, CoarseOp, ImprovedStaggeredHop, NaiveStaggeredHop, TwistedMassTwist,
    WilsonClover, WilsonHop,
};

/// Every supported variant's parameter names equal the names in its printed signature;
/// the entry name and source are those of `cuda_source` and `kernel_name`.
fn matches_its_signature<S: Stencil>() {
    let mut checked = 0;
    for v in variant_space::variant_space()
        .iter()
        .filter(|v| S::supports(v))
    {
        let k = S::compiled(v).unwrap();
        let names: Vec<String> = k.params.iter().map(KernelParam::cuda_name).collect();
        assert_eq!(names, k.signature_names(), "{} [{v}]", k.name);
        assert_eq!(k.name, S::kernel_name(v));
        assert_eq!(k.source, S::cuda_source(v).unwrap());
        assert_eq!(k.geometry, Geometry::per_site(0));
        checked += 1;
    }
    assert!(checked > 0, "{}: no supported variant", S::ir().name);
}

#[test]
fn every_catalog_kernel_lists_the_parameters_it_declares() {
    matches_its_signature::<WilsonHop>();
    matches_its_signature::<NaiveStaggeredHop>();
    matches_its_signature::<ImprovedStaggeredHop>();
    matches_its_signature::<TwistedMassTwist>();
    matches_its_signature::<WilsonClover>();
    matches_its_signature::<CloverApply>();
    matches_its_signature::<CoarseHop>();
    matches_its_signature::<CoarseOp>();
}

fn names<S: Stencil>(v: &Variant) -> Vec<String> {
    S::compiled(v)
        .unwrap()
        .params
        .iter()
        .map(KernelParam::cuda_name)
        .collect()
}

/// Hand-written list of the improved staggered hop with xpay.
#[test]
fn improved_staggered_xpay_by_hand() {
    let v = Variant {
        xpay: true,
        ..Variant::default()
    };
    let want = [
        "f_out",
        "f_chi",
        "f_fat",
        "f_long",
        "xpay_x",
        "xpay_a",
        "xpay_b",
        "L0",
        "L1",
        "L2",
        "L3",
        "n_out",
        "stride_out",
        "stride_chi",
        "stride_fat",
        "stride_long",
        "stride_xpay_x",
    ];
    assert_eq!(names::<ImprovedStaggeredHop>(&v), want);
    let params = ImprovedStaggeredHop::compiled(&v).unwrap().params;
    // The input strides count the inputs in declaration order: χ, fat, long.
    assert_eq!(
        params[14],
        KernelParam::InputStride {
            name: "fat".into(),
            index: 1
        }
    );
}

/// Hand-written list of the improved staggered hop with long recon 9: the long pointer
/// is followed by its phases and scale; the fat field is untouched.
#[test]
fn improved_staggered_long_recon_by_hand() {
    let v = Variant {
        long_recon: LongRecon::R9,
        ..Variant::default()
    };
    let want = [
        "f_out",
        "f_chi",
        "f_fat",
        "f_long",
        "phase_long",
        "scale_long",
        "L0",
        "L1",
        "L2",
        "L3",
        "n_out",
        "stride_out",
        "stride_chi",
        "stride_fat",
        "stride_long",
    ];
    assert_eq!(names::<ImprovedStaggeredHop>(&v), want);
    let params = ImprovedStaggeredHop::compiled(&v).unwrap().params;
    assert_eq!(
        params[4],
        KernelParam::LongPhase {
            name: "long".into(),
            long: 0
        }
    );
    // Recon 12 + sign stores no phase: the scale follows the pointer.
    let v12 = Variant {
        long_recon: LongRecon::R12,
        ..v
    };
    assert_eq!(names::<ImprovedStaggeredHop>(&v12)[4], "scale_long");
}

/// Hand-written list of the Wilson hop in fixed16 with xpay: every colour-spinor pointer
/// (out, ψ, x) is followed by its norms, the gauge field has none.
#[test]
fn wilson_fixed16_xpay_by_hand() {
    let v = Variant {
        spinor: StorageFormat::Fixed16,
        gauge: StorageFormat::Fixed16,
        xpay: true,
        ..Variant::default()
    };
    let want = [
        "f_out",
        "norm_out",
        "f_psi",
        "norm_psi",
        "f_u",
        "xpay_x",
        "norm_xpay_x",
        "xpay_a",
        "xpay_b",
        "L0",
        "L1",
        "L2",
        "L3",
        "n_out",
        "stride_out",
        "stride_psi",
        "stride_u",
        "stride_xpay_x",
    ];
    assert_eq!(names::<WilsonHop>(&v), want);
}
