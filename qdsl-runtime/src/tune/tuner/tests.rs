//! Tuner tests with a fake timer: the "time" of a candidate is a function of its knobs.

use super::*;
use crate::tune::launch::LaunchConfig;
use crate::tune::search::TwoStageSearch;

fn fp(codegen: &str) -> Fingerprint {
    Fingerprint::new(codegen, "Fake GPU", "sm_90", "13.0", "13.0")
}

fn key(kernel: &str) -> TuneKey {
    TuneKey::new(
        kernel,
        0x1234,
        0x5678,
        4096,
        "spinor=f32 gauge=f32 recon=12",
        "Fake GPU sm_90",
    )
}

fn candidates() -> Vec<Candidate> {
    [128u32, 16, 64, 256]
        .iter()
        .flat_map(|&b| [0u32, 8192].map(|s| Candidate::launch(LaunchConfig::covering(4096, b, s))))
        .collect()
}

/// Fake time: blocks of 16 with 8 KiB shared are fastest (QUDA-like), 64 fails.
fn fake(c: &Candidate) -> Result<f64, String> {
    match (c.launch.block[0], c.launch.shared_bytes) {
        (64, _) => Err("too many resources requested".into()),
        (16, 8192) => Ok(5.0),
        (b, s) => Ok(10.0 + b as f64 / 100.0 + s as f64 / 10000.0),
    }
}

fn tuner(path: &Path, codegen: &str, warnings: &Arc<Mutex<Vec<String>>>) -> Tuner {
    let w = warnings.clone();
    Tuner::new(path, fp(codegen))
        .with_enabled(true)
        .with_progress(false)
        .with_warnings(Arc::new(move |s| w.lock().unwrap().push(s.to_string())))
}

#[test]
fn picks_the_fastest_and_records_every_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let t = tuner(&path, "cg", &warnings);
    let mut runs = 0;
    let r = t
        .tune(&key("wilson_hop"), &candidates(), |c| {
            runs += 1;
            fake(c)
        })
        .unwrap();
    assert_eq!(runs, 8);
    assert_eq!(r.source, TuneSource::Measured);
    assert_eq!(r.best.launch, LaunchConfig::covering(4096, 16, 8192));
    assert_eq!(r.time_us, Some(5.0));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines().count(),
        8 + 8,
        "8 header lines + 8 rows:\n{text}"
    );
    assert_eq!(text.matches("\tfailed\t").count(), 2);
    assert_eq!(text.matches("\t*\n").count(), 1);
    assert!(warnings.lock().unwrap().is_empty());
}

#[test]
fn a_second_tuner_answers_from_the_file_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    tuner(&path, "cg", &w)
        .tune(&key("k"), &candidates(), fake)
        .unwrap();
    let r = tuner(&path, "cg", &w)
        .tune(&key("k"), &candidates(), |_| -> Result<f64, String> {
            panic!("a cached key must not be re-run")
        })
        .unwrap();
    assert_eq!(r.source, TuneSource::Cache);
    assert_eq!(r.best.launch.block[0], 16);
    // The same kernel at another volume is another key: it is tuned.
    let mut runs = 0;
    let other = TuneKey {
        volume: 8192,
        ..key("k")
    };
    tuner(&path, "cg", &w)
        .tune(&other, &candidates(), |c| {
            runs += 1;
            fake(c)
        })
        .unwrap();
    assert_eq!(runs, 8);
    // The same variant whose generated source changed (an emitter change) is another
    // key: its old tuning is not reused.
    let mut runs = 0;
    let regenerated = TuneKey {
        source_hash: 0x9abc,
        ..key("k")
    };
    let r = tuner(&path, "cg", &w)
        .tune(&regenerated, &candidates(), |c| {
            runs += 1;
            fake(c)
        })
        .unwrap();
    assert_eq!((r.source, runs), (TuneSource::Measured, 8));
}

