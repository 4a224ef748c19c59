//! The CUDA sources of the `link_paths!` catalog compile with NVRTC for sm_80 and sm_90 in
//! both precisions, with every kernel of the schedule present in the PTX and no spills
//! (`ptxas -v`); likewise the HISQ U(3) projection kernel. Skips with a message where
//! libnvrtc or ptxas is absent.

mod nvrtc;

use qdsl_core::dsl::paths::project::{project_source, PROJECT_KERNEL};
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::dsl::DslError;
use qdsl_kernels::{AsqtadFat, AsqtadLong, Fat7};

type Source = fn() -> Result<String, DslError>;

#[test]
fn link_path_kernels_compile_and_do_not_spill() {
    let nv = match nvrtc::Nvrtc::load() {
        Ok(n) => n,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let ptxas = nvrtc::ptxas()
        .map_err(|why| eprintln!("ptxas part SKIPPED: {why}"))
        .ok();
    let catalog: [(&str, Source, Source); 3] = [
        (
            "asqtad_fat",
            AsqtadFat::cuda_source::<f64>,
            AsqtadFat::cuda_source::<f32>,
        ),
        (
            "asqtad_long",
            AsqtadLong::cuda_source::<f64>,
            AsqtadLong::cuda_source::<f32>,
        ),
        ("fat7", Fat7::cuda_source::<f64>, Fat7::cuda_source::<f32>),
    ];
    for (name, f64_source, f32_source) in catalog {
        for (precision, source) in [("f64", f64_source), ("f32", f32_source)] {
            let src = source().unwrap();
            for arch in ["sm_80", "sm_90"] {
                let tag = format!("{name}_{precision}_{arch}");
                let ptx = nv
                    .compile(&src, &tag, arch)
                    .unwrap_or_else(|log| panic!("{tag}:\n{log}"));
                for k in ["path", "staple", "sum", "accumulate"] {
                    assert!(
                        ptx.contains(&format!(".entry {name}_{k}(")),
                        "{tag}: no {k}"
                    );
                }
                let Some(p) = ptxas.as_ref() else { continue };
                let reports = nvrtc::ptxas_report(p, &ptx, arch, &tag).unwrap();
                assert_eq!(reports.len(), 4, "{tag}");
                for (entry, r) in &reports {
                    assert_eq!(
                        (r.spill_stores, r.spill_loads),
                        (0, 0),
                        "{entry} spills: {r:?}"
                    );
                    eprintln!("{tag} {entry}: {} registers", r.registers);
                }
            }
        }
    }
}

#[test]
fn u3_projection_kernel_compiles_and_does_not_spill() {
    let nv = match nvrtc::Nvrtc::load() {
        Ok(n) => n,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let ptxas = nvrtc::ptxas()
        .map_err(|why| eprintln!("ptxas part SKIPPED: {why}"))
        .ok();
    for (precision, src) in [
        ("f64", project_source::<f64>().unwrap()),
        ("f32", project_source::<f32>().unwrap()),
    ] {
        for arch in ["sm_80", "sm_90"] {
            let tag = format!("{PROJECT_KERNEL}_{precision}_{arch}");
            let ptx = nv
                .compile(&src, &tag, arch)
                .unwrap_or_else(|log| panic!("{tag}:\n{log}"));
            assert!(ptx.contains(&format!(".entry {PROJECT_KERNEL}(")), "{tag}");
            let Some(p) = ptxas.as_ref() else { continue };
            let reports = nvrtc::ptxas_report(p, &ptx, arch, &tag).unwrap();
            for (entry, r) in &reports {
                assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{entry}: {r:?}");
                eprintln!("{tag} {entry}: {} registers", r.registers);
            }
        }
    }
}
