//! What `qdsl check` reports: one row per (kernel or operator, variant, data), the
//! relative error of the GPU result against the CPU reference, and its bound.

use qdsl_core::dsl::variant::StorageFormat;
use qdsl_core::Complex;
use std::fmt::Write;

/// The factor c of the error bound c·u (u the unit round-off of the compute format):
/// the hop of one site sums 8 (Wilson) to 16 (improved staggered) terms, each a 3 × 3
/// product, in a different order and with FMA on the GPU, so the component-wise
/// rounding difference stays within a few tens of u; 64 leaves room without hiding a
/// wrong term (which gives O(1) errors).
pub const BOUND_FACTOR: f64 = 64.0;

/// The relative-error bound for results computed in `format`: 64·u with u = 2⁻⁵³ (f64
/// and packed30, computed in f64) or 2⁻²⁴ (f32 and the other narrow formats, computed in
/// f32).
pub fn bound(format: StorageFormat) -> f64 {
    let u = match format.compute() {
        StorageFormat::F64 => f64::EPSILON / 2.0,
        _ => f64::from(f32::EPSILON) / 2.0,
    };
    BOUND_FACTOR * u
}

/// ‖a − b‖/‖b‖ over all components (0 when both are zero, ∞ when only b is).
pub fn relative_error(a: &[Complex<f64>], b: &[Complex<f64>]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr()).sum();
    let norm: f64 = b.iter().map(|y| y.norm_sqr()).sum();
    if diff == 0.0 {
        0.0
    } else if norm == 0.0 {
        f64::INFINITY
    } else {
        (diff / norm).sqrt()
    }
}

/// The outcome of one comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Compared: relative error and its bound (passes when error ≤ bound and finite).
    Compared {
        /// ‖gpu − cpu‖/‖cpu‖.
        error: f64,
        /// The format's bound.
        bound: f64,
    },
    /// Not run on the device, with the reason (e.g. a format the emitter lacks).
    Skipped(String),
    /// The device run failed with this error.
    Failed(String),
}

impl Outcome {
    /// Whether the row is a failure (an error above its bound, NaN, or a run error).
    pub fn is_failure(&self) -> bool {
        match self {
            Outcome::Compared { error, bound } => error.is_nan() || error > bound,
            Outcome::Skipped(_) => false,
            Outcome::Failed(_) => true,
        }
    }
}

/// One row of the check table.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckRow {
    /// Kernel or operator name.
    pub kernel: String,
    /// The variant's canonical string (or the operator's settings).
    pub variant: String,
    /// The data: `random` or a configuration file name.
    pub data: String,
    /// The result.
    pub outcome: Outcome,
}

/// The table: kernel, variant, data, relative error, bound, pass/FAIL/skip, then a
/// summary line.
pub fn render(rows: &[CheckRow]) -> String {
    let w_kernel = rows
        .iter()
        .map(|r| r.kernel.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let w_variant = rows
        .iter()
        .map(|r| r.variant.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let w_data = rows.iter().map(|r| r.data.len()).max().unwrap_or(4).max(4);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:w_kernel$}  {:w_variant$}  {:w_data$}  {:>10}  {:>9}  result",
        "kernel", "variant", "data", "rel. error", "bound"
    );
    for r in rows {
        let (err, bnd, res) = match &r.outcome {
            Outcome::Compared { error, bound } => (
                format!("{error:.3e}"),
                format!("{bound:.2e}"),
                if r.outcome.is_failure() {
                    "FAIL".to_string()
                } else {
                    "pass".to_string()
                },
            ),
            Outcome::Skipped(why) => ("-".into(), "-".into(), format!("skip: {why}")),
            Outcome::Failed(why) => ("-".into(), "-".into(), format!("FAIL: {why}")),
        };
        let _ = writeln!(
            s,
            "{:w_kernel$}  {:w_variant$}  {:w_data$}  {err:>10}  {bnd:>9}  {res}",
            r.kernel, r.variant, r.data
        );
    }
    let failures = rows.iter().filter(|r| r.outcome.is_failure()).count();
    let skipped = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Skipped(_)))
        .count();
    let _ = writeln!(
        s,
        "{} compared, {failures} failed, {skipped} skipped",
        rows.len() - skipped
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_64_unit_roundoffs() {
        assert_eq!(bound(StorageFormat::F64), 64.0 * 2f64.powi(-53));
        assert_eq!(bound(StorageFormat::F32), 64.0 * 2f64.powi(-24));
    }

    /// Hand-computed: b = (3, 4i) has norm 5; a − b = (0, 0.5i) has norm 0.5 → 0.1.
    #[test]
    fn relative_error_by_hand() {
        let b = [Complex::new(3.0, 0.0), Complex::new(0.0, 4.0)];
        let a = [Complex::new(3.0, 0.0), Complex::new(0.0, 4.5)];
        assert!((relative_error(&a, &b) - 0.1).abs() < 1e-15);
        assert_eq!(relative_error(&b, &b), 0.0);
        assert_eq!(
            relative_error(&a, &[Complex::new(0.0, 0.0); 2]),
            f64::INFINITY
        );
        assert_eq!(relative_error(&a[..1], &b), f64::INFINITY);
    }

    #[test]
    fn table_marks_failures_nan_and_skips() {
        let row = |k: &str, outcome| CheckRow {
            kernel: k.into(),
            variant: "v".into(),
            data: "random".into(),
            outcome,
        };
        let rows = vec![
            row(
                "ok",
                Outcome::Compared {
                    error: 1e-7,
                    bound: 3.8e-6,
                },
            ),
            row(
                "bad",
                Outcome::Compared {
                    error: 1e-3,
                    bound: 3.8e-6,
                },
            ),
            row(
                "nan",
                Outcome::Compared {
                    error: f64::NAN,
                    bound: 3.8e-6,
                },
            ),
            row("narrow", Outcome::Skipped("fixed16 not generated".into())),
            row("broken", Outcome::Failed("launch failed".into())),
        ];
        let failures: Vec<bool> = rows.iter().map(|r| r.outcome.is_failure()).collect();
        assert_eq!(failures, [false, true, true, false, true]);
        let t = render(&rows);
        assert!(t.lines().nth(1).unwrap().ends_with("pass"), "{t}");
        assert!(t.lines().nth(2).unwrap().ends_with("FAIL"), "{t}");
        assert!(t.contains("skip: fixed16 not generated"), "{t}");
        assert!(t.contains("FAIL: launch failed"), "{t}");
        assert!(
            t.trim_end().ends_with("4 compared, 3 failed, 1 skipped"),
            "{t}"
        );
    }
}
