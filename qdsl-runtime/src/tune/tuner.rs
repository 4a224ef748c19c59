//! The autotuner: times every candidate of a key once, keeps every time in the tune
//! cache, and afterwards answers from the cache.
//!
//! # Policies ([`TunePolicy`], `QDSL_TUNE`)
//!
//! * `launch` (the default): the kernel's heuristic build only (one compile per kernel,
//!   [`crate::tune::compile::heuristic_knob`]), its launch knobs timed on first use (a
//!   few dozen launches of one build: milliseconds). A cached entry of any build (say
//!   one `full` tuning found) is used as it is. With no entry for the key, the winner of
//!   the same kernel at the nearest tuned volume within a factor
//!   [`TRANSFER_VOLUME_RATIO`] is reused ([`TuneSource::Transferred`], not saved):
//!   block and shared memory carry over, the grid is recomputed for this volume.
//! * `full` (`QDSL_TUNE=full`, `qdsl bench`): the two-stage search over compile knobs
//!   (register caps, prefetch builds) × launches ([`Tuner::tune_two_stage`]), each
//!   build compiled and loaded: seconds per kernel, kept in the cache for later runs.
//! * `off` (`QDSL_TUNE=0`): the default build and launch, untimed.

use super::cache::{best, CacheProblem, Measurement, TuneCache};
use super::key::{Fingerprint, TuneKey};
use super::launch::{Candidate, LaunchConfig};
use super::lock::FileLock;
use super::search::TwoStageSearch;
use crate::jit::{Work, WorkCounter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Environment variable switching tuning off: `QDSL_TUNE=0`.
pub const TUNE_ENV: &str = "QDSL_TUNE";

/// How long a writer waits for the cache lock before giving up (the result is still
/// used, only not saved).
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(30);
/// Age after which a lock file is taken to be left by a crashed process.
pub const STALE_LOCK: Duration = Duration::from_secs(120);

/// How much the tuner searches (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TunePolicy {
    /// No tuning: default build and launch.
    Off,
    /// Launch knobs of the heuristic build only (the default).
    Launch,
    /// Compile × launch knobs.
    Full,
}

impl TunePolicy {
    /// The policy of a `QDSL_TUNE` value: `0`, `off`, `false`, `no` → off; `full` →
    /// full; anything else (or unset) → launch.
    pub fn from_env_value(value: Option<&str>) -> Self {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("0" | "off" | "false" | "no") => Self::Off,
            Some("full") => Self::Full,
            _ => Self::Launch,
        }
    }

    /// `off`, `launch` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Launch => "launch",
            Self::Full => "full",
        }
    }
}

/// A cached winner is reused at another volume of the same kernel if the two volumes
/// differ by at most this factor (launch policy only).
pub const TRANSFER_VOLUME_RATIO: f64 = 2.0;

/// Where a tuning answer came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneSource {
    /// Tuning is off: the first candidate (the default launch) was taken untimed.
    Disabled,
    /// Read from the tune cache.
    Cache,
    /// Measured now.
    Measured,
    /// The cached winner at another volume (launch policy; not saved).
    Transferred {
        /// The volume it was measured at.
        from_volume: usize,
    },
    /// The launch policy does not time this kernel on first use and the cache has no
    /// winner for it: its default launch, untimed
    /// ([`crate::tune::tunable::FirstUse::CachedOnly`]).
    Default,
}

/// The tuner's answer for one key.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// The candidate to use.
    pub best: Candidate,
    /// Its time in µs (`None` when tuning is off).
    pub time_us: Option<f64>,
    /// Where the answer came from.
    pub source: TuneSource,
}

/// Errors of tuning.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The caller gave no candidates.
    #[error("no candidates to tune {kernel}")]
    NoCandidates {
        /// Kernel name.
        kernel: String,
    },
    /// Every candidate failed to run.
    #[error("every one of the {count} candidates of {kernel} failed; first error: {first}")]
    AllFailed {
        /// Kernel name.
        kernel: String,
        /// Number of candidates.
        count: usize,
        /// The first candidate's error.
        first: String,
    },
}

