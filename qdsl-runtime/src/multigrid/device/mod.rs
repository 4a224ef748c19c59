//! The coarse construction on the GPU: M_c = P† M P of [`super::coarsen`] from the
//! fine operator's matrices and the near-null vectors V in device memory, run as the
//! table of units c_u = ±A†B ([`super::coarsen::units`]).
//!
//! * **Y_c and X_c by the tensor-core tiles** ([`DeviceCoarsen::build`], f64 DMMA or
//!   3×BF16: `qdsl_kernels::multigrid`): per target (X_c, Y⁺_c,μ, Y⁻_c,μ) and chunk of
//!   coarse sites, `coarse_gather` computes UV = M V(w) for every unit (the per-direction
//!   hops: the ones leaving the block go to the links, the ones inside to X_c) and writes
//!   the operands of c = Σ_u A_u† (s_u B_u) as the rows of one batched product per coarse
//!   site (K = 2 N_f · units), the `batched_complex_inner` tile multiplies them, and
//!   `coarse_place` puts each product in its slot of X_c, Y⁺_c or Y⁻_c.
//! * **X⁻¹Y** ([`DeviceCoarse::preconditioned`]): `coarse_invert` (Gauss–Jordan per
//!   coarse site), then X⁻¹Y⁺_μ and Y⁻_μ X(x+μ̂)^{−†} as batched tile products of
//!   K = 2 · 2N_v (the [`super::Preconditioned`] links).
//! * **16-bit fixed point, bitwise reproducible** ([`DeviceCoarsen::fixed16`]): the two
//!   passes of [`super::coarsen::fixed16`] with every unit computed as the CPU does
//!   (SIMT f64, no fused multiply-add, the same order): pass 1 the largest entry (T
//!   from the table) and the exact i64 sums for max |Y|, pass 2 each unit rounded to an
//!   i32 in δ = S 2⁻²⁴, a block's units summed in registers and the sums added with
//!   32-bit `atomicAdd` — integers, so the result is the CPU path's bits for any block
//!   size and grouping ([`UnitLaunch`]). The tensor cores' sums are not the CPU's bits,
//!   so this path does not use the tiles.
//!
//! The same code coarsens a coarse operator again (N_f = 2N_v of the level below: the
//! units, tiles and kernels only see N_f, 2N_v ∈ {48, 64}).

pub mod bounds;
mod source;
#[cfg(test)]
mod tests;

pub use source::{program, CoarseSizes};

use super::coarsen::cpu::{check_fit, Target};
use super::coarsen::fixed16::{bound, bound_quantum, delta, kind, scale_of};
use super::coarsen::tiles::TileMode;
use super::coarsen::units::{matrix, unit_table};
use super::dense::C;
use super::{CoarsenError, DenseOperator, Fixed16Coarse, Preconditioned, Prolongator};
use crate::device::kernel::{load_program, Args, DeviceElem, LoadedKernel};
use crate::device::{DeviceError, Gpu};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use qdsl_core::dsl::mma::{self, Input, MmaPlan, MmaTile, MmaVariant};
use qdsl_core::field::{DenseKind, DenseLinkField};
use qdsl_core::lattice::Lattice;
use qdsl_kernels::multigrid::{CoarseVuvBf16x3, CoarseVuvF64};
use std::sync::Mutex;

/// Bytes of tile operands (A and B) one chunk of products may take.
pub const OPERAND_BUDGET: usize = 1 << 30;

/// The launch of the fixed-point units: threads per block and units per block (the
/// result is the same bits for every choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitLaunch {
    /// Threads per block (a multiple of 32, at most 1024).
    pub threads: usize,
    /// Units a block sums before its atomic adds (≥ 1).
    pub group: usize,
}

impl Default for UnitLaunch {
    fn default() -> Self {
        Self {
            threads: 256,
            group: 16,
        }
    }
}

/// The kernels of one [`CoarseSizes`] program.
struct Kernels {
    gather_f64: LoadedKernel,
    gather_f32: LoadedKernel,
    place: LoadedKernel,
    units: LoadedKernel,
    max_abs: LoadedKernel,
    invert: LoadedKernel,
    xinv_f64: LoadedKernel,
    xinv_f32: LoadedKernel,
}

