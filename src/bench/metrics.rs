//! Bench arithmetic: from a median time, the flop rate, the bandwidth in both byte
//! models, and the fraction of the copy roofline.

use qdsl_core::dsl::info::ByteModels;

/// The rates of one kernel measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// GFLOP/s = flops/site · sites / t.
    pub gflops: f64,
    /// GB/s under QUDA's byte model = bytes_quda/site · sites / t.
    pub gbs_quda: f64,
    /// GB/s under the minimal byte model.
    pub gbs_minimal: f64,
    /// gbs_minimal / copy bandwidth (None without a copy measurement).
    pub fraction_of_copy: Option<f64>,
}

/// Rates of `sites` output sites at `flops_per_site` and `bytes` per site in `time_us`
/// µs: X/s = X_per_site · sites / (t · 10⁻⁶), in units of 10⁹.
pub fn rates(
    sites: usize,
    flops_per_site: usize,
    bytes: ByteModels,
    time_us: f64,
    copy_gbs: Option<f64>,
) -> Rates {
    let per_s = |x: usize| (x * sites) as f64 / (time_us * 1e3);
    let gbs_minimal = per_s(bytes.minimal);
    Rates {
        gflops: per_s(flops_per_site),
        gbs_quda: per_s(bytes.quda),
        gbs_minimal,
        fraction_of_copy: copy_gbs.map(|c| gbs_minimal / c),
    }
}

/// The minimal byte model per output site and source of a one-parity hop (no xpay, one
/// spinor input) on `sources` right-hand sides in one kernel: each source's spinor read
/// once and written once (2 · `site_bytes`), the links read once for all sources, from
/// the one-source model `minimal` = links + 2 · `site_bytes`:
/// 2 · site_bytes + (minimal − 2 · site_bytes) / N.
pub fn per_source_minimal_bytes(minimal: usize, site_bytes: usize, sources: usize) -> usize {
    let spinors = 2 * site_bytes;
    spinors + minimal.saturating_sub(spinors) / sources.max(1)
}

/// Copy bandwidth counted as read + write: 2 · bytes / t, in GB/s.
pub fn copy_gbs(bytes_copied: usize, time_us: f64) -> f64 {
    2.0 * bytes_copied as f64 / (time_us * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed (calculator): 524288 sites (32⁴ / 2) in 109 µs with 1320 flops,
    /// 1440 and 576 bytes per site: 1320 · 524288 / 109e-6 = 6349.18 GFLOP/s,
    /// 6926.37 and 2770.55 GB/s, and 2770.55 / 3000 = 0.923516 of the copy bandwidth.
    /// Wilson f32 recon 12: 96 B per spinor site, 576 B per site for one source (8
    /// links of 48 B = 384 B); at N = 8 the links cost 48 B per source: 240 B, i.e.
    /// 524288 · 240 B = 125.8 MB per source, 41.9 µs at 3.0 TB/s (issue 16's ~42 µs).
    #[test]
    fn per_source_bytes_by_hand() {
        assert_eq!(per_source_minimal_bytes(576, 96, 1), 576);
        assert_eq!(per_source_minimal_bytes(576, 96, 8), 240);
        assert_eq!(per_source_minimal_bytes(576, 96, 12), 192 + 32);
        let us = (524_288 * 240) as f64 / 3.0e12 * 1e6;
        assert!((us - 41.94).abs() < 0.01, "{us}");
    }

    #[test]
    fn rates_by_hand() {
        let bytes = ByteModels {
            quda: 1440,
            minimal: 576,
        };
        let r = rates(524_288, 1320, bytes, 109.0, Some(3000.0));
        assert!((r.gflops - 6349.18).abs() < 0.01, "{}", r.gflops);
        assert!((r.gbs_quda - 6926.37).abs() < 0.01, "{}", r.gbs_quda);
        assert!((r.gbs_minimal - 2770.55).abs() < 0.01, "{}", r.gbs_minimal);
        assert!((r.fraction_of_copy.unwrap() - 0.923516).abs() < 1e-6);
        assert_eq!(rates(1, 1, bytes, 1.0, None).fraction_of_copy, None);
        // 1 GiB copied in 715.8 µs: 2^31 bytes moved → 3000.12 GB/s.
        assert!((copy_gbs(1 << 30, 715.8) - 3000.12).abs() < 0.01);
        assert_eq!(
            bytes + bytes,
            ByteModels {
                quda: 2880,
                minimal: 1152
            }
        );
    }
}
