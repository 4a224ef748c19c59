//! The SIMT mode (`mma: simt(f32 -> f32)`): the same problems as the tensor-core tiles
//! with plain f32 FMA (`fmaf`) on the CUDA cores, f32 operands and f32 accumulation — its
//! plan (the thread tiles), the inner-product tile's step and partial record (printed
//! into [`super::cuda::source`], which stages the k-tiles and reduces the partials as
//! for every mode) and the block axpy's kernel.
//!
//! Inner products (`complex_inner`, `inner`, `batched_complex_inner`): after a k-tile is
//! staged (the spec's `cp_async` ring or plain copies), the block rounds it to f32 into
//! two k-major arrays, `at[k][i]` = a_i(k) and `bt[k][j]` = b_j(k) (complex vectors: also
//! `bt[k][N + j]` = b'_j(k), the rotation (im, −re)), so that a thread's operands at one k
//! are float4s. Thread (ti, tj, g) owns a TM × TN register tile of the m × n' output —
//! rows ti·4 + r·(QM·4) + 0..3 for r < TM/4, columns tj·4 + c·(QN·4) + 0..3 for c < TN/4
//! (a warp's float4 loads of B are then consecutive 16-byte pieces) — and sums values
//! g·KG .. (g+1)·KG of every k-tile (KG = tile_k / groups, [`super::SimtTile`]):
//!
//! ```text
//! acc_rc = fmaf(a_i(k), b_j(k), acc_rc)   k = g·KG, …, (g+1)·KG − 1   (f32, from 0)
//! sum_rc += (double) acc_rc               per k-tile                   (f64)
//! partial[block][i][j] = Σ_g sum_rc(g)    groups in order, at the end  (f64)
//! ```
//!
//! and the reduce kernel adds the blocks' records in order. The thread tile is the
//! first of 4 × 8, 8 × 4 and 4 × 4 (at most 32 accumulators: 32 f32 and 32 f64
//! registers) whose QM · QN tiles are at least a warp and divide the block's threads
//! (groups = threads / (QM · QN)) with KG ≥ 8 (the chain long enough to pay for the
//! f64 adds); the kernel asks for two blocks per SM (`__launch_bounds__`: ≤ 128
//! registers).
//!
//! Block axpy (`complex_axpy`): B of A (2m × 2n real) rounded to f32 k-major in shared
//! memory once per block; a block step takes warps · tile_k components, thread (qr, qc)
//! owns components r0 + qr + s·QR (s < TR) and the 8 columns qc·8 .. qc·8 + 7 (Re, Im of
//! y_{4qc} .. y_{4qc+3}); X is read from global memory (f32, coalesced over qr), the K =
//! 2m products of an output summed by an `fmaf` chain in k order, then y ← y + c in the
//! vectors' precision.
//!
//! The CPU path ([`super::cpu`], [`super::axpy::cpu`]) sums in exactly these orders
//! (`f32::mul_add`), so it differs from the kernel only in the order of the f64 sums of
//! the blocks (inner products) and not at all for the block axpy.

use super::plan::{kernel_name, MmaPlan, MmaVariant, SimtTile};
use super::spec::{Input, MmaSpec};
use crate::dsl::DslError;
use std::fmt::Write;

/// The most dynamic shared memory of a block (sm_90: 227 KiB with the opt-in).
pub const MAX_SHARED: usize = 232_448;

/// The thread tiles the plan tries, largest first: (rows, columns).
const TILES: [(usize, usize); 3] = [(4, 8), (8, 4), (4, 4)];

/// Components of a block-axpy thread's tile's columns: 8 (4 complex y_j).
const AXPY_COLS: usize = 8;

