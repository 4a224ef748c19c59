//! The spec's validation, the plan, the CPU path against a hand-written f64 product
//! within each mode's bound, and the emitted source's instructions; the SIMT mode's
//! thread tiles, its CPU path's summation order and its source.

use super::cpu::{block_scale, error_bound, inner, round, round_tf32, split};
use super::*;

fn spec(shape: Shape, operand: Operand, split: Split) -> MmaSpec {
    let accumulator = if operand == Operand::F64 {
        Accumulator::F64
    } else {
        Accumulator::F32
    };
    MmaSpec {
        name: "t".into(),
        doc: String::new(),
        problem: Problem::Inner,
        instruction: Instruction {
            shape,
            operand,
            accumulator,
        },
        split,
        scaling: if operand == Operand::F16 {
            Scaling::BlockMax
        } else {
            Scaling::None
        },
        staging: Staging::CpAsync,
        fragments: Fragments::Explicit,
        m: vec![16, 32],
        n: vec![32, 64],
        input: vec![Input::F32, Input::F64],
        tile_k: vec![32, 64],
        warps: vec![1, 2, 4],
        stages: vec![2, 3],
    }
}

fn modes() -> Vec<MmaSpec> {
    vec![
        spec(Shape::M8N8K4, Operand::F64, Split::One),
        spec(Shape::M16N8K8, Operand::Tf32, Split::One),
        spec(Shape::M16N8K8, Operand::Tf32, Split::Three),
        spec(Shape::M16N8K16, Operand::Bf16, Split::One),
        spec(Shape::M16N8K16, Operand::Bf16, Split::Three),
        spec(Shape::M16N8K16, Operand::F16, Split::One),
        spec(Shape::Simt, Operand::F32, Split::One),
    ]
}

fn variant(input: Input) -> MmaVariant {
    MmaVariant {
        m: 16,
        n: 32,
        input,
        tile_k: 32,
        warps: 2,
        stages: 2,
    }
}

/// A deterministic pseudo-random sequence in (−1, 1) (xorshift), with magnitudes spread
/// over a factor `spread` so rounding is exercised at many exponents.
fn values(n: usize, seed: u64, spread: f64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let v = (x & 0x7ff) as f64 / 2048.0;
            (2.0 * u - 1.0) * spread.powf(-v)
        })
        .collect()
}

/// The textbook product: c_ij = Σ_k a_ik b_jk in f64 (rows of length k).
fn reference(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for q in 0..k {
                c[i * n + j] += a[i * k + q] * b[j * k + q];
                mag[i * n + j] += (a[i * k + q] * b[j * k + q]).abs();
            }
        }
    }
    (c, mag)
}

/// max_ij |ĉ_ij − c_ij| / Σ_k |a_ik b_jk|.
fn relative_error(got: &[f64], c: &[f64], mag: &[f64]) -> f64 {
    got.iter()
        .zip(c)
        .zip(mag)
        .map(|((g, c), m)| (g - c).abs() / m)
        .fold(0.0, f64::max)
}

#[test]
fn tf32_rounds_to_nearest_with_ties_away() {
    // 1 + 2⁻¹¹ is halfway between 1 and 1 + 2⁻¹⁰: ties away → 1 + 2⁻¹⁰.
    assert_eq!(round_tf32(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-10));
    assert_eq!(round_tf32(-(1.0 + 2f32.powi(-11))), -(1.0 + 2f32.powi(-10)));
    // Below halfway rounds down, above up.
    assert_eq!(round_tf32(1.0 + 2f32.powi(-12)), 1.0);
    assert_eq!(
        round_tf32(1.0 + 2f32.powi(-11) + 2f32.powi(-20)),
        1.0 + 2f32.powi(-10)
    );
    // Representable values are kept; 10 stored bits.
    assert_eq!(round_tf32(1.5), 1.5);
    assert_eq!(round_tf32(1.0 + 2f32.powi(-10)), 1.0 + 2f32.powi(-10));
    // bf16 and f16: round to nearest even (1 + 2⁻⁸ ties to 1 in bf16; 1 + 3·2⁻⁸ to 1 + 2⁻⁶).
    assert_eq!(round(Operand::Bf16, 1.0 + 2f32.powi(-8)), 1.0);
    assert_eq!(
        round(Operand::Bf16, 1.0 + 3.0 * 2f32.powi(-8)),
        1.0 + 2f32.powi(-6)
    );
    assert_eq!(round(Operand::F16, 1.0 + 2f32.powi(-11)), 1.0);
}

