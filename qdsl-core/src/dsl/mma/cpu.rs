//! The CPU path of a tile kernel: the same computation in plain Rust, with what the tensor
//! core rounds emulated — inputs read in their stored precision, operands rounded to
//! f16 / bf16 (round to nearest even, `cvt.rn`) or tf32 (round to nearest, ties away from
//! zero, `cvt.rna.tf32.f32`) and split (a = a_hi + a_lo), products exact, each k-tile's
//! sum accumulated in f32 and added to an f64 total (as the kernel does). CPU and GPU
//! differ only in the order of the f32 sums, so both stay within [`error_bound`].
//!
//! The SIMT mode (f32 operands, [`super::simt`]) is emulated in the kernel's own order:
//! each thread group's `fmaf` chain over its tile_k / groups values of a k-tile
//! (`f32::mul_add`), added to the group's f64 total, the groups' totals added in order;
//! CPU and GPU then differ only in the order of the f64 sums of the blocks.

use super::plan::MmaVariant;
use super::spec::{Input, MmaSpec, Operand, Problem, Scaling, Split};

/// x rounded to the operand type (from binary32; f32 and f64 operands are not rounded).
pub fn round(op: Operand, x: f32) -> f32 {
    match op {
        Operand::F16 => half::f16::from_f32(x).to_f32(),
        Operand::Bf16 => half::bf16::from_f32(x).to_f32(),
        Operand::Tf32 => round_tf32(x),
        Operand::F32 | Operand::F64 => x,
    }
}

/// Round to nearest with ties away from zero to 10 stored significand bits, as
/// `cvt.rna.tf32.f32` does (the 13 low bits of the binary32 cleared); NaN and infinities
/// pass through.
pub fn round_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    f32::from_bits(bits.wrapping_add(0x1000) & 0xffff_e000)
}

/// (a_hi, a_lo): a_hi = rn(a), a_lo = rn(a − a_hi) (a − a_hi is exact in binary32);
/// a_lo = 0 without splitting.
pub fn split(op: Operand, s: Split, a: f32) -> (f32, f32) {
    let hi = round(op, a);
    match s {
        Split::One => (hi, 0.0),
        Split::Three => (hi, round(op, a - hi)),
    }
}

/// A value as the kernel reads it from global memory.
pub fn read(input: Input, x: f64) -> f64 {
    match input {
        Input::F32 => f64::from(x as f32),
        Input::F64 => x,
    }
}

/// The power of two a block-max-scaled tile is multiplied by: 2^(15 − e) where
/// max = f · 2^e, f ∈ [0.5, 1) (1 for a zero tile), so that every scaled |value| < 2^15.
pub fn block_scale(max: f32) -> f32 {
    if max.is_nan() || max <= 0.0 || max.is_infinite() {
        return 1.0;
    }
    let e = frexp_exponent(max);
    2f32.powi((15 - e).min(126))
}

/// e of x = f · 2^e with f ∈ [0.5, 1) (C's `frexpf`), for finite x > 0.
fn frexp_exponent(x: f32) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    if biased == 0 {
        // Subnormal: normalise by 2^32 first.
        return frexp_exponent(x * 2f32.powi(32)) - 32;
    }
    biased - 126
}

/// The spec's problem on the host as the variant's kernel computes it: A is m rows of
/// length `k` (row-major, `a[i * k + kk]`), B n rows; k-tiles of `v.tile_k` (`k` must be
/// a multiple of it, the kernel's requirement). `inner`: c_ij = Σ_k a_ik b_jk, m × n
/// row-major; `complex_inner` (rows of interleaved (re, im), k = 2L):
/// c_ij = Σ_x conj(a_i(x)) b_j(x), m × n interleaved complex values (also one product
/// of `batched_complex_inner`: [`batched_inner`] runs them all).
pub fn inner(spec: &MmaSpec, v: &MmaVariant, a: &[f64], b: &[f64], k: usize) -> Vec<f64> {
    let (m, n) = (v.m, v.n);
    assert!(
        a.len() == m * k && b.len() == n * k && k.is_multiple_of(v.tile_k),
        "inner: A {} values, B {} values, k {k} for m {m}, n {n}, tile_k {}",
        a.len(),
        b.len(),
        v.tile_k
    );
    match spec.problem {
        Problem::Inner => real_inner(spec, v, m, n, a, b, k),
        // A block axpy is not an inner product (`axpy::cpu`; `inner_cpu` refuses it): its
        // operands taken as complex rows here.
        Problem::ComplexInner | Problem::BatchedComplexInner | Problem::ComplexAxpy => {
            // B's rows, then their rotations b' = (im, −re): Re c = a·b, Im c = a·b'.
            let mut columns = b.to_vec();
            for row in b.chunks(k) {
                columns.extend(row.chunks(2).flat_map(|z| [z[1], -z[0]]));
            }
            let c = real_inner(spec, v, m, 2 * n, a, &columns, k);
            (0..m * n)
                .flat_map(|e| {
                    let (i, j) = (e / n, e % n);
                    [c[i * 2 * n + j], c[i * 2 * n + n + j]]
                })
                .collect()
        }
    }
}

