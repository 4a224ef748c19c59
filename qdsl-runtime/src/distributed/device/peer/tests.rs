//! The peer protocol on the CPU: ranks are threads, "device memory" is one shared map of
//! buffers, streams run their work at once and log it, marks are (rank, counter) pairs.
//! The tests check what the GPU needs: every halo is the neighbour's face, every copy
//! was ordered after the receiver's mark, the compute stream waits for every sender's
//! copies and its own; and the failures: a rank that never posts is a timeout naming
//! it, a receive buffer of another length is an error naming both lengths.

use super::*;
use crate::comm::{run_ranks, CommConfig, ThreadComm};
use crate::distributed::face_tag;
use qdsl_core::lattice::{Decomposition, Lattice, ProcessGrid, Side};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Every rank's buffers: address → bytes.
type Memory = Arc<Mutex<HashMap<u64, Vec<u8>>>>;

/// What a host engine did, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    CopyWait(u64),
    Copy { dst: u64, src: u64 },
    ComputeWait(u64),
}

struct HostEngine {
    rank: u64,
    memory: Memory,
    marks: u64,
    log: Vec<Step>,
}

impl HostEngine {
    fn mark(&mut self) -> u64 {
        self.marks += 1;
        (self.rank << 32) | self.marks
    }
}

impl CopyEngine for HostEngine {
    fn context(&self) -> u64 {
        self.rank
    }
    fn mark_compute(&mut self) -> Result<u64, String> {
        Ok(self.mark())
    }
    fn copy_stream_wait(&mut self, mark: u64) -> Result<(), String> {
        self.log.push(Step::CopyWait(mark));
        Ok(())
    }
    fn copy(&mut self, dst: u64, dst_context: u64, src: u64, bytes: usize) -> Result<(), String> {
        assert_eq!(dst >> 32, dst_context, "an address of the offered context");
        let mut memory = self.memory.lock().unwrap();
        let data = memory[&src][..bytes].to_vec();
        memory.get_mut(&dst).expect("an offered buffer")[..bytes].copy_from_slice(&data);
        self.log.push(Step::Copy { dst, src });
        Ok(())
    }
    fn mark_copies(&mut self) -> Result<u64, String> {
        Ok(self.mark())
    }
    fn compute_stream_wait(&mut self, mark: u64) -> Result<(), String> {
        self.log.push(Step::ComputeWait(mark));
        Ok(())
    }
}

/// The messages of one rank of `dec`: for every face of every cut direction, a send
/// buffer stamped with (rank, face, round) and a receive buffer of the same length.
fn rank_messages(
    dec: &Decomposition,
    rank: usize,
    round: u8,
    memory: &Memory,
) -> (Vec<PeerMessage>, Vec<PeerMessage>) {
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    let mut memory = memory.lock().unwrap();
    for mu in (0..4).filter(|&mu| dec.grid().is_cut(mu)) {
        for side in Side::BOTH {
            let peer = dec.neighbour(rank, mu, side);
            let tag = face_tag(mu, side);
            let bytes = 8 + mu;
            let send = ((rank as u64) << 32) | (2 * tag as u64);
            let recv = send + 1;
            memory.insert(send, stamp(rank, tag, round, bytes));
            memory.entry(recv).or_insert_with(|| vec![0; bytes]);
            sends.push(PeerMessage {
                peer,
                tag,
                ptr: send,
                bytes,
            });
            recvs.push(PeerMessage {
                peer,
                tag: face_tag(mu, side.opposite()),
                ptr: recv,
                bytes,
            });
        }
    }
    (sends, recvs)
}

/// A face of `bytes` bytes (≥ 8) that says who sent it: rank, tag, round, then 0xaa.
fn stamp(rank: usize, tag: u32, round: u8, bytes: usize) -> Vec<u8> {
    let mut face = vec![0xaa; bytes];
    face[..3].copy_from_slice(&[rank as u8, tag as u8, round]);
    face
}

/// One round's receive buffers of a rank, with their bytes after the round.
type Received = Vec<(PeerMessage, Vec<u8>)>;

