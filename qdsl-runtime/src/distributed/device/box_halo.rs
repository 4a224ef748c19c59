//! [`BoxHalo`]: the halo of a device buffer on a rank's extended lattice filled box by
//! box through any [`DeviceTransport`] — the thin links of a decomposed smearing
//! ([`super::DeviceLinkHalo`]) and the staple fields of the "standard" one
//! ([`super::StandardSmearing`]).
//!
//! Where a site's reals lie in the buffer is a [`SiteRecords`]: real k of the site at
//! checkerboard index cb sits at `base + cb · site_stride + k · real_stride`. So one pair
//! of box-copy kernels serves both layouts: the host layout of links (72 reals per site,
//! contiguous) and the component-major fields of the staged smearing (real k of slot s
//! at (18 s + k) · V + cb).
//!
//! The halo's shape:
//! * [`HaloShape::FacesAndCorners`]: the cut directions exchanged one after the other,
//!   the slab sent along μ spanning the halos of the directions exchanged before μ (so
//!   the edges and corners arrive in the later rounds) and only the local range of
//!   those exchanged after it — every halo site is received once;
//! * [`HaloShape::Faces`]: the faces of every cut direction in one grouped exchange.
//!
//! Per round: the boundary slabs packed (a box of sites, lexicographic), the transport's
//! grouped exchange, the halo slabs unpacked — all queued on the GPU's stream.

use super::transport::{DeviceTransport, FaceRecv, FaceSend};
use crate::device::kernel::{load_program, Args, LoadedKernel};
use crate::device::Gpu;
use crate::distributed::{face_tag, DistributedError};
use crate::smear::GpuReal;
use cudarc::driver::{CudaSlice, CudaStream};
use qdsl_core::dsl::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use qdsl_core::lattice::{ExtendedLattice, HaloShape, Lattice, Side, SiteBox};
use std::ops::Range;

/// Where a site's reals lie in a device buffer: real k (< `reals`) of the site at
/// checkerboard index cb at `base + cb · site_stride + k · real_stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteRecords {
    /// Reals per site.
    pub reals: usize,
    /// Distance between neighbouring checkerboard sites.
    pub site_stride: usize,
    /// Distance between a site's consecutive reals.
    pub real_stride: usize,
    /// The offset of site 0's real 0.
    pub base: usize,
}

impl SiteRecords {
    /// A site's four links in the host layout: 72 contiguous reals at 72 · cb.
    pub const fn links() -> Self {
        Self {
            reals: 72,
            site_stride: 72,
            real_stride: 1,
            base: 0,
        }
    }

    /// Slots `slots` of a component-major field of 18 reals per slot on a lattice of
    /// `volume` sites (real k of slot s at (18 s + k) · V + cb: the staged smearing's
    /// scratch).
    pub fn field_slots(slots: Range<usize>, volume: usize) -> Self {
        Self {
            reals: 18 * slots.len(),
            site_stride: 1,
            real_stride: volume,
            base: 18 * slots.start * volume,
        }
    }

    /// The buffer length these records need on a lattice of `volume` sites.
    pub fn span(&self, volume: usize) -> usize {
        match (self.reals, volume) {
            (0, _) | (_, 0) => self.base,
            (r, v) => self.base + (v - 1) * self.site_stride + (r - 1) * self.real_stride + 1,
        }
    }
}

/// One face of a round: where it is packed from and unpacked to.
#[derive(Debug)]
struct BoxFace {
    mu: usize,
    side: Side,
    /// The boundary slab sent to the neighbour on `side`.
    boundary: SiteBox,
    /// The halo slab filled from that neighbour.
    halo: SiteBox,
}

/// The send and receive buffers of every face (in round order) for one record size.
#[derive(Debug)]
struct FaceBuffers {
    reals: usize,
    buffers: Vec<(CudaSlice<u8>, CudaSlice<u8>)>,
}

