//! [`PeerTransport`]: face buffers copied straight into the receiving rank's buffer by the
//! copy engines (`cuMemcpyPeerAsync`, over NVLink where peer access is enabled), for the
//! ranks of ONE process (threads, [`crate::comm::run_ranks`]: one process driving the
//! GPUs of a node, or several ranks on one GPU).
//!
//! # The protocol (per exchange, every rank)
//! The ranks agree on buffers and on order through small host messages of their
//! [`Communicator`] (offers and deliveries, a few u64 each); the bytes and the ordering
//! of the GPU work go through device events, so no host thread waits for a GPU:
//!
//! 0. [`packed`](PeerProtocol::packed), right after the packs are queued (before the
//!    interior): mark R = the compute stream so far (this rank's packs done, and its
//!    previous unpacks done: its receive buffers may be overwritten).
//! 1. [`post`](PeerProtocol::post), after the interior is queued: offer each sender (the
//!    peer of each receive) the receive buffer's address, length and context, and R.
//!    Take the offers of the peers this rank sends to; on the **copy stream**: wait for
//!    R (own packs), then per send wait for the receiver's R and copy the send buffer
//!    into the offered buffer. Mark D = the copy stream so far.
//! 2. [`complete`](PeerProtocol::complete): tell each receiver D; take the D of each
//!    sender and make the compute stream wait for it (the halos have arrived), and for
//!    this rank's own D (the next packs must not overwrite a send buffer still being
//!    copied).
//!
//! Every host wait is a [`Communicator::exchange`], bounded by its timeout
//! ([`crate::comm::CommConfig`]): a peer that died ends the exchange with
//! [`crate::comm::CommError::Timeout`] naming it. A mark a peer waits on was recorded
//! before it was offered, so the device waits end whenever the peer's GPU runs.
//!
//! Messages are the transport's buffers as in [`super::NcclTransport`]: values under tag
//! 2t, norms under 2t + 1 (t the face's tag); an offer travels under 2m and a delivery
//! under 2m + 1 for message tag m.
//!
//! The device side is behind [`CopyEngine`] (a GPU's streams and events,
//! [`GpuCopyEngine`]; a host imitation in the tests), so the protocol itself is tested on
//! the CPU.

use super::transport::{DeviceTransport, FaceRecv, FaceSend};
use crate::comm::{CommError, Communicator, Incoming, Outgoing};
use crate::device::Gpu;
use crate::distributed::{DistributedError, SharedComm};
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// One message of a face exchange as the protocol sees it: `bytes` bytes at device
/// address `ptr` (this rank's), to or from rank `peer` under `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerMessage {
    /// The other rank.
    pub peer: usize,
    /// The message's tag (2t values, 2t + 1 norms).
    pub tag: u32,
    /// Device address of this rank's buffer.
    pub ptr: u64,
    /// Length in bytes.
    pub bytes: usize,
}

/// The device operations of the protocol (module docs): marks are opaque handles (device
/// events) that any rank of the process may wait on.
pub trait CopyEngine {
    /// This rank's context handle (offers carry it: the copy needs it).
    fn context(&self) -> u64;
    /// A mark of the work queued so far on the compute stream.
    fn mark_compute(&mut self) -> Result<u64, String>;
    /// The copy stream waits for `mark` (of any rank).
    fn copy_stream_wait(&mut self, mark: u64) -> Result<(), String>;
    /// Queues on the copy stream `bytes` bytes from `src` (this rank's) to `dst` of the
    /// context `dst_context`.
    fn copy(&mut self, dst: u64, dst_context: u64, src: u64, bytes: usize) -> Result<(), String>;
    /// A mark of the work queued so far on the copy stream.
    fn mark_copies(&mut self) -> Result<u64, String>;
    /// The compute stream waits for `mark` (of any rank).
    fn compute_stream_wait(&mut self, mark: u64) -> Result<(), String>;
}

