//! GPU tests of the distributed device hop against the single-GPU hop.
//!
//! Ranks are threads ([`run_ranks`]). With one GPU every rank drives GPU 0 and the faces
//! travel through [`HostStaged`] over the threads' communicator (several ranks on ONE
//! GPU); the `nccl_` tests put rank r on GPU r and exchange with NCCL on the device
//! buffers (libnccl.so.2 found as [`crate::comm::nccl`] says, `QDSL_NCCL_LIB` names it;
//! they need as many GPUs as ranks and say so otherwise); the `peer` tests copy faces
//! directly ([`PeerTransport`]: on one GPU between the ranks' buffers, on several GPUs
//! over peer access).

use super::{DeviceDistributedHop, DeviceTransport, HostStaged, NcclTransport, PeerTransport};
use crate::comm::nccl::NcclLibrary;
use crate::comm::{run_ranks, CommConfig, Communicator, ThreadComm};
use crate::device::{DeviceField, DeviceFormat, DeviceLayout, Gpu};
use crate::distributed::{exchange_halos, SharedComm};
use crate::operator::device::{
    device_spinor, DeviceStencil, DeviceXpay, StencilArgs, StencilLaunch,
};
use crate::tune;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::halo_spin::HaloProjections;
use qdsl_core::dsl::variant::{OutputSites, Recon, Region, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::distributed::{gather, scatter};
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::format::{FermionFormat, LinkFormat};
use qdsl_core::lattice::decomposition::{NAIK_DEPTH, ONE_HOP_DEPTH};
use qdsl_core::lattice::{
    BoundaryConditions, Decomposition, ExtendedLattice, HaloShape, Lattice, Parity, ProcessGrid,
};
use qdsl_core::Complex;
use qdsl_kernels::{ImprovedStaggeredHop, WilsonHop};

/// Grids cutting one direction (t, and x), two (z, t) and all four.
const GRIDS: [[usize; 4]; 4] = [[1, 1, 1, 2], [2, 1, 1, 1], [1, 1, 2, 2], [2, 2, 2, 2]];

fn extended(global: Lattice, grid: [usize; 4], depth: usize) -> ExtendedLattice {
    let dec =
        Decomposition::with_halo_depth(global, ProcessGrid::new(grid).unwrap(), depth).unwrap();
    ExtendedLattice::new(dec, depth).unwrap()
}

/// What one case applies: the stencil's whole-parity variant, its fields and how the
/// faces travel.
struct Case<'a> {
    variant: Variant,
    /// The link fields (4D, global), in the kernel's input order after ψ.
    links: &'a [&'a GaugeField<f64>],
    /// The clover field of the output parity (clover stencils).
    clover: Option<&'a CloverField<f64>>,
    /// out = a·x + b·K ψ operands (global x of the output parity).
    xpay: Option<(f64, &'a ColourSpinorField<f64>, f64)>,
    psi: &'a ColourSpinorField<f64>,
    wire: StorageFormat,
    overlap: bool,
    /// Faces carry the stencil's spin projections (half spinors).
    projected: bool,
}

fn output_parity(v: &Variant) -> Parity {
    match v.sites {
        OutputSites::Parity(p) => p,
        OutputSites::Full => panic!("one-parity variant expected"),
    }
}

fn link_format(v: &Variant) -> LinkFormat {
    LinkFormat::new(v.gauge.link_storage(), v.recon.compression())
}

fn upload_clover(gpu: &Gpu, a: &CloverField<f64>, sites: usize) -> DeviceField {
    let layout = DeviceLayout::new(
        DeviceFormat::Fermion(FermionFormat::F64),
        qdsl_core::field::CLOVER_SITE_REALS,
        sites,
    )
    .unwrap();
    DeviceField::upload(gpu, layout, a.data()).unwrap()
}

/// The field in the case's spinor format on the GPU.
fn upload(gpu: &Gpu, v: &Variant, f: &ColourSpinorField<f64>) -> DeviceField {
    DeviceField::from_spinor(gpu, f, v.spinor.fermion_format()).unwrap()
}

/// K ψ on one GPU over the whole lattice.
fn single<S: Stencil>(gpu: &Gpu, c: &Case<'_>) -> ColourSpinorField<f64> {
    let v = c.variant;
    let global = *c.psi.layout().lattice();
    let p = output_parity(&v);
    let out_layout = c.psi.layout().with_subset(SiteSubset::Single(p));
    let d_psi = upload(gpu, &v, c.psi);
    let mut inputs: Vec<DeviceField> = c
        .links
        .iter()
        .map(|u| DeviceField::from_gauge(gpu, *u, link_format(&v)).unwrap())
        .collect();
    if let Some(a) = c.clover {
        inputs.push(upload_clover(gpu, a, global.half_volume()));
    }
    let d_x = c.xpay.map(|(_, x, _)| upload(gpu, &v, x));
    let xpay = c.xpay.map(|(a, _, b)| DeviceXpay {
        a,
        x: d_x.as_ref().unwrap(),
        b,
    });
    let reals = 6 * c.psi.layout().nspin();
    let sites = c.psi.layout().ls() * global.half_volume();
    let mut out = device_spinor(gpu, v.spinor, reals, sites).unwrap();
    let mut all: Vec<&DeviceField> = vec![&d_psi];
    all.extend(inputs.iter());
    DeviceStencil::of::<S>(gpu, &v)
        .unwrap()
        .launch(
            gpu,
            &global,
            StencilLaunch::default_build(tune::LaunchConfig::default_for(global.half_volume())),
            StencilArgs::new(&mut out, &all).xpay(xpay.as_ref()),
        )
        .unwrap();
    out.to_spinor::<f64>(gpu, out_layout).unwrap()
}

