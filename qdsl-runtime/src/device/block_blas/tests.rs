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
