//! The kernel IR: the typed, printable level between a lowered spec and CUDA text.
//!
//! ```text
//! Lowered ─plan─▶ KernelIr ─passes (PASSES, in order)─▶ KernelIr ─emit::cuda─▶ CUDA C++
//! ```
//!
//! A [`KernelIr`] is one `extern "C" __global__` kernel: its parameters (in signature
//! order, each with what binds to it), the fields with their storage, the device library
//! pieces it needs, its compile-time constants, shared-memory buffers sized from the
//! block, the index [`Prologue`], a sequence of [`Stage`]s — each a body of typed
//! [`Stmt`]s (load through a storage codec, spin projection/reconstruction, transport by
//! a link, accumulation, shared-memory store/load, prefetch) and whether a barrier ends
//! it — and the [`Epilogue`] (xpay and the store). `Display` prints it
//! (`qdsl emit --kernel-ir`); [`crate::dsl::emit::cuda`] prints it as CUDA.
//!
//! [`plan`] builds the straightforward kernel: terms in spec order, every load decoded
//! and scaled where it is read, no prefetch. The optimisations are the named passes of
//! [`passes::PASSES`], functions over the IR: long links first, fixed-point scale
//! deferral, the prefetch build. The printer makes no decision of its own. A variant
//! whose threads walk the fifth dimension ([`crate::dsl::variant::Slices::Walk`]) is
//! then restaged by [`walk::stage_through_shared`].

mod display;
pub mod passes;
pub mod plan;
pub mod walk;

use crate::dsl::interface::KernelParam;
use crate::dsl::ir::{FieldShape, LinkRef};
use crate::dsl::layout::SoaLayout;
use crate::dsl::lower::ReadSites;
use crate::dsl::spin::{Phase, ProjectorPlan};
use crate::dsl::variant::{LongRecon, Recon, StorageFormat};
use crate::format::link::ScaledCompression;

pub use plan::plan;

/// One kernel, ready to print.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelIr {
    /// The `extern "C"` entry name.
    pub name: String,
    /// The opening comment, one line each (printed after `//`).
    pub header: Vec<String>,
    /// The compute type `real`.
    pub real: RealType,
    /// The device library pieces the kernel uses, in print order.
    pub library: Vec<DeviceLib>,
    /// Compile-time constants (the resolved knobs).
    pub constants: Vec<Constant>,
    /// The fields the kernel reads and writes, with their storage.
    pub fields: Vec<KernelField>,
    /// The parameters in signature order.
    pub params: Vec<Param>,
    /// Shared-memory buffers (dynamic shared memory, sized from the block).
    pub shared: Vec<SharedBuffer>,
    /// Index computations before the first memory access.
    pub prologue: Prologue,
    /// The body, in order.
    pub stages: Vec<Stage>,
    /// What follows the stages: xpay and the output store.
    pub epilogue: Epilogue,
    /// A walking kernel's plan: the staged source, the hoisted links, the slices in
    /// flight ([`walk`]); `None` for every other thread map.
    pub walk: Option<walk::WalkPlan>,
}

impl KernelIr {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&KernelField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Bytes of dynamic shared memory for a block of `block` threads (x, y, z).
    pub fn shared_bytes(&self, block: [u32; 3]) -> usize {
        self.shared.iter().map(|b| b.bytes(block, self.real)).sum()
    }
}

/// The compute type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealType {
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl RealType {
    /// The C type.
    pub fn c_type(self) -> &'static str {
        match self {
            RealType::F32 => "float",
            RealType::F64 => "double",
        }
    }

    /// Bytes of one real.
    pub fn bytes(self) -> usize {
        match self {
            RealType::F32 => 4,
            RealType::F64 => 8,
        }
    }
}