#[test]
fn a_split_keeps_twice_the_bits() {
    for x in values(1000, 3, 1e3) {
        let a = x as f32;
        for (op, u) in [
            (Operand::Bf16, 2f64.powi(-8)),
            (Operand::Tf32, 2f64.powi(-11)),
        ] {
            let (hi, lo) = split(op, Split::Three, a);
            assert_eq!(round(op, hi), hi);
            assert_eq!(round(op, lo), lo);
            let r = (f64::from(a) - f64::from(hi) - f64::from(lo)).abs();
            assert!(r <= u * u * f64::from(a).abs(), "{op:?} {a}: residual {r}");
        }
    }
}

#[test]
fn the_block_scale_is_the_power_of_two_below_two_to_the_fifteen() {
    for max in [1.0f32, 0.75, 3.0e-7, 65504.0, 1.0e20, 2f32.powi(-100)] {
        let s = block_scale(max);
        assert_eq!(s, 2f32.powi(s.log2() as i32), "a power of two");
        assert!(
            max * s < 2f32.powi(15) && max * s >= 2f32.powi(14),
            "{max} · {s}"
        );
    }
    assert_eq!(block_scale(0.0), 1.0);
    // A subnormal max: the scale stops at 2¹²⁶ (binary32's largest power of two).
    assert_eq!(block_scale(2f32.powi(-140)), 2f32.powi(126));
}

#[test]
fn each_mode_is_within_its_bound_of_the_f64_product() {
    let k = 256;
    for s in modes() {
        for input in [Input::F32, Input::F64] {
            let v = variant(input);
            let (a, b) = (values(v.m * k, 1, 1e2), values(v.n * k, 2, 1e2));
            let (c, mag) = reference(&a, &b, v.m, v.n, k);
            let got = inner(&s, &v, &a, &b, k);
            let err = relative_error(&got, &c, &mag);
            let bound = error_bound(&s, input, v.tile_k, k);
            assert!(
                err <= bound,
                "{} {input:?}: error {err:e} > bound {bound:e}",
                s.mode()
            );
            // Not vacuous: the bound is within a factor 1000 of what is measured where
            // the mode rounds at all.
            if !(s.instruction.operand == Operand::F64 && input == Input::F64) {
                assert!(
                    err > bound / 1000.0,
                    "{} {input:?}: error {err:e} ≪ bound {bound:e}",
                    s.mode()
                );
            }
        }
    }
}

#[test]
fn three_bf16_reaches_the_fixed16_bound_that_bf16_misses() {
    // 16-bit fixed point stores each value to 2⁻¹⁵ of its site's largest: the inner
    // product's error then reaches 2⁻¹⁵ Σ|a b|. With a short k (no averaging of the
    // rounding errors), plain bf16 misses it and 3×BF16 meets it; 3×TF32 meets f32's.
    let fixed16 = 2f64.powi(-15);
    let k = 32;
    let v = variant(Input::F64);
    let (a, b) = (values(v.m * k, 5, 10.0), values(v.n * k, 6, 10.0));
    let (c, mag) = reference(&a, &b, v.m, v.n, k);
    let err = |s: &MmaSpec| relative_error(&inner(s, &v, &a, &b, k), &c, &mag);
    let bf16 = err(&spec(Shape::M16N8K16, Operand::Bf16, Split::One));
    let bf16x3 = err(&spec(Shape::M16N8K16, Operand::Bf16, Split::Three));
    let tf32x3 = err(&spec(Shape::M16N8K8, Operand::Tf32, Split::Three));
    assert!(
        bf16 > fixed16,
        "bf16 {bf16:e} within the fixed16 bound {fixed16:e}"
    );
    assert!(
        bf16x3 <= fixed16,
        "3×BF16 {bf16x3:e} above the fixed16 bound {fixed16:e}"
    );
    let f32_bound = 2.0 * 2f64.powi(-24) * k as f64;
    assert!(
        tf32x3 <= f32_bound,
        "3×TF32 {tf32x3:e} above the f32 bound {f32_bound:e}"
    );
}

