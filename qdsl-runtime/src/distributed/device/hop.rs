//! [`DeviceDistributedHop`]: one rank's part of a hop on the GPU — faces packed by the
//! generated face kernels, exchanged through a [`DeviceTransport`], the interior box
//! launched while the faces travel (overlap on) or after (off), then the exterior slabs
//! direction by direction.

use super::faces::DeviceFaces;
use super::replay::{application_key, Next, Replay, Replays};
use super::transport::{DeviceTransport, FaceRecv, FaceSend};
use crate::device::{DeviceField, Gpu};
use crate::distributed::{face_tag, DistributedError};
use crate::operator::device::{BoxLaunch, OperatorError};
use cudarc::driver::{CudaEvent, CudaStream, DevicePtr};
use qdsl_core::dsl::halo_spin::{FaceProjection, HaloProjections};
use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::field::distributed::face_negated;
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, LaunchBoxes, Parity, Side, SiteBox};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the per-direction exchange's errors name.
const PER_DIRECTION: &str = "distributed device hop: halo exchange of one direction";

/// One face of this rank: where it is packed from and unpacked to, and its buffers.
#[derive(Debug)]
struct Face {
    mu: usize,
    side: Side,
    /// The boundary layers sent to the neighbour on `side`.
    boundary: SiteBox,
    /// The halo layers filled from that neighbour.
    halo: SiteBox,
    send: DeviceField,
    recv: DeviceField,
    /// The projection the sent face carries, of the operator and of its dagger
    /// (`None`: whole sites).
    sent_projection: [Option<FaceProjection>; 2],
    /// The projection of the halo filled from the neighbour, likewise.
    halo_projection: [Option<FaceProjection>; 2],
}

/// Where the time of one application went (host clocks around synchronised phases:
/// only measured when [`DeviceDistributedHop::set_timing`] is on, which serialises the
/// phases and so turns the overlap off).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// Packing every face.
    pub pack: Duration,
    /// The exchange (post and complete) and the unpacks.
    pub exchange: Duration,
    /// The interior box.
    pub interior: Duration,
    /// The exterior slabs.
    pub exterior: Duration,
}

/// GPU clocks of one overlapped application (per-direction exchange), µs after the
/// GPU reached its first pack: when the packs were done, the interior was done, the
/// last direction's faces were delivered (the exchange's stream), and the last
/// exterior was done. Nothing is synchronised in between, so this is the application's
/// real schedule; the host's own time (its launches and NCCL calls) is what the host's
/// wall clock adds beyond `done`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timeline {
    /// The packs done.
    pub packed: f64,
    /// The interior box done.
    pub interior: f64,
    /// The last direction's delivery (0 where the transport has none to time).
    pub delivered: f64,
    /// The last exterior slab done.
    pub done: f64,
}

/// The timing events of the last application, read by [`DeviceDistributedHop::timeline`].
#[derive(Debug)]
struct Clocks {
    start: CudaEvent,
    packed: CudaEvent,
    interior: CudaEvent,
    delivered: Vec<CudaEvent>,
    done: CudaEvent,
}