/// One rank: its links (scattered, halos exchanged on the host, periodic: links carry
/// no boundary sign), clover and x parts, ψ's part; the distributed device hop through
/// `transport` (`graphs`: through [`DeviceDistributedHop::apply_replayed`] with graphs
/// on); the output part downloaded.
fn rank_part<S: Stencil, T: DeviceTransport>(
    gpu: &Gpu,
    graphs: bool,
    comm: &SharedComm<ThreadComm>,
    transport: &mut T,
    ext: ExtendedLattice,
    c: &Case<'_>,
) -> ColourSpinorField<f64> {
    let v = c.variant;
    let rank = comm.rank();
    let p = output_parity(&v);
    let lattice = *ext.extended();
    let periodic = BoundaryConditions::periodic();
    let mut inputs: Vec<DeviceField> = c
        .links
        .iter()
        .map(|u| {
            let mut part = scatter(*u, &ext, rank).unwrap();
            let mut comm = comm.lock();
            exchange_halos(
                &mut *comm,
                &mut part,
                &ext,
                HaloShape::Faces,
                &periodic,
                "links",
            )
            .unwrap();
            DeviceField::from_gauge(gpu, &part, link_format(&v)).unwrap()
        })
        .collect();
    if let Some(a) = c.clover {
        let part = scatter(a, &ext, rank).unwrap();
        inputs.push(upload_clover(gpu, &part, lattice.half_volume()));
    }
    let x_part = c
        .xpay
        .map(|(_, x, _)| upload(gpu, &v, &scatter(x, &ext, rank).unwrap()));
    let xpay = c.xpay.map(|(a, _, b)| DeviceXpay {
        a,
        x: x_part.as_ref().unwrap(),
        b,
    });
    let src = scatter(c.psi, &ext, rank).unwrap();
    let mut d_psi = upload(gpu, &v, &src);
    let reals = 6 * src.layout().nspin();
    let ls = src.layout().ls();
    let mut out = device_spinor(gpu, v.spinor, reals, ls * lattice.half_volume()).unwrap();
    let boxed = Variant {
        region: Region::SubBox,
        boundary: if ext.decomposition().grid().is_cut(3) {
            TimeBoundary::Periodic
        } else {
            v.boundary
        },
        ..v
    };
    let stencil = DeviceStencil::of::<S>(gpu, &boxed).unwrap();
    let projections = if c.projected {
        [false, true].map(|dagger| HaloProjections::of(&S::ir(), dagger))
    } else {
        [HaloProjections::default(); 2]
    };
    let hop = DeviceDistributedHop::projected(gpu, ext, (reals, v.spinor, c.wire, ls), projections)
        .unwrap()
        .with_overlap(c.overlap)
        .with_graphs(graphs);
    assert_eq!(hop.is_projected(), c.projected, "the hop's faces");
    let bc = match v.boundary {
        TimeBoundary::Periodic => BoundaryConditions::periodic(),
        TimeBoundary::Antiperiodic => BoundaryConditions::antiperiodic_time(),
    };
    // Three applications (the same result each time): the transports' state across
    // exchanges (buffers reused, marks of earlier rounds) is exercised too. With graphs
    // the first ones run eagerly, then one is captured and replayed, the last replayed;
    // the output is cleared before each, so a replay that did not run would show.
    for _ in 0..super::EAGER_APPLICATIONS + 2 {
        gpu.backend()
            .stream()
            .memset_zeros(out.values_mut())
            .unwrap();
        hop.apply_replayed(
            gpu,
            transport,
            &bc,
            &mut d_psi,
            p.opposite(),
            v.dagger,
            Some(0),
            |b, psi| {
                let mut all: Vec<&DeviceField> = vec![psi];
                all.extend(inputs.iter());
                stencil.launch(
                    gpu,
                    &lattice,
                    StencilLaunch::default_build(tune::LaunchConfig::default_for(
                        b.sites.threads(),
                    )),
                    StencilArgs::new(&mut out, &all)
                        .xpay(xpay.as_ref())
                        .within(b),
                )
            },
        )
        .unwrap();
    }
    if graphs && c.overlap {
        assert_eq!(
            hop.graphs_captured(),
            1,
            "rank {}: graphs",
            transport.rank()
        );
    }
    out.to_spinor::<f64>(gpu, src.layout().with_subset(SiteSubset::Single(p)))
        .unwrap()
}

/// The gathered K ψ of every rank, the ranks threads on GPU 0 exchanging through
/// [`HostStaged`].
fn on_one_gpu<S: Stencil>(gpu: &Gpu, ext: ExtendedLattice, c: &Case<'_>) -> ColourSpinorField<f64> {
    let size = ext.decomposition().size();
    let parts = run_ranks(size, CommConfig::default(), |comm| {
        gpu.backend().context().bind_to_thread().unwrap();
        // The links' host exchange and the transport share the rank's communicator
        // (collectives in program order).
        let shared = SharedComm::new(comm);
        let mut transport = HostStaged::new(shared.clone());
        rank_part::<S, _>(gpu, false, &shared, &mut transport, ext, c)
    });
    gather(&parts, &ext).unwrap()
}

/// How the ranks of a several-GPU test exchange.
#[derive(Clone, Copy, Debug)]
enum Via {
    Nccl,
    /// NCCL, each application replayed from a CUDA graph (the GPUs opened with streams
    /// of their own).
    NcclGraphs,
    Peer,
}

/// The gathered K ψ with rank r on GPU r, exchanging through NCCL.
fn on_gpus_nccl<S: Stencil>(ext: ExtendedLattice, c: &Case<'_>) -> ColourSpinorField<f64> {
    on_gpus::<S>(ext, c, Via::Nccl)
}

/// The gathered K ψ with rank r on GPU r, exchanging `via`.
fn on_gpus<S: Stencil>(ext: ExtendedLattice, c: &Case<'_>, via: Via) -> ColourSpinorField<f64> {
    let size = ext.decomposition().size();
    let gpus = crate::backend::gpu_count().unwrap_or(0);
    assert!(
        gpus >= size,
        "this test needs {size} GPUs (one per rank), found {gpus}"
    );
    if let Via::Nccl | Via::NcclGraphs = via {
        NcclLibrary::get()
            .unwrap_or_else(|e| panic!("NCCL: {e} (QDSL_NCCL_LIB names libnccl.so.2)"));
    }
    let parts = run_ranks(size, CommConfig::default(), |mut comm| {
        let rank = Communicator::rank(&comm);
        let backend = match via {
            Via::NcclGraphs => crate::backend::CudaBackend::with_own_stream(rank),
            _ => crate::backend::CudaBackend::new(rank),
        }
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let gpu = Gpu::new(backend, crate::testing::jit(dir.path()));
        match via {
            Via::Nccl | Via::NcclGraphs => {
                let mut transport =
                    NcclTransport::among(&gpu, &mut comm, size, CommConfig::default()).unwrap();
                let graphs = matches!(via, Via::NcclGraphs);
                rank_part::<S, _>(&gpu, graphs, &SharedComm::new(comm), &mut transport, ext, c)
            }
            Via::Peer => {
                let shared = SharedComm::new(comm);
                let mut transport = PeerTransport::new(shared.clone());
                rank_part::<S, _>(&gpu, false, &shared, &mut transport, ext, c)
            }
        }
    });
    gather(&parts, &ext).unwrap()
}

/// The gathered K ψ of every rank, the ranks threads on GPU 0 copying faces directly
/// into each other's buffers ([`PeerTransport`] within one context).
fn on_one_gpu_peer<S: Stencil>(
    gpu: &Gpu,
    ext: ExtendedLattice,
    c: &Case<'_>,
) -> ColourSpinorField<f64> {
    let size = ext.decomposition().size();
    let parts = run_ranks(size, CommConfig::default(), |comm| {
        gpu.backend().context().bind_to_thread().unwrap();
        let shared = SharedComm::new(comm);
        let mut transport = PeerTransport::new(shared.clone());
        rank_part::<S, _>(gpu, false, &shared, &mut transport, ext, c)
    });
    gather(&parts, &ext).unwrap()
}

