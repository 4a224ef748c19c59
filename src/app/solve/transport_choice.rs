//! The transport of a GPU `--grid` run as a tuner choice (`QDSL_GRID_TRANSPORT` unset
//! or `tuned`): direct peer copies against NCCL, timed on the run's own operator.
//!
//! The candidates are NCCL (where libnccl loads) and peer copies (where every pair of
//! the ranks' GPUs has peer access), NCCL first. With one candidate, or with tuning off
//! (the grid runs' default; `QDSL_TUNE=launch` or `full` turns it on), the first is
//! used untimed. Otherwise rank 0's tuner answers from its cache, or times each
//! candidate: every rank builds its operator on that transport and applies it (a
//! warm-up that includes the CUDA-graph capture, then [`TIMED_APPLICATIONS`] timed), the
//! slowest rank's time counts, and the fastest candidate is saved to the tune cache
//! (kernel `grid_transport`, keyed by the grid, the local lattice, the operator and the
//! GPU) and used.
//!
//! Every rank must use the same transport, so only rank 0 asks its tuner; the others
//! follow its instructions, one `all_gather` each ([`agree_on_transport`]): the index of
//! the candidate to time next, or the winner (encoded −1 − index). A candidate that
//! fails on any rank times as infinite there and is recorded as failed, never a hang.

use qdsl_runtime::comm::Communicator;
use qdsl_runtime::distributed::SharedComm;
use qdsl_runtime::tune::{Candidate, LaunchConfig, TuneKey, TuneSource, Tuner};

/// Applications timed per candidate, after the warm-up.
pub const TIMED_APPLICATIONS: usize = 10;

/// The tune-cache kernel name of the transport choice.
pub const TRANSPORT_KERNEL: &str = "grid_transport";

/// What every rank learns from [`agree_on_transport`].
#[derive(Clone, Debug, PartialEq)]
pub struct TransportChoice {
    /// The index of the chosen candidate.
    pub index: usize,
    /// Its time per application in µs (the slowest rank's), when it was timed or cached
    /// (rank 0 only; the others see `None`).
    pub time_us: Option<f64>,
    /// Whether rank 0's tune cache answered (no timing).
    pub from_cache: bool,
}