/// A piece of the shared device library ([`crate::dsl::emit::cuda`] prints each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceLib {
    /// `struct cplx` and its arithmetic.
    Complex,
    /// `qdsl_grid_dependency_wait()` (programmatic dependent launch).
    GridDependencyWait,
    /// Chunk loads/stores of f64/f32 records, L2 prefetch, `unpack_link` (recon 18/12).
    Storage,
    /// The codecs of the narrow formats in use, recon 8, the long-link decoders.
    Codecs {
        /// The spinor format (its encoder is included).
        spinor: StorageFormat,
        /// The gauge format.
        gauge: StorageFormat,
        /// The gauge compression.
        recon: Recon,
        /// The long-link compression.
        long_recon: LongRecon,
    },
    /// `transport<K, DAGGER>`: v ← U v or U† v for K colour vectors.
    Transport,
    /// `clover_mul`: v ← A v on a packed clover site.
    Clover,
    /// `box_site`: the thread → site map of a box ([`crate::lattice::SiteBox`]).
    BoxSite,
    /// Packing two floats into a 16-bit pair of the operand type and the power-of-two
    /// block scale of the tensor-core tiles ([`Stmt::ChiralMma`]).
    Mma16(crate::dsl::mma::Operand),
    /// A walking kernel's tile map, row copies (`cp.async`) and staging ([`walk`]).
    Walk,
}

/// `constexpr <ty> <name> = <value>; // <comment>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constant {
    /// The C type.
    pub ty: &'static str,
    /// The name.
    pub name: &'static str,
    /// The value as C.
    pub value: String,
    /// A trailing comment.
    pub comment: Option<&'static str>,
}

/// A field of the kernel: its name, device layout and shape; a compressed long field has
/// its compression and, as layout, its link record's.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelField {
    /// The spec's name (`f_<name>` in the source).
    pub name: String,
    /// Device layout (format and reals per record).
    pub layout: SoaLayout,
    /// Shape.
    pub shape: FieldShape,
    /// The compression of a compressed long (Naik) field.
    pub long: Option<ScaledCompression>,
    /// The extra arguments of its storage codec, declared after its pointer
    /// ([`crate::dsl::codec::Codec::args`]): the norms of a fixed-point colour spinor,
    /// the global scale s of a fixed-point gauge field stored as s·q/Q.
    pub extra: &'static [crate::dsl::codec::ExtraArg],
}

/// One kernel parameter: what binds to it and its C declaration (the four lattice
/// extents share one declaration, under [`KernelParam::Extent`]`(0)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// What the launcher binds.
    pub role: KernelParam,
    /// The C declaration.
    pub decl: String,
}

/// A shared-memory buffer: `elems_per_thread` values of `ty` for each thread of the
/// block (x · y · z of them, `block_threads`), value k of thread t = threadIdx.x +
/// blockDim.x · (threadIdx.y + blockDim.y · threadIdx.z) at element
/// `k · block_threads + t` (component-major: a warp reads 32 consecutive words of one
/// component, free of shared-memory bank conflicts). Printed as a
/// slice of the kernel's dynamic shared memory; [`KernelIr::shared_bytes`] sizes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedBuffer {
    /// The buffer's name in the source.
    pub name: String,
    /// Values per thread.
    pub elems_per_thread: usize,
}

impl SharedBuffer {
    /// Bytes for a block of `block` threads.
    pub fn bytes(&self, block: [u32; 3], real: RealType) -> usize {
        let threads: usize = block.iter().map(|&b| b as usize).product();
        threads * self.elems_per_thread * real.bytes()
    }
}

/// The index prologue: the output site of this thread, its fifth-dimension index, its
/// coordinates, the grid-dependency wait and the zeroed accumulator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prologue {
    /// The output parity (0, 1), or −1 for the full lattice.
    pub out_parity: i32,
    /// Where the fifth index s5 comes from.
    pub fifth: FifthIndex,
    /// Whether `cb`, the site's checkerboard index, is needed (links at x).
    pub checkerboard_index: bool,
    /// Spins of the accumulator `acc[spins][3]`.
    pub spins: usize,
    /// Threads past `n_out` return at once; a kernel with barriers must not return
    /// early, so it is launched with whole blocks of sites instead.
    pub bounds: Bounds,
    /// The sites the threads cover: the whole output parity, or a box of it given at
    /// launch ([`crate::lattice::SiteBox`]'s thread → site map).
    pub region: crate::dsl::variant::Region,
}

/// Where the fifth-dimension index s5 of a 5D field comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifthIndex {
    /// One grid row per slice: s5 = blockIdx.y (grid.y = Ls, 1 for 4D fields).
    GridY,
    /// Inside the block: s5 = threadIdx.y (block.y = Ls), so that the slices of one site
    /// share the block's shared memory (`fused5d!`).
    ThreadY,
    /// Slices across the block and the grid: s5 = blockIdx.y · blockDim.y + threadIdx.y
    /// (block.y a divisor of Ls), so that the slices of a site in one block read its
    /// links together ([`crate::dsl::variant::Slices::InBlock`], the multi-RHS hop).
    BlockY,
    /// A loop over every slice in each thread, the block a 4D tile of whole x rows
    /// (block.x = L0/2, block.y rows), the sources staged through shared memory
    /// ([`crate::dsl::variant::Slices::Walk`], [`walk`]).
    Walk,
}