/// Asserts equal bits in every component (== would let −0 pass for +0).
fn assert_bits_equal(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>, what: &str) {
    assert_eq!(a.layout(), b.layout(), "{what}");
    let bits = |f: &ColourSpinorField<f64>| -> Vec<(u64, u64)> {
        f.data()
            .iter()
            .map(|z| (z.re.to_bits(), z.im.to_bits()))
            .collect()
    };
    let first = bits(a).iter().zip(&bits(b)).position(|(p, q)| p != q);
    assert!(
        first.is_none(),
        "{what}: first differing component {first:?}"
    );
    assert!(a.norm_sqr() > 0.0, "{what}: a zero result proves nothing");
}

fn wilson_variant(parity: Parity, dagger: bool, xpay: bool, format: StorageFormat) -> Variant {
    Variant {
        sites: OutputSites::Parity(parity),
        dagger,
        xpay,
        spinor: format,
        gauge: format,
        recon: if format == StorageFormat::F64 {
            Recon::R18
        } else {
            Recon::R12
        },
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    }
}

/// GPU: the distributed Wilson hop H (both output parities, plain and dagger,
/// antiperiodic time; overlap on and off) over grids cutting 1, 2 and 4 directions
/// including t, the ranks on one GPU, equals the single-GPU hop bit for bit in f64.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_distributed_wilson_hop_equals_the_single_gpu_hop_bit_for_bit() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 41);
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for parity in Parity::BOTH {
            for dagger in [false, true] {
                let v = wilson_variant(parity, dagger, false, StorageFormat::F64);
                let layout = SpinorLayout::wilson(global, SiteSubset::Single(parity.opposite()));
                let psi = ColourSpinorField::<f64>::gaussian(layout, 42);
                for overlap in [true, false] {
                    let c = Case {
                        variant: v,
                        links: &[&u],
                        clover: None,
                        xpay: None,
                        psi: &psi,
                        wire: StorageFormat::F64,
                        overlap,
                        projected: false,
                    };
                    let what =
                        format!("grid {grid:?} {parity:?} dagger {dagger} overlap {overlap}");
                    assert_bits_equal(
                        &on_one_gpu::<WilsonHop>(&gpu, ext, &c),
                        &single::<WilsonHop>(&gpu, &c),
                        &what,
                    );
                }
            }
        }
    }
}

/// The Wilson hop on a 1,1,2,2 grid (on one GPU, the ranks' faces through the host) in
/// narrow formats — f32 and fixed16 fields with faces in their own format, and fixed16
/// faces of an f32 field, with xpay as M̂'s second hop launches it — and for a 5D field
/// (Ls = 3) on grids cutting t and all four directions, against the single-GPU hop:
/// bit for bit where the faces carry the values exactly (full faces in the field's own
/// format; projected faces in f32: the kernel's projection of the stored ½ R h is h
/// exactly, where a fixed16 half spinor is rounded once more), else within fixed16's
/// bound. The 5D case takes the dagger knob with projected faces (their opposite
/// projectors). Fields from `seed` on.
fn narrow_formats_and_5d(
    gpu: &Gpu,
    global: Lattice,
    u: &GaugeField<f64>,
    seed: u64,
    projected: bool,
) {
    let ext = extended(global, [1, 1, 2, 2], ONE_HOP_DEPTH);
    let layout = SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd));
    let psi = ColourSpinorField::<f64>::gaussian(layout, seed);
    let x = ColourSpinorField::<f64>::gaussian(
        layout.with_subset(SiteSubset::Single(Parity::Even)),
        seed + 1,
    );
    let label = if projected { "projected " } else { "" };
    for (format, wire) in [
        (StorageFormat::F32, StorageFormat::F32),
        (StorageFormat::Fixed16, StorageFormat::Fixed16),
        (StorageFormat::F32, StorageFormat::Fixed16),
    ] {
        let c = Case {
            variant: wilson_variant(Parity::Even, false, true, format),
            links: &[u],
            clover: None,
            xpay: Some((1.0, &x, -0.125)),
            psi: &psi,
            wire,
            overlap: true,
            projected,
        };
        let (d, s) = (
            on_one_gpu::<WilsonHop>(gpu, ext, &c),
            single::<WilsonHop>(gpu, &c),
        );
        let what = format!("{label}{format:?} faces in {wire:?}");
        let exact = format == wire && (!projected || format == StorageFormat::F32);
        if exact {
            assert_bits_equal(&d, &s, &what);
        } else {
            let err = crate::testing::relative_distance(&d, &s);
            assert!(err > 0.0 && err < 1e-4, "{what}: {err:e}");
        }
    }
    let layout5 = SpinorLayout::new(global, 3, SiteSubset::Single(Parity::Even), 4, 3).unwrap();
    let psi5 = ColourSpinorField::<f64>::gaussian(layout5, seed + 2);
    let c = Case {
        variant: wilson_variant(Parity::Odd, projected, false, StorageFormat::F64),
        links: &[u],
        clover: None,
        xpay: None,
        psi: &psi5,
        wire: StorageFormat::F64,
        overlap: true,
        projected,
    };
    for grid in [[1, 1, 1, 2], [2, 2, 2, 2]] {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        assert_bits_equal(
            &on_one_gpu::<WilsonHop>(gpu, ext, &c),
            &single::<WilsonHop>(gpu, &c),
            &format!("{label}5D grid {grid:?}"),
        );
    }
}

/// GPU: in f32 and fixed16 the faces travel in the field's own format, exactly, so the
/// distributed hop (with xpay, as M̂'s second hop launches it) is bit-identical to the
/// single-GPU hop; fixed16 faces of an f32 field agree within fixed16's bound; a 5D field
/// (Ls = 3) carries every slice.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_distributed_hop_in_narrow_formats_and_5d() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 43);
    narrow_formats_and_5d(&gpu, global, &u, 44, false);
}