#[test]
fn disabled_tuning_takes_the_first_candidate_untimed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    let t = tuner(&path, "cg", &w).with_enabled(false);
    let r = t
        .tune(&key("k"), &candidates(), |_| -> Result<f64, String> {
            panic!("tuning is off")
        })
        .unwrap();
    assert_eq!(r.best, candidates()[0]);
    assert_eq!(r.source, TuneSource::Disabled);
    assert!(!path.exists());
    for (v, on) in [
        (None, true),
        (Some("0"), false),
        (Some("off"), false),
        (Some("1"), true),
    ] {
        assert_eq!(tuning_enabled(v), on, "{v:?}");
    }
}

#[test]
fn a_corrupt_cache_is_retuned_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    std::fs::write(&path, "# qdsl tune cache v2\n\u{0}\u{1} binary junk\n").unwrap();
    let w = Arc::new(Mutex::new(Vec::new()));
    let r = tuner(&path, "cg", &w)
        .tune(&key("k"), &candidates(), fake)
        .unwrap();
    assert_eq!(r.source, TuneSource::Measured);
    let warnings = w.lock().unwrap().clone();
    assert!(!warnings.is_empty());
    assert!(
        warnings[0].contains("is corrupt (corrupt at line 2"),
        "{warnings:?}"
    );
    // The file was rewritten and is valid again.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(TuneCache::parse(&text, &fp("cg")).is_ok());
}

#[test]
fn a_fingerprint_mismatch_is_retuned_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    tuner(&path, "old-codegen", &w)
        .tune(&key("k"), &candidates(), fake)
        .unwrap();
    let mut runs = 0;
    let r = tuner(&path, "new-codegen", &w)
        .tune(&key("k"), &candidates(), |c| {
            runs += 1;
            fake(c)
        })
        .unwrap();
    assert_eq!((r.source, runs), (TuneSource::Measured, 8));
    let warnings = w.lock().unwrap().clone();
    assert_eq!(
        warnings.len(),
        2,
        "one on lookup, one on the locked re-read: {warnings:?}"
    );
    assert!(warnings[0].contains("is stale (made with codegen_hash = \"old-codegen\""));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("# codegen_hash\tnew-codegen\n"));
}

#[test]
fn errors_are_returned_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    let t = tuner(&path, "cg", &w);
    let e = t.tune(&key("k"), &[], fake).unwrap_err();
    assert!(matches!(e, TuneError::NoCandidates { .. }));
    let e = t
        .tune(&key("k"), &candidates(), |_| -> Result<f64, String> {
            Err("launch failed".into())
        })
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("every one of the 8 candidates of k failed"),
        "{e}"
    );
    assert!(e.to_string().contains("launch failed"));
    // A NaN time is a failed candidate, not a winner.
    let r = t
        .tune(&key("nan"), &candidates()[..2], |c| {
            Ok::<f64, String>(if c.launch.shared_bytes == 0 {
                f64::NAN
            } else {
                3.0
            })
        })
        .unwrap();
    assert_eq!(r.best, candidates()[1]);
}

#[test]
fn concurrent_writers_do_not_lose_or_corrupt_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let kernels: Vec<String> = (0..8).map(|i| format!("kernel{i}")).collect();
    std::thread::scope(|s| {
        for k in &kernels {
            let path = path.clone();
            s.spawn(move || {
                // One tuner per thread: like separate processes, no shared memory state.
                let w = Arc::new(Mutex::new(Vec::new()));
                tuner(&path, "cg", &w)
                    .tune(&key(k), &candidates(), |c| {
                        std::thread::sleep(Duration::from_micros(200));
                        fake(c)
                    })
                    .unwrap();
                assert!(w.lock().unwrap().is_empty(), "{:?}", w.lock().unwrap());
            });
        }
    });
    let cache = TuneCache::parse(&std::fs::read_to_string(&path).unwrap(), &fp("cg")).unwrap();
    assert_eq!(cache.entries.len(), 8);
    for k in &kernels {
        assert_eq!(cache.entries[&key(k)].len(), 8);
    }
    assert!(!dir.path().join("tunecache.tsv.lock").exists());
}