#[test]
fn f16_with_block_scaling_survives_values_beyond_its_range() {
    // Values of 1e6 overflow f16 (65504) and 1e-9 underflow it; the block scale brings
    // each tile into range and the result back.
    let s = spec(Shape::M16N8K16, Operand::F16, Split::One);
    let v = variant(Input::F64);
    let k = 64;
    for factor in [1e6, 1e-9] {
        let a: Vec<f64> = values(v.m * k, 8, 4.0).iter().map(|x| x * factor).collect();
        let b = values(v.n * k, 9, 4.0);
        let (c, mag) = reference(&a, &b, v.m, v.n, k);
        let err = relative_error(&inner(&s, &v, &a, &b, k), &c, &mag);
        let bound = error_bound(&s, Input::F64, v.tile_k, k);
        assert!(err <= bound, "factor {factor:e}: {err:e} > {bound:e}");
    }
}

#[test]
fn misuse_is_an_error_at_its_item() {
    let check = |f: &dyn Fn(&mut MmaSpec), item: Item, words: &str| {
        let mut s = spec(Shape::M16N8K16, Operand::Bf16, Split::One);
        f(&mut s);
        let e = s.validate().expect_err(words);
        assert_eq!(e.item, item, "{}", e.reason);
        assert!(e.reason.contains(words), "{}", e.reason);
    };
    check(
        &|s| s.instruction.shape = Shape::M16N8K8,
        Item::Mma,
        "does not take bf16",
    );
    check(
        &|s| {
            s.instruction = Instruction {
                shape: Shape::M8N8K4,
                operand: Operand::F64,
                accumulator: Accumulator::F64,
            };
            s.split = Split::Three;
        },
        Item::Split,
        "not split",
    );
    check(
        &|s| {
            s.instruction = Instruction {
                shape: Shape::M16N8K8,
                operand: Operand::Tf32,
                accumulator: Accumulator::F32,
            };
            s.fragments = Fragments::Ldmatrix;
        },
        Item::Fragments,
        "16-bit",
    );
    check(
        &|s| s.scaling = Scaling::BlockMax,
        Item::Scaling,
        "buys nothing",
    );
    check(
        &|s| s.m = vec![24],
        Item::M,
        "multiple of the instruction's m (16)",
    );
    check(
        &|s| s.tile_k = vec![24],
        Item::TileK,
        "instruction's k (16)",
    );
    check(&|s| s.warps = vec![0], Item::Warps, "1 to 32");
    check(&|s| s.stages = vec![1], Item::Stages, "2 to 8");
    check(
        &|s| {
            s.staging = Staging::Direct;
            s.stages = vec![2];
        },
        Item::Stages,
        "one buffer",
    );
}

