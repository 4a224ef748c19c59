//! Extended-volume link smearing (Shi et al., the fat-link computation on GPU clusters):
//! each rank's thin links are exchanged **once** with a halo of faces and corners as deep
//! as the smearing's paths reach, then every smeared link is computed by the unchanged
//! single-lattice kernels (generated CPU code, or the staged GPU kernels of
//! [`crate::smear::GpuSmearer`]) on the rank's extended lattice, with no further
//! communication, and trimmed to the rank's own links.
//!
//! Why the interior is exact: a smeared link at an interior site x is a sum of products
//! of thin links along paths that stay within [`path_reach`] sites of x in every
//! direction (e.g. 2 for asqtad: the Lepage term and the Naik link; 7-staples step one
//! site in three directions, hence the corners). With a halo at least that deep, every
//! such link is present in the extended field with its global value, and the kernel
//! evaluates the same products in the same order as on one lattice: the interior equals
//! the single-lattice links bit for bit. The halo sites' links (computed through the
//! extended lattice's wrap) are meaningless and dropped ([`interior_part`]).
//!
//! The staggered phases and the antiperiodic time sign depend on global coordinates:
//! they are folded into the thin links on the whole lattice before scattering, so the
//! exchange is periodic.
//!
//! The exchange runs on the host ([`exchange_thin_links`]) or on the device
//! ([`super::device::DeviceLinkHalo`], then [`smear_extended_device`]): the same slabs in
//! the same rounds, so both give the same links.
//!
//! The extended volume pays for its one exchange with the redundant work on the halo
//! sites ([`ExtendedSmearCost`]). The "standard" approach, an exchange of every
//! intermediate staple level and no redundant work, is
//! [`super::device::StandardSmearing`] (device only: its exchanges sit between the
//! staged plan's passes); both give the single-lattice links bit for bit.

use super::{exchange_halos, DistributedError, SharedComm};
use crate::comm::Communicator;
use qdsl_core::dsl::paths::spec::{Dir, PathSpec};
use qdsl_core::field::distributed::SiteField;
use qdsl_core::field::GaugeField;
use qdsl_core::lattice::{BoundaryConditions, ExtendedLattice, HaloShape};
use qdsl_core::Real;

/// How far (in sites, along any one direction) the links read by the paths of `spec`
/// lie from the site of the smeared link: the halo depth an extended-volume smearing
/// needs. A forward step from offset p reads the link at p, a backward step the link at
/// p − 1; the free directions are distinct from μ and from one another, so each is
/// tracked on its own. Asqtad's fat and long links: 2; fat7: 1.
pub fn path_reach(spec: &PathSpec) -> usize {
    let mut reach = 0;
    for term in &spec.terms {
        // The walk's offset along μ and along each free direction (a free direction's
        // orientation is a sign, which the absolute value ignores).
        let mut offset = vec![0i64; 1 + spec.free_names.len()];
        for step in &term.steps {
            let k = match step.dir {
                Dir::Mu => 0,
                Dir::Free(f) => 1 + f,
            };
            // The link a step reads sits where a forward step starts and where a
            // backward step ends.
            if !step.forward {
                offset[k] -= 1;
            }
            let far = offset.iter().map(|o| o.unsigned_abs() as usize).max();
            reach = reach.max(far.unwrap_or(0));
            if step.forward {
                offset[k] += 1;
            }
        }
    }
    reach
}

/// An error unless `ext`'s halo is at least as deep as the reach of every spec of
/// `specs` (named in the message), so that no interior link misses a thin link.
pub fn check_smearing_depth(
    ext: &ExtendedLattice,
    specs: &[PathSpec],
) -> Result<(), DistributedError> {
    for spec in specs {
        let reach = path_reach(spec);
        if ext.depth() < reach {
            return Err(DistributedError::Operator(format!(
                "extended-volume smearing `{}`: its paths reach {reach} sites, the halo is {} \
                 deep (the decomposition needs a halo depth of at least {reach})",
                spec.name,
                ext.depth()
            )));
        }
    }
    Ok(())
}