/// One rank's part of a hop K on the GPU, for a field of `ls` slices of one parity on
/// the rank's extended lattice:
///
/// (K ψ)(x) = the single-GPU K ψ at every interior site x of this rank,
///
/// computed by a [`Region::SubBox`](qdsl_core::dsl::variant::Region::SubBox) variant of
/// the hop kernel over the [`LaunchBoxes`] (interior, then the exterior slabs of each
/// cut direction in order), after ψ's halos were filled: the faces packed (negated where
/// they cross an antiperiodic global boundary: the kernel then runs with a periodic time
/// boundary when t is cut), exchanged and unpacked. The halo sites of the output are not
/// written. Every rank calls [`Self::apply`] together.
#[derive(Debug)]
pub struct DeviceDistributedHop {
    ext: ExtendedLattice,
    boxes: LaunchBoxes,
    kernels: DeviceFaces,
    faces: Mutex<Vec<Face>>,
    ls: usize,
    overlap: bool,
    /// Exchange direction by direction where the transport can (see [`Self::apply`]).
    per_direction: bool,
    timing: Option<Mutex<PhaseTimes>>,
    /// The GPU timeline's events (`Some` while on; the last application's inside).
    clocks: Option<Mutex<Option<Clocks>>>,
    /// The CUDA graphs of [`Self::apply_replayed`] (`Some` while graphs are on).
    replays: Option<Mutex<Replays>>,
    /// The packs and the exterior slabs of the overlapped per-direction application,
    /// beside the interior (made on first use; [`Self::boundary_stream`]).
    boundary: Mutex<Option<Arc<CudaStream>>>,
}

impl DeviceDistributedHop {
    /// The hop's faces on `ext` for fields of `reals` reals per site in `field` format
    /// with `ls` slices, sent in `wire` format (the field's, or fixed16 for f32 fields:
    /// half the bytes, within fixed16's bound), whole sites; overlap on.
    pub fn new(
        gpu: &Gpu,
        ext: ExtendedLattice,
        reals: usize,
        field: StorageFormat,
        wire: StorageFormat,
        ls: usize,
    ) -> Result<Self, OperatorError> {
        let whole = HaloProjections::default();
        Self::projected(gpu, ext, (reals, field, wire, ls), [whole, whole])
    }

    /// The same with spin-projected faces: `projections` = the hop stencil's
    /// [`HaloProjections`] of the operator and of its dagger (from its spec:
    /// [`HaloProjections::of`]); a face projected in both carries half spinors (12 reals
    /// instead of 24: half the bytes, bit-identical in f64 and f32 — see
    /// [`qdsl_core::dsl::halo_spin`]), the others whole sites.
    pub fn projected(
        gpu: &Gpu,
        ext: ExtendedLattice,
        (reals, field, wire, ls): (usize, StorageFormat, StorageFormat, usize),
        projections: [HaloProjections; 2],
    ) -> Result<Self, OperatorError> {
        let both = |f: &dyn Fn(&HaloProjections) -> Option<FaceProjection>| {
            let p = [f(&projections[0]), f(&projections[1])];
            if p.iter().all(Option::is_some) {
                p
            } else {
                [None, None]
            }
        };
        let mut plans = Vec::new();
        let mut layout = Vec::new();
        for mu in 0..4 {
            for side in Side::BOTH {
                if let Some([boundary, halo]) = ext.face_boxes(mu, side) {
                    let sent = both(&|h| h.sent(mu, side));
                    let held = both(&|h| h.halo(mu, side));
                    plans.extend(sent.iter().chain(&held).flatten().copied());
                    layout.push((mu, side, boundary, halo, sent, held));
                }
            }
        }
        let kernels = DeviceFaces::with_projections(gpu, reals, field, wire, &plans)?;
        let mut faces = Vec::new();
        for (mu, side, boundary, halo, sent, held) in layout {
            faces.push(Face {
                mu,
                side,
                boundary,
                halo,
                send: kernels.buffer(gpu, &boundary, ls, sent[0].is_some())?,
                recv: kernels.buffer(gpu, &halo, ls, held[0].is_some())?,
                sent_projection: sent,
                halo_projection: held,
            });
        }
        Ok(Self {
            boxes: ext.launch_boxes(),
            ext,
            kernels,
            faces: Mutex::new(faces),
            ls: ls.max(1),
            overlap: true,
            per_direction: true,
            timing: None,
            clocks: None,
            replays: None,
            boundary: Mutex::new(None),
        })
    }

    /// Whether any face carries half spinors.
    pub fn is_projected(&self) -> bool {
        let faces = self.faces.lock().unwrap_or_else(|e| e.into_inner());
        faces.iter().any(|f| f.sent_projection[0].is_some())
    }