fn shape(e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Shape(e.to_string())
}

/// Sets the opt-in attribute where a kernel's dynamic shared memory is beyond 48 KiB.
fn allow_shared(k: &LoadedKernel) -> Result<(), DeviceError> {
    let bytes = k.interface.geometry.shared_fixed;
    if bytes > 48 * 1024 {
        k.function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(crate::device::gpu::driver(format!(
                "allowing shared memory for {}",
                k.interface.name
            )))?;
    }
    Ok(())
}

impl Kernels {
    fn load(gpu: &Gpu, sizes: &CoarseSizes) -> Result<Self, DeviceError> {
        let mut program = program(sizes);
        program.options = crate::device::codegen::options();
        let mut k = load_program(gpu, &program)?.into_iter();
        let mut next = || {
            k.next()
                .ok_or_else(|| shape(format!("{} defines too few kernels", program.name)))
        };
        let me = Kernels {
            gather_f64: next()?,
            gather_f32: next()?,
            place: next()?,
            units: next()?,
            max_abs: next()?,
            invert: next()?,
            xinv_f64: next()?,
            xinv_f32: next()?,
        };
        allow_shared(&me.units)?;
        allow_shared(&me.invert)?;
        Ok(me)
    }
}

/// One mode's batched tile kernels for products of depth `k_pad`.
pub struct Tiles {
    /// The plan (variant, names, flops).
    pub plan: MmaPlan,
    tile: LoadedKernel,
    reduce: LoadedKernel,
    /// K of the products, padded to the tile depth.
    pub k_pad: usize,
}

impl Tiles {
    /// The tiles of `mode` for 2N_v = `nc2` and products of K = `k` reals: the deepest
    /// tile of the spec that divides K (else the shallowest, K padded with zeros), the
    /// most warps the instruction tiles divide among, 2 stages.
    pub fn variant(
        mode: TileMode,
        nc2: usize,
        k: usize,
    ) -> Result<(MmaVariant, usize), DeviceError> {
        let (spec, input) = match mode {
            TileMode::F64 => (CoarseVuvF64::spec(), Input::F64),
            TileMode::Bf16x3 => (CoarseVuvBf16x3::spec(), Input::F32),
        };
        let mut depths = spec.tile_k.clone();
        depths.sort_unstable();
        let tile_k = depths
            .iter()
            .rev()
            .copied()
            .find(|t| k.is_multiple_of(*t))
            .unwrap_or(depths[0]);
        let mut warps = spec.warps.clone();
        warps.sort_unstable();
        let mut last = None;
        for w in warps.into_iter().rev() {
            let v = MmaVariant {
                m: nc2,
                n: nc2,
                input,
                tile_k,
                warps: w,
                stages: 2,
            };
            match mma::plan(&spec, &v) {
                Ok(_) => return Ok((v, k.next_multiple_of(tile_k))),
                Err(e) => last = Some(e),
            }
        }
        Err(shape(last.map_or("no warps".into(), |e| e.to_string())))
    }

    /// Loads the tiles of `mode` for products of K = `k` reals.
    pub fn load(gpu: &Gpu, mode: TileMode, nc2: usize, k: usize) -> Result<Self, DeviceError> {
        let (v, k_pad) = Self::variant(mode, nc2, k)?;
        let plan = match mode {
            TileMode::F64 => CoarseVuvF64::plan(&v),
            TileMode::Bf16x3 => CoarseVuvBf16x3::plan(&v),
        }
        .map_err(shape)?;
        let mut program = mma::cuda::program(&plan);
        program.options = crate::device::codegen::options();
        let mut k = load_program(gpu, &program)?.into_iter();
        let (Some(tile), Some(reduce)) = (k.next(), k.next()) else {
            return Err(shape(format!(
                "{} defines fewer than two kernels",
                program.name
            )));
        };
        allow_shared(&tile)?;
        Ok(Self {
            plan,
            tile,
            reduce,
            k_pad,
        })
    }

    /// Blocks per product for chunks of `products`: enough for about 1024 blocks in all,
    /// at most one per k-tile (every chunk of a run takes the value of its largest).
    fn blocks_per_product(&self, products: usize) -> usize {
        let k_tiles = self.k_pad / self.plan.variant.tile_k;
        1024usize.div_ceil(products.max(1)).clamp(1, k_tiles)
    }

