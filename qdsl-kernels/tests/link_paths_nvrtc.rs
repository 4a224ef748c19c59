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
    let Some(tc) = nvrtc::Toolchain::load() else {
        return;
    };
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
                let entries: Vec<String> = ["path", "staple", "sum", "accumulate"]
                    .iter()
                    .map(|k| format!("{name}_{k}"))
                    .collect();
                if let Some(reports) = tc.compile_checked(&src, &tag, arch, &entries, true) {
                    assert_eq!(reports.len(), 4, "{tag}");
                }
            }
        }
    }
}

#[test]
fn u3_projection_kernel_compiles_and_does_not_spill() {
    let Some(tc) = nvrtc::Toolchain::load() else {
        return;
    };
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
