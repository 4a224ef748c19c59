//! CUDA graphs of a distributed hop's applications
//! ([`super::DeviceDistributedHop::with_graphs`]).
//!
//! An overlapped application is about ten launches and NCCL calls on two streams (the
//! packs, the interior, one group per cut direction, the unpacks and exterior slabs),
//! each costing the host several µs: on a 32⁴ hop of ~90 µs the GPU waits for the host
//! for tens of µs (BENCHMARKS.md 2026-11-28 (d), the hop's timeline). Captured once into
//! a graph — the NCCL stream joins the capture through the packs' event and leaves it
//! through the deliveries' — the application is one graph launch.
//!
//! A graph replays the launches with the arguments they were captured with: the same
//! buffers, parities and coefficients. [`Replays`] therefore keys each graph by what the
//! caller says its launches read and write, with ψ's buffer, the parity and the dagger
//! knob added. The first [`EAGER_APPLICATIONS`] applications of a key run eagerly (the
//! first compiles, tunes and connects the peers: work a capture must not contain; a
//! capture costs milliseconds, so only keys that recur are captured), the next is
//! captured and replayed, later ones are replayed. A hop keeps at most [`MAX_GRAPHS`]
//! graphs; keys beyond them run eagerly.

use cudarc::driver::{CudaEvent, CudaGraph};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// Applications of a key run eagerly before it is captured.
pub const EAGER_APPLICATIONS: usize = 2;

/// The most graphs one hop keeps.
pub const MAX_GRAPHS: usize = 16;

/// Keys counted (not captured) before the count starts afresh: keys that never recur
/// (fresh buffers each application) cannot grow it without bound.
const MAX_COUNTED: usize = 256;

/// The graphs a hop captured, by key, the applications of keys not captured yet, and
/// the time the captures took.
#[derive(Default)]
pub(super) struct Replays {
    seen: HashMap<u64, usize>,
    graphs: HashMap<u64, Replay>,
    capture_time: Duration,
}

/// What [`Replays::next`] says to do with an application.
pub(super) enum Next<'g> {
    /// Run it eagerly.
    Eager,
    /// Capture it (and replay the capture).
    Capture,
    /// Replay this graph.
    Replay(&'g Replay),
}

impl Replays {
    /// What to do with an application of `key`, counting it.
    pub(super) fn next(&mut self, key: u64) -> Next<'_> {
        if let Some(r) = self.graphs.get(&key) {
            return Next::Replay(r);
        }
        if self.graphs.len() >= MAX_GRAPHS {
            return Next::Eager;
        }
        if self.seen.len() >= MAX_COUNTED && !self.seen.contains_key(&key) {
            self.seen.clear();
        }
        let count = self.seen.entry(key).or_insert(0);
        *count += 1;
        if *count > EAGER_APPLICATIONS {
            Next::Capture
        } else {
            Next::Eager
        }
    }

    /// Keeps the graph captured for `key` in `took` (capture and instantiation);
    /// returns it.
    pub(super) fn keep(&mut self, key: u64, replay: Replay, took: Duration) -> &Replay {
        self.seen.remove(&key);
        self.capture_time += took;
        self.graphs.entry(key).or_insert(replay)
    }

    /// The number of graphs kept.
    pub(super) fn len(&self) -> usize {
        self.graphs.len()
    }

    /// The time every capture so far took.
    pub(super) fn capture_time(&self) -> Duration {
        self.capture_time
    }
}

impl std::fmt::Debug for Replays {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replays")
            .field("seen", &self.seen.len())
            .field("graphs", &self.graphs.len())
            .finish()
    }
}

/// A captured graph and the event its replays record at the last delivery (what the
/// host waits for: [`super::DeviceTransport::finish_replay`]), movable between threads:
/// its handles are used only under the hop's lock (the driver asks that calls on one
/// graph be serialised, not that they come from one thread).
pub(super) struct Replay {
    pub(super) graph: CudaGraph,
    pub(super) delivered: CudaEvent,
}

// SAFETY: see above — every use of the graph is under the `Mutex<Replays>` of its hop.
unsafe impl Send for Replay {}

/// The key of one application: the caller's `key` (what its launches read and write)
/// with ψ's buffers, the source parity and the dagger knob.
pub(super) fn application_key(key: u64, psi: [u64; 2], parity: usize, dagger: bool) -> u64 {
    let mut h = DefaultHasher::new();
    (key, psi, parity, dagger).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_runs_eagerly_then_is_captured_and_keys_that_never_recur_are_not() {
        let mut r = Replays::default();
        for _ in 0..EAGER_APPLICATIONS {
            assert!(matches!(r.next(7), Next::Eager));
        }
        assert!(matches!(r.next(7), Next::Capture));
        // Without a kept graph the key is captured again (a failed capture is retried).
        assert!(matches!(r.next(7), Next::Capture));
        // Fresh keys every time: never captured, and the count stays bounded.
        for k in 1000..1000 + 4 * MAX_COUNTED as u64 {
            assert!(matches!(r.next(k), Next::Eager));
        }
        assert!(r.seen.len() <= MAX_COUNTED);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn the_key_tells_buffers_parities_and_the_dagger_apart() {
        let k = application_key(1, [10, 0], 0, false);
        assert_eq!(k, application_key(1, [10, 0], 0, false));
        for other in [
            application_key(2, [10, 0], 0, false),
            application_key(1, [11, 0], 0, false),
            application_key(1, [10, 12], 0, false),
            application_key(1, [10, 0], 1, false),
            application_key(1, [10, 0], 0, true),
        ] {
            assert_ne!(k, other);
        }
    }
}