/// A sink for the tuner's warnings (stderr by default).
pub type WarningSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The autotuner over one tune cache file.
pub struct Tuner {
    path: PathBuf,
    fingerprint: Fingerprint,
    policy: TunePolicy,
    /// Whether `$QDSL_TUNE` chose the policy (then [`Tuner::with_default_policy`] keeps it).
    policy_from_env: bool,
    progress: bool,
    warn: WarningSink,
    cache: Mutex<Option<TuneCache>>,
    /// Keys measured (not answered from the cache) and the time spent.
    measured: WorkCounter,
    /// Launches decided in this process, by (program, kernel, work) ([`Tuner::remembered`]).
    decided: Mutex<HashMap<Decision, LaunchConfig>>,
}

/// What a decided launch is remembered by: program name, kernel name, work.
type Decision = (String, String, [usize; 3]);

impl std::fmt::Debug for Tuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuner")
            .field("path", &self.path)
            .field("fingerprint", &self.fingerprint)
            .field("policy", &self.policy)
            .finish()
    }
}

/// Whether tuning is on, given the value of `QDSL_TUNE`: off only for `0` (also
/// `off`, `false`, `no`).
pub fn tuning_enabled(value: Option<&str>) -> bool {
    !matches!(
        value.map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Some("0" | "off" | "false" | "no")
    )
}

impl Tuner {
    /// A tuner over the cache file `path` for programs with `fingerprint`; tuning on or
    /// off by `$QDSL_TUNE`; progress bar on stderr (drawn only on a terminal); warnings
    /// to stderr.
    pub fn new(path: &Path, fingerprint: Fingerprint) -> Self {
        let env = std::env::var(TUNE_ENV).ok();
        Self {
            path: path.to_path_buf(),
            fingerprint,
            policy: TunePolicy::from_env_value(env.as_deref()),
            policy_from_env: env.is_some_and(|v| !v.trim().is_empty()),
            progress: true,
            warn: Arc::new(|w| eprintln!("qdsl: warning: {w}")),
            cache: Mutex::new(None),
            measured: WorkCounter::default(),
            decided: Mutex::new(HashMap::new()),
        }
    }

