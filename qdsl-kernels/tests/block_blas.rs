//! The block inner products of `block_blas` (`mma_tile!`): the CPU path of each mode
//! against a plain f64 complex product written here, within the mode's stated bound;
//! 3×BF16 reaching the 16-bit fixed-point bound plain bf16 misses, 3×TF32 f32's; and every
//! knob value of the catalog compiled by NVRTC for sm_90, the default variants without
//! spills (ptxas); the batched V†UV tiles of the multigrid set-up (`batched_complex_inner`)
//! compiled and each product against the plain one.

mod nvrtc;

use qdsl_core::dsl::mma::{self, Input, MmaVariant};
use qdsl_core::dsl::DslError;
use qdsl_core::Complex;
use qdsl_kernels::block_blas::random_vectors as vectors;
use qdsl_kernels::block_blas::{block_inner_cpu, BlockBlasMode};
use qdsl_kernels::multigrid::{CoarseVuvBf16x3, CoarseVuvF64};

/// c_ij = Σ_x conj(a_i(x)) b_j(x) and Σ_x |a_i(x)| |b_j(x)|, in f64, the textbook way.
fn reference(
    a: &[Complex<f64>],
    b: &[Complex<f64>],
    m: usize,
    n: usize,
    len: usize,
) -> (Vec<Complex<f64>>, Vec<f64>) {
    let mut c = vec![Complex::new(0.0, 0.0); m * n];
    let mut mag = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            for x in 0..len {
                let (ai, bj) = (a[i * len + x], b[j * len + x]);
                c[i * n + j] += ai.conj() * bj;
                mag[i * n + j] += ai.norm() * bj.norm();
            }
        }
    }
    (c, mag)
}

/// max_ij max(|Re|, |Im| of ĉ_ij − c_ij) / Σ_x |a_i(x)| |b_j(x)|.
fn relative_error(got: &[Complex<f64>], c: &[Complex<f64>], mag: &[f64]) -> f64 {
    got.iter()
        .zip(c)
        .zip(mag)
        .map(|((g, c), m)| (g - c).re.abs().max((g - c).im.abs()) / m)
        .fold(0.0, f64::max)
}

#[test]
fn every_mode_is_within_its_bound_for_16_32_and_64_vectors() {
    let len = 256;
    for nvec in [16, 32, 64] {
        let (a, b) = (vectors(nvec, len, 1), vectors(nvec, len, 2));
        let (c, mag) = reference(&a, &b, nvec, nvec, len);
        for mode in BlockBlasMode::ALL {
            for input in [Input::F32, Input::F64] {
                let v = mode.default_variant(nvec, nvec, input).unwrap();
                let got = block_inner_cpu(mode, &v, &a, &b, len).unwrap();
                let err = relative_error(&got, &c, &mag);
                // Re and Im are each sums of 2 len real products with |a_re b_x| + |a_im b_y|
                // ≤ √2 |a||b|: the real bound times √2.
                let bound = mode.error_bound(&v, len) * std::f64::consts::SQRT_2;
                assert!(
                    err <= bound,
                    "{} {nvec} vectors, {input:?}: {err:e} > {bound:e}",
                    mode.name()
                );
            }
        }
    }
}

