//! What the README's main job (even-odd Wilson, BiCGStab, f64 with f32 iterations, on
//! MILC's 8⁴ sample) compiles on its first GPU solve with an empty cache, measured
//! without a GPU: NVRTC for every program, `ptxas` for every build (the driver's PTX
//! assembly at module load does the same work). Run with
//! `cargo test -p qdsl-runtime --lib first_use -- --ignored --nocapture`.
//!
//! * **full** ([`TunePolicy::Full`], every solve before launch-only tuning): each of the
//!   eight hop variants (f64 and f32; to the odd sites, to the even sites with xpay;
//!   plain and dagger) compiled as the default build, every register cap of
//!   [`compile_knobs`] below its register count (one assembly each) and the six
//!   prefetch builds (two NVRTC programs, six assemblies);
//! * **launch** (the default now): the heuristic build of each hop
//!   ([`heuristic_knob`]) only;
//! * both: the format conversions, BLAS and reduction kernels of the solve's vectors.

use super::compile::{compile_knobs, heuristic_knob, CompileKnob};
use crate::device::codegen::{conversion_source, reduction_source, Direction, OPTIONS};
use crate::device::format::{DeviceFormat, HostReal};
use crate::device::DeviceLayout;
use crate::jit::ptxas;
use crate::jit::register_cap::cap_registers;
use crate::jit::{Arch, Jit};
use crate::solver::device::blas_source::{blas_name, blas_source};
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary, Variant};
use qdsl_core::dsl::Stencil;
use qdsl_core::format::{Compression, LinkFormat};
use qdsl_core::lattice::Parity;
use qdsl_kernels::WilsonHop;
use std::time::{Duration, Instant};

/// One program to compile: name, source, extra NVRTC options, register caps to
/// assemble it with (`None`: uncapped).
struct Program {
    name: String,
    source: String,
    options: Vec<String>,
    caps: Vec<Option<u32>>,
}

/// The eight hop variants of the main job: f64 and f32, (odd, plain) and (even, xpay),
/// plain and dagger; antiperiodic time, recon 18.
fn hop_variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for format in [StorageFormat::F64, StorageFormat::F32] {
        for dagger in [false, true] {
            for (r, xpay) in [(Parity::Odd, false), (Parity::Even, true)] {
                out.push(Variant {
                    spinor: format,
                    gauge: format,
                    recon: Recon::R18,
                    boundary: TimeBoundary::Antiperiodic,
                    sites: OutputSites::Parity(r),
                    dagger,
                    xpay,
                    ..Variant::default()
                });
            }
        }
    }
    out
}

/// The conversion, BLAS and reduction programs of the solve's fields on 8⁴.
fn support_programs() -> Vec<Program> {
    let (volume, half) = (4096, 2048);
    let opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
    let fermion = |f: StorageFormat| {
        DeviceLayout::new(DeviceFormat::Fermion(f.fermion_format()), 24, half).unwrap()
    };
    let link = |f: StorageFormat| {
        let format = LinkFormat::new(f.link_storage(), Compression::Full);
        DeviceLayout::new(DeviceFormat::Link(format), 0, volume).unwrap()
    };
    let (d, s) = (fermion(StorageFormat::F64), fermion(StorageFormat::F32));
    let program = |name: String, source: String| Program {
        name,
        source,
        options: opts.clone(),
        caps: vec![None],
    };
    let mut out = Vec::new();
    for (layout, dir) in [
        (link(StorageFormat::F64), Direction::Encode),
        (link(StorageFormat::F32), Direction::Encode),
        (d, Direction::Encode),
        (d, Direction::Decode),
    ] {
        let name = crate::device::codegen::conversion_name(&layout, HostReal::F64, dir);
        out.push(program(
            name,
            conversion_source(&layout, HostReal::F64, dir).unwrap(),
        ));
    }
    for (y, x) in [(d, d), (s, s), (s, d), (d, s)] {
        out.push(program(blas_name(&y, &x), blas_source(&y, &x).unwrap()));
    }
    for l in [d, s] {
        let name = crate::device::codegen::reduction_name(&l);
        out.push(program(
            format!("{name}_partial"),
            reduction_source(&l).unwrap(),
        ));
    }
    out
}