    /// Turns tuning on (the full search, as before policies existed) or off
    /// (overriding `$QDSL_TUNE`).
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.policy = if enabled {
            TunePolicy::Full
        } else {
            TunePolicy::Off
        };
        self
    }

    /// Sets the policy (overriding `$QDSL_TUNE`).
    pub fn with_policy(mut self, policy: TunePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the policy unless `$QDSL_TUNE` chose one (`qdsl bench` tunes fully by
    /// default).
    pub fn with_default_policy(mut self, policy: TunePolicy) -> Self {
        if !self.policy_from_env {
            self.policy = policy;
        }
        self
    }

    /// The policy.
    pub fn policy(&self) -> TunePolicy {
        self.policy
    }

    /// The keys measured so far (cache answers excluded) and the time spent measuring.
    pub fn work(&self) -> Work {
        self.measured.get()
    }

    /// Shows or hides the progress bar.
    pub fn with_progress(mut self, progress: bool) -> Self {
        self.progress = progress;
        self
    }

    /// Sends warnings to `sink` instead of stderr.
    pub fn with_warnings(mut self, sink: WarningSink) -> Self {
        self.warn = sink;
        self
    }

    /// The launch decided earlier in this process for kernel `kernel` of program
    /// `program` over `work` ([`Self::remember`]): a lookup, so that kernels launched
    /// every iteration (BLAS, reductions) ask the tuner once. A program's name
    /// determines its source within a process (the GPU's module cache relies on that
    /// too), and a tuner serves one device (its fingerprint names it).
    pub fn remembered(
        &self,
        program: &str,
        kernel: &str,
        work: [usize; 3],
    ) -> Option<LaunchConfig> {
        let map = self.decided.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(program.to_string(), kernel.to_string(), work))
            .copied()
    }

    /// Remembers `launch` for kernel `kernel` of `program` over `work`.
    pub fn remember(&self, program: &str, kernel: &str, work: [usize; 3], launch: LaunchConfig) {
        let mut map = self.decided.lock().unwrap_or_else(|p| p.into_inner());
        map.insert((program.to_string(), kernel.to_string(), work), launch);
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether tuning is on.
    pub fn enabled(&self) -> bool {
        self.policy != TunePolicy::Off
    }

    /// Reads the cache file: an empty cache if it does not exist, and (with a warning)
    /// if it is corrupt or was made with another fingerprint.
    fn read(&self) -> TuneCache {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return TuneCache::new(self.fingerprint.clone())
            }
            Err(e) => {
                (self.warn)(&format!(
                    "cannot read the tune cache {}: {e}; re-tuning",
                    self.path.display()
                ));
                return TuneCache::new(self.fingerprint.clone());
            }
        };
        match TuneCache::parse(&text, &self.fingerprint) {
            Ok(c) => c,
            Err(p) => {
                let what = match p {
                    CacheProblem::Corrupt { .. } => "is corrupt",
                    CacheProblem::Mismatch { .. } => "is stale",
                };
                (self.warn)(&format!(
                    "the tune cache {} {what} ({p}); re-tuning and rewriting it",
                    self.path.display()
                ));
                TuneCache::new(self.fingerprint.clone())
            }
        }
    }

    /// The candidate to use for `key`.
    ///
    /// * tuning off: `candidates[0]` (callers put the default launch first), untimed;
    /// * a cached entry whose best candidate is among `candidates`: that one;
    /// * otherwise every candidate is run once through `run`, which returns its time in
    ///   µs (or an error: the candidate is recorded as failed); all times are saved to
    ///   the cache (under the lock) and the fastest is returned.
    pub fn tune<E: Display>(
        &self,
        key: &TuneKey,
        candidates: &[Candidate],
        mut run: impl FnMut(&Candidate) -> Result<f64, E>,
    ) -> Result<Tuned, TuneError> {
        let Some(first) = candidates.first() else {
            return Err(TuneError::NoCandidates {
                kernel: key.kernel.clone(),
            });
        };
        if !self.enabled() {
            return Ok(Tuned {
                best: first.clone(),
                time_us: None,
                source: TuneSource::Disabled,
            });
        }
        if let Some(hit) = self.lookup(key, |c| candidates.contains(c), |_| true) {
            return Ok(hit);
        }
        let start = std::time::Instant::now();
        let bar = self.progress_bar(key, candidates.len());
        let mut runs = Runs::default();
        runs.measure(key, candidates, &mut run, &bar);
        bar.finish_and_clear();
        let tuned = self.finish(key, runs);
        self.measured.add(start);
        crate::jit::trace::event("tune", &format!("{} {}", key.kernel, key.formats), start);
        tuned
    }

    /// The candidate to use for `key` from the two-stage `search` over compile × launch
    /// knobs ([`TwoStageSearch`]): as [`Self::tune`], with the default build and launch
    /// when tuning is off, a cached winner if it lies in the search space, else stage
    /// one's and then stage two's candidates timed through `run` (one progress bar for
    /// both) and all times saved. A cached entry measured over other compile labels (a
    /// launch-only entry of an older version, or another set of caps) is re-tuned.
    pub fn tune_two_stage<E: Display>(
        &self,
        key: &TuneKey,
        search: &TwoStageSearch,
        mut run: impl FnMut(&Candidate) -> Result<f64, E>,
    ) -> Result<Tuned, TuneError> {
        let Some(first) = search.default_candidate() else {
            return Err(TuneError::NoCandidates {
                kernel: key.kernel.clone(),
            });
        };
        if !self.enabled() {
            return Ok(Tuned {
                best: first,
                time_us: None,
                source: TuneSource::Disabled,
            });
        }
        if let Some(hit) = self.lookup(key, |c| search.contains(c), |rows| search.covered_by(rows))
        {
            return Ok(hit);
        }
        let start = std::time::Instant::now();
        let bar = self.progress_bar(key, search.runs());
        let mut runs = Runs::default();
        runs.measure(key, &search.stage_one(), &mut run, &bar);
        let two = search.stage_two(&runs.measurements);
        bar.set_length((runs.measurements.len() + two.len()) as u64);
        runs.measure(key, &two, &mut run, &bar);
        bar.finish_and_clear();
        let tuned = self.finish(key, runs);
        self.measured.add(start);
        crate::jit::trace::event("tune", &format!("{} {}", key.kernel, key.formats), start);
        tuned
    }

    /// The launch policy's answer for `key` ([`TunePolicy::Launch`], see the module
    /// doc): a cached winner of any build whose launch is among `launches`; else the
    /// winner at the nearest volume within [`TRANSFER_VOLUME_RATIO`], mapped to this
    /// volume by `rescale` (`None`: it does not transfer); else `build` (the heuristic
    /// build's label) with every launch of `launches` timed through `run` and saved.
    /// Under the other policies this is [`Self::tune_two_stage`] over `full` (off: its
    /// default candidate).
    pub fn tune_launch<E: Display>(
        &self,
        key: &TuneKey,
        build: &str,
        full: &TwoStageSearch,
        rescale: impl Fn(&Candidate) -> Option<Candidate>,
        mut run: impl FnMut(&Candidate) -> Result<f64, E>,
    ) -> Result<Tuned, TuneError> {
        if self.policy != TunePolicy::Launch {
            return self.tune_two_stage(key, full, run);
        }
        let launches = &full.launches;
        if let Some(hit) = self.cached_launch(key, launches, &rescale) {
            return Ok(hit);
        }
        let candidates: Vec<Candidate> = launches
            .iter()
            .map(|&launch| Candidate {
                compile: build.to_string(),
                launch,
            })
            .collect();
        self.tune(key, &candidates, &mut run)
    }

    /// The launch policy's answer from the cache alone: the cached winner of `key` (any
    /// build) whose launch is among `launches`, else the winner at the nearest volume
    /// within [`TRANSFER_VOLUME_RATIO`] mapped by `rescale`.
    pub(super) fn cached_launch(
        &self,
        key: &TuneKey,
        launches: &[LaunchConfig],
        rescale: &impl Fn(&Candidate) -> Option<Candidate>,
    ) -> Option<Tuned> {
        self.lookup(key, |c| launches.contains(&c.launch), |_| true)
            .or_else(|| self.transfer(key, rescale))
    }

    /// The cached winner of the same kernel (every key field but the volume equal) at
    /// the volume nearest `key.volume` within [`TRANSFER_VOLUME_RATIO`], rescaled.
    fn transfer(
        &self,
        key: &TuneKey,
        rescale: &impl Fn(&Candidate) -> Option<Candidate>,
    ) -> Option<Tuned> {
        let mut guard = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let cache = guard.get_or_insert_with(|| self.read());
        let ratio = |v: usize| {
            let (a, b) = (v.max(1) as f64, key.volume.max(1) as f64);
            a.max(b) / a.min(b)
        };
        let (from, rows) = cache
            .entries
            .iter()
            .filter(|(k, _)| {
                k.volume != key.volume
                    && (
                        &k.kernel,
                        k.variant_hash,
                        k.source_hash,
                        &k.formats,
                        &k.device,
                    ) == (
                        &key.kernel,
                        key.variant_hash,
                        key.source_hash,
                        &key.formats,
                        &key.device,
                    )
                    && ratio(k.volume) <= TRANSFER_VOLUME_RATIO
            })
            .min_by(|a, b| ratio(a.0.volume).total_cmp(&ratio(b.0.volume)))?;
        let best = rescale(&best(rows)?.candidate)?;
        Some(Tuned {
            best,
            time_us: None,
            source: TuneSource::Transferred {
                from_volume: from.volume,
            },
        })
    }

    /// The fastest of `runs` (saved to the cache), or every candidate's failure.
    fn finish(&self, key: &TuneKey, runs: Runs) -> Result<Tuned, TuneError> {
        let Some(winner) = best(&runs.measurements).cloned() else {
            return Err(TuneError::AllFailed {
                kernel: key.kernel.clone(),
                count: runs.measurements.len(),
                first: runs.first_error.unwrap_or_default(),
            });
        };
        self.save(key, runs.measurements);
        Ok(Tuned {
            best: winner.candidate,
            time_us: winner.time_us,
            source: TuneSource::Measured,
        })
    }

    /// The cached winner of `key` if it is `allowed` and the cached rows are
    /// `complete` (measured over the compile knobs asked for now).
    fn lookup(
        &self,
        key: &TuneKey,
        allowed: impl Fn(&Candidate) -> bool,
        complete: impl Fn(&[Measurement]) -> bool,
    ) -> Option<Tuned> {
        let mut guard = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let cache = guard.get_or_insert_with(|| self.read());
        let rows = cache.entries.get(key)?;
        let m = best(rows)?;
        if !complete(rows) {
            (self.warn)(&format!(
                "the cached entry of {} was tuned over other compile knobs; re-tuning",
                key.kernel
            ));
            return None;
        }
        if !allowed(&m.candidate) {
            (self.warn)(&format!(
                "the cached best launch of {} ({}) is no longer a candidate; re-tuning",
                key.kernel, m.candidate
            ));
            return None;
        }
        Some(Tuned {
            best: m.candidate.clone(),
            time_us: m.time_us,
            source: TuneSource::Cache,
        })
    }

    /// Merges `key`'s measurements into the file under the lock: re-read the file (other
    /// processes may have added keys), replace the key, write atomically.
    fn save(&self, key: &TuneKey, measurements: Vec<Measurement>) {
        let mut guard = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let lock_path = {
            let mut name = self.path.as_os_str().to_owned();
            name.push(".lock");
            PathBuf::from(name)
        };
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let lock = match FileLock::acquire(&lock_path, LOCK_TIMEOUT, STALE_LOCK) {
            Ok(l) => l,
            Err(e) => {
                (self.warn)(&format!("{e}; the tuning result is used but not saved"));
                guard
                    .get_or_insert_with(|| TuneCache::new(self.fingerprint.clone()))
                    .entries
                    .insert(key.clone(), measurements);
                return;
            }
        };
        let mut fresh = self.read();
        fresh.entries.insert(key.clone(), measurements);
        if let Err(e) = crate::jit::cache::write_atomic(&self.path, fresh.render().as_bytes()) {
            (self.warn)(&format!(
                "cannot write the tune cache {}: {e}",
                self.path.display()
            ));
        }
        drop(lock);
        *guard = Some(fresh);
    }

    fn progress_bar(&self, key: &TuneKey, n: usize) -> ProgressBar {
        if !self.progress {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("tuning {pos}/{len} {bar:30} {msg}") {
            bar.set_style(style);
        }
        bar.set_message(key.kernel.clone());
        bar
    }
}

/// The measurements of one tuning so far and the first failure.
#[derive(Default)]
struct Runs {
    measurements: Vec<Measurement>,
    first_error: Option<String>,
}

impl Runs {
    /// Times each of `candidates` through `run` (a failure or a negative or non-finite
    /// time is recorded as failed), advancing `bar`.
    fn measure<E: Display>(
        &mut self,
        key: &TuneKey,
        candidates: &[Candidate],
        run: &mut impl FnMut(&Candidate) -> Result<f64, E>,
        bar: &ProgressBar,
    ) {
        for c in candidates {
            bar.set_message(format!("{} {c}", key.kernel));
            let time_us = match run(c) {
                Ok(t) if t.is_finite() && t >= 0.0 => Some(t),
                Ok(t) => {
                    self.first_error
                        .get_or_insert_with(|| format!("{c}: invalid time {t}"));
                    None
                }
                Err(e) => {
                    self.first_error.get_or_insert_with(|| format!("{c}: {e}"));
                    None
                }
            };
            self.measurements.push(Measurement {
                candidate: c.clone(),
                time_us,
            });
            bar.inc(1);
        }
    }
}

#[cfg(test)]
mod tests;
