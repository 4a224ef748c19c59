//! The `complex_axpy` problem (block axpy, [`super::Problem::ComplexAxpy`]):
//! y_j(x) += Σ_i x_i(x) A_ij on tensor cores — its plan, its one kernel's CUDA and the CPU
//! path that emulates the kernel's rounding.
//!
//! Per component x the kernel multiplies the row X_x = (Re x_0(x), Im x_0(x), Re x_1(x), …)
//! (K = 2m) by the real 2m × 2n matrix B of A (columns 2j, 2j+1: Re, Im of y_j's update):
//! B is rounded (and split) into shared memory once per block, each warp takes `tile_k`
//! consecutive components per step (instruction tiles of its rows × all 2n columns), loads
//! its fragments of X straight from global memory (the pair (Re, Im) of x_i at a
//! component is contiguous), multiplies over K, and adds the tile to y: y ← y + c in the
//! vectors' precision. Warps take steps grid-stride over the components.

use super::cpu::{error_bound, read, split};
use super::cuda::print_op;
use super::plan::{kernel_name, MmaPlan, MmaVariant};
use super::spec::{Fragments, Input, MmaSpec, Operand, Split, Staging};
use crate::dsl::interface::{Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind};
use crate::dsl::kernel_ir::MmaOp;
use crate::dsl::DslError;
use std::fmt::Write;

/// Values of a staged B column beyond K (bank spread, alignment kept).
const B_PAD: usize = 8;

/// The most blocks of an axpy kernel (a grid-stride loop takes the rest).
pub const MAX_BLOCKS: u32 = 8192;

/// The plan of a block-axpy variant: `tile_k` components per warp and step, a multiple
/// of the instruction's m; K = 2m a multiple of the instruction's k; direct staging and
/// explicit fragments (X is read from global memory into fragments).
pub fn plan(
    spec: &MmaSpec,
    v: &MmaVariant,
    (im, inn, ik): (usize, usize, usize),
) -> Result<MmaPlan, DslError> {
    let unsupported = |knob, reason: String| DslError::UnsupportedVariant {
        kernel: spec.name.clone(),
        knob,
        reason,
    };
    if spec.staging != Staging::Direct || spec.fragments != Fragments::Explicit {
        return Err(unsupported(
            "staging",
            "a block axpy reads X into fragments from global memory: `staging: direct`, \
             explicit fragments"
                .into(),
        ));
    }
    if !v.tile_k.is_multiple_of(im) {
        return Err(unsupported(
            "tile_k",
            format!(
                "{} components per warp are not whole instruction tiles of {im}",
                v.tile_k
            ),
        ));
    }
    if !(2 * v.m).is_multiple_of(ik) {
        return Err(unsupported(
            "m",
            format!(
                "K = 2m = {} is not a multiple of the instruction's k ({ik})",
                2 * v.m
            ),
        ));
    }
    let tiles = (v.tile_k / im, 2 * v.n / inn);
    Ok(MmaPlan {
        spec: spec.clone(),
        variant: *v,
        name: kernel_name(spec, v),
        tiles,
        tiles_per_warp: tiles.0 * tiles.1,
        simt: None,
    })
}

/// Bytes of B in shared memory: 2n columns of K + [`B_PAD`] operand values (hi and lo
/// when split; f64 for DMMA, 32-bit for tf32, 16-bit for f16/bf16).
pub fn shared_bytes(p: &MmaPlan) -> usize {
    if p.simt.is_some() {
        return super::simt::axpy_shared_bytes(p);
    }
    let op = p.spec.instruction.operand;
    let bytes = match op {
        Operand::F64 => 8,
        Operand::Tf32 | Operand::F32 => 4,
        Operand::F16 | Operand::Bf16 => 2,
    };
    let copies = p.spec.split.mmas().min(2);
    copies * 2 * p.variant.n * (2 * p.variant.m + B_PAD) * bytes
}