/// Runs `rounds` exchanges on every rank of `grid` over a 8⁴ lattice; every rank's log
/// and its receive buffers after each round.
fn exchange_rounds(grid: [usize; 4], rounds: u8) -> Vec<(Vec<Step>, Vec<Received>)> {
    let dec = Decomposition::new(
        Lattice::new([8; 4]).unwrap(),
        ProcessGrid::new(grid).unwrap(),
    )
    .unwrap();
    let memory: Memory = Arc::default();
    let config = CommConfig {
        timeout: Duration::from_secs(20),
    };
    run_ranks(dec.size(), config, |comm: ThreadComm| {
        let rank = comm.rank();
        let mut protocol = PeerProtocol::new(SharedComm::new(comm));
        let mut engine = HostEngine {
            rank: rank as u64,
            memory: Arc::clone(&memory),
            marks: 0,
            log: Vec::new(),
        };
        let mut seen = Vec::new();
        for round in 0..rounds {
            let (sends, recvs) = rank_messages(&dec, rank, round, &memory);
            protocol.packed(&mut engine, "test").unwrap();
            protocol.post(&mut engine, "test", &sends, &recvs).unwrap();
            protocol
                .complete(&mut engine, "test", &sends, &recvs)
                .unwrap();
            // Every rank's copies are done (the host engine copies at once) only once
            // all ranks completed; read after a barrier of the communicator.
            protocol
                .comm()
                .lock()
                .all_reduce_sum_f64("barrier", &[0.0])
                .unwrap();
            let m = memory.lock().unwrap();
            seen.push(recvs.iter().map(|r| (*r, m[&r.ptr].clone())).collect());
        }
        (engine.log, seen)
    })
}

/// On grids cutting 1, 2 and 4 directions (two ranks along a direction: both faces go
/// to the same peer), every receive buffer holds, after each round, the face its peer
/// sent in that round: stamped with the peer, the face's tag (opposite to the receive's)
/// and the round.
#[test]
fn every_halo_is_the_neighbours_face_of_the_same_round() {
    for grid in [
        [1, 1, 1, 2],
        [1, 1, 2, 2],
        [2, 2, 2, 2],
        [1, 1, 1, 4],
        [4, 1, 1, 1],
    ] {
        let dec = Decomposition::new(
            Lattice::new([8; 4]).unwrap(),
            ProcessGrid::new(grid).unwrap(),
        );
        let Ok(dec) = dec else {
            continue;
        };
        for (rank, (_, seen)) in exchange_rounds(grid, 3).into_iter().enumerate() {
            for (round, recvs) in seen.iter().enumerate() {
                for (r, bytes) in recvs {
                    // The receive under tag face_tag(μ, −s) from the neighbour on side
                    // s carries that neighbour's face towards −s.
                    let mu = (r.tag / 2) as usize;
                    assert_eq!(dec.neighbour(rank, mu, side_of(r.tag).opposite()), r.peer);
                    let want = stamp(r.peer, r.tag, round as u8, r.bytes);
                    assert!(
                        *bytes == want,
                        "grid {grid:?} rank {rank} round {round} tag {}: {bytes:?}, want {want:?}",
                        r.tag
                    );
                }
            }
        }
    }
}

fn side_of(tag: u32) -> Side {
    if tag.is_multiple_of(2) {
        Side::BOTH[0]
    } else {
        Side::BOTH[1]
    }
}

/// The order on the devices: each copy comes after the copy stream waited for this
/// rank's packs (its first mark of the round) and for a mark of the receiver; after the
/// copies, the compute stream waits for a copy mark of every sender and for its own.
#[test]
fn copies_wait_for_the_receiver_and_the_compute_stream_for_every_sender() {
    let grid = [1, 1, 2, 2];
    for (rank, (log, _)) in exchange_rounds(grid, 2).into_iter().enumerate() {
        let mut pending_wait: Option<u64> = None;
        let mut own_packs_waited = false;
        let mut compute_waits = Vec::new();
        for step in &log {
            match *step {
                Step::CopyWait(m) if m >> 32 == rank as u64 => {
                    own_packs_waited = true;
                    compute_waits.clear();
                }
                Step::CopyWait(m) => pending_wait = Some(m),
                Step::Copy { dst, .. } => {
                    assert!(own_packs_waited, "rank {rank}: a copy before its packs");
                    let w = pending_wait.take().expect("a wait before each copy");
                    assert_eq!(w >> 32, dst >> 32, "rank {rank}: waited on the receiver");
                }
                Step::ComputeWait(m) => compute_waits.push(m >> 32),
            }
        }
        let mut ranks = compute_waits.clone();
        ranks.sort_unstable();
        ranks.dedup();
        // Grid 1,1,2,2: the neighbours along z and t, and this rank itself.
        assert_eq!(
            ranks.len(),
            3,
            "rank {rank}: compute waits {compute_waits:?}"
        );
        assert!(ranks.contains(&(rank as u64)));
    }
}

