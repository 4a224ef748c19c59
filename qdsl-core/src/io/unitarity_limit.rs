//! The default limit on ‖U†U − 1‖_F of the links read from a gauge file.
//!
//! A link written by another program carries the rounding errors of the arithmetic that
//! produced it since its last projection onto SU(3) (an HMC trajectory multiplies each
//! link by exp(iεP) at every molecular-dynamics step; smearing, gauge fixing and
//! conversions add more), then the rounding to the stored precision. With ε the machine
//! epsilon of the stored precision:
//!
//! * **per link**: n roundings of relative size ≤ ε, uncorrelated, add up like a random
//!   walk, so ‖U†U − 1‖_F ≈ ε √n. We allow n = [`ROUNDING_STEPS`] = 2¹⁶ operations
//!   (e.g. 100 molecular-dynamics steps of ~600 flops per link each), i.e. a factor
//!   √n = 256;
//! * **over the lattice**: the reader checks the largest deviation of all N = 4V links.
//!   The maximum of N independent Gaussian deviations of standard deviation σ exceeds σ
//!   by about √(2 ln N), so the limit grows logarithmically with the volume (a factor
//!   3.7 at 4⁴, 4.4 at 8⁴, 5.5 at 48³×96).
//!
//! Together: **limit = ε · √n · √(2 ln 4V)**. In f64 that is 2.1e−13 at 4⁴ and 2.5e−13 at
//! 8⁴ (a tmLQCD 8⁴ file at 6.5e−14 passes); in f32 1.1e−4 at 4⁴ and 1.3e−4 at 8⁴ (MILC's
//! single-precision samples reach 1e−7). A file decoded with the wrong byte order or
//! precision, or holding smeared (fat, long) links, deviates by O(0.1–1) and still
//! fails by orders of magnitude; `qdsl` takes `--unitarity-tol` to override the limit and
//! `--reunitarize` to project the links back instead.

use super::Precision;

/// The number of rounded operations per link assumed by [`unitarity_limit`] (2¹⁶).
pub const ROUNDING_STEPS: f64 = 65536.0;

/// The default limit on max ‖U†U − 1‖_F over the `links` links of a file stored at
/// `precision`: ε · √[`ROUNDING_STEPS`] · √(2 ln links) (see the module docs).
pub fn unitarity_limit(precision: Precision, links: usize) -> f64 {
    let extreme_value_factor = (2.0 * (links.max(2) as f64).ln()).sqrt();
    precision.epsilon() * ROUNDING_STEPS.sqrt() * extreme_value_factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_follows_the_formula_and_grows_slowly_with_the_volume() {
        let v8 = 4 * 8usize.pow(4);
        let expected = f64::EPSILON * 256.0 * (2.0 * (v8 as f64).ln()).sqrt();
        assert_eq!(unitarity_limit(Precision::Double, v8), expected);
        // The tmLQCD 8⁴ f64 file of issue 15 (6.5e-14) passes; 1e-12 does not.
        assert!(unitarity_limit(Precision::Double, v8) > 2.0e-13);
        assert!(unitarity_limit(Precision::Double, v8) < 1e-12);
        // f32: between MILC's samples (1e-7) and damaged links (1e-2).
        let f32_limit = unitarity_limit(Precision::Single, v8);
        assert!(f32_limit > 1e-5 && f32_limit < 1e-3, "{f32_limit}");
        // Logarithmic growth: 48³×96 allows only ~25% more than 8⁴.
        let big = 4 * 48usize.pow(3) * 96;
        let ratio =
            unitarity_limit(Precision::Double, big) / unitarity_limit(Precision::Double, v8);
        assert!(ratio > 1.1 && ratio < 1.4, "{ratio}");
        // Degenerate sizes stay finite and positive.
        assert!(unitarity_limit(Precision::Double, 0) > 0.0);
    }
}
