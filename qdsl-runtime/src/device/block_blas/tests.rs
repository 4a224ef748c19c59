//! The block inner products on the GPU against the CPU path of the same variant (which
//! emulates the tensor core's rounding) and against a plain f64 product, within each
//! mode's bound. Need a GPU: ignored elsewhere (see `crate::testing`).

use super::*;
use crate::testing::gpu;
use qdsl_kernels::block_blas::random_vectors as vectors;

fn upload<T: VectorReal>(gpu: &Gpu, v: &[Complex<f64>], conv: fn(f64) -> T) -> CudaSlice<T> {
    let reals: Vec<T> = v.iter().flat_map(|z| [conv(z.re), conv(z.im)]).collect();
    gpu.backend().stream().clone_htod(&reals).expect("upload")
}

/// Runs every mode on `nvec` × `nvec` vectors of `len` components, input T, and checks
/// the GPU against the CPU path (within twice the mode's bound: both are within it of
/// the exact value) and against the plain f64 product.
fn check<T: VectorReal>(conv: fn(f64) -> T, nvec: usize, len: usize) {
    let (gpu, _dir) = gpu();
    let (a, b) = (vectors(nvec, len, 21), vectors(nvec, len, 22));
    let (da, db) = (upload(&gpu, &a, conv), upload(&gpu, &b, conv));
    let set = |values| VectorSet {
        values,
        count: nvec,
        len,
        stride: 2 * len,
    };
    for mode in BlockBlasMode::ALL {
        let got = block_inner(&gpu, None, mode, set(&da), set(&db)).unwrap();
        let v = mode.default_variant(nvec, nvec, T::INPUT).unwrap();
        let cpu = qdsl_kernels::block_blas::block_inner_cpu(mode, &v, &a, &b, len).unwrap();
        let bound = mode.error_bound(&v, len) * std::f64::consts::SQRT_2;
        for i in 0..nvec {
            for j in 0..nvec {
                let (mut exact, mut mag) = (Complex::new(0.0, 0.0), 0.0);
                for x in 0..len {
                    exact += a[i * len + x].conj() * b[j * len + x];
                    mag += a[i * len + x].norm() * b[j * len + x].norm();
                }
                let e = i * nvec + j;
                let worst = |d: Complex<f64>| d.re.abs().max(d.im.abs()) / mag;
                assert!(
                    worst(got[e] - exact) <= bound && worst(got[e] - cpu[e]) <= 2.0 * bound,
                    "{} {nvec}×{nvec}, {:?}, ({i}, {j}): GPU {} CPU {} exact {} (bound {bound:e})",
                    mode.name(),
                    T::INPUT,
                    got[e],
                    cpu[e],
                    exact
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn block_inner_products_agree_with_the_cpu_path_f32() {
    for nvec in [16, 32, 64] {
        check::<f32>(|x| x as f32, nvec, 4096);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn block_inner_products_agree_with_the_cpu_path_f64() {
    for nvec in [16, 32, 64] {
        check::<f64>(|x| x, nvec, 4096);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn the_result_does_not_depend_on_the_grid() {
    // The partials are added in block order: the same launch twice gives the same bits,
    // and a different grid agrees within the bound (the f32 tile sums are the same; the
    // f64 totals are added in another grouping).
    let (gpu, _dir) = gpu();
    let (nvec, len) = (16, 1 << 14);
    let a = vectors(nvec, len, 31);
    let da = upload(&gpu, &a, |x| x as f32);
    let set = VectorSet {
        values: &da,
        count: nvec,
        len,
        stride: 2 * len,
    };
    let mut op = BlockInner::new(&gpu, None, BlockBlasMode::Bf16x3, set, set).unwrap();
    op.queue(&gpu, set, set).unwrap();
    let first = op.result(&gpu).unwrap();
    op.queue(&gpu, set, set).unwrap();
    assert_eq!(first, op.result(&gpu).unwrap(), "two runs differ");
    op.launch.grid[0] = 64;
    op.queue(&gpu, set, set).unwrap();
    let other = op.result(&gpu).unwrap();
    for (x, y) in first.iter().zip(&other) {
        assert!((x - y).norm() <= 1e-9 * x.norm().max(1.0), "{x} vs {y}");
    }
}

/// The block axpy on the GPU against its CPU path (within twice the mode's bound: both
/// are within it of the exact value) for every mode, m × n of 16 × 16, 64 × 16 and
/// 16 × 64, f32 and f64 vectors.
#[test]
#[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
fn block_axpy_agrees_with_the_cpu_path() {
    let (gpu, _dir) = gpu();
    let len = 4100; // not a multiple of the warps' steps: the tail is guarded
    for (m, n) in [(16, 16), (64, 16), (16, 64)] {
        let (x, a, y0) = (vectors(m, len, 61), vectors(m, n, 62), vectors(n, len, 63));
        for mode in BlockBlasMode::ALL {
            axpy_case::<f32>(
                &gpu,
                mode,
                (&x, &a, &y0),
                (m, n, len),
                |v| v as f32,
                f64::from,
            );
            axpy_case::<f64>(&gpu, mode, (&x, &a, &y0), (m, n, len), |v| v, |v| v);
        }
    }
}

type Operands<'a> = (&'a [Complex<f64>], &'a [Complex<f64>], &'a [Complex<f64>]);

fn axpy_case<T: VectorReal>(
    gpu: &Gpu,
    mode: BlockBlasMode,
    (x, a, y0): Operands<'_>,
    (m, n, len): (usize, usize, usize),
    conv: fn(f64) -> T,
    back: fn(T) -> f64,
) {
    let stored = |v: &[Complex<f64>]| -> Vec<Complex<f64>> {
        v.iter()
            .map(|z| Complex::new(back(conv(z.re)), back(conv(z.im))))
            .collect()
    };
    let (xs, ys) = (stored(x), stored(y0));
    let dx = upload(gpu, &xs, conv);
    let mut dy = upload(gpu, &ys, conv);
    let op = BlockAxpy::new::<T>(gpu, mode, (m, n, len), a).unwrap();
    let set = VectorSet {
        values: &dx,
        count: m,
        len,
        stride: 2 * len,
    };
    op.queue(gpu, set, &mut dy, 2 * len).unwrap();
    let got: Vec<T> = gpu.backend().stream().clone_dtoh(&dy).unwrap();
    let v = mode.default_axpy_variant(m, n, T::INPUT).unwrap();
    let mut cpu = ys.clone();
    qdsl_kernels::block_blas::block_axpy_cpu(mode, &v, &xs, a, &mut cpu, len).unwrap();
    let (eps, u) = mode.axpy_error_bound(T::INPUT, m);
    for j in 0..n {
        for p in 0..len {
            let e = j * len + p;
            let g = Complex::new(back(got[2 * e]), back(got[2 * e + 1]));
            let mag: f64 = (0..m)
                .map(|i| {
                    let (xi, aij) = (xs[i * len + p], a[i * n + j]);
                    (xi.re.abs() + xi.im.abs()) * (aij.re.abs() + aij.im.abs())
                })
                .sum();
            let bound = 2.0 * (eps * mag + u * g.re.abs().max(g.im.abs()));
            let d = g - cpu[e];
            assert!(
                d.re.abs().max(d.im.abs()) <= bound,
                "{} {:?} {m}×{n} y_{j}({p}): GPU {g} CPU {} (bound {bound:e})",
                mode.name(),
                T::INPUT,
                cpu[e]
            );
        }
    }
}