/// The plan of a SIMT variant ([`super::plan::plan`] has checked the knob values).
pub fn plan(spec: &MmaSpec, v: &MmaVariant) -> Result<MmaPlan, DslError> {
    let unsupported = |knob, reason: String| DslError::UnsupportedVariant {
        kernel: spec.name.clone(),
        knob,
        reason,
    };
    let threads = 32 * v.warps;
    let (tiles, simt) = if spec.problem.is_axpy() {
        let qc = 2 * v.n / AXPY_COLS;
        let step = v.warps * v.tile_k;
        if !threads.is_multiple_of(qc) || !step.is_multiple_of(threads / qc) {
            return Err(unsupported(
                "warps",
                format!(
                    "{qc} column groups of {AXPY_COLS} do not divide {threads} threads into lanes \
                     taking whole components of {step} per step"
                ),
            ));
        }
        let qr = threads / qc;
        let tr = step / qr;
        if tr > 4 {
            return Err(unsupported(
                "tile_k",
                format!(
                    "{} components per warp and step give each thread {tr} components × \
                     {AXPY_COLS} columns: more than 32 accumulators",
                    v.tile_k
                ),
            ));
        }
        (
            (qr, qc),
            SimtTile {
                rows: tr,
                cols: AXPY_COLS,
                groups: 1,
            },
        )
    } else {
        let nr = spec.problem.real_n(v.n);
        let fits = |&(tm, tn): &(usize, usize)| -> Option<((usize, usize), SimtTile)> {
            if !v.m.is_multiple_of(tm) || !nr.is_multiple_of(tn) {
                return None;
            }
            let q = (v.m / tm) * (nr / tn);
            if q < 32 || !threads.is_multiple_of(q) {
                return None;
            }
            let groups = threads / q;
            let whole = v.tile_k.is_multiple_of(groups) && v.tile_k / groups >= 8;
            whole.then_some((
                (v.m / tm, nr / tn),
                SimtTile {
                    rows: tm,
                    cols: tn,
                    groups,
                },
            ))
        };
        let Some(best) = TILES.iter().find_map(fits) else {
            return Err(unsupported(
                "warps",
                format!(
                    "the {} × {nr} output does not divide into thread tiles of 4 × 8, 8 × 4 or \
                     4 × 4 (at most 32 accumulators per thread, at least a warp of tiles) \
                     among {threads} threads with at least 8 values of tile_k {} per thread",
                    v.m, v.tile_k
                ),
            ));
        };
        best
    };
    let p = MmaPlan {
        spec: spec.clone(),
        variant: *v,
        name: kernel_name(spec, v),
        tiles,
        tiles_per_warp: 32,
        simt: Some(simt),
    };
    if p.shared_bytes() > MAX_SHARED {
        return Err(unsupported(
            "stages",
            format!(
                "{} bytes of shared memory (the staged ring and the f32 k-major tile) are \
                 beyond a block's {MAX_SHARED}",
                p.shared_bytes()
            ),
        ));
    }
    Ok(p)
}

/// Bytes of the f32 k-major tile of an inner-product plan: tile_k × (m + n') floats.
pub fn transposed_bytes(p: &MmaPlan) -> usize {
    p.variant.tile_k * (p.variant.m + p.real_n()) * 4
}

/// Bytes of a block axpy's f32 B: K × 2n floats.
pub fn axpy_shared_bytes(p: &MmaPlan) -> usize {
    2 * p.variant.m * 2 * p.variant.n * 4
}

/// The thread groups splitting a k-tile for a spec's variant (1 where it does not plan:
/// the CPU path of a spec the kernel does not take).
pub fn groups(spec: &MmaSpec, v: &MmaVariant) -> usize {
    plan(spec, v)
        .ok()
        .and_then(|p| p.simt)
        .map_or(1, |t| t.groups)
}

fn tile(p: &MmaPlan) -> SimtTile {
    p.simt.expect("a SIMT plan")
}

/// The constants of an inner-product tile (appended to the tensor-core ones).
pub fn inner_consts(p: &MmaPlan) -> Vec<(&'static str, usize)> {
    let t = tile(p);
    vec![
        ("TM", t.rows),
        ("TN", t.cols),
        ("QM", p.tiles.0),
        ("QN", p.tiles.1),
        ("GROUPS", t.groups),
        ("KG", t.chunk(p.variant.tile_k)),
    ]
}