/// GPU: the improved staggered hop (fat one-hop and Naik three-hop terms: faces of depth
/// 3) distributed over t, x and all four directions equals the single-GPU hop bit for
/// bit in f64. (The one-kernel `wilson_clover` stencil reads ψ on both parities — the
/// clover term at the output site — which the single-parity face exchange does not
/// carry: the H100 refused it with "field psi: expected 4096 sites, found 2048". The
/// distributed clover operator applies the hop and the clover term separately.)
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_distributed_staggered_and_clover_hops_equal_the_single_gpu_hops() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let (fat, long) = (
        GaugeField::<f64>::random(global, 51),
        GaugeField::<f64>::random(global, 52),
    );
    let mut a = CloverField::<f64>::zeros(global, SiteSubset::Single(Parity::Odd));
    for (k, r) in a.data_mut().iter_mut().enumerate() {
        *r = if k % 36 < 6 {
            4.0
        } else {
            ((k * 37 % 101) as f64) / 200.0 - 0.25
        };
    }
    for grid in [[1, 1, 1, 2], [2, 1, 1, 1], [2, 2, 2, 2]] {
        for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
            let v = Variant {
                boundary,
                ..wilson_variant(Parity::Odd, false, false, StorageFormat::F64)
            };
            let chi = ColourSpinorField::<f64>::gaussian(
                SpinorLayout::staggered(global, SiteSubset::Single(Parity::Even)),
                53,
            );
            let c = Case {
                variant: v,
                links: &[&fat, &long],
                clover: None,
                xpay: None,
                psi: &chi,
                wire: StorageFormat::F64,
                overlap: true,
                projected: false,
            };
            assert_bits_equal(
                &on_one_gpu::<ImprovedStaggeredHop>(&gpu, extended(global, grid, NAIK_DEPTH), &c),
                &single::<ImprovedStaggeredHop>(&gpu, &c),
                &format!("staggered grid {grid:?} {boundary:?}"),
            );
        }
    }
}

/// 2 GPUs (NCCL): the Wilson hop cut in t and the improved staggered hop cut in x, rank
/// r on GPU r, faces through NCCL on the device buffers, equal the single-GPU hops bit
/// for bit in f64.
#[test]
#[ignore = "needs 2 CUDA GPUs and libnccl.so.2 (QDSL_NCCL_LIB): run with --include-ignored"]
fn nccl_distributed_hops_on_two_gpus_equal_the_single_gpu_hops() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 61);
    let long = GaugeField::<f64>::random(global, 62);
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
        63,
    );
    let c = Case {
        variant: wilson_variant(Parity::Even, true, false, StorageFormat::F64),
        links: &[&u],
        clover: None,
        xpay: None,
        psi: &psi,
        wire: StorageFormat::F64,
        overlap: true,
        projected: false,
    };
    assert_bits_equal(
        &on_gpus_nccl::<WilsonHop>(extended(global, [1, 1, 1, 2], ONE_HOP_DEPTH), &c),
        &single::<WilsonHop>(&gpu, &c),
        "NCCL Wilson t-cut",
    );
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(global, SiteSubset::Single(Parity::Odd)),
        64,
    );
    let c = Case {
        variant: wilson_variant(Parity::Even, false, false, StorageFormat::F64),
        links: &[&u, &long],
        psi: &chi,
        ..c
    };
    assert_bits_equal(
        &on_gpus_nccl::<ImprovedStaggeredHop>(extended(global, [2, 1, 1, 1], NAIK_DEPTH), &c),
        &single::<ImprovedStaggeredHop>(&gpu, &c),
        "NCCL staggered x-cut",
    );
}

/// GPU (one): the peer transport's protocol on one GPU — every rank a thread on GPU 0,
/// faces copied on each rank's copy stream into the receiver's buffer, ordered only by
/// events — gives the single-GPU Wilson hop bit for bit in f64 over grids cutting 1, 2
/// and 4 directions (t antiperiodic), overlap on and off, both parities; and the
/// improved staggered hop (Naik faces of depth 3) cut in x and t.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn device_peer_transport_on_one_gpu_equals_the_single_gpu_hops() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 71);
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for parity in Parity::BOTH {
            let layout = SpinorLayout::wilson(global, SiteSubset::Single(parity.opposite()));
            let psi = ColourSpinorField::<f64>::gaussian(layout, 72);
            for overlap in [true, false] {
                let c = Case {
                    variant: wilson_variant(parity, true, false, StorageFormat::F64),
                    links: &[&u],
                    clover: None,
                    xpay: None,
                    psi: &psi,
                    wire: StorageFormat::F64,
                    overlap,
                    projected: false,
                };
                assert_bits_equal(
                    &on_one_gpu_peer::<WilsonHop>(&gpu, ext, &c),
                    &single::<WilsonHop>(&gpu, &c),
                    &format!("peer, grid {grid:?} {parity:?} overlap {overlap}"),
                );
            }
        }
    }
    let global = Lattice::new([8, 8, 8, 12]).unwrap();
    let u = GaugeField::<f64>::random(global, 73);
    let long = GaugeField::<f64>::random(global, 74);
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(global, SiteSubset::Single(Parity::Odd)),
        75,
    );
    for grid in [[2, 1, 1, 1], [1, 1, 1, 2]] {
        let c = Case {
            variant: wilson_variant(Parity::Even, false, false, StorageFormat::F64),
            links: &[&u, &long],
            clover: None,
            xpay: None,
            psi: &chi,
            wire: StorageFormat::F64,
            overlap: true,
            projected: false,
        };
        assert_bits_equal(
            &on_one_gpu_peer::<ImprovedStaggeredHop>(&gpu, extended(global, grid, NAIK_DEPTH), &c),
            &single::<ImprovedStaggeredHop>(&gpu, &c),
            &format!("peer staggered, grid {grid:?}"),
        );
    }
}

/// 2 or 4 GPUs (rank r on GPU r): the Wilson hop (f64, antiperiodic t, overlap on)
/// through direct peer copies and through NCCL equals the single-GPU hop bit for bit on
/// every grid of [`GRIDS`] that has at most as many ranks as there are GPUs, plus the
/// 4-rank grids 1,1,1,4 and 2,1,1,2 where 4 GPUs exist; and the improved staggered hop
/// cut in t. NCCL rows are skipped (said on stderr) where libnccl.so.2 is missing.
#[test]
#[ignore = "needs 2 or 4 CUDA GPUs (and libnccl.so.2 for the NCCL rows): run with --include-ignored"]
fn multi_gpu_peer_and_nccl_hops_on_every_grid_that_fits_equal_the_single_gpu_hops() {
    let (gpu, _dir) = crate::testing::gpu();
    let gpus = crate::backend::gpu_count().unwrap();
    assert!(gpus >= 2, "needs at least 2 GPUs, found {gpus}");
    let nccl = NcclLibrary::get().is_ok();
    if !nccl {
        eprintln!("libnccl.so.2 not found: only the peer transport is tested");
    }
    let vias: Vec<Via> = if nccl {
        vec![Via::Peer, Via::Nccl, Via::NcclGraphs]
    } else {
        vec![Via::Peer]
    };
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 81);
    let long = GaugeField::<f64>::random(global, 82);
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
        83,
    );
    let grids = GRIDS
        .into_iter()
        .chain([[1, 1, 1, 4], [2, 1, 1, 2]])
        .filter(|g| g.iter().product::<usize>() <= gpus);
    let wilson = Case {
        variant: wilson_variant(Parity::Even, false, false, StorageFormat::F64),
        links: &[&u],
        clover: None,
        xpay: None,
        psi: &psi,
        wire: StorageFormat::F64,
        overlap: true,
        projected: false,
    };
    let expected = single::<WilsonHop>(&gpu, &wilson);
    for grid in grids {
        for &via in &vias {
            assert_bits_equal(
                &on_gpus::<WilsonHop>(extended(global, grid, ONE_HOP_DEPTH), &wilson, via),
                &expected,
                &format!("{via:?} Wilson, grid {grid:?}"),
            );
        }
    }
    let chi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::staggered(global, SiteSubset::Single(Parity::Odd)),
        84,
    );
    let staggered = Case {
        links: &[&u, &long],
        psi: &chi,
        ..wilson
    };
    let expected = single::<ImprovedStaggeredHop>(&gpu, &staggered);
    for &via in &vias {
        assert_bits_equal(
            &on_gpus::<ImprovedStaggeredHop>(
                extended(global, [1, 1, 1, 2], NAIK_DEPTH),
                &staggered,
                via,
            ),
            &expected,
            &format!("{via:?} staggered t-cut"),
        );
    }
}

