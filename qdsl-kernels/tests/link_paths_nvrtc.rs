//! The CUDA sources of the `link_paths!` catalog compile with NVRTC for sm_80 and sm_90 in
//! both precisions and both input compressions (recon 18, recon 12 + phase), with every
//! kernel (the tree kernel and its layout rewrite) present in the PTX and no spills (`ptxas -v`); likewise the HISQ
//! U(3) projection kernel. Skips with a message where libnvrtc or ptxas is absent.

mod nvrtc;

use qdsl_core::dsl::paths::project::{project_source, PROJECT_KERNEL};
use qdsl_core::dsl::paths::{LinkPaths, PathKnobs, PlanKind};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::dsl::DslError;
use qdsl_kernels::{AsqtadFat, AsqtadLong, Fat7, HisqFat};

type Source = fn(&PathKnobs) -> Result<String, DslError>;

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn link_path_kernels_compile_and_do_not_spill() {
    let tc = nvrtc::Toolchain::load();
    let catalog: [(&str, Source, Source); 4] = [
        (
            "asqtad_fat",
            AsqtadFat::cuda_source_with::<f64>,
            AsqtadFat::cuda_source_with::<f32>,
        ),
        (
            "asqtad_long",
            AsqtadLong::cuda_source_with::<f64>,
            AsqtadLong::cuda_source_with::<f32>,
        ),
        (
            "fat7",
            Fat7::cuda_source_with::<f64>,
            Fat7::cuda_source_with::<f32>,
        ),
        (
            "hisq_fat",
            HisqFat::cuda_source_with::<f64>,
            HisqFat::cuda_source_with::<f32>,
        ),
    ];
    for (name, f64_source, f32_source) in catalog {
        for ((precision, source), input) in [("f64", f64_source), ("f32", f32_source)]
            .into_iter()
            .flat_map(|p| [(p, Recon::R18), (p, Recon::R12)])
        {
            let src = source(&PathKnobs::with_input(input).with_plan(PlanKind::Tree)).unwrap();
            assert_eq!(
                src.contains(qdsl_core::dsl::emit::cuda::library::LINK12),
                input == Recon::R12,
                "{name}: hop reads recon 12 exactly when asked"
            );
            if let Some(dir) = std::env::var_os("QDSL_DUMP_LINK_PATHS") {
                let file = format!("{name}_{precision}_{input:?}.cu");
                std::fs::write(std::path::Path::new(&dir).join(file), &src).unwrap();
            }
            for arch in ["sm_80", "sm_90"] {
                let tag = format!("{name}_{precision}_{input:?}_{arch}");
                let mut entries = vec![format!("{name}_links"), format!("{name}_to_device_layout")];
                if input == Recon::R12 {
                    entries.push(format!("{name}_encode_device_layout"));
                }
                let t0 = std::time::Instant::now();
                let reports = tc.compile_checked(&src, &tag, arch, &entries, true);
                eprintln!(
                    "{tag}: NVRTC + ptxas {:.0} ms, {} registers",
                    t0.elapsed().as_secs_f64() * 1e3,
                    reports
                        .iter()
                        .find(|r| r.0.ends_with("_links"))
                        .map_or(0, |r| r.1.registers)
                );
                assert_eq!(reports.len(), entries.len(), "{tag}");
            }
        }
    }
}

/// The staged plans of the smearings (one pass kernel per stored staple level, the root
/// kernel, the layout kernel) compile for sm_80 and sm_90 in both precisions and input
/// storages with every declared kernel in the PTX, their interfaces match the sources'
/// signatures, and nothing spills; the NVRTC + ptxas time and each entry's registers are
/// printed (the first-call JIT of a smearing).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn staged_link_path_kernels_compile_and_do_not_spill() {
    use qdsl_core::dsl::paths::cuda::program;
    let tc = nvrtc::Toolchain::load();
    let trees = [
        AsqtadFat::tree().unwrap(),
        AsqtadLong::tree().unwrap(),
        Fat7::tree().unwrap(),
        HisqFat::tree().unwrap(),
    ];
    for tree in &trees {
        for input in [Recon::R18, Recon::R12] {
            let knobs = PathKnobs::with_input(input).with_plan(PlanKind::Staged);
            for (precision, p) in [
                ("f64", program::<f64>(tree, &knobs, "staged64").unwrap()),
                ("f32", program::<f32>(tree, &knobs, "staged32").unwrap()),
            ] {
                assert_eq!(p.signature_mismatches(), Vec::<String>::new());
                let entries: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
                if let Some(dir) = std::env::var_os("QDSL_DUMP_LINK_PATHS") {
                    let file = format!("{}_{precision}_{input:?}_staged.cu", tree.spec.name);
                    std::fs::write(std::path::Path::new(&dir).join(file), &p.source).unwrap();
                }
                for arch in ["sm_80", "sm_90"] {
                    let tag = format!("{}_{precision}_{input:?}_staged_{arch}", tree.spec.name);
                    let t0 = std::time::Instant::now();
                    let reports = tc.compile_checked(&p.source, &tag, arch, &entries, true);
                    eprintln!(
                        "{tag}: NVRTC + ptxas {:.0} ms, registers {:?}",
                        t0.elapsed().as_secs_f64() * 1e3,
                        reports
                            .iter()
                            .map(|r| (r.0.clone(), r.1.registers))
                            .collect::<Vec<_>>()
                    );
                    assert_eq!(reports.len(), entries.len(), "{tag}");
                }
            }
        }
    }
}