/// The shared arrays past the staged ring, the thread's place and its f64 totals.
pub fn inner_setup(s: &mut String, staged_bytes: usize, my_tiles: &str) {
    let _ = writeln!(
        s,
        "    // The staged tile as f32, k-major: at[k * M + i] = a_i(k), bt[k * NR + j] = b_j(k)\n\
         \x20   // (complex vectors: bt[k * NR + N + j] = b'_j(k), the rotation (im, -re)).\n\
         \x20   float* const at = reinterpret_cast<float*>(qdsl_smem + {staged_bytes});\n\
         \x20   float* const bt = at + TILE_K * M;\n\
         \x20   // Thread (ti, tj, grp): rows ti * 4 + r * (QM * 4) + 0..3 (r < TM / 4), columns\n\
         \x20   // tj * 4 + c * (QN * 4) + 0..3 (c < TN / 4), values grp * KG .. (grp + 1) * KG of each k-tile.\n\
         \x20   const int tid = threadIdx.x, tj = tid % QN, ti = (tid / QN) % QM, grp = tid / (QM * QN);\n\
         {my_tiles}\
         \x20   double sum[TM][TN];\n\
         \x20   #pragma unroll\n\
         \x20   for (int r = 0; r < TM; r++) for (int c = 0; c < TN; c++) sum[r][c] = 0.0;"
    );
}

/// One k-tile of an inner-product tile: the staged tile `tile` rounded and transposed
/// into at, bt, then the thread's FMA chain over its KG values, added to the f64 totals.
pub fn inner_step(s: &mut String, p: &MmaPlan) {
    // Four values of a staged row: one 16-byte load (f32), two (f64); rows are 16-byte
    // aligned and q a multiple of 4.
    let load = match p.variant.input {
        Input::F32 => {
            "const float4 x = *reinterpret_cast<const float4*>(tile + r * SROW + q);\n\
             \x20           const float x0 = x.x, x1 = x.y, x2 = x.z, x3 = x.w;"
        }
        Input::F64 => {
            "const double2 lo = *reinterpret_cast<const double2*>(tile + r * SROW + q), hi = *reinterpret_cast<const double2*>(tile + r * SROW + q + 2);\n\
             \x20           const float x0 = (float)lo.x, x1 = (float)lo.y, x2 = (float)hi.x, x3 = (float)hi.y;"
        }
    };
    let _ = writeln!(
        s,
        "        // The tile as f32, k-major; four values of one row per thread step (consecutive\n\
         \x20       // threads take consecutive rows: the shared stores are consecutive words).\n\
         \x20       for (int e = threadIdx.x; e < ROWS * (TILE_K / 4); e += THREADS) {{\n\
         \x20           const int r = e % ROWS, q = (e / ROWS) * 4;\n\
         \x20           {load}\n\
         \x20           const int ld = r < M ? M : NR;\n\
         \x20           float* const dst = r < M ? at + q * M + r : bt + q * NR + (r - M);\n\
         \x20           dst[0] = x0; dst[ld] = x1; dst[2 * ld] = x2; dst[3 * ld] = x3;"
    );
    if p.spec.problem.is_complex() {
        s.push_str(
            "            if (r >= M) { // b' = (im, -re): b'(q) = b(q + 1), b'(q + 1) = -b(q), …\n\
             \x20               dst[N] = x1; dst[ld + N] = -x0; dst[2 * ld + N] = x3; dst[3 * ld + N] = -x2;\n\
             \x20           }\n",
        );
    }
    s.push_str(
        "        }\n\
         \x20       __syncthreads();\n\
         \x20       // The thread's f32 FMA chains over its KG values of k, from zero.\n\
         \x20       float acc[TM][TN];\n\
         \x20       #pragma unroll\n\
         \x20       for (int r = 0; r < TM; r++) for (int c = 0; c < TN; c++) acc[r][c] = 0.0f;\n\
         \x20       #pragma unroll 8\n\
         \x20       for (int kk = 0; kk < KG; kk++) {\n\
         \x20           const int k = grp * KG + kk;\n\
         \x20           float fa[TM], fb[TN];\n\
         \x20           #pragma unroll\n\
         \x20           for (int r = 0; r < TM / 4; r++) {\n\
         \x20               const float4 v = *reinterpret_cast<const float4*>(at + k * M + r * (QM * 4) + ti * 4);\n\
         \x20               fa[4 * r] = v.x; fa[4 * r + 1] = v.y; fa[4 * r + 2] = v.z; fa[4 * r + 3] = v.w;\n\
         \x20           }\n\
         \x20           #pragma unroll\n\
         \x20           for (int c = 0; c < TN / 4; c++) {\n\
         \x20               const float4 v = *reinterpret_cast<const float4*>(bt + k * NR + c * (QN * 4) + tj * 4);\n\
         \x20               fb[4 * c] = v.x; fb[4 * c + 1] = v.y; fb[4 * c + 2] = v.z; fb[4 * c + 3] = v.w;\n\
         \x20           }\n\
         \x20           #pragma unroll\n\
         \x20           for (int r = 0; r < TM; r++) {\n\
         \x20               #pragma unroll\n\
         \x20               for (int c = 0; c < TN; c++) acc[r][c] = fmaf(fa[r], fb[c], acc[r][c]);\n\
         \x20           }\n\
         \x20       }\n\
         \x20       // This tile's f32 sums into the f64 totals.\n\
         \x20       #pragma unroll\n\
         \x20       for (int r = 0; r < TM; r++) for (int c = 0; c < TN; c++) sum[r][c] += (double)acc[r][c];\n",
    );
}

