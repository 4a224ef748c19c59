//! GPU tests of the smearing runner (each returns early, printing why, without a GPU):
//! every spec against the CPU plan, and MILC's own asqtad links of lat.sample.l8.

use super::*;
use qdsl_core::dsl::paths::{GaugeAction, LinkPaths, PathKnobs};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::field::GaugeField;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_kernels::{
    fold_staggered_phases, AsqtadFat, AsqtadLong, Fat7, SymanzikGauge, WilsonGauge,
};
use std::path::PathBuf;

use crate::testing::gpu;

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

/// The MILC sample gauge field tests/data/milc/lat.sample.l8.
fn sample_l8() -> GaugeField<f64> {
    read_gauge(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/milc/lat.sample.l8"),
        &ReadOptions::default(),
    )
    .unwrap()
    .field
}

/// Asserts `rel(gpu, cpu) < bound`, naming `what` on failure.
fn assert_close<T: qdsl_core::Real>(
    gpu: &GaugeField<T>,
    cpu: &GaugeField<T>,
    bound: f64,
    what: &str,
) {
    let r = rel(gpu, cpu);
    assert!(r < bound, "{what}: relative error {r:e}");
}

fn gpu_vs_cpu<S: LinkPaths, T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>, bound: f64) {
    gpu_vs_cpu_with::<S, T>(gpu, u, bound, PathKnobs::default());
}

/// The GPU smearing of spec `S` with knobs `knobs` against the CPU emulation of the same
/// input rounding ([`LinkPaths::smear_cpu_with`]).
fn gpu_vs_cpu_with<S: LinkPaths, T: GpuReal>(
    gpu: &Gpu,
    u: &GaugeField<f64>,
    bound: f64,
    knobs: PathKnobs,
) {
    let v = fold_staggered_phases(&u.cast::<T>());
    let g = GpuSmearer::<T>::with_knobs::<S>(gpu, knobs)
        .unwrap()
        .smear(gpu, &v, 0.502)
        .unwrap();
    let c = S::smear_cpu_with(&v, 0.502, &knobs).unwrap();
    let what = format!("{} {} {:?}", S::spec().name, T::NAME, knobs.input);
    assert_close(&g, &c, bound, &what);
}

/// AsqtadFat, AsqtadLong and Fat7 on lat.sample.l8 agree with the CPU plan to rounding
/// of the precision.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn every_spec_matches_the_cpu_plan() {
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    gpu_vs_cpu::<AsqtadFat, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<AsqtadLong, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<Fat7, f64>(&gpu, &u, 1e-13);
    gpu_vs_cpu::<AsqtadFat, f32>(&gpu, &u, 1e-5);
    gpu_vs_cpu::<AsqtadLong, f32>(&gpu, &u, 1e-5);
    gpu_vs_cpu::<Fat7, f32>(&gpu, &u, 1e-5);
}

/// With the thin links in recon 12 + phase, AsqtadFat, AsqtadLong and Fat7 on the GPU
/// agree with the CPU smearing of the same rebuilt links to rounding of the precision
/// (the kernels may contract the rebuild into FMAs, so not bit for bit), and the recon-12
/// asqtad links are still MILC's fat.l8 and long.l8 to f32 rounding.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn recon12_input_matches_the_cpu_emulation_and_milc() {
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    let r12 = PathKnobs::with_input(Recon::R12);
    gpu_vs_cpu_with::<AsqtadFat, f64>(&gpu, &u, 1e-13, r12);
    gpu_vs_cpu_with::<AsqtadLong, f64>(&gpu, &u, 1e-13, r12);
    gpu_vs_cpu_with::<Fat7, f64>(&gpu, &u, 1e-13, r12);
    gpu_vs_cpu_with::<AsqtadFat, f32>(&gpu, &u, 1e-5, r12);
    gpu_vs_cpu_with::<AsqtadLong, f32>(&gpu, &u, 1e-5, r12);
    gpu_vs_cpu_with::<Fat7, f32>(&gpu, &u, 1e-5, r12);
    let v = fold_staggered_phases(&u);
    for (spec, file) in [("fat", "fat.l8"), ("long", "long.l8")] {
        let links = if spec == "fat" {
            GpuSmearer::<f64>::with_knobs::<AsqtadFat>(&gpu, r12)
        } else {
            GpuSmearer::<f64>::with_knobs::<AsqtadLong>(&gpu, r12)
        }
        .unwrap()
        .smear(&gpu, &v, 0.502)
        .unwrap();
        let r = rel(&links, &milc(file));
        assert!(r < 4e-6, "{spec}: {r:e}");
    }
}

