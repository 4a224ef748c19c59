//! [`DeviceHopDistribution`]: what the device even-odd blocks
//! ([`crate::operator::DeviceHopBlocks`], [`crate::operator::DeviceCloverBlocks`]) of one
//! rank need to make each hop distributed — the face exchange and the sub-box launches
//! of [`DeviceDistributedHop`], the shared transport, and a scratch copy of the hop's
//! input that receives the halos (the input itself, a solver vector, keeps its halo
//! sites zero: see [`crate::distributed::DistributedField`]'s invariant, which the device
//! vectors of a distributed solve keep the same way).

use super::{DeviceDistributedHop, DeviceTransport};
use crate::device::gpu::driver;
use crate::device::Gpu;
use crate::device::{DeviceError, DeviceField};
use crate::distributed::DistributedError;
use crate::operator::device::{BoxLaunch, DeviceRun, OperatorError};
use crate::operator::even_odd::Xpay;
use qdsl_core::dsl::halo_spin::HaloProjections;
use qdsl_core::dsl::variant::{Region, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, Lattice, Parity};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// A rank's transport, shared by its operators' hops and its vectors' global sums
/// (collectives issued one at a time, in program order).
pub type SharedTransport = Arc<Mutex<Box<dyn DeviceTransport + Send>>>;

/// Shares `transport`.
pub fn share_transport(transport: impl DeviceTransport + Send + 'static) -> SharedTransport {
    Arc::new(Mutex::new(Box::new(transport)))
}

/// Locks the transport (a holder that panicked leaves nothing half-done that a later
/// collective could see: messages are matched by tag).
pub fn lock_transport(t: &SharedTransport) -> MutexGuard<'_, Box<dyn DeviceTransport + Send>> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// The global sum of a device context ([`crate::solver::device::DeviceContext::distributed`])
/// through `transport`: every rank's partials added in rank order.
pub fn global_sum(transport: SharedTransport) -> crate::solver::device::GlobalSum {
    Box::new(move |operation: &str, values: &[f64]| {
        lock_transport(&transport)
            .all_reduce_sum_f64(operation, values)
            .map_err(|e| e.to_string())
    })
}

/// One rank's distribution of an operator's hops (module docs).
pub struct DeviceHopDistribution {
    hop: DeviceDistributedHop,
    transport: SharedTransport,
    /// The boundary conditions the fermion faces carry.
    faces: BoundaryConditions,
    /// The hop input with halos, by the source parity [even, odd].
    scratch: Mutex<[Option<DeviceField>; 2]>,
}

impl fmt::Debug for DeviceHopDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceHopDistribution")
            .field("hop", &self.hop)
            .field("faces", &self.faces)
            .finish()
    }
}

impl DeviceHopDistribution {
    /// The distribution of hops through `hop` and `transport` for fermions of time
    /// boundary `boundary` (the faces crossing the global time boundary carry its sign;
    /// the kernels then run periodic in a cut t:
    /// [`crate::distributed::kernel_boundary`]).
    pub fn new(
        hop: DeviceDistributedHop,
        transport: SharedTransport,
        boundary: TimeBoundary,
    ) -> Arc<Self> {
        let faces = match boundary {
            TimeBoundary::Periodic => BoundaryConditions::periodic(),
            TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
        };
        Arc::new(Self {
            hop,
            transport,
            faces,
            scratch: Mutex::new([None, None]),
        })
    }

    /// The distributed hop (its phase times, face bytes and boxes).
    pub fn hop(&self) -> &DeviceDistributedHop {
        &self.hop
    }

    /// The replay key of a hop kernel's launches that write `out` (and read the xpay
    /// operand) with the dagger flag `dagger` ([`hop_launch_key`]) where the hop's graphs
    /// are on; `None` (nothing to hash) where they are off.
    pub fn launch_key(
        &self,
        gpu: &Gpu,
        out: &DeviceField,
        xpay: Option<Xpay<'_, DeviceField>>,
        dagger: bool,
    ) -> Option<u64> {
        self.hop
            .graphs()
            .then(|| hop_launch_key(gpu, out, xpay, dagger))
    }

