//! [`Tunable`]: what any kernel offers the tuner — its key, its launch space, its
//! compile knobs (if any) and a timer — and [`Tuner::tune_kernel`], the one entry point
//! that tunes it under the tuner's [`TunePolicy`].
//!
//! The key ([`TuneKey`]) is the kernel's name, its variant hash, the hash of the
//! variant's own source, the volume (work items), the formats and the device, so a
//! change of the generated code re-tunes exactly the variants whose source changed.

use super::compile::CompileKnob;
use super::key::TuneKey;
use super::launch::{Candidate, LaunchConfig};
use super::search::TwoStageSearch;
use super::tuner::{TuneError, TunePolicy, Tuned, Tuner};
use std::fmt::Display;

/// A kernel the tuner can tune.
pub trait Tunable {
    /// What timing a candidate can fail with.
    type Error: Display + From<TuneError>;

    /// The tune key.
    fn tune_key(&self) -> TuneKey;

    /// Threads of work along the tuned block dimension (the grid of a launch covers
    /// them).
    fn threads(&self) -> usize;

    /// The launches to try, the default first.
    fn launches(&self) -> Result<Vec<LaunchConfig>, Self::Error>;

    /// The build compiled on first use (the launch policy tunes only its launches):
    /// [`CompileKnob::Default`] for kernels without compile knobs.
    fn heuristic_build(&self) -> CompileKnob {
        CompileKnob::Default
    }

    /// Every build of the full search, the default build first (only asked for under
    /// [`TunePolicy::Full`]; may compile to learn, e.g., the register count).
    fn builds(&mut self) -> Result<Vec<CompileKnob>, Self::Error> {
        Ok(vec![CompileKnob::Default])
    }

    /// The time of one candidate in µs.
    fn time_us(&mut self, candidate: &Candidate) -> Result<f64, Self::Error>;
}

impl Tuner {
    /// Tunes `kernel` under this tuner's policy: off → the heuristic build with the
    /// default launch; launch → the heuristic build's launches (or a cached or
    /// transferred winner, see [`Tuner::tune_launch`]); full → the two-stage search over
    /// [`Tunable::builds`] × launches.
    pub fn tune_kernel<T: Tunable>(&self, kernel: &mut T) -> Result<Tuned, T::Error> {
        let key = kernel.tune_key();
        let launches = kernel.launches()?;
        let heuristic = kernel.heuristic_build().label();
        let builds = match self.policy() {
            TunePolicy::Full => kernel.builds()?.iter().map(CompileKnob::label).collect(),
            TunePolicy::Launch | TunePolicy::Off => vec![heuristic.clone()],
        };
        let full = TwoStageSearch::new(builds, launches);
        let threads = kernel.threads();
        // A winner at another volume keeps its build, block and shared memory; the grid
        // covers this volume's threads.
        let rescale = |c: &Candidate| {
            Some(Candidate {
                compile: c.compile.clone(),
                launch: LaunchConfig::covering(threads, c.launch.block, c.launch.shared_bytes),
            })
        };
        Ok(self.tune_launch(&key, &heuristic, &full, rescale, |c| kernel.time_us(c))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::key::Fingerprint;
    use crate::tune::launch::{launch_candidates, LaunchLimits};
    use crate::tune::TuneSource;

    /// A fake kernel: blocks of 64 are fastest; the cap of 64 registers is faster still.
    struct Fake {
        volume: usize,
        timed: Vec<Candidate>,
        asked_builds: bool,
    }

    impl Tunable for Fake {
        type Error = TuneError;
        fn tune_key(&self) -> TuneKey {
            TuneKey::new("fake", 1, 2, self.volume, "f32", "Fake GPU")
        }
        fn threads(&self) -> usize {
            self.volume
        }
        fn launches(&self) -> Result<Vec<LaunchConfig>, TuneError> {
            Ok(launch_candidates(self.volume, &LaunchLimits::H100))
        }
        fn heuristic_build(&self) -> CompileKnob {
            CompileKnob::MaxRegisters(128)
        }
        fn builds(&mut self) -> Result<Vec<CompileKnob>, TuneError> {
            self.asked_builds = true;
            Ok(vec![CompileKnob::Default, CompileKnob::MaxRegisters(64)])
        }
        fn time_us(&mut self, c: &Candidate) -> Result<f64, TuneError> {
            self.timed.push(c.clone());
            let cap = if c.compile == "maxnreg=64" { 1.0 } else { 2.0 };
            Ok(cap
                + (f64::from(c.launch.block) - 64.0).abs() / 64.0
                + f64::from(c.launch.shared_bytes) / 1e5)
        }
    }

    fn fake(volume: usize) -> Fake {
        Fake {
            volume,
            timed: Vec::new(),
            asked_builds: false,
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
        assert!(k.timed.iter().all(|c| c.compile == "maxnreg=128"));
        assert_eq!(k.timed.len(), k.launches().unwrap().len());
        assert_eq!((r.best.launch.block, r.best.launch.shared_bytes), (64, 0));
        // Off: the heuristic build and the default launch, untimed.
        let mut k = fake(8192);
        let r = tuner(dir.path(), TunePolicy::Off)
            .tune_kernel(&mut k)
            .unwrap();
        assert!(k.timed.is_empty());
        assert_eq!(r.source, TuneSource::Disabled);
        assert_eq!(r.best.compile, "maxnreg=128");
        assert_eq!(r.best.launch, LaunchConfig::default_for(8192));
        // Full: both builds; the cap of 64 wins.
        let mut k = fake(65_536);
        let r = tuner(dir.path(), TunePolicy::Full)
            .tune_kernel(&mut k)
            .unwrap();
        assert!(k.asked_builds);
        assert_eq!(r.best.compile, "maxnreg=64");
        assert!(k.timed.iter().any(|c| c.compile.is_empty()));
        // Launch at 1.5 times the volume of the first: transferred, grid recomputed.
        let mut k = fake(6144);
        let r = tuner(dir.path(), TunePolicy::Launch)
            .tune_kernel(&mut k)
            .unwrap();
        assert!(k.timed.is_empty());
        assert_eq!(r.source, TuneSource::Transferred { from_volume: 4096 });
        assert_eq!(r.best.launch, LaunchConfig::covering(6144, 64, 0));
    }
}
