//! GPU tests of the register-cap builds (ignored without a GPU: see `crate::testing`).

use super::*;
use crate::operator::device::device_spinor;
use crate::tune::compile::{PrefetchScope, PREFETCH_CAPS};
use qdsl_core::dsl::variant::Recon;
use qdsl_core::field::{ColourSpinorField, GaugeField, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkFormat};
use qdsl_core::lattice::Parity;
use qdsl_kernels::WilsonHop;

use crate::testing::gpu;

/// The even-output f32 recon-12 Wilson hop on 4³×8 with its fields and the generated
/// CPU code's result on the same (f32-rounded) fields.
struct Case {
    lat: Lattice,
    hop: DeviceStencil,
    psi: DeviceField,
    u: DeviceField,
    out: DeviceField,
    cpu: ColourSpinorField<f32>,
    layout: SpinorLayout,
}

fn case(gpu: &Gpu) -> Case {
    let lat = Lattice::new([4, 4, 4, 8]).unwrap();
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        recon: Recon::R12,
        ..Variant::default()
    };
    let u = GaugeField::<f64>::random(lat, 41).cast::<f32>();
    let layout = |p| SpinorLayout::wilson(lat, qdsl_core::field::SiteSubset::Single(p));
    let psi = ColourSpinorField::<f64>::gaussian(layout(Parity::Odd), 42).cast::<f32>();
    let mut cpu = ColourSpinorField::<f32>::zeros(layout(Parity::Even));
    WilsonHop.apply_cpu(&v, &mut cpu, &psi, &u, None).unwrap();
    let link = LinkFormat::new(v.gauge.link_storage(), v.recon.compression());
    Case {
        lat,
        hop: DeviceStencil::of::<WilsonHop>(gpu, &v).unwrap(),
        psi: DeviceField::from_spinor(gpu, &psi, FermionFormat::F32).unwrap(),
        u: DeviceField::from_gauge(gpu, &u, link).unwrap(),
        out: device_spinor(gpu, v.spinor, 24, lat.half_volume()).unwrap(),
        cpu,
        layout: layout(Parity::Even),
    }
}

/// max |a − b| / max |b|.
fn rel_err(a: &ColourSpinorField<f32>, b: &ColourSpinorField<f32>) -> f64 {
    let (mut d, mut m) = (0.0f64, 0.0f64);
    for (x, y) in a.data().iter().zip(b.data()) {
        d = d.max(f64::from(x.re - y.re).hypot(f64::from(x.im - y.im)));
        m = m.max(f64::from(y.re).hypot(f64::from(y.im)));
    }
    d / m
}

/// A build capped at 32 and 64 registers loads, uses at most its cap (the driver's
/// count), and computes what the uncapped build and the CPU code compute (spills move
/// data, not arithmetic: equal to f32 rounding).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn capped_builds_load_and_match_the_uncapped_build() {
    let (gpu, _dir) = gpu();
    let mut c = case(&gpu);
    let launch = tune::LaunchConfig::default_for(c.lat.half_volume());
    let uncapped = c.hop.registers(&gpu, CompileKnob::Default).unwrap();
    let mut run = |compile| {
        let choice = StencilLaunch { compile, launch };
        c.hop
            .launch(
                &gpu,
                &c.lat,
                choice,
                StencilArgs::new(&mut c.out, &[&c.psi, &c.u]),
            )
            .unwrap();
        c.out.to_spinor::<f32>(&gpu, c.layout).unwrap()
    };
    let free = run(CompileKnob::Default);
    assert!(rel_err(&free, &c.cpu) < 1e-5, "uncapped vs CPU");
    for cap in [32, 64] {
        let capped = run(CompileKnob::MaxRegisters(cap));
        let regs = c
            .hop
            .registers(&gpu, CompileKnob::MaxRegisters(cap))
            .unwrap();
        assert!(regs <= cap, "cap {cap}: {regs} registers");
        let e = rel_err(&capped, &free);
        assert!(
            e < 1e-6,
            "cap {cap} vs uncapped ({uncapped} registers): {e:e}"
        );
        assert!(rel_err(&capped, &c.cpu) < 1e-5, "cap {cap} vs CPU");
    }
    assert!(uncapped > 32, "the Wilson hop uses {uncapped} registers");
    // The prefetch builds only add L2 requests: the same arithmetic, the same result.
    for knob in [
        CompileKnob::Prefetch(PrefetchScope::Records, None),
        CompileKnob::Prefetch(PrefetchScope::Records, Some(64)),
        CompileKnob::Prefetch(PrefetchScope::Links, None),
    ] {
        let got = run(knob);
        assert!(rel_err(&got, &free) < 1e-6, "{knob} vs uncapped");
    }
}

/// With tuning on, the two-stage search times the default build with every launch and
/// each cap below its register count with three launches, writes every row with its
/// compile label, and the tuned `run` still matches the CPU code.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn tuning_searches_the_caps_and_records_them() {
    let (gpu, dir) = gpu();
    let mut c = case(&gpu);
    let path = dir.path().join("tune.tsv");
    let tuner = Tuner::new(&path, gpu.fingerprint("test"))
        .with_enabled(true)
        .with_progress(false);
    let inputs = [&c.psi, &c.u];
    let choice = c
        .hop
        .tuned_config(&gpu, &tuner, &c.lat, StencilArgs::new(&mut c.out, &inputs))
        .unwrap();
    let regs = c.hop.registers(&gpu, CompileKnob::Default).unwrap();
    let knobs = tune::compile_knobs(&c.hop.compiled.knobs().compile, Some(regs));
    let caps = knobs
        .iter()
        .filter(|k| matches!(k, CompileKnob::MaxRegisters(_)))
        .count();
    let launches = tune::launch_candidates(
        [c.lat.half_volume(), 1, 1],
        &Geometry::per_site(0),
        &gpu.launch_limits().unwrap(),
    )
    .len();
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = text.lines().skip(8).collect();
    assert_eq!(rows.len(), launches + (knobs.len() - 1) * 3, "{text}");
    let capped = rows.iter().filter(|r| r.contains("\tmaxnreg=")).count();
    assert_eq!(capped, caps * 3, "{text}");
    let prefetch = rows.iter().filter(|r| r.contains("\tprefetch")).count();
    assert_eq!(
        prefetch,
        PrefetchScope::ALL.len() * PREFETCH_CAPS.len() * 3,
        "{text}"
    );
    let best = rows.iter().find(|r| r.ends_with("\t*")).unwrap();
    assert!(
        best.contains(&format!("\t{}\t", dash(&choice.compile.label()))),
        "{best} vs {choice}"
    );
    c.hop
        .run(&gpu, &tuner, &c.lat, StencilArgs::new(&mut c.out, &inputs))
        .unwrap();
    let got = c.out.to_spinor::<f32>(&gpu, c.layout).unwrap();
    assert!(rel_err(&got, &c.cpu) < 1e-5, "tuned ({choice}) vs CPU");
}

/// The cache's spelling of a label (`-` for the empty one).
fn dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}
