//! [`DeviceLinkHalo`]: the one exchange of an extended-volume smearing
//! ([`crate::distributed::smear`]) on the GPU — the thin links' halo of faces, edges and
//! corners filled in place on the device, through any [`DeviceTransport`].
//!
//! The links live on the device in the host layout (link 4·cb + μ of the extended
//! lattice at reals 18·(4·cb + μ), what [`crate::smear::GpuSmearer::smear_device_links`]
//! reads). As on the host ([`crate::distributed::exchange_halos`] with
//! [`HaloShape::FacesAndCorners`](qdsl_core::lattice::HaloShape::FacesAndCorners)), the
//! cut directions are exchanged one after the other, and the slab sent along μ spans
//! the halos of the directions exchanged before μ, so the edges and corners arrive in
//! the later rounds. Unlike the host's slabs (the whole extended lattice in the other
//! directions), a slab spans only the local range in the directions exchanged after μ:
//! every halo site is received once ([`ExtendedSmearCost`] bytes). Per round: both
//! boundary slabs packed (a box of sites, lexicographic, 72 reals per site), the
//! transport's grouped exchange, both halo slabs unpacked — all queued on the GPU's
//! stream.
//!
//! [`ExtendedSmearCost`]: crate::distributed::smear::ExtendedSmearCost

use super::transport::{DeviceTransport, FaceRecv, FaceSend};
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::Gpu;
use crate::distributed::{face_tag, DistributedError};
use crate::smear::GpuReal;
use cudarc::driver::CudaSlice;
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use qdsl_core::lattice::{ExtendedLattice, Lattice, Side, SiteBox};

/// Reals of one site's four links (4 × 18).
const SITE_REALS: usize = 72;

/// One face of a round: where it is packed from and unpacked to, and its buffers.
#[derive(Debug)]
struct LinkFace {
    side: Side,
    /// The boundary slab sent to the neighbour on `side`.
    boundary: SiteBox,
    /// The halo slab filled from that neighbour.
    halo: SiteBox,
    send: CudaSlice<u8>,
    recv: CudaSlice<u8>,
}

/// The device exchange of the thin links' halo (module docs) on one rank's extended
/// lattice, for links of `T`.
#[derive(Debug)]
pub struct DeviceLinkHalo<T> {
    ext: ExtendedLattice,
    /// The cut directions in order, each with its two faces.
    rounds: Vec<(usize, [LinkFace; 2])>,
    copies: BoxCopies,
    _real: std::marker::PhantomData<T>,
}

/// The pack and unpack kernels over boxes of the extended lattice `lattice`.
#[derive(Debug)]
struct BoxCopies {
    pack: LoadedKernel,
    unpack: LoadedKernel,
    lattice: Lattice,
}

impl<T: GpuReal> DeviceLinkHalo<T> {
    /// The exchange on `ext` (its depth: the smearing's reach, checked by the caller with
    /// [`crate::distributed::smear::check_smearing_depth`]), its kernels compiled and
    /// its face buffers allocated on `gpu`.
    pub fn new(gpu: &Gpu, ext: ExtendedLattice) -> Result<Self, DistributedError> {
        let device = |e: crate::device::DeviceError| DistributedError::Operator(e.to_string());
        let program = box_copy_program::<T>();
        let kernels = load_program(gpu, &program).map_err(device)?;
        let find = |name: &str| {
            kernels
                .iter()
                .find(|k| k.interface.name == name)
                .cloned()
                .ok_or_else(|| {
                    DistributedError::Operator(format!("{}: no kernel {name}", program.name))
                })
        };
        let (pack, unpack) = (find(PACK)?, find(UNPACK)?);
        let mut rounds = Vec::new();
        for mu in 0..4 {
            let mut faces = Vec::new();
            for side in Side::BOTH {
                let Some([boundary, halo]) = round_boxes(&ext, mu, side) else {
                    continue;
                };
                let bytes = |b: &SiteBox| b.volume() * SITE_REALS * std::mem::size_of::<T>();
                faces.push(LinkFace {
                    side,
                    boundary,
                    halo,
                    send: gpu
                        .alloc::<u8>("a thin-link face", bytes(&boundary))
                        .map_err(device)?,
                    recv: gpu
                        .alloc::<u8>("a thin-link halo", bytes(&halo))
                        .map_err(device)?,
                });
            }
            if let Ok(pair) = <[LinkFace; 2]>::try_from(faces) {
                rounds.push((mu, pair));
            }
        }
        Ok(Self {
            copies: BoxCopies {
                pack,
                unpack,
                lattice: *ext.extended(),
            },
            ext,
            rounds,
            _real: std::marker::PhantomData,
        })
    }