/// GPU: spin-projected faces (half spinors, [`qdsl_core::dsl::halo_spin`]) of the Wilson
/// hop — both output parities, plain and dagger (opposite projectors), overlap on and
/// off, grids cutting 1, 2 and 4 directions with t antiperiodic — give the single-GPU
/// hop bit for bit in f64 and f32 (the kernel's projection of the stored ½ R h is h
/// exactly), also for a 5D field (Ls = 3) and with xpay; fixed16 fields and fixed16
/// faces of f32 fields within fixed16's bound; the faces are half the bytes.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn projected_faces_give_the_single_gpu_wilson_hop_bit_for_bit() {
    let (gpu, _dir) = crate::testing::gpu();
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 91);
    for grid in GRIDS {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        for parity in Parity::BOTH {
            let layout = SpinorLayout::wilson(global, SiteSubset::Single(parity.opposite()));
            let psi = ColourSpinorField::<f64>::gaussian(layout, 92);
            for dagger in [false, true] {
                for (format, overlap) in [
                    (StorageFormat::F64, true),
                    (StorageFormat::F64, false),
                    (StorageFormat::F32, true),
                ] {
                    let c = Case {
                        variant: wilson_variant(parity, dagger, false, format),
                        links: &[&u],
                        clover: None,
                        xpay: None,
                        psi: &psi,
                        wire: format,
                        overlap,
                        projected: true,
                    };
                    assert_bits_equal(
                        &on_one_gpu::<WilsonHop>(&gpu, ext, &c),
                        &single::<WilsonHop>(&gpu, &c),
                        &format!(
                            "projected, grid {grid:?} {parity:?} dagger {dagger} {format:?} overlap {overlap}"
                        ),
                    );
                }
            }
        }
    }
    narrow_formats_and_5d(&gpu, global, &u, 93, true);
    let ext = extended(global, [1, 1, 2, 2], ONE_HOP_DEPTH);
    // Half the bytes: 12 reals per face site instead of 24.
    let whole = DeviceDistributedHop::new(&gpu, ext, 24, StorageFormat::F32, StorageFormat::F32, 1)
        .unwrap();
    let half = DeviceDistributedHop::projected(
        &gpu,
        ext,
        (24, StorageFormat::F32, StorageFormat::F32, 1),
        [false, true].map(|d| HaloProjections::of(&WilsonHop::ir(), d)),
    )
    .unwrap();
    assert_eq!(2 * half.face_bytes(), whole.face_bytes());
}

/// 2 or 4 GPUs: projected faces through NCCL and through peer copies, the Wilson hop
/// (f64 and f32, plain and dagger) on every grid that fits, bit for bit.
#[test]
#[ignore = "needs 2 CUDA GPUs (4 for the 4-rank grids) and libnccl.so.2: run with --include-ignored"]
fn multi_gpu_projected_faces_equal_the_single_gpu_hop() {
    let (gpu, _dir) = crate::testing::gpu();
    let gpus = crate::backend::gpu_count().unwrap();
    assert!(gpus >= 2, "needs at least 2 GPUs, found {gpus}");
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let u = GaugeField::<f64>::random(global, 96);
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
        97,
    );
    let vias = if NcclLibrary::get().is_ok() {
        vec![Via::Peer, Via::Nccl, Via::NcclGraphs]
    } else {
        eprintln!("libnccl.so.2 not found: only the peer transport is tested");
        vec![Via::Peer]
    };
    let grids = GRIDS
        .into_iter()
        .chain([[1, 1, 1, 4], [2, 2, 1, 1]])
        .filter(|g| g.iter().product::<usize>() <= gpus);
    for grid in grids {
        for (format, dagger) in [(StorageFormat::F64, false), (StorageFormat::F32, true)] {
            let c = Case {
                variant: wilson_variant(Parity::Even, dagger, false, format),
                links: &[&u],
                clover: None,
                xpay: None,
                psi: &psi,
                wire: format,
                overlap: true,
                projected: true,
            };
            let expected = single::<WilsonHop>(&gpu, &c);
            for &via in &vias {
                assert_bits_equal(
                    &on_gpus::<WilsonHop>(extended(global, grid, ONE_HOP_DEPTH), &c, via),
                    &expected,
                    &format!("{via:?} projected {format:?} dagger {dagger}, grid {grid:?}"),
                );
            }
        }
    }
}

/// A rank's solver context on GPU `ordinal` (tuning off) whose reductions are global
/// through `transport`.
fn rank_context(
    ordinal: usize,
    transport: &super::SharedTransport,
) -> (
    std::sync::Arc<crate::solver::device::DeviceContext>,
    tempfile::TempDir,
) {
    let backend = crate::backend::CudaBackend::new(ordinal).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gpu = Gpu::new(backend, crate::testing::jit(dir.path()));
    let tuner = crate::tune::Tuner::new(&dir.path().join("tune.tsv"), gpu.fingerprint("test"))
        .with_enabled(false)
        .with_progress(false);
    let ctx = crate::solver::device::DeviceContext::distributed(
        gpu,
        tuner,
        super::global_sum(std::sync::Arc::clone(transport)),
    )
    .unwrap();
    (ctx, dir)
}

