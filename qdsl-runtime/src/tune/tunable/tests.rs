use super::*;
use crate::tune::key::Fingerprint;
use qdsl_core::dsl::{CompileSpace, Extents, LaunchSpace};

/// A fake kernel. Stencil-like (1-D, register caps): blocks of 64 are fastest and the
/// cap of 64 registers is faster still. Planar (2-D blocks): [64, 4] is fastest.
struct Fake {
    volume: usize,
    planar: bool,
    first_use: FirstUse,
    source_hash: u64,
    timed: Vec<Candidate>,
    asked_builds: bool,
}

fn fake(volume: usize) -> Fake {
    Fake {
        volume,
        planar: false,
        first_use: FirstUse::Time,
        source_hash: 2,
        timed: Vec::new(),
        asked_builds: false,
    }
}

fn planar(volume: usize) -> Fake {
    Fake {
        planar: true,
        ..fake(volume)
    }
}

impl Tunable for Fake {
    type Error = TuneError;
    fn tune_key(&self) -> TuneKey {
        let name = if self.planar { "planar" } else { "fake" };
        TuneKey::new(name, 1, self.source_hash, self.volume, "f32", "Fake GPU")
    }
    fn work(&self) -> [usize; 3] {
        if self.planar {
            [self.volume, 12, 1]
        } else {
            [self.volume, 1, 1]
        }
    }
    fn geometry(&self) -> Geometry {
        if self.planar {
            Geometry::linear().with_tunable_block(
                2,
                LaunchSpace::planar(
                    Extents::PowersOfTwo { min: 32, max: 256 },
                    Extents::PowersOfTwo { min: 1, max: 8 },
                    [32, 1],
                ),
            )
        } else {
            Geometry::per_site(0).with_compile_space(CompileSpace {
                register_caps: true,
                prefetch: false,
            })
        }
    }
    fn limits(&self) -> Result<LaunchLimits, TuneError> {
        Ok(LaunchLimits::H100)
    }
    fn first_use(&self) -> FirstUse {
        self.first_use
    }
    fn uncapped_registers(&mut self) -> Result<Option<u32>, TuneError> {
        self.asked_builds = true;
        Ok(Some(72))
    }
    fn time_us(&mut self, c: &Candidate) -> Result<f64, TuneError> {
        self.timed.push(c.clone());
        let cap = if c.compile == "maxnreg=64" { 1.0 } else { 2.0 };
        let [x, y, _] = c.launch.block.map(f64::from);
        let shape = if self.planar {
            (x - 64.0).abs() / 64.0 + (y - 4.0).abs()
        } else {
            (x - 64.0).abs() / 64.0
        };
        Ok(cap + shape + f64::from(c.launch.shared_bytes) / 1e5)
    }
}

fn tuner(dir: &std::path::Path, policy: TunePolicy) -> Tuner {
    Tuner::new(
        &dir.join("t.tsv"),
        Fingerprint::new("cg", "Fake GPU", "sm_90", "1", "1"),
    )
    .with_policy(policy)
    .with_progress(false)
    .with_warnings(std::sync::Arc::new(|_| {}))
}

