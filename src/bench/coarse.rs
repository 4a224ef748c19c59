//! `qdsl bench` rows of the device coarse construction (`qdsl_runtime::multigrid::device`):
//! a Wilson-clover operator of the bench's L⁴ links (m 0.1, c_sw 1, periodic), N_v = 24
//! Gaussian near-null vectors on 4⁴ blocks (2N_v = 48), per stage:
//!
//! | stage | timed | flops counted |
//! |---|---|---|
//! | `coarse_links_<mode>` | UV, V†UV and X_c through the tiles (f64 DMMA, 3×BF16) | per unit 8 (2N_v)² N_f (V†UV) + 8 N_f² 2N_v (UV) |
//! | `coarse_x_inv_y_<mode>` | X⁻¹ and X⁻¹Y through the tiles | 8 · 8 (2N_v)³ per coarse site |
//! | `coarse_fixed16` | the three integer passes, totals read back | 3 × the units' flops |
//!
//! GFLOP/s per fine site; `compile` carries the fraction of the H100 SXM's peak for the
//! mode (DMMA 67 TFLOP/s; 3×BF16: a third of 989 dense bf16; SIMT f64 33.5). Bytes:
//! V and the fine matrices read once (N_f 2N_v + 9 N_f² complex f64 per site).

use super::metrics::rates;
use super::report::{BenchResult, CopyBandwidth};
use qdsl_core::dsl::info::ByteModels;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_core::gauge::clover_field;
use qdsl_runtime::device::Gpu;
use qdsl_runtime::multigrid::coarsen::tiles::TileMode;
use qdsl_runtime::multigrid::device::{DeviceCoarsen, UnitLaunch};
use qdsl_runtime::multigrid::{DenseOperator, Prolongator};
use std::time::Instant;

/// A timed stage of the construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoarseStage {
    /// Y_c and X_c through the tiles.
    Links(TileMode),
    /// X⁻¹ and X⁻¹Y through the tiles.
    XInvY(TileMode),
    /// The 16-bit fixed-point operator (three integer passes).
    Fixed16,
}

impl CoarseStage {
    /// Every stage.
    pub const ALL: [CoarseStage; 5] = [
        CoarseStage::Links(TileMode::F64),
        CoarseStage::Links(TileMode::Bf16x3),
        CoarseStage::XInvY(TileMode::F64),
        CoarseStage::XInvY(TileMode::Bf16x3),
        CoarseStage::Fixed16,
    ];

    /// The row's name.
    pub fn name(self) -> &'static str {
        match self {
            CoarseStage::Links(TileMode::F64) => "coarse_links_f64",
            CoarseStage::Links(TileMode::Bf16x3) => "coarse_links_bf16x3",
            CoarseStage::XInvY(TileMode::F64) => "coarse_x_inv_y_f64",
            CoarseStage::XInvY(TileMode::Bf16x3) => "coarse_x_inv_y_bf16x3",
            CoarseStage::Fixed16 => "coarse_fixed16",
        }
    }

    /// The H100 SXM peak (TFLOP/s) the stage's useful flops are compared with.
    fn peak_tflops(self) -> f64 {
        match self {
            CoarseStage::Links(TileMode::F64) | CoarseStage::XInvY(TileMode::F64) => 67.0,
            CoarseStage::Links(TileMode::Bf16x3) | CoarseStage::XInvY(TileMode::Bf16x3) => {
                989.0 / 3.0
            }
            CoarseStage::Fixed16 => 33.5,
        }
    }
}

/// Near-null vectors per chirality.
const N_V: usize = 24;
/// The block.
const BLOCK: [usize; 4] = [4, 4, 4, 4];

/// Times `stage` on the operator of `gauge`.
pub(super) fn bench_coarse(
    gpu: &Gpu,
    gauge: &GaugeField<f64>,
    stage: CoarseStage,
    copy: &CopyBandwidth,
    (warmup, reps): (usize, usize),
) -> Result<BenchResult, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let t0 = Instant::now();
    let clover = clover_field(gauge, 0.1, 1.0);
    let op = DenseOperator::wilson_clover(gauge, &clover, TimeBoundary::Periodic)
        .map_err(|e| err(&e))?;
    let vectors: Vec<_> = (0..N_V as u64)
        .map(|a| ColourSpinorField::gaussian(op.layout(), 7000 + a))
        .collect();
    let p = Prolongator::new(&vectors, BLOCK).map_err(|e| err(&e))?;
    drop(vectors);
    let mut dc = DeviceCoarsen::new(gpu, &op, &p).map_err(|e| err(&e))?;
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (time_us, flops, variant) = match stage {
        CoarseStage::Links(mode) => {
            let tiles = dc.tiles(mode).map_err(|e| err(&e))?;
            let t = gpu
                .time_us(warmup, reps, || dc.build_with(mode, &tiles).map(|_| ()))
                .map_err(|e| err(&e))?;
            (t, dc.flops(), tiles[1].plan.variant.canonical())
        }
        CoarseStage::XInvY(mode) => {
            let d = dc.build(mode).map_err(|e| err(&e))?;
            let tiles = dc.x_inv_y_tiles(mode).map_err(|e| err(&e))?;
            let mut failure = None;
            let t = gpu
                .time_us(warmup, reps, || {
                    if let Err(e) = dc.x_inv_y(&d, mode, &tiles) {
                        failure = Some(e.to_string());
                    }
                    Ok(())
                })
                .map_err(|e| err(&e))?;
            if let Some(f) = failure {
                return Err(f);
            }
            (t, dc.x_inv_y_flops(), tiles.plan.variant.canonical())
        }
        CoarseStage::Fixed16 => {
            let mut failure = None;
            let t = gpu
                .time_us(warmup, reps, || {
                    if let Err(e) = dc.fixed16(UnitLaunch::default()) {
                        failure = Some(e.to_string());
                    }
                    Ok(())
                })
                .map_err(|e| err(&e))?;
            if let Some(f) = failure {
                return Err(f);
            }
            (t, 3.0 * dc.flops(), format!("{:?}", UnitLaunch::default()))
        }
    };
    let sites = op.lattice().volume();
    let (nf, nc2) = (op.n(), 2 * N_V);
    let bytes_per_site = (nf * nc2 + 9 * nf * nf) * 16;
    let bytes = ByteModels {
        quda: bytes_per_site,
        minimal: bytes_per_site,
    };
    let flops_per_site = (flops / sites as f64).round() as usize;
    let tflops = flops / (time_us * 1e6);
    Ok(BenchResult {
        label: format!("{} nc{N_V} block4", stage.name()),
        extent: op.lattice().dims()[0],
        sites,
        time_us,
        flops_per_site,
        bytes,
        rates: rates(sites, flops_per_site, bytes, time_us, Some(copy.best_gbs())),
        compile: format!(
            "{variant}; {tflops:.2} TFLOP/s = {:.1} % of {:.0}",
            100.0 * tflops / stage.peak_tflops(),
            stage.peak_tflops()
        ),
        launch: "-".into(),
        jit_ms: setup_ms,
        tune_ms: 0.0,
    })
}