/// GPU: CG on the even-odd Wilson normal equations (κ = 0.12, antiperiodic t, f64 and
/// f64–f32 mixed precision), decomposed over 2 ranks cutting t on ONE GPU (HostStaged
/// transport), reaches the single-GPU solve's iteration count (±1) and true residual
/// (the same tolerance, recomputed with the CPU operator); the distributed vectors'
/// global sums are rank-ordered and deterministic (two runs give the same iterations
/// and bits).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn distributed_wilson_cg_on_two_ranks_matches_the_single_gpu_solve() {
    use crate::solver::device::{DeviceOperator, DeviceVector, Double, Single};
    use crate::solver::{
        cg, LinearOperator, NormalForm, NormalOperator, SolverField, SolverOptions,
    };
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let gauge = GaugeField::<f64>::random(global, 71);
    let boundary = TimeBoundary::Antiperiodic;
    let cpu = crate::operator::EvenOddWilson::new(gauge.clone(), 0.12, Parity::Even, boundary);
    let layout = cpu.layout();
    let source = ColourSpinorField::<f64>::gaussian(layout, 72);
    let mut b = source.zeros_like();
    cpu.apply_dagger(&mut b, &source).unwrap();
    let opts = SolverOptions {
        tolerance: 1e-10,
        max_iterations: 5000,
        ..SolverOptions::default()
    };
    let true_residual = |x: &ColourSpinorField<f64>| {
        let (mut t, mut r) = (x.zeros_like(), x.zeros_like());
        cpu.apply(&mut t, x).unwrap();
        cpu.apply_dagger(&mut r, &t).unwrap();
        r.axpy(Complex::new(-1.0, 0.0), &b).unwrap();
        (r.norm_sqr() / b.norm_sqr()).sqrt()
    };
    // One GPU.
    let (ctx, _dir) = crate::testing::context();
    let mut single = Vec::new();
    for mixed in [false, true] {
        let high =
            DeviceOperator::<Double>::wilson(&ctx, &gauge, 0.12, Parity::Even, boundary).unwrap();
        let db = DeviceVector::<Double>::upload(&ctx, &b).unwrap();
        let mut x = db.zeros_like();
        let hn = NormalOperator::new(&high, NormalForm::MdagM);
        let r = if mixed {
            let low = DeviceOperator::<Single>::wilson(&ctx, &gauge, 0.12, Parity::Even, boundary)
                .unwrap();
            let ln = NormalOperator::new(&low, NormalForm::MdagM);
            cg::<_, DeviceVector<Single>, _, _>(&hn, &ln, &db, &mut x, &opts).unwrap()
        } else {
            cg(&hn, &hn, &db, &mut x, &opts).unwrap()
        };
        assert!(r.is_converged(), "{r:?}");
        single.push((r.iterations, true_residual(&x.download(layout).unwrap())));
    }
    // Two ranks on GPU 0, twice (determinism).
    let ext = extended(global, [1, 1, 1, 2], ONE_HOP_DEPTH);
    let mut runs = Vec::new();
    for _ in 0..2 {
        for (k, mixed) in [false, true].into_iter().enumerate() {
            let parts = run_ranks(2, CommConfig::default(), |comm| {
                let rank = Communicator::rank(&comm);
                let shared = SharedComm::new(comm);
                let transport = super::share_transport(HostStaged::new(shared.clone()));
                let (ctx, _dir) = rank_context(0, &transport);
                let mut part = scatter(&gauge, &ext, rank).unwrap();
                crate::distributed::fill_link_halos(&shared, &mut part, &ext).unwrap();
                let dist = super::RankDistribution::new(ext, transport);
                let high = DeviceOperator::<Double>::wilson_distributed(
                    &ctx,
                    &dist,
                    &part,
                    0.12,
                    Parity::Even,
                    boundary,
                )
                .unwrap();
                let b_part = scatter(&b, &ext, rank).unwrap();
                let db = DeviceVector::<Double>::upload(&ctx, &b_part).unwrap();
                let mut x = db.zeros_like();
                let hn = NormalOperator::new(&high, NormalForm::MdagM);
                let r = if mixed {
                    let low = DeviceOperator::<Single>::wilson_distributed(
                        &ctx,
                        &dist,
                        &part,
                        0.12,
                        Parity::Even,
                        boundary,
                    )
                    .unwrap();
                    let ln = NormalOperator::new(&low, NormalForm::MdagM);
                    cg::<_, DeviceVector<Single>, _, _>(&hn, &ln, &db, &mut x, &opts).unwrap()
                } else {
                    cg(&hn, &hn, &db, &mut x, &opts).unwrap()
                };
                assert!(r.is_converged(), "rank {rank}: {r:?}");
                (r.iterations, x.download(*b_part.layout()).unwrap())
            });
            let iterations = parts[0].0;
            assert!(parts.iter().all(|p| p.0 == iterations), "ranks disagree");
            let fields: Vec<ColourSpinorField<f64>> = parts.into_iter().map(|p| p.1).collect();
            let x = gather(&fields, &ext).unwrap();
            let res = true_residual(&x);
            let (it1, res1) = single[k];
            println!("mixed {mixed}: 2 ranks {iterations} iterations, residual {res:e}; one GPU {it1}, {res1:e}");
            assert!(
                iterations.abs_diff(it1) <= 1,
                "mixed {mixed}: {iterations} vs {it1}"
            );
            assert!(
                res <= 1.5e-10 && res1 <= 1.5e-10,
                "mixed {mixed}: {res:e}, {res1:e}"
            );
            runs.push((iterations, x));
        }
    }
    for k in 0..2 {
        assert_eq!(runs[k].0, runs[k + 2].0, "run to run iterations");
        assert_eq!(runs[k].1, runs[k + 2].1, "run to run solution bits");
    }
}

/// M ψ and M† ψ of the device operator `op`, downloaded in `layout`.
fn applied_both_ways(
    op: &crate::solver::device::DeviceOperator<crate::solver::device::Double>,
    psi: &crate::solver::device::DeviceVector<crate::solver::device::Double>,
    layout: SpinorLayout,
) -> [ColourSpinorField<f64>; 2] {
    use crate::solver::{LinearOperator, SolverField};
    [false, true].map(|dagger| {
        let mut out = psi.zeros_like();
        match dagger {
            false => op.apply(&mut out, psi).unwrap(),
            true => op.apply_dagger(&mut out, psi).unwrap(),
        }
        out.download(layout).unwrap()
    })
}