#[test]
fn split_modes_reach_their_target_precision() {
    // 16-bit fixed point stores each value to 2⁻¹⁵ of its site's largest, so an inner
    // product of such vectors is good to ≈ 2⁻¹⁵ Σ|a||b|. Short vectors keep the rounding
    // errors from averaging out: plain bf16 misses that bound, 3×BF16 meets it, and
    // 3×TF32 meets f32's (a few u₃₂ = 2⁻²⁴ per term of a tile's sum).
    let (len, nvec) = (16, 16);
    let (a, b) = (vectors(nvec, len, 3), vectors(nvec, len, 4));
    let (c, mag) = reference(&a, &b, nvec, nvec, len);
    let err = |mode: BlockBlasMode| {
        let v = MmaVariant {
            tile_k: 32,
            ..mode.default_variant(nvec, nvec, Input::F64).unwrap()
        };
        relative_error(&block_inner_cpu(mode, &v, &a, &b, len).unwrap(), &c, &mag)
    };
    let fixed16 = 2f64.powi(-15);
    let (bf16, bf16x3, tf32x3) = (
        err(BlockBlasMode::Bf16),
        err(BlockBlasMode::Bf16x3),
        err(BlockBlasMode::Tf32x3),
    );
    assert!(bf16 > fixed16, "bf16 {bf16:e} meets the fixed16 bound");
    assert!(bf16x3 <= fixed16, "3×BF16 {bf16x3:e} > fixed16 {fixed16:e}");
    let f32_bound = 32.0 * 2f64.powi(-24);
    assert!(tf32x3 <= f32_bound, "3×TF32 {tf32x3:e} > f32 {f32_bound:e}");
    assert!(err(BlockBlasMode::F64) <= 2f64.powi(-50));
    // f32 SIMT: f32 operands, a tile_k-term fmaf chain (≈ (2 + 32) u₃₂ at tile_k 32),
    // below 3×TF32's bound and within f32's.
    let simt = err(BlockBlasMode::F32Simt);
    assert!(simt <= f32_bound, "f32 SIMT {simt:e} > f32 {f32_bound:e}");
    assert!(simt > 0.0, "f64 vectors are rounded to f32");
    println!("relative errors, 16 vectors of 16: bf16 {bf16:.2e}, 3×BF16 {bf16x3:.2e}, 3×TF32 {tf32x3:.2e}, f32 SIMT {simt:.2e}");
}

#[test]
fn mismatched_lengths_are_an_error_not_a_panic() {
    let mode = BlockBlasMode::Bf16x3;
    let v = mode.default_variant(16, 16, Input::F32).unwrap();
    let a = vectors(16, 32, 5);
    let e = block_inner_cpu(mode, &v, &a, &a[..100], 32).unwrap_err();
    assert!(e.to_string().contains("expected"), "{e}");
    // 2 · 20 = 40 reals per vector: not a whole number of 64-value tiles.
    let e = block_inner_cpu(mode, &v, &a[..320], &a[..320], 20).unwrap_err();
    assert!(e.to_string().contains("multiple of tile_k"), "{e}");
}

