//! The CPU side of `qdsl bench`: the generated Rust of the hop kernels (rayon over the
//! output sites of one parity) timed on the host, so that the CPU backend's speed is
//! measured the same way as the GPU's: median wall time over repeated applications after
//! warm-up, GFLOP/s with the standard flop counts (Wilson hop 1320, improved staggered
//! 1146 per site).

use qdsl_core::dsl::variant::{OutputSites, StorageFormat};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::Real;
use qdsl_kernels::{ImprovedStaggeredHop, WilsonHop};
use std::time::Instant;

/// A kernel the CPU bench times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CpuKernel {
    WilsonHop,
    ImprovedStaggeredHop,
}

/// One measured case.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuBenchRow {
    /// `<kernel> <precision>`.
    pub label: String,
    /// The lattice extent L of the L⁴ lattice.
    pub extent: usize,
    /// Rayon threads used.
    pub threads: usize,
    /// Median time of one application (µs).
    pub median_us: f64,
    /// GFLOP/s at the kernel's standard flop count per output site.
    pub gflops: f64,
}

/// The cases: Wilson hop f32/f64 and improved staggered f32, recon 18, even output.
const CASES: [(CpuKernel, StorageFormat); 3] = [
    (CpuKernel::WilsonHop, StorageFormat::F32),
    (CpuKernel::WilsonHop, StorageFormat::F64),
    (CpuKernel::ImprovedStaggeredHop, StorageFormat::F32),
];

fn label(kernel: CpuKernel, format: StorageFormat) -> String {
    let name = match kernel {
        CpuKernel::WilsonHop => "wilson_hop",
        CpuKernel::ImprovedStaggeredHop => "improved_staggered_hop",
    };
    format!("{name} {} (CPU)", format.name())
}

/// The median of `times` (µs); `times` is not empty.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Times `apply` `warmup + reps` times and returns the median of the last `reps` (µs).
fn time_median(warmup: usize, reps: usize, mut apply: impl FnMut()) -> f64 {
    for _ in 0..warmup {
        apply();
    }
    let times = (0..reps.max(1))
        .map(|_| {
            let start = Instant::now();
            apply();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    median(times)
}

/// Median µs of one even-parity application of `kernel` in precision `T` on random
/// fields of `lat` (an error only if the kernel rejects its fields).
fn time_case<T: Real>(
    kernel: CpuKernel,
    format: StorageFormat,
    lat: Lattice,
    warmup: usize,
    reps: usize,
) -> Result<f64, String> {
    let variant = Variant {
        sites: OutputSites::Parity(Parity::Even),
        spinor: format,
        gauge: format,
        ..Variant::default()
    };
    let u = GaugeField::<f64>::random(lat, 11).cast::<T>();
    let mut result = Ok(());
    let us = match kernel {
        CpuKernel::WilsonHop => {
            let layout = |p| SpinorLayout::wilson(lat, SiteSubset::Single(p));
            let src = ColourSpinorField::<f64>::gaussian(layout(Parity::Odd), 3).cast::<T>();
            let mut out = ColourSpinorField::<T>::zeros(layout(Parity::Even));
            time_median(warmup, reps, || {
                if let Err(e) = WilsonHop.apply_cpu(&variant, &mut out, &src, &u, None) {
                    result = Err(e.to_string());
                }
            })
        }
        CpuKernel::ImprovedStaggeredHop => {
            let layout = |p| SpinorLayout::staggered(lat, SiteSubset::Single(p));
            let src = ColourSpinorField::<f64>::gaussian(layout(Parity::Odd), 3).cast::<T>();
            let mut out = ColourSpinorField::<T>::zeros(layout(Parity::Even));
            let long = GaugeField::<f64>::random(lat, 12).cast::<T>();
            time_median(warmup, reps, || {
                if let Err(e) =
                    ImprovedStaggeredHop.apply_cpu(&variant, &mut out, &src, &u, &long, None)
                {
                    result = Err(e.to_string());
                }
            })
        }
    };
    result.map(|()| us)
}

fn flops_per_site(kernel: CpuKernel) -> Result<usize, String> {
    let v = Variant::default();
    let info = match kernel {
        CpuKernel::WilsonHop => WilsonHop::info(&v),
        CpuKernel::ImprovedStaggeredHop => ImprovedStaggeredHop::info(&v),
    };
    info.map(|i| i.flops_per_site).map_err(|e| e.to_string())
}

/// Times every CPU case whose label contains `filter` on each L⁴ of `extents`:
/// `warmup` untimed and `reps` timed applications each; `progress` gets one line per case.
pub fn run_cpu_bench(
    extents: &[usize],
    filter: Option<&str>,
    warmup: usize,
    reps: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<CpuBenchRow>, String> {
    let mut rows = Vec::new();
    for &l in extents {
        let lat = Lattice::new([l; 4]).map_err(|e| format!("lattice {l}⁴: {e}"))?;
        for (kernel, format) in CASES {
            let label = label(kernel, format);
            if filter.is_some_and(|f| !label.contains(f)) {
                continue;
            }
            let us = match format {
                StorageFormat::F64 => time_case::<f64>(kernel, format, lat, warmup, reps)?,
                _ => time_case::<f32>(kernel, format, lat, warmup, reps)?,
            };
            let flops = (flops_per_site(kernel)? * lat.half_volume()) as f64;
            let row = CpuBenchRow {
                label,
                extent: l,
                threads: rayon::current_num_threads(),
                median_us: us,
                gflops: flops / (us * 1e3),
            };
            progress(&format!("{} {l}⁴: {:.1} µs", row.label, row.median_us));
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The rows as a JSON array of objects (label, extent, threads, median_us, gflops).
pub fn cpu_json(rows: &[CpuBenchRow]) -> serde_json::Value {
    rows.iter()
        .map(|r| {
            serde_json::json!({
                "label": r.label,
                "extent": r.extent,
                "threads": r.threads,
                "median_us": r.median_us,
                "gflops": r.gflops,
            })
        })
        .collect()
}

/// The table of CPU rows.
pub fn render_cpu(rows: &[CpuBenchRow]) -> String {
    let mut s = format!(
        "{:<36} {:>4} {:>8} {:>12} {:>9}\n",
        "case", "L", "threads", "time µs", "GFLOP/s"
    );
    for r in rows {
        s += &format!(
            "{:<36} {:>4} {:>8} {:>12.1} {:>9.2}\n",
            r.label, r.extent, r.threads, r.median_us, r.gflops
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median of an odd and an even count (the upper middle), unordered input.
    #[test]
    fn median_of_unordered_times() {
        assert_eq!(median(vec![5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    /// A 4⁴ run times both Wilson precisions and the staggered case, with the standard
    /// flop counts: GFLOP/s = flops · V/2 / time.
    #[test]
    fn a_small_run_reports_every_case_with_standard_flops() {
        let rows = run_cpu_bench(&[4], None, 0, 1, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(flops_per_site(CpuKernel::WilsonHop).unwrap(), 1320);
        assert_eq!(
            flops_per_site(CpuKernel::ImprovedStaggeredHop).unwrap(),
            1146
        );
        for r in &rows {
            let per_site = if r.label.starts_with("wilson") {
                1320.0
            } else {
                1146.0
            };
            let want = per_site * 128.0 / (r.median_us * 1e3);
            assert!((r.gflops - want).abs() <= 1e-9 * want, "{r:?}");
        }
        let only = run_cpu_bench(&[4], Some("f64"), 0, 1, &mut |_| {}).unwrap();
        assert_eq!(only.len(), 1);
        assert!(render_cpu(&only).contains("wilson_hop f64 (CPU)"));
    }
}