    /// The hop to output parity `r` of `psi` (parity r̄; `dagger`: the kernel's dagger
    /// knob, which flips projected faces' projectors): ψ copied into the scratch
    /// field of its parity, whose halos [`DeviceDistributedHop::apply`] fills before it
    /// runs `launch(box, ψ with halos)` over the interior and the exterior slabs.
    ///
    /// `key`: where the caller can name everything `launch` reads and writes besides
    /// the scratch ψ ([`hop_launch_key`]), the application is replayed from a CUDA graph
    /// when the hop's graphs are on ([`RankDistribution::graphs`],
    /// [`DeviceDistributedHop::apply_replayed`]); `None`: always queued eagerly.
    pub fn apply(
        &self,
        cx: DeviceRun<'_>,
        r: Parity,
        psi: &DeviceField,
        dagger: bool,
        key: Option<u64>,
        launch: impl FnMut(&BoxLaunch<'_>, &DeviceField) -> Result<(), OperatorError>,
    ) -> Result<(), OperatorError> {
        let source = r.opposite();
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let slot = &mut scratch[source as usize];
        if slot.as_ref().is_none_or(|s| s.layout() != psi.layout()) {
            *slot = Some(DeviceField::zeros(cx.gpu, *psi.layout())?);
        }
        let halo = slot.as_mut().expect("allocated above");
        copy_field(cx, psi, halo)?;
        let mut transport = lock_transport(&self.transport);
        let applied = self.hop.apply_replayed(
            cx.gpu,
            &mut **transport,
            &self.faces,
            halo,
            source,
            dagger,
            key,
            launch,
        );
        applied.map_err(|e| match e {
            DistributedError::Operator(m) => OperatorError::Device(DeviceError::Shape(m)),
            e => OperatorError::Device(DeviceError::Driver {
                what: "distributed hop".into(),
                message: e.to_string(),
            }),
        })
    }
}

/// The replay key ([`DeviceHopDistribution::apply`]) of a hop kernel's launches that
/// write `out` (and read the xpay operand x, with its factors a and b) with the dagger
/// flag `dagger`: with the operator's own links and lattice, everything its launches
/// read and write besides the scratch ψ.
pub fn hop_launch_key(
    gpu: &Gpu,
    out: &DeviceField,
    xpay: Option<Xpay<'_, DeviceField>>,
    dagger: bool,
) -> u64 {
    use cudarc::driver::DevicePtr;
    use std::hash::{Hash, Hasher};
    let stream = gpu.backend().stream();
    let address = |f: &DeviceField| {
        (
            f.values().device_ptr(stream).0,
            f.norms().map_or(0, |n| n.device_ptr(stream).0),
        )
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (address(out), dagger).hash(&mut h);
    if let Some(Xpay { a, x, b }) = xpay {
        (a.to_bits(), address(x), b.to_bits()).hash(&mut h);
    }
    h.finish()
}

/// dst ← src, byte for byte (values and norms), on the GPU's stream.
fn copy_field(
    cx: DeviceRun<'_>,
    src: &DeviceField,
    dst: &mut DeviceField,
) -> Result<(), DeviceError> {
    let stream = cx.gpu.backend().stream();
    let (values, norms) = dst.buffers_mut();
    stream
        .memcpy_dtod(src.values(), values)
        .map_err(driver("copying a hop input"))?;
    if let (Some(s), Some(d)) = (src.norms(), norms) {
        stream
            .memcpy_dtod(s, d)
            .map_err(driver("copying a hop input's norms"))?;
    }
    Ok(())
}

/// What a rank's device operators need to be distributed: its extended lattice, its
/// shared transport, whether the interior overlaps the exchange, and whether f32 fields
/// send fixed16 faces (half the bytes, within fixed16's bound).
#[derive(Clone)]
pub struct RankDistribution {
    /// The rank's extended lattice (the operators' fields live on it).
    pub ext: ExtendedLattice,
    /// The transport of the faces and of the global sums.
    pub transport: SharedTransport,
    /// The interior launched while the faces travel.
    pub overlap: bool,
    /// f32 fields exchange fixed16 faces.
    pub fixed16_faces: bool,
    /// Wilson-type hops exchange spin-projected faces (half spinors: half the bytes,
    /// bit-identical; [`qdsl_core::dsl::halo_spin`]).
    pub projected_faces: bool,
    /// The Möbius M̂ runs QUDA's fused `fused5d!` chains over the interior and exterior
    /// boxes where every box pairs its sites (else, or off: its blocks one by one).
    pub fused_chains: bool,
    /// The Wilson-type and staggered hops are replayed from CUDA graphs
    /// ([`DeviceDistributedHop::with_graphs`]; needs a GPU opened with
    /// [`Gpu::open_capturable`] and a capturable transport, else it changes nothing).
    pub graphs: bool,
}

impl fmt::Debug for RankDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RankDistribution")
            .field("ext", &self.ext)
            .field("overlap", &self.overlap)
            .field("fixed16_faces", &self.fixed16_faces)
            .field("projected_faces", &self.projected_faces)
            .field("fused_chains", &self.fused_chains)
            .field("graphs", &self.graphs)
            .finish()
    }
}

