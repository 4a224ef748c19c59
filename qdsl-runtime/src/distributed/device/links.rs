//! [`DeviceLinkHalo`]: the one exchange of an extended-volume smearing
//! ([`crate::distributed::smear`]) on the GPU — the thin links' halo of faces, edges and
//! corners filled in place on the device, through any [`DeviceTransport`].
//!
//! The links live on the device in the host layout (link 4·cb + μ of the extended
//! lattice at reals 18·(4·cb + μ), what [`crate::smear::GpuSmearer::smear_device_links`]
//! reads: [`SiteRecords::links`]). As on the host
//! ([`crate::distributed::exchange_halos`] with [`HaloShape::FacesAndCorners`]), the cut
//! directions are exchanged one after the other, and the slab sent along μ spans the
//! halos of the directions exchanged before μ, so the edges and corners arrive in the
//! later rounds. Unlike the host's slabs (the whole extended lattice in the other
//! directions), a slab spans only the local range in the directions exchanged after μ:
//! every halo site is received once ([`ExtendedSmearCost`] bytes). The rounds and the
//! box copies are [`BoxHalo`]'s.
//!
//! [`ExtendedSmearCost`]: crate::distributed::smear::ExtendedSmearCost

use super::box_halo::{BoxHalo, SiteRecords};
use super::transport::DeviceTransport;
use crate::device::Gpu;
use crate::distributed::DistributedError;
use crate::smear::GpuReal;
use cudarc::driver::CudaSlice;
use qdsl_core::lattice::{ExtendedLattice, HaloShape};

/// The device exchange of the thin links' halo (module docs) on one rank's extended
/// lattice, as deep as the lattice's halo, for links of `T`.
#[derive(Debug)]
pub struct DeviceLinkHalo<T> {
    halo: BoxHalo<T>,
}

impl<T: GpuReal> DeviceLinkHalo<T> {
    /// The exchange on `ext` (its depth: the smearing's reach, checked by the caller with
    /// [`crate::distributed::smear::check_smearing_depth`]), its kernels compiled on
    /// `gpu`.
    pub fn new(gpu: &Gpu, ext: ExtendedLattice) -> Result<Self, DistributedError> {
        Ok(Self {
            halo: BoxHalo::new(gpu, ext, HaloShape::FacesAndCorners, ext.depth())?,
        })
    }

    /// Bytes of thin links this rank receives per exchange.
    pub fn halo_bytes(&self) -> usize {
        self.halo.halo_bytes(SiteRecords::links().reals)
    }

    /// Fills the halo of `links` (this rank's thin links on the extended lattice, host
    /// layout, phases and boundary signs folded in) with its neighbours' links: one
    /// grouped exchange per cut direction through `transport`, queued on the GPU's
    /// stream. Every rank calls it together.
    pub fn exchange<X: DeviceTransport + ?Sized>(
        &mut self,
        gpu: &Gpu,
        transport: &mut X,
        links: &mut CudaSlice<T>,
    ) -> Result<(), DistributedError> {
        let operation = "decomposed smearing: thin links on the device";
        let lattice = self.halo.lattice();
        let expected = SiteRecords::links().span(lattice.volume());
        if links.len() != expected {
            return Err(DistributedError::Operator(format!(
                "{operation}: {} reals of links given, the extended lattice {lattice} holds \
                 {expected}",
                links.len()
            )));
        }
        self.halo
            .exchange(gpu, transport, links, SiteRecords::links(), operation)
    }
}
