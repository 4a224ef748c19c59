//! [`StandardSmearing`]: the "standard" decomposed smearing (Shi et al.'s comparison to
//! the extended volume): every kernel of the staged plan runs over the rank's own sites
//! only, and the staple fields a pass writes have their halo filled from the neighbours
//! before the next level reads them — an exchange per staple level and link direction,
//! no redundant work.
//!
//! For each smearing of a spec whose staged plan has P passes:
//!
//! 1. the thin links' halo, as deep as the spec's paths reach with faces and corners
//!    ([`super::DeviceLinkHalo`]; the root's inline cores — Lepage's +2ν, the Naik
//!    link's +2μ — read the thin links that far), is filled once by the caller, as for
//!    the extended volume;
//! 2. per link direction μ, each pass over the local sites
//!    ([`GpuSmearer::enqueue_boxed`]), then the halo of the slots it wrote
//!    ([`BoxHalo`] of [`SiteRecords::field_slots`]): as deep as the plan reads its fields
//!    ([`Staging::field_reach`]: faces one layer deep for asqtad and fat7, whose levels
//!    read the level below at x ± ŝ), 4·P exchanges per smearing;
//! 3. the root over the local sites.
//!
//! **Overlap** (`enqueue(…, overlap: true)`, through a transport that delivers on a
//! stream of its own — NCCL — and where x is not cut): each field exchange is posted
//! ([`BoxHalo::post`]: packs on the GPU's stream, the exchange and the unpacks on the
//! transport's delivery stream), the next kernel runs first over the sites that read no
//! field halo (the interior box), the GPU's stream then waits for the delivery, and the
//! kernel finishes over the boundary slabs. On 2 × H200 at 32⁴ (t cut) this takes the
//! field exchanges from ~1.35 ms to ~0.9 ms of a smearing, the standard way level with
//! the extended volume in f32 (72 % against 72 %) and ahead in f64 (78 % against 75 %).
//!
//! Each local site's kernels read the same operands in the same order as on one GPU
//! (the halo values are the neighbours' own results, computed from the same operands),
//! so the links equal the single-GPU and the extended-volume ones bit for bit.
//!
//! Asqtad's fat links in f32 on 32⁴ cut in t over 2 ranks: 8 field exchanges of
//! 2 · 32³ sites · 54 reals · 4 B = 14.2 MB each (113 MB per smearing), against the
//! extended volume's 1.125× redundant sites (halo 2) and no field exchange.

use super::box_halo::{BoxHalo, SiteRecords};
use super::transport::DeviceTransport;
use crate::device::{DeviceError, Gpu};
use crate::distributed::smear::{check_smearing_depth, interior_part};
use crate::distributed::DistributedError;
use crate::smear::{GpuReal, GpuSmearer, SmearBuffers, StageHooks};
use crate::tune::Tuner;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::paths::Staging;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{ExtendedLattice, HaloShape, SiteBox};

/// The "standard" decomposed smearing on one rank's extended lattice (module docs), for
/// links of `T`.
#[derive(Debug)]
pub struct StandardSmearing<T> {
    ext: ExtendedLattice,
    /// The rank's own sites on the extended lattice.
    sites: SiteBox,
    /// The staple fields' halo (`None` when no plan stores a field).
    fields: Option<BoxHalo<T>>,
}

impl<T: GpuReal> StandardSmearing<T> {
    /// The standard smearing of `smearers`' specs on `ext`, whose depth must cover
    /// their paths' reach ([`check_smearing_depth`]) and their fields' reads; the field
    /// halo's kernels compiled on `gpu`.
    pub fn new(
        gpu: &Gpu,
        ext: ExtendedLattice,
        smearers: &[&GpuSmearer<T>],
    ) -> Result<Self, DistributedError> {
        let specs: Vec<_> = smearers.iter().map(|s| s.tree().spec.clone()).collect();
        check_smearing_depth(&ext, &specs)?;
        let reach = smearers
            .iter()
            .map(|s| Staging::new(s.tree()).field_reach())
            .max()
            .unwrap_or(0);
        let fields = match reach {
            0 => None,
            // One step from the kernel's site: faces; farther, edges and corners too.
            1 => Some(BoxHalo::new(gpu, ext, HaloShape::Faces, 1)?),
            r => Some(BoxHalo::new(gpu, ext, HaloShape::FacesAndCorners, r)?),
        };
        Ok(Self {
            sites: SiteBox {
                lo: ext.margin(),
                n: ext.local().dims(),
            },
            ext,
            fields,
        })
    }