/// The offer of a receive buffer: [address, bytes, context, ready mark].
const OFFER_LEN: usize = 4;

/// The host half of the protocol (module docs) over the communicator `C`.
pub struct PeerProtocol<C> {
    comm: SharedComm<C>,
    /// The compute stream's mark after the packs.
    ready: Option<u64>,
    /// The copy stream's mark of the posted exchange.
    delivered: Option<u64>,
}

impl<C: Communicator> PeerProtocol<C> {
    /// The protocol through `comm` (shared with the rank's other collectives).
    pub fn new(comm: SharedComm<C>) -> Self {
        Self {
            comm,
            ready: None,
            delivered: None,
        }
    }

    /// Step 0 (module docs): the mark of the packs (and of the previous unpacks).
    pub fn packed(
        &mut self,
        engine: &mut dyn CopyEngine,
        operation: &str,
    ) -> Result<(), DistributedError> {
        let mark = engine.mark_compute().map_err(|message| {
            DistributedError::Comm(CommError::Call {
                rank: self.comm.rank(),
                call: format!("{operation}: marking the packs"),
                message,
            })
        })?;
        self.ready = Some(mark);
        Ok(())
    }

    /// The communicator.
    pub fn comm(&self) -> &SharedComm<C> {
        &self.comm
    }

    /// Step 1 (module docs): offers, then the copies queued on the copy stream.
    pub fn post(
        &mut self,
        engine: &mut dyn CopyEngine,
        operation: &str,
        sends: &[PeerMessage],
        recvs: &[PeerMessage],
    ) -> Result<(), DistributedError> {
        let rank = self.comm.rank();
        let dev = |call: &'static str| {
            move |message: String| {
                DistributedError::Comm(CommError::Call {
                    rank,
                    call: format!("{operation}: {call}"),
                    message,
                })
            }
        };
        let Some(ready) = self.ready.take() else {
            return Err(DistributedError::Operator(format!(
                "{operation}: posted without the packs' mark (packed not called)"
            )));
        };
        let context = engine.context();
        let offers = recvs
            .iter()
            .map(|r| Outgoing {
                peer: r.peer,
                tag: 2 * r.tag,
                data: vec![r.ptr, r.bytes as u64, context, ready],
            })
            .collect();
        let wanted: Vec<Incoming> = sends
            .iter()
            .map(|s| Incoming {
                peer: s.peer,
                tag: 2 * s.tag,
                len: OFFER_LEN,
            })
            .collect();
        let got = self.comm.lock().exchange(
            &format!("{operation} (offers of receive buffers)"),
            offers,
            &wanted,
        )?;
        engine
            .copy_stream_wait(ready)
            .map_err(dev("waiting for the packs"))?;
        for (s, offer) in sends.iter().zip(&got) {
            let &[dst, bytes, dst_context, peer_ready] = offer.as_slice() else {
                unreachable!("the exchange checked the offer's length");
            };
            if bytes != s.bytes as u64 {
                return Err(DistributedError::Operator(format!(
                    "rank {rank}: {operation}: rank {} offers a receive buffer of {bytes} bytes \
                     for the face under tag {}, which is {} bytes here (the ranks disagree on \
                     the lattice or the field)",
                    s.peer, s.tag, s.bytes
                )));
            }
            engine
                .copy_stream_wait(peer_ready)
                .map_err(dev("waiting for the receiver's buffer"))?;
            engine
                .copy(dst, dst_context, s.ptr, s.bytes)
                .map_err(dev("cuMemcpyPeerAsync"))?;
        }
        self.delivered = Some(engine.mark_copies().map_err(dev("marking the copies"))?);
        Ok(())
    }

    /// Step 2 (module docs): deliveries, and the compute stream waits for the halos and
    /// for this rank's own copies.
    pub fn complete(
        &mut self,
        engine: &mut dyn CopyEngine,
        operation: &str,
        sends: &[PeerMessage],
        recvs: &[PeerMessage],
    ) -> Result<(), DistributedError> {
        let rank = self.comm.rank();
        let Some(delivered) = self.delivered.take() else {
            return Err(DistributedError::Operator(format!(
                "{operation}: completed without a posted exchange"
            )));
        };
        let deliveries = sends
            .iter()
            .map(|s| Outgoing {
                peer: s.peer,
                tag: 2 * s.tag + 1,
                data: vec![delivered],
            })
            .collect();
        let wanted: Vec<Incoming> = recvs
            .iter()
            .map(|r| Incoming {
                peer: r.peer,
                tag: 2 * r.tag + 1,
                len: 1,
            })
            .collect();
        let got =
            self.comm
                .lock()
                .exchange(&format!("{operation} (deliveries)"), deliveries, &wanted)?;
        let wait = |engine: &mut dyn CopyEngine, mark: u64| {
            engine.compute_stream_wait(mark).map_err(|message| {
                DistributedError::Comm(CommError::Call {
                    rank,
                    call: format!("{operation}: waiting for the copies"),
                    message,
                })
            })
        };
        let mut marks: Vec<u64> = got.into_iter().map(|d| d[0]).collect();
        marks.push(delivered);
        marks.sort_unstable();
        marks.dedup();
        for mark in marks {
            wait(engine, mark)?;
        }
        Ok(())
    }
}