    /// The same hop with the interior launched after the exchange (`false`) or while
    /// the faces travel (`true`, the default).
    pub fn with_overlap(self, overlap: bool) -> Self {
        Self { overlap, ..self }
    }

    /// The same hop exchanging direction by direction where the transport can (`true`,
    /// the default) or all faces as one group (`false`, for comparison).
    pub fn with_per_direction(self, per_direction: bool) -> Self {
        Self {
            per_direction,
            ..self
        }
    }

    /// The same hop with [`Self::apply_replayed`] capturing its applications into CUDA
    /// graphs and replaying them (`true`), or running each eagerly (`false`, the
    /// default). Graphs need the GPU's stream to be capturable
    /// ([`Gpu::open_capturable`]) and a [`DeviceTransport::capturable`] transport (NCCL).
    pub fn with_graphs(self, on: bool) -> Self {
        Self {
            replays: on.then(Default::default),
            ..self
        }
    }

    /// Whether [`Self::apply_replayed`] captures and replays graphs ([`Self::with_graphs`]).
    pub fn graphs(&self) -> bool {
        self.replays.is_some()
    }

    /// The number of graphs captured so far (0 with graphs off).
    pub fn graphs_captured(&self) -> usize {
        self.replays
            .as_ref()
            .map_or(0, |r| r.lock().unwrap_or_else(|e| e.into_inner()).len())
    }

    /// The time the captures so far took (capture and instantiation; zero with graphs
    /// off).
    pub fn capture_time(&self) -> Duration {
        self.replays.as_ref().map_or(Duration::ZERO, |r| {
            r.lock().unwrap_or_else(|e| e.into_inner()).capture_time()
        })
    }