impl FifthIndex {
    /// Where the slices of `variant`'s 5D fields come from.
    pub fn of(slices: crate::dsl::variant::Slices) -> Self {
        match slices {
            crate::dsl::variant::Slices::Grid => FifthIndex::GridY,
            crate::dsl::variant::Slices::InBlock => FifthIndex::BlockY,
            crate::dsl::variant::Slices::Walk => FifthIndex::Walk,
        }
    }
}

/// How threads past the last output site are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bounds {
    /// `if (i >= n_out) return;`.
    Return,
    /// No test: the launcher runs whole blocks of sites (n_out a multiple of blockDim.x),
    /// so every thread reaches every barrier.
    WholeBlocks,
}

/// A stage: a body of statements, and whether a block-wide barrier ends it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// What the stage computes.
    pub kind: StageKind,
    /// The statements, in order.
    pub body: Vec<Stmt>,
    /// `__syncthreads()` after the body.
    pub barrier: bool,
}

/// What a stage computes.
#[derive(Clone, Debug, PartialEq)]
pub enum StageKind {
    /// Term `index` of the lowered spec: acc += c · S · L · src(x + n μ̂).
    Term(TermReads),
    /// The L2 prefetch of term `index`'s records (the prefetch pass).
    Prefetch {
        /// The term's number in the spec.
        index: usize,
    },
    /// A stage of a hand-built or fused kernel.
    Custom(String),
}

/// What a term reads: the prefetch pass asks for these records, the term-order pass
/// orders by `long_link`.
#[derive(Clone, Debug, PartialEq)]
pub struct TermReads {
    /// The term's number in the spec (kept in comments whatever the order).
    pub index: usize,
    /// Whether the term reads a long (Naik) link.
    pub long_link: bool,
    /// The source field.
    pub source: String,
    /// The hop: direction and steps.
    pub hop: (usize, i32),
    /// On which sites the source is read.
    pub reads: ReadSites,
    /// The links of the term's product.
    pub links: Vec<LinkRef>,
}

/// A value a load produces, named so that the accumulation can take over the factor the
/// load left out ([`Scaling::Deferred`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// The term's source record `r`.
    Source,
    /// Link k of the term's product (its position in the spec's link list).
    Link(usize),
    /// The clover record `ca` at the output site.
    Clover,
    /// The xpay operand `xr`.
    XpayX,
}

/// How a load goes through the caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Read by several threads or terms: the default cache path.
    Shared,
    /// Read once per launch: streaming, evict first (`__ldcs`).
    Once,
}

/// Where a fixed-point record's scale is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// Every decoded real is multiplied by it at the load.
    Applied,
    /// The reals stay the stored integers q and the consumer gets the scale as one factor
    /// (the accumulation: linear in the record).
    Deferred,
    /// As `Deferred`, and the integers are left biased by B = 2^23 + 2^(b−1), for a
    /// consumer that only combines them in pairs (the spin projection, exact in f32).
    Biased,
}

/// A load through the field's storage codec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Load {
    /// What the load produces.
    pub value: Value,
    /// The field read.
    pub field: String,
    /// Where: a site record or a link.
    pub at: LoadAt,
    /// The cache path.
    pub reads: Reads,
    /// Where a fixed-point scale is applied.
    pub scaling: Scaling,
}

/// Where a load reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadAt {
    /// The record of site `site` (a C expression) into `real <dest>[reals]`.
    Site {
        /// The site index expression.
        site: &'static str,
        /// The destination array.
        dest: &'static str,
    },
    /// A walking kernel's staged source: the record at shared-memory place `n` of the
    /// current slice's stage into `real <dest>[reals]` ([`walk`]).
    Staged {
        /// The destination array.
        dest: &'static str,
    },
    /// Link μ at checkerboard site `ln` (the term's x + at · μ̂) into `cplx m[3][3]`.
    Link {
        /// Direction.
        mu: usize,
        /// Displacement of the link's site from x along μ.
        at: i32,
    },
}

