//! The generator's pieces of a distributed operator: the sub-box variants (the knob
//! `region: Region::SubBox`, the interior and exterior launches on a rank's extended
//! lattice) and the face pack/unpack kernels, for the Wilson, clover and improved
//! staggered stencils and every storage format. The whole-parity sources are unchanged
//! by the knob (the manifest tests hash them); the sub-box sources differ only in the
//! prologue and the parameters; every new kernel compiles with NVRTC. (That a sub-box
//! launch computes exactly the single-process result is a GPU test:
//! `qdsl_runtime::distributed::device`.)

mod nvrtc;

use qdsl_core::dsl::emit::cuda::face::{FaceDirection, FaceKernel};
use qdsl_core::dsl::halo_spin::FaceProjection;
use qdsl_core::dsl::variant::{LongRecon, OutputSites, Recon, Region, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, KernelParam, Stencil, Variant};
use qdsl_core::lattice::Parity;
use qdsl_kernels::{CoarseHop, ImprovedStaggeredHop, WilsonClover, WilsonHop};

fn boxed(v: Variant) -> Variant {
    Variant {
        region: Region::SubBox,
        ..v
    }
}

/// The variants the distributed even-odd operators launch (odd output, f32/fixed16,
/// dagger and xpay), as whole-parity and sub-box pairs.
fn operator_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for (spinor, recon) in [
        (StorageFormat::F64, Recon::R18),
        (StorageFormat::F32, Recon::R12),
        (StorageFormat::Fixed16, Recon::R12),
    ] {
        for (dagger, xpay) in [(false, false), (true, true)] {
            out.push(Variant {
                sites: OutputSites::Parity(Parity::Odd),
                dagger,
                xpay,
                spinor,
                gauge: spinor,
                recon,
                boundary: TimeBoundary::Periodic,
                ..Variant::default()
            });
        }
    }
    out
}

/// The knob names itself in the canonical string only when on, so every existing
/// variant keeps its name, hash and tune-cache key.
#[test]
fn region_knob_leaves_existing_names_unchanged() {
    let v = Variant::default();
    assert!(!v.canonical().contains("region"));
    assert_eq!(
        boxed(v).canonical(),
        format!("{} region=box", v.canonical())
    );
    assert_ne!(boxed(v).stable_hash(), v.stable_hash());
}

/// A sub-box source is the whole-parity source with only the index prologue, the box
/// parameters, the `box_site` helper and the name changed: every term, load and store
/// line of the whole-parity kernel is in it.
#[test]
fn sub_box_changes_only_the_prologue() {
    for v in operator_variants() {
        let whole = WilsonHop::cuda_source(&v).unwrap();
        let sub = WilsonHop::cuda_source(&boxed(v)).unwrap();
        assert!(!whole.contains("box_site"));
        assert!(sub.contains("if (!box_site(thread, parity, lo, n, x)) return;"));
        assert!(sub.contains(
            "const int box_lo0, const int box_lo1, const int box_lo2, const int box_lo3"
        ));
        assert!(sub.contains("const int io = s5 * half + i;"));
        let body = whole.split_once("cplx{0, 0}; }").unwrap().1;
        let sub_body = sub.split_once("cplx{0, 0}; }").unwrap().1;
        assert_eq!(body, sub_body, "{}", v.canonical());
    }
}

/// The compiled interface lists the box corner and extents after `n_out`.
#[test]
fn sub_box_interface_has_box_parameters() {
    let v = boxed(operator_variants()[2]);
    let k = WilsonHop::compiled(&v).unwrap();
    let names: Vec<String> = k.params.iter().map(|p| p.cuda_name()).collect();
    let n_out = names.iter().position(|n| n == "n_out").unwrap();
    assert_eq!(
        &names[n_out + 1..n_out + 9],
        ["box_lo0", "box_lo1", "box_lo2", "box_lo3", "box_n0", "box_n1", "box_n2", "box_n3"]
    );
    assert!(k.params.contains(&KernelParam::BoxExtent(3)));
    let whole = WilsonHop::compiled(&operator_variants()[2]).unwrap();
    assert!(!whole.params.contains(&KernelParam::BoxLo(0)));
}

