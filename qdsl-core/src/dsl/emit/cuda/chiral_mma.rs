//! [`ChiralMma`] as CUDA: the tensor-core M5⁻¹ of a `fused5d!` chain on the block's
//! s-columns in shared memory (the IR node has the plan; [`crate::dsl::fused5d::mma`]
//! the equations and the host's same computation).

use super::Src;
use crate::dsl::kernel_ir::{ChiralMma, MmaOp};
use crate::dsl::mma::{Accumulator, Instruction, Shape};

/// Prints the stage body of `r` at indentation `d`.
pub(super) fn print(s: &mut Src, d: usize, r: &ChiralMma) {
    let (b, m, op) = (&r.buffer, &r.matrix, r.operand.name());
    let mma = crate::dsl::mma::cuda::print_op(&MmaOp::Sync {
        instruction: Instruction {
            shape: Shape::M16N8K16,
            operand: r.operand,
            accumulator: Accumulator::F32,
        },
        a: "af".into(),
        b: "bf".into(),
        d: "dv".into(),
    });
    let mut lines: Vec<(usize, String)> = vec![
        (0, format!("{{ // {}: {b} <- {m} {b} on the tensor cores (m16n8k16 {op}, f32 accumulation): per chirality Y = A B,", r.piece)),
        (0, "  // B the block's real components over s (Ls padded to 16), each column scaled by a power of two from its own max |value|, A by its max".into()),
        (1, "const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);".into()),
        (1, "const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;".into()),
        (1, "const int bx = blockDim.x, tiles = (12 * bx) / 8; // 8-column tiles per chirality (whole warps with Ls <= 16: bx even)".into()),
        (1, "unsigned a_frag[2][4]; // A_chi scaled and rounded: the A fragment, rows s, columns s'".into()),
        (1, "float a_unscale[2];".into()),
        (1, "#pragma unroll".into()),
        (1, "for (int chi = 0; chi < 2; chi++) {".into()),
        (2, format!("const real* const a = {m} + 2 * chi * LS * LS; // A_chi(s, s') = a[2 * (s * LS + s')] (real)")),
        (2, "float mx = 0.0f;".into()),
        (2, "for (int e = lane; e < LS * LS; e += 32) mx = fmaxf(mx, fabsf((float)a[2 * e]));".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));".into()),
        (2, "const float sa = qdsl_block_scale(mx);".into()),
        (2, "a_unscale[chi] = 1.0f / sa;".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int r = 0; r < 4; r++) { // register r: row g (+ 8 for odd r), columns 2t, 2t + 1 (+ 8 for r >= 2)".into()),
        (3, "const int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);".into()),
        (3, "const float x0 = row < LS && col < LS ? (float)a[2 * (row * LS + col)] * sa : 0.0f;".into()),
        (3, "const float x1 = row < LS && col + 1 < LS ? (float)a[2 * (row * LS + col + 1)] * sa : 0.0f;".into()),
        (3, "a_frag[chi][r] = qdsl_pack(x0, x1);".into()),
        (2, "}".into()),
        (1, "}".into()),
        (1, "for (int tile = warp; tile < 2 * tiles; tile += block_threads >> 5) { // warp-uniform: every lane at the shuffles".into()),
        (2, "const int chi = tile >= tiles ? 1 : 0, n0 = 8 * (tile - chi * tiles);".into()),
        (2, "// Column n of chirality chi: real 12 chi + n / bx of site n % bx, slice s at + bx * s. One division per tile".into()),
        (2, "// (warp-uniform); the tile's columns n0 + j, j < 8, carry past bx from there.".into()),
        (2, "const int r0 = n0 / bx, s0 = n0 - r0 * bx;".into()),
        (2, "const auto column_at = [&](int j) { int site = s0 + j, r = 12 * chi + r0; while (site >= bx) { site -= bx; r++; } return r * block_threads + site; };".into()),
        (2, format!("const real* const bcol = {b} + column_at(g); // this lane's B column is n0 + g")),
        (2, "float bv[4]; // B rows 2t, 2t + 1, 2t + 8, 2t + 9 (zero beyond Ls)".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int e = 0; e < 4; e++) { const int row = 2 * t + (e & 1) + 8 * (e >> 1); bv[e] = row < LS ? (float)bcol[bx * row] : 0.0f; }".into()),
        (2, "float mx = fmaxf(fmaxf(fabsf(bv[0]), fabsf(bv[1])), fmaxf(fabsf(bv[2]), fabsf(bv[3])));".into()),
        (2, "mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));".into()),
        (2, "mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2)); // column g's max over s (lanes 4g .. 4g + 3)".into()),
        (2, "const float sb = qdsl_block_scale(mx);".into()),
        (2, "unsigned bf[2] = {qdsl_pack(bv[0] * sb, bv[1] * sb), qdsl_pack(bv[2] * sb, bv[3] * sb)};".into()),
        (2, "unsigned af[4];".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int r = 0; r < 4; r++) af[r] = chi ? a_frag[1][r] : a_frag[0][r];".into()),
        (2, "float dv[4] = {0.0f, 0.0f, 0.0f, 0.0f};".into()),
    ];
    lines.extend(mma.into_iter().map(|l| (2, l)));
    lines.extend([
        (2, "// D rows g, g + 8, columns 2t, 2t + 1, scaled back by A's and each column's scale (column c's is lane 4c's)".into()),
        (2, "const float ua = chi ? a_unscale[1] : a_unscale[0];".into()),
        (2, "// 1/2^k exactly, from the bits of 2^k (-126 <= k <= 126): no division.".into()),
        (2, "const float u0 = ua * __int_as_float(0x7f000000 - __float_as_int(__shfl_sync(0xffffffffu, sb, 8 * t)));".into()),
        (2, "const float u1 = ua * __int_as_float(0x7f000000 - __float_as_int(__shfl_sync(0xffffffffu, sb, 8 * t + 4)));".into()),
        (2, "__syncwarp(); // every lane's reads of the tile before any lane's writes".into()),
        (2, "#pragma unroll".into()),
        (2, "for (int e = 0; e < 4; e++) {".into()),
        (3, "const int row = g + 8 * (e >> 1);".into()),
        (3, format!("if (row < LS) {b}[column_at(2 * t + (e & 1)) + bx * row] = dv[e] * ((e & 1) ? u1 : u0);")),
        (2, "}".into()),
        (1, "}".into()),
        (0, "}".into()),
    ]);
    for (depth, line) in lines {
        s.line(d + depth, &line);
    }
}
