//! Reproducible parallel reductions.
//!
//! A parallel sum whose combination order depends on the thread schedule gives different
//! last bits from run to run. Every global sum in qdsl (norms, inner products, plaquettes,
//! traces) goes through [`ordered_sum`] instead: the index range is cut into fixed chunks
//! of [`REDUCTION_CHUNK`] items, each chunk is summed sequentially (chunks in parallel),
//! and the chunk sums are added in chunk order. The result is the same bits for any
//! number of threads, which is what lets a file written twice come out byte-identical.

use rayon::prelude::*;
use std::iter::Sum;
use std::ops::Range;

/// Number of items summed sequentially per chunk by [`ordered_sum`].
pub const REDUCTION_CHUNK: usize = 4096;

/// Σ_k f(range_k) over the chunks range_k = [k C, min((k+1) C, len)), C =
/// [`REDUCTION_CHUNK`]: the chunks evaluated in parallel, their results added in order.
pub fn ordered_sum<S>(len: usize, f: impl Fn(Range<usize>) -> S + Sync + Send) -> S
where
    S: Send + Sum<S>,
{
    let partial: Vec<S> = (0..len.div_ceil(REDUCTION_CHUNK))
        .into_par_iter()
        .map(|k| f(k * REDUCTION_CHUNK..len.min((k + 1) * REDUCTION_CHUNK)))
        .collect();
    partial.into_iter().sum()
}

/// Σ_i f(i) for i in 0..len, in the fixed order of [`ordered_sum`].
pub fn ordered_sum_by_index<S>(len: usize, f: impl Fn(usize) -> S + Sync + Send) -> S
where
    S: Send + Sum<S>,
{
    ordered_sum(len, |range| range.map(&f).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bits_for_any_thread_count() {
        // Terms of wildly different magnitude make the sum order-sensitive.
        let term = |i: usize| ((i * 7919) % 1000) as f64 * 10f64.powi((i % 17) as i32 - 8);
        let n = 10 * REDUCTION_CHUNK + 123;
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| ordered_sum_by_index(n, term))
        };
        let one = run(1);
        assert_eq!(one.to_bits(), run(2).to_bits());
        assert_eq!(one.to_bits(), run(5).to_bits());
        let serial: f64 = (0..n).map(term).sum::<f64>();
        assert!((one - serial).abs() <= 1e-12 * serial.abs());
    }
}