/// A condition of [`Stmt::If`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// The hop from x to y stays in x's Dirichlet block along μ.
    SameDirichletBlock {
        /// Direction.
        mu: usize,
        /// Block extent along μ.
        block: usize,
    },
}

/// A build flag of [`Stmt::Build`] (a `-D` option of the tuner's builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildFlag {
    /// `#if QDSL_PREFETCH`.
    Prefetch,
    /// `#if !QDSL_PREFETCH_LINKS_ONLY`.
    NotLinksOnly,
}

/// The rows a transport or accumulation works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// The projected half spinor `h[2][3]`.
    Half,
    /// The whole spinor `v[spins][3]`.
    Full(usize),
}

/// How an accumulation adds its rows into `acc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconstruct {
    /// Row q into acc[q].
    Rows(usize),
    /// The half spinor's rows into acc[0], acc[1], then the plan's reconstruction into
    /// acc[2], acc[3].
    Projected(ProjectorPlan),
}

/// acc += sign · (coefficient · boundary sign · factors) · rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Accumulate {
    /// How the rows enter.
    pub reconstruct: Reconstruct,
    /// ±1: the sign of the accumulation (a coefficient ±1 becomes this).
    pub sign: i32,
    /// The remaining coefficient (1.0: none).
    pub scale: f64,
    /// Whether the coefficient flips with an odd number of antiperiodic wraps.
    pub wraps: bool,
    /// Loads whose left-out factors (deferred scales, long-link scales) multiply the
    /// accumulation, in order; a load that left none out adds nothing.
    pub scaled_by: Vec<Value>,
}

/// A typed statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A C block `{ // comment` … `}`.
    Scope {
        /// The comment after the brace.
        comment: Option<String>,
        /// The statements inside.
        body: Vec<Stmt>,
    },
    /// `#if <flag>` … `#endif`.
    Build {
        /// The flag.
        flag: BuildFlag,
        /// The statements inside.
        body: Vec<Stmt>,
    },
    /// `if (<cond>) {` … `}`.
    If {
        /// The condition.
        cond: Cond,
        /// The statements inside.
        body: Vec<Stmt>,
    },
    /// A comment line.
    Comment(String),
    /// `int y[4]` = x + steps · μ̂, wrapped; with `tracks_wraps`, `bool wraps` flips at
    /// each wrap of the antiperiodic time boundary.
    Neighbour {
        /// Direction.
        mu: usize,
        /// Steps.
        steps: i32,
        /// Whether `wraps` is kept.
        tracks_wraps: bool,
    },
    /// `const int n` = the index of y in a field read on `reads` sites.
    SourceIndex {
        /// On which sites the field is read.
        reads: ReadSites,
        /// Whether the output is one parity.
        parity_output: bool,
    },
    /// `const int ln` = the checkerboard index of the link's site.
    LinkSite(LinkRef),
    /// A walking kernel's `const int n`: the shared-memory place of term `term`'s source
    /// record in the current slice's stage, computed once before the slice loop; with
    /// `tracks_wraps`, `const bool wraps` likewise ([`walk`]).
    WalkSource {
        /// The term's position among the kernel's terms ([`walk::WalkPlan::terms`]).
        term: usize,
        /// Whether `wraps` is needed.
        tracks_wraps: bool,
    },
    /// A walking kernel's `cplx m[3][3]`: link `link` of term `term`, unpacked from the
    /// registers it was loaded into before the slice loop ([`walk`]).
    WalkLink {
        /// The term's position among the kernel's terms.
        term: usize,
        /// The link's position in the term's product.
        link: usize,
    },
    /// A load through the field's codec.
    Load(Load),
    /// `cplx v[spins][3]` from the reals `r`.
    Spinor {
        /// Spins.
        spins: usize,
    },
    /// `h[2][3]` = the (1 ± γ_μ) projection of v; `biased`: the source is fixed point
    /// left biased ([`Scaling::Biased`]), combined exactly.
    Project {
        /// The rows: (partner spin, phase) of h[0], h[1].
        rows: [(usize, Phase); 2],
        /// The biased source's format.
        biased: Option<StorageFormat>,
    },
    /// v ← i γ5 v.
    Twist,
    /// v ← A v with the clover record `ca`.
    CloverMul,
    /// rows ← m rows (or m† rows).
    Transport {
        /// The rows.
        rows: Rows,
        /// U† instead of U.
        dagger: bool,
    },
    /// The accumulation.
    Accumulate(Accumulate),
    /// L2 prefetch of site `n`'s record of a site field.
    PrefetchSite {
        /// The field.
        field: String,
    },
    /// L2 prefetch of link μ's record at `ln`.
    PrefetchLink {
        /// The field.
        field: String,
        /// Direction.
        mu: usize,
    },
    /// `<buffer>[this thread][k] = <src>[k]` for k < reals.
    SharedStore {
        /// The buffer.
        buffer: String,
        /// The source array.
        src: &'static str,
        /// Reals.
        reals: usize,
    },
    /// `real <dest>[reals]` = `<buffer>[thread (threadIdx.x, (threadIdx.y + dy) mod
    /// blockDim.y)][k]`: the record another fifth-dimension slice of the same site stored.
    SharedLoad {
        /// The buffer.
        buffer: String,
        /// The destination array.
        dest: &'static str,
        /// Reals.
        reals: usize,
        /// The slice offset dy.
        dy: i32,
    },
    /// `acc[q][a] += coeff · <src>[6q + 2a …]` for the reals of a spinor record.
    AddReals {
        /// The source array.
        src: &'static str,
        /// The coefficient.
        coeff: f64,
        /// Spins.
        spins: usize,
    },
    /// A tensor-core operation on fragments (`mma_tile!`): the extension point.
    Mma(MmaOp),
    /// `__syncthreads()` inside a stage (a term whose source passes through shared
    /// memory: every thread of the block reaches it).
    Barrier,
    /// `<buffer>[this thread][6q + 2a (+ 1)]` = the real (imaginary) part of acc[q][a].
    SharedStoreAcc {
        /// The buffer.
        buffer: String,
        /// Spins of the accumulator.
        spins: usize,
    },
    /// One row of an s-local operator O = P₊ A₊ + P₋ A₋ on the block's s-column.
    ChiralRow(ChiralRow),
    /// The block's s-column replaced, in place, by O⁻¹ column for a cyclic bidiagonal O
    /// (M5, M5†) per chirality.
    ChiralSolve(ChiralSolve),
    /// The block's s-columns replaced, in place, by A column on the tensor cores (A±
    /// real: the dense M5⁻¹ or M5⁻†).
    ChiralMma(ChiralMma),
    /// `acc[q][a]` = this thread's record of the buffer (the inverse of
    /// [`Stmt::SharedStoreAcc`]).
    SharedLoadAcc {
        /// The buffer.
        buffer: String,
        /// Spins of the accumulator.
        spins: usize,
    },
}