/// The variants compiled per mode: the default for 16, 32 and 64 vectors of each input,
/// and for 32 f32 vectors each other value of each compile knob the spec lists (every
/// knob value compiled once; all 264 variants take NVRTC about 11 minutes here).
fn variants(mode: BlockBlasMode) -> Vec<(MmaVariant, bool)> {
    let spec = mode.spec();
    let mut out = Vec::new();
    for m in [16, 32, 64] {
        for input in [Input::F32, Input::F64] {
            out.push((mode.default_variant(m, m, input).unwrap(), true));
        }
    }
    let base = mode.default_variant(32, 32, Input::F32).unwrap();
    let knobs = spec
        .tile_k
        .iter()
        .map(|&tile_k| MmaVariant { tile_k, ..base });
    let knobs = knobs.chain(spec.warps.iter().map(|&warps| MmaVariant { warps, ..base }));
    let knobs = knobs.chain(
        spec.stages
            .iter()
            .map(|&stages| MmaVariant { stages, ..base }),
    );
    for v in knobs {
        if mma::plan(&spec, &v).is_ok() && !out.iter().any(|(w, _)| *w == v) {
            out.push((v, false));
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs the CUDA toolchain (NVRTC + ptxas; no GPU needed)"
)]
fn every_block_dot_knob_value_compiles_for_sm90_and_the_defaults_do_not_spill() {
    let tc = nvrtc::Toolchain::load();
    for mode in BlockBlasMode::ALL {
        let variants = variants(mode);
        let mut program = String::new();
        let mut entries = Vec::new();
        let mut defaults = Vec::new();
        for (k, (v, default)) in variants.iter().enumerate() {
            let p = mode.program(v).unwrap();
            assert!(
                p.signature_mismatches().is_empty(),
                "{:?}",
                p.signature_mismatches()
            );
            program.push_str(&format!("namespace v_{k} {{\n{}}}\n", p.source));
            entries.extend(p.kernels.iter().map(|k| k.name.clone()));
            if *default {
                defaults.push((p.name.clone(), v.canonical()));
            }
        }
        let tag = format!("block_dot_{}", mode.name());
        let reports = tc.compile_checked(&program, &tag, "sm_90", &entries, false);
        for (entry, what) in &defaults {
            let r = reports
                .iter()
                .find(|(e, _)| e == entry)
                .map(|(_, r)| *r)
                .unwrap_or_else(|| panic!("no ptxas report for {entry}"));
            println!("{} default {what}: {} registers", mode.name(), r.registers);
            assert_eq!(
                (r.spill_stores, r.spill_loads),
                (0, 0),
                "{entry} ({what}): the default variant spills ({} registers)",
                r.registers
            );
        }
    }
}

// The instruction paths the catalog does not use: explicit 16-bit fragments (with and
// without the split), f16 with block-max scaling (explicit and `ldmatrix`), direct
// staging, and the real `inner` problem.
qdsl_macros::mma_tile! {
    /// c = A Bᵀ in 3×BF16, explicit fragments, plain copies.
    pub explicit_bf16x3 {
        problem: inner,
        mma: m16n8k16(bf16 -> f32),
        split: 3,
        staging: direct,
        fragments: explicit,
        m: [32],
        n: [32],
        input: [f32],
        tile_k: [32],
        warps: [4],
        stages: [1],
    }
}

qdsl_macros::mma_tile! {
    /// c = A Bᵀ in f16 with block-max scaling, explicit fragments.
    pub scaled_f16 {
        problem: inner,
        mma: m16n8k16(f16 -> f32),
        scaling: block_max,
        m: [32],
        n: [32],
        input: [f64],
        tile_k: [64],
        warps: [4],
        stages: [3],
    }
}

qdsl_macros::mma_tile! {
    /// ⟨a_i, b_j⟩ in f16 with block-max scaling, `ldmatrix`, plain copies.
    pub scaled_f16_ldmatrix {
        problem: complex_inner,
        mma: m16n8k16(f16 -> f32),
        scaling: block_max,
        staging: direct,
        fragments: ldmatrix,
        m: [16],
        n: [16],
        input: [f32],
        tile_k: [32],
        warps: [2],
        stages: [1],
    }
}

#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs the CUDA toolchain (NVRTC + ptxas; no GPU needed)"
)]
fn the_other_instruction_paths_compile_for_sm90() {
    use qdsl_core::dsl::mma::MmaTile;
    let tc = nvrtc::Toolchain::load();
    let v = |m, input, tile_k, warps, stages| MmaVariant {
        m,
        n: m,
        input,
        tile_k,
        warps,
        stages,
    };
    for (k, program) in [
        ExplicitBf16x3::program(&v(32, Input::F32, 32, 4, 1)),
        ScaledF16::program(&v(32, Input::F64, 64, 4, 3)),
        ScaledF16Ldmatrix::program(&v(16, Input::F32, 32, 2, 1)),
    ]
    .into_iter()
    .enumerate()
    {
        let p = program.unwrap();
        let entries: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
        let reports =
            tc.compile_checked(&p.source, &format!("mma_path_{k}"), "sm_90", &entries, true);
        assert_eq!(reports.len(), 2, "{}", p.name);
    }
}

#[test]
fn f16_with_block_scaling_keeps_values_far_outside_its_range() {
    // 1e7 overflows f16 (65504); the block's power-of-two scale brings each tile into
    // range and the result back, within f16's bound.
    use qdsl_core::dsl::mma::MmaTile;
    let v = MmaVariant {
        m: 32,
        n: 32,
        input: Input::F64,
        tile_k: 64,
        warps: 4,
        stages: 3,
    };
    let k = 128;
    let big: Vec<f64> = vectors(32, k / 2, 7)
        .iter()
        .flat_map(|z| [z.re * 1e7, z.im * 1e7])
        .collect();
    let b: Vec<f64> = vectors(32, k / 2, 8)
        .iter()
        .flat_map(|z| [z.re, z.im])
        .collect();
    let got = ScaledF16::inner_cpu(&v, &big, &b, k).unwrap();
    let bound = mma::cpu::error_bound(&ScaledF16::spec(), Input::F64, 64, k);
    for i in 0..32 {
        for j in 0..32 {
            let (mut c, mut mag) = (0.0, 0.0);
            for q in 0..k {
                c += big[i * k + q] * b[j * k + q];
                mag += (big[i * k + q] * b[j * k + q]).abs();
            }
            let e = (got[i * 32 + j] - c).abs();
            assert!(e <= bound * mag, "({i}, {j}): {} vs {c}", got[i * 32 + j]);
        }
    }
}

