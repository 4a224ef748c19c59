//! `qdsl check` rows of the device coarse construction (`qdsl_runtime::multigrid::device`)
//! on a 4⁴ weak-field Wilson-clover operator (m 0.1, c_sw 1.2, antiperiodic time) with
//! N_v = 24 Gaussian near-null vectors on 2⁴ blocks, against the CPU reference:
//!
//! * `coarse_links <mode>` (f64 DMMA, 3×BF16): Y_c and X_c against `coarsen`, the error
//!   the worst entry as a fraction of its bound (2ε √2 ‖a_i‖ ‖b_j‖, bound 1);
//! * `coarse_x_inv_y <mode>`: X⁻¹Y of the device against `Preconditioned::new` of the
//!   device's own X and Y (the stage alone), relative to the largest entry, bound the
//!   mode's ε for K = 2 · 2N_v times 2 · 2N_v (plus 1e-11 for the inversion);
//! * `coarse_fixed16 threads<T> group<G>`: the 16-bit operator against `coarsen_fixed16`,
//!   the error the number of entries that differ (bound 0: bitwise), for two launches.

use super::report::{CheckRow, Outcome};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, DenseLinkField, GaugeField};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::Lattice;
use qdsl_runtime::device::Gpu;
use qdsl_runtime::multigrid::coarsen::tiles::TileMode;
use qdsl_runtime::multigrid::device::{bounds, DeviceCoarsen, UnitLaunch};
use qdsl_runtime::multigrid::{
    coarsen, coarsen_fixed16, CoarsenError, DenseOperator, Grouping, Preconditioned, Prolongator,
};

/// The rows whose kernel name passes `wanted`.
pub fn check_coarse(gpu: &Gpu, seed: u64, wanted: &dyn Fn(&str) -> bool) -> Vec<CheckRow> {
    let names = ["coarse_links", "coarse_x_inv_y", "coarse_fixed16"];
    if !names.iter().any(|n| wanted(n)) {
        return Vec::new();
    }
    let row = |kernel: &str, variant: String, outcome| CheckRow {
        kernel: kernel.into(),
        variant,
        data: "random".into(),
        outcome,
    };
    let (op, p) = match setup(seed) {
        Ok(x) => x,
        Err(e) => {
            return vec![row(
                "coarse_links",
                "set-up".into(),
                Outcome::Failed(e.to_string()),
            )]
        }
    };
    let mut dc = match DeviceCoarsen::new(gpu, &op, &p) {
        Ok(d) => d,
        Err(e) => {
            return vec![row(
                "coarse_links",
                "set-up".into(),
                Outcome::Failed(e.to_string()),
            )]
        }
    };
    let mut rows = Vec::new();
    for mode in [TileMode::F64, TileMode::Bf16x3] {
        let variant = format!("{mode:?} nc24 block2");
        let built = dc.build(mode).and_then(|d| Ok((dc.download(&d)?, d)));
        let (got, d) = match built {
            Ok(x) => x,
            Err(e) => {
                rows.push(row("coarse_links", variant, Outcome::Failed(e.to_string())));
                continue;
            }
        };
        if wanted("coarse_links") {
            let outcome = match coarsen(&op, &p) {
                Ok(want) => Outcome::Compared {
                    error: bounds::worst_ratio(&got, &want, &op, &p, &dc, mode),
                    bound: 1.0,
                },
                Err(e) => Outcome::Failed(e.to_string()),
            };
            rows.push(row("coarse_links", variant.clone(), outcome));
        }
        if wanted("coarse_x_inv_y") {
            let outcome = match x_inv_y_error(&mut dc, &got, &d, mode) {
                Ok(o) => o,
                Err(e) => Outcome::Failed(e.to_string()),
            };
            rows.push(row("coarse_x_inv_y", variant, outcome));
        }
    }
    if wanted("coarse_fixed16") {
        let want = coarsen_fixed16(
            &op,
            &p,
            Grouping {
                group: 1,
                reversed: false,
            },
        );
        for launch in [
            UnitLaunch::default(),
            UnitLaunch {
                threads: 128,
                group: 5,
            },
        ] {
            let variant = format!("threads{} group{}", launch.threads, launch.group);
            let outcome = match (&want, dc.fixed16(launch)) {
                (Ok(w), Ok(g)) => Outcome::Compared {
                    error: (g.x_scale != w.x_scale || g.y_scale != w.y_scale) as usize as f64
                        + g.q.iter().zip(&w.q).filter(|(a, b)| a != b).count() as f64
                        + g.q.len().abs_diff(w.q.len()) as f64,
                    bound: 0.0,
                },
                (Err(e), _) => Outcome::Failed(format!("CPU: {e}")),
                (_, Err(e)) => Outcome::Failed(e.to_string()),
            };
            rows.push(row("coarse_fixed16", variant, outcome));
        }
    }
    rows
}

/// The operator and prolongator of the rows.
fn setup(seed: u64) -> Result<(DenseOperator, Prolongator), CoarsenError> {
    let lat = Lattice::new([4, 4, 4, 4])?;
    let gauge = GaugeField::<f64>::weak(lat, seed, 0.4);
    let clover = clover_field(&gauge, 0.1, 1.2);
    let op = DenseOperator::wilson_clover(&gauge, &clover, TimeBoundary::Antiperiodic)?;
    let vectors: Vec<_> = (0..24)
        .map(|a| ColourSpinorField::gaussian(op.layout(), seed + 100 + a))
        .collect();
    let p = Prolongator::new(&vectors, [2, 2, 2, 2])?;
    Ok((op, p))
}

/// The X⁻¹Y row's outcome.
fn x_inv_y_error(
    dc: &mut DeviceCoarsen<'_>,
    coarse: &DenseOperator,
    d: &qdsl_runtime::multigrid::device::DeviceCoarse,
    mode: TileMode,
) -> Result<Outcome, CoarsenError> {
    let want = Preconditioned::new(coarse)?;
    let got = dc.preconditioned(d, mode)?;
    let largest = |f: &DenseLinkField<f64>| f.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
    let diff = |a: &DenseLinkField<f64>, b: &DenseLinkField<f64>| {
        a.data()
            .iter()
            .zip(b.data())
            .map(|(x, y)| (x - y).norm())
            .fold(0.0, f64::max)
    };
    let nc2 = coarse.n();
    // |error| ≤ ε √2 Σ_k |a_ik||b_kj| ≤ ε · 2 · 2N_v · max|a| · max|b| per link entry.
    let scale_f = 2.0 * nc2 as f64 * largest(&want.x_inv) * largest(&coarse.yf);
    let scale_b = 2.0 * nc2 as f64 * largest(&want.x_inv) * largest(&coarse.yb);
    let error = (diff(&got.op.yf, &want.op.yf) / scale_f)
        .max(diff(&got.op.yb, &want.op.yb) / scale_b)
        .max(diff(&got.x_inv, &want.x_inv) / largest(&want.x_inv));
    Ok(Outcome::Compared {
        error,
        bound: 2.0 * bounds::epsilon(mode, nc2, 2 * nc2) + 1e-11,
    })
}