/// The kernel's parameters: `x` (m vectors), `y` (n vectors, read and written), `coef`
/// (A, m × n complex f64, row-major), `len` (complex components of a vector), `ldx`,
/// `ldy` (reals from one vector to the next).
pub fn params(p: &MmaPlan) -> Vec<ParamDecl> {
    let e = match p.variant.input {
        Input::F32 => Elem::F32,
        Input::F64 => Elem::F64,
    };
    vec![
        ParamDecl::new("x", ParamKind::read(e)),
        ParamDecl::new("y", ParamKind::write(e)),
        ParamDecl::new("coef", ParamKind::read(Elem::F64)),
        ParamDecl::new("len", ParamKind::I64),
        ParamDecl::new("ldx", ParamKind::I64),
        ParamDecl::new("ldy", ParamKind::I64),
    ]
}

/// The program: the one kernel, a fixed block of 32 · warps threads, launched over
/// ⌈len / tile_k⌉ · 32 items (one warp per step), at most [`MAX_BLOCKS`] blocks.
pub fn program(p: &MmaPlan) -> KernelProgram {
    let threads = p.threads() as u32;
    let mut g = Geometry::linear()
        .with_fixed_block(threads)
        .with_max_grid_x(MAX_BLOCKS);
    g.shared_fixed = u32::try_from(shared_bytes(p)).unwrap_or(u32::MAX);
    KernelProgram {
        name: p.name.clone(),
        source: source(p),
        options: Vec::new(),
        kernels: vec![KernelInterface {
            name: p.name.clone(),
            params: params(p),
            geometry: g,
        }],
    }
}