/// Child half of the multi-process test: tunes the key named by `QDSL_TEST_TUNE_KEY` into
/// the cache `QDSL_TEST_TUNE_PATH`. Ignored, so it runs only when the parent asks.
#[test]
#[ignore = "run by concurrent_processes_do_not_corrupt_the_cache"]
fn child_process_tunes_one_key() {
    let (Ok(path), Ok(k)) = (
        std::env::var("QDSL_TEST_TUNE_PATH"),
        std::env::var("QDSL_TEST_TUNE_KEY"),
    ) else {
        return;
    };
    let w = Arc::new(Mutex::new(Vec::new()));
    tuner(Path::new(&path), "cg", &w)
        .tune(&key(&k), &candidates(), |c| {
            std::thread::sleep(Duration::from_micros(500));
            fake(c)
        })
        .unwrap();
}

#[test]
fn concurrent_processes_do_not_corrupt_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|i| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "tune::tuner::tests::child_process_tunes_one_key",
                    "--ignored",
                    "--quiet",
                ])
                .env("QDSL_TEST_TUNE_PATH", &path)
                .env("QDSL_TEST_TUNE_KEY", format!("process{i}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let cache = TuneCache::parse(&std::fs::read_to_string(&path).unwrap(), &fp("cg")).unwrap();
    assert_eq!(cache.entries.len(), 4);
    for i in 0..4 {
        assert_eq!(cache.entries[&key(&format!("process{i}"))].len(), 8);
    }
}

fn two_stage() -> TwoStageSearch {
    TwoStageSearch::new(
        vec![String::new(), "maxnreg=32".into(), "maxnreg=64".into()],
        candidates().into_iter().map(|c| c.launch).collect(),
    )
}

/// Fake time of a capped build: as [`fake`], except that the cap of 64 registers makes
/// blocks of 128 without shared memory the fastest of all, and the cap of 32 fails to
/// launch with blocks of 16.
fn fake_capped(c: &Candidate) -> Result<f64, String> {
    match (c.compile.as_str(), c.launch.block[0], c.launch.shared_bytes) {
        ("maxnreg=64", 128, 0) => Ok(4.0),
        ("maxnreg=32", 16, _) => Err("too many resources requested".into()),
        _ => fake(c).map(|t| t + 1.0),
    }
}

#[test]
fn two_stage_search_times_launches_then_caps_with_the_finalists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    let mut order = Vec::new();
    let r = tuner(&path, "cg", &w)
        .tune_two_stage(&key("wilson_hop"), &two_stage(), |c| {
            order.push(c.clone());
            fake_capped(c)
        })
        .unwrap();
    // Stage one: the default build with all 8 launches, in order.
    assert_eq!(order[..8].to_vec(), candidates());
    // Stage two: each cap with stage one's 3 fastest launches (block/shared 16/8192 at
    // 6 µs, then 16/0 at 11.16, then 128/0 at 12.28; the blocks of 64 failed).
    let finalists = [(16, 8192), (16, 0), (128, 0)];
    let two: Vec<(&str, u32, u32)> = order[8..]
        .iter()
        .map(|c| (c.compile.as_str(), c.launch.block[0], c.launch.shared_bytes))
        .collect();
    let expected: Vec<(&str, u32, u32)> = ["maxnreg=32", "maxnreg=64"]
        .iter()
        .flat_map(|&k| finalists.map(|(b, s)| (k, b, s)))
        .collect();
    assert_eq!(two, expected);
    assert_eq!(r.best.compile, "maxnreg=64");
    assert_eq!(r.best.launch, LaunchConfig::covering(4096, 128, 0));
    assert_eq!(r.time_us, Some(4.0));
    // The compile labels round-trip through the file: a new tuner answers from it.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 8 + 8 + 6, "{text}");
    assert!(
        text.contains("\tmaxnreg=64\t128\t32\t0\t4\t*\n"),
        "the winner's row:\n{text}"
    );
    let cached = tuner(&path, "cg", &w)
        .tune_two_stage(
            &key("wilson_hop"),
            &two_stage(),
            |_| -> Result<f64, String> { panic!("a cached key must not be re-run") },
        )
        .unwrap();
    assert_eq!((cached.source, cached.best), (TuneSource::Cache, r.best));
    assert!(w.lock().unwrap().is_empty(), "{:?}", w.lock().unwrap());
}