/// The pullback kernels of the smearings (the chain rule back through the tree, the
/// fermion force's smearing part) compile for sm_80 and sm_90 in both precisions with
/// their entry in the PTX and the interface matching the signature; registers and spills
/// are printed (the backward walk keeps a path's links and suffix products).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn pullback_kernels_compile() {
    use qdsl_core::dsl::paths::pullback_cuda::pullback_program;
    let tc = nvrtc::Toolchain::load();
    for tree in [
        AsqtadFat::tree().unwrap(),
        AsqtadLong::tree().unwrap(),
        Fat7::tree().unwrap(),
        HisqFat::tree().unwrap(),
    ] {
        let knobs = PathKnobs::default();
        for (precision, p) in [
            (
                "f64",
                pullback_program::<f64>(&tree, &knobs, "pb64").unwrap(),
            ),
            (
                "f32",
                pullback_program::<f32>(&tree, &knobs, "pb32").unwrap(),
            ),
        ] {
            assert_eq!(p.signature_mismatches(), Vec::<String>::new());
            let entries: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
            for arch in ["sm_80", "sm_90"] {
                let tag = format!("{}_pullback_{precision}_{arch}", tree.spec.name);
                let t0 = std::time::Instant::now();
                let reports = tc.compile_checked(&p.source, &tag, arch, &entries, false);
                let r = &reports[0].1;
                eprintln!(
                    "{tag}: NVRTC + ptxas {:.0} ms, {} registers, spills {}/{} bytes",
                    t0.elapsed().as_secs_f64() * 1e3,
                    r.registers,
                    r.spill_stores,
                    r.spill_loads
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn u3_projection_kernel_compiles_and_does_not_spill() {
    let tc = nvrtc::Toolchain::load();
    for (precision, src) in [
        ("f64", project_source::<f64>().unwrap()),
        ("f32", project_source::<f32>().unwrap()),
    ] {
        for arch in ["sm_80", "sm_90"] {
            let tag = format!("{PROJECT_KERNEL}_{precision}_{arch}");
            tc.compile_checked(&src, &tag, arch, &[PROJECT_KERNEL.to_string()], true);
        }
    }
}

/// The gauge-generation kernels compile for sm_80 and sm_90 with their entries in the
/// PTX: the heatbath and over-relaxation kernels (`qdsl_core::gauge::generate::cuda`) of
/// the three gauge actions with the colouring each needs (Wilson: parity; Symanzik,
/// Iwasaki: 8 colours), their per-term trace kernels, and the HMC field program
/// (`cuda_hmc`: five kernels). ptxas's registers and spills are printed (the heatbath
/// carries a 3 × 3 staple, the link, the Philox state and the rejection loops; spills
/// are reported, not refused).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn generation_kernels_compile() {
    use qdsl_core::dsl::paths::GaugeAction;
    use qdsl_core::gauge::generate::cuda::heatbath_program;
    use qdsl_core::gauge::generate::cuda_hmc::hmc_program;
    use qdsl_core::gauge::generate::{Colouring, TermTraces};
    use qdsl_kernels::{IwasakiGauge, SymanzikGauge, WilsonGauge};
    let tc = nvrtc::Toolchain::load();
    let mut programs = vec![hmc_program()];
    for spec in [WilsonGauge::spec(), SymanzikGauge::spec()] {
        for t in TermTraces::new(&spec).unwrap().terms {
            programs.push(t.program().unwrap());
        }
    }
    for program in &programs {
        assert_eq!(program.signature_mismatches(), Vec::<String>::new());
        let entries: Vec<String> = program.kernels.iter().map(|k| k.name.clone()).collect();
        for arch in ["sm_80", "sm_90"] {
            let tag = format!("{}_{arch}", program.name);
            let reports = tc.compile_checked(&program.source, &tag, arch, &entries, false);
            assert_eq!(reports.len(), entries.len(), "{tag}");
        }
    }
    for (plan, colouring) in [
        (WilsonGauge::force_plan().unwrap(), Colouring::Parity),
        (SymanzikGauge::force_plan().unwrap(), Colouring::Mod2Mod4),
        (IwasakiGauge::force_plan().unwrap(), Colouring::Mod2Mod4),
    ] {
        let program = heatbath_program(&plan, colouring).unwrap();
        assert_eq!(program.signature_mismatches(), Vec::<String>::new());
        for arch in ["sm_80", "sm_90"] {
            let tag = format!("{}_{arch}", program.name);
            let t0 = std::time::Instant::now();
            let reports = tc.compile_checked(
                &program.source,
                &tag,
                arch,
                &[program.kernels[0].name.clone()],
                false,
            );
            let r = &reports[0].1;
            eprintln!(
                "{tag}: NVRTC + ptxas {:.0} ms, {} registers, spills {}/{} bytes",
                t0.elapsed().as_secs_f64() * 1e3,
                r.registers,
                r.spill_stores,
                r.spill_loads
            );
        }
    }
}
