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
//! # Faces
//! Wilson-type hops send spin-projected half spinors (half the bytes, still bit for bit:
//! [`qdsl_core::dsl::halo_spin`]); with NCCL and overlap on, each cut direction's faces
//! travel as their own group right after their packs, and that direction's exterior
//! slabs wait only for them ([`DeviceTransport::per_direction`]): the packs and the
//! exterior slabs run on the hop's boundary stream beside the interior.
//!
//! # Thin links of an extended-volume smearing
//! [`DeviceLinkHalo`] fills the halo of faces, edges and corners of a rank's thin links
//! on the device (one grouped exchange per cut direction through the same transports),
//! for [`crate::distributed::smear::smear_extended_device`]. [`StandardSmearing`] is the
//! other way: each rank smears its own sites only, the staple fields' halos exchanged
//! between the staged plan's passes. Both fill halos with [`BoxHalo`], box copies of any
//! record layout ([`SiteRecords`]).
//!
//! # CUDA graphs
//! With NCCL, an overlapped application can be captured once into a CUDA graph and
//! replayed ([`DeviceDistributedHop::with_graphs`], [`DeviceDistributedHop::apply_replayed`];
//! module `replay`): one graph launch instead of ~10 launches and NCCL calls, the
//! arithmetic unchanged (the same kernels, operands and order: bit for bit). The GPU
//! must be opened with a stream of its own ([`crate::device::Gpu::open_capturable`]);
//! `qdsl solve --grid` and `qdsl bench --grid` do so for NCCL ranks (`QDSL_GRAPHS=0`
//! turns the solves' graphs off).
//!
//! # Not yet here
//! The peer and host transports still complete the exchange as one group; the packs of
//! all faces are separate launches (one per face), as are the exterior slabs (two per
//! cut direction).

mod blocks;
mod box_halo;
mod faces;
#[cfg(test)]
mod gpu_tests;
mod hop;
mod links;
mod peer;
mod replay;
mod standard;
mod transport;

pub use blocks::{
    global_sum, hop_launch_key, lock_transport, share_transport, DeviceHopDistribution,
    RankDistribution, SharedTransport,
};
pub use box_halo::{BoxHalo, SiteRecords};
pub use faces::DeviceFaces;
pub use hop::{DeviceDistributedHop, PhaseTimes, Timeline};
pub use links::DeviceLinkHalo;
pub use peer::{
    exchange_stream, peer_access_between, CopyEngine, GpuCopyEngine, PeerMessage, PeerProtocol,
    PeerTransport,
};
pub use replay::{EAGER_APPLICATIONS, MAX_GRAPHS};
pub use standard::StandardSmearing;
pub use transport::{DeviceTransport, FaceRecv, FaceSend, HostStaged, NcclTransport};