#[test]
fn two_stage_search_off_and_out_of_space_cases() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    // Tuning off: the default build with the default launch, untimed.
    let off = tuner(&path, "cg", &w)
        .with_enabled(false)
        .tune_two_stage(&key("k"), &two_stage(), |_| -> Result<f64, String> {
            panic!("tuning is off")
        })
        .unwrap();
    assert_eq!(off.best, Candidate::launch(candidates()[0].launch));
    assert_eq!(off.source, TuneSource::Disabled);
    // A cached winner whose cap is no longer tried (the kernel now needs fewer
    // registers) is re-tuned with a warning.
    tuner(&path, "cg", &w)
        .tune_two_stage(&key("k"), &two_stage(), fake_capped)
        .unwrap();
    let mut fewer = two_stage();
    fewer.compiles.truncate(2);
    let mut runs = 0;
    let r = tuner(&path, "cg", &w)
        .tune_two_stage(&key("k"), &fewer, |c| {
            runs += 1;
            fake_capped(c)
        })
        .unwrap();
    assert_eq!((r.source, runs), (TuneSource::Measured, 8 + 3));
    assert_eq!(r.best.compile, "");
    assert_eq!(w.lock().unwrap().len(), 1, "{:?}", w.lock().unwrap());
    // A launch-only entry (as tuned before compile knobs existed) is re-tuned over
    // the caps, with a warning, even though its winner lies in the space.
    tuner(&path, "cg", &w)
        .tune(&key("old"), &candidates(), fake)
        .unwrap();
    w.lock().unwrap().clear();
    let mut runs = 0;
    let r = tuner(&path, "cg", &w)
        .tune_two_stage(&key("old"), &two_stage(), |c| {
            runs += 1;
            fake_capped(c)
        })
        .unwrap();
    assert_eq!((r.source, runs), (TuneSource::Measured, 8 + 2 * 3));
    assert_eq!(r.best.compile, "maxnreg=64");
    let warnings = w.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("tuned over other compile knobs"),
        "{warnings:?}"
    );
    // No builds: an error, not a panic.
    let none = TwoStageSearch::new(Vec::new(), vec![candidates()[0].launch]);
    let e = tuner(&path, "cg", &w)
        .tune_two_stage(&key("k"), &none, fake)
        .unwrap_err();
    assert!(matches!(e, TuneError::NoCandidates { .. }), "{e}");
}

#[test]
fn the_policy_of_qdsl_tune() {
    for (v, p) in [
        (None, TunePolicy::Launch),
        (Some("1"), TunePolicy::Launch),
        (Some("launch"), TunePolicy::Launch),
        (Some(" Full\n"), TunePolicy::Full),
        (Some("0"), TunePolicy::Off),
        (Some("off"), TunePolicy::Off),
    ] {
        assert_eq!(TunePolicy::from_env_value(v), p, "{v:?}");
    }
}

/// The key of [`key`] at another volume.
fn key_at(kernel: &str, volume: usize) -> TuneKey {
    TuneKey {
        volume,
        ..key(kernel)
    }
}