/// The messages of face buffers: values under 2t, norms under 2t + 1.
fn messages<'a>(
    buffers: impl Iterator<Item = (usize, u32, &'a CudaSlice<u8>, Option<&'a CudaSlice<f32>>)>,
    stream: &Arc<CudaStream>,
) -> Vec<PeerMessage> {
    let mut out = Vec::new();
    for (peer, tag, values, norms) in buffers {
        let (ptr, _sync) = values.device_ptr(stream);
        out.push(PeerMessage {
            peer,
            tag: 2 * tag,
            ptr,
            bytes: values.len(),
        });
        if let Some(n) = norms {
            let (ptr, _sync) = n.device_ptr(stream);
            out.push(PeerMessage {
                peer,
                tag: 2 * tag + 1,
                ptr,
                bytes: 4 * n.len(),
            });
        }
    }
    out
}

/// How many marks a [`GpuCopyEngine`] keeps alive (two per exchange): a peer waits on a
/// mark within the exchange it was offered in, long before it is dropped.
const KEPT_MARKS: usize = 64;

/// The [`CopyEngine`] of one GPU: the compute stream of the [`Gpu`], a copy stream of
/// the highest priority, events as marks, peer access enabled towards every context
/// copied to (where the devices allow it; elsewhere the driver stages the copy).
pub struct GpuCopyEngine {
    ctx: Arc<CudaContext>,
    compute: Arc<CudaStream>,
    copies: Arc<CudaStream>,
    marks: VecDeque<CudaEvent>,
    /// Contexts this one has peer access to (or was refused it: then not asked again).
    peers: HashSet<u64>,
    /// Contexts whose memory this one reaches directly (peer access on).
    direct: HashSet<u64>,
}

impl GpuCopyEngine {
    /// The engine of `gpu`, with a copy stream of its own.
    pub fn new(gpu: &Gpu) -> Result<Self, String> {
        let ctx = gpu.backend().context().clone();
        let copies = exchange_stream(&ctx).map_err(|e| e.to_string())?;
        Ok(Self {
            compute: gpu.backend().stream().clone(),
            ctx,
            copies,
            marks: VecDeque::new(),
            peers: HashSet::new(),
            direct: HashSet::new(),
        })
    }

    /// Whether every context copied to so far is reached directly (peer access on).
    pub fn all_direct(&self) -> bool {
        self.peers.iter().all(|p| self.direct.contains(p))
    }

    fn keep(&mut self, event: CudaEvent) -> u64 {
        let handle = event.cu_event() as u64;
        self.marks.push_back(event);
        while self.marks.len() > KEPT_MARKS {
            self.marks.pop_front();
        }
        handle
    }