/// The batched V†UV tiles (2N_c = 48, DMMA and 3×BF16) compile with NVRTC for sm_90,
/// both kernels present, without spills; their CPU paths give each product within the
/// mode's bound of the plain f64 product.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs the CUDA toolchain (NVRTC + ptxas; no GPU needed)"
)]
fn batched_vuv_tiles_compile_for_sm90() {
    use qdsl_core::dsl::mma::MmaTile;
    let tc = nvrtc::Toolchain::load();
    let v = |input, tile_k, warps, stages| MmaVariant {
        m: 48,
        n: 48,
        input,
        tile_k,
        warps,
        stages,
    };
    for (k, program) in [
        CoarseVuvF64::program(&v(Input::F64, 32, 4, 2)),
        CoarseVuvF64::program(&v(Input::F64, 16, 8, 3)),
        CoarseVuvBf16x3::program(&v(Input::F32, 64, 12, 2)),
        CoarseVuvBf16x3::program(&v(Input::F32, 32, 6, 3)),
    ]
    .into_iter()
    .enumerate()
    {
        let p = program.unwrap();
        let entries: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
        let reports = tc.compile_checked(
            &p.source,
            &format!("coarse_vuv_{k}"),
            "sm_90",
            &entries,
            true,
        );
        assert_eq!(reports.len(), 2, "{}", p.name);
    }
}

/// The batched V†UV tiles' CPU paths (what the tensor core rounds emulated): each of 3
/// products against the plain f64 complex product of its own rows, within the mode's
/// bound (f64 DMMA and 3×BF16).
#[test]
fn batched_vuv_tiles_are_each_products_inner_product() {
    use qdsl_core::dsl::mma::MmaTile;
    let (len, batches) = (64, 3);
    type Batched = fn(&MmaVariant, &[f64], &[f64], usize, usize) -> Result<Vec<f64>, DslError>;
    let cases: [(mma::MmaSpec, Batched, Input, usize); 2] = [
        (
            CoarseVuvF64::spec(),
            CoarseVuvF64::batched_inner_cpu,
            Input::F64,
            32,
        ),
        (
            CoarseVuvBf16x3::spec(),
            CoarseVuvBf16x3::batched_inner_cpu,
            Input::F32,
            64,
        ),
    ];
    for (spec, run, input, tile_k) in cases {
        let v = MmaVariant {
            m: 48,
            n: 48,
            input,
            tile_k,
            warps: 12,
            stages: 2,
        };
        let a = vectors(batches * 48, len, 31);
        let b = vectors(batches * 48, len, 32);
        let reals = |x: &[Complex<f64>]| x.iter().flat_map(|z| [z.re, z.im]).collect::<Vec<_>>();
        let got = run(&v, &reals(&a), &reals(&b), 2 * len, batches).unwrap();
        // Re and Im each a real sum bounded by √2 Σ|a||b| (as for the block inner products).
        let bound = mma::cpu::error_bound(&spec, input, tile_k, 2 * len) * std::f64::consts::SQRT_2;
        for p in 0..batches {
            let (c, mag) = reference(&a[p * 48 * len..], &b[p * 48 * len..], 48, 48, len);
            let g: Vec<Complex<f64>> = got[p * 48 * 48 * 2..(p + 1) * 48 * 48 * 2]
                .chunks(2)
                .map(|z| Complex::new(z[0], z[1]))
                .collect();
            let e = relative_error(&g, &c, &mag);
            assert!(e <= bound, "{} product {p}: {e:e} > {bound:e}", spec.name);
        }
    }
}

