//! Errors of Markov-chain averages: binning and the integrated autocorrelation time.

/// A Monte Carlo time series (one measurement per sweep or trajectory).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    values: Vec<f64>,
}

/// The integrated autocorrelation time of a series and the error it implies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Autocorrelation {
    /// τ_int = 1/2 + Σ_{t=1}^{W} ρ(t) (1/2 for uncorrelated data).
    pub tau_int: f64,
    /// The summation window W.
    pub window: usize,
    /// The error of the mean, √(2 τ_int σ² / N).
    pub error: f64,
}

/// Sokal's window factor: the sum stops at the first W ≥ c · τ_int(W).
const WINDOW_FACTOR: f64 = 6.0;

impl Series {
    /// A series of the given values.
    pub fn new(values: Vec<f64>) -> Self {
        Self { values }
    }

    /// Appends a measurement.
    pub fn push(&mut self, x: f64) {
        self.values.push(x);
    }

    /// The measurements.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The number of measurements.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The mean x̄ (NaN for an empty series).
    pub fn mean(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.values.len() as f64
    }

    /// The error of the mean from bins of `bin` consecutive values (a partial last bin
    /// dropped): √(Σ_b (B_b − B̄)² / (n_b (n_b − 1))) over the n_b bin means B_b. For
    /// bins much longer than the autocorrelation time the bin means are independent.
    /// NaN with fewer than two bins.
    pub fn binned_error(&self, bin: usize) -> f64 {
        let bins: Vec<f64> = self
            .values
            .chunks_exact(bin.max(1))
            .map(|c| c.iter().sum::<f64>() / c.len() as f64)
            .collect();
        let n = bins.len() as f64;
        let mean = bins.iter().sum::<f64>() / n;
        let var = bins.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt()
    }

    /// The normalised autocorrelation ρ(t) = Γ(t)/Γ(0),
    /// Γ(t) = (1/(N − t)) Σ_i (x_i − x̄)(x_{i+t} − x̄).
    pub fn autocorrelation(&self, t: usize) -> f64 {
        let n = self.values.len();
        let mean = self.mean();
        let gamma = |t: usize| {
            (0..n - t)
                .map(|i| (self.values[i] - mean) * (self.values[i + t] - mean))
                .sum::<f64>()
                / (n - t) as f64
        };
        gamma(t) / gamma(0)
    }

    /// τ_int with Sokal's automatic window (Madras and Sokal, J. Stat. Phys. 50 (1988)
    /// 109): τ_int(W) = 1/2 + Σ_{t=1}^{W} ρ(t), W the first window with W ≥ 6 τ_int(W)
    /// (at most N/2); the error of the mean √(2 τ_int Γ(0)/N). A constant series has
    /// τ_int = 1/2 and error 0.
    pub fn autocorrelation_time(&self) -> Autocorrelation {
        let n = self.values.len();
        let mean = self.mean();
        let gamma0 = self.values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        if gamma0 == 0.0 || n < 4 {
            return Autocorrelation {
                tau_int: 0.5,
                window: 0,
                error: (gamma0 / n as f64).sqrt(),
            };
        }
        let mut tau = 0.5;
        let mut window = 0;
        for w in 1..n / 2 {
            tau += self.autocorrelation(w);
            window = w;
            if w as f64 >= WINDOW_FACTOR * tau {
                break;
            }
        }
        let tau = tau.max(0.5);
        Autocorrelation {
            tau_int: tau,
            window,
            error: (2.0 * tau * gamma0 / n as f64).sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{RandomStream, StreamDomain};

    /// An AR(1) process x_{i+1} = a x_i + √(1 − a²) η_i has ρ(t) = aᵗ and
    /// τ_int = 1/2 + a/(1 − a) = (1 + a)/(2(1 − a)): 4.5 for a = 0.8 and 0.5 for a = 0.
    /// The estimate is within 15 % on 100,000 steps, and the binned error (bins of 200)
    /// agrees with the autocorrelation error within 15 %.
    #[test]
    fn ar1_process_has_its_analytic_autocorrelation_time() {
        for (a, expected) in [(0.8, 4.5), (0.0, 0.5)] {
            let mut s = RandomStream::new(5, StreamDomain::User(3), 0);
            let mut x = 0.0;
            let mut series = Series::default();
            for _ in 0..100_000 {
                x = a * x + (1.0f64 - a * a).sqrt() * s.gaussian_pair().0;
                series.push(x);
            }
            let ac = series.autocorrelation_time();
            assert!(
                (ac.tau_int / expected - 1.0).abs() < 0.15,
                "a {a}: tau {} vs {expected}",
                ac.tau_int
            );
            let binned = series.binned_error(200);
            assert!(
                (binned / ac.error - 1.0).abs() < 0.15,
                "{binned} {}",
                ac.error
            );
        }
    }
}