/// Rescaling as a stencil does: same build, block and shared memory, grid for 4096.
fn rescale(c: &Candidate) -> Option<Candidate> {
    Some(Candidate {
        compile: c.compile.clone(),
        launch: LaunchConfig::covering(4096, c.launch.block[0], c.launch.shared_bytes),
    })
}

#[test]
fn the_launch_policy_times_launches_of_one_build_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    let launch = || tuner(&path, "cg", &w).with_policy(TunePolicy::Launch);
    let mut order = Vec::new();
    let r = launch()
        .tune_launch(&key("k"), "maxnreg=64", &two_stage(), rescale, |c| {
            order.push(c.clone());
            fake_capped(c)
        })
        .unwrap();
    // Every launch of the heuristic build, no other build.
    assert_eq!(order.len(), 8);
    assert!(order.iter().all(|c| c.compile == "maxnreg=64"));
    assert_eq!(r.source, TuneSource::Measured);
    assert_eq!(r.best.launch, LaunchConfig::covering(4096, 128, 0));
    // The work counter saw one measured key; the second call is a cache answer.
    let t = launch();
    let again = t
        .tune_launch(
            &key("k"),
            "maxnreg=64",
            &two_stage(),
            rescale,
            |_| -> Result<f64, String> { panic!("cached") },
        )
        .unwrap();
    assert_eq!((again.source, t.work().count), (TuneSource::Cache, 0));
    // A full tuning's entry (other builds) is used as it is by the launch policy.
    let full = tuner(&path, "cg", &w).with_policy(TunePolicy::Full);
    let f = full
        .tune_launch(&key("f"), "", &two_stage(), rescale, fake_capped)
        .unwrap();
    assert_eq!((f.source, full.work().count), (TuneSource::Measured, 1));
    let reused = launch()
        .tune_launch(
            &key("f"),
            "prefetch-links",
            &two_stage(),
            rescale,
            |_| -> Result<f64, String> { panic!("cached") },
        )
        .unwrap();
    assert_eq!((reused.source, reused.best), (TuneSource::Cache, f.best));
    assert!(w.lock().unwrap().is_empty(), "{:?}", w.lock().unwrap());
}

#[test]
fn a_winner_transfers_to_a_volume_within_a_factor_two_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tunecache.tsv");
    let w = Arc::new(Mutex::new(Vec::new()));
    let launch = || tuner(&path, "cg", &w).with_policy(TunePolicy::Launch);
    // Tuned at 6000 sites: blocks of 16 with 8 KiB shared won.
    let at = |v| key_at("k", v);
    let r = launch()
        .tune_launch(&at(6000), "", &two_stage(), rescale, fake)
        .unwrap();
    assert_eq!(
        (r.best.launch.block[0], r.best.launch.shared_bytes),
        (16, 8192)
    );
    // 4096 sites (ratio 1.46): reused untimed, the grid recomputed for 4096.
    let t = launch()
        .tune_launch(
            &at(4096),
            "",
            &two_stage(),
            rescale,
            |_| -> Result<f64, String> { panic!("transferred") },
        )
        .unwrap();
    assert_eq!(t.source, TuneSource::Transferred { from_volume: 6000 });
    assert_eq!(t.best.launch, LaunchConfig::covering(4096, 16, 8192));
    // 2048 sites (ratio 2.9), or another kernel: measured.
    for k in [at(2048), key_at("other", 4096)] {
        let mut runs = 0;
        let m = launch()
            .tune_launch(&k, "", &two_stage(), rescale, |c| {
                runs += 1;
                fake(c)
            })
            .unwrap();
        assert_eq!((m.source, runs), (TuneSource::Measured, 8), "{k:?}");
    }
    // The full policy never transfers.
    let mut runs = 0;
    tuner(&path, "cg", &w)
        .with_policy(TunePolicy::Full)
        .tune_launch(&at(5000), "", &two_stage(), rescale, |c| {
            runs += 1;
            fake_capped(c)
        })
        .unwrap();
    assert!(runs > 8);
}