/// The halo of a shape and depth on one rank's extended lattice, for buffers of `T`
/// (module docs).
#[derive(Debug)]
pub struct BoxHalo<T> {
    ext: ExtendedLattice,
    rounds: Vec<Vec<BoxFace>>,
    copies: BoxCopies,
    /// Face buffers, allocated at the first exchange of each record size.
    buffers: Vec<FaceBuffers>,
    _real: std::marker::PhantomData<T>,
}

/// The pack and unpack kernels over boxes of the extended lattice `lattice`.
#[derive(Debug)]
struct BoxCopies {
    pack: LoadedKernel,
    unpack: LoadedKernel,
    lattice: Lattice,
}

impl<T: GpuReal> BoxHalo<T> {
    /// The halo of `shape`, `depth` layers deep (at most `ext`'s depth), on `ext`, its
    /// kernels compiled on `gpu`.
    pub fn new(
        gpu: &Gpu,
        ext: ExtendedLattice,
        shape: HaloShape,
        depth: usize,
    ) -> Result<Self, DistributedError> {
        if depth == 0 || depth > ext.depth() {
            return Err(DistributedError::Operator(format!(
                "a halo of depth {depth} on an extended lattice of depth {}: expected 1..={}",
                ext.depth(),
                ext.depth()
            )));
        }
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
        Ok(Self {
            rounds: rounds(&ext, shape, depth),
            copies: BoxCopies {
                pack: find(PACK)?,
                unpack: find(UNPACK)?,
                lattice: *ext.extended(),
            },
            ext,
            buffers: Vec::new(),
            _real: std::marker::PhantomData,
        })
    }

    /// The extended lattice the halo is on.
    pub fn lattice(&self) -> &Lattice {
        self.ext.extended()
    }

    /// Halo sites this rank receives per exchange.
    pub fn halo_sites(&self) -> usize {
        self.rounds.iter().flatten().map(|f| f.halo.volume()).sum()
    }

    /// Bytes this rank receives per exchange of `reals` reals per site.
    pub fn halo_bytes(&self, reals: usize) -> usize {
        self.halo_sites() * reals * std::mem::size_of::<T>()
    }

    /// Exchanges per [`Self::exchange`] (grouped transport calls).
    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    /// Fills the halo of `records` in `buffer` (this rank's data on the extended
    /// lattice) with its neighbours' values: one grouped exchange per round through
    /// `transport`, queued on the GPU's stream; `operation` names it in errors. Every
    /// rank calls it together.
    pub fn exchange<X: DeviceTransport + ?Sized>(
        &mut self,
        gpu: &Gpu,
        transport: &mut X,
        buffer: &mut CudaSlice<T>,
        records: SiteRecords,
        operation: &str,
    ) -> Result<(), DistributedError> {
        let k = self.prepare(gpu, buffer, records, operation)?;
        let rank = transport.rank();
        let dec = *self.ext.decomposition();
        let stream = gpu.backend().stream();
        let mut rest = self.buffers[k].buffers.as_mut_slice();
        for round in &self.rounds {
            let (pairs, later) = rest.split_at_mut(round.len());
            rest = later;
            for (f, (send, _)) in round.iter().zip(pairs.iter_mut()) {
                self.copies
                    .pack(stream, buffer, records, &f.boundary, send)?;
            }
            let (sends, mut recvs) = messages(round, pairs, &dec, rank);
            transport.packed(gpu, operation, &sends)?;
            transport.post(gpu, operation, &sends, &recvs)?;
            transport.complete(gpu, operation, &sends, &mut recvs)?;
            drop((sends, recvs));
            for (f, (_, recv)) in round.iter().zip(pairs.iter()) {
                self.copies.unpack(stream, recv, records, &f.halo, buffer)?;
            }
        }
        Ok(())
    }

    /// Whether [`Self::post`] can run with `transport`: one round (faces only), and a
    /// transport that delivers on a stream of its own ([`DeviceTransport::per_direction`],
    /// [`DeviceTransport::delivery_stream`]).
    pub fn can_post<X: DeviceTransport + ?Sized>(&self, transport: &X) -> bool {
        self.rounds.len() == 1 && transport.per_direction() && transport.delivery_stream().is_some()
    }

