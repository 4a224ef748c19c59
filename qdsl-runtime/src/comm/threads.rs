//! The in-process transport: every rank a thread, messages moved through channels
//! (payloads are moved, never copied or serialised).
//!
//! Each rank owns an inbox; every rank holds a sender to every inbox. A receive takes the
//! first message from (peer, tag) — messages from one peer under one tag arrive in the
//! order they were sent — and stashes the others it meets for later receives, waiting at
//! most the configured timeout in all.

use super::{check_batch, CommConfig, CommError, Communicator, Incoming, Outgoing, RESERVED_TAGS};
use std::any::Any;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

/// The tag of [`Communicator::all_gather_f64`]'s messages.
const ALL_GATHER_TAG: u32 = RESERVED_TAGS;

/// A message in flight.
struct Envelope {
    from: usize,
    tag: u32,
    payload: Box<dyn Any + Send>,
}

/// One rank of a group of threads (see the module docs). Build the group with
/// [`ThreadComm::group`] or run a closure on every rank with [`run_ranks`].
pub struct ThreadComm {
    rank: usize,
    config: CommConfig,
    outboxes: Vec<Sender<Envelope>>,
    inbox: Receiver<Envelope>,
    stash: Vec<Envelope>,
}

impl ThreadComm {
    /// `size` connected ranks, rank r at index r.
    pub fn group(size: usize, config: CommConfig) -> Vec<ThreadComm> {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..size).map(|_| mpsc::channel()).unzip();
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| ThreadComm {
                rank,
                config,
                outboxes: senders.clone(),
                inbox,
                stash: Vec::new(),
            })
            .collect()
    }

    fn send(&self, peer: usize, tag: u32, payload: Box<dyn Any + Send>) {
        // A peer that already exited dropped its inbox: its receive can no longer
        // happen, and whoever waits on it times out; nothing to report here.
        let _ = self.outboxes[peer].send(Envelope {
            from: self.rank,
            tag,
            payload,
        });
    }

    /// The payload of the first message from `peer` under `tag`, waiting until
    /// `deadline`.
    fn receive(
        &mut self,
        operation: &str,
        peer: usize,
        tag: u32,
        deadline: Instant,
    ) -> Result<Box<dyn Any + Send>, CommError> {
        if let Some(k) = self
            .stash
            .iter()
            .position(|e| e.from == peer && e.tag == tag)
        {
            return Ok(self.stash.remove(k).payload);
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(e) if e.from == peer && e.tag == tag => return Ok(e.payload),
                Ok(e) => self.stash.push(e),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CommError::Timeout {
                        rank: self.rank,
                        peer,
                        operation: format!("{operation} (receive, tag {tag})"),
                        seconds: self.config.timeout.as_secs_f64(),
                    })
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CommError::Disconnected {
                        rank: self.rank,
                        peer,
                        operation: operation.into(),
                    })
                }
            }
        }
    }
}

