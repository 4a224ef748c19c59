//! GPU tests of the smearing runner (each returns early, printing why, without a GPU):
//! every spec against the CPU plan, and MILC's own asqtad links of lat.sample.l8.

use super::*;
use crate::backend::CudaBackend;
use crate::jit::Jit;
use qdsl_core::dsl::paths::LinkPaths;
use qdsl_core::field::GaugeField;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7};
use std::path::PathBuf;

fn gpu() -> Option<(Gpu, tempfile::TempDir)> {
    let backend = match CudaBackend::new(0) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("skipping (no GPU): {e}");
            return None;
        }
    };
    let dir = tempfile::tempdir().ok()?;
    let jit = Jit::new(dir.path(), None).ok()?;
    Some((Gpu::new(backend, jit), dir))
}

fn milc(file: &str) -> GaugeField<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(file);
    read_gauge(path, &ReadOptions::smeared_links())
        .unwrap()
        .field
}

use crate::device::Gpu;

/// max |a − b| over all link components, over max |b|.
fn rel<T: qdsl_core::Real>(a: &GaugeField<T>, b: &GaugeField<T>) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (x, y) in a.links().iter().zip(b.links()) {
        d = d.max((*x - *y).max_abs_component().to_f64());
        m = m.max(y.max_abs_component().to_f64());
    }
    d / m
}

fn gpu_vs_cpu<S: LinkPaths, T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>, bound: f64) {
    let v = fold_staggered_phases(&u.cast::<T>());
    let g = GpuSmearer::<T>::new::<S>(gpu)
        .unwrap()
        .smear(gpu, &v, 0.502)
        .unwrap();
    let c = S::smear_cpu(&v, 0.502).unwrap();
    let r = rel(&g, &c);
    assert!(
        r < bound,
        "{} {}: relative error {r:e}",
        S::spec().name,
        T::NAME
    );
}

/// AsqtadFat, AsqtadLong and Fat7 on lat.sample.l8 agree with the CPU plan to rounding
/// of the precision.
#[test]
fn every_spec_matches_the_cpu_plan() {
    let Some((gpu, _dir)) = gpu() else { return };
    let u = read_gauge(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l8"),
        &ReadOptions::default(),
    )
    .unwrap()
    .field;
    gpu_vs_cpu::<AsqtadFat, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<AsqtadLong, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<Fat7, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<AsqtadFat, f32>(&gpu, &u, 1e-5);
    gpu_vs_cpu::<AsqtadLong, f32>(&gpu, &u, 1e-5);
    gpu_vs_cpu::<Fat7, f32>(&gpu, &u, 1e-5);
}

/// The GPU's asqtad links of lat.sample.l8 at u0 = 0.502 are MILC's fat.l8 and long.l8
/// to f32 rounding.
#[test]
fn gpu_asqtad_links_reproduce_milc() {
    let Some((gpu, _dir)) = gpu() else { return };
    let u = read_gauge(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l8"),
        &ReadOptions::default(),
    )
    .unwrap()
    .field;
    let (fat, long) = asqtad_links_gpu(&gpu, &u, 0.502).unwrap();
    assert!(
        rel(&fat, &milc("fat.l8")) < 2e-6,
        "{:e}",
        rel(&fat, &milc("fat.l8"))
    );
    assert!(
        rel(&long, &milc("long.l8")) < 2e-6,
        "{:e}",
        rel(&long, &milc("long.l8"))
    );
}

/// `qdsl check`'s smearing rows: three specs in f64 and f32, each compared and passing
/// its bound; a filter keeps only the matching spec.
#[test]
fn check_rows_of_the_smearing_specs_pass() {
    let Some((gpu, _dir)) = gpu() else { return };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let rows = crate::check::smear::check_smearing(&gpu, &dir, &|_| true);
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert!(
            matches!(r.outcome, crate::check::Outcome::Compared { .. }) && !r.outcome.is_failure(),
            "{r:?}"
        );
    }
    let fat7 = crate::check::smear::check_smearing(&gpu, &dir, &|n| n.contains("fat7"));
    assert_eq!(fat7.len(), 2);
}