/// y_j(x) + Σ_i x_i(x) A_ij in f64 the textbook way, and per real part the magnitude
/// Σ_i (|Re x_i| + |Im x_i|)(|Re A_ij| + |Im A_ij|) bounding Σ_k |X_k| |B_kc|.
fn axpy_reference(
    x: &[Complex<f64>],
    a: &[Complex<f64>],
    y: &[Complex<f64>],
    (m, n, len): (usize, usize, usize),
) -> (Vec<Complex<f64>>, Vec<f64>) {
    let mut out = y.to_vec();
    let mut mag = vec![0.0; n * len];
    for j in 0..n {
        for p in 0..len {
            for i in 0..m {
                let (xi, aij) = (x[i * len + p], a[i * n + j]);
                out[j * len + p] += xi * aij;
                mag[j * len + p] += (xi.re.abs() + xi.im.abs()) * (aij.re.abs() + aij.im.abs());
            }
        }
    }
    (out, mag)
}

/// The block axpy's CPU path (tensor-core rounding emulated) in every mode against the
/// plain f64 y + X A, within the mode's bound ε Σ|X||B| + u |ŷ| (m, n of 16 and 64, f32
/// and f64 vectors), and 3×BF16 and 3×TF32 far below plain bf16's error (so the bound
/// is not vacuous for the split modes).
#[test]
fn block_axpy_cpu_path_is_within_its_bound() {
    let len = 40;
    for (m, n) in [(16, 16), (64, 16), (16, 64)] {
        let x = vectors(m, len, 51);
        let a = vectors(m, n, 52);
        let y0 = vectors(n, len, 53);
        let (want, mag) = axpy_reference(&x, &a, &y0, (m, n, len));
        let mut errors = Vec::new();
        for mode in BlockBlasMode::ALL {
            for input in [Input::F64, Input::F32] {
                let v = mode.default_axpy_variant(m, n, input).unwrap();
                let (eps, u) = mode.axpy_error_bound(input, m);
                // Vectors as stored in `input` (the reference takes the same values).
                let conv = |z: &Complex<f64>| match input {
                    Input::F32 => Complex::new(z.re as f32 as f64, z.im as f32 as f64),
                    Input::F64 => *z,
                };
                let xs: Vec<_> = x.iter().map(conv).collect();
                let ys: Vec<_> = y0.iter().map(conv).collect();
                let (want_s, mag_s) = axpy_reference(&xs, &a, &ys, (m, n, len));
                let mut y = ys.clone();
                qdsl_kernels::block_blas::block_axpy_cpu(mode, &v, &xs, &a, &mut y, len).unwrap();
                let mut worst: f64 = 0.0;
                for e in 0..n * len {
                    let d = y[e] - want_s[e];
                    let bound = eps * mag_s[e] + u * (y[e].re.abs().max(y[e].im.abs()));
                    worst = worst.max(d.re.abs().max(d.im.abs()) / bound);
                }
                assert!(
                    worst <= 1.0,
                    "{} {input:?} {m}×{n}: {worst} of the bound",
                    mode.name()
                );
                if input == Input::F64 {
                    let rel = (0..n * len)
                        .map(|e| {
                            let d = y[e] - want[e];
                            d.re.abs().max(d.im.abs()) / mag[e]
                        })
                        .fold(0.0, f64::max);
                    errors.push((mode, rel));
                }
            }
        }
        let err = |m: BlockBlasMode| errors.iter().find(|(k, _)| *k == m).unwrap().1;
        assert!(
            err(BlockBlasMode::Bf16) > 1e-4,
            "bf16 {:e}",
            err(BlockBlasMode::Bf16)
        );
        assert!(
            err(BlockBlasMode::Bf16x3) < 1e-4,
            "3×BF16 {:e}",
            err(BlockBlasMode::Bf16x3)
        );
        assert!(
            err(BlockBlasMode::Tf32x3) < 1e-6,
            "3×TF32 {:e}",
            err(BlockBlasMode::Tf32x3)
        );
        assert!(
            err(BlockBlasMode::F64) < 1e-14,
            "DMMA {:e}",
            err(BlockBlasMode::F64)
        );
        assert!(
            err(BlockBlasMode::F32Simt) < 1e-6,
            "f32 SIMT {:e}",
            err(BlockBlasMode::F32Simt)
        );
    }
}

