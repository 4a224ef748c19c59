//! JIT tests that really run NVRTC and ptxas; ignored where the build found no
//! toolchain (see `crate::testing`).

use super::*;

const AXPY: &str = r#"extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"#;

/// A JIT over `root` dumping to `dump`; panics with the reason where NVRTC is missing.
fn jit(root: &Path, dump: Option<PathBuf>) -> Jit {
    Jit::new(root, dump).unwrap_or_else(|e| panic!("NVRTC: {e}"))
}

#[test]
fn key_changes_with_every_input() {
    let o = Jit::options(Arch::SM_90, &[]);
    let k = Jit::cache_key(AXPY, &o, Arch::SM_90, (13, 0));
    assert_eq!(k.len(), 32);
    assert_eq!(k, Jit::cache_key(AXPY, &o, Arch::SM_90, (13, 0)));
    let o2 = Jit::options(Arch::SM_90, &["--use_fast_math".into()]);
    let others = [
        Jit::cache_key(&format!("{AXPY} "), &o, Arch::SM_90, (13, 0)),
        Jit::cache_key(AXPY, &o2, Arch::SM_90, (13, 0)),
        Jit::cache_key(AXPY, &o, Arch::new(8, 0), (13, 0)),
        Jit::cache_key(AXPY, &o, Arch::SM_90, (13, 1)),
    ];
    for other in others {
        assert_ne!(k, other);
    }
    assert_eq!(
        o,
        [
            "--std=c++17",
            "-default-device",
            "--gpu-architecture=compute_90"
        ]
    );
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn compiles_then_hits_the_cache_and_dumps() {
    let root = tempfile::tempdir().unwrap();
    let dump = tempfile::tempdir().unwrap();
    let j = jit(root.path(), Some(dump.path().to_path_buf()));
    assert!(j.nvrtc_version().0 >= 12, "{:?}", j.nvrtc_version());
    let first = j.compile("axpy", AXPY, Arch::SM_90, &[]).unwrap();
    assert!(!first.from_cache);
    assert!(first.ptx.contains(".entry axpy"), "{}", first.ptx);
    assert!(first.ptx.contains(".target sm_90"));
    assert!(root
        .path()
        .join("ptx")
        .join(format!("{}.ptx", first.key))
        .is_file());
    assert_eq!(
        j.stats(),
        JitStats {
            hits: 0,
            compiles: 1
        }
    );

    // A second JIT over the same root (a new process, in effect) reads the file.
    let j2 = jit(root.path(), None);
    let second = j2.compile("axpy", AXPY, Arch::SM_90, &[]).unwrap();
    assert!(second.from_cache);
    assert_eq!(second.ptx, first.ptx);
    assert_eq!(
        j2.stats(),
        JitStats {
            hits: 1,
            compiles: 0
        }
    );

    // Another architecture is another key and another compile.
    let other = j2.compile("axpy", AXPY, Arch::new(8, 0), &[]).unwrap();
    assert!(!other.from_cache && other.ptx.contains(".target sm_80"));

    assert_eq!(
        std::fs::read_to_string(dump.path().join("axpy.cu")).unwrap(),
        AXPY
    );
    assert_eq!(
        std::fs::read_to_string(dump.path().join("axpy.ptx")).unwrap(),
        first.ptx
    );
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn threads_asking_for_one_artifact_at_once_compile_it_once() {
    // The ranks of a `--grid` run: one JIT each over one cache, all wanting the same
    // kernels at the same moment.
    let root = tempfile::tempdir().unwrap();
    let jits: Vec<Jit> = (0..4).map(|_| jit(root.path(), None)).collect();
    let source = format!("{AXPY}// threads_asking_for_one_artifact_at_once\n");
    let results: Vec<CompiledCubin> = std::thread::scope(|scope| {
        let handles: Vec<_> = jits
            .iter()
            .map(|j| scope.spawn(|| j.compile_cubin("axpy", &source, Arch::SM_90, &[], None)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect()
    });
    let compiles: usize = jits.iter().map(|j| j.stats().compiles).sum();
    let hits: usize = jits.iter().map(|j| j.stats().hits).sum();
    assert_eq!(
        (compiles, hits),
        (1, 3),
        "one NVRTC compile, three cache reads"
    );
    assert_eq!(results.iter().filter(|r| !r.from_cache).count(), 1);
    assert!(results.iter().all(|r| r.cubin == results[0].cubin));
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn cubins_are_assembled_for_the_real_architecture_capped_and_cached() {
    let root = tempfile::tempdir().unwrap();
    let j = jit(root.path(), None);
    let first = j
        .compile_cubin("axpy", AXPY, Arch::SM_90, &[], None)
        .unwrap();
    assert!(!first.from_cache);
    assert_eq!(&first.cubin[..4], b"\x7fELF", "a cubin is an ELF image");
    assert!(root
        .path()
        .join("cubin")
        .join(format!("{}.cubin", first.key))
        .is_file());
    let again = jit(root.path(), None)
        .compile_cubin("axpy", AXPY, Arch::SM_90, &[], None)
        .unwrap();
    assert!(again.from_cache);
    assert_eq!(again.cubin, first.cubin);
    // A register cap is an NVRTC option, hence another key and another cubin; the PTX of
    // the same source is a different artifact with a different key.
    let capped = j
        .compile_cubin("axpy", AXPY, Arch::SM_90, &[], Some(32))
        .unwrap();
    assert!(!capped.from_cache);
    assert_ne!(capped.key, first.key);
    assert_eq!(
        Jit::cubin_options(Arch::SM_90, &["-DX".into()], Some(32)),
        [
            "--std=c++17",
            "-default-device",
            "--gpu-architecture=sm_90",
            "-DX",
            "--maxrregcount=32"
        ]
    );
    let ptx = j.compile("axpy", AXPY, Arch::SM_90, &[]).unwrap();
    assert_ne!(ptx.key, first.key);
    // A rejected program is an error with NVRTC's log on the cubin path too.
    let err = j
        .compile_cubin(
            "broken",
            "__global__ void f() { undeclared(); }",
            Arch::SM_90,
            &[],
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("undeclared"), "{err}");
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn a_failed_compile_names_the_source_file_and_carries_the_log() {
    let root = tempfile::tempdir().unwrap();
    let j = jit(root.path(), None);
    let bad = "extern \"C\" __global__ void broken(float* y) {\n    y[0] = undeclared_thing;\n}\n";
    let err = j.compile("broken", bad, Arch::SM_90, &[]).unwrap_err();
    let JitError::Compile {
        source_file, log, ..
    } = &err
    else {
        panic!("expected a compile error, got {err}");
    };
    assert!(log.contains("undeclared_thing"), "{log}");
    assert!(
        log.contains("broken.cu(2)"),
        "the log cites file and line: {log}"
    );
    assert_eq!(std::fs::read_to_string(source_file).unwrap(), bad);
    assert!(source_file.starts_with(root.path().join("failed")));
    let message = err.to_string();
    assert!(
        message.contains(&source_file.display().to_string()),
        "{message}"
    );
    assert!(message.contains("undeclared_thing"));
    assert_eq!(j.stats(), JitStats::default());
    // Nothing was cached for the failed program.
    assert!(!root.path().join("ptx").exists());
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn a_nul_byte_is_rejected_before_nvrtc() {
    let root = tempfile::tempdir().unwrap();
    let j = jit(root.path(), None);
    let err = j.compile("nul", "int x;\0", Arch::SM_90, &[]).unwrap_err();
    assert!(
        matches!(err, JitError::InvalidSource { offset: 6, .. }),
        "{err}"
    );
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn ptxas_reports_registers_of_a_compiled_kernel() {
    let root = tempfile::tempdir().unwrap();
    let j = jit(root.path(), None);
    ptxas::find_ptxas().expect("ptxas (the build found it)");
    let ptx = j.compile("axpy", AXPY, Arch::SM_90, &[]).unwrap().ptx;
    let reports = ptxas::report(&ptx, Arch::SM_90).unwrap();
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!(r.function, "axpy");
    // A handful of registers (at least the index, a, x[i], y[i]); no spills.
    assert!((4..=32).contains(&r.registers), "{r:?}");
    assert_eq!((r.spill_stores, r.spill_loads), (0, 0));
    let bad = ptxas::report("garbage", Arch::SM_90).unwrap_err();
    assert!(matches!(bad, ptxas::PtxasError::Failed { .. }), "{bad}");
}