/// The CUDA source of a block-axpy plan (SIMT: [`super::simt::axpy_source`]).
pub fn source(p: &MmaPlan) -> String {
    if p.simt.is_some() {
        return super::simt::axpy_source(p);
    }
    let v = &p.variant;
    let spec = &p.spec;
    let i = spec.instruction;
    let (im, inn, ik) = i.shape.mnk();
    let input = v.input.c_type();
    let split = spec.split == Split::Three;
    let op = i.operand;
    let mut s = String::new();
    header(&mut s, p);
    let consts = [
        ("M", v.m),
        ("N", v.n),
        ("K", 2 * v.m),
        ("NR", 2 * v.n),
        ("BROW", 2 * v.m + B_PAD),
        ("WARPS", v.warps),
        ("THREADS", p.threads()),
        ("ROWS_W", v.tile_k),
        ("RT", p.tiles.0),
        ("NT", p.tiles.1),
    ];
    s.push_str("namespace {\n");
    for (name, value) in consts {
        let _ = writeln!(s, "constexpr int {name} = {value};");
    }
    s.push_str("}\n");
    super::cuda::helpers(&mut s, i);
    let (b_ty, c_regs, acc_ty) = match op {
        Operand::F64 => ("double", 2, "double"),
        Operand::Tf32 | Operand::F32 => ("unsigned", 4, "float"),
        Operand::F16 | Operand::Bf16 => ("unsigned short", 4, "float"),
    };
    let _ = writeln!(
        s,
        "extern \"C\" __global__ void {}(const {input}* __restrict__ x, {input}* __restrict__ y, const double* __restrict__ coef, const long len, const long ldx, const long ldy)\n{{\n\
         \x20   extern __shared__ __align__(16) unsigned char qdsl_smem[];\n\
         \x20   {b_ty}* const bh = reinterpret_cast<{b_ty}*>(qdsl_smem);",
        p.name
    );
    if split {
        s.push_str("    auto* const bl = bh + NR * BROW;\n");
    }
    // B of A, rounded (and split) once per block.
    s.push_str(
        "    // B[k][c] of A (column c: Re (c even) or Im (c odd) of y_{c/2}; row k: Re (k even) or Im of x_{k/2}).\n\
         \x20   for (int e = threadIdx.x; e < NR * K; e += THREADS) {\n\
         \x20       const int c = e / K, k = e % K, ii = k >> 1, jj = c >> 1;\n\
         \x20       const double ar = coef[2 * (ii * N + jj)], ai = coef[2 * (ii * N + jj) + 1];\n\
         \x20       const double b = (k & 1) == 0 ? ((c & 1) == 0 ? ar : ai) : ((c & 1) == 0 ? -ai : ar);\n",
    );
    match (op, split) {
        (Operand::F64, _) => s.push_str("        bh[c * BROW + k] = b;\n"),
        (Operand::Tf32, true) => s.push_str(
            "        unsigned h, l; qdsl_split((float)b, h, l);\n        bh[c * BROW + k] = h; bl[c * BROW + k] = l;\n",
        ),
        (Operand::Tf32, false) => s.push_str("        bh[c * BROW + k] = qdsl_tf32((float)b);\n"),
        (_, true) => s.push_str(
            "        unsigned h, l; qdsl_split((float)b, 0.0f, h, l);\n        bh[c * BROW + k] = (unsigned short)(h & 0xffffu); bl[c * BROW + k] = (unsigned short)(l & 0xffffu);\n",
        ),
        (_, false) => s.push_str(
            "        bh[c * BROW + k] = (unsigned short)(qdsl_pack((float)b, 0.0f) & 0xffffu);\n",
        ),
    }
    s.push_str("    }\n    __syncthreads();\n");
    let _ = writeln!(
        s,
        "    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;\n\
         \x20   // Element (row, k) of X: Re (k even) or Im of x_(k/2) at component row (0 beyond len).\n\
         \x20   auto xv = [&](long row, int k) -> float {{ return row < len ? (float)x[(long)(k >> 1) * ldx + 2 * row + (k & 1)] : 0.0f; }};\n\
         \x20   auto xd = [&](long row, int k) -> double {{ return row < len ? (double)x[(long)(k >> 1) * ldx + 2 * row + (k & 1)] : 0.0; }};\n\
         \x20   (void)xv; (void)xd;\n\
         \x20   for (long r0 = ((long)blockIdx.x * WARPS + warp) * ROWS_W; r0 < len; r0 += (long)gridDim.x * WARPS * ROWS_W) {{\n\
         \x20       {acc_ty} acc[RT][NT][{c_regs}];\n\
         \x20       #pragma unroll\n\
         \x20       for (int rt = 0; rt < RT; rt++) for (int nt = 0; nt < NT; nt++) for (int e = 0; e < {c_regs}; e++) acc[rt][nt][e] = 0;\n\
         \x20       #pragma unroll 1\n\
         \x20       for (int kk = 0; kk < K; kk += {ik}) {{\n\
         \x20           #pragma unroll\n\
         \x20           for (int rt = 0; rt < RT; rt++) {{\n\
         \x20               const long row = r0 + rt * {im} + g;"
    );
    let ind = "                ";
    let mma = |a: &str, b: &str| {
        print_op(&MmaOp::Sync {
            instruction: i,
            a: a.into(),
            b: b.into(),
            d: "acc[rt][nt]".into(),
        })
        .join("\n")
    };
    // The A fragment of the warp's row tile, then per column tile B and the MMA(s).
    match op {
        Operand::F64 => {
            let _ = writeln!(
                s,
                "{ind}const double fa[1] = {{ xd(row, kk + t) }};\n\
                 {ind}#pragma unroll\n\
                 {ind}for (int nt = 0; nt < NT; nt++) {{\n\
                 {ind}    const double fb[1] = {{ bh[(nt * {inn} + g) * BROW + kk + t] }};\n\
                 {ind}    {}\n\
                 {ind}}}",
                mma("fa", "fb")
            );
        }
        Operand::F32 => unreachable!("a SIMT block axpy is printed by simt::axpy_source"),
        Operand::Tf32 => {
            let _ = writeln!(
                s,
                "{ind}const float xa[4] = {{ xv(row, kk + t), xv(row + 8, kk + t), xv(row, kk + t + 4), xv(row + 8, kk + t + 4) }};"
            );
            if split {
                let _ = writeln!(
                    s,
                    "{ind}unsigned ah[4], al[4];\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 4; e++) qdsl_split(xa[e], ah[e], al[e]);\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int nt = 0; nt < NT; nt++) {{\n\
                     {ind}    const int c = (nt * {inn} + g) * BROW + kk + t;\n\
                     {ind}    const unsigned bhf[2] = {{ bh[c], bh[c + 4] }}, blf[2] = {{ bl[c], bl[c + 4] }};\n\
                     {ind}    {}\n{ind}    {}\n{ind}    {}\n\
                     {ind}}}",
                    mma("ah", "bhf"),
                    mma("ah", "blf"),
                    mma("al", "bhf")
                );
            } else {
                let _ = writeln!(
                    s,
                    "{ind}unsigned ah[4];\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int e = 0; e < 4; e++) ah[e] = qdsl_tf32(xa[e]);\n\
                     {ind}#pragma unroll\n\
                     {ind}for (int nt = 0; nt < NT; nt++) {{\n\
                     {ind}    const int c = (nt * {inn} + g) * BROW + kk + t;\n\
                     {ind}    const unsigned bhf[2] = {{ bh[c], bh[c + 4] }};\n\
                     {ind}    {}\n\
                     {ind}}}",
                    mma("ah", "bhf")
                );
            }
        }
        Operand::F16 | Operand::Bf16 => {
            // a0: (g, 2t..), a1: (g + 8, 2t..), a2: (g, 2t + 8..), a3: (g + 8, 2t + 8..);
            // b0: (k = 2t.., n = g), b1: (k = 2t + 8.., n = g).
            let pairs = [
                ("row", "kk + 2 * t"),
                ("row + 8", "kk + 2 * t"),
                ("row", "kk + 2 * t + 8"),
                ("row + 8", "kk + 2 * t + 8"),
            ];
            let b_load = |arr: &str, name: &str| {
                format!(
                    "const unsigned {name}[2] = {{ *reinterpret_cast<const unsigned*>({arr} + c), *reinterpret_cast<const unsigned*>({arr} + c + 8) }};"
                )
            };
            if split {
                let _ = writeln!(s, "{ind}unsigned ah[4], al[4];");
                for (k, (r, c)) in pairs.iter().enumerate() {
                    let _ = writeln!(
                        s,
                        "{ind}qdsl_split(xv({r}, {c}), xv({r}, {c} + 1), ah[{k}], al[{k}]);"
                    );
                }
                let _ = writeln!(
                    s,
                    "{ind}#pragma unroll\n\
                     {ind}for (int nt = 0; nt < NT; nt++) {{\n\
                     {ind}    const int c = (nt * {inn} + g) * BROW + kk + 2 * t;\n\
                     {ind}    {}\n{ind}    {}\n\
                     {ind}    {}\n{ind}    {}\n{ind}    {}\n\
                     {ind}}}",
                    b_load("bh", "bhf"),
                    b_load("bl", "blf"),
                    mma("ah", "bhf"),
                    mma("ah", "blf"),
                    mma("al", "bhf")
                );
            } else {
                let _ = writeln!(s, "{ind}unsigned ah[4];");
                for (k, (r, c)) in pairs.iter().enumerate() {
                    let _ = writeln!(
                        s,
                        "{ind}ah[{k}] = qdsl_pack(xv({r}, {c}), xv({r}, {c} + 1));"
                    );
                }
                let _ = writeln!(
                    s,
                    "{ind}#pragma unroll\n\
                     {ind}for (int nt = 0; nt < NT; nt++) {{\n\
                     {ind}    const int c = (nt * {inn} + g) * BROW + kk + 2 * t;\n\
                     {ind}    {}\n\
                     {ind}    {}\n\
                     {ind}}}",
                    b_load("bh", "bhf"),
                    mma("ah", "bhf")
                );
            }
        }
    }
    s.push_str("            }\n        }\n");
    // y += the tile: c0, c1 at (g, 2t, 2t + 1) = (Re, Im) of y_(nt·4 + t); c2, c3 at g + 8.
    let halves: &[(&str, usize)] = if c_regs == 4 {
        &[("0", 0), ("8", 2)]
    } else {
        &[("0", 0)]
    };
    s.push_str(
        "        #pragma unroll\n        for (int rt = 0; rt < RT; rt++) {\n            #pragma unroll\n            for (int nt = 0; nt < NT; nt++) {\n",
    );
    let _ = writeln!(
        s,
        "                {input}* const yj = y + (long)(nt * {} + t) * ldy;",
        inn / 2
    );
    for (off, e) in halves {
        let _ = writeln!(
            s,
            "                {{ const long row = r0 + rt * {im} + g + {off};\n\
             \x20                 if (row < len) {{ yj[2 * row] = yj[2 * row] + ({input})acc[rt][nt][{e}]; yj[2 * row + 1] = yj[2 * row + 1] + ({input})acc[rt][nt][{}]; }} }}",
            e + 1
        );
    }
    s.push_str("            }\n        }\n    }\n}\n");
    s
}