/// c = A Bᵀ for A m × k and B n × k (row-major), the kernel's rounding emulated.
fn real_inner(
    spec: &MmaSpec,
    v: &MmaVariant,
    m: usize,
    n: usize,
    a: &[f64],
    b: &[f64],
    k: usize,
) -> Vec<f64> {
    let tk = v.tile_k;
    let op = spec.instruction.operand;
    let mut c = vec![0.0f64; m * n];
    // SIMT: the thread groups' f64 totals, added in group order at the end.
    let groups = if op == Operand::F32 {
        super::simt::groups(spec, v)
    } else {
        1
    };
    let mut totals = vec![vec![0.0f64; m * n]; if op == Operand::F32 { groups } else { 0 }];
    for t in 0..k / tk {
        let tile = |x: &[f64], rows: usize| -> Vec<f64> {
            (0..rows)
                .flat_map(|r| (0..tk).map(move |q| (r, q)))
                .map(|(r, q)| read(v.input, x[r * k + t * tk + q]))
                .collect()
        };
        let (ta, tb) = (tile(a, m), tile(b, n));
        if op == Operand::F32 {
            // SIMT: group g's fmaf chain over values g·l .. (g+1)·l of the tile, from 0.
            let f = |x: &[f64]| x.iter().map(|&y| y as f32).collect::<Vec<f32>>();
            let (fa, fb) = (f(&ta), f(&tb));
            let l = tk / groups;
            for (g, total) in totals.iter_mut().enumerate() {
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = 0.0f32;
                        for q in g * l..(g + 1) * l {
                            acc = fa[i * tk + q].mul_add(fb[j * tk + q], acc);
                        }
                        total[i * n + j] += f64::from(acc);
                    }
                }
            }
            continue;
        }
        if op == Operand::F64 {
            for i in 0..m {
                for j in 0..n {
                    let mut acc = 0.0;
                    for q in 0..tk {
                        acc = ta[i * tk + q].mul_add(tb[j * tk + q], acc);
                    }
                    c[i * n + j] += acc;
                }
            }
            continue;
        }
        let scale = |x: &[f64]| match spec.scaling {
            Scaling::None => 1.0f32,
            Scaling::BlockMax => {
                block_scale(x.iter().fold(0.0f32, |mx, &y| mx.max((y as f32).abs())))
            }
        };
        let (sa, sb) = (scale(&ta), scale(&tb));
        let parts = |x: &[f64], s: f32| -> Vec<(f32, f32)> {
            x.iter()
                .map(|&y| split(op, spec.split, y as f32 * s))
                .collect()
        };
        let (pa, pb) = (parts(&ta, sa), parts(&tb, sb));
        let unscale = 1.0 / (f64::from(sa) * f64::from(sb));
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for q in 0..tk {
                    let ((ah, al), (bh, bl)) = (pa[i * tk + q], pb[j * tk + q]);
                    acc += ah * bh;
                    if spec.split == Split::Three {
                        acc += ah * bl;
                        acc += al * bh;
                    }
                }
                c[i * n + j] += f64::from(acc) * unscale;
            }
        }
    }
    for total in &totals {
        for (c, t) in c.iter_mut().zip(total) {
            *c += t;
        }
    }
    c
}

