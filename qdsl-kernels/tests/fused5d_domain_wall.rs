//! The domain-wall chains of the catalog (`fused5d!`, [`qdsl_kernels::domain_wall`]):
//! their kernel IR (where the pieces, shared-memory stores and barriers go), snapshots
//! of their generated CUDA (reviewed), and NVRTC compiles with the `ptxas -v` register
//! and spill report.

mod nvrtc;

use qdsl_core::dsl::fused5d::{Fused5d, FusedVariant, M5invMode};
use qdsl_core::dsl::kernel_ir::{KernelIr, RowDest, RowReach, Stmt};
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{KernelParam, Variant};
use qdsl_core::lattice::Parity;
use qdsl_kernels::domain_wall::{self, *};

fn variant(spinor: StorageFormat, recon: Recon, xpay: bool, ls: usize) -> FusedVariant {
    FusedVariant {
        variant: Variant {
            sites: OutputSites::Parity(Parity::Even),
            spinor,
            gauge: spinor,
            recon,
            xpay,
            boundary: TimeBoundary::Antiperiodic,
            ..Variant::default()
        },
        ls,
        m5inv: Default::default(),
    }
}

/// Every statement of the kernel, depth first.
fn stmts(k: &KernelIr) -> Vec<Stmt> {
    fn walk(body: &[Stmt], out: &mut Vec<Stmt>) {
        for s in body {
            out.push(s.clone());
            if let Stmt::Scope { body, .. } | Stmt::If { body, .. } | Stmt::Build { body, .. } = s {
                walk(body, out);
            }
        }
    }
    let mut out = Vec::new();
    for st in &k.stages {
        walk(&st.body, &mut out);
    }
    out
}

fn rows(k: &KernelIr) -> Vec<(String, RowReach, RowDest)> {
    stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::ChiralRow(r) => Some((r.piece, r.reach, r.dest)),
            _ => None,
        })
        .collect()
}