/// column ← O⁻¹ column on the block's s-columns, O = P₊ A₊ + P₋ A₋ with each A± cyclic
/// bidiagonal: a diagonal and one off-diagonal at s − 1 (lower) or s + 1 (upper), whose
/// wrap-around is the wall's corner — M5 = α + β S (P₊: lower, P₋: upper) and M5†
/// (the other way round). For each of the 12 complex components of a record (threads
/// s5, s5 + Ls, … of the site take one each) the solve of A y = x is one sweep in the
/// off-diagonal's direction: with Y = y at the sweep's last slice, y_n = p_n + q_n Y,
///
/// p₀ = x₀/d₀, q₀ = −e₀/d₀;  p_n = (x_n − e_n p_{n−1})/d_n, q_n = −e_n q_{n−1}/d_n,
///
/// Y = p_last/(1 − q_last) (the corner closes the cycle), then a second sweep writes
/// y_n = p_n + q_n Y. O(Ls) per component against the dense inverse's O(Ls²) per row;
/// the p_n wait in the column itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChiralSolve {
    /// The shared buffer holding the column.
    pub buffer: String,
    /// The parameter holding O's matrices (`[P₊, P₋][s][s'][re, im]`) followed by the
    /// sweeps' coefficients
    /// ([`ChiralMatrices::sweep_reals`](crate::dsl::fused5d::ChiralMatrices::sweep_reals)).
    pub matrix: String,
    /// The piece applied (e.g. `M5inv`), for comments.
    pub piece: String,
    /// O = A† of the non-dagger form: the off-diagonals swap sides.
    pub dagger: bool,
}

