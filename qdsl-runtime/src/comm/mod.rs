//! Communication between the ranks of a decomposed lattice: grouped point-to-point
//! exchange of face buffers and deterministic f64 reductions, behind one trait.
//!
//! | transport | what it is |
//! |---|---|
//! | [`ThreadComm`] | ranks are threads of one process (CPU tests; one process driving several GPUs) |
//! | [`nccl`] | NCCL, loaded at run time (`libnccl.so.2`, `QDSL_NCCL_LIB`), on device buffers |
//! | [`bootstrap`] | the launch: rank and GPU from the launcher's environment, NCCL's unique id broadcast from rank 0 (threads on one node; MPI across nodes) |
//! | [`mpi`] | MPI loaded at run time (`libmpi.so`, `QDSL_MPI_LIB`): the multi-process [`bootstrap::Bootstrap`] |
//!
//! # Deterministic reductions
//! A global sum must give the same bits on every rank and in every run, whatever the
//! transport's own reduction algorithm (NCCL picks rings or trees by message size and
//! topology, and a ring's order differs per chunk). qdsl therefore never lets the
//! transport add: [`Communicator::all_reduce_sum_f64`] all-gathers each rank's partial
//! sums (a few f64 per rank) and every rank adds them itself **in rank order**,
//! `((p₀ + p₁) + p₂) + …`, starting from rank 0's value. Each rank's partial is itself an
//! ordered sum ([`qdsl_core::reduce`]), so a global norm is the same bits on every rank,
//! in every run, for a given process grid.
//!
//! # No hangs
//! Every blocking wait has a deadline ([`CommConfig::timeout`], default 60 s, the
//! environment variable `QDSL_COMM_TIMEOUT` in seconds): a peer that died or never
//! answers ends the wait with [`CommError::Timeout`], naming this rank, the peer and the
//! operation.

pub mod bootstrap;
pub mod mpi;
pub mod nccl;
mod threads;

pub use threads::{run_ranks, ThreadComm};

use std::time::Duration;
use thiserror::Error;

/// Default limit of a blocking wait.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that sets the limit of a blocking wait, in seconds.
pub const TIMEOUT_VAR: &str = "QDSL_COMM_TIMEOUT";

/// Tags at or above this value are reserved for the communicator's own collectives.
pub const RESERVED_TAGS: u32 = u32::MAX - 16;

/// Settings shared by every transport.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommConfig {
    /// The longest any blocking wait may last before it fails with
    /// [`CommError::Timeout`].
    pub timeout: Duration,
}

impl Default for CommConfig {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl CommConfig {
    /// The default, with the timeout from `QDSL_COMM_TIMEOUT` (seconds, > 0) when set;
    /// an unparsable value is an error naming it.
    pub fn from_env() -> Result<Self, CommError> {
        match std::env::var(TIMEOUT_VAR) {
            Err(_) => Ok(Self::default()),
            Ok(text) => Self::parse_timeout(&text),
        }
    }

    /// A configuration whose timeout is `text` seconds.
    pub fn parse_timeout(text: &str) -> Result<Self, CommError> {
        match text.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 => Ok(Self {
                timeout: Duration::from_secs_f64(s),
            }),
            _ => Err(CommError::BadTimeout { value: text.into() }),
        }
    }
}

/// A message to send: `data` to rank `peer`, under `tag`.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing<T> {
    /// The receiving rank.
    pub peer: usize,
    /// What the message is (the receiver matches on (sender, tag)); below
    /// [`RESERVED_TAGS`].
    pub tag: u32,
    /// The payload.
    pub data: Vec<T>,
}

/// A message to receive: `len` elements from rank `peer` under `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incoming {
    /// The sending rank.
    pub peer: usize,
    /// The tag the sender used.
    pub tag: u32,
    /// Elements expected.
    pub len: usize,
}