/// y_j += Σ_i x_i A_ij on the host as the variant's kernel computes it: X's and A's
/// values read as the kernel reads them (X in the input precision; both rounded to f32
/// for 16-bit, tf32 and SIMT f32 operands), rounded (split) to the operand type, the K
/// products of a component summed in k order (f32; an f32 fused multiply-add chain for
/// SIMT, bit for bit the kernel's; an f64 one for DMMA), then added to y in the input
/// precision. `x`: m vectors of `len` complex values one
/// after another; `a`: m × n complex row-major; `y`: n vectors.
pub fn cpu(spec: &MmaSpec, v: &MmaVariant, x: &[f64], a: &[f64], y: &mut [f64], len: usize) {
    let (n, k) = (v.n, 2 * v.m);
    let op = spec.instruction.operand;
    // B[k][c] as in the kernel.
    let b = |kk: usize, c: usize| -> f64 {
        let (i, j) = (kk / 2, c / 2);
        let (ar, ai) = (a[2 * (i * n + j)], a[2 * (i * n + j) + 1]);
        match (kk % 2, c % 2) {
            (0, 0) => ar,
            (0, _) => ai,
            (_, 0) => -ai,
            _ => ar,
        }
    };
    let bs: Vec<(f32, f32)> = (0..k * 2 * n)
        .map(|e| split(op, spec.split, b(e % k, e / k) as f32))
        .collect();
    for row in 0..len {
        let xs: Vec<f64> = (0..k)
            .map(|kk| read(v.input, x[(kk / 2) * 2 * len + 2 * row + kk % 2]))
            .collect();
        for c in 0..2 * n {
            let update = if op == Operand::F64 {
                let mut acc = 0.0f64;
                for (kk, xv) in xs.iter().enumerate() {
                    acc = xv.mul_add(b(kk, c), acc);
                }
                acc
            } else if op == Operand::F32 {
                // SIMT: acc = fmaf(x_k, B_kc, acc) for k = 0 … K − 1.
                let mut acc = 0.0f32;
                for (kk, xv) in xs.iter().enumerate() {
                    acc = (*xv as f32).mul_add(bs[c * k + kk].0, acc);
                }
                f64::from(acc)
            } else {
                let mut acc = 0.0f32;
                for (kk, xv) in xs.iter().enumerate() {
                    let (ah, al) = split(op, spec.split, *xv as f32);
                    let (bh, bl) = bs[c * k + kk];
                    acc += ah * bh;
                    if spec.split == Split::Three {
                        acc += ah * bl;
                        acc += al * bh;
                    }
                }
                f64::from(acc)
            };
            let at = (c / 2) * 2 * len + 2 * row + c % 2;
            y[at] = match v.input {
                Input::F32 => f64::from(y[at] as f32 + update as f32),
                Input::F64 => y[at] + update,
            };
        }
    }
}