/// Fills the halo of this rank's part of the thin links (phases and boundary signs
/// already folded in) with faces **and corners**, `ext`'s depth deep: the one exchange
/// of an extended-volume smearing. Returns the bytes this rank received. Every rank
/// calls it together.
pub fn exchange_thin_links<T: Real, C: Communicator>(
    comm: &SharedComm<C>,
    part: &mut GaugeField<T>,
    ext: &ExtendedLattice,
) -> Result<usize, DistributedError> {
    exchange_halos(
        &mut *comm.lock(),
        part,
        ext,
        HaloShape::FacesAndCorners,
        &BoundaryConditions::periodic(),
        "extended-volume smearing: thin links",
    )?;
    Ok(ExtendedSmearCost::of(ext).halo_bytes::<T>())
}

/// The field `field` on the rank's extended lattice with every site outside the interior
/// zeroed (halos and any margin beyond them): the
/// rank's own links (the form [`qdsl_core::field::distributed::scatter`] gives), ready
/// to be gathered or to have their halos filled for an operator.
pub fn interior_part<F: SiteField>(
    mut field: F,
    ext: &ExtendedLattice,
) -> Result<F, DistributedError> {
    if field.lattice() != ext.extended() {
        return Err(DistributedError::WrongLattice {
            what: "smeared links",
            expected: ext.extended().to_string(),
            found: field.lattice().to_string(),
        });
    }
    zero_halo(&mut field, ext);
    Ok(field)
}

fn zero_halo<F: SiteField>(field: &mut F, ext: &ExtendedLattice) {
    let blank = field
        .blank_on(*field.lattice())
        .expect("a blank field on the field's own lattice");
    let lattice = *field.lattice();
    for lex in 0..lattice.volume() {
        let c = lattice.coords_of_lex(lex);
        if ext.local_of_ext(c).is_some() {
            continue;
        }
        let (Some(i), Some(j)) = (field.index_of(c), blank.index_of(c)) else {
            continue;
        };
        for s in 0..field.slices() {
            let zero = blank.site_elems(s, j).to_vec();
            field.site_elems_mut(s, i).copy_from_slice(&zero);
        }
    }
}

/// What an extended-volume smearing costs one rank: the halo it receives once and the
/// redundant sites it smears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtendedSmearCost {
    /// Sites of the local lattice.
    pub local_sites: usize,
    /// Sites of the extended lattice (all smeared).
    pub extended_sites: usize,
    /// Halo sites received (faces and corners).
    pub halo_sites: usize,
}

impl ExtendedSmearCost {
    /// The cost on `ext`.
    pub fn of(ext: &ExtendedLattice) -> Self {
        Self {
            local_sites: ext.local().volume(),
            extended_sites: ext.extended().volume(),
            halo_sites: ext.halo_sites(HaloShape::FacesAndCorners).len(),
        }
    }

    /// Bytes of thin links received (4 links of 18 reals of `T` per halo site).
    pub fn halo_bytes<T: Real>(&self) -> usize {
        self.halo_sites * 4 * 18 * std::mem::size_of::<T>()
    }

    /// Smeared sites per local site (≥ 1: the redundant work).
    pub fn work_ratio(&self) -> f64 {
        self.extended_sites as f64 / self.local_sites as f64
    }
}

/// The device path: one rank's smeared links of `smearer`'s spec from its thin links
/// `part` (halos filled by [`exchange_thin_links`]), the staged kernels run on the whole
/// extended lattice on `gpu`, downloaded and trimmed ([`interior_part`]). An error
/// unless the halo is deep enough ([`check_smearing_depth`]).
pub fn smear_extended_gpu<T: crate::smear::GpuReal>(
    gpu: &crate::device::Gpu,
    tuner: Option<&crate::tune::Tuner>,
    smearer: &crate::smear::GpuSmearer<T>,
    part: &GaugeField<T>,
    ext: &ExtendedLattice,
    u0: f64,
) -> Result<GaugeField<T>, DistributedError> {
    check_smearing_depth(ext, std::slice::from_ref(&smearer.tree().spec))?;
    let device = |e: crate::device::DeviceError| DistributedError::Operator(e.to_string());
    if part.lattice() != ext.extended() {
        return Err(DistributedError::WrongLattice {
            what: "thin links",
            expected: ext.extended().to_string(),
            found: part.lattice().to_string(),
        });
    }
    let smeared = smearer.smear_with(gpu, tuner, part, u0).map_err(device)?;
    interior_part(smeared, ext)
}