/// A non-unitary input link is refused at upload with its position, and a compressed
/// output is refused when compiling.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn knob_values_that_do_not_apply_are_refused() {
    let (gpu, _dir) = gpu();
    let mut v = fold_staggered_phases(&sample_l8());
    *v.link_mut(5, 1) = v.link(5, 1).scale(1.5);
    let r12 =
        GpuSmearer::<f64>::with_knobs::<Fat7>(&gpu, PathKnobs::with_input(Recon::R12)).unwrap();
    let e = r12.smear(&gpu, &v, 1.0).unwrap_err().to_string();
    assert!(e.contains("site 5, direction 1"), "{e}");
    let out = PathKnobs {
        output: Recon::R12,
        ..PathKnobs::default()
    };
    let e = GpuSmearer::<f64>::with_knobs::<Fat7>(&gpu, out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not unitary"), "{e}");
}

/// The GPU's asqtad links of lat.sample.l8 at u0 = 0.502 are MILC's fat.l8 and long.l8
/// to f32 rounding.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gpu_asqtad_links_reproduce_milc() {
    let (gpu, _dir) = gpu();
    let u = sample_l8();
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

fn force_gpu_vs_cpu<A: GaugeAction, T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>, bound: f64) {
    let v = u.cast::<T>();
    let g = GpuGaugeForce::<T>::new::<A>(gpu)
        .unwrap()
        .force(gpu, &v, 5.7)
        .unwrap();
    let c = A::force_cpu(&v, 5.7).unwrap();
    assert_close(
        &g,
        &c,
        bound,
        &format!("{} force {}", A::spec().name, T::NAME),
    );
}

/// The Wilson and Symanzik gauge forces on lat.sample.l8 agree with the CPU force (itself
/// the derivative of the action, tests/gauge_force.rs) to rounding of the precision.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gauge_forces_match_the_cpu() {
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    force_gpu_vs_cpu::<WilsonGauge, f64>(&gpu, &u, 1e-13);
    force_gpu_vs_cpu::<SymanzikGauge, f64>(&gpu, &u, 1e-13);
    force_gpu_vs_cpu::<WilsonGauge, f32>(&gpu, &u, 1e-5);
    force_gpu_vs_cpu::<SymanzikGauge, f32>(&gpu, &u, 1e-5);
}

/// HISQ links with the U(3) projection on the GPU agree with `qdsl_kernels::hisq_links`
/// on lat.sample.l8 (ε = −0.1) to rounding of the precision, and unit links give the
/// tree-level values X = 9/8 + ε/8 (times the phase) and L = −(1 + ε)/24.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gpu_hisq_links_match_the_cpu() {
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    let eps = -0.1;
    let (x, l) = hisq_links_gpu(&gpu, None, &u, eps).unwrap();
    let (cx, cl) = qdsl_kernels::hisq_links(&u, eps).unwrap();
    assert!(rel(&x, &cx) < 1e-12, "fat {:e}", rel(&x, &cx));
    assert!(rel(&l, &cl) < 1e-12, "long {:e}", rel(&l, &cl));
    let u32 = u.cast::<f32>();
    let (x, l) = hisq_links_gpu(&gpu, None, &u32, eps).unwrap();
    let (cx, cl) = qdsl_kernels::hisq_links(&u32, eps).unwrap();
    assert!(rel(&x, &cx) < 1e-4, "fat f32 {:e}", rel(&x, &cx));
    assert!(rel(&l, &cl) < 1e-4, "long f32 {:e}", rel(&l, &cl));
    let unit = GaugeField::<f64>::unit(*u.lattice());
    let (x, l) = hisq_links_gpu(&gpu, None, &unit, eps).unwrap();
    let phase = fold_staggered_phases(&unit);
    let lat = *unit.lattice();
    for cb in 0..lat.volume() {
        let c = lat.coords_of_cb(cb);
        for mu in 0..4 {
            // The long link spans x → x + 3μ̂: its phase is the product of the three
            // folded phases (the antiperiodic time sign included where it wraps).
            let step = |k: usize| {
                let mut y = c;
                y[mu] = (c[mu] + k) % lat.dims()[mu];
                *phase.link_at(y, mu)
            };
            let fat = phase.link(cb, mu).scale(9.0 / 8.0 + eps / 8.0);
            let long = (step(0) * step(1) * step(2)).scale(-(1.0 + eps) / 24.0);
            assert!((*x.link(cb, mu) - fat).max_abs_component() < 1e-13);
            assert!((*l.link(cb, mu) - long).max_abs_component() < 1e-13);
        }
    }
}