    fn wait_on(&self, stream: &CudaStream, mark: u64) -> Result<(), String> {
        self.ctx.bind_to_thread().map_err(|e| e.to_string())?;
        // SAFETY: `mark` is an event of a rank of this process, kept alive by its engine
        // for KEPT_MARKS marks (module docs); the stream is live.
        unsafe {
            sys::cuStreamWaitEvent(
                stream.cu_stream(),
                mark as sys::CUevent,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as u32,
            )
        }
        .result()
        .map_err(|e| e.to_string())
    }

    /// Enables this context's access to `peer` once (an error other than "already on"
    /// or "not supported" is returned).
    fn reach(&mut self, peer: u64) -> Result<(), String> {
        if peer == self.context() || !self.peers.insert(peer) {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(|e| e.to_string())?;
        // SAFETY: `peer` is the live context of a rank of this process.
        let r = unsafe { sys::cuCtxEnablePeerAccess(peer as sys::CUcontext, 0) };
        match r {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                self.direct.insert(peer);
                Ok(())
            }
            sys::CUresult::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
            | sys::CUresult::CUDA_ERROR_INVALID_DEVICE => Ok(()),
            other => Err(format!("cuCtxEnablePeerAccess: {other:?}")),
        }
    }
}

impl CopyEngine for GpuCopyEngine {
    fn context(&self) -> u64 {
        self.ctx.cu_ctx() as u64
    }

    fn mark_compute(&mut self) -> Result<u64, String> {
        let event = self.compute.record_event(None).map_err(|e| e.to_string())?;
        Ok(self.keep(event))
    }

    fn copy_stream_wait(&mut self, mark: u64) -> Result<(), String> {
        self.wait_on(&self.copies, mark)
    }

    fn copy(&mut self, dst: u64, dst_context: u64, src: u64, bytes: usize) -> Result<(), String> {
        self.reach(dst_context)?;
        // SAFETY: src is a live buffer of this context of `bytes` bytes (the transport's
        // send buffer, borrowed for the exchange), dst a live receive buffer of the same
        // length in dst_context (checked against the offer), not touched by its owner
        // until the copy's mark completes.
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst,
                dst_context as sys::CUcontext,
                src,
                self.ctx.cu_ctx(),
                bytes,
                self.copies.cu_stream(),
            )
        }
        .result()
        .map_err(|e| e.to_string())
    }

    fn mark_copies(&mut self) -> Result<u64, String> {
        let event = self.copies.record_event(None).map_err(|e| e.to_string())?;
        Ok(self.keep(event))
    }

    fn compute_stream_wait(&mut self, mark: u64) -> Result<(), String> {
        self.wait_on(&self.compute, mark)
    }
}

/// A stream of `ctx` of the highest priority: the exchange's copies and NCCL kernels
/// are scheduled ahead of the interior kernel's blocks (which would otherwise hold every
/// SM until the interior ends).
///
/// It also turns off cudarc's automatic event tracking on `ctx`: with a second stream
/// cudarc would otherwise wait on and record an event for every buffer of every launch
/// (a few driver calls per buffer: tens of µs of host time per hop, which the small pack,
/// unpack and exterior launches cannot hide). Every cross-stream use in qdsl is ordered
/// explicitly instead: the transports' face buffers by their events or host waits
/// ([`super::NcclTransport`], [`PeerTransport`]); everything else runs on the compute
/// stream alone.
pub fn exchange_stream(
    ctx: &Arc<CudaContext>,
) -> Result<Arc<CudaStream>, cudarc::driver::DriverError> {
    ctx.bind_to_thread()?;
    // SAFETY: see above — no buffer is used on two streams without an explicit event or
    // host wait between the uses, and buffers outlive the exchanges that use them.
    unsafe { ctx.disable_event_tracking() };
    let (_least, greatest) = cudarc::driver::result::stream::get_priority_range()?;
    ctx.new_stream_with_priority(greatest)
}