    /// Bytes of thin links this rank receives per exchange.
    pub fn halo_bytes(&self) -> usize {
        self.rounds
            .iter()
            .flat_map(|(_, faces)| faces.iter().map(|f| f.recv.len()))
            .sum()
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
        let operation = "extended-volume smearing: thin links on the device";
        let expected = 4 * self.ext.extended().volume() * 18;
        if links.len() != expected {
            return Err(DistributedError::Operator(format!(
                "{operation}: {} reals of links given, the extended lattice {} holds {expected}",
                links.len(),
                self.ext.extended()
            )));
        }
        let rank = transport.rank();
        let dec = *self.ext.decomposition();
        for (mu, faces) in &mut self.rounds {
            let mu = *mu;
            for f in faces.iter_mut() {
                self.copies.pack(gpu, links, &f.boundary, &mut f.send)?;
            }
            let (sends, mut recvs): (Vec<FaceSend<'_>>, Vec<FaceRecv<'_>>) = faces
                .iter_mut()
                .map(|f| {
                    let peer = dec.neighbour(rank, mu, f.side);
                    (
                        FaceSend {
                            peer,
                            tag: face_tag(mu, f.side),
                            values: &f.send,
                            norms: None,
                        },
                        FaceRecv {
                            peer,
                            tag: face_tag(mu, f.side.opposite()),
                            values: &mut f.recv,
                            norms: None,
                        },
                    )
                })
                .unzip();
            transport.packed(gpu, operation, &sends)?;
            transport.post(gpu, operation, &sends, &recvs)?;
            transport.complete(gpu, operation, &sends, &mut recvs)?;
            drop((sends, recvs));
            for f in faces.iter() {
                self.copies.unpack(gpu, &f.recv, &f.halo, links)?;
            }
        }
        Ok(())
    }
}

impl BoxCopies {
    /// Queues face ← the links of the sites of `b` (lexicographic in the box).
    fn pack<T: GpuReal>(
        &self,
        gpu: &Gpu,
        links: &CudaSlice<T>,
        b: &SiteBox,
        face: &mut CudaSlice<u8>,
    ) -> Result<(), DistributedError> {
        let mut a = Args::new();
        a.read("links", links).write("face", face);
        self.launch(gpu, &self.pack, b, a)
    }

    /// Queues the links of the sites of `b` ← face.
    fn unpack<T: GpuReal>(
        &self,
        gpu: &Gpu,
        face: &CudaSlice<u8>,
        b: &SiteBox,
        links: &mut CudaSlice<T>,
    ) -> Result<(), DistributedError> {
        let mut a = Args::new();
        a.read("face", face).write("links", links);
        self.launch(gpu, &self.unpack, b, a)
    }

    /// Queues `kernel` over the reals of the sites of `b` with the buffers bound in `a`,
    /// binding the box's corner and extents and the extended lattice's extents and half
    /// volume.
    fn launch<'a>(
        &self,
        gpu: &'a Gpu,
        kernel: &LoadedKernel,
        b: &SiteBox,
        mut a: Args<'a>,
    ) -> Result<(), DistributedError> {
        let lattice = &self.lattice;
        for mu in 0..4 {
            a.count(&format!("lo{mu}"), b.lo[mu]);
            a.count(&format!("n{mu}"), b.n[mu]);
            a.count(&format!("L{mu}"), lattice.extent(mu));
        }
        a.count("sites", b.volume());
        a.count("half_volume", lattice.half_volume());
        kernel
            .launch_default(gpu, [b.volume() * SITE_REALS, 1, 1], a)
            .map_err(|e| DistributedError::Operator(e.to_string()))
    }
}