    /// Doubles of partials `products` need.
    fn partial_len(&self, products: usize) -> usize {
        products * self.blocks_per_product(products) * self.plan.partial_len()
    }

    /// Queues c_p = Σ conj(a_p,i) b_p,j for `products` products of rows of `k_pad` reals,
    /// `bpb` blocks each ([`Self::blocks_per_product`] of the chunk `partial` was made
    /// for: [`Self::partial_len`]).
    fn queue<T: DeviceElem>(
        &self,
        gpu: &Gpu,
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        (products, bpb): (usize, usize),
        partial: &mut CudaSlice<f64>,
        c: &mut CudaSlice<f64>,
    ) -> Result<(), DeviceError> {
        let v = self.plan.variant;
        if products * bpb * self.plan.partial_len() > partial.len()
            || products * v.m * v.n * 2 > c.len()
        {
            return Err(shape(format!(
                "{}: {products} products of {bpb} blocks do not fit the partials ({}) or \
                 products ({}) buffers",
                self.plan.name,
                partial.len(),
                c.len()
            )));
        }
        let mut args = Args::new();
        args.read("a", a)
            .read("b", b)
            .write("partial", partial)
            .count("lda", self.k_pad)
            .count("ldb", self.k_pad)
            .count("k_tiles", self.k_pad / v.tile_k)
            .count("blocks_per_batch", bpb)
            .count("batch_a", v.m * self.k_pad)
            .count("batch_b", v.n * self.k_pad);
        self.tile
            .launch_default(gpu, [products * bpb * self.plan.threads(), 1, 1], args)?;
        let mut args = Args::new();
        args.read("partial", partial)
            .write("c", c)
            .count("blocks", bpb)
            .count("batches", products);
        self.reduce
            .launch_default(gpu, [products * v.m * v.n, 1, 1], args)
    }
}

/// The coarse operator's matrices in device memory (f64, the [`DenseOperator`] layout).
pub struct DeviceCoarse {
    /// X_c per coarse site.
    pub x: CudaSlice<f64>,
    /// Y⁺_c,μ per coarse site and μ.
    pub yf: CudaSlice<f64>,
    /// Y⁻_c,μ per coarse site and μ.
    pub yb: CudaSlice<f64>,
}

/// The device construction of one (operator, prolongator): their matrices and vectors
/// uploaded, the unit table, the kernels.
pub struct DeviceCoarsen<'g> {
    gpu: &'g Gpu,
    nf: usize,
    nc2: usize,
    shape: (usize, usize),
    coarse: Lattice,
    v: CudaSlice<f64>,
    mats: CudaSlice<f64>,
    units: Vec<CudaSlice<i32>>,
    count: [usize; 9],
    neighbours: CudaSlice<i32>,
    kernels: Vec<(usize, Kernels)>,
    scratch: Mutex<Scratch>,
}

/// A host slice of complex values as interleaved reals.
fn reals(x: &[C]) -> Vec<f64> {
    x.iter().flat_map(|z| [z.re, z.im]).collect()
}

/// The device buffers of one chunk of tile products, kept from target to target and call
/// to call (allocated once, grown when a chunk needs more): the operands A and B (each
/// row written whole by the gathers, its zero pad included), the blocks' partial sums and
/// the products.
struct TileScratch<T> {
    a: CudaSlice<T>,
    b: CudaSlice<T>,
    partial: CudaSlice<f64>,
    c: CudaSlice<f64>,
}

/// Lengths of a chunk's buffers: (operands A and B, partials, products).
type ScratchLens = (usize, usize, usize);

impl<T: DeviceRepr + ValidAsZeroBits> TileScratch<T> {
    /// `slot`'s buffers, reallocated where they are shorter than `lens`.
    fn ensure<'s>(
        slot: &'s mut Option<Self>,
        gpu: &Gpu,
        (operands, partials, products): ScratchLens,
    ) -> Result<&'s mut Self, DeviceError> {
        let fits = slot.as_ref().is_some_and(|s| {
            s.a.len() >= operands && s.partial.len() >= partials && s.c.len() >= products
        });
        if !fits {
            // The old buffers go first, so that both never need room at once.
            *slot = None;
            *slot = Some(Self {
                a: gpu.alloc("tile operands A", operands)?,
                b: gpu.alloc("tile operands B", operands)?,
                partial: gpu.alloc("tile partials", partials)?,
                c: gpu.alloc("tile products", products)?,
            });
        }
        Ok(slot.as_mut().expect("allocated above"))
    }
}

