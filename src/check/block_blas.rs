//! `qdsl check` rows of the tensor-core block inner products (`mma_tile!`): for each mode
//! (f64 DMMA, 3×TF32, bf16, 3×BF16), 16, 32 and 64 vectors per set and f32 and f64
//! vectors, c_ij = ⟨a_i, b_j⟩ of random spinor fields on the check lattice on the GPU
//! against the CPU path of the same variant (which emulates the tensor core's rounding).
//! The error is max_ij |ĉ_ij − c_ij| / Σ_x |a_i(x)| |b_j(x)| (real and imaginary parts
//! apart), the bound twice the mode's ([`BlockBlasMode::error_bound`], √2 for the
//! complex parts): GPU and CPU are each within the mode's bound of the exact value.
//! The block-axpy rows (`block_axpy_<mode>`) likewise: [`check_block_axpy`].

use super::report::{CheckRow, Outcome};
use qdsl_core::dsl::mma::Input;
use qdsl_core::Complex;
use qdsl_kernels::block_blas::random_vectors as vectors;
use qdsl_kernels::block_blas::{block_axpy_cpu, block_inner_cpu, BlockBlasMode};
use qdsl_runtime::device::block_blas::{block_inner, BlockAxpy, VectorReal, VectorSet};
use qdsl_runtime::device::Gpu;

/// Complex components per site of a Wilson spinor.
const COMPONENTS: usize = 12;

/// The rows for spinor fields of `sites` sites, for the modes whose name passes `wanted`.
pub fn check_block_dot(
    gpu: &Gpu,
    sites: usize,
    seed: u64,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let len = sites * COMPONENTS;
    for mode in BlockBlasMode::ALL
        .into_iter()
        .filter(|m| wanted(m.kernel_name()))
    {
        for n in [16, 32, 64] {
            let (a, b) = (vectors(n, len, seed + 1), vectors(n, len, seed + 2));
            for input in [Input::F32, Input::F64] {
                let outcome = match input {
                    Input::F32 => compare::<f32>(gpu, mode, &a, &b, n, len, |x| x as f32),
                    Input::F64 => compare::<f64>(gpu, mode, &a, &b, n, len, |x| x),
                };
                let variant = mode
                    .default_variant(n, n, input)
                    .map_or_else(|e| e.to_string(), |v| v.canonical());
                rows.push(CheckRow {
                    kernel: mode.kernel_name().into(),
                    variant,
                    data: "random".into(),
                    outcome,
                });
            }
        }
    }
    rows
}

fn compare<T: VectorReal>(
    gpu: &Gpu,
    mode: BlockBlasMode,
    a: &[Complex<f64>],
    b: &[Complex<f64>],
    n: usize,
    len: usize,
    conv: fn(f64) -> T,
) -> Outcome {
    let v = match mode.default_variant(n, n, T::INPUT) {
        Ok(v) => v,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    if !(2 * len).is_multiple_of(v.tile_k) {
        return Outcome::Skipped(format!(
            "vectors of {} reals are not whole tiles of {}",
            2 * len,
            v.tile_k
        ));
    }
    let cpu = match block_inner_cpu(mode, &v, a, b, len) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let upload = |x: &[Complex<f64>]| {
        let reals: Vec<T> = x.iter().flat_map(|z| [conv(z.re), conv(z.im)]).collect();
        gpu.backend().stream().clone_htod(&reals)
    };
    let (da, db) = match (upload(a), upload(b)) {
        (Ok(da), Ok(db)) => (da, db),
        (Err(e), _) | (_, Err(e)) => return Outcome::Failed(e.to_string()),
    };
    let set = |values| VectorSet {
        values,
        count: n,
        len,
        stride: 2 * len,
    };
    let got = match block_inner(gpu, None, mode, set(&da), set(&db)) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let mut error: f64 = 0.0;
    for i in 0..n {
        for j in 0..n {
            let mag: f64 = (0..len)
                .map(|x| a[i * len + x].norm() * b[j * len + x].norm())
                .sum();
            let d = got[i * n + j] - cpu[i * n + j];
            error = error.max(d.re.abs().max(d.im.abs()) / mag);
        }
    }
    Outcome::Compared {
        error,
        bound: 2.0 * mode.error_bound(&v, len) * std::f64::consts::SQRT_2,
    }
}

/// The block-axpy rows (`block_axpy_<mode>`): y_j += Σ_i x_i A_ij for n = m = 16, 32, 64
/// spinor fields of `sites` sites, f32 and f64 vectors, on the GPU against the CPU path
/// of the same variant; the error is the worst entry's |ŷ_GPU − ŷ_CPU| as a fraction
/// of twice the mode's bound ε Σ|X||B| + u |ŷ| (bound 1).
pub fn check_block_axpy(
    gpu: &Gpu,
    sites: usize,
    seed: u64,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let len = sites * COMPONENTS;
    for mode in BlockBlasMode::ALL
        .into_iter()
        .filter(|m| wanted(m.axpy_kernel_name()))
    {
        for n in [16, 32, 64] {
            let (x, a, y) = (
                vectors(n, len, seed + 3),
                vectors(n, n, seed + 4),
                vectors(n, len, seed + 5),
            );
            for input in [Input::F32, Input::F64] {
                let outcome = match input {
                    Input::F32 => {
                        axpy::<f32>(gpu, mode, (&x, &a, &y), n, len, (|v| v as f32, f64::from))
                    }
                    Input::F64 => axpy::<f64>(gpu, mode, (&x, &a, &y), n, len, (|v| v, |v| v)),
                };
                let variant = mode
                    .default_axpy_variant(n, n, input)
                    .map_or_else(|e| e.to_string(), |v| v.canonical());
                rows.push(CheckRow {
                    kernel: mode.axpy_kernel_name().into(),
                    variant,
                    data: "random".into(),
                    outcome,
                });
            }
        }
    }
    rows
}

type Operands<'a> = (&'a [Complex<f64>], &'a [Complex<f64>], &'a [Complex<f64>]);