/// The HISQ chain (fat7, U(3) projection, HISQ fat, Naik) and the asqtad smearer with
/// every link-path launch tuned under the full policy: the links are bit for bit those
/// of the default launches (a launch shape changes no site's arithmetic), and a second
/// tuner under the launch policy reads the winners back from the cache.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn tuned_link_path_launches_give_the_default_launches_links() {
    use crate::tune::{TunePolicy, Tuner};
    let (gpu, dir) = gpu();
    let tuner = |policy| {
        Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
            .with_policy(policy)
            .with_progress(false)
    };
    let u = sample_l8();
    let (x, l) = hisq_links_gpu(&gpu, None, &u, 0.1).unwrap();
    let full = tuner(TunePolicy::Full);
    let (tx, tl) = hisq_links_gpu(&gpu, Some(&full), &u, 0.1).unwrap();
    assert_eq!(rel(&tx, &x), 0.0);
    assert_eq!(rel(&tl, &l), 0.0);
    let v = fold_staggered_phases(&u);
    let smearer = GpuSmearer::<f64>::new::<AsqtadFat>(&gpu).unwrap();
    let fat = smearer.smear(&gpu, &v, 0.9).unwrap();
    let tuned = smearer.smear_with(&gpu, Some(&full), &v, 0.9).unwrap();
    assert_eq!(rel(&tuned, &fat), 0.0);
    let launch = tuner(TunePolicy::Launch);
    let again = smearer.smear_with(&gpu, Some(&launch), &v, 0.9).unwrap();
    assert_eq!(rel(&again, &fat), 0.0);
    let rows = std::fs::read_to_string(dir.path().join("tune.tsv")).unwrap();
    assert!(rows.lines().count() > 3, "{rows}");
}

/// On random links of an asymmetric lattice (every extent different, so a transposed
/// coordinate or a wrong extent in the kernels' packed sites shows), every smearing in
/// both precisions and input storages, and both gauge forces, agree with the CPU plans;
/// the HISQ chain with ε ≠ 0 (applied inside the kernels as term coefficients) agrees
/// with `qdsl_kernels::hisq_links`.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn asymmetric_lattice_matches_the_cpu() {
    use qdsl_core::lattice::Lattice;
    use qdsl_kernels::HisqFat;
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([4, 6, 8, 10]).unwrap();
    let u = GaugeField::<f64>::random(lat, 23);
    for knobs in [PathKnobs::default(), PathKnobs::with_input(Recon::R12)] {
        gpu_vs_cpu_with::<AsqtadFat, f64>(&gpu, &u, 1e-13, knobs);
        gpu_vs_cpu_with::<AsqtadLong, f64>(&gpu, &u, 1e-13, knobs);
        gpu_vs_cpu_with::<Fat7, f64>(&gpu, &u, 1e-13, knobs);
        gpu_vs_cpu_with::<HisqFat, f64>(&gpu, &u, 1e-13, knobs);
        gpu_vs_cpu_with::<AsqtadFat, f32>(&gpu, &u, 1e-5, knobs);
        gpu_vs_cpu_with::<Fat7, f32>(&gpu, &u, 1e-5, knobs);
    }
    force_gpu_vs_cpu::<WilsonGauge, f64>(&gpu, &u, 1e-13);
    force_gpu_vs_cpu::<SymanzikGauge, f64>(&gpu, &u, 1e-13);
    force_gpu_vs_cpu::<SymanzikGauge, f32>(&gpu, &u, 1e-5);
    let (x, l) = hisq_links_gpu(&gpu, None, &u, -0.2).unwrap();
    let (cx, cl) = qdsl_kernels::hisq_links(&u, -0.2).unwrap();
    assert_close(&x, &cx, 1e-12, "HISQ fat, asymmetric");
    assert_close(&l, &cl, 1e-12, "HISQ long, asymmetric");
}