/// The boundary slab sent towards `side` of μ and the halo slab filled from that
/// neighbour in μ's round: the face boxes ([`ExtendedLattice::face_boxes`], the local
/// range in the other directions) widened by the halo depth in the cut directions
/// exchanged before μ, so that they carry those directions' halos (the edges and
/// corners). Every halo site is received exactly once; `None` when μ is not cut.
fn round_boxes(ext: &ExtendedLattice, mu: usize, side: Side) -> Option<[SiteBox; 2]> {
    let d = ext.depth();
    ext.face_boxes(mu, side).map(|boxes| {
        boxes.map(|mut b| {
            for nu in (0..mu).filter(|&nu| ext.decomposition().grid().is_cut(nu)) {
                b.lo[nu] -= d;
                b.n[nu] += 2 * d;
            }
            b
        })
    })
}

const PACK: &str = "link_box_pack";
const UNPACK: &str = "link_box_unpack";

/// The two box copies of `T` links: one thread per real of a box site (72 per site, the
/// site's four links contiguous at 72·cb in the host layout), the box's sites in
/// lexicographic order (x fastest) on the face.
fn box_copy_program<T: GpuReal>() -> KernelProgram {
    let real = T::ELEM;
    let c_type = if real == Elem::F64 { "double" } else { "float" };
    let index = r#"
__device__ __forceinline__ bool box_site(long long g, int sites, int lo0, int lo1, int lo2,
    int lo3, int n0, int n1, int n2, int L0, int L1, int L2, int half_volume,
    long long* at, long long* on_face) {
  if (g >= (long long)sites * 72) return false;
  long long i = g / 72;
  int k = (int)(g - i * 72);
  int x = (int)(i % n0); long long r = i / n0;
  int y = (int)(r % n1); r /= n1;
  int z = (int)(r % n2); int t = (int)(r / n2);
  x += lo0; y += lo1; z += lo2; t += lo3;
  long long lex = x + (long long)L0 * (y + (long long)L1 * (z + (long long)L2 * t));
  long long cb = (long long)((x + y + z + t) & 1) * half_volume + lex / 2;
  *at = cb * 72 + k;
  *on_face = g;
  return true;
}
"#;
    let params = "int sites, int lo0, int lo1, int lo2, int lo3, int n0, int n1, int n2, \
                  int n3, int L0, int L1, int L2, int L3, int half_volume";
    let call = "box_site((long long)blockIdx.x * blockDim.x + threadIdx.x, sites, lo0, lo1, \
                lo2, lo3, n0, n1, n2, L0, L1, L2, half_volume, &at, &on_face)";
    let source = format!(
        "typedef {c_type} real;\n{index}\n\
         extern \"C\" __global__ void {PACK}(const real* __restrict__ links, \
         unsigned char* __restrict__ face, {params}) {{\n\
           long long at, on_face;\n\
           if ({call}) ((real*)face)[on_face] = links[at];\n\
         }}\n\
         extern \"C\" __global__ void {UNPACK}(const unsigned char* __restrict__ face, \
         real* __restrict__ links, {params}) {{\n\
           long long at, on_face;\n\
           if ({call}) links[at] = ((const real*)face)[on_face];\n\
         }}\n"
    );
    let p = |name: &str, kind: ParamKind| ParamDecl::new(name, kind);
    let ints = |out: &mut Vec<ParamDecl>| {
        out.push(p("sites", ParamKind::I32));
        for prefix in ["lo", "n", "L"] {
            for mu in 0..4 {
                out.push(p(&format!("{prefix}{mu}"), ParamKind::I32));
            }
        }
        out.push(p("half_volume", ParamKind::I32));
    };
    let mut pack = vec![
        p("links", ParamKind::read(real)),
        p("face", ParamKind::write(Elem::U8)),
    ];
    ints(&mut pack);
    let mut unpack = vec![
        p("face", ParamKind::read(Elem::U8)),
        p("links", ParamKind::write(real)),
    ];
    ints(&mut unpack);
    KernelProgram {
        name: format!("link_box_copy_{c_type}"),
        source,
        options: Vec::new(),
        kernels: vec![
            KernelInterface {
                name: PACK.into(),
                params: pack,
                geometry: Geometry::linear(),
            },
            KernelInterface {
                name: UNPACK.into(),
                params: unpack,
                geometry: Geometry::linear(),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declared interface is its source's signature (the launcher binds by it).
    #[test]
    fn the_box_copies_declare_their_interfaces() {
        for p in [box_copy_program::<f32>(), box_copy_program::<f64>()] {
            assert_eq!(p.kernels.len(), 2, "{}", p.name);
            assert_eq!(p.signature_mismatches(), Vec::<String>::new(), "{}", p.name);
        }
    }

    /// The rounds' halo boxes hold every halo site of faces, edges and corners exactly
    /// once, and each round's boundary box has its halo box's extents.
    #[test]
    fn the_rounds_receive_every_halo_site_once() {
        use qdsl_core::lattice::decomposition::{Decomposition, ProcessGrid};
        use qdsl_core::lattice::HaloShape;
        for (dims, grid, depth) in [
            ([8, 8, 8, 8], [1, 1, 1, 2], 3),
            ([8, 8, 8, 8], [1, 1, 2, 2], 3),
            ([8, 8, 8, 8], [2, 2, 2, 2], 2),
            ([4, 8, 4, 8], [2, 1, 1, 2], 1),
        ] {
            let lattice = Lattice::new(dims).unwrap();
            let dec =
                Decomposition::with_halo_depth(lattice, ProcessGrid::new(grid).unwrap(), depth)
                    .unwrap();
            let ext = ExtendedLattice::new(dec, depth).unwrap();
            let mut received = Vec::new();
            for mu in 0..4 {
                for side in Side::BOTH {
                    let Some([boundary, halo]) = round_boxes(&ext, mu, side) else {
                        continue;
                    };
                    assert_eq!(boundary.n, halo.n, "{grid:?} {mu} {side:?}");
                    for i in 0..halo.volume() {
                        let mut c = halo.lo;
                        let mut r = i;
                        for (nu, c) in c.iter_mut().enumerate() {
                            *c += r % halo.n[nu];
                            r /= halo.n[nu];
                        }
                        received.push(c);
                    }
                }
            }
            let count = received.len();
            received.sort();
            received.dedup();
            assert_eq!(
                received.len(),
                count,
                "{grid:?}: a halo site received twice"
            );
            let mut expected = ext.halo_sites(HaloShape::FacesAndCorners);
            expected.sort();
            assert_eq!(received, expected, "{grid:?}");
        }
    }

    /// NVRTC compiles both programs for sm_90 (skipped where libnvrtc is absent).
    #[test]
    #[cfg_attr(
        not(qdsl_nvrtc),
        ignore = "needs NVRTC and ptxas (not found when the tests were built)"
    )]
    fn the_box_copies_compile_for_sm_90() {
        let root = tempfile::tempdir().unwrap();
        let jit = crate::testing::jit(root.path());
        for p in [box_copy_program::<f32>(), box_copy_program::<f64>()] {
            let ptx = jit
                .compile(&p.name, &p.source, crate::jit::Arch::SM_90, &[])
                .unwrap_or_else(|e| panic!("{e}\n{}", p.source));
            for k in &p.kernels {
                assert!(
                    ptx.ptx.contains(&format!(".entry {}", k.name)),
                    "{}",
                    k.name
                );
            }
        }
    }
}
