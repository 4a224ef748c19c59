//! How face buffers on the GPU travel between ranks ([`DeviceTransport`]):
//!
//! | transport | what it is |
//! |---|---|
//! | [`HostStaged`] | any [`Communicator`] (threads of one process: several ranks on ONE GPU, or one process driving several GPUs): the buffers are downloaded after the packs, exchanged on the host, uploaded before the unpacks |
//! | [`NcclTransport`] | NCCL grouped send/recv on the device buffers themselves, on the communicator's stream after an event of the compute stream |
//! | [`PeerTransport`](super::PeerTransport) | the ranks of one process: direct peer copies into the receiver's buffer on a copy stream, ordered by events (no host wait for the GPU) |
//!
//! Messages between one pair of ranks are issued in increasing tag order on both sides
//! (NCCL matches a pair's sends and receives by order, not by tag): with two ranks along
//! a direction both faces of that direction go to the same peer.
//!
//! Each face buffer is one or two messages: its values under tag 2t, and (fixed-point
//! wire formats) its per-site norms under 2t + 1, t the face's
//! [`face_tag`](crate::distributed::face_tag).

use crate::comm::bootstrap::{shared_unique_id, Bootstrap};
use crate::comm::nccl::{DeviceMessage, NcclComm, NcclLibrary, NcclUniqueId};
use crate::comm::{CommConfig, CommError, Communicator, Incoming, Outgoing};
use crate::device::{DeviceField, Gpu};
use crate::distributed::{DistributedError, SharedComm};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

/// A face buffer sent to `peer` under `tag`: its bytes, and the per-site norms of a
/// fixed-point wire format.
pub struct FaceSend<'a> {
    /// The receiving rank.
    pub peer: usize,
    /// The face's tag ([`crate::distributed::face_tag`]).
    pub tag: u32,
    /// The packed bytes.
    pub values: &'a CudaSlice<u8>,
    /// The packed norms (fixed-point wire formats).
    pub norms: Option<&'a CudaSlice<f32>>,
}

impl<'a> FaceSend<'a> {
    /// The packed face field `buffer` (its values and norms).
    pub fn of(peer: usize, tag: u32, buffer: &'a DeviceField) -> Self {
        Self {
            peer,
            tag,
            values: buffer.values(),
            norms: buffer.norms(),
        }
    }
}

/// A face buffer filled from `peer`'s message under `tag` (the wire layout of the face):
/// its bytes, and the per-site norms of a fixed-point wire format.
pub struct FaceRecv<'a> {
    /// The sending rank.
    pub peer: usize,
    /// The tag the sender used.
    pub tag: u32,
    /// The bytes to fill.
    pub values: &'a mut CudaSlice<u8>,
    /// The norms to fill (fixed-point wire formats).
    pub norms: Option<&'a mut CudaSlice<f32>>,
}

impl<'a> FaceRecv<'a> {
    /// Into the face field `buffer` (its values and norms).
    pub fn into_field(peer: usize, tag: u32, buffer: &'a mut DeviceField) -> Self {
        let (values, norms) = buffer.buffers_mut();
        Self {
            peer,
            tag,
            values,
            norms,
        }
    }
}

/// The grouped exchange of device face buffers, in two steps around the interior launch
/// (the overlap), and the deterministic global sums of device reductions.
pub trait DeviceTransport {
    /// This rank.
    fn rank(&self) -> usize;

    /// Right after the packs are queued on the GPU's stream, before the interior: takes
    /// what the exchange needs of the send buffers' state (an event of the packs, or
    /// their downloaded bytes), so that the exchange can overlap the interior.
    fn packed(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
    ) -> Result<(), DistributedError>;