impl RankDistribution {
    /// The rank of `ext` exchanging through `transport`, overlap on, faces in the
    /// fields' own format, spin-projected where the hop allows it.
    pub fn new(ext: ExtendedLattice, transport: SharedTransport) -> Self {
        Self {
            ext,
            transport,
            overlap: true,
            fixed16_faces: false,
            projected_faces: true,
            fused_chains: true,
            graphs: false,
        }
    }

    /// The kernels' variant of `base` on this rank: the sub-box region, and the time
    /// boundary of fermions with time boundary `boundary`
    /// ([`crate::distributed::kernel_boundary`]).
    pub fn variant(&self, base: Variant, boundary: TimeBoundary) -> Variant {
        Variant {
            region: Region::SubBox,
            boundary: crate::distributed::kernel_boundary(&self.ext, boundary),
            ..base
        }
    }

    /// An error unless `found` (a field's lattice) is the rank's extended lattice.
    pub fn expect_extended(&self, what: &str, found: &Lattice) -> Result<(), OperatorError> {
        if found == self.ext.extended() {
            return Ok(());
        }
        Err(OperatorError::Field {
            kernel: "distributed device operator".into(),
            field: what.into(),
            expected: format!("the rank's extended lattice {}", self.ext.extended()),
            found: found.to_string(),
        })
    }

    /// The hop distribution of the hop stencil `S` on fields of `reals` reals per site
    /// (`ls` slices) in `spinor` for fermions of time boundary `boundary` (the faces'
    /// sign); faces spin-projected as `S`'s spec reads its halos when
    /// [`Self::projected_faces`] is on.
    pub fn hop_distribution<S: Stencil>(
        &self,
        gpu: &Gpu,
        (reals, ls): (usize, usize),
        spinor: StorageFormat,
        boundary: TimeBoundary,
    ) -> Result<Arc<DeviceHopDistribution>, OperatorError> {
        let wire = if self.fixed16_faces && spinor == StorageFormat::F32 {
            StorageFormat::Fixed16
        } else {
            spinor
        };
        let projections = if self.projected_faces {
            [false, true].map(|dagger| HaloProjections::of(&S::ir(), dagger))
        } else {
            [HaloProjections::default(); 2]
        };
        let hop =
            DeviceDistributedHop::projected(gpu, self.ext, (reals, spinor, wire, ls), projections)?
                .with_overlap(self.overlap)
                .with_graphs(self.graphs);
        Ok(DeviceHopDistribution::new(
            hop,
            Arc::clone(&self.transport),
            boundary,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comm::{CommConfig, ThreadComm};
    use crate::distributed::device::HostStaged;
    use crate::distributed::SharedComm;
    use qdsl_core::lattice::{Decomposition, ProcessGrid};

    fn rank(grid: [usize; 4]) -> RankDistribution {
        let global = Lattice::new([4, 4, 4, 8]).unwrap();
        let dec = Decomposition::new(global, ProcessGrid::new(grid).unwrap()).unwrap();
        let ext = ExtendedLattice::new(dec, 1).unwrap();
        let comm = ThreadComm::group(1, CommConfig::default()).remove(0);
        RankDistribution::new(ext, share_transport(HostStaged::new(SharedComm::new(comm))))
    }

    /// The kernels of a rank run over boxes, periodic in a cut t (the faces carry the
    /// sign) and with the fermions' boundary otherwise.
    #[test]
    fn rank_variants_are_boxed_and_periodic_only_in_a_cut_time() {
        let base = Variant::default();
        let cut = rank([1, 1, 1, 2]).variant(base, TimeBoundary::Antiperiodic);
        assert_eq!(cut.region, Region::SubBox);
        assert_eq!(cut.boundary, TimeBoundary::Periodic);
        let uncut = rank([2, 1, 1, 1]).variant(base, TimeBoundary::Antiperiodic);
        assert_eq!(uncut.boundary, TimeBoundary::Antiperiodic);
    }

    /// Fields on another lattice than the rank's extended one are refused naming both.
    #[test]
    fn fields_off_the_extended_lattice_are_refused_naming_both() {
        let r = rank([1, 1, 1, 2]);
        assert!(r.expect_extended("links", r.ext.extended()).is_ok());
        // 4³×8 cut in t: the extended lattice is 4³×8 too (margins of 2 keep the parity),
        // so the local lattice stands for a wrong one.
        let local = *r.ext.local();
        let e = r.expect_extended("links", &local).unwrap_err().to_string();
        assert!(
            e.contains("links")
                && e.contains(&r.ext.extended().to_string())
                && e.contains(&local.to_string()),
            "{e}"
        );
    }
}