    /// Starts filling the halo of `records` in `buffer` without making the GPU's stream
    /// wait: the boundary slabs packed on the GPU's stream, the exchange queued on the
    /// transport's delivery stream after them, the halo slabs unpacked there; returns the
    /// delivery mark, which [`DeviceTransport::await_direction`] makes a stream wait for
    /// and [`DeviceTransport::finish_directions`] ends. Only where [`Self::can_post`].
    /// Work queued on the GPU's stream meanwhile may read the buffer's own sites (not
    /// its halo) and must not write the records.
    pub fn post<X: DeviceTransport + ?Sized>(
        &mut self,
        gpu: &Gpu,
        transport: &mut X,
        buffer: &mut CudaSlice<T>,
        records: SiteRecords,
        operation: &str,
    ) -> Result<usize, DistributedError> {
        let delivery = match (self.can_post(transport), transport.delivery_stream()) {
            (true, Some(stream)) => stream,
            _ => {
                return Err(DistributedError::Operator(format!(
                    "{operation}: {} rounds through {}: no posted exchange",
                    self.rounds.len(),
                    transport.describe()
                )))
            }
        };
        let k = self.prepare(gpu, buffer, records, operation)?;
        let rank = transport.rank();
        let dec = *self.ext.decomposition();
        let round = &self.rounds[0];
        let pairs = self.buffers[k].buffers.as_mut_slice();
        for (f, (send, _)) in round.iter().zip(pairs.iter_mut()) {
            self.copies
                .pack(gpu.backend().stream(), buffer, records, &f.boundary, send)?;
        }
        transport.mark_packs(gpu.backend().stream())?;
        let (sends, mut recvs) = messages(round, pairs, &dec, rank);
        let mark = transport.post_direction(gpu, operation, &sends, &mut recvs)?;
        drop((sends, recvs));
        for (f, (_, recv)) in round.iter().zip(pairs.iter()) {
            self.copies
                .unpack(&delivery, recv, records, &f.halo, buffer)?;
        }
        transport.extend_direction(mark)?;
        Ok(mark)
    }

    /// Checks `buffer` against `records` ([`Self::check`]) and returns the index of the
    /// face buffers for its records ([`Self::buffers_for`]): what every exchange does
    /// first.
    fn prepare(
        &mut self,
        gpu: &Gpu,
        buffer: &CudaSlice<T>,
        records: SiteRecords,
        operation: &str,
    ) -> Result<usize, DistributedError> {
        self.check(buffer, records, operation)?;
        self.buffers_for(gpu, records.reals)
    }

    /// An error unless `buffer` holds `records` on the extended lattice.
    fn check(
        &self,
        buffer: &CudaSlice<T>,
        records: SiteRecords,
        operation: &str,
    ) -> Result<(), DistributedError> {
        let volume = self.ext.extended().volume();
        if buffer.len() < records.span(volume) {
            return Err(DistributedError::Operator(format!(
                "{operation}: {} reals given, the records on the extended lattice {} need {}",
                buffer.len(),
                self.ext.extended(),
                records.span(volume)
            )));
        }
        Ok(())
    }

    /// The index of the face buffers for `reals` reals per site, allocated now if new.
    fn buffers_for(&mut self, gpu: &Gpu, reals: usize) -> Result<usize, DistributedError> {
        if let Some(k) = self.buffers.iter().position(|b| b.reals == reals) {
            return Ok(k);
        }
        let bytes = |b: &SiteBox| b.volume() * reals * std::mem::size_of::<T>();
        let buffers = self
            .rounds
            .iter()
            .flatten()
            .map(|f| {
                Ok((
                    gpu.alloc::<u8>("a face", bytes(&f.boundary))
                        .map_err(device)?,
                    gpu.alloc::<u8>("a halo face", bytes(&f.halo))
                        .map_err(device)?,
                ))
            })
            .collect::<Result<_, DistributedError>>()?;
        self.buffers.push(FaceBuffers { reals, buffers });
        Ok(self.buffers.len() - 1)
    }
}