    /// After [`Self::packed`] and the interior are queued: starts the exchange (for
    /// direct copies: offers the receive buffers and queues the copies); the host work
    /// here overlaps the GPU's interior.
    /// The default: nothing to start before [`Self::complete`] (transports whose whole
    /// exchange runs there: NCCL's grouped send/receive, the host staging).
    fn post(
        &mut self,
        _gpu: &Gpu,
        _operation: &str,
        _sends: &[FaceSend<'_>],
        _recvs: &[FaceRecv<'_>],
    ) -> Result<(), DistributedError> {
        Ok(())
    }

    /// Completes the exchange posted with the same `sends`: when it returns, every
    /// receive buffer holds its peer's face for the work queued next on the GPU's stream.
    fn complete(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> Result<(), DistributedError>;

    /// Whether the faces can travel one direction at a time, each direction's delivery a
    /// GPU-side mark ([`Self::post_direction`], [`Self::await_direction`]), so that each
    /// direction's exterior waits only for its own faces. The default: no (the whole
    /// exchange completes at once in [`Self::complete`]).
    fn per_direction(&self) -> bool {
        false
    }

    /// Marks the work queued so far on `stream` (one direction's packs, on a stream of
    /// the GPU's context) as what the next [`Self::post_direction`] waits for, so that
    /// work queued after the packs (the interior) does not delay that exchange. Without
    /// a mark, a post waits for everything queued before it on the GPU's stream. The
    /// default: nothing to mark.
    fn mark_packs(&mut self, _stream: &CudaStream) -> Result<(), DistributedError> {
        Ok(())
    }

    /// Queues the exchange of one direction's faces after that direction's packs (the
    /// oldest [`Self::mark_packs`] not yet used, else the work queued so far on the GPU's
    /// stream), without making the GPU's stream wait; returns the direction's delivery
    /// mark for [`Self::await_direction`]. Only called where [`Self::per_direction`]
    /// says yes; the default refuses.
    fn post_direction(
        &mut self,
        _gpu: &Gpu,
        operation: &str,
        _sends: &[FaceSend<'_>],
        _recvs: &mut [FaceRecv<'_>],
    ) -> Result<usize, DistributedError> {
        Err(DistributedError::Operator(format!(
            "{operation}: {} exchanges all faces at once",
            self.describe()
        )))
    }

    /// The stream the per-direction deliveries arrive on, where work that only needs a
    /// direction's faces (their unpacks into the halo) can be queued right after
    /// [`Self::post_direction`], beside the interior, and then covered by its mark
    /// ([`Self::extend_direction`]). The default: none (the unpacks run on the GPU's
    /// stream after [`Self::await_direction`]).
    fn delivery_stream(&self) -> Option<std::sync::Arc<cudarc::driver::CudaStream>> {
        None
    }

    /// Moves the delivery `mark` of [`Self::post_direction`] past the work queued since
    /// on [`Self::delivery_stream`], so that [`Self::await_direction`] waits for it too.
    /// The default refuses (there is no delivery stream).
    fn extend_direction(&mut self, mark: usize) -> Result<(), DistributedError> {
        Err(DistributedError::Operator(format!(
            "delivery mark {mark}: {} has no delivery stream",
            self.describe()
        )))
    }

    /// Makes the work queued next on `stream` (a stream of the GPU's context: its own, or
    /// the hop's boundary stream) wait for the delivery `mark` of [`Self::post_direction`]
    /// (no host wait).
    fn await_direction(
        &mut self,
        _stream: &CudaStream,
        mark: usize,
    ) -> Result<(), DistributedError> {
        Err(DistributedError::Operator(format!(
            "delivery mark {mark}: {} has no per-direction exchange",
            self.describe()
        )))
    }

    /// After every direction was posted and awaited: waits on the host, bounded by the
    /// timeout, until every direction's exchange is done (a dead peer ends here with an
    /// error naming it), and forgets the marks.
    fn finish_directions(&mut self, _gpu: &Gpu, _operation: &str) -> Result<(), DistributedError> {
        Ok(())
    }

    /// Whether the per-direction exchange can be captured into a CUDA graph and replayed
    /// ([`super::DeviceDistributedHop::with_graphs`]): every call from
    /// [`Self::mark_packs`] to [`Self::await_direction`] only queues work on streams
    /// (none waits on the host or allocates once the peers are connected). The default:
    /// no.
    fn capturable(&self) -> bool {
        false
    }

    /// While a graph is being captured, after every direction was posted and before any
    /// is awaited: records `delivered` in the graph after the last direction's delivery
    /// (each replay then records it there, for [`Self::finish_replay`]). The default:
    /// nothing to record.
    fn mark_replay_delivery(&mut self, _delivered: &CudaEvent) -> Result<(), DistributedError> {
        Ok(())
    }

    /// In place of [`Self::finish_directions`] when the directions were posted into a
    /// CUDA graph being captured (nothing ran, nothing can be waited for): forgets the
    /// marks, keeping what [`Self::finish_replay`] needs. The default: nothing to forget.
    fn seal_directions(&mut self) {}

    /// After a graph holding captured directions was queued on the GPU's stream: waits
    /// on the host, bounded by the timeout, until its faces were delivered (`delivered`,
    /// recorded by [`Self::mark_replay_delivery`]; a dead peer ends here with an error
    /// naming it) — as [`Self::finish_directions`] does, so the host goes on queuing
    /// while the GPU computes the exterior. The default refuses (see
    /// [`Self::capturable`]).
    fn finish_replay(
        &mut self,
        _gpu: &Gpu,
        operation: &str,
        _delivered: &CudaEvent,
    ) -> Result<(), DistributedError> {
        Err(DistributedError::Operator(format!(
            "{operation}: {} cannot be replayed from a CUDA graph",
            self.describe()
        )))
    }

    /// Whether [`Self::post_direction`] also records a timing event at each direction's
    /// delivery, for [`Self::take_delivery_clocks`] (the hop's GPU timeline). The default:
    /// the transport has no GPU-side delivery to time.
    fn clock_deliveries(&mut self, _on: bool) {}

    /// The timing events of the deliveries posted since the last call (see
    /// [`Self::clock_deliveries`]), oldest first.
    fn take_delivery_clocks(&mut self) -> Vec<CudaEvent> {
        Vec::new()
    }

    /// The element-wise sum over ranks of `values`, added in rank order on every rank.
    fn all_reduce_sum_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, DistributedError>;

    /// What the transport is, for reports ("NCCL", "peer copies", …).
    fn describe(&self) -> String;
}

fn device(
    call: &str,
    rank: usize,
) -> impl Fn(cudarc::driver::DriverError) -> DistributedError + '_ {
    move |e| {
        DistributedError::Comm(CommError::Call {
            rank,
            call: call.into(),
            message: e.to_string(),
        })
    }
}

/// The transport through a host [`Communicator`]: face buffers downloaded in
/// [`DeviceTransport::packed`] (the packs are then done), exchanged and uploaded in
/// [`DeviceTransport::complete`] (the host exchange runs while the GPU computes the
/// interior).
pub struct HostStaged<C> {
    comm: SharedComm<C>,
    /// The downloaded values and norms of the posted sends, in their order.
    staged: Vec<(Vec<u8>, Vec<f32>)>,
}

impl<C: Communicator> HostStaged<C> {
    /// Exchanges through `comm` (shared with the rank's other collectives).
    pub fn new(comm: SharedComm<C>) -> Self {
        Self {
            comm,
            staged: Vec::new(),
        }
    }

    /// The communicator.
    pub fn comm(&self) -> &SharedComm<C> {
        &self.comm
    }
}

impl<C: Communicator> DeviceTransport for HostStaged<C> {
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    fn packed(
        &mut self,
        gpu: &Gpu,
        _operation: &str,
        sends: &[FaceSend<'_>],
    ) -> Result<(), DistributedError> {
        let rank = self.rank();
        let stream = gpu.backend().stream();
        self.staged = sends
            .iter()
            .map(|s| {
                let values = stream
                    .clone_dtoh(s.values)
                    .map_err(device("downloading a face", rank))?;
                let norms = match s.norms {
                    Some(n) => stream
                        .clone_dtoh(n)
                        .map_err(device("downloading a face's norms", rank))?,
                    None => Vec::new(),
                };
                Ok((values, norms))
            })
            .collect::<Result<_, DistributedError>>()?;
        Ok(())
    }

    fn complete(
        &mut self,
        gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> Result<(), DistributedError> {
        let rank = self.rank();
        let staged = std::mem::take(&mut self.staged);
        if staged.len() != sends.len() {
            return Err(DistributedError::Operator(format!(
                "{operation}: {} sends completed, {} posted",
                sends.len(),
                staged.len()
            )));
        }
        let (values, norms): (Vec<Vec<u8>>, Vec<Vec<f32>>) = staged.into_iter().unzip();
        let value_sends = sends
            .iter()
            .zip(values)
            .map(|(s, data)| Outgoing {
                peer: s.peer,
                tag: 2 * s.tag,
                data,
            })
            .collect();
        let value_recvs: Vec<Incoming> = recvs
            .iter()
            .map(|r| Incoming {
                peer: r.peer,
                tag: 2 * r.tag,
                len: r.values.len(),
            })
            .collect();
        let got = self
            .comm
            .lock()
            .exchange(operation, value_sends, &value_recvs)?;
        let norm_sends: Vec<Outgoing<f32>> = sends
            .iter()
            .zip(norms)
            .filter(|(s, _)| s.norms.is_some())
            .map(|(s, data)| Outgoing {
                peer: s.peer,
                tag: 2 * s.tag + 1,
                data,
            })
            .collect();
        let norm_recvs: Vec<Incoming> = recvs
            .iter()
            .filter_map(|r| {
                r.norms.as_ref().map(|n| Incoming {
                    peer: r.peer,
                    tag: 2 * r.tag + 1,
                    len: n.len(),
                })
            })
            .collect();
        let got_norms = if norm_recvs.is_empty() && norm_sends.is_empty() {
            Vec::new()
        } else {
            self.comm
                .lock()
                .exchange(operation, norm_sends, &norm_recvs)?
        };
        let stream = gpu.backend().stream();
        let mut norms = got_norms.into_iter();
        for (r, v) in recvs.iter_mut().zip(got) {
            let (values, n) = (&mut *r.values, r.norms.as_deref_mut());
            stream
                .memcpy_htod(&v, values)
                .map_err(device("uploading a face", rank))?;
            if let Some(n) = n {
                let host = norms.next().unwrap_or_default();
                stream
                    .memcpy_htod(&host, n)
                    .map_err(device("uploading a face's norms", rank))?;
            }
        }
        Ok(())
    }

    fn all_reduce_sum_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, DistributedError> {
        Ok(self.comm.lock().all_reduce_sum_f64(operation, values)?)
    }

    fn describe(&self) -> String {
        "host-staged (downloads, host exchange, uploads)".into()
    }
}

/// The transport of NCCL on the device buffers: [`DeviceTransport::packed`] makes the
/// communicator's stream wait for the packs (an event of the compute stream);
/// [`DeviceTransport::complete`] issues every send and receive in one group and waits
/// for them (with the communicator's timeout).
pub struct NcclTransport {
    comm: NcclComm,
    /// The delivery marks of the directions posted since the last finish, with the peer
    /// a timeout names.
    delivered: Vec<(cudarc::driver::CudaEvent, usize)>,
    /// The pack marks not yet used by a post, oldest first.
    packs: std::collections::VecDeque<cudarc::driver::CudaEvent>,
    /// Timing events of the deliveries (`Some` while clocked), for the hop's timeline.
    clocks: Option<Vec<CudaEvent>>,
    /// The peer a timeout of a replayed graph names (the last captured direction's).
    replay_peer: Option<usize>,
}

impl NcclTransport {
    /// Exchanges through `comm` (its stream on the same GPU as the compute stream; a
    /// stream of its own lets the exchange overlap the interior).
    pub fn new(comm: NcclComm) -> Self {
        Self {
            comm,
            delivered: Vec::new(),
            packs: Default::default(),
            clocks: None,
            replay_peer: None,
        }
    }

    /// This rank's NCCL transport on `gpu` among the `size` ranks of `bootstrap` (NCCL's
    /// unique id made by rank 0 and broadcast through it), exchanging on a stream of the
    /// highest priority ([`super::exchange_stream`]). Every rank calls it together; a
    /// missing NCCL library or a peer that never joins is an error.
    pub fn among<B: Bootstrap>(
        gpu: &Gpu,
        bootstrap: &mut B,
        size: usize,
        config: CommConfig,
    ) -> Result<Self, DistributedError> {
        let rank = bootstrap.rank();
        let id = shared_unique_id(bootstrap, || {
            Ok(NcclLibrary::get()?.unique_id()?.to_bytes())
        })?;
        let stream = super::exchange_stream(gpu.backend().context())
            .map_err(device("making the exchange stream", rank))?;
        let comm = NcclComm::init(stream, size, rank, NcclUniqueId::from_bytes(id), config)?;
        Ok(Self::new(comm))
    }

    /// The device messages of the faces (values, then norms, under tags 2t and 2t + 1),
    /// each list sorted by tag: the issue order both sides of a pair share.
    fn messages(
        &self,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> (Vec<DeviceMessage>, Vec<DeviceMessage>) {
        let stream = self.comm.stream().clone();
        // (tag, message), sorted by tag: the issue order both sides of a pair share.
        let mut out: Vec<(u32, DeviceMessage)> = Vec::new();
        for s in sends {
            let (ptr, _sync) = s.values.device_ptr(&stream);
            out.push((
                2 * s.tag,
                DeviceMessage {
                    peer: s.peer,
                    ptr,
                    bytes: s.values.len(),
                },
            ));
            if let Some(n) = s.norms {
                let (ptr, _sync) = n.device_ptr(&stream);
                out.push((
                    2 * s.tag + 1,
                    DeviceMessage {
                        peer: s.peer,
                        ptr,
                        bytes: 4 * n.len(),
                    },
                ));
            }
        }
        let mut inc: Vec<(u32, DeviceMessage)> = Vec::new();
        for r in recvs.iter_mut() {
            let (values, norms) = (&mut *r.values, r.norms.as_deref_mut());
            let bytes = values.len();
            let (ptr, _sync) = values.device_ptr_mut(&stream);
            inc.push((
                2 * r.tag,
                DeviceMessage {
                    peer: r.peer,
                    ptr,
                    bytes,
                },
            ));
            if let Some(n) = norms {
                let bytes = 4 * n.len();
                let (ptr, _sync) = n.device_ptr_mut(&stream);
                inc.push((
                    2 * r.tag + 1,
                    DeviceMessage {
                        peer: r.peer,
                        ptr,
                        bytes,
                    },
                ));
            }
        }
        out.sort_by_key(|(t, _)| *t);
        inc.sort_by_key(|(t, _)| *t);
        let sends: Vec<DeviceMessage> = out.into_iter().map(|(_, m)| m).collect();
        let recvs: Vec<DeviceMessage> = inc.into_iter().map(|(_, m)| m).collect();
        (sends, recvs)
    }
}

impl DeviceTransport for NcclTransport {
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    fn packed(&mut self, gpu: &Gpu, _: &str, _: &[FaceSend<'_>]) -> Result<(), DistributedError> {
        let rank = self.rank();
        let packed = match self.packs.pop_front() {
            Some(marked) => marked,
            None => gpu
                .backend()
                .stream()
                .record_event(None)
                .map_err(device("recording the packs' event", rank))?,
        };
        self.comm
            .stream()
            .wait(&packed)
            .map_err(device("waiting for the packs", rank))
    }

    fn complete(
        &mut self,
        _gpu: &Gpu,
        operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> Result<(), DistributedError> {
        let (sends, recvs) = self.messages(sends, recvs);
        // SAFETY: every pointer is a live allocation of this GPU of the stated size
        // (the buffers are borrowed for the call), and nothing else touches the receive
        // buffers until the call has waited for the group.
        unsafe { self.comm.exchange(operation, &sends, &recvs) }?;
        Ok(())
    }

    fn per_direction(&self) -> bool {
        true
    }

    fn mark_packs(&mut self, stream: &CudaStream) -> Result<(), DistributedError> {
        let rank = self.rank();
        let marked = stream
            .record_event(None)
            .map_err(device("recording the packs' event", rank))?;
        self.packs.push_back(marked);
        Ok(())
    }

    /// NCCL's stream made to wait for the direction's packs (their mark, or the compute
    /// stream so far), the direction's group queued there, its delivery marked.
    fn post_direction(
        &mut self,
        gpu: &Gpu,
        _operation: &str,
        sends: &[FaceSend<'_>],
        recvs: &mut [FaceRecv<'_>],
    ) -> Result<usize, DistributedError> {
        self.packed(gpu, "", sends)?;
        let rank = self.rank();
        let (sends, recvs) = self.messages(sends, recvs);
        // SAFETY: the buffers are the hop's face buffers, which live as long as the hop
        // and are touched by nothing else before the compute stream waited for the
        // delivery mark (await_direction) and the host for the stream (finish_directions).
        let peer = unsafe { self.comm.enqueue_exchange(&sends, &recvs) }?;
        let delivered = self
            .comm
            .stream()
            .record_event(None)
            .map_err(device("marking a direction's delivery", rank))?;
        self.delivered.push((delivered, peer));
        if let Some(clocks) = &mut self.clocks {
            let clock = self
                .comm
                .stream()
                .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(device("clocking a direction's delivery", rank))?;
            clocks.push(clock);
        }
        Ok(self.delivered.len() - 1)
    }

    fn delivery_stream(&self) -> Option<std::sync::Arc<cudarc::driver::CudaStream>> {
        Some(self.comm.stream().clone())
    }

    fn extend_direction(&mut self, mark: usize) -> Result<(), DistributedError> {
        let rank = self.rank();
        let (event, _) = self.delivered.get(mark).ok_or_else(|| {
            DistributedError::Operator(format!("no delivery mark {mark} was posted"))
        })?;
        event
            .record(self.comm.stream())
            .map_err(device("extending a direction's delivery mark", rank))
    }

    fn await_direction(
        &mut self,
        stream: &CudaStream,
        mark: usize,
    ) -> Result<(), DistributedError> {
        let rank = self.rank();
        let (event, _) = self.delivered.get(mark).ok_or_else(|| {
            DistributedError::Operator(format!("no delivery mark {mark} was posted"))
        })?;
        stream
            .wait(event)
            .map_err(device("waiting for a direction's faces", rank))
    }

    fn finish_directions(&mut self, _gpu: &Gpu, operation: &str) -> Result<(), DistributedError> {
        let peer = self.delivered.last().map(|(_, p)| *p);
        self.delivered.clear();
        self.packs.clear();
        if let Some(peer) = peer {
            self.comm.finish(operation, peer)?;
        }
        Ok(())
    }

    fn capturable(&self) -> bool {
        true
    }

    fn seal_directions(&mut self) {
        if let Some((_, peer)) = self.delivered.last() {
            self.replay_peer = Some(*peer);
        }
        self.delivered.clear();
        self.packs.clear();
    }

    /// An external event record node on NCCL's stream after the last delivery, then the
    /// last delivery mark recorded again (the stream of the exterior slabs waits on it,
    /// and the GPU's stream on that one: so the capture joins the node back).
    fn mark_replay_delivery(&mut self, delivered: &CudaEvent) -> Result<(), DistributedError> {
        let rank = self.rank();
        let Some((last, _)) = self.delivered.last() else {
            return Ok(());
        };
        let stream = self.comm.stream();
        let flags = cudarc::driver::sys::CUevent_record_flags_enum::CU_EVENT_RECORD_EXTERNAL;
        // SAFETY: both handles are live (the event outlives the graph that records it:
        // the hop keeps them together).
        unsafe {
            cudarc::driver::sys::cuEventRecordWithFlags(
                delivered.cu_event(),
                stream.cu_stream(),
                flags as u32,
            )
        }
        .result()
        .map_err(device("marking a replay's delivery", rank))?;
        last.record(stream)
            .map_err(device("joining a replay's delivery mark", rank))
    }

    /// `delivered` polled with NCCL's asynchronous error until the timeout.
    fn finish_replay(
        &mut self,
        _gpu: &Gpu,
        operation: &str,
        delivered: &CudaEvent,
    ) -> Result<(), DistributedError> {
        let peer = self.replay_peer.unwrap_or(self.rank());
        Ok(self.comm.finish_at(operation, peer, delivered)?)
    }

    fn clock_deliveries(&mut self, on: bool) {
        self.clocks = on.then(Vec::new);
    }

    fn take_delivery_clocks(&mut self) -> Vec<CudaEvent> {
        self.clocks.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn all_reduce_sum_f64(
        &mut self,
        operation: &str,
        values: &[f64],
    ) -> Result<Vec<f64>, DistributedError> {
        Ok(self.comm.all_reduce_sum_f64(operation, values)?)
    }

    fn describe(&self) -> String {
        "NCCL grouped send/recv".into()
    }
}