fn solves(k: &KernelIr) -> Vec<(String, String)> {
    stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::ChiralSolve(r) => Some((r.piece, r.matrix)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_pieces_land_on_the_source_or_the_accumulator() {
    let v = variant(StorageFormat::F32, Recon::R12, false, 12);
    // M5pre * M5inv * Dw * M5pre: M_φ on each of the 8 terms' source, then M5⁻¹ (solved
    // in place from M5) and M_φ (neighbours) on the accumulator.
    let k = MobiusM5preM5invDslash4M5pre::kernel_ir(&v).unwrap();
    let r = rows(&k);
    assert_eq!(r.len(), 8 + 1);
    assert!(r[..8].iter().all(|x| x
        == &(
            "Mphi".to_string(),
            RowReach::Neighbours,
            RowDest::Reals("r")
        )));
    assert_eq!(
        r[8],
        ("Mphi".into(), RowReach::Neighbours, RowDest::Accumulator)
    );
    assert_eq!(solves(&k), [("M5inv".to_string(), "chiral_m5".to_string())]);
    // Two barriers per term inside the terms.
    let barriers = stmts(&k)
        .iter()
        .filter(|s| matches!(s, Stmt::Barrier))
        .count();
    assert_eq!(barriers, 16);
    // The matrices, each once, after the stencil parameters.
    let matrices: Vec<String> = k
        .params
        .iter()
        .filter(|p| matches!(p.role, KernelParam::ChiralMatrices(_)))
        .map(|p| p.role.cuda_name())
        .collect();
    assert_eq!(matrices, ["chiral_mphi", "chiral_m5"]);
    assert!(matches!(
        k.params.last().map(|p| &p.role),
        Some(KernelParam::ChiralMatrices(_))
    ));
    // MSPCG's (M5⁻¹)† M5⁻¹ D_w: two solves on the column, M5⁻¹ first, then the column
    // back into the accumulator.
    let k = MspcgM5invDagM5invDw::kernel_ir(&v).unwrap();
    assert!(rows(&k).is_empty());
    assert_eq!(
        solves(&k),
        [
            ("M5inv".to_string(), "chiral_m5".to_string()),
            ("M5inv.dagger()".to_string(), "chiral_m5_dagger".to_string())
        ]
    );
    assert!(matches!(stmts(&k).last(), Some(Stmt::SharedLoadAcc { .. })));
    assert!(!stmts(&k).iter().any(|s| matches!(s, Stmt::Barrier)));
    // The daggered hop: the Wilson hop's dagger knob (H† = γ5 H γ5: the projectors
    // 1 ± γ_μ swap), the variant's dagger knob off.
    let dag = MspcgMphiDagDwDag::cuda_source(&v).unwrap();
    assert!(dag.contains("constexpr bool DAGGER = true;"));
    assert!(dag.contains("term 0: +1 * (1 + gamma(0)) * u[0](x) * psi(x + mu0)"));
    let plain = MobiusDslash4M5invM5pre::cuda_source(&v).unwrap();
    assert!(plain.contains("term 0: +1 * (1 - gamma(0)) * u[0](x) * psi(x + mu0)"));
}

#[test]
fn the_xpay_operand_goes_through_m5() {
    let v = variant(StorageFormat::F32, Recon::R12, true, 8);
    let k = MobiusDslash4XpayM5mob::kernel_ir(&v).unwrap();
    assert_eq!(
        rows(&k),
        [("M5".to_string(), RowReach::Neighbours, RowDest::Reals("xr"))]
    );
    let src = MobiusDslash4XpayM5mob::cuda_source(&v).unwrap();
    // xr is loaded once, by the stage before the epilogue.
    assert_eq!(src.matches("real xr[24];").count(), 1);
    assert!(src.contains("xpay_a * xr[6 * q + 2 * a]"));
    // Without xpay the chain is refused.
    assert!(
        MobiusDslash4XpayM5mob::compiled(&variant(StorageFormat::F32, Recon::R12, false, 8))
            .is_err()
    );
}

#[test]
fn every_chain_is_launched_as_sites_by_slices() {
    for e in domain_wall::chains() {
        let xpay = (e.chain)().xpay.is_some();
        let k = (e.compiled)(&variant(StorageFormat::F32, Recon::R12, xpay, 12)).unwrap();
        // One s-column of 24 reals per thread where an s-local piece reads it; none for
        // the hop alone.
        let chain = (e.chain)();
        let s_local = !chain.source_pieces().is_empty()
            || !chain.result_pieces().is_empty()
            || chain.xpay.is_some();
        let shared = if s_local { 24 * 4 } else { 0 };
        assert_eq!(k.geometry.shared_per_thread, shared, "{}", e.name);
        assert_eq!(k.source.contains("qdsl_shared"), s_local, "{}", e.name);
        assert!(
            k.source.contains("const int s5 = threadIdx.y;"),
            "{}",
            e.name
        );
        assert!(k.source.contains("constexpr int LS = 12;"), "{}", e.name);
        assert!(!k.source.contains("return;"), "{}: no early return", e.name);
        assert!(k.name.starts_with(&e.name));
    }
}

#[test]
fn chain_sources() {
    for e in domain_wall::chains() {
        let xpay = (e.chain)().xpay.is_some();
        let v = variant(StorageFormat::F32, Recon::R12, xpay, 12);
        insta::assert_snapshot!(
            format!("{}_even_f32_recon12_ls12", e.name),
            (e.compiled)(&v).unwrap().source
        );
    }
}

/// Every chain in f64 recon 18, f32 recon 12, fixed16 recon 12 and fixed8 recon 8, Ls =
/// 12, compiles for sm_90 and does not spill.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn every_chain_compiles_with_nvrtc_and_does_not_spill() {
    let tc = nvrtc::Toolchain::load();
    for e in domain_wall::chains() {
        let xpay = (e.chain)().xpay.is_some();
        for (format, recon) in [
            (StorageFormat::F64, Recon::R18),
            (StorageFormat::F32, Recon::R12),
            (StorageFormat::Fixed16, Recon::R12),
            (StorageFormat::Fixed8, Recon::R8),
        ] {
            let k = (e.compiled)(&variant(format, recon, xpay, 12)).unwrap();
            let tag = format!("{}_{}", e.name, format.name());
            let reports = tc.compile_checked(
                &k.source,
                &tag,
                "sm_90",
                std::slice::from_ref(&k.name),
                true,
            );
            for (entry, r) in reports {
                println!(
                    "{entry} {}: {} registers, no spills",
                    format.name(),
                    r.registers
                );
            }
        }
    }
}

/// Every chain with a hop over a box of sites (a decomposed lattice's interior or
/// exterior, `Region::SubBox`): the box's parameters in its interface, no early return
/// (whole blocks of a paired box: every thread reaches the barriers), and in f32 recon
/// 18 (the distributed operator's format) it compiles for sm_90 without spilling; the
/// s-local chains refuse the region.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn hop_chains_run_over_a_box_of_sites() {
    use qdsl_core::dsl::variant::Region;
    use qdsl_core::dsl::DslError;
    let tc = nvrtc::Toolchain::load();
    for e in domain_wall::chains() {
        let c = (e.chain)();
        let mut v = variant(StorageFormat::F32, Recon::R18, c.xpay.is_some(), 12);
        v.variant.region = Region::SubBox;
        let k = (e.compiled)(&v);
        if c.hop_position().is_none() {
            assert!(
                matches!(k, Err(DslError::UnsupportedVariant { knob: "region", .. })),
                "{}: {k:?}",
                e.name
            );
            continue;
        }
        let k = k.unwrap();
        assert!(
            k.source.contains("box_lo0") && k.source.contains("box_site("),
            "{}",
            e.name
        );
        assert!(!k.source.contains("return;"), "{}: no early return", e.name);
        let whole = (e.compiled)(&variant(
            StorageFormat::F32,
            Recon::R18,
            c.xpay.is_some(),
            12,
        ))
        .unwrap();
        assert_ne!(
            k.name, whole.name,
            "{}: the box variant has its own name",
            e.name
        );
        let reports = tc.compile_checked(
            &k.source,
            &format!("{}_box", e.name),
            "sm_90",
            std::slice::from_ref(&k.name),
            true,
        );
        for (entry, r) in reports {
            println!("{entry} over a box: {} registers, no spills", r.registers);
        }
    }
}

