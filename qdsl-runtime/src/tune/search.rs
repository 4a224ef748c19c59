//! The two-stage search over compile × launch knobs.
//!
//! Timing every compile variant with every launch costs |compiles| × |launches| runs
//! (8 × ~35 for a stencil). Launch knobs and register caps interact mostly through
//! occupancy, so the search is split:
//!
//! 1. **stage one**: the default build (`compiles[0]`) with every launch;
//! 2. **stage two**: every other build with the [`FINALISTS`] fastest launches of stage
//!    one (fastest first; failed launches are never finalists).
//!
//! That is |launches| + (|compiles| − 1) × [`FINALISTS`] runs, and every other build
//! is loaded once. The winner is the fastest of all runs of both stages.

use super::cache::Measurement;
use super::launch::{Candidate, LaunchConfig};

/// How many of stage one's fastest launches each other build is timed with.
pub const FINALISTS: usize = 3;

/// A two-stage search: compile labels (the default build first) and launches (the
/// default launch first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoStageSearch {
    /// Compile labels; `compiles[0]` is the default build (the one used untuned).
    pub compiles: Vec<String>,
    /// Launches; `launches[0]` is the default launch.
    pub launches: Vec<LaunchConfig>,
    /// Launches kept for stage two.
    pub finalists: usize,
}

impl TwoStageSearch {
    /// The search over `compiles` × `launches` with [`FINALISTS`] finalists.
    pub fn new(compiles: Vec<String>, launches: Vec<LaunchConfig>) -> Self {
        Self {
            compiles,
            launches,
            finalists: FINALISTS,
        }
    }

    /// The untuned choice: the default build with the default launch (`None` when
    /// either list is empty).
    pub fn default_candidate(&self) -> Option<Candidate> {
        Some(Candidate {
            compile: self.compiles.first()?.clone(),
            launch: *self.launches.first()?,
        })
    }

    /// Stage one: the default build with every launch, in order.
    pub fn stage_one(&self) -> Vec<Candidate> {
        let Some(compile) = self.compiles.first() else {
            return Vec::new();
        };
        self.launches
            .iter()
            .map(|&launch| Candidate {
                compile: compile.clone(),
                launch,
            })
            .collect()
    }

    /// Stage two given stage one's `measured` times: for each other build in order,
    /// the `finalists` fastest successful launches, fastest first (ties: earlier
    /// candidate first).
    pub fn stage_two(&self, measured: &[Measurement]) -> Vec<Candidate> {
        let mut ok: Vec<(f64, usize, LaunchConfig)> = measured
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                Some((m.time_us.filter(|t| t.is_finite())?, i, m.candidate.launch))
            })
            .collect();
        ok.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let best: Vec<LaunchConfig> = ok
            .into_iter()
            .map(|(_, _, l)| l)
            .take(self.finalists)
            .collect();
        self.compiles
            .iter()
            .skip(1)
            .flat_map(|compile| {
                best.iter().map(|&launch| Candidate {
                    compile: compile.clone(),
                    launch,
                })
            })
            .collect()
    }

    /// Runs of a full search when every launch succeeds (the progress bar's length).
    pub fn runs(&self) -> usize {
        let finalists = self.finalists.min(self.launches.len());
        self.launches.len() + self.compiles.len().saturating_sub(1) * finalists
    }

    /// Whether the cached `rows` of a key come from this search's builds: exactly
    /// its compile labels appear (a launch-only entry, or one over other caps, does
    /// not count).
    pub fn covered_by(&self, rows: &[Measurement]) -> bool {
        let mut labels: Vec<&str> = rows.iter().map(|m| m.candidate.compile.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        let mut wanted: Vec<&str> = self.compiles.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        wanted.dedup();
        labels == wanted
    }

    /// Whether `c` is a point of this search's space (a cached winner is reused only
    /// then).
    pub fn contains(&self, c: &Candidate) -> bool {
        self.compiles.contains(&c.compile) && self.launches.contains(&c.launch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(block: u32) -> LaunchConfig {
        LaunchConfig::covering(4096, block, 0)
    }

    fn search() -> TwoStageSearch {
        TwoStageSearch::new(
            vec![String::new(), "maxnreg=32".into(), "maxnreg=64".into()],
            [128, 16, 32, 64, 256].map(launch).to_vec(),
        )
    }

    fn measured(times: &[Option<f64>]) -> Vec<Measurement> {
        search()
            .stage_one()
            .into_iter()
            .zip(times)
            .map(|(candidate, &time_us)| Measurement { candidate, time_us })
            .collect()
    }

    #[test]
    fn stage_one_is_the_default_build_with_every_launch() {
        let s = search();
        let one = s.stage_one();
        assert_eq!(one.len(), 5);
        assert!(one.iter().all(|c| c.compile.is_empty()));
        assert_eq!(one[0], s.default_candidate().unwrap());
        assert_eq!(one[0].launch.block[0], 128);
        assert_eq!(s.runs(), 5 + 2 * 3);
    }

    #[test]
    fn stage_two_takes_the_three_fastest_launches_per_other_build() {
        // Blocks 128, 16, 32, 64, 256 take 10, 5, 12, (failed), 7 µs: the finalists
        // are 16, 256, 128 in that order.
        let m = measured(&[Some(10.0), Some(5.0), Some(12.0), None, Some(7.0)]);
        let two = search().stage_two(&m);
        let got: Vec<(&str, u32)> = two
            .iter()
            .map(|c| (c.compile.as_str(), c.launch.block[0]))
            .collect();
        assert_eq!(
            got,
            vec![
                ("maxnreg=32", 16),
                ("maxnreg=32", 256),
                ("maxnreg=32", 128),
                ("maxnreg=64", 16),
                ("maxnreg=64", 256),
                ("maxnreg=64", 128),
            ]
        );
        // Ties keep the stage-one order; a failed launch is never a finalist.
        let tied = measured(&[Some(1.0), None, Some(1.0), Some(1.0), Some(1.0)]);
        let blocks: Vec<u32> = search().stage_two(&tied)[..3]
            .iter()
            .map(|c| c.launch.block[0])
            .collect();
        assert_eq!(blocks, vec![128, 32, 64]);
        // Nothing succeeded: no stage two.
        assert!(search().stage_two(&measured(&[None; 5])).is_empty());
    }

    #[test]
    fn the_space_contains_only_its_builds_and_launches() {
        let s = search();
        let c = |compile: &str, block| Candidate {
            compile: compile.into(),
            launch: launch(block),
        };
        assert!(s.contains(&c("maxnreg=64", 256)));
        assert!(!s.contains(&c("maxnreg=40", 256)));
        assert!(!s.contains(&c("", 512)));
        // Cached rows count only when measured over exactly these builds.
        let row = |compile: &str| Measurement {
            candidate: c(compile, 16),
            time_us: Some(1.0),
        };
        let all = [row(""), row("maxnreg=32"), row("maxnreg=64"), row("")];
        assert!(s.covered_by(&all));
        assert!(!s.covered_by(&all[..2]), "a cap never measured");
        assert!(!s.covered_by(&[row(""), row("maxnreg=40")]));
        let empty = TwoStageSearch::new(Vec::new(), vec![launch(128)]);
        assert!(empty.stage_one().is_empty() && empty.default_candidate().is_none());
    }
}