impl Communicator for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.outboxes.len()
    }

    fn config(&self) -> &CommConfig {
        &self.config
    }

    fn exchange<T: Copy + Send + 'static>(
        &mut self,
        operation: &str,
        sends: Vec<Outgoing<T>>,
        recvs: &[Incoming],
    ) -> Result<Vec<Vec<T>>, CommError> {
        let peers = sends
            .iter()
            .map(|s| (s.peer, s.tag))
            .chain(recvs.iter().map(|r| (r.peer, r.tag)));
        check_batch(self.rank, self.size(), operation, peers)?;
        for s in sends {
            self.send(s.peer, s.tag, Box::new(s.data));
        }
        let deadline = Instant::now() + self.config.timeout;
        let mut out = Vec::with_capacity(recvs.len());
        for r in recvs {
            let payload = self.receive(operation, r.peer, r.tag, deadline)?;
            let data = payload
                .downcast::<Vec<T>>()
                .map_err(|_| CommError::PayloadType {
                    rank: self.rank,
                    peer: r.peer,
                    tag: r.tag,
                    operation: operation.into(),
                })?;
            if data.len() != r.len {
                return Err(CommError::Length {
                    rank: self.rank,
                    peer: r.peer,
                    tag: r.tag,
                    operation: operation.into(),
                    expected: r.len,
                    found: data.len(),
                });
            }
            out.push(*data);
        }
        Ok(out)
    }

    fn all_gather_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<Vec<f64>>, CommError> {
        for peer in (0..self.size()).filter(|&p| p != self.rank) {
            self.send(peer, ALL_GATHER_TAG, Box::new(values.to_vec()));
        }
        let deadline = Instant::now() + self.config.timeout;
        let mut out = Vec::with_capacity(self.size());
        for peer in 0..self.size() {
            if peer == self.rank {
                out.push(values.to_vec());
                continue;
            }
            let payload = self.receive(operation, peer, ALL_GATHER_TAG, deadline)?;
            let wrong_type = || CommError::PayloadType {
                rank: self.rank,
                peer,
                tag: ALL_GATHER_TAG,
                operation: operation.into(),
            };
            let data = *payload.downcast::<Vec<f64>>().map_err(|_| wrong_type())?;
            if data.len() != values.len() {
                return Err(CommError::Length {
                    rank: self.rank,
                    peer,
                    tag: ALL_GATHER_TAG,
                    operation: operation.into(),
                    expected: values.len(),
                    found: data.len(),
                });
            }
            out.push(data);
        }
        Ok(out)
    }
}