    /// The rank's own sites on the extended lattice, the box every kernel runs over.
    pub fn sites(&self) -> &SiteBox {
        &self.sites
    }

    /// Field exchanges and the bytes this rank receives in them per smearing of
    /// `smearer` (4 link directions × each pass's slots).
    pub fn field_traffic(&self, smearer: &GpuSmearer<T>) -> (usize, usize) {
        let Some(halo) = &self.fields else {
            return (0, 0);
        };
        let staging = Staging::new(smearer.tree());
        let passes = staging.passes();
        let bytes = passes
            .iter()
            .map(|&i| 4 * halo.halo_bytes(18 * staging.nodes[i].slots_per_mu()))
            .sum();
        (4 * passes.len() * halo.rounds(), bytes)
    }

    /// Queues `smearer`'s standard smearing with tadpole factor `u0` from `bufs`'s input
    /// (the rank's thin links on the extended lattice with their halo filled, encoded:
    /// [`GpuSmearer::encode_device_links`]) into its output, the fields' halos through
    /// `transport`; the output's halo sites are not written. Every rank calls it together.
    ///
    /// With `overlap` and a transport that delivers on a stream of its own (NCCL), and
    /// where the boxes allow it ([`Self::overlap_boxes`]), each kernel after a pass runs
    /// first over the sites that read no field halo while that halo travels, then over
    /// the boundary slabs; otherwise each exchange completes before the next kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue<X: DeviceTransport + ?Sized>(
        &mut self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        transport: &mut X,
        smearer: &GpuSmearer<T>,
        bufs: &mut SmearBuffers<T>,
        u0: f64,
        overlap: bool,
    ) -> Result<(), DistributedError> {
        let name = &smearer.tree().spec.name;
        let boxes = match (overlap, self.overlap_boxes(transport)) {
            (true, Some(boxes)) => boxes,
            _ => vec![self.sites],
        };
        let mut hooks = FieldHooks {
            gpu,
            transport,
            halo: self.fields.as_mut(),
            volume: self.ext.extended().volume(),
            operation: format!("standard smearing `{name}`: the staple fields' halo"),
            posted: boxes.len() > 1,
            pending: None,
            failure: None,
        };
        let result = smearer.enqueue_boxed_with(gpu, tuner, bufs, &boxes, u0, &mut hooks);
        let finished = match hooks.posted {
            true => hooks
                .transport
                .finish_directions(gpu, &hooks.operation)
                .map_err(Some),
            false => Ok(()),
        };
        match (result, hooks.failure, finished) {
            (Ok(()), _, Ok(())) => Ok(()),
            // The exchange's own error (a timeout naming the peer), not its string.
            (Err(_), Some(e), _) | (Ok(()), Some(e), _) => Err(e),
            (Ok(()), None, Err(e)) => Err(e.expect("an exchange error")),
            (Err(e), None, _) => Err(DistributedError::Operator(format!("{name}: {e}"))),
        }
    }

    /// The boxes of an overlapped run through `transport`: the rank's sites that read no
    /// field halo (the extended lattice's interior box), then the boundary slabs of the
    /// cut directions ([`ExtendedLattice::launch_boxes`]), the empty ones left out;
    /// `None` where the fields' halo cannot be posted through `transport`
    /// ([`BoxHalo::can_post`]), the interior is empty, the boxes do not cover the own
    /// sites once, or x is cut: the slabs of an x cut are a few sites thick along x, and
    /// the staged kernels' threads walk a box x fastest, so their reads scatter (the
    /// overlapped run measured 2× slower than the serial one on 2,1,1,1, BENCHMARKS.md
    /// 2026-11-29 (g)).
    pub fn overlap_boxes<X: DeviceTransport + ?Sized>(
        &self,
        transport: &X,
    ) -> Option<Vec<SiteBox>> {
        let x_cut = self.ext.decomposition().grid().is_cut(0);
        if x_cut || !self.fields.as_ref()?.can_post(transport) {
            return None;
        }
        let launch = self.ext.launch_boxes();
        if launch.interior.is_empty() {
            return None;
        }
        let boxes: Vec<SiteBox> = std::iter::once(launch.interior)
            .chain(launch.exterior.iter().flat_map(|(_, slabs)| *slabs))
            .filter(|b| !b.is_empty())
            .collect();
        // Disjoint, covering the own sites once (a local extent below twice the depth
        // makes the slabs overlap).
        let once = boxes.iter().map(SiteBox::volume).sum::<usize>() == self.sites.volume();
        (once && boxes.len() > 1).then_some(boxes)
    }

    /// `smearer`'s links of this rank from its thin links `links` on the extended
    /// lattice (host layout, halo filled by [`super::DeviceLinkHalo`]): encoded,
    /// smeared ([`Self::enqueue`]), downloaded and trimmed to the rank's own links
    /// ([`interior_part`]).
    pub fn smear<X: DeviceTransport + ?Sized>(
        &mut self,
        gpu: &Gpu,
        tuner: Option<&Tuner>,
        transport: &mut X,
        smearer: &GpuSmearer<T>,
        links: &CudaSlice<T>,
        u0: f64,
    ) -> Result<GaugeField<T>, DistributedError> {
        let device = |e: DeviceError| DistributedError::Operator(e.to_string());
        let lattice = *self.ext.extended();
        let expected = 4 * 18 * lattice.volume();
        if links.len() != expected {
            return Err(DistributedError::WrongLattice {
                what: "thin links on the device",
                expected: format!("{expected} reals ({lattice})"),
                found: format!("{} reals", links.len()),
            });
        }
        let mut bufs = smearer.buffers(gpu, &lattice).map_err(device)?;
        smearer
            .encode_device_links(gpu, links, &mut bufs)
            .map_err(device)?;
        self.enqueue(gpu, tuner, transport, smearer, &mut bufs, u0, true)?;
        let smeared = smearer.download(gpu, &bufs).map_err(device)?;
        interior_part(smeared, &self.ext)
    }
}