/// The candidate all ranks of `comm` use, named `names[i]` (the first is the default):
/// decided by rank 0's `tuner` under key `key` (module docs), each timing through `time`
/// (µs per application on this rank, or why it failed). Every rank calls it together,
/// with the same `names`.
pub fn agree_on_transport<C: Communicator>(
    comm: &SharedComm<C>,
    tuner: &Tuner,
    key: &TuneKey,
    names: &[&str],
    time: &mut dyn FnMut(usize) -> Result<f64, String>,
) -> Result<TransportChoice, String> {
    if names.len() <= 1 || !tuner.enabled() {
        return Ok(TransportChoice {
            index: 0,
            time_us: None,
            from_cache: false,
        });
    }
    let rank = comm.lock().rank();
    // One value from rank 0 to everyone (the others send a placeholder).
    let instruct = |value: f64| -> Result<f64, String> {
        let all = comm
            .lock()
            .all_gather_f64("the grid transport choice", &[value])
            .map_err(|e| e.to_string())?;
        Ok(all[0][0])
    };
    // This rank's time of candidate i, the slowest rank's returned.
    let mut measure = |i: usize| -> Result<f64, String> {
        let mine = time(i).unwrap_or(f64::INFINITY);
        let all = comm
            .lock()
            .all_gather_f64("the grid transport timing", &[mine])
            .map_err(|e| e.to_string())?;
        Ok(all.iter().map(|v| v[0]).fold(0.0, f64::max))
    };
    if rank != 0 {
        loop {
            let v = instruct(0.0)?;
            if v >= 0.0 {
                measure(v as usize)?;
            } else {
                return Ok(TransportChoice {
                    index: (-1.0 - v) as usize,
                    time_us: None,
                    from_cache: false,
                });
            }
        }
    }
    let candidates: Vec<Candidate> = names
        .iter()
        .map(|n| Candidate {
            compile: n.to_string(),
            launch: LaunchConfig::default_for(1),
        })
        .collect();
    let tuned = tuner.tune(key, &candidates, |c: &Candidate| {
        let i = names.iter().position(|n| *n == c.compile).unwrap_or(0);
        instruct(i as f64)?;
        let slowest = measure(i)?;
        if slowest.is_finite() {
            Ok(slowest)
        } else {
            Err(format!("the {} transport failed on a rank", names[i]))
        }
    });
    let (index, time_us, from_cache) = match &tuned {
        Ok(t) => (
            names.iter().position(|n| *n == t.best.compile).unwrap_or(0),
            t.time_us,
            t.source == TuneSource::Cache,
        ),
        Err(_) => (0, None, false),
    };
    instruct(-1.0 - index as f64)?;
    tuned.map_err(|e| e.to_string())?;
    Ok(TransportChoice {
        index,
        time_us,
        from_cache,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_runtime::comm::{run_ranks, CommConfig};
    use qdsl_runtime::tune::{Fingerprint, TunePolicy};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tuner(dir: &std::path::Path, policy: TunePolicy) -> Tuner {
        Tuner::new(
            &dir.join("tune.tsv"),
            Fingerprint::new("test", "a GPU", "sm_90", "13.0", "13.0"),
        )
        .with_policy(policy)
        .with_progress(false)
    }

    fn key() -> TuneKey {
        TuneKey::new(
            TRANSPORT_KERNEL,
            1,
            0,
            4096,
            "grid=1,1,1,2 op=test",
            "a GPU",
        )
    }

    /// Two ranks agree on the candidate the slowest rank times fastest ("peer": rank 1
    /// is slow on NCCL), each candidate is timed once per rank, and the choice is then
    /// answered from the tune cache without timing; with tuning off or one candidate
    /// the first is used untimed.
    #[test]
    fn ranks_agree_on_the_fastest_candidate_and_the_cache_answers_next() {
        let dir = tempfile::tempdir().unwrap();
        let timings = AtomicUsize::new(0);
        let run = |policy: TunePolicy, names: &'static [&'static str]| {
            run_ranks(2, CommConfig::default(), |comm| {
                let comm = SharedComm::new(comm);
                let rank = comm.lock().rank();
                let tuner = tuner(dir.path(), policy);
                let mut time = |i: usize| {
                    timings.fetch_add(1, Ordering::SeqCst);
                    // nccl: 50 µs on rank 0, 90 on rank 1; peer: 70 on both.
                    Ok(match (names[i], rank) {
                        ("nccl", 0) => 50.0,
                        ("nccl", _) => 90.0,
                        _ => 70.0,
                    })
                };
                agree_on_transport(&comm, &tuner, &key(), names, &mut time).unwrap()
            })
        };
        let first = run(TunePolicy::Launch, &["nccl", "peer"]);
        assert_eq!(first[0].index, 1, "peer: the slowest rank's time decides");
        assert_eq!(first[0].time_us, Some(70.0));
        assert_eq!(first[1].index, 1);
        assert_eq!(
            timings.swap(0, Ordering::SeqCst),
            4,
            "two candidates, two ranks"
        );
        assert!(!first[0].from_cache);
        let cached = run(TunePolicy::Launch, &["nccl", "peer"]);
        assert_eq!((cached[0].index, cached[1].index), (1, 1));
        assert!(cached[0].from_cache);
        assert_eq!(timings.swap(0, Ordering::SeqCst), 0, "from the cache");
        let off = run(TunePolicy::Off, &["nccl", "peer"]);
        assert_eq!((off[0].index, off[1].index), (0, 0));
        let one = run(TunePolicy::Launch, &["peer"]);
        assert_eq!((one[0].index, one[1].index), (0, 0));
        assert_eq!(timings.load(Ordering::SeqCst), 0);
    }

    /// A candidate that fails on one rank is recorded as failed and the other is
    /// chosen; nobody waits forever.
    #[test]
    fn a_candidate_failing_on_one_rank_loses() {
        let dir = tempfile::tempdir().unwrap();
        let names: &[&str] = &["nccl", "peer"];
        let out = run_ranks(2, CommConfig::default(), |comm| {
            let comm = SharedComm::new(comm);
            let rank = comm.lock().rank();
            let tuner = tuner(dir.path(), TunePolicy::Launch);
            let mut time = |i: usize| match (names[i], rank) {
                ("nccl", 1) => Err("no NCCL here".to_string()),
                ("nccl", _) => Ok(10.0),
                _ => Ok(80.0),
            };
            agree_on_transport(&comm, &tuner, &key(), names, &mut time).unwrap()
        });
        assert_eq!((out[0].index, out[1].index), (1, 1));
    }
}