/// The products of a `batched_complex_inner` variant: product p's A rows are
/// `a[p · m · k ..][.. m · k]`, its B rows `b[p · n · k ..][.. n · k]` (the kernel's
/// batch_a = m · k, batch_b = n · k, lda = ldb = k), each computed as [`inner`] does;
/// the results one after another (`batches` · m · n interleaved complex values).
pub fn batched_inner(
    spec: &MmaSpec,
    v: &MmaVariant,
    a: &[f64],
    b: &[f64],
    k: usize,
    batches: usize,
) -> Vec<f64> {
    a.chunks(v.m * k)
        .zip(b.chunks(v.n * k))
        .take(batches)
        .flat_map(|(a, b)| inner(spec, v, a, b, k))
        .collect()
}

/// The relative error bound ε of a mode: |ĉ_ij − c_ij| ≤ ε Σ_k |a_ik b_jk| for the exact
/// c_ij of the f64 inputs (K the length of the sum, tile_k the tile's), from
/// * reading f32 input: 2 u₃₂ (u₃₂ = 2⁻²⁴);
/// * the operands (u the operand type's unit roundoff): one rounding each, 2u + u²;
///   split (a = a_hi + a_lo + r, |r| ≤ u² |a|, the lo·lo term dropped): 3u² + 4u³;
/// * each tile's f32 sum of L = tile_k · MMAs-per-product terms: γ_L = L u₃₂ / (1 − L u₃₂)
///   of the sum of the terms' magnitudes (≤ (1 + 2u) Σ|ab|);
/// * the f64 sums (the tiles' totals, DMMA's products): γ_K with u₆₄ = 2⁻⁵³.
///
/// f16 with block-max scaling: scaled values are below 2^15 (no overflow) and values
/// below 2⁻¹⁴ of the tile's max lose bits as f16 subnormals; the bound holds for tiles
/// whose values are within that range of their max (the tests' data).
///
/// SIMT (f32 operands, [`super::simt`]): â = a(1 + α), b̂ = b(1 + β), |α|, |β| ≤ u₃₂ (one
/// rounding to f32, from f64 input or into the f32 input), so |â b̂ − a b| ≤
/// (2u₃₂ + u₃₂²)|a b|; a thread's chain s_1 = rn(â_1 b̂_1), s_q = rn(â_q b̂_q + s_{q−1})
/// (`fmaf`: one rounding per step) over its L = tile_k / groups ≤ tile_k values of a
/// k-tile gives Σ_q â_q b̂_q Π(1 + δ) with at most L factors, so
/// |s_L − Σ â b̂| ≤ γ_L u₃₂ Σ|â b̂| ≤ γ_L (1 + 2u₃₂ + u₃₂²) Σ|a b| (γ_tile_k here: the
/// bound holds for every group count); the chains' totals, the groups' and the blocks'
/// sums are f64 (γ_{K+1} u₆₄ as above):
/// ε = 2u₃₂ + u₃₂² + γ_tile_k(u₃₂)(1 + 2u₃₂ + u₃₂²) + γ_{K+1}(u₆₄) ≈ (tile_k + 2) u₃₂.
pub fn error_bound(spec: &MmaSpec, input: Input, tile_k: usize, k: usize) -> f64 {
    let u32_ = 2f64.powi(-24);
    let gamma = |n: f64, u: f64| n * u / (1.0 - n * u);
    let read = match input {
        Input::F32 => 2.0 * u32_ + u32_ * u32_,
        Input::F64 => 0.0,
    };
    let op = spec.instruction.operand;
    let f64_sums = gamma(k as f64 + 1.0, 2f64.powi(-53));
    if op == Operand::F64 {
        return read + f64_sums;
    }
    if op == Operand::F32 {
        // One rounding to f32 of each operand whatever the input (f32 input is that
        // rounding of the exact values; f64 input is rounded by the kernel).
        let rounded = 2.0 * u32_ + u32_ * u32_;
        return rounded + gamma(tile_k as f64, u32_) * (1.0 + rounded) + f64_sums;
    }
    let u = op.unit_roundoff();
    let operands = match spec.split {
        Split::One => 2.0 * u + u * u,
        Split::Three => 3.0 * u * u + 4.0 * u * u * u,
    };
    let l = (tile_k * spec.split.mmas()) as f64;
    read + operands + gamma(l, u32_) * (1.0 + 2.0 * u) * (1.0 + read) + f64_sums
}