#[test]
fn each_policy_tunes_what_it_says() {
    let dir = tempfile::tempdir().unwrap();
    // Launch: only the heuristic build's launches, no builds asked for.
    let mut k = fake(4096);
    let r = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut k)
        .unwrap();
    assert!(!k.asked_builds);
    assert!(k.timed.iter().all(|c| c.compile.is_empty()));
    assert_eq!(k.timed.len(), k.launches().unwrap().len());
    assert_eq!(
        (r.best.launch.block, r.best.launch.shared_bytes),
        ([64, 1, 1], 0)
    );
    // Off: the heuristic build and the default launch, untimed.
    let mut k = fake(8192);
    let r = tuner(dir.path(), TunePolicy::Off)
        .tune_kernel(&mut k)
        .unwrap();
    assert!(k.timed.is_empty());
    assert_eq!(r.source, TuneSource::Disabled);
    assert_eq!(r.best.launch, LaunchConfig::default_for(8192));
    // Full: the builds of the knob space (caps below 72 registers); the cap of 64 wins.
    let mut k = fake(65_536);
    let r = tuner(dir.path(), TunePolicy::Full)
        .tune_kernel(&mut k)
        .unwrap();
    assert!(k.asked_builds);
    assert_eq!(r.best.compile, "maxnreg=64");
    assert!(k.timed.iter().any(|c| c.compile.is_empty()));
    assert!(!k.timed.iter().any(|c| c.compile == "maxnreg=80"));
    // Launch at 1.5 times the volume of the first: transferred, grid recomputed.
    let mut k = fake(6144);
    let r = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut k)
        .unwrap();
    assert!(k.timed.is_empty());
    assert_eq!(r.source, TuneSource::Transferred { from_volume: 4096 });
    assert_eq!(r.best.launch, LaunchConfig::covering(6144, 64, 0));
}

#[test]
fn a_two_dimensional_kernel_is_tuned_over_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = planar(4096);
    let r = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut k)
        .unwrap();
    assert_eq!(r.best.launch.block, [64, 4, 1]);
    assert_eq!(r.best.launch.grid, [64, 3, 1]);
    // Every timed block is whole warps, at most 256 × 8, and never beyond the 12
    // work items along y.
    assert!(k.timed.iter().all(|c| {
        let [x, y, z] = c.launch.block;
        (x * y) % 32 == 0 && x <= 256 && y <= 8 && z == 1
    }));
    assert!(k.timed.iter().any(|c| c.launch.block[1] == 8));
    // Read back from the cache file by a new tuner: the 2-D launch round-trips.
    let mut again = planar(4096);
    let r2 = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut again)
        .unwrap();
    assert!(again.timed.is_empty());
    assert_eq!((r2.source, r2.best), (TuneSource::Cache, r.best));
}

#[test]
fn kernels_tuned_only_by_the_full_policy_cost_nothing_on_first_use() {
    let dir = tempfile::tempdir().unwrap();
    let cached_only = |volume| Fake {
        first_use: FirstUse::CachedOnly,
        ..planar(volume)
    };
    // Launch policy, empty cache: the default launch, nothing timed.
    let mut k = cached_only(4096);
    let r = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut k)
        .unwrap();
    assert!(k.timed.is_empty());
    assert_eq!(r.source, TuneSource::Default);
    assert_eq!(r.best.launch.block, [32, 1, 1]);
    // A full tuning (say `qdsl bench`) measures and saves it …
    let mut k = cached_only(4096);
    let full = tuner(dir.path(), TunePolicy::Full)
        .tune_kernel(&mut k)
        .unwrap();
    assert_eq!(full.source, TuneSource::Measured);
    assert_eq!(full.best.launch.block, [64, 4, 1]);
    // … and later runs under the launch policy use it, untimed, also at a nearby
    // volume.
    for (volume, source) in [
        (4096, TuneSource::Cache),
        (5000, TuneSource::Transferred { from_volume: 4096 }),
    ] {
        let mut k = cached_only(volume);
        let r = tuner(dir.path(), TunePolicy::Launch)
            .tune_kernel(&mut k)
            .unwrap();
        assert!(k.timed.is_empty());
        assert_eq!((r.source, r.best.launch.block), (source, [64, 4, 1]));
    }
}

#[test]
fn a_changed_source_is_tuned_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut k = fake(4096);
    tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut k)
        .unwrap();
    // The same kernel whose generated source changed: the key differs in its source
    // hash only, so it is measured afresh (and not transferred).
    let mut changed = Fake {
        source_hash: 3,
        ..fake(4096)
    };
    let r = tuner(dir.path(), TunePolicy::Launch)
        .tune_kernel(&mut changed)
        .unwrap();
    assert_eq!(r.source, TuneSource::Measured);
    assert!(!changed.timed.is_empty());
    assert_eq!(changed.tune_key().source_hash, 3);
}