/// column ← A column on the tensor cores, in place, for O = P₊ A₊ + P₋ A₋ with A± real
/// Ls × Ls (Ls ≤ 16; the dense M5⁻¹ of real b5, c5): per chirality χ the block's data is
/// the real 16 × N matrix B_χ (rows s, zero beyond Ls; column n = 8 j + c the real
/// component 12χ + n / blockDim.x of site n mod blockDim.x), and warp w takes the
/// 8-column tiles w, w + warps, … of both chiralities: D = A_χ B_tile as one
/// `mma.sync.m16n8k16` (f16 or bf16 operands, f32 accumulation), the A fragment loaded
/// once per chirality, each column scaled by a power of two from its own max |value|
/// (the four lanes holding a column agree through two shuffles), A by its max, and D
/// scaled back into the column ([`crate::dsl::fused5d::mma`] has the equations and the
/// host's same computation). Every column belongs to one tile: a warp reads and then
/// writes only its own tiles' words (`__syncwarp` between), so the only barriers are the
/// stage's own (before: the column stored; after: read by other threads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChiralMma {
    /// The shared buffer holding the column.
    pub buffer: String,
    /// The parameter holding A's matrices (`[P₊, P₋][s][s'][re, im]`; the imaginary
    /// parts are zero and not read).
    pub matrix: String,
    /// The piece applied (e.g. `M5inv`), for comments.
    pub piece: String,
    /// The tensor core's operand type (f16 or bf16).
    pub operand: crate::dsl::mma::Operand,
}

/// dest = Σ_s' A₊(s5, s') P₊ buffer[s'] + A₋(s5, s') P₋ buffer[s'], buffer[s'] the
/// 24-real Wilson record thread (threadIdx.x, s') stored (P₊: spins 0, 1, reals 0–11;
/// P₋: spins 2, 3, reals 12–23), A± read from the kernel parameter `matrix`
/// (`[P₊, P₋][s][s'][re, im]`, 4 Ls² reals, [`crate::dsl::fused5d::ChiralMatrices`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChiralRow {
    /// The shared buffer holding the column.
    pub buffer: String,
    /// The matrices' parameter name.
    pub matrix: String,
    /// The piece, for comments (e.g. `Mphi.dagger()`).
    pub piece: String,
    /// Which s' the row reads.
    pub reach: RowReach,
    /// Where the row goes.
    pub dest: RowDest,
}

/// Which entries of a row an s-local piece reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowReach {
    /// Every s' (M5⁻¹: O(Ls) per row).
    Dense,
    /// s' = s5 − 1, s5, s5 + 1 (mod Ls) only (M5, M_φ: the wall's −m_f in the corners).
    Neighbours,
}

/// Where a [`ChiralRow`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowDest {
    /// Over the existing reals array (a source record `r`, the xpay operand `xr`).
    Reals(&'static str),
    /// Over the accumulator `acc[4][3]`.
    Accumulator,
}

/// Tensor-core fragment operations (`mma_tile!`, [`crate::dsl::mma`]): fragments are
/// per-warp register arrays; [`crate::dsl::mma::cuda::print_op`] prints each (one
/// definition of the inline PTX).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MmaOp {
    /// `mma.sync.aligned`: d ← a · b + d on the warp's fragments `a`, `b`, `d` (arrays of
    /// 32-bit registers, or doubles for DMMA).
    Sync {
        /// Shape and types.
        instruction: crate::dsl::mma::Instruction,
        /// The A fragment.
        a: String,
        /// The B fragment.
        b: String,
        /// The accumulator fragment.
        d: String,
    },
    /// `ldmatrix.sync.aligned.m8n8.x{count}.shared.b16`: `count` 32-bit registers of
    /// `dest` from the 8 × 8 16-bit matrices whose rows this lane's `addr` points at.
    LoadMatrix {
        /// The fragment.
        dest: String,
        /// 8 × 8 matrices (4 for an m16n8k16 A fragment, 2 for B).
        count: usize,
        /// The lane's row address (a generic pointer into shared memory).
        addr: String,
    },
}

/// What follows the stages: `real o[]` from the accumulator (with xpay, a·x + b·acc), then
/// the store of `o` to the output at `io`.
#[derive(Clone, Debug, PartialEq)]
pub struct Epilogue {
    /// Spins of the output.
    pub spins: usize,
    /// The xpay operand's load, with xpay.
    pub xpay: Option<Load>,
    /// The output field.
    pub out: String,
    /// The xpay operand `xr` is already in registers (a stage loaded it and applied a
    /// piece to it: `fused5d!`'s xpay piece); the epilogue does not load it.
    pub xpay_in_registers: bool,
}