/// The staged plan (staple levels stored as fields by their own kernels) on the GPU:
/// every smearing in both precisions and input storages against the CPU plans, on
/// lat.sample.l8 and on an asymmetric lattice; the asqtad links are MILC's fat.l8 and
/// long.l8; the HISQ chain equals `qdsl_kernels::hisq_links`; a smearer run on a larger
/// lattice after a smaller one (its scratch fields grown) and tuned under the full
/// policy gives the default launches' links bit for bit.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn staged_plan_matches_the_cpu_and_milc() {
    use crate::smear::hisq_links_gpu_with;
    use crate::tune::{TunePolicy, Tuner};
    use qdsl_core::dsl::paths::PlanKind;
    use qdsl_core::lattice::Lattice;
    use qdsl_kernels::HisqFat;
    let (gpu, dir) = gpu();
    let sample = sample_l8();
    let asym = GaugeField::<f64>::random(Lattice::new([4, 6, 8, 10]).unwrap(), 23);
    for u in [&sample, &asym] {
        for input in [Recon::R18, Recon::R12] {
            let knobs = PathKnobs::with_input(input).with_plan(PlanKind::Staged);
            gpu_vs_cpu_with::<AsqtadFat, f64>(&gpu, u, 1e-13, knobs);
            gpu_vs_cpu_with::<AsqtadLong, f64>(&gpu, u, 1e-13, knobs);
            gpu_vs_cpu_with::<Fat7, f64>(&gpu, u, 1e-13, knobs);
            gpu_vs_cpu_with::<HisqFat, f64>(&gpu, u, 1e-13, knobs);
            gpu_vs_cpu_with::<AsqtadFat, f32>(&gpu, u, 1e-5, knobs);
            gpu_vs_cpu_with::<Fat7, f32>(&gpu, u, 1e-5, knobs);
            gpu_vs_cpu_with::<HisqFat, f32>(&gpu, u, 1e-5, knobs);
        }
        let (x, l) = hisq_links_gpu_with(&gpu, None, u, -0.2, PlanKind::Staged).unwrap();
        let (cx, cl) = qdsl_kernels::hisq_links(u, -0.2).unwrap();
        assert_close(&x, &cx, 1e-12, "staged HISQ fat");
        assert_close(&l, &cl, 1e-12, "staged HISQ long");
    }
    let staged = PathKnobs::default().with_plan(PlanKind::Staged);
    let v = fold_staggered_phases(&sample);
    let fat = GpuSmearer::<f64>::with_knobs::<AsqtadFat>(&gpu, staged).unwrap();
    let long = GpuSmearer::<f64>::with_knobs::<AsqtadLong>(&gpu, staged).unwrap();
    // A smaller lattice first: the scratch is grown for lat.sample.l8.
    let small = fold_staggered_phases(&GaugeField::<f64>::random(
        Lattice::new([4, 4, 4, 4]).unwrap(),
        3,
    ));
    fat.smear(&gpu, &small, 0.502).unwrap();
    let f = fat.smear(&gpu, &v, 0.502).unwrap();
    let r = rel(&f, &milc("fat.l8"));
    assert!(r < 4e-6, "staged fat.l8: {r:e}");
    let r = rel(&long.smear(&gpu, &v, 0.502).unwrap(), &milc("long.l8"));
    assert!(r < 4e-6, "staged long.l8: {r:e}");
    let full = Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
        .with_policy(TunePolicy::Full)
        .with_progress(false);
    let tuned = fat.smear_with(&gpu, Some(&full), &v, 0.502).unwrap();
    assert_eq!(rel(&tuned, &f), 0.0);
}

/// The pullback through each smearing on the GPU (the chain rule back through the tree,
/// gradients added atomically) equals the CPU pullback through the plan
/// (`fermion_force::pullback`, checked by finite differences) for a random smeared-link
/// gradient on lat.sample.l8, f64 to 1e-12 and f32 to 1e-4 relative; the asqtad fermion
/// force TA[U Ĝ†] from it equals the CPU's.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn gpu_pullback_matches_the_cpu() {
    use qdsl_core::dsl::paths::fermion_force::{force_from_gradient, pullback};
    use qdsl_kernels::HisqFat;
    fn one<S: LinkPaths, T: GpuReal>(gpu: &Gpu, u: &GaugeField<f64>, bound: f64) {
        let v = fold_staggered_phases(&u.cast::<T>());
        let g = GaugeField::<f64>::random(*u.lattice(), 41).cast::<T>();
        let got = super::GpuPullback::<T>::new::<S>(gpu)
            .unwrap()
            .pullback(gpu, &v, 0.502, &g)
            .unwrap();
        let want = pullback(&S::plan().unwrap(), &v, 0.502, &g).unwrap();
        let what = format!("pullback {} {}", S::spec().name, T::NAME);
        assert_close(&got, &want, bound, &what);
        assert_close(
            &force_from_gradient(&v, &got),
            &force_from_gradient(&v, &want),
            bound,
            &format!("force of the {what}"),
        );
    }
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    one::<AsqtadFat, f64>(&gpu, &u, 1e-12);
    one::<AsqtadLong, f64>(&gpu, &u, 1e-12);
    one::<Fat7, f64>(&gpu, &u, 1e-12);
    one::<HisqFat, f64>(&gpu, &u, 1e-12);
    one::<AsqtadFat, f32>(&gpu, &u, 1e-4);
    one::<Fat7, f32>(&gpu, &u, 1e-4);
}