/// The f32 SIMT block axpy's CPU path is the kernel's summation written out: per
/// component and real column c, acc = fmaf(X_k, B_kc, acc) for k = 0 … 2m − 1 in f32
/// (X, B rounded to f32), then y ← y + acc in the vectors' precision — here by hand, bit
/// for bit.
#[test]
fn f32_simt_block_axpy_is_one_fma_chain_per_output() {
    let (m, n, len) = (32, 16, 24);
    let mode = BlockBlasMode::F32Simt;
    let x = vectors(m, len, 61);
    let a = vectors(m, n, 62);
    let y0 = vectors(n, len, 63);
    let v = mode.default_axpy_variant(m, n, Input::F64).unwrap();
    let mut y = y0.clone();
    qdsl_kernels::block_blas::block_axpy_cpu(mode, &v, &x, &a, &mut y, len).unwrap();
    for j in 0..n {
        for p in 0..len {
            let (mut re, mut im) = (0.0f32, 0.0f32);
            for i in 0..m {
                let (xi, aij) = (x[i * len + p], a[i * n + j]);
                // Row 2i: (Re A, Im A); row 2i + 1: (−Im A, Re A).
                re = (xi.re as f32).mul_add(aij.re as f32, re);
                im = (xi.re as f32).mul_add(aij.im as f32, im);
                re = (xi.im as f32).mul_add(-aij.im as f32, re);
                im = (xi.im as f32).mul_add(aij.re as f32, im);
            }
            let want = y0[j * len + p] + Complex::new(f64::from(re), f64::from(im));
            assert_eq!(y[j * len + p], want, "y_{j}({p})");
        }
    }
}

/// The generated CUDA of the f32 SIMT kernels, reviewed: the block inner product's tile
/// and reduce kernels for 64 × 64 f32 vectors (one 4 × 8 tile per thread) and 16 × 16 f64
/// vectors (4 × 4 tiles, 8 thread groups splitting each k-tile), and the block axpy for
/// 64 × 64 f32 vectors.
#[test]
fn f32_simt_sources_are_as_reviewed() {
    let mode = BlockBlasMode::F32Simt;
    let dot = |m, input| {
        let v = mode.default_variant(m, m, input).unwrap();
        mode.program(&v).unwrap().source
    };
    insta::assert_snapshot!("block_dot_f32_simt_m64_f32", dot(64, Input::F32));
    insta::assert_snapshot!("block_dot_f32_simt_m16_f64", dot(16, Input::F64));
    let v = mode.default_axpy_variant(64, 64, Input::F32).unwrap();
    insta::assert_snapshot!(
        "block_axpy_f32_simt_m64_f32",
        mode.axpy_program(&v).unwrap().source
    );
}

/// Every block-axpy variant of the catalog (modes, m and n of 16, 32, 64, f32 and f64
/// vectors) compiles with NVRTC for sm_90 without spills; the registers are printed.
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs the CUDA toolchain (NVRTC + ptxas; no GPU needed)"
)]
fn block_axpy_kernels_compile_for_sm90_without_spills() {
    let tc = nvrtc::Toolchain::load();
    for mode in BlockBlasMode::ALL {
        for (m, n) in [(16, 16), (32, 32), (64, 64), (64, 16), (16, 64)] {
            for input in [Input::F32, Input::F64] {
                let v = mode.default_axpy_variant(m, n, input).unwrap();
                let p = mode.axpy_program(&v).unwrap();
                let entries: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
                let reports = tc.compile_checked(&p.source, &p.name, "sm_90", &entries, true);
                println!("{} {m}×{n} {input:?}: {reports:?}", mode.axpy_kernel_name());
            }
        }
    }
}