/// The chains whose spec lists the tensor-core M5⁻¹ (`m5inv = [..., mma_f16, mma_bf16]`).
fn tensor_core_chains() -> Vec<domain_wall::FusedEntry> {
    domain_wall::chains()
        .into_iter()
        .filter(|e| (e.chain)().m5inv_modes().contains(&M5invMode::MmaF16))
        .collect()
}

/// The M̂ chains with M5⁻¹ on the hop's result take the tensor-core modes (the fused M̂
/// of QUDA's plan and the source-fused one, M̂†'s first kernel, the MSPCG kernel, the
/// inverse blocks).
#[test]
fn the_m5_inverse_chains_list_the_tensor_core_modes() {
    let names: Vec<String> = tensor_core_chains().into_iter().map(|e| e.name).collect();
    for n in [
        "mobius_dslash4_m5inv_m5pre",
        "mobius_m5pre_m5inv_dslash4_m5pre",
        "mspcg_m5inv_dag_mphi_dag_dw_dag",
        "mspcg_m5inv_dag_m5inv_dw",
        "mobius_m5inv",
        "mobius_m5inv_dagger",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
    for e in tensor_core_chains() {
        for mode in [M5invMode::MmaF16, M5invMode::MmaBf16] {
            let v = FusedVariant {
                m5inv: mode,
                ..variant(StorageFormat::F32, Recon::R12, false, 16)
            };
            let k = (e.compiled)(&v).unwrap();
            let mma = format!(
                "m16n8k16.row.col.f32.{0}.{0}.f32",
                mode.operand().unwrap().name()
            );
            assert!(k.source.contains(&mma), "{}", e.name);
            assert!(
                !k.source.contains("cyclic bidiagonal"),
                "{}: no sweep",
                e.name
            );
        }
    }
}

#[test]
fn tensor_core_chain_sources() {
    for (name, mode) in [
        ("mobius_dslash4_m5inv_m5pre", M5invMode::MmaF16),
        ("mspcg_m5inv_dag_mphi_dag_dw_dag", M5invMode::MmaBf16),
    ] {
        let e = tensor_core_chains()
            .into_iter()
            .find(|e| e.name == name)
            .unwrap();
        let v = FusedVariant {
            m5inv: mode,
            ..variant(StorageFormat::F32, Recon::R12, false, 12)
        };
        insta::assert_snapshot!(
            format!("{name}_even_f32_recon12_ls12_{}", mode.name()),
            (e.compiled)(&v).unwrap().source
        );
    }
}

/// Every tensor-core chain in f32 recon 12 and fixed16 recon 12, f16 and bf16, Ls = 12
/// and 16, compiles for sm_90 and does not spill.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn every_tensor_core_chain_compiles_with_nvrtc_and_does_not_spill() {
    let tc = nvrtc::Toolchain::load();
    for e in tensor_core_chains() {
        for format in [StorageFormat::F32, StorageFormat::Fixed16] {
            for mode in [M5invMode::MmaF16, M5invMode::MmaBf16] {
                for ls in [12, 16] {
                    let v = FusedVariant {
                        m5inv: mode,
                        ..variant(format, Recon::R12, false, ls)
                    };
                    let k = (e.compiled)(&v).unwrap();
                    let tag = format!("{}_{}_{}_{ls}", e.name, format.name(), mode.name());
                    let reports = tc.compile_checked(
                        &k.source,
                        &tag,
                        "sm_90",
                        std::slice::from_ref(&k.name),
                        true,
                    );
                    for (entry, r) in reports {
                        println!(
                            "{entry} {} {} Ls {ls}: {} registers, no spills",
                            format.name(),
                            mode.name(),
                            r.registers
                        );
                    }
                }
            }
        }
    }
}