/// [`smear_extended_gpu`] from device links: `links` are this rank's thin links on the
/// extended lattice in the host layout, their halo filled on the device
/// ([`super::device::DeviceLinkHalo`]); nothing of them goes through the host.
pub fn smear_extended_device<T: crate::smear::GpuReal>(
    gpu: &crate::device::Gpu,
    tuner: Option<&crate::tune::Tuner>,
    smearer: &crate::smear::GpuSmearer<T>,
    links: &cudarc::driver::CudaSlice<T>,
    ext: &ExtendedLattice,
    u0: f64,
) -> Result<GaugeField<T>, DistributedError> {
    check_smearing_depth(ext, std::slice::from_ref(&smearer.tree().spec))?;
    let expected = 4 * 18 * ext.extended().volume();
    if links.len() != expected {
        return Err(DistributedError::WrongLattice {
            what: "thin links on the device",
            expected: format!("{expected} reals ({})", ext.extended()),
            found: format!("{} reals", links.len()),
        });
    }
    let smeared = smearer
        .smear_device_links(gpu, tuner, links, ext.extended(), u0)
        .map_err(|e| DistributedError::Operator(e.to_string()))?;
    interior_part(smeared, ext)
}

#[cfg(test)]
mod gpu_tests {
    use super::*;
    use crate::comm::nccl::NcclLibrary;
    use crate::comm::{run_ranks, CommConfig};
    use crate::device::Gpu;
    use crate::distributed::device::{
        DeviceLinkHalo, DeviceTransport, HostStaged, NcclTransport, StandardSmearing,
    };
    use crate::smear::{upload_links, GpuReal, GpuSmearer};
    use qdsl_core::field::distributed::{gather, scatter};
    use qdsl_core::io::{read_gauge, ReadOptions};
    use qdsl_core::lattice::decomposition::NAIK_DEPTH;
    use qdsl_core::lattice::{Decomposition, ProcessGrid};
    use qdsl_kernels::{fold_staggered_phases, AsqtadFat, AsqtadLong};

    fn data(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/data/milc")
            .join(name)
    }