/// A lattice extent the kernels' packed coordinates cannot hold (more than 256) is
/// refused when the buffers are allocated, naming the extent.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn an_extent_over_256_is_refused() {
    use qdsl_core::lattice::Lattice;
    let (gpu, _dir) = gpu();
    let lat = Lattice::new([258, 2, 2, 2]).unwrap();
    let smearer = GpuSmearer::<f32>::new::<AsqtadLong>(&gpu).unwrap();
    let e = smearer.buffers(&gpu, &lat).unwrap_err().to_string();
    assert!(e.contains("258"), "{e}");
}

/// The default plan is the staged one, and it equals the one-kernel tree: every smearing
/// on lat.sample.l8 in f64 to 1e-13 relative (staged against tree directly, and both
/// against the CPU), the asqtad links of the default [`asqtad_links_gpu`] are MILC's
/// fat.l8 and long.l8; the HISQ chain in recon 12 + phase (the thin links encoded on the
/// host, W on the device) equals the CPU chain on the same rebuilt thin links to 1e-12
/// (W's rebuilt row 2 differs from the projection's by f64 rounding); HISQ's two staged
/// levels share one scratch of 6 slots of one μ.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn default_staged_plan_equals_the_tree() {
    use crate::smear::hisq::HisqGpu;
    use qdsl_core::dsl::paths::knobs::emulate_input;
    use qdsl_core::dsl::paths::PlanKind;
    use qdsl_kernels::HisqFat;
    assert_eq!(PathKnobs::default().plan, PlanKind::Staged);
    let (gpu, _dir) = gpu();
    let u = sample_l8();
    let v = fold_staggered_phases(&u);
    fn both<S: LinkPaths>(gpu: &Gpu, v: &GaugeField<f64>) {
        let tree = PathKnobs::default().with_plan(PlanKind::Tree);
        let t = GpuSmearer::<f64>::with_knobs::<S>(gpu, tree)
            .unwrap()
            .smear(gpu, v, 0.502)
            .unwrap();
        let s = GpuSmearer::<f64>::new::<S>(gpu)
            .unwrap()
            .smear(gpu, v, 0.502)
            .unwrap();
        let what = format!("{} staged vs tree", S::spec().name);
        assert_close(&s, &t, 1e-13, &what);
    }
    both::<AsqtadFat>(&gpu, &v);
    both::<AsqtadLong>(&gpu, &v);
    both::<Fat7>(&gpu, &v);
    both::<HisqFat>(&gpu, &v);
    let (fat, long) = asqtad_links_gpu(&gpu, &u, 0.502).unwrap();
    let r = rel(&fat, &milc("fat.l8"));
    assert!(r < 4e-6, "default fat.l8: {r:e}");
    let r = rel(&long, &milc("long.l8"));
    assert!(r < 4e-6, "default long.l8: {r:e}");
    let r12 = PathKnobs::with_input(Recon::R12);
    let hisq = HisqGpu::<f64>::with_knobs(&gpu, r12).unwrap();
    assert_eq!(
        hisq.scratch_bytes(u.lattice()),
        6 * 18 * 8 * u.lattice().volume()
    );
    let mut bufs = hisq.buffers(&gpu, u.lattice()).unwrap();
    hisq.upload(&gpu, &mut bufs, &u).unwrap();
    hisq.enqueue(&gpu, &mut bufs, -0.2).unwrap();
    let (x, l) = hisq.finish(&gpu, &bufs).unwrap();
    let rounded = emulate_input(&v, &r12, "thin").unwrap();
    let (cx, cl) = qdsl_kernels::hisq_links(&fold_staggered_phases(&rounded), -0.2).unwrap();
    assert_close(&x, &cx, 1e-12, "HISQ fat, recon-12 thin links");
    assert_close(&l, &cl, 1e-12, "HISQ long, recon-12 thin links");
}