/// A rank that never posts: its neighbour's post ends at the timeout (0.3 s here) with
/// an error naming both ranks and the offers, instead of hanging.
#[test]
fn a_silent_peer_is_a_timeout_naming_it() {
    let dec = Decomposition::new(
        Lattice::new([8; 4]).unwrap(),
        ProcessGrid::new([1, 1, 1, 2]).unwrap(),
    )
    .unwrap();
    let memory: Memory = Arc::default();
    let mut comms = ThreadComm::group(
        2,
        CommConfig {
            timeout: Duration::from_millis(300),
        },
    );
    let _silent = comms.pop();
    let comm = comms.pop().unwrap();
    let mut protocol = PeerProtocol::new(SharedComm::new(comm));
    let mut engine = HostEngine {
        rank: 0,
        memory: Arc::clone(&memory),
        marks: 0,
        log: Vec::new(),
    };
    let (sends, recvs) = rank_messages(&dec, 0, 0, &memory);
    protocol.packed(&mut engine, "hop").unwrap();
    let start = Instant::now();
    let e = protocol
        .post(&mut engine, "hop", &sends, &recvs)
        .unwrap_err()
        .to_string();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        e.contains("rank 0") && e.contains("rank 1") && e.contains("offers"),
        "{e}"
    );
    assert!(engine.log.is_empty(), "nothing queued: {:?}", engine.log);
}

/// A peer offering a receive buffer of another length than the face sent: an error
/// naming the peer, the tag and both lengths (no copy is queued).
#[test]
fn a_receive_buffer_of_another_length_is_refused() {
    let dec = Decomposition::new(
        Lattice::new([8; 4]).unwrap(),
        ProcessGrid::new([1, 1, 1, 2]).unwrap(),
    )
    .unwrap();
    let memory: Memory = Arc::default();
    let results = run_ranks(2, CommConfig::default(), |comm: ThreadComm| {
        let rank = comm.rank();
        let mut protocol = PeerProtocol::new(SharedComm::new(comm));
        let mut engine = HostEngine {
            rank: rank as u64,
            memory: Arc::clone(&memory),
            marks: 0,
            log: Vec::new(),
        };
        let (sends, mut recvs) = rank_messages(&dec, rank, 0, &memory);
        if rank == 1 {
            recvs.iter_mut().for_each(|r| r.bytes += 4);
        }
        protocol.packed(&mut engine, "hop").unwrap();
        let r = protocol.post(&mut engine, "hop", &sends, &recvs);
        (r.map_err(|e| e.to_string()), engine.log)
    });
    let (r0, log0) = &results[0];
    let e = r0.as_ref().unwrap_err();
    assert!(
        e.contains("rank 1") && e.contains("15 bytes") && e.contains("11 bytes"),
        "{e}"
    );
    assert!(
        !log0.iter().any(|s| matches!(s, Step::Copy { .. })),
        "{log0:?}"
    );
    assert!(results[1].0.is_ok());
}

/// Posting without the packs' mark, or completing without a post, is refused (not a
/// wait on a mark that does not exist).
#[test]
fn complete_without_post_and_post_without_packed_are_refused() {
    let comm = ThreadComm::group(1, CommConfig::default()).remove(0);
    let mut protocol = PeerProtocol::new(SharedComm::new(comm));
    let mut engine = HostEngine {
        rank: 0,
        memory: Arc::default(),
        marks: 0,
        log: Vec::new(),
    };
    let e = protocol.complete(&mut engine, "hop", &[], &[]).unwrap_err();
    assert!(e.to_string().contains("without a posted exchange"), "{e}");
    let e = protocol.post(&mut engine, "hop", &[], &[]).unwrap_err();
    assert!(e.to_string().contains("packed not called"), "{e}");
}