/// The scratch of both operand types (f64 for DMMA, f32 for 3×BF16).
#[derive(Default)]
struct Scratch {
    f64: Option<TileScratch<f64>>,
    f32: Option<TileScratch<f32>>,
}

/// An operand type of the tiles, with its slot in [`Scratch`].
trait TileReal: DeviceElem + DeviceRepr + ValidAsZeroBits + Sized {
    fn slot(s: &mut Scratch) -> &mut Option<TileScratch<Self>>;
}

impl TileReal for f64 {
    fn slot(s: &mut Scratch) -> &mut Option<TileScratch<f64>> {
        &mut s.f64
    }
}

impl TileReal for f32 {
    fn slot(s: &mut Scratch) -> &mut Option<TileScratch<f32>> {
        &mut s.f32
    }
}

impl<'g> DeviceCoarsen<'g> {
    /// Uploads `op`'s matrices, `p`'s vectors and the unit table. An error if P does not
    /// fit M, 2N_v is not 48 or 64 (the tiles'), or the device refuses.
    pub fn new(gpu: &'g Gpu, op: &DenseOperator, p: &Prolongator) -> Result<Self, CoarsenError> {
        check_fit(op, p)?;
        let (nf, nc2) = (op.n(), 2 * p.n_vectors());
        if nc2 != 48 && nc2 != 64 {
            return Err(CoarsenError::Shape(format!(
                "the device construction takes 2N_v = 48 or 64 (the tiles'), found {nc2}"
            )));
        }
        let fine = *op.lattice();
        let coarse = *p.coarse_lattice();
        let stream = gpu.backend().stream();
        let up = |what: &str, x: &[f64]| -> Result<CudaSlice<f64>, DeviceError> {
            stream
                .clone_htod(x)
                .map_err(crate::device::gpu::driver(format!("uploading {what}")))
        };
        let v: Vec<f64> = (0..fine.volume()).flat_map(|cb| reals(p.v(cb))).collect();
        let mats: Vec<f64> = (0..9 * fine.volume())
            .flat_map(|k| reals(matrix(op, k)))
            .collect();
        let table = unit_table(op, p);
        let units = table
            .units
            .iter()
            .map(|u| {
                let codes: Vec<i32> = u.iter().flat_map(|u| u.encode()).collect();
                stream
                    .clone_htod(&codes)
                    .map_err(crate::device::gpu::driver("uploading the unit table"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let neighbours: Vec<i32> = (0..coarse.volume())
            .flat_map(|xc| {
                let z = coarse.coords_of_cb(xc);
                (0..4).map(move |mu| coarse.cb_index(coarse.shift(z, mu, 1).0) as i32)
            })
            .collect();
        let neighbours = stream
            .clone_htod(&neighbours)
            .map_err(crate::device::gpu::driver("uploading the neighbours"))?;
        Ok(Self {
            gpu,
            nf,
            nc2,
            shape: (2, p.n_vectors()),
            coarse,
            v: up("the near-null vectors", &v)?,
            mats: up("the fine matrices", &mats)?,
            units,
            count: table.count,
            neighbours,
            kernels: Vec::new(),
            scratch: Mutex::new(Scratch::default()),
        })
    }

    /// The kernels with `threads` threads in the fixed-point units' blocks, loaded once.
    fn kernels(&mut self, threads: usize) -> Result<&Kernels, DeviceError> {
        if !self.kernels.iter().any(|(t, _)| *t == threads) {
            let sizes = CoarseSizes {
                nf: self.nf,
                nc2: self.nc2,
                threads,
            };
            self.kernels
                .push((threads, Kernels::load(self.gpu, &sizes)?));
        }
        Ok(&self
            .kernels
            .iter()
            .find(|(t, _)| *t == threads)
            .expect("loaded")
            .1)
    }

    /// K (reals) of target t's products: 2 N_f per unit.
    pub fn depth(&self, t: Target) -> usize {
        2 * self.nf * self.count[t.index()]
    }

    /// The tiles of `mode` for every target, loaded ([`Self::build_with`] runs them).
    pub fn tiles(&self, mode: TileMode) -> Result<Vec<Tiles>, DeviceError> {
        Target::ALL
            .iter()
            .map(|t| Tiles::load(self.gpu, mode, self.nc2, self.depth(*t)))
            .collect()
    }

    /// Y_c and X_c by the tiles of `mode` (loaded here; [`Self::build_with`] takes them
    /// loaded).
    pub fn build(&mut self, mode: TileMode) -> Result<DeviceCoarse, CoarsenError> {
        let tiles = self.tiles(mode)?;
        Ok(self.build_with(mode, &tiles)?)
    }

    /// Y_c and X_c by `tiles` ([`Self::tiles`] of `mode`), queued on the GPU's stream.
    pub fn build_with(
        &mut self,
        mode: TileMode,
        tiles: &[Tiles],
    ) -> Result<DeviceCoarse, DeviceError> {
        let gpu = self.gpu;
        let (vol, m2) = (self.coarse.volume(), 2 * self.nc2 * self.nc2);
        let mut out = DeviceCoarse {
            x: gpu.alloc("coarse X", vol * m2)?,
            yf: gpu.alloc("coarse Y+", 4 * vol * m2)?,
            yb: gpu.alloc("coarse Y-", 4 * vol * m2)?,
        };
        self.kernels(UnitLaunch::default().threads)?;
        for (t, tl) in Target::ALL.iter().zip(tiles) {
            match mode {
                TileMode::F64 => self.target::<f64>(*t, tl, &mut out, false)?,
                TileMode::Bf16x3 => self.target::<f32>(*t, tl, &mut out, true)?,
            }
        }
        Ok(out)
    }

    fn target<T: TileReal>(
        &self,
        t: Target,
        tiles: &Tiles,
        out: &mut DeviceCoarse,
        single: bool,
    ) -> Result<(), DeviceError> {
        let gpu = self.gpu;
        let k = &self.kernels[0].1;
        let (vol, nc2, m2) = (self.coarse.volume(), self.nc2, 2 * self.nc2 * self.nc2);
        let per = self.count[t.index()];
        let k_pad = tiles.k_pad;
        let row_bytes = 2 * nc2 * k_pad * std::mem::size_of::<T>();
        let chunk = (OPERAND_BUDGET / row_bytes).clamp(1, vol);
        let lens = (chunk * nc2 * k_pad, tiles.partial_len(chunk), chunk * m2);
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let TileScratch { a, b, partial, c } =
            TileScratch::ensure(T::slot(&mut scratch), gpu, lens)?;
        let bpb = tiles.blocks_per_product(chunk);
        let (dst, stride, offset) = match t {
            Target::Site => (&mut out.x, m2, 0),
            Target::Forward(mu) => (&mut out.yf, 4 * m2, mu * m2),
            Target::Backward(mu) => (&mut out.yb, 4 * m2, mu * m2),
        };
        let gather = if single { &k.gather_f32 } else { &k.gather_f64 };
        for first in (0..vol).step_by(chunk) {
            let n = chunk.min(vol - first);
            let mut args = Args::new();
            args.read("v", &self.v)
                .read("mats", &self.mats)
                .read("units", &self.units[t.index()])
                .write("a", a)
                .write("b", b)
                .count("first", first)
                .count("products", n)
                .count("per_product", per)
                .count("k_pad", k_pad);
            gather.launch_default(gpu, [n * per * self.nf * nc2, 1, 1], args)?;
            tiles.queue(gpu, (a, b), (n, bpb), partial, c)?;
            let mut args = Args::new();
            args.read("c", c)
                .write("dst", dst)
                .count("products", n)
                .count("first", first)
                .count("dst_stride", stride)
                .count("dst_offset", offset)
                .int("conj", 0);
            k.place.launch_default(gpu, [n * m2, 1, 1], args)?;
        }
        Ok(())
    }

    /// Useful flops of [`Self::build`]: the V†UV products (8 · (2N_v)² per complex
    /// component of K) and the UV products (8 N_f² 2N_v per unit side with a matrix).
    pub fn flops(&self) -> f64 {
        let (nf, nc2) = (self.nf as f64, self.nc2 as f64);
        let units: usize = self.count.iter().sum();
        let vol = self.coarse.volume() as f64;
        // Every unit has one side with a matrix.
        vol * units as f64 * (8.0 * nc2 * nc2 * nf + 8.0 * nf * nf * nc2)
    }

    /// The coarse operator of device matrices, read back.
    pub fn download(&self, d: &DeviceCoarse) -> Result<DenseOperator, CoarsenError> {
        let (x, yf, yb) = (
            self.field(&d.x, DenseKind::SiteMatrix)?,
            self.field(&d.yf, DenseKind::Links)?,
            self.field(&d.yb, DenseKind::Links)?,
        );
        DenseOperator::new(x, yf, yb, self.shape)
    }

    fn field(
        &self,
        d: &CudaSlice<f64>,
        kind: DenseKind,
    ) -> Result<DenseLinkField<f64>, CoarsenError> {
        let host = self
            .gpu
            .backend()
            .stream()
            .clone_dtoh(d)
            .map_err(crate::device::gpu::driver("reading the coarse matrices"))?;
        let mut f = DenseLinkField::zeros_of(kind, self.coarse, self.nc2)?;
        let per_site = if kind == DenseKind::SiteMatrix { 1 } else { 4 };
        let m2 = 2 * self.nc2 * self.nc2;
        for (k, values) in host.chunks(m2).enumerate() {
            let dst = f.link_mut(k / per_site, k % per_site);
            for (z, re_im) in dst.iter_mut().zip(values.chunks(2)) {
                *z = C::new(re_im[0], re_im[1]);
            }
        }
        Ok(f)
    }

    /// The tiles of X⁻¹Y in `mode` (K = 2 · 2N_v).
    pub fn x_inv_y_tiles(&self, mode: TileMode) -> Result<Tiles, DeviceError> {
        Tiles::load(self.gpu, mode, self.nc2, 2 * self.nc2)
    }

    /// X⁻¹ (in `x` of the result) and the links X⁻¹Y⁺_μ, Y⁻_μ X(x+μ̂)^{−†} of `d` by
    /// `tiles` ([`Self::x_inv_y_tiles`] of `mode`), in device memory. An error naming the
    /// coarse site whose X is singular.
    pub fn x_inv_y(
        &mut self,
        d: &DeviceCoarse,
        mode: TileMode,
        tiles: &Tiles,
    ) -> Result<DeviceCoarse, CoarsenError> {
        let gpu = self.gpu;
        self.kernels(UnitLaunch::default().threads)?;
        let k = &self.kernels[0].1;
        let (vol, m2) = (self.coarse.volume(), 2 * self.nc2 * self.nc2);
        let mut x_inv = gpu.alloc::<f64>("coarse X⁻¹", vol * m2)?;
        let mut singular = gpu.alloc::<i32>("singular sites", vol)?;
        let mut args = Args::new();
        args.read("x", &d.x)
            .write("x_inv", &mut x_inv)
            .write("singular", &mut singular);
        k.invert.launch_default(gpu, [vol * 128, 1, 1], args)?;
        let flags = gpu
            .backend()
            .stream()
            .clone_dtoh(&singular)
            .map_err(crate::device::gpu::driver("reading the singular sites"))?;
        if let Some((site, &col)) = flags.iter().enumerate().find(|(_, c)| **c != 0) {
            return Err(CoarsenError::SingularSiteMatrix {
                site: self.coarse.coords_of_cb(site),
                column: (col - 1) as usize,
            });
        }
        let mut yf = gpu.alloc::<f64>("X⁻¹Y⁺", 4 * vol * m2)?;
        let mut yb = gpu.alloc::<f64>("Y⁻X^{-†}", 4 * vol * m2)?;
        for (backward, src, dst) in [(0, &d.yf, &mut yf), (1, &d.yb, &mut yb)] {
            match mode {
                TileMode::F64 => {
                    self.xinv_links::<f64>(tiles, &x_inv, src, dst, backward, false)?
                }
                TileMode::Bf16x3 => {
                    self.xinv_links::<f32>(tiles, &x_inv, src, dst, backward, true)?
                }
            }
        }
        Ok(DeviceCoarse { x: x_inv, yf, yb })
    }

    /// Useful flops of [`Self::x_inv_y`]: the 8 link products, 8 (2N_v)³ each, per
    /// coarse site (the inversion not counted).
    pub fn x_inv_y_flops(&self) -> f64 {
        let n = self.nc2 as f64;
        self.coarse.volume() as f64 * 8.0 * 8.0 * n * n * n
    }

    /// [`Self::x_inv_y`] of `d` in `mode`, read back as a [`Preconditioned`].
    pub fn preconditioned(
        &mut self,
        d: &DeviceCoarse,
        mode: TileMode,
    ) -> Result<Preconditioned, CoarsenError> {
        let tiles = self.x_inv_y_tiles(mode)?;
        let out = self.x_inv_y(d, mode, &tiles)?;
        let nc2 = self.nc2;
        let x_inv = self.field(&out.x, DenseKind::SiteMatrix)?;
        let mut ident = DenseLinkField::zeros_of(DenseKind::SiteMatrix, self.coarse, nc2)?;
        for cb in 0..self.coarse.volume() {
            for r in 0..nc2 {
                ident.link_mut(cb, 0)[r * nc2 + r] = C::new(1.0, 0.0);
            }
        }
        let op = DenseOperator::new(
            ident,
            self.field(&out.yf, DenseKind::Links)?,
            self.field(&out.yb, DenseKind::Links)?,
            self.shape,
        )?;
        Ok(Preconditioned { x_inv, op })
    }

    fn xinv_links<T: TileReal>(
        &self,
        tiles: &Tiles,
        x_inv: &CudaSlice<f64>,
        y: &CudaSlice<f64>,
        dst: &mut CudaSlice<f64>,
        backward: i32,
        single: bool,
    ) -> Result<(), DeviceError> {
        let gpu = self.gpu;
        let k = &self.kernels[0].1;
        let (products, nc2, m2) = (4 * self.coarse.volume(), self.nc2, 2 * self.nc2 * self.nc2);
        let k_pad = tiles.k_pad;
        let chunk =
            (OPERAND_BUDGET / (2 * nc2 * k_pad * std::mem::size_of::<T>())).clamp(1, products);
        let lens = (chunk * nc2 * k_pad, tiles.partial_len(chunk), chunk * m2);
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let TileScratch { a, b, partial, c } =
            TileScratch::ensure(T::slot(&mut scratch), gpu, lens)?;
        let bpb = tiles.blocks_per_product(chunk);
        let gather = if single { &k.xinv_f32 } else { &k.xinv_f64 };
        for first in (0..products).step_by(chunk) {
            let n = chunk.min(products - first);
            let mut args = Args::new();
            args.read("x_inv", x_inv)
                .read("y", y)
                .read("neighbours", &self.neighbours)
                .write("a", a)
                .write("b", b)
                .count("first", first)
                .count("products", n)
                .int("backward", backward);
            gather.launch_default(gpu, [n * nc2 * nc2, 1, 1], args)?;
            tiles.queue(gpu, (a, b), (n, bpb), partial, c)?;
            let mut args = Args::new();
            args.read("c", c)
                .write("dst", dst)
                .count("products", n)
                .count("first", first)
                .count("dst_stride", m2)
                .count("dst_offset", 0)
                .int("conj", backward);
            k.place.launch_default(gpu, [n * m2, 1, 1], args)?;
        }
        Ok(())
    }

    /// The coarse operator in 16-bit fixed point through the two passes of
    /// [`super::coarsen::fixed16`], launched as `launch` says: the CPU path's
    /// ([`super::coarsen_fixed16`]) bits for any launch. An error if a unit exceeds the
    /// 32-bit accumulator (naming a coarse site where it does).
    pub fn fixed16(&mut self, launch: UnitLaunch) -> Result<Fixed16Coarse, CoarsenError> {
        if launch.group == 0
            || launch.threads == 0
            || !launch.threads.is_multiple_of(32)
            || launch.threads > 1024
        {
            return Err(CoarsenError::Shape(format!(
                "a unit launch of {} threads (a multiple of 32 up to 1024) and groups of {} units (≥ 1)",
                launch.threads, launch.group
            )));
        }
        let gpu = self.gpu;
        self.kernels(launch.threads)?;
        let k = &self
            .kernels
            .iter()
            .find(|(t, _)| *t == launch.threads)
            .expect("loaded")
            .1;
        let (vol, m2) = (self.coarse.volume(), 2 * self.nc2 * self.nc2);
        let len = vol * 9 * m2;
        let mut max_bits = gpu.alloc::<i64>("fixed16 maxima", 2)?;
        let mut sums = gpu.alloc::<i64>("fixed16 pass-1 sums", len)?;
        let mut totals = gpu.alloc::<i32>("fixed16 totals", len)?;
        let mut status = gpu.alloc::<i32>("fixed16 status", 1)?;
        let stream = gpu.backend().stream();
        let read = |what: &str, e: cudarc::driver::DriverError| {
            CoarsenError::Device(DeviceError::Driver {
                what: what.into(),
                message: e.to_string(),
            })
        };
        let pass = |pass: i32,
                    scale: [f64; 2],
                    max_bits: &mut CudaSlice<i64>,
                    sums: &mut CudaSlice<i64>,
                    totals: &mut CudaSlice<i32>,
                    status: &mut CudaSlice<i32>|
         -> Result<(), DeviceError> {
            for t in Target::ALL {
                let per = self.count[t.index()];
                let groups = per.div_ceil(launch.group);
                let mut args = Args::new();
                args.read("v", &self.v)
                    .read("mats", &self.mats)
                    .read("units", &self.units[t.index()])
                    .count("per_product", per)
                    .count("group", launch.group)
                    .int("pass", pass)
                    .int("kind", kind(t) as i32)
                    .real("inv_quantum", scale[kind(t)])
                    .write("max_bits", &mut *max_bits)
                    .write("sums", &mut *sums)
                    .write("totals", &mut *totals)
                    .write("status", &mut *status)
                    .count("dst_stride", 9 * m2)
                    .count("dst_offset", t.index() * m2);
                k.units
                    .launch_default(gpu, [vol * groups * launch.threads, 1, 1], args)?;
            }
            Ok(())
        };
        // Pass 1: the largest entry per kind, the bound S₀, the exact sums, max |Y|.
        pass(
            0,
            [0.0; 2],
            &mut max_bits,
            &mut sums,
            &mut totals,
            &mut status,
        )?;
        let bits = stream
            .clone_dtoh(&max_bits)
            .map_err(|e| read("reading the maxima", e))?;
        let mut count = [0usize; 2];
        for t in Target::ALL {
            count[kind(t)] = count[kind(t)].max(self.count[t.index()]);
        }
        let bounds: [f64; 2] =
            std::array::from_fn(|k| bound(count[k], f64::from_bits(bits[k] as u64)));
        pass(
            1,
            bounds.map(|b| 1.0 / bound_quantum(b)),
            &mut max_bits,
            &mut sums,
            &mut totals,
            &mut status,
        )?;
        let mut max_abs = gpu.alloc::<i64>("fixed16 max |Y|", 2)?;
        let mut args = Args::new();
        args.read("sums", &sums)
            .write("max_abs", &mut max_abs)
            .count("count", len);
        k.max_abs.launch_default(gpu, [len, 1, 1], args)?;
        let max_abs = stream
            .clone_dtoh(&max_abs)
            .map_err(|e| read("reading max |Y|", e))?;
        let scale: [f64; 2] = std::array::from_fn(|k| scale_of(max_abs[k], bounds[k]));
        // Pass 2: i32 units in δ, summed in integers.
        pass(
            2,
            scale.map(|s| 1.0 / delta(s)),
            &mut max_bits,
            &mut sums,
            &mut totals,
            &mut status,
        )?;
        let bad = stream
            .clone_dtoh(&status)
            .map_err(|e| read("reading the status", e))?;
        if bad[0] != 0 {
            return Err(CoarsenError::FixedPointOverflow {
                coarse_site: (bad[0] - 1) as usize,
            });
        }
        let totals = stream
            .clone_dtoh(&totals)
            .map_err(|e| read("reading the totals", e))?;
        Ok(Fixed16Coarse::from_totals(
            scale[0], scale[1], &totals, self.nc2,
        ))
    }
}