/// The messages of one round's faces, each with its buffers: sent to the neighbour on
/// the face's side under its tag, received from it under the opposite side's.
fn messages<'a>(
    round: &[BoxFace],
    pairs: &'a mut [(CudaSlice<u8>, CudaSlice<u8>)],
    dec: &qdsl_core::lattice::Decomposition,
    rank: usize,
) -> (Vec<FaceSend<'a>>, Vec<FaceRecv<'a>>) {
    round
        .iter()
        .zip(pairs.iter_mut())
        .map(|(f, (send, recv))| {
            let peer = dec.neighbour(rank, f.mu, f.side);
            (
                FaceSend {
                    peer,
                    tag: face_tag(f.mu, f.side),
                    values: send,
                    norms: None,
                },
                FaceRecv {
                    peer,
                    tag: face_tag(f.mu, f.side.opposite()),
                    values: recv,
                    norms: None,
                },
            )
        })
        .unzip()
}

fn device(e: crate::device::DeviceError) -> DistributedError {
    DistributedError::Operator(e.to_string())
}

/// The rounds of a halo of `shape`, `depth` deep, on `ext` (module docs).
fn rounds(ext: &ExtendedLattice, shape: HaloShape, depth: usize) -> Vec<Vec<BoxFace>> {
    let corners = shape == HaloShape::FacesAndCorners;
    let faces = |mu: usize| {
        Side::BOTH
            .into_iter()
            .filter_map(|side| {
                round_boxes(ext, mu, side, depth, corners).map(|[boundary, halo]| BoxFace {
                    mu,
                    side,
                    boundary,
                    halo,
                })
            })
            .collect::<Vec<_>>()
    };
    let per_direction = (0..4).map(faces).filter(|f| !f.is_empty());
    if corners {
        per_direction.collect()
    } else {
        let all: Vec<BoxFace> = per_direction.flatten().collect();
        if all.is_empty() {
            Vec::new()
        } else {
            vec![all]
        }
    }
}

/// The boundary slab sent towards `side` of μ and the halo slab filled from that
/// neighbour: `depth` layers along μ next to the local sites, the local range in the
/// other directions — with `corners`, widened by `depth` in the cut directions before
/// μ, so that they carry those directions' halos (the edges and corners). `None` when
/// μ is not cut.
pub(super) fn round_boxes(
    ext: &ExtendedLattice,
    mu: usize,
    side: Side,
    depth: usize,
    corners: bool,
) -> Option<[SiteBox; 2]> {
    let grid = ext.decomposition().grid();
    ext.face_boxes_of_depth(mu, side, depth).map(|boxes| {
        boxes.map(|mut b| {
            if corners {
                for nu in (0..mu).filter(|&nu| grid.is_cut(nu)) {
                    b.lo[nu] -= depth;
                    b.n[nu] += 2 * depth;
                }
            }
            b
        })
    })
}

impl BoxCopies {
    /// Queues face ← the records of the sites of `b` (the face's order: module docs of
    /// [`box_copy_program`]).
    fn pack<T: GpuReal>(
        &self,
        stream: &CudaStream,
        buffer: &CudaSlice<T>,
        records: SiteRecords,
        b: &SiteBox,
        face: &mut CudaSlice<u8>,
    ) -> Result<(), DistributedError> {
        let mut a = Args::new();
        a.read("buffer", buffer).write("face", face);
        self.launch(stream, &self.pack, records, b, a)
    }

    /// Queues the records of the sites of `b` ← face.
    fn unpack<T: GpuReal>(
        &self,
        stream: &CudaStream,
        face: &CudaSlice<u8>,
        records: SiteRecords,
        b: &SiteBox,
        buffer: &mut CudaSlice<T>,
    ) -> Result<(), DistributedError> {
        let mut a = Args::new();
        a.read("face", face).write("buffer", buffer);
        self.launch(stream, &self.unpack, records, b, a)
    }

    /// Queues `kernel` on `stream` over the reals of the sites of `b` with the buffers
    /// bound in `a`, binding the records, the box's corner and extents and the extended
    /// lattice's extents and half volume.
    fn launch<'a>(
        &self,
        stream: &'a CudaStream,
        kernel: &LoadedKernel,
        records: SiteRecords,
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
        a.count("reals", records.reals);
        a.count("base", records.base);
        a.count("site_stride", records.site_stride);
        a.count("real_stride", records.real_stride);
        kernel
            .launch_default_on(stream, [b.volume() * records.reals, 1, 1], a)
            .map_err(device)
    }
}