/// The hooks of a standard smearing's boxed run: after each pass the fields' halo
/// exchanged (completed at once, or posted, with `posted`, and awaited before the next
/// kernel's boundary slabs).
struct FieldHooks<'a, T, X: ?Sized> {
    gpu: &'a Gpu,
    transport: &'a mut X,
    halo: Option<&'a mut BoxHalo<T>>,
    volume: usize,
    operation: String,
    /// Whether the exchanges are posted (the overlapped run).
    posted: bool,
    /// The delivery mark of the last posted exchange, not yet awaited.
    pending: Option<usize>,
    /// The first exchange error, kept whole (the runner sees its message).
    failure: Option<DistributedError>,
}

impl<T: GpuReal, X: DeviceTransport + ?Sized> FieldHooks<'_, T, X> {
    /// `result`'s error kept in `failure`, its message for the runner.
    fn keep<R>(&mut self, result: Result<R, DistributedError>) -> Result<R, DeviceError> {
        result.map_err(|e| {
            let message = e.to_string();
            self.failure.get_or_insert(e);
            DeviceError::Shape(message)
        })
    }
}

impl<T: GpuReal, X: DeviceTransport + ?Sized> StageHooks<T> for FieldHooks<'_, T, X> {
    fn after_pass(
        &mut self,
        fields: &mut CudaSlice<T>,
        slots: std::ops::Range<usize>,
    ) -> Result<(), DeviceError> {
        let Some(halo) = self.halo.as_deref_mut() else {
            return Ok(());
        };
        let records = SiteRecords::field_slots(slots, self.volume);
        let result = match self.posted {
            true => halo
                .post(self.gpu, self.transport, fields, records, &self.operation)
                .map(Some),
            false => halo
                .exchange(self.gpu, self.transport, fields, records, &self.operation)
                .map(|()| None),
        };
        self.pending = self.keep(result)?;
        Ok(())
    }

    fn before_rest(&mut self) -> Result<(), DeviceError> {
        let Some(mark) = self.pending.take() else {
            return Ok(());
        };
        let stream = self.gpu.backend().stream();
        let result = self.transport.await_direction(stream, mark);
        self.keep(result)
    }
}