/// The bound of a block axpy: |ŷ_j(x) − y_j(x) − Σ_i x_i A_ij| ≤ ε Σ_k |X_xk| |B_kc| +
/// u |ŷ_j(x)| per real part, with ε the products' bound ([`error_bound`] of one tile of
/// depth K = 2m; f32 reading for the 16-bit, tf32 and SIMT f32 operands, which the
/// kernel rounds to f32 first: for SIMT 2u₃₂ + u₃₂² for the operands and γ_K u₃₂ for
/// the FMA chain of K = 2m terms) and u the unit roundoff of the vectors' precision (the
/// final add).
pub fn error_bound_axpy(spec: &MmaSpec, input: Input, m: usize) -> (f64, f64) {
    let read_as = if spec.instruction.operand == Operand::F64 {
        input
    } else {
        Input::F32
    };
    let eps = error_bound(spec, read_as, 2 * m, 2 * m);
    let u = match input {
        Input::F32 => 2f64.powi(-24),
        Input::F64 => 2f64.powi(-53),
    };
    (eps, u)
}

/// The first lines of a block-axpy source (tensor-core or SIMT): the tile header, the
/// problem, the mode and the variant.
pub(super) fn header(s: &mut String, p: &MmaPlan) {
    super::cuda::source_header(s, p);
    let _ = writeln!(
        s,
        "// problem: {}, mode: {}\n// variant: {}",
        p.spec.problem.name(),
        p.spec.mode(),
        p.variant.canonical()
    );
}