/// What went wrong communicating; every message names this rank and the operation.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum CommError {
    /// A blocking wait ran past its deadline.
    #[error(
        "rank {rank}: {operation}: nothing from rank {peer} within {seconds} s (the peer may \
         have died or never posted its side; {TIMEOUT_VAR} sets the limit)"
    )]
    Timeout {
        /// The waiting rank.
        rank: usize,
        /// The rank waited for.
        peer: usize,
        /// The operation (and tag) waited in.
        operation: String,
        /// The limit, in seconds.
        seconds: f64,
    },
    /// Every sender to this rank is gone.
    #[error("rank {rank}: {operation}: rank {peer} can no longer send (all its peers exited)")]
    Disconnected {
        rank: usize,
        peer: usize,
        operation: String,
    },
    /// A message of the wrong length.
    #[error(
        "rank {rank}: {operation}: rank {peer} sent {found} elements under tag {tag}, \
         expected {expected}"
    )]
    Length {
        rank: usize,
        peer: usize,
        tag: u32,
        operation: String,
        expected: usize,
        found: usize,
    },
    /// A message of another element type than the receive expects.
    #[error("rank {rank}: {operation}: rank {peer} sent tag {tag} with another element type")]
    PayloadType {
        rank: usize,
        peer: usize,
        tag: u32,
        operation: String,
    },
    /// A peer outside the communicator, or a reserved tag.
    #[error("rank {rank}: {operation}: {what}")]
    BadRequest {
        rank: usize,
        operation: String,
        what: String,
    },
    /// `QDSL_COMM_TIMEOUT` is not a positive number of seconds.
    #[error("{TIMEOUT_VAR}={value:?} is not a positive number of seconds")]
    BadTimeout { value: String },
    /// The NCCL library could not be loaded.
    #[error(transparent)]
    Library(#[from] crate::libs::LibraryMissing),
    /// An NCCL or CUDA call failed.
    #[error("rank {rank}: {call} failed: {message}")]
    Call {
        rank: usize,
        call: String,
        message: String,
    },
}

/// Grouped point-to-point messages and deterministic reductions between the ranks of a
/// decomposition (see the module docs). One value per rank; every rank calls the same
/// collectives in the same order.
pub trait Communicator {
    /// This rank.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// The settings (timeout).
    fn config(&self) -> &CommConfig;

    /// Posts every send and every receive at once (NCCL's grouped send/recv: no order
    /// between them, so faces of all directions travel together) and waits for the
    /// receives; returns their payloads in the order of `recvs`. Each wait ends at the
    /// configured timeout with [`CommError::Timeout`] naming the peer and `operation`.
    fn exchange<T: Copy + Send + 'static>(
        &mut self,
        operation: &str,
        sends: Vec<Outgoing<T>>,
        recvs: &[Incoming],
    ) -> Result<Vec<Vec<T>>, CommError>;

    /// Every rank's `values` (all ranks pass the same length), in rank order.
    fn all_gather_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<Vec<f64>>, CommError>;

    /// The element-wise sum over ranks of `values`, added in rank order on every rank
    /// (see the module docs): the same bits on every rank and in every run.
    fn all_reduce_sum_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, CommError> {
        let parts = self.all_gather_f64(operation, values)?;
        Ok(sum_in_rank_order(&parts))
    }
}

/// Σ_r parts[r] element-wise, as ((p₀ + p₁) + p₂) + … .
pub fn sum_in_rank_order(parts: &[Vec<f64>]) -> Vec<f64> {
    let mut iter = parts.iter();
    let mut sum = iter.next().cloned().unwrap_or_default();
    for p in iter {
        for (s, x) in sum.iter_mut().zip(p) {
            *s += x;
        }
    }
    sum
}

/// Checks the peers and tags of a batch against the communicator.
fn check_batch(
    rank: usize,
    size: usize,
    operation: &str,
    peers_and_tags: impl Iterator<Item = (usize, u32)>,
) -> Result<(), CommError> {
    for (peer, tag) in peers_and_tags {
        let what = if peer >= size {
            format!("peer rank {peer} is outside the communicator of {size} ranks")
        } else if tag >= RESERVED_TAGS {
            format!("tag {tag} is reserved (tags must be below {RESERVED_TAGS})")
        } else {
            continue;
        };
        return Err(CommError::BadRequest {
            rank,
            operation: operation.into(),
            what,
        });
    }
    Ok(())
}
