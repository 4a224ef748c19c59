//! The CPU side of `qdsl bench`: the generated Rust of the hop kernels (rayon over the
//! output sites of one parity) timed on the host, so that the CPU backend's speed is
//! measured the same way as the GPU's: median wall time over repeated applications after
//! warm-up, GFLOP/s with the standard flop counts (Wilson hop 1320, improved staggered
//! 1146 per site). The process's CPU time (user + system, all threads) over the timed
//! applications is reported too: on a machine shared with other work the wall time
//! measures the load, the rate per CPU-second the code (flops / CPU seconds; times the
//! thread count it is the rate an idle machine would give, if the threads scale).

use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat};
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
    /// Mean process CPU time (user + system, all threads) of one application (ms), where
    /// the platform reports it.
    pub cpu_ms: Option<f64>,
    /// GFLOP per CPU-second: flops / the CPU time of one application.
    pub gflops_per_cpu_s: Option<f64>,
}

/// Wall (median) and CPU (mean) time of one application.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Timing {
    median_us: f64,
    cpu_ms: Option<f64>,
}

/// The process's CPU time so far (user + system, all threads; seconds), where the
/// platform reports it.
fn process_cpu_seconds() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
        // SAFETY: getrusage writes a whole rusage into the pointer on success (0).
        let usage = unsafe {
            if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
                return None;
            }
            usage.assume_init()
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        Some(secs(usage.ru_utime) + secs(usage.ru_stime))
    }
    #[cfg(not(unix))]
    None
}

/// The cases, even output: the Wilson hop f32 with recon 12 and 18, f64 recon 18, and
/// the improved staggered hop f32 recon 18.
const CASES: [(CpuKernel, StorageFormat, Recon); 4] = [
    (CpuKernel::WilsonHop, StorageFormat::F32, Recon::R12),
    (CpuKernel::WilsonHop, StorageFormat::F32, Recon::R18),
    (CpuKernel::WilsonHop, StorageFormat::F64, Recon::R18),
    (
        CpuKernel::ImprovedStaggeredHop,
        StorageFormat::F32,
        Recon::R18,
    ),
];

fn label(kernel: CpuKernel, format: StorageFormat, recon: Recon) -> String {
    let name = match kernel {
        CpuKernel::WilsonHop => "wilson_hop",
        CpuKernel::ImprovedStaggeredHop => "improved_staggered_hop",
    };
    format!("{name} {} recon{} (CPU)", format.name(), recon.reals())
}

/// The median of `times` (µs); `times` is not empty.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Times `apply` `warmup + reps` times: the median wall time of the last `reps` (µs) and
/// their mean process CPU time (ms).
fn time_median(warmup: usize, reps: usize, mut apply: impl FnMut()) -> Timing {
    for _ in 0..warmup {
        apply();
    }
    let reps = reps.max(1);
    let cpu_start = process_cpu_seconds();
    let times = (0..reps)
        .map(|_| {
            let start = Instant::now();
            apply();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let cpu_ms = match (cpu_start, process_cpu_seconds()) {
        (Some(a), Some(b)) => Some((b - a) * 1e3 / reps as f64),
        _ => None,
    };
    Timing {
        median_us: median(times),
        cpu_ms,
    }
}

/// The timing of one even-parity application of `kernel` in precision `T` on random
/// fields of `lat` (an error only if the kernel rejects its fields).
fn time_case<T: Real>(
    (kernel, format, recon): (CpuKernel, StorageFormat, Recon),
    lat: Lattice,
    warmup: usize,
    reps: usize,
) -> Result<Timing, String> {
    let variant = Variant {
        sites: OutputSites::Parity(Parity::Even),
        spinor: format,
        gauge: format,
        recon,
        ..Variant::default()
    };
    let u = GaugeField::<f64>::random(lat, 11).cast::<T>();
    let mut result = Ok(());
    let timing = match kernel {
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
    result.map(|()| timing)
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
        for case @ (kernel, format, recon) in CASES {
            let label = label(kernel, format, recon);
            if filter.is_some_and(|f| !label.contains(f)) {
                continue;
            }
            let t = match format {
                StorageFormat::F64 => time_case::<f64>(case, lat, warmup, reps)?,
                _ => time_case::<f32>(case, lat, warmup, reps)?,
            };
            let flops = (flops_per_site(kernel)? * lat.half_volume()) as f64;
            let row = CpuBenchRow {
                label,
                extent: l,
                threads: rayon::current_num_threads(),
                median_us: t.median_us,
                gflops: flops / (t.median_us * 1e3),
                cpu_ms: t.cpu_ms,
                gflops_per_cpu_s: t.cpu_ms.filter(|&ms| ms > 0.0).map(|ms| flops / (ms * 1e6)),
            };
            progress(&format!("{} {l}⁴: {:.1} µs", row.label, row.median_us));
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The rows as a JSON array of objects (label, extent, threads, median_us, gflops,
/// cpu_ms, gflops_per_cpu_s; null where the CPU time is not available).
pub fn cpu_json(rows: &[CpuBenchRow]) -> serde_json::Value {
    rows.iter()
        .map(|r| {
            serde_json::json!({
                "label": r.label,
                "extent": r.extent,
                "threads": r.threads,
                "median_us": r.median_us,
                "gflops": r.gflops,
                "cpu_ms": r.cpu_ms,
                "gflops_per_cpu_s": r.gflops_per_cpu_s,
            })
        })
        .collect()
}

/// The table of CPU rows.
pub fn render_cpu(rows: &[CpuBenchRow]) -> String {
    let mut s = format!(
        "{:<42} {:>4} {:>8} {:>12} {:>9} {:>10} {:>14}\n",
        "case", "L", "threads", "time µs", "GFLOP/s", "CPU ms", "GFLOP/CPU-s"
    );
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("—".to_string(), |v| format!("{v:.digits$}"));
    for r in rows {
        s += &format!(
            "{:<42} {:>4} {:>8} {:>12.1} {:>9.2} {:>10} {:>14}\n",
            r.label,
            r.extent,
            r.threads,
            r.median_us,
            r.gflops,
            opt(r.cpu_ms, 2),
            opt(r.gflops_per_cpu_s, 2)
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

    /// A 4⁴ run times the Wilson cases (f32 recon 12 and 18, f64) and the staggered case, with the standard
    /// flop counts: GFLOP/s = flops · V/2 / time.
    #[test]
    fn a_small_run_reports_every_case_with_standard_flops() {
        let rows = run_cpu_bench(&[4], None, 0, 1, &mut |_| {}).unwrap();
        assert_eq!(rows.len(), 4);
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
            // getrusage reports the CPU time on every unix.
            assert_eq!(r.cpu_ms.is_some_and(|ms| ms >= 0.0), cfg!(unix), "{r:?}");
            if let (Some(ms), Some(rate)) = (r.cpu_ms, r.gflops_per_cpu_s) {
                let want = per_site * 128.0 / (ms * 1e6);
                assert!((rate - want).abs() <= 1e-9 * want, "{r:?}");
            }
        }
        let only = run_cpu_bench(&[4], Some("f64"), 0, 1, &mut |_| {}).unwrap();
        assert_eq!(only.len(), 1);
        let table = render_cpu(&only);
        assert!(table.contains("wilson_hop f64 recon18 (CPU)"), "{table}");
        assert!(table.contains("GFLOP/CPU-s"), "{table}");
    }
}