/// GPU: the distributed Möbius M̂ (Ls = 4, b5 = 1.5, c5 = 0.5, M5 = 1.8, m = 0.05,
/// antiperiodic t) — M_φ and M5⁻¹ s-local, the 4D hop on every slice distributed with
/// spin-projected faces of Ls slices — equals one GPU's fused M̂ and M̂† within f64
/// rounding on grids cutting t, z·t and all four directions (ranks on GPU 0), and CG on
/// M̂†M̂ reaches the single-GPU iteration count (±1) and true residual.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn distributed_mobius_equals_the_single_gpu_operator_and_solves_alike() {
    use crate::operator::mobius::MobiusParams;
    use crate::solver::device::{DeviceOperator, DeviceVector, Double};
    use crate::solver::{cg, NormalForm, NormalOperator, SolverField, SolverOptions};
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let gauge = GaugeField::<f64>::random(global, 101);
    let params = MobiusParams::mobius(4, 1.5, 0.5, 1.8, 0.05).unwrap();
    let boundary = TimeBoundary::Antiperiodic;
    let layout = SpinorLayout::new(global, 4, SiteSubset::Single(Parity::Even), 4, 3).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(layout, 102);
    let opts = SolverOptions {
        tolerance: 1e-10,
        max_iterations: 5000,
        ..SolverOptions::default()
    };
    // One GPU: M̂ψ, M̂†ψ and a CG solve of M̂†M̂ x = ψ.
    let (ctx, _dir) = crate::testing::context();
    let one = DeviceOperator::<Double>::mobius(
        &ctx,
        &gauge,
        params.clone(),
        Parity::Even,
        boundary,
        M5invMode::Sweep,
    )
    .unwrap();
    let d_psi = DeviceVector::<Double>::upload(&ctx, &psi).unwrap();
    let applied = applied_both_ways(&one, &d_psi, layout);
    let mut x1 = d_psi.zeros_like();
    let normal = NormalOperator::new(&one, NormalForm::MdagM);
    let r1 = cg(&normal, &normal, &d_psi, &mut x1, &opts).unwrap();
    assert!(r1.is_converged(), "{r1:?}");
    for grid in [[1, 1, 1, 2], [1, 1, 2, 2], [2, 2, 2, 2]] {
        let ext = extended(global, grid, ONE_HOP_DEPTH);
        let size = ext.decomposition().size();
        let parts = run_ranks(size, CommConfig::default(), |comm| {
            let rank = Communicator::rank(&comm);
            let shared = SharedComm::new(comm);
            let transport = super::share_transport(HostStaged::new(shared.clone()));
            let (ctx, _dir) = rank_context(0, &transport);
            let mut part = scatter(&gauge, &ext, rank).unwrap();
            crate::distributed::fill_link_halos(&shared, &mut part, &ext).unwrap();
            let dist = super::RankDistribution::new(ext, transport);
            // Every box of these grids pairs its sites except, possibly, the 2⁴-local
            // ones': there M̂ runs QUDA's fused chains over the boxes.
            if grid != [2, 2, 2, 2] {
                let formats = Variant {
                    spinor: StorageFormat::F64,
                    gauge: StorageFormat::F64,
                    boundary,
                    ..Variant::default()
                };
                let blocks = crate::operator::mobius::DistributedMobiusBlocks::new(
                    crate::operator::device::DeviceRun::new(ctx.gpu(), ctx.tuner()),
                    &dist,
                    &part,
                    params.clone(),
                    Parity::Even,
                    (&formats, boundary),
                )
                .unwrap();
                assert!(
                    crate::operator::even_odd::EvenOddBlocks::fuses_complement(&blocks),
                    "grid {grid:?}: the fused chains over the boxes"
                );
            }
            let op = DeviceOperator::<Double>::mobius_distributed(
                &ctx,
                &dist,
                &part,
                params.clone(),
                Parity::Even,
                boundary,
            )
            .unwrap();
            let src = scatter(&psi, &ext, rank).unwrap();
            let d_src = DeviceVector::<Double>::upload(&ctx, &src).unwrap();
            let outs = applied_both_ways(&op, &d_src, *src.layout());
            let mut x = d_src.zeros_like();
            let normal = NormalOperator::new(&op, NormalForm::MdagM);
            let r = cg(&normal, &normal, &d_src, &mut x, &opts).unwrap();
            assert!(r.is_converged(), "rank {rank}: {r:?}");
            (outs, r.iterations, x.download(*src.layout()).unwrap())
        });
        for (k, dagger) in [false, true].into_iter().enumerate() {
            let fields: Vec<ColourSpinorField<f64>> =
                parts.iter().map(|p| p.0[k].clone()).collect();
            let got = gather(&fields, &ext).unwrap();
            let err = crate::testing::relative_distance(&got, &applied[k]);
            assert!(err < 1e-12, "grid {grid:?} dagger {dagger}: {err:e}");
        }
        let iterations = parts[0].1;
        assert!(
            iterations.abs_diff(r1.iterations) <= 1,
            "grid {grid:?}: {iterations} iterations against {}",
            r1.iterations
        );
        let xs: Vec<ColourSpinorField<f64>> = parts.into_iter().map(|p| p.2).collect();
        let x = gather(&xs, &ext).unwrap();
        let err = crate::testing::relative_distance(&x, &x1.download(layout).unwrap());
        println!(
            "Möbius grid {grid:?}: {iterations} iterations (one GPU {}), ‖Δx‖/‖x‖ {err:e}",
            r1.iterations
        );
        assert!(err < 1e-8, "grid {grid:?}: solutions differ by {err:e}");
    }
}

/// GPU: the distributed Wilson-clover M̂ (c_sw 1.2, κ 0.12, antiperiodic t; plain and
/// twisted, μ = 0.05) — the hops through the faces, the site-local A_pp and D_qq⁻¹ on
/// every extended site (A a unit matrix on the halo) — equals one GPU's M̂ and M̂† within
/// f64 rounding on grids cutting t and z·t (ranks on GPU 0, host-staged faces).
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn distributed_clover_equals_the_single_gpu_operator() {
    use crate::solver::device::{DeviceOperator, DeviceVector, Double};
    let global = Lattice::new([4, 4, 4, 8]).unwrap();
    let gauge = GaugeField::<f64>::random(global, 111);
    let a = qdsl_core::gauge::clover_field(&gauge, 1.0 / (2.0 * 0.12) - 4.0, 1.2);
    let boundary = TimeBoundary::Antiperiodic;
    let layout = SpinorLayout::new(global, 1, SiteSubset::Single(Parity::Even), 4, 3).unwrap();
    let psi = ColourSpinorField::<f64>::gaussian(layout, 112);
    let (ctx, _dir) = crate::testing::context();
    let d_psi = DeviceVector::<Double>::upload(&ctx, &psi).unwrap();
    for mu in [0.0, 0.05] {
        let one =
            DeviceOperator::<Double>::clover(&ctx, &gauge, &a, mu, Parity::Even, boundary).unwrap();
        let applied = applied_both_ways(&one, &d_psi, layout);
        for grid in [[1, 1, 1, 2], [1, 1, 2, 2]] {
            let ext = extended(global, grid, ONE_HOP_DEPTH);
            let parts = run_ranks(ext.decomposition().size(), CommConfig::default(), |comm| {
                let rank = Communicator::rank(&comm);
                let shared = SharedComm::new(comm);
                let transport = super::share_transport(HostStaged::new(shared.clone()));
                let (ctx, _dir) = rank_context(0, &transport);
                let mut links = scatter(&gauge, &ext, rank).unwrap();
                crate::distributed::fill_link_halos(&shared, &mut links, &ext).unwrap();
                let mut a_part = scatter(&a, &ext, rank).unwrap();
                crate::distributed::unit_clover_on_halo_sites(&mut a_part, &ext);
                let dist = super::RankDistribution::new(ext, transport);
                let op = DeviceOperator::<Double>::clover_distributed(
                    &ctx,
                    &dist,
                    (&links, &a_part),
                    mu,
                    Parity::Even,
                    boundary,
                )
                .unwrap();
                let src = scatter(&psi, &ext, rank).unwrap();
                let d_src = DeviceVector::<Double>::upload(&ctx, &src).unwrap();
                applied_both_ways(&op, &d_src, *src.layout())
            });
            for (k, dagger) in [false, true].into_iter().enumerate() {
                let fields: Vec<ColourSpinorField<f64>> =
                    parts.iter().map(|p| p[k].clone()).collect();
                let got = gather(&fields, &ext).unwrap();
                let err = crate::testing::relative_distance(&got, &applied[k]);
                assert!(err < 1e-12, "μ {mu} grid {grid:?} dagger {dagger}: {err:e}");
            }
        }
    }
}