const PACK: &str = "box_pack";
const UNPACK: &str = "box_unpack";

/// The two box copies of `T` records: one thread per real of a box site, the box's
/// sites in lexicographic order (x fastest). The face holds the reals of a site
/// together (thread order: reals fastest) when a site's reals are contiguous in the
/// buffer, else each real for all sites together (sites fastest), so that the threads of
/// a warp read and write neighbouring addresses in both layouts.
fn box_copy_program<T: GpuReal>() -> KernelProgram {
    let real = T::ELEM;
    let c_type = if real == Elem::F64 { "double" } else { "float" };
    let index = r#"
__device__ __forceinline__ bool box_site(long long g, int sites, int lo0, int lo1, int lo2,
    int lo3, int n0, int n1, int n2, int L0, int L1, int L2, int half_volume, int reals,
    long base, long site_stride, long real_stride, long long* at) {
  if (g >= (long long)sites * reals) return false;
  long long i; int k;
  if (real_stride == 1) { i = g / reals; k = (int)(g - i * reals); }
  else { k = (int)(g / sites); i = g - (long long)k * sites; }
  int x = (int)(i % n0); long long r = i / n0;
  int y = (int)(r % n1); r /= n1;
  int z = (int)(r % n2); int t = (int)(r / n2);
  x += lo0; y += lo1; z += lo2; t += lo3;
  long long lex = x + (long long)L0 * (y + (long long)L1 * (z + (long long)L2 * t));
  long long cb = (long long)((x + y + z + t) & 1) * half_volume + lex / 2;
  *at = base + cb * site_stride + (long long)k * real_stride;
  return true;
}
"#;
    let params = "int sites, int lo0, int lo1, int lo2, int lo3, int n0, int n1, int n2, \
                  int n3, int L0, int L1, int L2, int L3, int half_volume, int reals, \
                  long base, long site_stride, long real_stride";
    let call = "box_site(g, sites, lo0, lo1, lo2, lo3, n0, n1, n2, L0, L1, L2, half_volume, \
                reals, base, site_stride, real_stride, &at)";
    let source = format!(
        "typedef {c_type} real;\n{index}\n\
         extern \"C\" __global__ void {PACK}(const real* __restrict__ buffer, \
         unsigned char* __restrict__ face, {params}) {{\n\
           const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
           long long at;\n\
           if ({call}) ((real*)face)[g] = buffer[at];\n\
         }}\n\
         extern \"C\" __global__ void {UNPACK}(const unsigned char* __restrict__ face, \
         real* __restrict__ buffer, {params}) {{\n\
           const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
           long long at;\n\
           if ({call}) buffer[at] = ((const real*)face)[g];\n\
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
        out.push(p("reals", ParamKind::I32));
        for name in ["base", "site_stride", "real_stride"] {
            out.push(p(name, ParamKind::I64));
        }
    };
    let mut pack = vec![
        p("buffer", ParamKind::read(real)),
        p("face", ParamKind::write(Elem::U8)),
    ];
    ints(&mut pack);
    let mut unpack = vec![
        p("face", ParamKind::read(Elem::U8)),
        p("buffer", ParamKind::write(real)),
    ];
    ints(&mut unpack);
    KernelProgram {
        name: format!("box_copy_{c_type}"),
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
    use qdsl_core::lattice::decomposition::{Decomposition, ProcessGrid};

    fn ext(dims: [usize; 4], grid: [usize; 4], depth: usize) -> ExtendedLattice {
        let lattice = Lattice::new(dims).unwrap();
        let dec = Decomposition::with_halo_depth(lattice, ProcessGrid::new(grid).unwrap(), depth)
            .unwrap();
        ExtendedLattice::new(dec, depth).unwrap()
    }

    /// The sites of box `b`, lexicographic.
    fn sites(b: &SiteBox) -> Vec<[usize; 4]> {
        (0..b.volume())
            .map(|i| {
                let mut c = b.lo;
                let mut r = i;
                for (nu, c) in c.iter_mut().enumerate() {
                    *c += r % b.n[nu];
                    r /= b.n[nu];
                }
                c
            })
            .collect()
    }

    /// Every declared interface is its source's signature (the launcher binds by it).
    #[test]
    fn the_box_copies_declare_their_interfaces() {
        for p in [box_copy_program::<f32>(), box_copy_program::<f64>()] {
            assert_eq!(p.kernels.len(), 2, "{}", p.name);
            assert_eq!(p.signature_mismatches(), Vec::<String>::new(), "{}", p.name);
        }
    }

    /// With corners, the rounds' halo boxes hold every halo site of faces, edges and
    /// corners exactly once, and each round's boundary box has its halo box's extents.
    #[test]
    fn the_rounds_receive_every_halo_site_once() {
        for (dims, grid, depth) in [
            ([8, 8, 8, 8], [1, 1, 1, 2], 3),
            ([8, 8, 8, 8], [1, 1, 2, 2], 3),
            ([8, 8, 8, 8], [2, 2, 2, 2], 2),
            ([4, 8, 4, 8], [2, 1, 1, 2], 1),
        ] {
            let ext = ext(dims, grid, depth);
            let rounds = rounds(&ext, HaloShape::FacesAndCorners, depth);
            assert_eq!(rounds.len(), ext.decomposition().grid().cut_count());
            let mut received = Vec::new();
            for f in rounds.iter().flatten() {
                assert_eq!(f.boundary.n, f.halo.n, "{grid:?} {} {:?}", f.mu, f.side);
                received.extend(sites(&f.halo));
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

    /// Faces one layer deep on a deeper extended lattice: one round; each halo site lies
    /// in the layer just outside the local sites in exactly one direction, each boundary
    /// site in the local layer next to it, and there are 2 · (local volume / local
    /// extent) per cut direction.
    #[test]
    fn shallow_faces_fill_the_first_layer_only() {
        for (grid, depth) in [([1, 1, 1, 2], 2), ([1, 1, 2, 2], 3), ([2, 2, 2, 2], 2)] {
            let ext = ext([8, 8, 8, 8], grid, depth);
            let rounds = rounds(&ext, HaloShape::Faces, 1);
            assert_eq!(rounds.len(), 1, "{grid:?}");
            let (m, l) = (ext.margin(), ext.local().dims());
            let mut count = 0;
            for f in &rounds[0] {
                for (h, b) in sites(&f.halo).into_iter().zip(sites(&f.boundary)) {
                    let outside: Vec<usize> = (0..4)
                        .filter(|&nu| h[nu] < m[nu] || h[nu] >= m[nu] + l[nu])
                        .collect();
                    assert_eq!(outside, vec![f.mu], "{grid:?}: {h:?}");
                    // The layer next to the local sites, and the boundary layer.
                    let (halo, boundary) = match f.side {
                        Side::Backward => (m[f.mu] - 1, m[f.mu]),
                        Side::Forward => (m[f.mu] + l[f.mu], m[f.mu] + l[f.mu] - 1),
                    };
                    assert_eq!((h[f.mu], b[f.mu]), (halo, boundary), "{grid:?}");
                    count += 1;
                }
            }
            let expected: usize = (0..4)
                .filter(|&mu| ext.decomposition().grid().is_cut(mu))
                .map(|mu| 2 * ext.local().volume() / l[mu])
                .sum();
            assert_eq!(count, expected, "{grid:?}");
        }
    }

    /// The records' spans: the host layout of links and the slots of a field.
    #[test]
    fn record_spans() {
        assert_eq!(SiteRecords::links().span(10), 720);
        let f = SiteRecords::field_slots(3..6, 10);
        assert_eq!((f.reals, f.base), (54, 540));
        assert_eq!(f.span(10), 540 + 9 + 53 * 10 + 1);
        assert_eq!(f.span(10), 18 * 6 * 10);
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