    /// Measures the phases of every application (synchronising after each phase).
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on.then(|| Mutex::new(PhaseTimes::default()));
    }

    /// Records the GPU timeline of every overlapped per-direction application (timing
    /// events, no synchronisation); [`Self::timeline`] reads the last one.
    pub fn set_timeline(&mut self, on: bool) {
        self.clocks = on.then(|| Mutex::new(None));
    }

    /// The GPU timeline of the last application (waits for it), if the timeline is on
    /// and an overlapped per-direction application ran since.
    pub fn timeline(&self) -> Result<Option<Timeline>, DistributedError> {
        let Some(clocks) = &self.clocks else {
            return Ok(None);
        };
        let guard = clocks.lock().unwrap_or_else(|e| e.into_inner());
        let Some(c) = guard.as_ref() else {
            return Ok(None);
        };
        let read = |what: &str, e: Result<f32, cudarc::driver::DriverError>| {
            e.map(|ms| 1e3 * f64::from(ms))
                .map_err(|e| DistributedError::Operator(format!("reading the {what} clock: {e}")))
        };
        c.done
            .synchronize()
            .map_err(|e| DistributedError::Operator(format!("waiting for the timeline: {e}")))?;
        let mut delivered = 0.0_f64;
        for d in &c.delivered {
            d.synchronize().map_err(|e| {
                DistributedError::Operator(format!("waiting for a delivery clock: {e}"))
            })?;
            delivered = delivered.max(read("delivery", c.start.elapsed_ms(d))?);
        }
        Ok(Some(Timeline {
            packed: read("pack", c.start.elapsed_ms(&c.packed))?,
            interior: read("interior", c.start.elapsed_ms(&c.interior))?,
            delivered,
            done: read("exterior", c.start.elapsed_ms(&c.done))?,
        }))
    }

    /// The phase times accumulated since timing was switched on.
    pub fn phase_times(&self) -> Option<PhaseTimes> {
        self.timing
            .as_ref()
            .map(|t| *t.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The extended lattice.
    pub fn extended(&self) -> &ExtendedLattice {
        &self.ext
    }

    /// The launch boxes.
    pub fn boxes(&self) -> &LaunchBoxes {
        &self.boxes
    }

    /// Bytes this rank sends per application.
    pub fn face_bytes(&self) -> usize {
        let faces = self.faces.lock().unwrap_or_else(|e| e.into_inner());
        faces
            .iter()
            .map(|f| f.send.values().len() + f.send.norms().map_or(0, |n| 4 * n.len()))
            .sum()
    }

    /// Fills the halos of `psi` (this rank's part of a field of parity `source` on the
    /// extended lattice) and runs `launch` over the interior box and each exterior slab,
    /// the interior during the exchange when overlap is on. `bc` is the fermions' global
    /// boundary condition (the faces carry its sign); `dagger`: the hop is the dagger
    /// knob's (projected faces carry the opposite projectors). `launch(b, ψ)` queues
    /// the sub-box kernel over `b.sites` reading ψ on `b.stream` (the GPU's stream, or
    /// the hop's boundary stream for the exterior slabs). A projected halo holds
    /// (1 ± γ_μ)ψ/2, which only the hop's own projection may read.
    ///
    /// With overlap on and a transport that exchanges direction by direction
    /// ([`DeviceTransport::per_direction`]: NCCL), each cut direction's exchange starts
    /// as soon as its packs are done, and its exterior slabs wait only for its own faces
    /// (and those of the directions before it, which its slabs read), not for the
    /// interior; otherwise the exchange completes as one group before the exteriors.
    #[allow(clippy::too_many_arguments)]
    pub fn apply<T: DeviceTransport + ?Sized>(
        &self,
        gpu: &Gpu,
        transport: &mut T,
        bc: &BoundaryConditions,
        psi: &mut DeviceField,
        source: Parity,
        dagger: bool,
        mut launch: impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
    ) -> Result<(), DistributedError> {
        let overlap = self.overlap && self.timing.is_none();
        let step = Step::new(gpu, transport.rank(), bc, source, dagger);
        let mut faces = self.faces.lock().unwrap_or_else(|e| e.into_inner());
        if overlap && self.per_direction && transport.per_direction() {
            return self.apply_per_direction(&step, transport, &mut faces, psi, &mut launch, None);
        }
        let mut clock = Clock::new(gpu, self.timing.is_some());
        let stream = gpu.backend().stream();
        let on = |sites: &SiteBox| BoxLaunch {
            sites: *sites,
            stream,
        };
        for f in faces.iter_mut() {
            self.pack(&step, stream, f, psi)?;
        }
        let pack = clock.lap()?;
        let (sends, mut recvs) = self.messages(step.rank, &mut faces);
        let operation = "distributed device hop: halo exchange";
        transport.packed(gpu, operation, &sends)?;
        if overlap {
            launch(&on(&self.boxes.interior), psi).map_err(op)?;
        }
        transport.post(gpu, operation, &sends, &recvs)?;
        transport.complete(gpu, operation, &sends, &mut recvs)?;
        drop(sends);
        drop(recvs);
        for f in faces.iter() {
            self.unpack(&step, stream, f, psi)?;
        }
        let exchange = clock.lap()?;
        if !overlap {
            launch(&on(&self.boxes.interior), psi).map_err(op)?;
        }
        let interior = clock.lap()?;
        for (_, slabs) in &self.boxes.exterior {
            for slab in slabs {
                launch(&on(slab), psi).map_err(op)?;
            }
        }
        let exterior = clock.lap()?;
        if let Some(t) = &self.timing {
            let mut t = t.lock().unwrap_or_else(|e| e.into_inner());
            t.pack += pack;
            t.exchange += exchange;
            t.interior += interior;
            t.exterior += exterior;
        }
        Ok(())
    }

    /// [`Self::apply`] through a CUDA graph where graphs are on ([`Self::with_graphs`])
    /// and the application is the overlapped per-direction one on a
    /// [`DeviceTransport::capturable`] transport (timing and the timeline off);
    /// otherwise exactly [`Self::apply`].
    ///
    /// `key` must tell apart everything `launch` reads and writes besides ψ (its output
    /// and input buffers, coefficients, launch shapes): a graph replays the launches
    /// with the arguments they were captured with (`None`: the caller cannot say, always
    /// eager). The hop adds ψ's buffers, `source` and `dagger`. A key's first
    /// [`super::EAGER_APPLICATIONS`] applications run eagerly, the next is captured and
    /// replayed, later ones are replayed ([`super::replay`]); each replay ends with a
    /// host wait for its faces' delivery bounded by the transport's timeout (a dead peer
    /// is an error naming it, never a hang), as the eager path ends.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_replayed<T: DeviceTransport + ?Sized>(
        &self,
        gpu: &Gpu,
        transport: &mut T,
        bc: &BoundaryConditions,
        psi: &mut DeviceField,
        source: Parity,
        dagger: bool,
        key: Option<u64>,
        mut launch: impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
    ) -> Result<(), DistributedError> {
        let (Some(replays), Some(key)) = (&self.replays, key) else {
            return self.apply(gpu, transport, bc, psi, source, dagger, launch);
        };
        let graphable = self.overlap
            && self.per_direction
            && self.timing.is_none()
            && self.clocks.is_none()
            && transport.per_direction()
            && transport.capturable();
        if !graphable {
            return self.apply(gpu, transport, bc, psi, source, dagger, launch);
        }
        let operation = "distributed device hop: a replayed application";
        let stream = gpu.backend().stream();
        let buffers = [
            psi.values().device_ptr(stream).0,
            psi.norms().map_or(0, |n| n.device_ptr(stream).0),
        ];
        let key = application_key(key, buffers, source as usize, dagger);
        let mut replays = replays.lock().unwrap_or_else(|e| e.into_inner());
        let replay = match replays.next(key) {
            Next::Eager => {
                drop(replays);
                return self.apply(gpu, transport, bc, psi, source, dagger, launch);
            }
            Next::Replay(replay) => replay,
            Next::Capture => {
                let began = Instant::now();
                let replay =
                    self.capture(gpu, transport, bc, psi, (source, dagger), &mut launch)?;
                replays.keep(key, replay, began.elapsed())
            }
        };
        replay
            .graph
            .launch()
            .map_err(|e| DistributedError::Operator(format!("{operation}: launching: {e}")))?;
        transport.finish_replay(gpu, operation, &replay.delivered)
    }

    /// The overlapped per-direction application captured into a CUDA graph on the GPU's
    /// stream (queued, not run), instantiated with the nodes keeping their streams'
    /// priorities: the exchange's stream is the highest, so NCCL's kernels and the
    /// unpacks are scheduled ahead of the interior's blocks, as when queued eagerly.
    fn capture<T: DeviceTransport + ?Sized>(
        &self,
        gpu: &Gpu,
        transport: &mut T,
        bc: &BoundaryConditions,
        psi: &mut DeviceField,
        (source, dagger): (Parity, bool),
        launch: &mut impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
    ) -> Result<Replay, DistributedError> {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        let operation = "distributed device hop: capturing an application";
        let driver = |what: &'static str| {
            move |e: cudarc::driver::DriverError| {
                DistributedError::Operator(format!("{operation}: {what}: {e}"))
            }
        };
        let step = Step::new(gpu, transport.rank(), bc, source, dagger);
        let mut faces = self.faces.lock().unwrap_or_else(|e| e.into_inner());
        let stream = gpu.backend().stream();
        let delivered = stream
            .context()
            .new_event(None)
            .map_err(driver("creating the delivery event"))?;
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(driver("beginning the capture"))?;
        let queued =
            self.apply_per_direction(&step, transport, &mut faces, psi, launch, Some(&delivered));
        // The capture ends whatever happened inside it (a stream left capturing refuses
        // all later work).
        let captured = stream
            .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
        queued?;
        let graph = captured
            .map_err(driver("ending the capture"))?
            .ok_or_else(|| {
                DistributedError::Operator(format!("{operation}: the capture is empty"))
            })?;
        Ok(Replay { graph, delivered })
    }

    /// The overlapped hop with one exchange per cut direction (see [`Self::apply`]). Where
    /// the transport delivers on a stream of its own ([`DeviceTransport::delivery_stream`]:
    /// NCCL), the packs and the exterior slabs run on the hop's boundary stream (of the
    /// highest priority) and the interior alone on the GPU's stream:
    ///
    /// ```text
    /// compute  : ─┬─ interior ─────────────────────────────────────────────┬─ (after the join)
    /// boundary :  └ pack(μ₀) P(μ₀) pack(μ₁) P(μ₁) … wait D(μ₀) exterior(μ₀) wait D(μ₁) exterior(μ₁) … ┘
    /// NCCL     :        └ wait P(μ₀) group(μ₀) unpack(μ₀) D(μ₀)  └ wait P(μ₁) group(μ₁) unpack(μ₁) D(μ₁) …
    /// ```
    ///
    /// so the packs start with the interior, not before it, and each direction's
    /// exterior slabs run as soon as its faces (and those of the directions before it,
    /// which its slabs read) were unpacked, beside the interior's last blocks instead of
    /// after them. The interior reads no halo site and writes no exterior site, so the
    /// three streams touch disjoint data; the GPU's stream waits for the boundary
    /// stream's last work before anything queued after the hop. Without a delivery
    /// stream everything runs on the GPU's stream: packs, interior, then per direction
    /// the wait, the unpacks and the exterior slabs.
    ///
    /// The host queues the interior right after the packs, before it posts the groups
    /// (NCCL's host-side enqueue takes tens of µs), so the GPU computes the interior
    /// while the host is still posting.
    ///
    /// `captured`: the GPU's stream is capturing a graph ([`Self::apply_replayed`]):
    /// everything is queued, nothing waited for (the transport's marks are sealed
    /// instead of finished), and the event is recorded in the graph at the last
    /// delivery ([`DeviceTransport::mark_replay_delivery`]).
    fn apply_per_direction<T: DeviceTransport + ?Sized>(
        &self,
        step: &Step<'_>,
        transport: &mut T,
        faces: &mut [Face],
        psi: &mut DeviceField,
        launch: &mut impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
        captured: Option<&CudaEvent>,
    ) -> Result<(), DistributedError> {
        let queued = self.queue_per_direction(step, transport, faces, psi, launch, captured);
        if captured.is_some() {
            transport.seal_directions();
            return queued;
        }
        let finished = queued.and_then(|()| transport.finish_directions(step.gpu, PER_DIRECTION));
        let delivered = transport.take_delivery_clocks();
        transport.clock_deliveries(false);
        if let Some(slot) = &self.clocks {
            if let Some(c) = slot.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                c.delivered = delivered;
            }
        }
        finished
    }

    /// Queues the overlapped per-direction application of [`Self::apply_per_direction`]
    /// (no host wait; the transport's marks left for the caller to finish or seal;
    /// `captured`: the replays' delivery event to record).
    fn queue_per_direction<T: DeviceTransport + ?Sized>(
        &self,
        step: &Step<'_>,
        transport: &mut T,
        faces: &mut [Face],
        psi: &mut DeviceField,
        launch: &mut impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
        captured: Option<&CudaEvent>,
    ) -> Result<(), DistributedError> {
        let operation = PER_DIRECTION;
        let clocked = self.clocks.is_some();
        let clock =
            |stream: &CudaStream, what: &str| -> Result<Option<CudaEvent>, DistributedError> {
                if !clocked {
                    return Ok(None);
                }
                let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
                stream
                    .record_event(Some(flags))
                    .map(Some)
                    .map_err(|e| DistributedError::Operator(format!("clocking the {what}: {e}")))
            };
        transport.clock_deliveries(clocked);
        let compute = step.gpu.backend().stream().clone();
        let delivery = transport.delivery_stream();
        let boundary = match delivery {
            Some(_) => self.boundary_stream(step.gpu)?,
            None => compute.clone(),
        };
        let forked = !Arc::ptr_eq(&boundary, &compute);
        if forked {
            follow(&boundary, &compute, "forking the boundary stream")?;
        }
        let began = clock(&boundary, "start")?;
        // The faces are stored direction by direction (both sides of μ together).
        let mut directions = Vec::new();
        let mut start = 0;
        while start < faces.len() {
            let mu = faces[start].mu;
            let end = start + faces[start..].iter().take_while(|f| f.mu == mu).count();
            for f in faces[start..end].iter_mut() {
                self.pack(step, &boundary, f, psi)?;
            }
            transport.mark_packs(&boundary)?;
            directions.push((mu, start..end));
            start = end;
        }
        let packed = clock(&boundary, "packs")?;
        let interior_box = BoxLaunch {
            sites: self.boxes.interior,
            stream: &compute,
        };
        launch(&interior_box, psi).map_err(op)?;
        let interior = clock(&compute, "interior")?;
        // Where the transport has a delivery stream, each direction's faces are unpacked
        // there as soon as they arrive, beside the interior (which reads no halo site),
        // and the direction's mark covers the unpacks.
        let mut marks = Vec::with_capacity(directions.len());
        for (mu, range) in directions {
            let (sends, mut recvs) = self.messages(step.rank, &mut faces[range.clone()]);
            let mark = transport.post_direction(step.gpu, operation, &sends, &mut recvs)?;
            drop((sends, recvs));
            if let Some(stream) = &delivery {
                for f in &faces[range.clone()] {
                    self.unpack(step, stream, f, psi)?;
                }
                transport.extend_direction(mark)?;
            }
            marks.push((mu, range, mark));
        }
        if let Some(delivered) = captured {
            transport.mark_replay_delivery(delivered)?;
        }
        for (mu, range, mark) in marks {
            transport.await_direction(&boundary, mark)?;
            if delivery.is_none() {
                for f in &faces[range] {
                    self.unpack(step, &boundary, f, psi)?;
                }
            }
            for (_, slabs) in self.boxes.exterior.iter().filter(|(m, _)| *m == mu) {
                for slab in slabs {
                    let exterior = BoxLaunch {
                        sites: *slab,
                        stream: &boundary,
                    };
                    launch(&exterior, psi).map_err(op)?;
                }
            }
        }
        if forked {
            follow(&compute, &boundary, "joining the boundary stream")?;
        }
        let done = clock(&compute, "exterior")?;
        if let (Some(slot), Some(start), Some(packed), Some(interior), Some(done)) =
            (&self.clocks, began, packed, interior, done)
        {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(Clocks {
                start,
                packed,
                interior,
                delivered: Vec::new(),
                done,
            });
        }
        Ok(())
    }

    /// The boundary stream of [`Self::apply_per_direction`], made on first use: a stream
    /// of the highest priority ([`super::exchange_stream`]), so the packs and the
    /// exterior slabs are scheduled ahead of the interior's blocks.
    fn boundary_stream(&self, gpu: &Gpu) -> Result<Arc<CudaStream>, DistributedError> {
        let mut slot = self.boundary.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stream) = slot.as_ref() {
            return Ok(stream.clone());
        }
        let stream = super::exchange_stream(gpu.backend().context()).map_err(|e| {
            DistributedError::Operator(format!("making the hop's boundary stream: {e}"))
        })?;
        *slot = Some(stream.clone());
        Ok(stream)
    }

    /// Queues on `stream` the pack of face `f` of ψ (its sign, its projection).
    fn pack(
        &self,
        step: &Step<'_>,
        stream: &CudaStream,
        f: &mut Face,
        psi: &DeviceField,
    ) -> Result<(), DistributedError> {
        let dec = self.ext.decomposition();
        let sign = if face_negated(dec, step.bc, step.rank, f.mu, f.side) {
            -1.0
        } else {
            1.0
        };
        self.kernels
            .pack(
                stream,
                self.ext.extended(),
                psi,
                (step.parity, &f.boundary, self.ls),
                f.sent_projection[usize::from(step.dagger)],
                sign,
                &mut f.send,
            )
            .map_err(|e| op(e.into()))
    }

    /// Queues on `stream` (the GPU's, or the transport's delivery stream) the unpack of
    /// face `f`'s received buffer into ψ's halo.
    fn unpack(
        &self,
        step: &Step<'_>,
        stream: &cudarc::driver::CudaStream,
        f: &Face,
        psi: &mut DeviceField,
    ) -> Result<(), DistributedError> {
        self.kernels
            .unpack(
                stream,
                self.ext.extended(),
                &f.recv,
                (step.parity, &f.halo, self.ls),
                f.halo_projection[usize::from(step.dagger)],
                psi,
            )
            .map_err(|e| op(e.into()))
    }

    /// The sends and receives of `faces` (peer, tag, buffer).
    fn messages<'f>(
        &self,
        rank: usize,
        faces: &'f mut [Face],
    ) -> (Vec<FaceSend<'f>>, Vec<FaceRecv<'f>>) {
        let dec = self.ext.decomposition();
        faces
            .iter_mut()
            .map(|f| {
                let peer = dec.neighbour(rank, f.mu, f.side);
                (
                    FaceSend::of(peer, face_tag(f.mu, f.side), &f.send),
                    FaceRecv::into_field(peer, face_tag(f.mu, f.side.opposite()), &mut f.recv),
                )
            })
            .unzip()
    }
}

