//! [`Tunable`]: what any kernel offers the tuner — its key, its work, its geometry
//! (whose knob space the candidates are enumerated from), its compile knobs (if any)
//! and a timer — and [`Tuner::tune_kernel`], the one entry point that tunes it under the
//! tuner's [`TunePolicy`].
//!
//! The key ([`TuneKey`]) is the kernel's name, its variant hash, the hash of the
//! variant's own source, the volume (work items), the formats and the device, so a
//! change of the generated code re-tunes exactly the variants whose source changed.
//!
//! # What is timed on first use
//!
//! Timing costs launches, and under the default launch policy a kernel's first use must
//! not be slower than untuned. The generated stencils (the operators, most of a solve's
//! time) have their launches timed on first use ([`FirstUse::Time`]); the BLAS,
//! reduction, format-conversion and link-path kernels ([`FirstUse::CachedOnly`]) are
//! cheap, run on many layouts or once per set-up, and a reduction's grid changes the
//! order of its sum: under the launch policy they take a winner from the cache (one a
//! `QDSL_TUNE=full` run or `qdsl bench` measured; also at a volume within
//! [`super::TRANSFER_VOLUME_RATIO`]), else their default launch, untimed
//! ([`TuneSource::Default`]). Under the full policy every kernel is tuned.

use super::compile::{compile_knobs, heuristic_knob, CompileKnob};
use super::key::TuneKey;
use super::launch::{launch_candidates, Candidate, LaunchConfig, LaunchLimits};
use super::search::TwoStageSearch;
use super::tuner::{TuneError, TunePolicy, TuneSource, Tuned, Tuner};
use qdsl_core::dsl::Geometry;
use std::fmt::Display;

/// Whether the launch policy times a kernel's launches on first use (see the module
/// doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstUse {
    /// Timed on first use (the stencils).
    Time,
    /// A cached winner or the default launch, untimed (tuned under the full policy).
    CachedOnly,
}

/// A kernel the tuner can tune.
pub trait Tunable {
    /// What timing a candidate can fail with.
    type Error: Display + From<TuneError>;

    /// The tune key.
    fn tune_key(&self) -> TuneKey;

    /// The work items (x, y, z) a launch covers.
    fn work(&self) -> [usize; 3];

    /// The kernel's geometry, with the knob space candidates are enumerated from.
    fn geometry(&self) -> Geometry;

    /// The device's launch limits.
    fn limits(&self) -> Result<LaunchLimits, Self::Error>;

    /// Whether the launch policy times this kernel on first use.
    fn first_use(&self) -> FirstUse {
        FirstUse::Time
    }

    /// The launches to try, the default first: [`launch_candidates`] of the geometry's
    /// knob space over [`Self::work`].
    fn launches(&self) -> Result<Vec<LaunchConfig>, Self::Error> {
        Ok(launch_candidates(
            self.work(),
            &self.geometry(),
            &self.limits()?,
        ))
    }

    /// The build compiled on first use (the launch policy tunes only its launches):
    /// [`heuristic_knob`] of the geometry's compile knobs ([`CompileKnob::Default`] for
    /// kernels without any).
    fn heuristic_build(&self) -> CompileKnob {
        heuristic_knob(&self.geometry().knobs.compile)
    }

    /// The register count of the default build, where the compile knobs include
    /// register caps (only asked for under [`TunePolicy::Full`]; may compile).
    fn uncapped_registers(&mut self) -> Result<Option<u32>, Self::Error> {
        Ok(None)
    }

    /// Every build of the full search, the default build first: [`compile_knobs`] of
    /// the geometry's compile knobs (only asked for under [`TunePolicy::Full`]).
    fn builds(&mut self) -> Result<Vec<CompileKnob>, Self::Error> {
        let space = self.geometry().knobs.compile;
        let uncapped = if space.register_caps {
            self.uncapped_registers()?
        } else {
            None
        };
        Ok(compile_knobs(&space, uncapped))
    }

    /// The time of one candidate in µs.
    fn time_us(&mut self, candidate: &Candidate) -> Result<f64, Self::Error>;
}

impl Tuner {
    /// Tunes `kernel` under this tuner's policy: off → the heuristic build with the
    /// default launch; launch → the heuristic build's launches (or a cached or
    /// transferred winner, see [`Tuner::tune_launch`]; a [`FirstUse::CachedOnly`]
    /// kernel without one: its default launch, untimed); full → the two-stage search
    /// over [`Tunable::builds`] × launches.
    pub fn tune_kernel<T: Tunable>(&self, kernel: &mut T) -> Result<Tuned, T::Error> {
        let key = kernel.tune_key();
        let launches = kernel.launches()?;
        let heuristic = kernel.heuristic_build().label();
        let builds = match self.policy() {
            TunePolicy::Full => kernel.builds()?.iter().map(CompileKnob::label).collect(),
            TunePolicy::Launch | TunePolicy::Off => vec![heuristic.clone()],
        };
        let full = TwoStageSearch::new(builds, launches);
        let (work, geometry) = (kernel.work(), kernel.geometry());
        // A winner at another volume keeps its build, block, shared memory and grid
        // limit; the grid covers this volume's work.
        let rescale = |c: &Candidate| {
            Some(Candidate {
                compile: c.compile.clone(),
                launch: c.launch.rescaled(&geometry, work),
            })
        };
        if self.policy() == TunePolicy::Launch && kernel.first_use() == FirstUse::CachedOnly {
            let cached = self.cached_launch(&key, &full.launches, &rescale);
            return match (cached, full.default_candidate()) {
                (Some(hit), _) => Ok(hit),
                (None, Some(best)) => Ok(Tuned {
                    best,
                    time_us: None,
                    source: TuneSource::Default,
                }),
                (None, None) => Err(TuneError::NoCandidates {
                    kernel: key.kernel.clone(),
                }
                .into()),
            };
        }
        Ok(self.tune_launch(&key, &heuristic, &full, rescale, |c| kernel.time_us(c))?)
    }
}

#[cfg(test)]
mod tests;