/// The block's partial record: group 0's totals stored, then each further group's added
/// in group order (a barrier between groups: the block's global writes are visible to
/// it after `__syncthreads`).
pub fn inner_partial(s: &mut String) {
    s.push_str(
        "    // The block's partial record: the thread groups' totals added in group order.\n\
         \x20   double* const out = partial + (long)blockIdx.x * (M * NR);\n\
         \x20   for (int gg = 0; gg < GROUPS; gg++) {\n\
         \x20       if (gg > 0) __syncthreads(); // group gg - 1 has written\n\
         \x20       if (grp != gg) continue;\n\
         \x20       #pragma unroll\n\
         \x20       for (int r = 0; r < TM; r++) {\n\
         \x20           #pragma unroll\n\
         \x20           for (int c = 0; c < TN; c++) {\n\
         \x20               double* const o = out + ((r >> 2) * (QM * 4) + ti * 4 + (r & 3)) * NR + (c >> 2) * (QN * 4) + tj * 4 + (c & 3);\n\
         \x20               *o = gg == 0 ? sum[r][c] : *o + sum[r][c];\n\
         \x20           }\n\
         \x20       }\n\
         \x20   }\n\
         }\n",
    );
}

/// The CUDA source of a SIMT block-axpy plan (one kernel, the interface of
/// [`super::axpy::params`]).
pub fn axpy_source(p: &MmaPlan) -> String {
    let v = &p.variant;
    let t = tile(p);
    let input = v.input.c_type();
    let mut s = String::new();
    super::axpy::header(&mut s, p);
    let consts = [
        ("M", v.m),
        ("N", v.n),
        ("K", 2 * v.m),
        ("NR", 2 * v.n),
        ("WARPS", v.warps),
        ("THREADS", p.threads()),
        ("STEP", v.warps * v.tile_k),
        ("TR", t.rows),
        ("TC", t.cols),
        ("QR", p.tiles.0),
        ("QC", p.tiles.1),
    ];
    s.push_str("namespace {\n");
    for (name, value) in consts {
        let _ = writeln!(s, "constexpr int {name} = {value};");
    }
    s.push_str("}\n");
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void {name}(const {input}* __restrict__ x, {input}* __restrict__ y, const double* __restrict__ coef, const long len, const long ldx, const long ldy)\n{{\n\
         \x20   extern __shared__ __align__(16) unsigned char qdsl_smem[];\n\
         \x20   // B[k][c] of A rounded to f32, k-major: bt[k * NR + c] (column c: Re (c even) or Im of\n\
         \x20   // y_(c/2)'s update; row k: Re (k even) or Im of x_(k/2)).\n\
         \x20   float* const bt = reinterpret_cast<float*>(qdsl_smem);\n\
         \x20   for (int e = threadIdx.x; e < K * NR; e += THREADS) {{\n\
         \x20       const int k = e / NR, c = e % NR, ii = k >> 1, jj = c >> 1;\n\
         \x20       const double ar = coef[2 * (ii * N + jj)], ai = coef[2 * (ii * N + jj) + 1];\n\
         \x20       bt[e] = (float)((k & 1) == 0 ? ((c & 1) == 0 ? ar : ai) : ((c & 1) == 0 ? -ai : ar));\n\
         \x20   }}\n\
         \x20   __syncthreads();\n\
         \x20   // Thread (qr, qc): components r0 + qr + s * QR (s < TR) of each step of STEP components,\n\
         \x20   // columns qc * TC .. qc * TC + TC - 1 (Re, Im of y_(qc * TC / 2) ..).\n\
         \x20   const int qr = threadIdx.x % QR, qc = threadIdx.x / QR;\n\
         \x20   for (long r0 = (long)blockIdx.x * STEP; r0 < len; r0 += (long)gridDim.x * STEP) {{\n\
         \x20       float acc[TR][TC];\n\
         \x20       #pragma unroll\n\
         \x20       for (int s = 0; s < TR; s++) for (int c = 0; c < TC; c++) acc[s][c] = 0.0f;\n\
         \x20       // The f32 FMA chain over k = 0 .. K - 1: rows 2i (Re x_i) and 2i + 1 (Im x_i) of B.\n\
         \x20       #pragma unroll 2\n\
         \x20       for (int i = 0; i < M; i++) {{\n\
         \x20           float xr[TR], xi[TR];\n\
         \x20           #pragma unroll\n\
         \x20           for (int s = 0; s < TR; s++) {{\n\
         \x20               const long row = r0 + qr + s * QR;\n\
         \x20               const {input}* const xp = x + (long)i * ldx + 2 * row;\n\
         \x20               xr[s] = row < len ? (float)xp[0] : 0.0f;\n\
         \x20               xi[s] = row < len ? (float)xp[1] : 0.0f;\n\
         \x20           }}\n\
         \x20           float fr[TC], fi[TC];\n\
         \x20           #pragma unroll\n\
         \x20           for (int c = 0; c < TC / 4; c++) {{\n\
         \x20               const float4 u = *reinterpret_cast<const float4*>(bt + (2 * i) * NR + qc * TC + 4 * c);\n\
         \x20               const float4 w = *reinterpret_cast<const float4*>(bt + (2 * i + 1) * NR + qc * TC + 4 * c);\n\
         \x20               fr[4 * c] = u.x; fr[4 * c + 1] = u.y; fr[4 * c + 2] = u.z; fr[4 * c + 3] = u.w;\n\
         \x20               fi[4 * c] = w.x; fi[4 * c + 1] = w.y; fi[4 * c + 2] = w.z; fi[4 * c + 3] = w.w;\n\
         \x20           }}\n\
         \x20           #pragma unroll\n\
         \x20           for (int s = 0; s < TR; s++) {{\n\
         \x20               #pragma unroll\n\
         \x20               for (int c = 0; c < TC; c++) {{\n\
         \x20                   acc[s][c] = fmaf(xr[s], fr[c], acc[s][c]);\n\
         \x20                   acc[s][c] = fmaf(xi[s], fi[c], acc[s][c]);\n\
         \x20               }}\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20       // y += the tile, in the vectors' precision.\n\
         \x20       #pragma unroll\n\
         \x20       for (int s = 0; s < TR; s++) {{\n\
         \x20           const long row = r0 + qr + s * QR;\n\
         \x20           if (row >= len) continue;\n\
         \x20           #pragma unroll\n\
         \x20           for (int jc = 0; jc < TC / 2; jc++) {{\n\
         \x20               {input}* const yj = y + (long)(qc * (TC / 2) + jc) * ldy + 2 * row;\n\
         \x20               yj[0] = yj[0] + ({input})acc[s][2 * jc];\n\
         \x20               yj[1] = yj[1] + ({input})acc[s][2 * jc + 1];\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20   }}\n\
         }}",
        name = p.name
    );
    s
}