    /// How the ranks' thin links are exchanged.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Exchange {
        /// On the host ([`exchange_thin_links`]).
        Host,
        /// On the device ([`DeviceLinkHalo`]) through the host ([`HostStaged`]).
        DeviceHostStaged,
        /// On the device through NCCL (one GPU per rank).
        DeviceNccl,
        /// The standard smearing ([`StandardSmearing`]: the thin links once, then the
        /// staple fields between the passes) through the host ([`HostStaged`]).
        StandardHostStaged,
        /// The standard smearing through NCCL (one GPU per rank).
        StandardNccl,
    }

    /// Asqtad fat and long links of `v` in `T` on the ranks of `grid` (halo `depth`
    /// deep): rank r on GPU r mod the GPU count, the thin links exchanged once as
    /// `exchange` says, the staged kernels on each extended lattice (or, for the
    /// standard smearing, on each rank's own sites); gathered.
    fn distributed<T: GpuReal>(
        v: &GaugeField<T>,
        (grid, depth): ([usize; 4], usize),
        u0: f64,
        gpus: usize,
        exchange: Exchange,
    ) -> (GaugeField<T>, GaugeField<T>) {
        let dec =
            Decomposition::with_halo_depth(*v.lattice(), ProcessGrid::new(grid).unwrap(), depth)
                .unwrap();
        let ext = ExtendedLattice::new(dec, depth).unwrap();
        let size = dec.size();
        let parts = run_ranks(size, CommConfig::default(), |mut comm| {
            let rank = Communicator::rank(&comm);
            let gpu = Gpu::open(rank % gpus).unwrap();
            let fat = GpuSmearer::<T>::new::<AsqtadFat>(&gpu).unwrap();
            let long = GpuSmearer::<T>::new::<AsqtadLong>(&gpu).unwrap();
            let mut part = scatter(v, &ext, rank).unwrap();
            let device = |transport: &mut dyn DeviceTransport| {
                let mut links = upload_links(&gpu, &part, "thin links").unwrap();
                let mut halo = DeviceLinkHalo::<T>::new(&gpu, ext).unwrap();
                assert_eq!(
                    halo.halo_bytes(),
                    ExtendedSmearCost::of(&ext).halo_bytes::<T>()
                );
                halo.exchange(&gpu, transport, &mut links).unwrap();
                if matches!(
                    exchange,
                    Exchange::StandardHostStaged | Exchange::StandardNccl
                ) {
                    let mut standard = StandardSmearing::new(&gpu, ext, &[&fat, &long]).unwrap();
                    // Through NCCL the interior overlaps the fields' exchange wherever
                    // there is an interior (and x is not cut).
                    let overlaps = standard.overlap_boxes(&*transport).is_some();
                    let interior = !ext.launch_boxes().interior.is_empty();
                    let x_cut = ext.decomposition().grid().is_cut(0);
                    assert_eq!(
                        overlaps,
                        exchange == Exchange::StandardNccl && interior && !x_cut,
                        "{exchange:?} on {}",
                        ext.local()
                    );
                    let (exchanges, bytes) = standard.field_traffic(&fat);
                    assert_eq!(exchanges, 8, "fat: two passes per link direction");
                    assert!(bytes > 0);
                    assert_eq!(standard.field_traffic(&long), (0, 0), "long: no pass");
                    return (
                        standard
                            .smear(&gpu, None, transport, &fat, &links, u0)
                            .unwrap(),
                        standard
                            .smear(&gpu, None, transport, &long, &links, u0)
                            .unwrap(),
                    );
                }
                (
                    smear_extended_device(&gpu, None, &fat, &links, &ext, u0).unwrap(),
                    smear_extended_device(&gpu, None, &long, &links, &ext, u0).unwrap(),
                )
            };
            match exchange {
                Exchange::Host => {
                    exchange_thin_links(&SharedComm::new(comm), &mut part, &ext).unwrap();
                    (
                        smear_extended_gpu(&gpu, None, &fat, &part, &ext, u0).unwrap(),
                        smear_extended_gpu(&gpu, None, &long, &part, &ext, u0).unwrap(),
                    )
                }
                Exchange::DeviceHostStaged | Exchange::StandardHostStaged => {
                    device(&mut HostStaged::new(SharedComm::new(comm)))
                }
                Exchange::DeviceNccl | Exchange::StandardNccl => device(
                    &mut NcclTransport::among(&gpu, &mut comm, size, CommConfig::default())
                        .unwrap(),
                ),
            }
        });
        let (fat, long): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        (gather(&fat, &ext).unwrap(), gather(&long, &ext).unwrap())
    }

    /// GPU: decomposed asqtad smearing of MILC's lat.sample.l8 (phases folded in,
    /// u0 = 0.502) on 2, 4 and 16 ranks (t, z·t, and all four directions cut; rank r on
    /// GPU r mod the GPU count: run it on 2 or 4 GPUs to spread the ranks) equals the
    /// single-GPU links bit for bit in f64 and f32, and MILC's fat.l8 and long.l8 to f32
    /// rounding: the extended volume with the thin links exchanged on the host, or on
    /// the device (through the host, and through NCCL where every rank has a GPU), and
    /// the standard smearing (the staple fields exchanged between the passes, the same
    /// transports), with halos of the Naik depth 3 and of the smearing's reach 2.
    #[test]
    #[ignore = "needs a CUDA GPU (several spread the ranks): run with --include-ignored on a GPU machine"]
    fn distributed_device_smeared_links_equal_the_single_gpu_ones() {
        let (gpu, _dir) = crate::testing::gpu();
        let gpus = crate::backend::gpu_count().unwrap().max(1);
        let u = read_gauge(data("lat.sample.l8"), &ReadOptions::default())
            .expect("lat.sample.l8")
            .field;
        let milc = |n| {
            read_gauge(data(n), &ReadOptions::smeared_links())
                .expect("MILC links")
                .field
        };
        let (milc_fat, milc_long) = (milc("fat.l8"), milc("long.l8"));
        let u0 = 0.502;
        let v = fold_staggered_phases(&u);
        let v32 = v.cast::<f32>();
        let single = |v: &GaugeField<f64>| {
            let fat = GpuSmearer::<f64>::new::<AsqtadFat>(&gpu).unwrap();
            let long = GpuSmearer::<f64>::new::<AsqtadLong>(&gpu).unwrap();
            (
                fat.smear(&gpu, v, u0).unwrap(),
                long.smear(&gpu, v, u0).unwrap(),
            )
        };
        let single32 = {
            let fat = GpuSmearer::<f32>::new::<AsqtadFat>(&gpu).unwrap();
            let long = GpuSmearer::<f32>::new::<AsqtadLong>(&gpu).unwrap();
            (
                fat.smear(&gpu, &v32, u0).unwrap(),
                long.smear(&gpu, &v32, u0).unwrap(),
            )
        };
        let (fat64, long64) = single(&v);
        // Asqtad's paths reach two sites (Lepage, Naik): the least halo either way.
        const REACH: usize = 2;
        assert_eq!(
            path_reach(&<AsqtadFat as qdsl_core::dsl::paths::LinkPaths>::spec()),
            REACH
        );
        let rel = |a: &GaugeField<f64>, b: &GaugeField<f64>| {
            let (mut d, mut m) = (0.0f64, 0.0f64);
            for (x, y) in a.links().iter().zip(b.links()) {
                d = d.max((*x - *y).max_abs_component());
                m = m.max(y.max_abs_component());
            }
            d / m
        };
        // The overlapped standard smearing needs an interior: 8³×16 over 1,1,1,2 (local
        // t 8, halo 2) through NCCL, against one GPU bit for bit.
        if gpus >= 2 && NcclLibrary::get().is_ok() {
            let lattice = qdsl_core::lattice::Lattice::new([8, 8, 8, 16]).unwrap();
            let w = fold_staggered_phases(&GaugeField::<f64>::random(lattice, 5)).cast::<f32>();
            let fat = GpuSmearer::<f32>::new::<AsqtadFat>(&gpu).unwrap();
            let long = GpuSmearer::<f32>::new::<AsqtadLong>(&gpu).unwrap();
            let one = (
                fat.smear(&gpu, &w, u0).unwrap(),
                long.smear(&gpu, &w, u0).unwrap(),
            );
            for via in [Exchange::StandardNccl, Exchange::DeviceNccl] {
                let links = distributed(&w, ([1, 1, 1, 2], REACH), u0, gpus, via);
                assert!(links.0 == one.0, "8³×16 fat links, {via:?}");
                assert!(links.1 == one.1, "8³×16 long links, {via:?}");
            }
        }
        for grid in [[1, 1, 1, 2], [1, 1, 2, 2], [2, 2, 2, 2]] {
            // The device exchange gives the host exchange's links (bit for bit), through
            // the host and, with a GPU per rank, through NCCL; so does the standard
            // smearing, on the Naik depth and on the smearing's own reach.
            let size: usize = grid.iter().product();
            let mut devices = vec![Exchange::DeviceHostStaged, Exchange::StandardHostStaged];
            if gpus >= size && NcclLibrary::get().is_ok() {
                devices.extend([Exchange::DeviceNccl, Exchange::StandardNccl]);
            }
            let host = distributed(&v32, (grid, NAIK_DEPTH), u0, gpus, Exchange::Host);
            for via in devices {
                for depth in [NAIK_DEPTH, REACH] {
                    let links = distributed(&v32, (grid, depth), u0, gpus, via);
                    assert!(
                        links.0 == host.0,
                        "f32 fat links, {via:?}, grid {grid:?}, halo {depth}"
                    );
                    assert!(
                        links.1 == host.1,
                        "f32 long links, {via:?}, grid {grid:?}, halo {depth}"
                    );
                }
            }
            for via in [Exchange::DeviceHostStaged, Exchange::StandardHostStaged] {
                let (fat, long) = distributed(&v, (grid, REACH), u0, gpus, via);
                assert!(fat == fat64, "f64 fat links, {via:?}, grid {grid:?}");
                assert!(long == long64, "f64 long links, {via:?}, grid {grid:?}");
            }
            let (fat, long) =
                distributed(&v, (grid, NAIK_DEPTH), u0, gpus, Exchange::DeviceHostStaged);
            assert!(
                rel(&fat, &milc_fat) < 2e-6,
                "{grid:?}: {:e}",
                rel(&fat, &milc_fat)
            );
            assert!(
                rel(&long, &milc_long) < 2e-6,
                "{grid:?}: {:e}",
                rel(&long, &milc_long)
            );
            assert!(host.0 == single32.0, "f32 fat links, grid {grid:?}");
            assert!(host.1 == single32.1, "f32 long links, grid {grid:?}");
        }
    }
}