/// 2 GPUs (NCCL): a peer that stops taking part (rank 1 joins NCCL, then never posts its
/// faces) ends rank 0's hop at the communicator's timeout (3 s here) with an error
/// naming rank 1, never a hang: NCCL's first contact with a peer (its lazy connection
/// handshake, which blocks the host) is bounded like the stream waits. The ranks run on
/// detached threads and report through a channel, so that a hang anywhere (in the hop
/// or in releasing rank 0's GPU after the error) fails the test instead of blocking it;
/// rank 1 never destroys its communicator, as a dead process would not.
#[test]
#[ignore = "needs 2 CUDA GPUs and libnccl.so.2 (QDSL_NCCL_LIB): run with --include-ignored"]
fn multi_gpu_a_silent_peer_ends_the_hop_with_a_timeout_naming_it() {
    a_silent_peer_ends_the_hop(false);
}

/// The same with the hop replayed from a CUDA graph: both ranks apply it until it was
/// captured (eagerly, then captured and replayed), then rank 1 falls silent; rank 0's
/// next application, a replay, ends at the timeout with an error naming rank 1.
#[test]
#[ignore = "needs 2 CUDA GPUs and libnccl.so.2 (QDSL_NCCL_LIB): run with --include-ignored"]
fn multi_gpu_a_silent_peer_ends_a_replayed_hop_with_a_timeout_naming_it() {
    a_silent_peer_ends_the_hop(true);
}

/// Rank 1 silent after the applications both ranks share (none; with `graphs` up to the
/// capture),
/// rank 0's next application must end at the timeout naming rank 1.
fn a_silent_peer_ends_the_hop(graphs: bool) {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let gpus = crate::backend::gpu_count().unwrap();
    assert!(gpus >= 2, "needs 2 GPUs, found {gpus}");
    NcclLibrary::get().unwrap_or_else(|e| panic!("NCCL: {e} (QDSL_NCCL_LIB names libnccl.so.2)"));
    let global = Lattice::new([8, 8, 8, 8]).unwrap();
    let ext = extended(global, [1, 1, 1, 2], ONE_HOP_DEPTH);
    let psi = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::wilson(global, SiteSubset::Single(Parity::Odd)),
        111,
    );
    let config = CommConfig {
        timeout: Duration::from_secs(3),
    };
    /// What rank 0 reports: the hop's result and how long it took, then that its GPU
    /// objects were released.
    enum Report {
        Hop(Result<(), String>, Duration),
        Released,
    }
    let (tx, rx) = mpsc::channel::<Report>();
    for mut comm in ThreadComm::group(2, config) {
        let (tx, ext, psi) = (tx.clone(), ext, psi.clone());
        std::thread::spawn(move || {
            let rank = Communicator::rank(&comm);
            let backend = match graphs {
                true => crate::backend::CudaBackend::with_own_stream(rank),
                false => crate::backend::CudaBackend::new(rank),
            }
            .unwrap();
            let dir = tempfile::tempdir().unwrap();
            let gpu = Gpu::new(backend, crate::testing::jit(dir.path()));
            let mut transport = NcclTransport::among(&gpu, &mut comm, 2, config).unwrap();
            let hop =
                DeviceDistributedHop::new(&gpu, ext, 24, StorageFormat::F64, StorageFormat::F64, 1)
                    .unwrap()
                    .with_graphs(graphs);
            let mut d_psi = DeviceField::from_spinor(
                &gpu,
                &scatter(&psi, &ext, rank).unwrap(),
                StorageFormat::F64.fermion_format(),
            )
            .unwrap();
            let mut apply = || {
                hop.apply_replayed(
                    &gpu,
                    &mut transport,
                    &BoundaryConditions::antiperiodic_time(),
                    &mut d_psi,
                    Parity::Odd,
                    false,
                    Some(0),
                    |_, _| Ok(()),
                )
            };
            let shared = if graphs {
                super::EAGER_APPLICATIONS + 1
            } else {
                0
            };
            for k in 0..shared {
                apply().unwrap_or_else(|e| panic!("rank {rank}, application {k}: {e}"));
            }
            if rank == 1 {
                // Alive but silent past rank 0's deadline, then gone without a word.
                std::thread::sleep(Duration::from_secs(20));
                std::mem::forget(transport);
                std::mem::forget(d_psi);
                return;
            }
            let started = Instant::now();
            let r = apply();
            let waited = started.elapsed();
            let _ = tx.send(Report::Hop(r.map_err(|e| e.to_string()), waited));
            drop((d_psi, hop, transport, gpu));
            let _ = tx.send(Report::Released);
        });
    }
    drop(tx);
    let started = Instant::now();
    let Ok(Report::Hop(r, waited)) = rx.recv_timeout(Duration::from_secs(60)) else {
        panic!("rank 0's hop did not end within 60 s: the silent peer hung it");
    };
    println!("rank 0's hop ended after {waited:?}: {r:?}");
    let e = r.expect_err("a silent peer must end the hop");
    assert!(e.contains("rank 1") && e.contains("3 s"), "{e}");
    assert!(waited.as_secs_f64() < 8.0, "waited {waited:?}");
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_secs(30)),
            Ok(Report::Released)
        ),
        "rank 0 did not release its GPU within 30 s of the timeout ({:?} after the hop)",
        started.elapsed()
    );
}