/// The transport of direct peer copies (module docs) through the host communicator `C`
/// of the ranks of one process.
pub struct PeerTransport<C> {
    protocol: PeerProtocol<C>,
    engine: Option<GpuCopyEngine>,
}

impl<C: Communicator> PeerTransport<C> {
    /// The transport of the rank of `comm` (shared with its other collectives).
    pub fn new(comm: SharedComm<C>) -> Self {
        Self {
            protocol: PeerProtocol::new(comm),
            engine: None,
        }
    }

    fn engine(&mut self, gpu: &Gpu) -> Result<&mut GpuCopyEngine, DistributedError> {
        if self.engine.is_none() {
            let rank = self.protocol.comm().rank();
            let engine = GpuCopyEngine::new(gpu).map_err(|message| {
                DistributedError::Comm(CommError::Call {
                    rank,
                    call: "creating the peer copy stream".into(),
                    message,
                })
            })?;
            self.engine = Some(engine);
        }
        Ok(self.engine.as_mut().expect("created above"))
    }

    fn messages(
        gpu: &Gpu,
        sends: &[FaceSend<'_>],
        recvs: &[FaceRecv<'_>],
    ) -> (Vec<PeerMessage>, Vec<PeerMessage>) {
        let stream = gpu.backend().stream();
        (
            messages(
                sends.iter().map(|s| (s.peer, s.tag, s.values, s.norms)),
                stream,
            ),
            messages(
                recvs
                    .iter()
                    .map(|r| (r.peer, r.tag, &*r.values, r.norms.as_deref())),
                stream,
            ),
        )
    }
}

impl<C: Communicator> DeviceTransport for PeerTransport<C> {
    fn rank(&self) -> usize {
        self.protocol.comm().rank()
    }

    fn packed(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        _: &[FaceSend<'_>],
    ) -> Result<(), DistributedError> {
        self.engine(gpu)?;
        let engine = self.engine.as_mut().expect("created above");
        self.protocol.packed(engine, operation)
    }

    fn post(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &[FaceRecv<'_>],
    ) -> Result<(), DistributedError> {
        let (s, r) = Self::messages(gpu, sends, recvs);
        self.engine(gpu)?;
        let engine = self.engine.as_mut().expect("created above");
        self.protocol.post(engine, operation, &s, &r)
    }

    fn complete(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> Result<(), DistributedError> {
        let (s, r) = Self::messages(gpu, sends, recvs);
        self.engine(gpu)?;
        let engine = self.engine.as_mut().expect("created above");
        self.protocol.complete(engine, operation, &s, &r)
    }

    fn all_reduce_sum_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, DistributedError> {
        Ok(self
            .protocol
            .comm()
            .lock()
            .all_reduce_sum_f64(operation, values)?)
    }

    fn describe(&self) -> String {
        match &self.engine {
            Some(e) if !e.all_direct() => "peer copies (staged by the driver: no peer access)",
            _ => "peer copies",
        }
        .into()
    }
}

/// Whether every pair of the GPUs `ordinals` has peer access (NVLink or PCIe P2P): the
/// condition for the peer transport to be the default.
pub fn peer_access_between(ordinals: &[usize]) -> Result<bool, String> {
    use cudarc::driver::result;
    crate::libs::driver().map_err(|e| e.to_string())?;
    result::init().map_err(|e| format!("cuInit: {e}"))?;
    let device = |o: usize| result::device::get(o as i32).map_err(|e| format!("GPU {o}: {e}"));
    for &a in ordinals {
        for &b in ordinals {
            if a == b {
                continue;
            }
            let mut can = 0;
            // SAFETY: an out-pointer and two device handles.
            unsafe { sys::cuDeviceCanAccessPeer(&mut can, device(a)?, device(b)?) }
                .result()
                .map_err(|e| format!("cuDeviceCanAccessPeer({a}, {b}): {e}"))?;
            if can == 0 {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;