/// How a vector type is written from and read back as f64.
type Conversions<T> = (fn(f64) -> T, fn(T) -> f64);

fn axpy<T: VectorReal>(
    gpu: &Gpu,
    mode: BlockBlasMode,
    (x, a, y0): Operands<'_>,
    n: usize,
    len: usize,
    (conv, back): Conversions<T>,
) -> Outcome {
    let stored = |v: &[Complex<f64>]| -> Vec<Complex<f64>> {
        v.iter()
            .map(|z| Complex::new(back(conv(z.re)), back(conv(z.im))))
            .collect()
    };
    let (xs, ys) = (stored(x), stored(y0));
    let v = match mode.default_axpy_variant(n, n, T::INPUT) {
        Ok(v) => v,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let mut cpu = ys.clone();
    if let Err(e) = block_axpy_cpu(mode, &v, &xs, a, &mut cpu, len) {
        return Outcome::Failed(e.to_string());
    }
    let upload = |v: &[Complex<f64>]| {
        let reals: Vec<T> = v.iter().flat_map(|z| [conv(z.re), conv(z.im)]).collect();
        gpu.backend().stream().clone_htod(&reals)
    };
    let (dx, mut dy) = match (upload(&xs), upload(&ys)) {
        (Ok(dx), Ok(dy)) => (dx, dy),
        (Err(e), _) | (_, Err(e)) => return Outcome::Failed(e.to_string()),
    };
    let run = BlockAxpy::new::<T>(gpu, mode, (n, n, len), a).and_then(|op| {
        let set = VectorSet {
            values: &dx,
            count: n,
            len,
            stride: 2 * len,
        };
        op.queue(gpu, set, &mut dy, 2 * len)
    });
    if let Err(e) = run {
        return Outcome::Failed(e.to_string());
    }
    let got: Vec<T> = match gpu.backend().stream().clone_dtoh(&dy) {
        Ok(g) => g,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let (eps, u) = mode.axpy_error_bound(T::INPUT, n);
    let mut worst: f64 = 0.0;
    for j in 0..n {
        for p in 0..len {
            let e = j * len + p;
            let g = Complex::new(back(got[2 * e]), back(got[2 * e + 1]));
            let mag: f64 = (0..n)
                .map(|i| {
                    let (xi, aij) = (xs[i * len + p], a[i * n + j]);
                    (xi.re.abs() + xi.im.abs()) * (aij.re.abs() + aij.im.abs())
                })
                .sum();
            let bound = 2.0 * (eps * mag + u * g.re.abs().max(g.im.abs()));
            let d = g - cpu[e];
            worst = worst.max(d.re.abs().max(d.im.abs()) / bound);
        }
    }
    Outcome::Compared {
        error: worst,
        bound: 1.0,
    }
}
