//! The distributed operators on the GPU: the faces of a rank's device field packed and
//! unpacked by generated kernels ([`DeviceFaces`], from
//! [`qdsl_core::dsl::emit::cuda::face`]), exchanged through a [`DeviceTransport`]
//! (direct peer copies between the GPUs of one process, [`PeerTransport`]; NCCL on
//! device buffers; or any host [`Communicator`](crate::comm::Communicator): several
//! ranks on one GPU), and the hop kernel's
//! [`Region::SubBox`](qdsl_core::dsl::variant::Region::SubBox) variant launched over the
//! interior (overlapping the exchange) and the exterior slabs
//! ([`DeviceDistributedHop`]).
//!
//! # Why the result equals the single-GPU hop bit for bit (f64)
//! The sub-box kernel is the whole-parity kernel with another thread → site map (the
//! generator changes only the prologue); on the extended lattice each interior site reads
//! the same operands in the same order as on one GPU (see [`super`]): in a cut direction
//! the neighbour's value from the halo (negated by the sender across an antiperiodic
//! global boundary, where the one-GPU kernel negates the product: IEEE arithmetic is
//! symmetric under sign), elsewhere the local wrap. Faces move exactly in f64 and f32
//! (and in a fixed-point format sent as itself); fixed16 faces of an f32 field round the
//! halo to fixed16 (within its bound).
//!
//! # Not yet here
//! The exterior slabs wait for all faces (the transports complete the exchange as one
//! group), not each for its own — the slab of direction μ reads halos of μ and earlier
//! directions only, so per-face delivery marks of the peer transport could let each
//! direction's slabs start as its faces land; the exchange is timed only with the phases
//! serialised.

mod blocks;
mod faces;
#[cfg(test)]
mod gpu_tests;
mod hop;
mod peer;
mod transport;

pub use blocks::{
    global_sum, lock_transport, share_transport, DeviceHopDistribution, RankDistribution,
    SharedTransport,
};
pub use faces::DeviceFaces;
pub use hop::{DeviceDistributedHop, PhaseTimes};
pub use peer::{
    exchange_stream, peer_access_between, CopyEngine, GpuCopyEngine, PeerMessage, PeerProtocol,
    PeerTransport,
};
pub use transport::{DeviceTransport, FaceRecv, FaceSend, HostStaged, NcclTransport};
