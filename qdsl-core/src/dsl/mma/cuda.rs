//! A [`MmaPlan`] as CUDA: the tile kernel and the kernel adding the blocks' partials,
//! one program per variant, with their interfaces.
//!
//! The tile kernel (`inner` problem): block b takes k-tiles b, b + gridDim.x, …; each is
//! staged (all m rows of A, then all n rows of B, `tile_k` values each) into shared
//! memory — `cp.async` into a ring of `stages` buffers, or plain 16-byte copies into one
//! — then, with block-max scaling, the block's max |a| and max |b| of the tile are found
//! (warp shuffles, then `atomicMax` on the bits of non-negative floats), with `ldmatrix`
//! the tile is rounded (and split) into 16-bit arrays, and every warp multiplies its
//! instruction tiles: fragments, `mma.sync` (three per product when split), the tile's
//! f32 sum added (unscaled) to f64 totals. DMMA accumulates in f64 directly. The
//! totals go to `partial[blockIdx.x][m][n]`; the reduce kernel adds the blocks'
//! records in order: c[i][j] = Σ_b partial[b][i][j].
//!
//! SIMT (`simt(f32 -> f32)`): the same staging, partial records and reduce kernel; the
//! block rounds each staged tile into an f32 k-major copy and every thread runs `fmaf`
//! chains on its register tile ([`super::simt`]).
//!
//! Batched products (`batched_complex_inner`) run many such products in one grid: block
//! blockIdx.x works on product blockIdx.x / blocks_per_batch (its A and B rows offset by
//! batch_a, batch_b values) as block blockIdx.x mod blocks_per_batch of that product's
//! k-tiles, and the reduce kernel adds each product's blocks' records.
//!
//! Requirements the caller checks ([`check_launch`]): k a multiple of tile_k, every row
//! 16-byte aligned (lda, ldb multiples of 16 bytes), at least one k-tile.

use super::plan::MmaPlan;
use super::spec::{Accumulator, Fragments, Instruction, Operand, Scaling, Shape, Split, Staging};
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::kernel_ir::MmaOp;
use crate::dsl::knob_space::{Extents, LaunchSpace};
use std::fmt::Write;

/// The most blocks of a tile kernel (each writes one partial record): the grid covers
/// min(k-tiles, this) blocks, a grid-stride loop the rest.
pub const MAX_BLOCKS: u32 = 4096;

/// Blocks the tuner tries for the tile kernel: enough to fill an H100's 132 SMs several
/// times, at most [`MAX_BLOCKS`] (the default, untuned).
pub const GRID_BLOCKS: Extents = Extents::PowersOfTwo {
    min: 64,
    max: MAX_BLOCKS,
};