/// What one application's face kernels share.
struct Step<'a> {
    gpu: &'a Gpu,
    rank: usize,
    bc: &'a BoundaryConditions,
    /// The source field's parity.
    parity: usize,
    dagger: bool,
}

impl<'a> Step<'a> {
    fn new(
        gpu: &'a Gpu,
        rank: usize,
        bc: &'a BoundaryConditions,
        source: Parity,
        dagger: bool,
    ) -> Self {
        Self {
            gpu,
            rank,
            bc,
            parity: source as usize,
            dagger,
        }
    }
}

/// Makes the work queued next on `later` wait for the work queued so far on `earlier`
/// (two streams of one context).
fn follow(later: &CudaStream, earlier: &CudaStream, what: &str) -> Result<(), DistributedError> {
    let mark = earlier
        .record_event(None)
        .map_err(|e| DistributedError::Operator(format!("{what}: {e}")))?;
    later
        .wait(&mark)
        .map_err(|e| DistributedError::Operator(format!("{what}: {e}")))
}

fn op(e: OperatorError) -> DistributedError {
    DistributedError::Operator(e.to_string())
}

/// Lap times of synchronised phases (no synchronisation when off).
struct Clock<'g> {
    gpu: &'g Gpu,
    on: bool,
    last: Instant,
}

impl<'g> Clock<'g> {
    fn new(gpu: &'g Gpu, on: bool) -> Self {
        Self {
            gpu,
            on,
            last: Instant::now(),
        }
    }

    fn lap(&mut self) -> Result<Duration, DistributedError> {
        if !self.on {
            return Ok(Duration::ZERO);
        }
        self.gpu
            .backend()
            .stream()
            .synchronize()
            .map_err(|e| DistributedError::Operator(format!("synchronising a phase: {e}")))?;
        let now = Instant::now();
        let lap = now - self.last;
        self.last = now;
        Ok(lap)
    }
}