/// A box needs one output parity and the 3-colour generator.
#[test]
fn sub_box_refuses_full_output_and_dense_stencils() {
    let full = boxed(Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    });
    match WilsonHop::cuda_source(&full) {
        Err(DslError::UnsupportedVariant { knob, reason, .. }) => {
            assert_eq!(knob, "region");
            assert!(reason.contains("one-parity"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    match CoarseHop::cuda_source(&boxed(Variant::default())) {
        Err(DslError::UnsupportedVariant { knob, .. }) => assert_eq!(knob, "region"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Face kernels: names, parameter order, the raw path for equal fixed-point formats
/// (words and norm, integers negated), the decode/encode path otherwise.
#[test]
fn face_kernels_move_sites_by_their_codecs() {
    let pack = FaceKernel {
        reals: 24,
        field: StorageFormat::Fixed16,
        wire: StorageFormat::Fixed16,
        direction: FaceDirection::Pack,
        projection: None,
    };
    let k = pack.compile().unwrap();
    assert_eq!(k.name, "qdsl_face_pack_r24_fixed16_fixed16");
    assert!(k.source.contains("norm_face[slot] = norm_field[site];"));
    assert!(k
        .source
        .contains("(unsigned)(-(int)(short)raw_real<2>(w, k))"));
    let names: Vec<String> = k.params.iter().map(|p| p.cuda_name()).collect();
    assert_eq!(
        names[..5],
        ["f_field", "norm_field", "f_face", "norm_face", "sign"]
    );
    let narrow = FaceKernel {
        field: StorageFormat::F32,
        ..pack
    }
    .compile()
    .unwrap();
    assert!(narrow.source.contains("v[k] *= sign;"));
    assert!(narrow.source.contains("norm_face[slot] = norm;"));
    let unpack = FaceKernel {
        field: StorageFormat::F32,
        direction: FaceDirection::Unpack,
        ..pack
    }
    .compile()
    .unwrap();
    assert!(!unpack.source.contains("const real sign"));
    let names: Vec<String> = unpack.params.iter().map(|p| p.cuda_name()).collect();
    assert_eq!(names[..3], ["f_face", "norm_face", "f_field"]);
}

/// Spin-projected faces: the Wilson spec's halos carry (1 ∓ γ_μ) (flipped for the
/// dagger), the pack kernel sends 12 reals computed with the hop's projection
/// expression, the unpack stores the halved reconstruction; staggered and whole-site
/// kernels keep their names and sources.
#[test]
fn projected_face_kernels_carry_half_spinors_of_the_specs_projectors() {
    use qdsl_core::dsl::halo_spin::HaloProjections;
    use qdsl_core::lattice::Side;
    let wilson = HaloProjections::of(&WilsonHop::ir(), false);
    let dagger = HaloProjections::of(&WilsonHop::ir(), true);
    for mu in 0..4 {
        // x + μ̂ through (1 − γ_μ): the forward halo, sent by the neighbour backwards.
        assert_eq!(
            wilson.halo(mu, Side::Forward),
            Some(FaceProjection { mu, sign: -1 })
        );
        assert_eq!(
            wilson.sent(mu, Side::Backward),
            Some(FaceProjection { mu, sign: -1 })
        );
        assert_eq!(
            dagger.halo(mu, Side::Forward),
            Some(FaceProjection { mu, sign: 1 })
        );
    }
    assert!(HaloProjections::of(&ImprovedStaggeredHop::ir(), false).is_none());
    let pack = FaceKernel {
        reals: 24,
        field: StorageFormat::F32,
        wire: StorageFormat::F32,
        direction: FaceDirection::Pack,
        projection: Some(FaceProjection { mu: 3, sign: -1 }),
    };
    let k = pack.compile().unwrap();
    assert_eq!(k.name, "qdsl_face_pack_r24_f32_f32_p3m");
    // γ_t rows 0, 1 have their entry 1 in columns 2, 3: h_r = ψ_r − ψ_{r+2}.
    assert!(
        k.source.contains("c_sub(sp[0][a], sp[2][a])"),
        "{}",
        k.source
    );
    assert!(k.source.contains("c_sub(sp[1][a], sp[3][a])"));
    assert!(k.source.contains("real h[12];"));
    let unpack = FaceKernel {
        direction: FaceDirection::Unpack,
        projection: Some(FaceProjection { mu: 0, sign: 1 }),
        ..pack
    }
    .compile()
    .unwrap();
    // (1 + γ_x): rows 2, 3 are −i times h_1, h_0 (γ_x's entries −i in columns 1, 0).
    assert!(unpack.source.contains("const int j = 6 + 2 * a; v[12 + 2 * a] = (h[j + 1]) * (real)0.5; v[12 + 2 * a + 1] = (-h[j]) * (real)0.5;"), "{}", unpack.source);
    let staggered = FaceKernel { reals: 6, ..pack };
    assert!(matches!(
        staggered.compile(),
        Err(DslError::UnsupportedVariant { .. })
    ));
    let whole = FaceKernel {
        projection: None,
        ..pack
    };
    assert_eq!(whole.compile().unwrap().name, "qdsl_face_pack_r24_f32_f32");
    assert!(!whole.compile().unwrap().source.contains("sp[4][3]"));
}

#[test]
fn face_kernels_refuse_mixed_precisions_and_two_narrow_formats() {
    for (field, wire) in [
        (StorageFormat::F64, StorageFormat::Fixed16),
        (StorageFormat::F64, StorageFormat::F32),
        (StorageFormat::Fixed16, StorageFormat::F16),
    ] {
        let k = FaceKernel {
            reals: 24,
            field,
            wire,
            direction: FaceDirection::Pack,
            projection: None,
        };
        assert!(
            matches!(k.compile(), Err(DslError::UnsupportedVariant { .. })),
            "{field:?} → {wire:?}"
        );
    }
}

/// The sub-box improved staggered variants the distributed operator launches (no dagger
/// knob: A's adjoint is −D; the long links plain or compressed to 13 reals; links f32
/// beside narrow spinors).
fn staggered_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for spinor in [
        StorageFormat::F64,
        StorageFormat::F32,
        StorageFormat::Fixed16,
    ] {
        let gauge = if spinor == StorageFormat::F64 {
            StorageFormat::F64
        } else {
            StorageFormat::F32
        };
        for (xpay, long_recon) in [
            (false, LongRecon::R18),
            (true, LongRecon::R18),
            (false, LongRecon::R13),
        ] {
            out.push(boxed(Variant {
                sites: OutputSites::Parity(Parity::Odd),
                xpay,
                spinor,
                gauge,
                long_recon,
                ..Variant::default()
            }));
        }
    }
    out
}

/// Every face kernel a distributed operator uses (Wilson 24 reals, staggered 6; the
/// field's own format on the wire, and fixed16 faces of f32 fields), packing and
/// unpacking.
fn face_kernels() -> Vec<FaceKernel> {
    let mut out = Vec::new();
    for reals in [24, 6] {
        for (field, wire) in [
            (StorageFormat::F64, StorageFormat::F64),
            (StorageFormat::F32, StorageFormat::F32),
            (StorageFormat::F32, StorageFormat::Fixed16),
            (StorageFormat::Fixed16, StorageFormat::Fixed16),
            (StorageFormat::F16, StorageFormat::F16),
        ] {
            for direction in [FaceDirection::Pack, FaceDirection::Unpack] {
                out.push(FaceKernel {
                    reals,
                    field,
                    wire,
                    direction,
                    projection: None,
                });
                // Spin-projected faces of 4-spin fields, every projector.
                if reals == 24 {
                    for mu in 0..4 {
                        for sign in [-1, 1] {
                            out.push(FaceKernel {
                                reals,
                                field,
                                wire,
                                direction,
                                projection: Some(FaceProjection { mu, sign }),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The sub-box Wilson, clover and improved staggered (long links compressed or not)
/// variants and every face kernel compile with NVRTC for sm_80 and sm_90, and ptxas
/// accepts them.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn distributed_kernels_compile_with_nvrtc() {
    let tc = nvrtc::Toolchain::load();
    let mut program = String::new();
    let mut entries = Vec::new();
    let mut add = |source: String, name: String, tag: &str| {
        program.push_str(&format!("namespace {tag} {{\n{source}}}\n"));
        entries.push(name);
    };
    for (k, v) in operator_variants().into_iter().enumerate() {
        let v = boxed(v);
        add(
            WilsonHop::cuda_source(&v).unwrap(),
            WilsonHop::kernel_name(&v),
            &format!("wilson_{k}"),
        );
        add(
            WilsonClover::cuda_source(&v).unwrap(),
            WilsonClover::kernel_name(&v),
            &format!("clover_{k}"),
        );
    }
    for (k, v) in staggered_variants().into_iter().enumerate() {
        add(
            ImprovedStaggeredHop::cuda_source(&v).unwrap(),
            ImprovedStaggeredHop::kernel_name(&v),
            &format!("staggered_{k}"),
        );
    }
    for (k, f) in face_kernels().into_iter().enumerate() {
        let c = f.compile().unwrap();
        add(c.source, c.name, &format!("face_{k}"));
    }
    assert!(
        entries.len() == 6 + 6 + 9 + 20 + 80,
        "{} kernels",
        entries.len()
    );
    for arch in ["sm_80", "sm_90"] {
        tc.compile_checked(
            &program,
            &format!("distributed_{arch}"),
            arch,
            &entries,
            true,
        );
    }
}