/// The lines of CUDA of one fragment operation.
pub fn print_op(op: &MmaOp) -> Vec<String> {
    match op {
        MmaOp::Sync {
            instruction: i,
            a,
            b,
            d,
        } => {
            let (ty, a_regs, b_regs, d_regs, dc, ac) = match i.shape {
                Shape::M16N8K16 => (i.operand.name(), 4, 2, 4, "f", "r"),
                Shape::M16N8K8 => ("tf32", 4, 2, 4, "f", "r"),
                Shape::M8N8K4 => ("f64", 1, 1, 2, "d", "d"),
                Shape::Simt => {
                    return vec![format!(
                        "// simt: {d} += {a} · {b} by fmaf on the CUDA cores (no mma.sync)"
                    )]
                }
            };
            let acc = i.accumulator.name();
            let list = |from: usize, n: usize| {
                (from..from + n)
                    .map(|k| format!("%{k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let dl = list(0, d_regs);
            let al = list(d_regs, a_regs);
            let bl = list(d_regs + a_regs, b_regs);
            let outs = (0..d_regs)
                .map(|k| format!("\"+{dc}\"({d}[{k}])"))
                .collect::<Vec<_>>()
                .join(", ");
            let ins = (0..a_regs)
                .map(|k| format!("\"{ac}\"({a}[{k}])"))
                .chain((0..b_regs).map(|k| format!("\"{ac}\"({b}[{k}])")))
                .collect::<Vec<_>>()
                .join(", ");
            vec![format!(
                "asm volatile(\"mma.sync.aligned.{}.row.col.{acc}.{ty}.{ty}.{acc} {{{dl}}}, {{{al}}}, {{{bl}}}, {{{dl}}};\" : {outs} : {ins});",
                i.shape.name()
            )]
        }
        MmaOp::LoadMatrix { dest, count, addr } => {
            let regs = (0..*count)
                .map(|k| format!("%{k}"))
                .collect::<Vec<_>>()
                .join(", ");
            let outs = (0..*count)
                .map(|k| format!("\"=r\"({dest}[{k}])"))
                .collect::<Vec<_>>()
                .join(", ");
            vec![format!(
                "asm volatile(\"ldmatrix.sync.aligned.m8n8.x{count}.shared.b16 {{{regs}}}, [%{count}];\" : {outs} : \"r\"((unsigned)__cvta_generic_to_shared({addr})));"
            )]
        }
    }
}

/// The tile kernel's parameters: `a`, `b` (the input rows), `partial` (written: one
/// m × n' f64 record per block, n' the real product's columns), `lda`, `ldb` (row
/// strides in values), `k_tiles`; batched products add `blocks_per_batch` (the grid is
/// batches × blocks_per_batch blocks, product p's blocks p · blocks_per_batch …) and
/// `batch_a`, `batch_b` (values from one product's rows of A, B to the next's).
pub fn tile_params(p: &MmaPlan) -> Vec<ParamDecl> {
    let input = match p.variant.input {
        super::spec::Input::F32 => Elem::F32,
        super::spec::Input::F64 => Elem::F64,
    };
    vec![
        ParamDecl::new("a", ParamKind::read(input)),
        ParamDecl::new("b", ParamKind::read(input)),
        ParamDecl::new("partial", ParamKind::write(Elem::F64)),
        ParamDecl::new("lda", ParamKind::I64),
        ParamDecl::new("ldb", ParamKind::I64),
        ParamDecl::new("k_tiles", ParamKind::I64),
    ]
    .into_iter()
    .chain(
        p.spec
            .problem
            .is_batched()
            .then(|| {
                [
                    ParamDecl::new("blocks_per_batch", ParamKind::I64),
                    ParamDecl::new("batch_a", ParamKind::I64),
                    ParamDecl::new("batch_b", ParamKind::I64),
                ]
            })
            .into_iter()
            .flatten(),
    )
    .collect()
}

/// The reduce kernel's parameters: `partial`, `c` (written: m × n f64, or m × n
/// interleaved complex for complex vectors), `blocks`.
pub fn reduce_params() -> Vec<ParamDecl> {
    vec![
        ParamDecl::new("partial", ParamKind::read(Elem::F64)),
        ParamDecl::new("c", ParamKind::write(Elem::F64)),
        ParamDecl::new("blocks", ParamKind::I32),
    ]
}

/// The batched reduce kernel's parameters: those of [`reduce_params`] (`blocks` per
/// product) and `batches`, the number of products.
pub fn batched_reduce_params() -> Vec<ParamDecl> {
    let mut p = reduce_params();
    p.push(ParamDecl::new("batches", ParamKind::I32));
    p
}

/// Why a launch of the plan's kernel on these operands cannot run (k not a multiple of
/// tile_k, rows not 16-byte aligned, no k-tile), or `None`.
pub fn check_launch(p: &MmaPlan, k: usize, lda: usize, ldb: usize) -> Option<String> {
    let (tk, per16) = (p.variant.tile_k, 16 / p.variant.input.bytes());
    if k == 0 || !k.is_multiple_of(tk) {
        return Some(format!(
            "k = {k} is not a positive multiple of tile_k = {tk}"
        ));
    }
    if !lda.is_multiple_of(per16) || !ldb.is_multiple_of(per16) || lda < k || ldb < k {
        return Some(format!(
            "row strides lda = {lda}, ldb = {ldb} must be at least k = {k} and multiples of {per16} values (16 bytes)"
        ));
    }
    None
}

/// The program of a plan: its source and the two kernels' interfaces. The tile kernel
/// has a fixed block of 32 · warps threads and a tuned grid ([`GRID_BLOCKS`]; launch it
/// over `k_tiles · threads` items: at most one block per k-tile, at most [`MAX_BLOCKS`]);
/// a batched one's grid is exactly the blocks of the launch (`batches ·
/// blocks_per_batch · threads` items). The reduce kernel has one thread per output
/// entry.
pub fn program(p: &MmaPlan) -> KernelProgram {
    let threads = p.threads() as u32;
    let shared = u32::try_from(p.shared_bytes()).unwrap_or(u32::MAX);
    // Batched products map blockIdx.x to (product, block of the product): their grid is
    // exactly batches · blocks_per_batch blocks, never capped or tuned.
    let mut tile = if p.spec.problem.is_batched() {
        Geometry::linear()
            .with_fixed_block(threads)
            .with_max_grid_x(i32::MAX as u32)
    } else {
        Geometry::linear()
            .with_launch_space(
                LaunchSpace::linear(threads)
                    .without_throttle()
                    .with_grid_x(GRID_BLOCKS),
            )
            .with_fixed_block(threads)
            .with_max_grid_x(MAX_BLOCKS)
    };
    tile.shared_fixed = shared;
    KernelProgram {
        name: p.name.clone(),
        source: source(p),
        options: Vec::new(),
        kernels: vec![
            KernelInterface {
                name: p.name.clone(),
                params: tile_params(p),
                geometry: tile,
            },
            KernelInterface {
                name: p.reduce_name(),
                params: if p.spec.problem.is_batched() {
                    batched_reduce_params()
                } else {
                    reduce_params()
                },
                geometry: Geometry::linear().with_fixed_block(128),
            },
        ],
    }
}

/// `qdsl_block_scale(max)`: 2^(15 − e) for max = f 2^e, f ∈ [0.5, 1) (1 for a zero,
/// infinite or NaN max), as [`super::cpu::block_scale`].
pub const BLOCK_SCALE_HELPER: &str =
    "// 2^(15 - e) for max = f 2^e, f in [0.5, 1): the scaled tile stays below 2^15 (1 for\n\
     // a zero tile).\n\
     static __device__ __forceinline__ float qdsl_block_scale(float mx) {\n\
     \x20   if (!(mx > 0.0f) || isinf(mx)) return 1.0f;\n\
     \x20   int e; frexpf(mx, &e);\n\
     \x20   return ldexpf(1.0f, min(15 - e, 126));\n}\n";

/// The helpers of a 16-bit operand type's m16n8k16 tiles in another kernel
/// (`fused5d!`'s tensor-core M5⁻¹): [`helpers`] and [`BLOCK_SCALE_HELPER`].
pub fn operand_helpers(s: &mut String, operand: Operand) {
    helpers(
        s,
        Instruction {
            shape: Shape::M16N8K16,
            operand,
            accumulator: Accumulator::F32,
        },
    );
    s.push_str(BLOCK_SCALE_HELPER);
}

/// The device helpers of an operand type: rounding two floats into a packed register
/// (element 0 in the low half, as fragments hold them) and reading element 0 / 1 back.
pub(super) fn helpers(s: &mut String, i: Instruction) {
    match i.operand {
        Operand::Bf16 | Operand::F16 => {
            let t = i.operand.name();
            let _ = writeln!(
                s,
                "// Two floats rounded to nearest even into {t}x2: x0 in the low half.\n\
                 static __device__ __forceinline__ unsigned qdsl_pack(float x0, float x1) {{\n\
                 \x20   unsigned d;\n\
                 \x20   asm(\"cvt.rn.{t}x2.f32 %0, %1, %2;\" : \"=r\"(d) : \"f\"(x1), \"f\"(x0));\n\
                 \x20   return d;\n}}"
            );
            if i.operand == Operand::Bf16 {
                s.push_str(
                    "static __device__ __forceinline__ float qdsl_lo(unsigned d) { return __uint_as_float(d << 16); }\n\
                     static __device__ __forceinline__ float qdsl_hi(unsigned d) { return __uint_as_float(d & 0xffff0000u); }\n",
                );
            } else {
                s.push_str(
                    "static __device__ __forceinline__ float qdsl_lo(unsigned d) {\n\
                     \x20   float x; asm(\"{ .reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, l; }\" : \"=f\"(x) : \"r\"(d)); return x;\n}\n\
                     static __device__ __forceinline__ float qdsl_hi(unsigned d) {\n\
                     \x20   float x; asm(\"{ .reg .f16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, h; }\" : \"=f\"(x) : \"r\"(d)); return x;\n}\n",
                );
            }
            s.push_str(
                "// (hi, lo) of two floats: hi = rn(x), lo = rn(x - hi).\n\
                 static __device__ __forceinline__ void qdsl_split(float x0, float x1, unsigned& hi, unsigned& lo) {\n\
                 \x20   hi = qdsl_pack(x0, x1);\n\
                 \x20   lo = qdsl_pack(x0 - qdsl_lo(hi), x1 - qdsl_hi(hi));\n}\n",
            );
        }
        Operand::Tf32 => s.push_str(
            "// A float rounded to tf32 (nearest, ties away from zero).\n\
             static __device__ __forceinline__ unsigned qdsl_tf32(float x) {\n\
             \x20   unsigned d; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(d) : \"f\"(x)); return d;\n}\n\
             // (hi, lo) of a float: hi = rn(x), lo = rn(x - hi).\n\
             static __device__ __forceinline__ void qdsl_split(float x, unsigned& hi, unsigned& lo) {\n\
             \x20   hi = qdsl_tf32(x);\n\
             \x20   lo = qdsl_tf32(x - __uint_as_float(hi));\n}\n",
        ),
        Operand::F32 | Operand::F64 => {}
    }
}

/// The first lines of every generated tile source: the kernel's name, where it came
/// from, and the spec's doc comment.
pub(super) fn source_header(s: &mut String, p: &MmaPlan) {
    let _ = writeln!(s, "// {}", p.name);
    let _ = writeln!(
        s,
        "// Generated by qdsl from the mma_tile spec `{}`. Do not edit.",
        p.spec.name
    );
    for l in p.spec.doc.lines() {
        let _ = writeln!(s, "//{}", l.trim_end());
    }
}

/// The CUDA source of a plan.
pub fn source(p: &MmaPlan) -> String {
    let v = &p.variant;
    let spec = &p.spec;
    let i = spec.instruction;
    let (im, inn, ik) = i.shape.mnk();
    let input = v.input.c_type();
    let mut s = String::new();
    source_header(&mut s, p);
    let _ = writeln!(
        s,
        "// problem: {}, mode: {}, scaling: {:?}, staging: {:?}, fragments: {:?}",
        spec.problem.name(),
        spec.mode(),
        spec.scaling,
        spec.staging,
        spec.fragments
    );
    let _ = writeln!(s, "// variant: {}", v.canonical());
    let split = spec.split == Split::Three;
    let ldm = spec.fragments == Fragments::Ldmatrix;
    let scaled = spec.scaling == Scaling::BlockMax;
    let dmma = i.accumulator == Accumulator::F64;
    let complex = spec.problem.is_complex();
    let batched = spec.problem.is_batched();
    let simt = p.simt.is_some();
    // The block's index among its product's blocks and their number: the grid's own, or
    // (batched products) blockIdx.x split into the product and the block within it.
    let (bid, gdim) = if batched {
        ("bx", "blocks_per_batch")
    } else {
        ("blockIdx.x", "gridDim.x")
    };
    let per_chunk = 16 / v.input.bytes();
    let consts = [
        ("M", v.m),
        ("N", v.n),
        ("TILE_K", v.tile_k),
        ("WARPS", v.warps),
        ("THREADS", p.threads()),
        ("STAGES", v.stages),
        ("ROWS", p.rows()),
        ("NR", p.real_n()),
        ("SROW", p.staged_row()),
        ("RROW", p.rounded_row()),
        ("TILES_N", p.tiles.1),
        ("TPW", p.tiles_per_warp),
        ("CHUNKS", v.tile_k / per_chunk),
        ("PER_CHUNK", per_chunk),
    ];
    let simt_consts = if simt {
        super::simt::inner_consts(p)
    } else {
        Vec::new()
    };
    s.push_str("namespace {\n");
    for (name, value) in consts.into_iter().chain(simt_consts) {
        let _ = writeln!(s, "constexpr int {name} = {value};");
    }
    s.push_str("}\n");
    helpers(&mut s, i);
    let _ = writeln!(
        s,
        "// Element k of a real-product column's row: the staged row itself, or (complex vectors,\n\
         // rot) its rotation b' = (im, -re): b'[k] = b[k + 1] for even k, -b[k - 1] for odd k.\n\
         template <typename T> static __device__ __forceinline__ T qdsl_b(const {input}* row, int k, bool rot) {{\n\
         \x20   return rot ? ((k & 1) ? -(T)row[k - 1] : (T)row[k + 1]) : (T)row[k];\n}}"
    );
    // Staging one k-tile.
    let _ = writeln!(
        s,
        "// k-tile `tile` (values k0 .. k0 + TILE_K of every row of A, then of B) into `dst`.\n\
         static __device__ __forceinline__ void qdsl_stage({input}* dst, const {input}* __restrict__ a, const {input}* __restrict__ b, long lda, long ldb, long tile) {{\n\
         \x20   const long k0 = tile * TILE_K;\n\
         \x20   for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {{\n\
         \x20       const int r = c / CHUNKS, q = (c % CHUNKS) * PER_CHUNK;\n\
         \x20       const {input}* src = r < M ? a + r * lda + k0 + q : b + (r - M) * ldb + k0 + q;"
    );
    match spec.staging {
        Staging::CpAsync => s.push_str(
            "        asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"((unsigned)__cvta_generic_to_shared(dst + r * SROW + q)), \"l\"(src));\n",
        ),
        Staging::Direct => s.push_str(
            "        *reinterpret_cast<int4*>(dst + r * SROW + q) = __ldg(reinterpret_cast<const int4*>(src));\n",
        ),
    }
    s.push_str("    }\n}\n");
    let params = format!(
        "const {input}* __restrict__ a, const {input}* __restrict__ b, double* __restrict__ partial, const long lda, const long ldb, const long k_tiles{}",
        if batched {
            ", const long blocks_per_batch, const long batch_a, const long batch_b"
        } else {
            ""
        }
    );
    if simt {
        // Declared first with its launch bounds (the definition keeps the plain
        // signature the interface is read from).
        let _ = writeln!(
            s,
            "// Two blocks per SM: at most 128 registers (the 32 f32 and 32 f64 accumulators fit).\n\
             extern \"C\" __global__ void __launch_bounds__(THREADS, 2) {}({params});",
            p.name
        );
    }
    let _ = writeln!(s, "extern \"C\" __global__ void {}({params})\n{{", p.name);
    if batched {
        s.push_str(
            "    // Product `batch` of the batch: its rows of A and B; `bx` its block among blocks_per_batch.\n\
             \x20   const long batch = blockIdx.x / blocks_per_batch, bx = blockIdx.x % blocks_per_batch;\n\
             \x20   a += batch * batch_a;\n\
             \x20   b += batch * batch_b;\n",
        );
    }
    s.push_str("    extern __shared__ __align__(16) unsigned char qdsl_smem[];\n");
    let _ = writeln!(
        s,
        "    {input}* const staged = reinterpret_cast<{input}*>(qdsl_smem);"
    );
    let staged_bytes = v.stages * p.rows() * p.staged_row() * v.input.bytes();
    let mut offset = staged_bytes;
    if ldm {
        let _ = writeln!(
            s,
            "    unsigned short* const hi16 = reinterpret_cast<unsigned short*>(qdsl_smem + {offset});"
        );
        offset += p.rounded_rows() * p.rounded_row() * 2;
        if split {
            let _ = writeln!(
                s,
                "    unsigned short* const lo16 = reinterpret_cast<unsigned short*>(qdsl_smem + {offset});"
            );
            offset += p.rounded_rows() * p.rounded_row() * 2;
        }
    }
    if scaled {
        let _ = writeln!(
            s,
            "    float* const maxima = reinterpret_cast<float*>(qdsl_smem + {offset}); // [tile parity][A, B]\n\
             \x20   if (threadIdx.x < 4) maxima[threadIdx.x] = 0.0f;"
        );
    }
    let my_tiles =
        "    const long my_tiles = BID < k_tiles ? (k_tiles - 1 - BID) / GDIM + 1 : 0;\n"
            .replace("BID", bid)
            .replace("GDIM", gdim);
    if simt {
        super::simt::inner_setup(&mut s, staged_bytes, &my_tiles);
    } else {
        s.push_str(
            "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;\n",
        );
        s.push_str(&my_tiles);
        let c_regs = if dmma { 2 } else { 4 };
        let _ = writeln!(
            s,
            "    double sum[TPW][{c_regs}];\n\
         \x20   #pragma unroll\n\
         \x20   for (int p = 0; p < TPW; p++) for (int e = 0; e < {c_regs}; e++) sum[p][e] = 0.0;"
        );
    }
    let stage_loop = match spec.staging {
        Staging::CpAsync => {
            "    for (int st = 0; st < STAGES - 1; st++) {\n\
             \x20       if (st < my_tiles) qdsl_stage(staged + st * ROWS * SROW, a, b, lda, ldb, BID + (long)st * GDIM);\n\
             \x20       asm volatile(\"cp.async.commit_group;\");\n\
             \x20   }\n\
             \x20   for (long it = 0; it < my_tiles; it++) {\n\
             \x20       asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(STAGES - 2));\n\
             \x20       __syncthreads();\n\
             \x20       {\n\
             \x20           const long nx = it + STAGES - 1;\n\
             \x20           if (nx < my_tiles) qdsl_stage(staged + (nx % STAGES) * ROWS * SROW, a, b, lda, ldb, BID + nx * GDIM);\n\
             \x20           asm volatile(\"cp.async.commit_group;\");\n\
             \x20       }\n"
        }
        Staging::Direct => {
            "    for (long it = 0; it < my_tiles; it++) {\n\
             \x20       __syncthreads(); // every warp is done with the previous tile\n\
             \x20       qdsl_stage(staged, a, b, lda, ldb, BID + it * GDIM);\n\
             \x20       __syncthreads();\n"
        }
    };
    s.push_str(&stage_loop.replace("BID", bid).replace("GDIM", gdim));
    let _ = writeln!(
        s,
        "        const {input}* const tile = staged + (it % STAGES) * ROWS * SROW;"
    );
    if simt {
        super::simt::inner_step(&mut s, p);
    } else {
        if scaled {
            s.push_str(
            "        // The block's max |a| and max |b| of this tile, then the power-of-two scales.\n\
             \x20       float mxa = 0.0f, mxb = 0.0f;\n\
             \x20       for (int e = threadIdx.x; e < ROWS * TILE_K; e += THREADS) {\n\
             \x20           const int r = e / TILE_K, q = e % TILE_K;\n\
             \x20           const float x = fabsf((float)tile[r * SROW + q]);\n\
             \x20           if (r < M) mxa = fmaxf(mxa, x); else mxb = fmaxf(mxb, x);\n\
             \x20       }\n\
             \x20       #pragma unroll\n\
             \x20       for (int o = 16; o > 0; o >>= 1) { mxa = fmaxf(mxa, __shfl_xor_sync(0xffffffffu, mxa, o)); mxb = fmaxf(mxb, __shfl_xor_sync(0xffffffffu, mxb, o)); }\n\
             \x20       float* const mx = maxima + 2 * (it & 1);\n\
             \x20       if (lane == 0) { atomicMax(reinterpret_cast<int*>(mx), __float_as_int(mxa)); atomicMax(reinterpret_cast<int*>(mx + 1), __float_as_int(mxb)); }\n\
             \x20       __syncthreads();\n\
             \x20       const float sa = qdsl_block_scale(mx[0]), sb = qdsl_block_scale(mx[1]);\n\
             \x20       if (threadIdx.x < 2) maxima[2 * ((it + 1) & 1) + threadIdx.x] = 0.0f; // the other parity's, read by all before this tile's barrier\n\
             \x20       const double unscale = 1.0 / ((double)sa * (double)sb);\n",
        );
        } else if !dmma {
            s.push_str(
                "        const float sa = 1.0f, sb = 1.0f;\n        const double unscale = 1.0;\n",
            );
        }
        if ldm {
            s.push_str(
            "        // The tile rounded (and split) into 16-bit rows, two values per thread step.\n\
             \x20       for (int e = 2 * threadIdx.x; e < ROWS * TILE_K; e += 2 * THREADS) {\n\
             \x20           const int r = e / TILE_K, q = e % TILE_K;\n\
             \x20           const float sc = r < M ? sa : sb;\n\
             \x20           const float x0 = (float)tile[r * SROW + q] * sc, x1 = (float)tile[r * SROW + q + 1] * sc;\n",
        );
            let store = |s: &mut String, row: &str, x0: &str, x1: &str| {
                if split {
                    let _ = writeln!(
                    s,
                    "            {{ unsigned hi, lo; qdsl_split({x0}, {x1}, hi, lo);\n\
                     \x20             *reinterpret_cast<unsigned*>(hi16 + ({row}) * RROW + q) = hi;\n\
                     \x20             *reinterpret_cast<unsigned*>(lo16 + ({row}) * RROW + q) = lo; }}"
                );
                } else {
                    let _ = writeln!(
                    s,
                    "            *reinterpret_cast<unsigned*>(hi16 + ({row}) * RROW + q) = qdsl_pack({x0}, {x1});"
                );
                }
            };
            store(&mut s, "r", "x0", "x1");
            if complex {
                s.push_str("            if (r >= M) { // the rotated row b' = (im, -re)\n");
                store(&mut s, "r + N", "x1", "-x0");
                s.push_str("            }\n");
            }
            s.push_str("        }\n        __syncthreads();\n");
        }
        // The warp's instruction tiles.
        if !dmma {
            s.push_str("        float acc[TPW][4];\n        #pragma unroll\n        for (int p = 0; p < TPW; p++) for (int e = 0; e < 4; e++) acc[p][e] = 0.0f;\n");
        }
        let _ = writeln!(
        s,
        "        #pragma unroll\n\
         \x20       for (int kk = 0; kk < TILE_K; kk += {ik}) {{\n\
         \x20           #pragma unroll\n\
         \x20           for (int p = 0; p < TPW; p++) {{\n\
         \x20               const int q = warp + WARPS * p, tm = q / TILES_N, tn = q % TILES_N;\n\
         \x20               const {input}* const ar = tile + (tm * {im}) * SROW + kk;\n\
         \x20               const bool rot = {rot};\n\
         \x20               const {input}* const br = tile + (M + tn * {inn} - (rot ? N : 0)) * SROW + kk;",
        rot = if complex { format!("tn * {inn} >= N") } else { "false".into() }
    );
        let mma = |a: &str, b: &str, d: &str| {
            print_op(&MmaOp::Sync {
                instruction: i,
                a: a.into(),
                b: b.into(),
                d: d.into(),
            })
            .join("\n")
        };
        let ind = "                ";
        let acc = if dmma { "sum[p]" } else { "acc[p]" };
        match (i.operand, ldm) {
            (Operand::F32, _) => unreachable!("a SIMT tile's step is printed by simt::inner_step"),
            (Operand::F64, _) => {
                let _ = writeln!(
                    s,
                    "{ind}const double fa[1] = {{ (double)ar[g * SROW + t] }};\n\
                 {ind}const double fb[1] = {{ qdsl_b<double>(br + g * SROW, t, rot) }};\n\
                 {ind}{}",
                    mma("fa", "fb", acc)
                );
            }
            (Operand::Tf32, _) => {
                let _ = writeln!(
                s,
                "{ind}const float xa[4] = {{ (float)ar[g * SROW + t] * sa, (float)ar[(g + 8) * SROW + t] * sa, (float)ar[g * SROW + t + 4] * sa, (float)ar[(g + 8) * SROW + t + 4] * sa }};\n\
                 {ind}const float xb[2] = {{ qdsl_b<float>(br + g * SROW, t, rot) * sb, qdsl_b<float>(br + g * SROW, t + 4, rot) * sb }};"
            );
                if split {
                    let _ = writeln!(
                        s,
                        "{ind}unsigned ah[4], al[4], bh[2], bl[2];\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 4; e++) qdsl_split(xa[e], ah[e], al[e]);\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 2; e++) qdsl_split(xb[e], bh[e], bl[e]);\n\
                     {ind}{}\n{ind}{}\n{ind}{}",
                        mma("ah", "bh", acc),
                        mma("ah", "bl", acc),
                        mma("al", "bh", acc)
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "{ind}unsigned ah[4], bh[2];\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 4; e++) ah[e] = qdsl_tf32(xa[e]);\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 2; e++) bh[e] = qdsl_tf32(xb[e]);\n\
                     {ind}{}",
                        mma("ah", "bh", acc)
                    );
                }
            }
            (Operand::F16 | Operand::Bf16, false) => {
                // a0: (g, 2t..), a1: (g + 8, 2t..), a2: (g, 2t + 8..), a3: (g + 8, 2t + 8..);
                // b0: (k = 2t.., n = g), b1: (k = 2t + 8.., n = g).
                let pair = |row: &str, col: &str, base: &str, sc: &str| {
                    if base == "br" {
                        format!(
                        "qdsl_b<float>(br + ({row}) * SROW, {col}, rot) * {sc}, qdsl_b<float>(br + ({row}) * SROW, {col} + 1, rot) * {sc}"
                    )
                    } else {
                        format!(
                        "(float){base}[({row}) * SROW + {col}] * {sc}, (float){base}[({row}) * SROW + {col} + 1] * {sc}"
                    )
                    }
                };
                let a_pairs = [
                    pair("g", "2 * t", "ar", "sa"),
                    pair("g + 8", "2 * t", "ar", "sa"),
                    pair("g", "2 * t + 8", "ar", "sa"),
                    pair("g + 8", "2 * t + 8", "ar", "sa"),
                ];
                let b_pairs = [
                    pair("g", "2 * t", "br", "sb"),
                    pair("g", "2 * t + 8", "br", "sb"),
                ];
                let _ = writeln!(s, "{ind}unsigned ah[4], bh[2];");
                if split {
                    let _ = writeln!(s, "{ind}unsigned al[4], bl[2];");
                    for (k, pr) in a_pairs.iter().enumerate() {
                        let _ = writeln!(s, "{ind}qdsl_split({pr}, ah[{k}], al[{k}]);");
                    }
                    for (k, pr) in b_pairs.iter().enumerate() {
                        let _ = writeln!(s, "{ind}qdsl_split({pr}, bh[{k}], bl[{k}]);");
                    }
                    let _ = writeln!(
                        s,
                        "{ind}{}\n{ind}{}\n{ind}{}",
                        mma("ah", "bh", acc),
                        mma("ah", "bl", acc),
                        mma("al", "bh", acc)
                    );
                } else {
                    for (k, pr) in a_pairs.iter().enumerate() {
                        let _ = writeln!(s, "{ind}ah[{k}] = qdsl_pack({pr});");
                    }
                    for (k, pr) in b_pairs.iter().enumerate() {
                        let _ = writeln!(s, "{ind}bh[{k}] = qdsl_pack({pr});");
                    }
                    let _ = writeln!(s, "{ind}{}", mma("ah", "bh", acc));
                }
            }
            (Operand::F16 | Operand::Bf16, true) => {
                let load = |dest: &str, base: &str, count: usize, row: &str| {
                    print_op(&MmaOp::LoadMatrix {
                        dest: dest.into(),
                        count,
                        addr: format!("{base} + {row}"),
                    })
                    .join("\n")
                };
                let a_row = "(tm * 16 + (lane & 15)) * RROW + kk + (lane >> 4) * 8";
                let b_row = "(M + tn * 8 + (lane & 7)) * RROW + kk + ((lane >> 3) & 1) * 8";
                let _ = writeln!(
                s,
                "{ind}(void)ar; (void)br; (void)rot;\n{ind}unsigned ah[4], bh[2];\n{ind}{}\n{ind}{}",
                load("ah", "hi16", 4, a_row),
                load("bh", "hi16", 2, b_row)
            );
                if split {
                    let _ = writeln!(
                        s,
                        "{ind}unsigned al[4], bl[2];\n{ind}{}\n{ind}{}\n{ind}{}\n{ind}{}\n{ind}{}",
                        load("al", "lo16", 4, a_row),
                        load("bl", "lo16", 2, b_row),
                        mma("ah", "bh", acc),
                        mma("ah", "bl", acc),
                        mma("al", "bh", acc)
                    );
                } else {
                    let _ = writeln!(s, "{ind}{}", mma("ah", "bh", acc));
                }
            }
        }
        s.push_str("            }\n        }\n");
        if !dmma {
            s.push_str(
            "        // This tile's f32 sums, unscaled, into the f64 totals.\n\
             \x20       #pragma unroll\n\
             \x20       for (int p = 0; p < TPW; p++) for (int e = 0; e < 4; e++) sum[p][e] += (double)acc[p][e] * unscale;\n",
        );
        }
    }
    s.push_str("    }\n");
    if spec.staging == Staging::CpAsync {
        s.push_str("    asm volatile(\"cp.async.wait_group 0;\");\n");
    }
    if simt {
        super::simt::inner_partial(&mut s);
    } else {
        // The block's partial record.
        let _ = writeln!(
            s,
            "    double* const out = partial + (long)blockIdx.x * (M * NR);\n\
         \x20   #pragma unroll\n\
         \x20   for (int p = 0; p < TPW; p++) {{\n\
         \x20       const int q = warp + WARPS * p, tm = q / TILES_N, tn = q % TILES_N;\n\
         \x20       double* const o = out + (tm * {im} + g) * NR + tn * {inn} + 2 * t;\n\
         \x20       o[0] = sum[p][0];\n\
         \x20       o[1] = sum[p][1];"
        );
        if !dmma {
            s.push_str("        o[8 * NR] = sum[p][2];\n        o[8 * NR + 1] = sum[p][3];\n");
        }
        s.push_str("    }\n}\n");
    }
    if batched {
        let _ = writeln!(
            s,
            "// c[batch][i][j] = (Re, Im) of conj(a_i)·b_j of each product: its blocks' partials of\n\
             // columns j and N + j added in block order (the same sum for any order the blocks ran in).\n\
             extern \"C\" __global__ void {}(const double* __restrict__ partial, double* __restrict__ c, const int blocks, const int batches)\n{{\n\
             \x20   const long e = blockIdx.x * (long)blockDim.x + threadIdx.x;\n\
             \x20   if (e >= (long)batches * (M * N)) return;\n\
             \x20   const long batch = e / (M * N);\n\
             \x20   const int i = (int)(e % (M * N)) / N, j = (int)(e % (M * N)) % N;\n\
             \x20   double re = 0.0, im = 0.0;\n\
             \x20   for (int b = 0; b < blocks; b++) {{\n\
             \x20       const double* const r = partial + (batch * blocks + b) * (M * NR) + i * NR;\n\
             \x20       re += r[j];\n\
             \x20       im += r[N + j];\n\
             \x20   }}\n\
             \x20   c[2 * e] = re;\n\
             \x20   c[2 * e + 1] = im;\n}}",
            p.reduce_name()
        );
    } else if complex {
        let _ = writeln!(
            s,
            "// c[i][j] = (Re, Im) of conj(a_i)·b_j: the blocks' partials of columns j and N + j\n\
             // added in block order (the same sum for any order the blocks ran in).\n\
             extern \"C\" __global__ void {}(const double* __restrict__ partial, double* __restrict__ c, const int blocks)\n{{\n\
             \x20   const int e = blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   if (e >= M * N) return;\n\
             \x20   const int i = e / N, j = e % N;\n\
             \x20   double re = 0.0, im = 0.0;\n\
             \x20   for (int b = 0; b < blocks; b++) {{\n\
             \x20       const double* const r = partial + (long)b * (M * NR) + i * NR;\n\
             \x20       re += r[j];\n\
             \x20       im += r[N + j];\n\
             \x20   }}\n\
             \x20   c[2 * e] = re;\n\
             \x20   c[2 * e + 1] = im;\n}}",
            p.reduce_name()
        );
    } else {
        let _ = writeln!(
            s,
            "// c[e] = the blocks' partials of entry e added in block order (the same sum for\n\
             // any order the blocks ran in).\n\
             extern \"C\" __global__ void {}(const double* __restrict__ partial, double* __restrict__ c, const int blocks)\n{{\n\
             \x20   const int e = blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   if (e >= M * NR) return;\n\
             \x20   double s = 0.0;\n\
             \x20   for (int b = 0; b < blocks; b++) s += partial[(long)b * (M * NR) + e];\n\
             \x20   c[e] = s;\n}}",
            p.reduce_name()
        );
    }
    if scaled {
        // Defined before use: move the helper to the top by prepending.
        let at = s.find("// k-tile `tile`").unwrap_or(0);
        s.insert_str(at, BLOCK_SCALE_HELPER);
    }
    s
}