/// The hop programs of a policy: `full` the tuner's every build, else the heuristic one.
fn hop_programs(full: bool, arch: Arch, jit: &Jit) -> Vec<Program> {
    let mut out = Vec::new();
    for v in hop_variants() {
        let k = WilsonHop::compiled(&v).unwrap();
        let knobs = if full {
            let ptx = jit.compile(&k.name, &k.source, arch, &[]).unwrap().ptx;
            let regs = ptxas::report(&ptx, arch).unwrap()[0].registers;
            compile_knobs(&k.knobs().compile, Some(regs))
        } else {
            vec![heuristic_knob(&k.knobs().compile)]
        };
        // One program per distinct option list, with the caps assembled from it.
        let mut by_options: Vec<(Vec<String>, Vec<Option<u32>>)> = Vec::new();
        for knob in knobs {
            let o = knob.nvrtc_options();
            match by_options.iter_mut().find(|(opts, _)| *opts == o) {
                Some((_, caps)) => caps.push(knob.register_cap()),
                None => by_options.push((o, vec![knob.register_cap()])),
            }
        }
        for (options, caps) in by_options {
            out.push(Program {
                name: k.name.clone(),
                source: k.source.clone(),
                options,
                caps,
            });
        }
    }
    out
}

/// (NVRTC compiles, their time, assemblies, their time) of `programs` on an empty cache.
fn measure(programs: &[Program], arch: Arch) -> (usize, Duration, usize, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let jit = Jit::new(dir.path(), None).unwrap();
    let (mut assemblies, mut assembly) = (0, Duration::ZERO);
    for p in programs {
        let ptx = jit
            .compile(&p.name, &p.source, arch, &p.options)
            .unwrap()
            .ptx;
        for cap in &p.caps {
            let built = match cap {
                Some(r) => cap_registers(&ptx, &p.name, *r).unwrap(),
                None => ptx.clone(),
            };
            let start = Instant::now();
            ptxas::report(&built, arch).unwrap();
            assembly += start.elapsed();
            assemblies += 1;
        }
    }
    let w = jit.nvrtc_work();
    (w.count, w.time, assemblies, assembly)
}

/// The wall time of compiling and assembling `programs` (one build each) on an empty
/// cache in `threads` threads, as [`crate::device::Gpu::preload`] does.
fn measure_parallel(programs: &[Program], arch: Arch, threads: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let jit = Jit::new(dir.path(), None).unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = programs.get(i) else { return };
                let ptx = jit
                    .compile(&p.name, &p.source, arch, &p.options)
                    .unwrap()
                    .ptx;
                ptxas::report(&ptx, arch).unwrap();
            });
        }
    });
    start.elapsed()
}

#[test]
#[ignore = "measurement (tens of seconds of NVRTC and ptxas): run with --ignored --nocapture"]
fn first_use_compiles_of_the_main_job() {
    let arch = Arch::SM_90;
    let scratch = tempfile::tempdir().unwrap();
    let probe = Jit::new(scratch.path(), None).unwrap();
    let support = support_programs();
    let mut rows = Vec::new();
    for full in [true, false] {
        let mut programs = hop_programs(full, arch, &probe);
        let hops = programs.len();
        programs.extend(support_programs());
        let (n, t, a, at) = measure(&programs, arch);
        println!(
            "{:6} policy: {hops} hop programs + {} support programs: NVRTC {n} compiles in {:.2} s, ptxas {a} assemblies in {:.2} s",
            if full { "full" } else { "launch" },
            support.len(),
            t.as_secs_f64(),
            at.as_secs_f64()
        );
        rows.push((n, a));
        if !full {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let wall = measure_parallel(&programs, arch, threads);
            println!(
                "launch policy in {threads} threads: {:.2} s wall (NVRTC + ptxas)",
                wall.as_secs_f64()
            );
        }
    }
    // The launch policy compiles one build per hop: 8 hop programs, 8 assemblies.
    assert_eq!(rows[1], (8 + support.len(), 8 + support.len()));
    assert!(
        rows[0].0 > rows[1].0 && rows[0].1 > 3 * rows[1].1,
        "{rows:?}"
    );
    assert_eq!(
        heuristic_knob(
            &WilsonHop::compiled(&hop_variants()[0])
                .unwrap()
                .knobs()
                .compile
        ),
        CompileKnob::Prefetch(super::compile::PrefetchScope::Links, None)
    );
}