/// Runs `f` on every rank of a fresh group of `size` threads and returns the results in
/// rank order. A rank that panics re-raises its panic here after the others finished
/// (their waits on it end at the timeout).
pub fn run_ranks<R: Send>(
    size: usize,
    config: CommConfig,
    f: impl Fn(ThreadComm) -> R + Sync,
) -> Vec<R> {
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = ThreadComm::group(size, config)
            .into_iter()
            .map(|comm| scope.spawn(move || f(comm)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::sum_in_rank_order;
    use std::time::Duration;

    fn quick() -> CommConfig {
        CommConfig {
            timeout: Duration::from_millis(300),
        }
    }

    /// A ring exchange of four ranks: each sends its rank-stamped buffer forward and
    /// backward under two tags and receives both neighbours' (posted in the opposite order
    /// to the sends, so the stash is exercised).
    #[test]
    fn grouped_exchange_delivers_by_peer_and_tag() {
        let got = run_ranks(4, CommConfig::default(), |mut c| {
            let (r, n) = (c.rank(), c.size());
            let (fwd, bwd) = ((r + 1) % n, (r + n - 1) % n);
            let sends = vec![
                Outgoing {
                    peer: fwd,
                    tag: 1,
                    data: vec![r as u32, 10],
                },
                Outgoing {
                    peer: bwd,
                    tag: 0,
                    data: vec![r as u32, 20],
                },
            ];
            let recvs = [
                Incoming {
                    peer: fwd,
                    tag: 0,
                    len: 2,
                },
                Incoming {
                    peer: bwd,
                    tag: 1,
                    len: 2,
                },
            ];
            c.exchange("ring", sends, &recvs).unwrap()
        });
        for (r, bufs) in got.iter().enumerate() {
            assert_eq!(bufs[0], vec![((r + 1) % 4) as u32, 20]);
            assert_eq!(bufs[1], vec![((r + 3) % 4) as u32, 10]);
        }
    }

    /// The all-reduce is the sum in rank order, the same bits on every rank and in
    /// every run, on terms whose sum depends on the order: in rank order
    /// ((1e17 + 1) − 1e17) + 3.5 = 3.5 (1e17 + 1 rounds to 1e17), the exact sum is 4.5.
    #[test]
    fn all_reduce_adds_in_rank_order_on_every_rank() {
        let values = |r: usize| vec![[1e17, 1.0, -1e17, 3.5][r], r as f64 * 0.1];
        let run = || {
            run_ranks(4, CommConfig::default(), |mut c| {
                c.all_reduce_sum_f64("norm", &values(c.rank())).unwrap()
            })
        };
        let first = run();
        let expected = sum_in_rank_order(&(0..4).map(values).collect::<Vec<_>>());
        assert_eq!(expected[0], 3.5);
        assert_eq!(expected[1], ((0.0 + 0.1) + 0.2) + 0.30000000000000004);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for got in &first {
            assert_eq!(bits(got), bits(&expected));
        }
        assert_eq!(run(), first);
    }

    /// A rank that never answers: the others' exchange and all-reduce end at the timeout
    /// with an error naming the silent peer and the operation, instead of hanging.
    #[test]
    fn a_silent_peer_ends_in_a_timeout_naming_it() {
        let start = Instant::now();
        let got = run_ranks(3, quick(), |mut c| {
            if c.rank() == 2 {
                return None; // never answers
            }
            let other = 1 - c.rank();
            let halo = c.exchange(
                "halo exchange t",
                vec![Outgoing {
                    peer: other,
                    tag: 6,
                    data: vec![1.0f64],
                }],
                &[
                    Incoming {
                        peer: other,
                        tag: 6,
                        len: 1,
                    },
                    Incoming {
                        peer: 2,
                        tag: 7,
                        len: 1,
                    },
                ],
            );
            let sum = c.all_reduce_sum_f64("residual norm", &[1.0]);
            Some((halo.unwrap_err(), sum.unwrap_err()))
        });
        assert!(start.elapsed() < Duration::from_secs(5));
        for (rank, r) in got.into_iter().take(2).enumerate() {
            let (halo, sum) = r.unwrap();
            assert_eq!(
                halo,
                CommError::Timeout {
                    rank,
                    peer: 2,
                    operation: "halo exchange t (receive, tag 7)".into(),
                    seconds: 0.3
                }
            );
            assert!(
                halo.to_string()
                    .contains("nothing from rank 2 within 0.3 s"),
                "{halo}"
            );
            assert!(matches!(sum, CommError::Timeout { peer: 2, .. }), "{sum}");
            assert!(sum.to_string().contains("residual norm"));
        }
    }

    #[test]
    fn bad_requests_and_payloads_are_errors() {
        let got = run_ranks(2, quick(), |mut c| {
            let other = 1 - c.rank();
            let peer = c.exchange::<u8>(
                "x",
                vec![],
                &[Incoming {
                    peer: 5,
                    tag: 0,
                    len: 1,
                }],
            );
            let reserved = Incoming {
                peer: other,
                tag: RESERVED_TAGS,
                len: 1,
            };
            let tag = c.exchange::<u8>("x", vec![], &[reserved]);
            let short = Outgoing {
                peer: other,
                tag: 3,
                data: vec![0u8; 4],
            };
            let len = c.exchange(
                "faces",
                vec![short],
                &[Incoming {
                    peer: other,
                    tag: 3,
                    len: 5,
                }],
            );
            let float = Outgoing {
                peer: other,
                tag: 5,
                data: vec![0f32],
            };
            c.exchange("faces", vec![float], &[]).unwrap();
            let ty = c.exchange::<u16>(
                "faces",
                vec![],
                &[Incoming {
                    peer: other,
                    tag: 5,
                    len: 1,
                }],
            );
            (
                peer.unwrap_err(),
                tag.unwrap_err(),
                len.unwrap_err(),
                ty.unwrap_err(),
            )
        });
        for (peer, tag, len, ty) in got {
            let peer = peer.to_string();
            assert!(
                peer.contains("peer rank 5 is outside the communicator of 2 ranks"),
                "{peer}"
            );
            assert!(tag.to_string().contains("is reserved"), "{tag}");
            assert!(
                matches!(
                    len,
                    CommError::Length {
                        expected: 5,
                        found: 4,
                        tag: 3,
                        ..
                    }
                ),
                "{len}"
            );
            assert!(matches!(ty, CommError::PayloadType { tag: 5, .. }), "{ty}");
        }
    }
}