#[test]
fn a_variant_outside_the_spec_or_unevenly_tiled_is_refused() {
    let s = spec(Shape::M16N8K16, Operand::Bf16, Split::Three);
    let p = plan(&s, &variant(Input::F32)).unwrap();
    // 16 × 32 output: 1 × 4 instruction tiles, 2 per warp.
    assert_eq!((p.tiles, p.tiles_per_warp, p.threads()), ((1, 4), 2, 64));
    let e = plan(
        &s,
        &MmaVariant {
            m: 64,
            ..variant(Input::F32)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("m: 64 is not one of"), "{e}");
    let odd = MmaSpec {
        warps: vec![3],
        ..s.clone()
    };
    let e = plan(
        &odd,
        &MmaVariant {
            warps: 3,
            ..variant(Input::F32)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("do not divide among 3 warps"), "{e}");
}

#[test]
fn the_source_says_each_instruction_of_its_mode() {
    let v = variant(Input::F32);
    let src = |s: &MmaSpec| cuda::source(&plan(s, &v).unwrap());
    let dmma = src(&spec(Shape::M8N8K4, Operand::F64, Split::One));
    assert!(dmma.contains("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"));
    let tf32 = src(&spec(Shape::M16N8K8, Operand::Tf32, Split::Three));
    assert_eq!(
        tf32.matches("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
            .count(),
        3
    );
    assert!(tf32.contains("cvt.rna.tf32.f32") && tf32.contains("cp.async.cg.shared.global"));
    let mut ldm = spec(Shape::M16N8K16, Operand::Bf16, Split::Three);
    ldm.fragments = Fragments::Ldmatrix;
    ldm.staging = Staging::Direct;
    ldm.stages = vec![1];
    let bf16 = cuda::source(&plan(&ldm, &MmaVariant { stages: 1, ..v }).unwrap());
    assert_eq!(bf16.matches("ldmatrix.sync.aligned.m8n8.x4").count(), 2);
    assert!(!bf16.contains("cp.async"));
    let f16 = src(&spec(Shape::M16N8K16, Operand::F16, Split::One));
    assert!(f16.contains("atomicMax") && f16.contains("cvt.rn.f16x2.f32"));
    // The interfaces match the signatures in the text.
    for s in modes() {
        let program = cuda::program(&plan(&s, &v).unwrap());
        assert!(
            program.signature_mismatches().is_empty(),
            "{:?}",
            program.signature_mismatches()
        );
    }
}

#[test]
fn complex_inner_products_are_the_hermitian_ones() {
    use num_complex::Complex;
    // ⟨a_i, b_j⟩ = Σ_x conj(a_i(x)) b_j(x), written out with num_complex.
    let l = 64;
    let v = MmaVariant {
        m: 16,
        n: 32,
        ..variant(Input::F64)
    };
    let (a, b) = (values(v.m * 2 * l, 11, 1e2), values(v.n * 2 * l, 12, 1e2));
    let z = |x: &[f64], r: usize, q: usize| {
        Complex::new(x[r * 2 * l + 2 * q], x[r * 2 * l + 2 * q + 1])
    };
    for s in modes() {
        let s = MmaSpec {
            problem: Problem::ComplexInner,
            ..s
        };
        let got = inner(&s, &v, &a, &b, 2 * l);
        let bound = error_bound(&s, Input::F64, v.tile_k, 2 * l);
        for i in 0..v.m {
            for j in 0..v.n {
                let (mut c, mut mag) = (Complex::new(0.0, 0.0), 0.0);
                for q in 0..l {
                    c += z(&a, i, q).conj() * z(&b, j, q);
                    // Re and Im are each real sums of 2L products bounded by |a||b| in
                    // pairs, so each part's bound is ε Σ (|a_re b| + |a_im b|) ≤ ε √2 Σ |a||b|.
                    mag += std::f64::consts::SQRT_2 * z(&a, i, q).norm() * z(&b, j, q).norm();
                }
                let e = i * v.n + j;
                let g = Complex::new(got[2 * e], got[2 * e + 1]);
                let d = g - c;
                assert!(
                    d.re.abs() <= bound * mag && d.im.abs() <= bound * mag,
                    "{} ({i}, {j}): {g} vs {c}, bound {:e}",
                    s.mode(),
                    bound * mag
                );
                assert!(d.norm() > 0.0 || s.instruction.operand == Operand::F64);
            }
        }
    }
}

/// A batched product's p-th result is the complex inner product of its own rows (a plain
/// num_complex loop here, to the f64 mode's rounding, and each mode equal to one
/// `complex_inner` product of those rows); its kernel splits the grid into products
/// (`blocks_per_batch`, the batch strides), its reduce kernel takes `batches`; the
/// unbatched source has none of it.
#[test]
fn batched_complex_inner_products_are_each_products_own() {
    use num_complex::Complex;
    let (l, batches) = (32, 3);
    let v = MmaVariant {
        m: 16,
        n: 32,
        ..variant(Input::F64)
    };
    let k = 2 * l;
    let (a, b) = (
        values(batches * v.m * k, 21, 1e2),
        values(batches * v.n * k, 22, 1e2),
    );
    for s in modes() {
        let s = MmaSpec {
            problem: Problem::BatchedComplexInner,
            ..s
        };
        let got = cpu::batched_inner(&s, &v, &a, &b, k, batches);
        assert_eq!(got.len(), batches * v.m * v.n * 2);
        let one = MmaSpec {
            problem: Problem::ComplexInner,
            ..s.clone()
        };
        for p in 0..batches {
            let (ap, bp) = (
                &a[p * v.m * k..(p + 1) * v.m * k],
                &b[p * v.n * k..(p + 1) * v.n * k],
            );
            let single = inner(&one, &v, ap, bp, k);
            assert_eq!(
                &got[p * v.m * v.n * 2..(p + 1) * v.m * v.n * 2],
                &single[..],
                "{} product {p}",
                s.mode()
            );
            if s.instruction.operand == Operand::F64 {
                let z = |x: &[f64], r: usize, q: usize| {
                    Complex::new(x[r * k + 2 * q], x[r * k + 2 * q + 1])
                };
                for (i, j) in [(0, 0), (3, 17), (15, 31)] {
                    let c: Complex<f64> = (0..l).map(|q| z(ap, i, q).conj() * z(bp, j, q)).sum();
                    let e = p * v.m * v.n + i * v.n + j;
                    let d = Complex::new(got[2 * e], got[2 * e + 1]) - c;
                    assert!(
                        d.norm() < 1e-10 * c.norm().max(1.0),
                        "product {p} ({i}, {j}): {d}"
                    );
                }
            }
        }
        let plan = plan::plan(&s, &v).unwrap();
        let source = cuda::source(&plan);
        assert!(
            source.contains("bx = blockIdx.x % blocks_per_batch"),
            "{}",
            s.mode()
        );
        assert!(source.contains("a += batch * batch_a;"));
        let program = cuda::program(&plan);
        let names = |k: usize| {
            program.kernels[k]
                .params
                .iter()
                .map(|p| p.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(0)[6..], ["blocks_per_batch", "batch_a", "batch_b"]);
        assert_eq!(names(1).last().map(String::as_str), Some("batches"));
        let unbatched = cuda::source(&plan::plan(&one, &v).unwrap());
        assert!(
            !unbatched.contains("blocks_per_batch")
                && unbatched.contains("(k_tiles - 1 - blockIdx.x) / gridDim.x")
        );
    }
}

fn simt(problem: Problem) -> MmaSpec {
    MmaSpec {
        problem,
        m: vec![16, 32, 64],
        n: vec![16, 32, 64],
        tile_k: vec![32, 64],
        warps: vec![2, 4, 8],
        ..spec(Shape::Simt, Operand::F32, Split::One)
    }
}

/// The SIMT thread tiles: the largest of 4 × 8, 8 × 4, 4 × 4 whose tiles are at least a
/// warp and divide the block (k split among the rest), and every (row, column, group)
/// of the output owned by exactly one thread under the kernel's index formulas
/// (rows ti·4 + r·(QM·4) + 0..3, columns tj·4 + c·(QN·4) + 0..3, tid = (grp·QM + ti)·QN + tj).
#[test]
fn simt_thread_tiles_cover_the_output_once() {
    let s = simt(Problem::ComplexInner);
    let v = |m, n, warps, tile_k| MmaVariant {
        m,
        n,
        input: Input::F32,
        tile_k,
        warps,
        stages: 2,
    };
    let t = |m, n, warps, tile_k| {
        let p = plan(&s, &v(m, n, warps, tile_k)).unwrap();
        let t = p.simt.unwrap();
        (t.rows, t.cols, t.groups)
    };
    // 64 × 128 over 256 threads: one 4 × 8 tile each.
    assert_eq!(t(64, 64, 8, 64), (4, 8, 1));
    // 32 × 64: 64 tiles of 4 × 8, 4 groups of 16 values.
    assert_eq!(t(32, 32, 8, 64), (4, 8, 4));
    // 16 × 32: 4 × 8 gives 16 tiles (less than a warp): 4 × 4, 8 groups of 8 values.
    assert_eq!(t(16, 16, 8, 64), (4, 4, 8));
    // 64 × 128 over 128 threads would take 64 accumulators each: refused.
    let e = plan(&s, &v(64, 64, 4, 64)).unwrap_err();
    assert!(e.to_string().contains("thread tiles"), "{e}");
    for &m in &s.m {
        for &n in &s.n {
            for &warps in &s.warps {
                for &tile_k in &s.tile_k {
                    let Ok(p) = plan(&s, &v(m, n, warps, tile_k)) else {
                        continue;
                    };
                    let tile = p.simt.unwrap();
                    let (qm, qn) = p.tiles;
                    let nr = 2 * n;
                    assert!(tile.rows * tile.cols <= 32 && tile.chunk(tile_k) >= 8);
                    let mut owned = vec![0u8; m * nr * tile.groups];
                    for tid in 0..p.threads() {
                        let (tj, ti, grp) = (tid % qn, (tid / qn) % qm, tid / (qm * qn));
                        for r in 0..tile.rows {
                            for c in 0..tile.cols {
                                let row = (r >> 2) * (qm * 4) + ti * 4 + (r & 3);
                                let col = (c >> 2) * (qn * 4) + tj * 4 + (c & 3);
                                owned[(grp * m + row) * nr + col] += 1;
                            }
                        }
                    }
                    assert!(
                        owned.iter().all(|&o| o == 1),
                        "{}: an output owned {:?} times",
                        v(m, n, warps, tile_k).canonical(),
                        owned.iter().find(|&&o| o != 1)
                    );
                }
            }
        }
    }
}

/// The SIMT CPU path sums in the kernel's order: per k-tile, thread group g's fmaf chain
/// over its slice from zero, into the group's f64 total; the groups' totals in order.
/// Written out here for one entry, bit for bit; and a single f32 chain over all of k
/// (what a naive kernel would do) is further from the exact value than the tiled one.
#[test]
fn simt_cpu_path_sums_in_the_kernels_order() {
    let s = simt(Problem::Inner);
    let v = MmaVariant {
        m: 16,
        n: 32,
        input: Input::F64,
        tile_k: 64,
        warps: 8,
        stages: 2,
    };
    let groups = plan(&s, &v).unwrap().simt.unwrap().groups;
    // 16 × 32: 32 tiles of 4 × 4 (4 × 8 would be 16, less than a warp), 8 groups.
    assert_eq!(groups, 8);
    let k = 1024;
    let (a, b) = (values(v.m * k, 41, 1e2), values(v.n * k, 42, 1e2));
    let got = inner(&s, &v, &a, &b, k);
    let (i, j) = (5, 17);
    let l = v.tile_k / groups;
    let mut totals = vec![0.0f64; groups];
    for t in 0..k / v.tile_k {
        for (g, total) in totals.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for q in t * v.tile_k + g * l..t * v.tile_k + (g + 1) * l {
                acc = (a[i * k + q] as f32).mul_add(b[j * k + q] as f32, acc);
            }
            *total += f64::from(acc);
        }
    }
    let want = totals.iter().fold(0.0, |s, t| s + t);
    assert_eq!(got[i * v.n + j].to_bits(), want.to_bits());
    // The bound holds and is met within a factor 1000 (checked for every mode above); a
    // single f32 sum over k = 1024 values is not within the tile bound everywhere.
    let (c, mag) = reference(&a, &b, v.m, v.n, k);
    let bound = error_bound(&s, Input::F64, v.tile_k, k);
    assert!(relative_error(&got, &c, &mag) <= bound);
    let naive: Vec<f64> = (0..v.m * v.n)
        .map(|e| {
            let (i, j) = (e / v.n, e % v.n);
            let mut acc = 0.0f32;
            for q in 0..k {
                acc += a[i * k + q] as f32 * b[j * k + q] as f32;
            }
            f64::from(acc)
        })
        .collect();
    assert!(relative_error(&naive, &c, &mag) > relative_error(&got, &c, &mag));
}

#[test]
fn simt_misuse_is_an_error_at_its_item() {
    let check = |f: &dyn Fn(&mut MmaSpec), item: Item, index: Option<usize>, words: &str| {
        let mut s = simt(Problem::ComplexInner);
        f(&mut s);
        let e = s.validate().expect_err(words);
        assert_eq!((e.item, e.index), (item, index), "{}", e.reason);
        assert!(e.reason.contains(words), "{}", e.reason);
    };
    check(
        &|s| s.instruction.operand = Operand::F16,
        Item::Mma,
        Some(1),
        "simt does not take f16 → f32",
    );
    check(
        &|s| s.instruction.accumulator = Accumulator::F64,
        Item::Mma,
        Some(2),
        "simt does not take f32 → f64",
    );
    check(
        &|s| s.instruction.shape = Shape::M16N8K8,
        Item::Mma,
        Some(1),
        "m16n8k8 does not take f32",
    );
    check(
        &|s| s.split = Split::Three,
        Item::Split,
        None,
        "f32 operands are not split",
    );
    check(
        &|s| s.fragments = Fragments::Ldmatrix,
        Item::Fragments,
        None,
        "SIMT has no fragments",
    );
    check(
        &|s| s.scaling = Scaling::BlockMax,
        Item::Scaling,
        None,
        "buys nothing",
    );
    check(
        &|s| s.m = vec![18],
        Item::M,
        Some(0),
        "multiple of the instruction's m (4)",
    );
}

/// The SIMT sources: FMA on the CUDA cores (no `mma.sync`), float4 operand loads from
/// the k-major tile, the staging the spec asks for, the groups' ordered partials; the
/// block axpy's one kernel; interfaces matching the text.
#[test]
fn simt_sources_are_fma_tiles() {
    let s = simt(Problem::ComplexInner);
    let v = MmaVariant {
        m: 16,
        n: 16,
        input: Input::F64,
        tile_k: 64,
        warps: 8,
        stages: 3,
    };
    let p = plan(&s, &v).unwrap();
    let src = cuda::source(&p);
    assert!(!src.contains("mma.sync") && src.contains("fmaf(fa[r], fb[c], acc[r][c])"));
    assert!(src.contains("cp.async.cg.shared.global") && src.contains("constexpr int GROUPS = 8;"));
    assert!(src.contains("reinterpret_cast<const float4*>(bt + k * NR"));
    assert!(src.contains("dst[ld + N] = -x0;"), "the rotated rows");
    assert!(src.contains("if (gg > 0) __syncthreads();"));
    assert!(src.contains("__launch_bounds__(THREADS, 2)"));
    let program = cuda::program(&p);
    assert!(program.signature_mismatches().is_empty());
    assert_eq!(
        p.shared_bytes(),
        3 * 32 * 68 * 8 + 64 * (16 + 32) * 4,
        "staged ring + f32 k-major tile"
    );
    // Too much shared memory: 64 × 64 f64, tile_k 64, 3 stages.
    let e = plan(&s, &MmaVariant { m: 64, n: 64, ..v }).unwrap_err();
    assert!(e.to_string().contains("shared memory"), "{e}");
    let axpy = MmaSpec {
        problem: Problem::ComplexAxpy,
        staging: Staging::Direct,
        tile_k: vec![8, 16, 32],
        warps: vec![4, 8],
        stages: vec![1],
        ..s
    };
    let v = MmaVariant {
        m: 64,
        n: 64,
        input: Input::F32,
        tile_k: 8,
        warps: 8,
        stages: 1,
    };
    let p = plan(&axpy, &v).unwrap();
    assert_eq!((p.tiles, p.simt.unwrap().rows), ((16, 16), 4));
    let program = axpy::program(&p);
    assert_eq!(program.kernels.len(), 1);
    assert!(program.signature_mismatches().is_empty());
    assert!(program
        .source
        .contains("acc[s][c] = fmaf(xr[s], fr[c], acc[s][c]);"));
    assert!(!program.source.contains("mma.sync"));
    let e = plan(&axpy, &MmaVariant { tile_k: 16, ..v }).unwrap_err();
    assert!(e.to_string().contains("more than 32 accumulators"), "{e}");
}