/// A boxed run of the staged plan (the standard decomposed smearing's building block):
/// over the whole lattice it is the plain run bit for bit (the same kernels); over the
/// sites of a box it writes exactly those links, with the plain run's values where
/// every field they read lies in the box; after
/// each pass the hook sees the slots that pass wrote (asqtad fat: 5-staple slots 0..3,
/// then 3-staple slots 3..6, per μ). The tree plan and a box with an odd x extent or
/// outside the lattice are refused with the reason.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn boxed_staged_runs_write_the_box_with_the_plain_values() {
    use qdsl_core::dsl::paths::PlanKind;
    use qdsl_core::lattice::SiteBox;
    let (gpu, _dir) = gpu();
    let v = fold_staggered_phases(&sample_l8());
    let lattice = *v.lattice();
    let fat = GpuSmearer::<f64>::new::<AsqtadFat>(&gpu).unwrap();
    let plain = fat.smear(&gpu, &v, 0.9).unwrap();
    let run = |sites: &SiteBox, hook: &mut dyn StageHooks<f64>| {
        let mut bufs = fat.buffers(&gpu, &lattice)?;
        fat.upload(&gpu, &mut bufs, &v)?;
        fat.enqueue_boxed_with(
            &gpu,
            None,
            &mut bufs,
            std::slice::from_ref(sites),
            0.9,
            hook,
        )?;
        fat.download(&gpu, &bufs)
    };
    let whole = SiteBox {
        lo: [0; 4],
        n: lattice.dims(),
    };
    let mut seen = Vec::new();
    let all = run(
        &whole,
        &mut |_: &mut cudarc::driver::CudaSlice<f64>, slots: std::ops::Range<usize>| {
            seen.push(slots);
            Ok(())
        },
    )
    .unwrap();
    assert!(all == plain, "the whole box is the plain run");
    let per_mu: Vec<std::ops::Range<usize>> = (0..4).flat_map(|_| [0..3, 3..6]).collect();
    assert_eq!(seen, per_mu, "the passes' slots, per μ");
    // The whole x range (periodic inside the box), a part of y, z and t. With nothing
    // filling the fields outside the box, a link has the plain run's value where every
    // field it reads lies in the box: two sites from the box's faces (the root reads the
    // 3-staple level at x ± ν, which read the 5-staple level at x ± ν ± ρ).
    let part = SiteBox {
        lo: [0, 1, 2, 1],
        n: [8, 6, 6, 6],
    };
    let deep = SiteBox {
        lo: [0, 3, 4, 3],
        n: [8, 2, 2, 2],
    };
    let boxed = run(&part, &mut NoHooks).unwrap();
    let mut compared = 0;
    for lex in 0..lattice.volume() {
        let c = lattice.coords_of_lex(lex);
        let i = lattice.cb_index(c);
        for mu in 0..4 {
            let (got, want) = (boxed.link(i, mu), plain.link(i, mu));
            if deep.contains(c) {
                assert!(got == want, "{c:?} {mu}: the plain run's link");
                compared += 1;
            } else if part.contains(c) {
                assert!(got.max_abs_component() > 0.0, "{c:?} {mu}: written");
            } else {
                assert!(
                    got.max_abs_component() == 0.0,
                    "{c:?} {mu}: outside the box, not written"
                );
            }
        }
    }
    assert_eq!(compared, 4 * deep.volume());
    let refused = |sites: SiteBox| run(&sites, &mut NoHooks).unwrap_err().to_string();
    let odd = refused(SiteBox {
        lo: [0; 4],
        n: [3, 8, 8, 8],
    });
    assert!(odd.contains("even x extent"), "{odd}");
    let outside = refused(SiteBox {
        lo: [6, 0, 0, 0],
        n: [4, 8, 8, 8],
    });
    assert!(outside.contains("expected a non-empty box"), "{outside}");
    let tree = GpuSmearer::<f64>::with_knobs::<AsqtadFat>(
        &gpu,
        PathKnobs::default().with_plan(PlanKind::Tree),
    )
    .unwrap();
    let mut bufs = tree.buffers(&gpu, &lattice).unwrap();
    let e = tree
        .enqueue_boxed_with(&gpu, None, &mut bufs, &[whole], 0.9, &mut NoHooks)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs the staged plan"), "{e}");
}
