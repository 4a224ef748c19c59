//! `qdsl bench --grid Px,Py,Pz,Pt --mobius | --clover [--sizes L | --lattice X,Y,Z,T]
//! [--weak | --strong-and-weak] [--transports nccl,…]`: scaling of a whole even-odd
//! operator — the one a solve iterates with, not one kernel — over the ranks of each grid
//! against one GPU.
//!
//! The operators ([`GridOperator`]), f32 vectors and links (recon 18), antiperiodic t,
//! random links and source, even sites:
//!
//! * Möbius M̂ = M5 − ¼ H M_φ M5⁻¹ H M_φ, Ls 12, b5 1.5, c5 0.5, M5 1.8, m_f 0.01;
//! * Wilson-clover M̂ = A_ee − ¼ H_eo A_oo⁻¹ H_oe, κ 0.12, c_sw 1.0 (A in mass
//!   normalisation, from the random links).
//!
//! Per row:
//!
//! * `1 GPU`: one GPU's operator ([`DeviceOperator::mobius`]: three `fused5d!` kernels;
//!   [`DeviceOperator::clover`]), tuned as a solve tunes it, over the global lattice
//!   (strong) or one rank's local lattice (weak);
//! * `grid`: one application of the distributed operator
//!   ([`DeviceOperator::mobius_distributed`], [`DeviceOperator::clover_distributed`]: each
//!   hop's faces exchanged while its interior runs; untuned launches, as every `--grid`
//!   solve), the slowest rank's median;
//! * GFLOP/s per GPU: each GPU's share of the one-GPU operator's flop count (redundant
//!   work not counted); efficiency T₁ / (P · T_P) (strong) or T₁ / T_P (weak).
//!
//! `--grid 1,1,1,1` times the distributed operator on one rank (no faces): the cost of
//! the sub-box launches alone. `QDSL_TUNE=launch` tunes the ranks' launches (`--grid`
//! solves do not by default).

use super::scaling::median;
use crate::app::solve::{check_gpu_grid, open_gpu_rank, GridTransport};
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::distributed::scatter;
use qdsl_core::field::{CloverField, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::decomposition::ONE_HOP_DEPTH;
use qdsl_core::lattice::{Decomposition, ExtendedLattice, Lattice, Parity, ProcessGrid};
use qdsl_runtime::comm::{run_ranks, CommConfig};
use qdsl_runtime::device::Gpu;
use qdsl_runtime::distributed::device::RankDistribution;
use qdsl_runtime::distributed::{fill_link_halos, unit_clover_on_halo_sites, SharedComm};
use qdsl_runtime::operator::device::codegen_hash;
use qdsl_runtime::operator::mobius::MobiusParams;
use qdsl_runtime::solver::device::{DeviceContext, DeviceOperator, DeviceVector, Single};
use qdsl_runtime::solver::{LinearOperator, SolverField};
use qdsl_runtime::tune::{default_path, Tuner};
use std::time::Instant;

/// The fifth dimension of the benched Möbius operator.
const LS: usize = 12;

/// The benched Möbius parameters (module docs).
fn params() -> Result<MobiusParams, String> {
    MobiusParams::mobius(LS, 1.5, 0.5, 1.8, 0.01).map_err(|e| e.to_string())
}

/// The benched clover κ and c_sw (module docs).
const CLOVER_KAPPA: f64 = 0.12;
const CLOVER_CSW: f64 = 1.0;

/// Which whole operator a row times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridOperator {
    /// The Möbius domain-wall M̂ (Ls 12).
    Mobius,
    /// The Wilson-clover M̂.
    Clover,
}

impl GridOperator {
    /// "mobius", "clover".
    pub fn name(self) -> &'static str {
        match self {
            Self::Mobius => "mobius",
            Self::Clover => "clover",
        }
    }

    /// Slices of the operator's vectors.
    fn ls(self) -> usize {
        match self {
            Self::Mobius => LS,
            Self::Clover => 1,
        }
    }

    /// The clover field of `gauge` (A in mass normalisation, [`clover_field`]).
    fn clover(gauge: &GaugeField<f64>) -> CloverField<f64> {
        clover_field(gauge, 1.0 / (2.0 * CLOVER_KAPPA) - 4.0, CLOVER_CSW)
    }

    /// One GPU's operator on `gauge`'s lattice.
    fn single(
        self,
        ctx: &std::sync::Arc<DeviceContext>,
        gauge: &GaugeField<f64>,
    ) -> Result<DeviceOperator<Single>, String> {
        let (p, t) = (Parity::Even, TimeBoundary::Antiperiodic);
        match self {
            Self::Mobius => DeviceOperator::mobius(ctx, gauge, params()?, p, t, M5invMode::Sweep),
            Self::Clover => DeviceOperator::clover(ctx, gauge, &Self::clover(gauge), 0.0, p, t),
        }
        .map_err(|e| e.to_string())
    }

    /// One rank's distributed operator: `links` its part of the links (halos filled),
    /// `clover` its part of the clover field (unit on halo sites; the clover operator).
    fn distributed(
        self,
        ctx: &std::sync::Arc<DeviceContext>,
        dist: &RankDistribution,
        links: &GaugeField<f64>,
        clover: Option<&CloverField<f64>>,
    ) -> Result<DeviceOperator<Single>, String> {
        let (p, t) = (Parity::Even, TimeBoundary::Antiperiodic);
        match (self, clover) {
            (Self::Mobius, _) => {
                DeviceOperator::mobius_distributed(ctx, dist, links, params()?, p, t)
            }
            (Self::Clover, Some(a)) => {
                DeviceOperator::clover_distributed(ctx, dist, (links, a), 0.0, p, t)
            }
            (Self::Clover, None) => return Err("the clover operator needs its field".into()),
        }
        .map_err(|e| e.to_string())
    }

    /// The table's title.
    fn title(self) -> String {
        match self {
            Self::Mobius => format!("Möbius M̂ (Ls {LS}, f32, recon 18, one parity; µs per application)"),
            Self::Clover => format!(
                "Wilson-clover M̂ (κ {CLOVER_KAPPA}, c_sw {CLOVER_CSW}, f32, recon 18, one parity; µs per application)"
            ),
        }
    }
}

/// One row: an operator, a lattice, a grid, a kind of scaling and a transport.
#[derive(Clone, Debug)]
pub struct GridOperatorRow {
    /// The operator.
    pub operator: GridOperator,
    /// The global lattice.
    pub global: Lattice,
    /// The grid.
    pub grid: ProcessGrid,
    /// Weak scaling (the 1-GPU reference is one rank's local lattice).
    pub weak: bool,
    /// The transport.
    pub transport: GridTransport,
    /// µs of one application on one GPU.
    pub single_us: f64,
    /// µs of one distributed application (slowest rank).
    pub grid_us: f64,
    /// GFLOP/s per GPU of the distributed operator.
    pub gflops_per_gpu: f64,
    /// T₁ / (P · T_P) or T₁ / T_P.
    pub efficiency: f64,
}

/// The even-site layout of `lattice` with `ls` slices.
fn layout(lattice: Lattice, ls: usize) -> Result<SpinorLayout, String> {
    SpinorLayout::new(lattice, ls, SiteSubset::Single(Parity::Even), 4, 3)
        .map_err(|e| e.to_string())
}

/// The median µs of `apply` (then a synchronisation of `gpu`'s stream) after `warmup`
/// untimed runs.
fn time_apply(
    gpu: &Gpu,
    (warmup, reps): (usize, usize),
    mut apply: impl FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    let stream = gpu.backend().stream();
    let mut samples = Vec::with_capacity(reps);
    for k in 0..warmup + reps {
        let start = Instant::now();
        apply()?;
        stream.synchronize().map_err(|e| e.to_string())?;
        if k >= warmup {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(median(samples))
}

/// µs of one GPU's `operator` on `lattice` (tuned in the warm-up) and its flops.
fn single_gpu(
    operator: GridOperator,
    lattice: Lattice,
    runs: (usize, usize),
) -> Result<(f64, u64), String> {
    let e = |x: &dyn std::fmt::Display| format!("one GPU: {x}");
    let gpu = Gpu::open(0).map_err(|x| e(&x))?;
    let tuner = Tuner::new(&default_path(), gpu.fingerprint(&codegen_hash()));
    let ctx = DeviceContext::new(gpu, tuner).map_err(|x| e(&x))?;
    let gauge = GaugeField::<f64>::random(lattice, 17);
    let op = operator.single(&ctx, &gauge).map_err(|x| e(&x))?;
    let psi = ColourSpinorField::<f64>::gaussian(layout(lattice, operator.ls())?, 18);
    let x = DeviceVector::<Single>::upload(&ctx, &psi).map_err(|x| e(&x))?;
    let mut out = x.zeros_like();
    let us = time_apply(ctx.gpu(), runs, || {
        op.apply(&mut out, &x).map_err(|x| e(&x))
    })?;
    Ok((us, op.flops_per_apply()))
}

/// One row (module docs): `global` is the whole problem's lattice.
fn row(
    operator: GridOperator,
    global: Lattice,
    (grid, weak, transport): (ProcessGrid, bool, GridTransport),
    runs: (usize, usize),
) -> Result<GridOperatorRow, String> {
    let dec = Decomposition::new(global, grid).map_err(|e| e.to_string())?;
    let ext = ExtendedLattice::new(dec, ONE_HOP_DEPTH).map_err(|e| e.to_string())?;
    let reference = if weak { *ext.local() } else { global };
    let (single_us, single_flops) = single_gpu(operator, reference, runs)?;
    let gauge = GaugeField::<f64>::random(global, 17);
    let clover = (operator == GridOperator::Clover).then(|| GridOperator::clover(&gauge));
    let psi = ColourSpinorField::<f64>::gaussian(layout(global, operator.ls())?, 18);
    let config = CommConfig::from_env().map_err(|e| e.to_string())?;
    let ranks: Vec<f64> = run_ranks(dec.size(), config, |comm| {
        let comm = SharedComm::new(comm);
        let rank = comm.rank();
        let e = |x: &dyn std::fmt::Display| format!("rank {rank}: {x}");
        // A named transport (the bench resolves `tuned`): one candidate, nothing timed.
        let (ctx, transports) = open_gpu_rank(ext, &comm, transport).map_err(|x| e(&x))?;
        let (dist, _) = transports
            .choose(&ctx, &comm, "bench", &mut |_| Err("not timed".into()))
            .map_err(|x| e(&x))?;
        let mut links = scatter(&gauge, &ext, rank).map_err(|x| e(&x))?;
        fill_link_halos(&comm, &mut links, &ext).map_err(|x| e(&x))?;
        let clover = match &clover {
            Some(a) => {
                let mut part = scatter(a, &ext, rank).map_err(|x| e(&x))?;
                unit_clover_on_halo_sites(&mut part, &ext);
                Some(part)
            }
            None => None,
        };
        let op = operator
            .distributed(&ctx, &dist, &links, clover.as_ref())
            .map_err(|x| e(&x))?;
        let part = scatter(&psi, &ext, rank).map_err(|x| e(&x))?;
        let x = DeviceVector::<Single>::upload(&ctx, &part).map_err(|x| e(&x))?;
        let mut out = x.zeros_like();
        let us = time_apply(ctx.gpu(), runs, || {
            op.apply(&mut out, &x).map_err(|x| e(&x))
        })?;
        Ok(us)
    })
    .into_iter()
    .collect::<Result<_, String>>()?;
    let grid_us = ranks.iter().copied().fold(0.0, f64::max);
    let p = grid.size() as f64;
    // Each GPU's share of the global operator's flops (the one-GPU operator's count:
    // the whole lattice in strong scaling, one rank's in weak).
    let flops_per_gpu = if weak {
        single_flops as f64
    } else {
        single_flops as f64 / p
    };
    Ok(GridOperatorRow {
        operator,
        global,
        grid,
        weak,
        transport,
        single_us,
        grid_us,
        gflops_per_gpu: flops_per_gpu / (grid_us * 1e3),
        efficiency: if weak {
            single_us / grid_us
        } else {
            single_us / (p * grid_us)
        },
    })
}

/// Every row of `operator`: each lattice (global for strong scaling, per rank for weak),
/// grid, kind and transport; `notice` gets progress lines. An error where a grid does not
/// fit the machine's GPUs.
pub fn run_grid_operator(
    operator: GridOperator,
    lattices: &[[usize; 4]],
    grids: &[ProcessGrid],
    (weak_kinds, transports): (&[bool], &[GridTransport]),
    runs: (usize, usize),
    notice: &mut dyn FnMut(&str),
) -> Result<Vec<GridOperatorRow>, String> {
    let mut rows = Vec::new();
    for dims in lattices {
        for &grid in grids {
            for &t in transports {
                check_gpu_grid(grid, t).map_err(|e| e.to_string())?;
                for &weak in weak_kinds {
                    let global = match weak {
                        false => Lattice::new(*dims),
                        true => Lattice::new(std::array::from_fn(|mu| dims[mu] * grid.dims()[mu])),
                    }
                    .map_err(|e| e.to_string())?;
                    let kind = if weak { "weak" } else { "strong" };
                    notice(&format!(
                        "{} M̂ on {global}, grid {grid}, {kind}, {}",
                        operator.name(),
                        t.describe()
                    ));
                    rows.push(row(operator, global, (grid, weak, t), runs)?);
                }
            }
        }
    }
    Ok(rows)
}

/// The table of `rows` (of one operator; titled by the first row's).
pub fn render_grid_operator(rows: &[GridOperatorRow]) -> String {
    let title = rows.first().map_or(String::new(), |r| r.operator.title());
    let mut s = format!(
        "{title}\n{:<14} {:<9} {:<6} {:<6} {:>10} {:>10} {:>10} {:>6}\n",
        "global", "grid", "kind", "via", "1 GPU", "grid", "GF/s/GPU", "eff."
    );
    for r in rows {
        s.push_str(&format!(
            "{:<14} {:<9} {:<6} {:<6} {:>10.1} {:>10.1} {:>10.1} {:>5.0}%\n",
            r.global.to_string(),
            r.grid.to_string(),
            if r.weak { "weak" } else { "strong" },
            r.transport.name(),
            r.single_us,
            r.grid_us,
            r.gflops_per_gpu,
            100.0 * r.efficiency
        ));
    }
    s
}

/// The rows as JSON.
pub fn grid_operator_json(rows: &[GridOperatorRow]) -> serde_json::Value {
    serde_json::json!({
        "operator_scaling": rows.iter().map(|r| serde_json::json!({
            "operator": r.operator.name(),
            "ls": r.operator.ls(),
            "global": r.global.dims(),
            "grid": r.grid.dims(),
            "weak": r.weak,
            "transport": r.transport.name(),
            "single_us": r.single_us,
            "grid_us": r.grid_us,
            "gflops_per_gpu": r.gflops_per_gpu,
            "efficiency": r.efficiency,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's table line and JSON carry its grid, kind, times and efficiency.
    #[test]
    fn rows_render_and_serialise_their_numbers() {
        let row = GridOperatorRow {
            operator: GridOperator::Mobius,
            global: Lattice::new([32, 32, 32, 64]).unwrap(),
            grid: ProcessGrid::new([1, 1, 1, 2]).unwrap(),
            weak: true,
            transport: GridTransport::Nccl,
            single_us: 2000.0,
            grid_us: 2500.0,
            gflops_per_gpu: 1234.5,
            efficiency: 0.8,
        };
        let table = render_grid_operator(std::slice::from_ref(&row));
        assert!(table.starts_with("Möbius M̂ (Ls 12"), "{table}");
        let line = table.lines().last().unwrap();
        for want in [
            "32×32×32×64",
            "weak",
            "nccl",
            "2000.0",
            "2500.0",
            "1234.5",
            "80%",
        ] {
            assert!(line.contains(want), "{want} missing from {line:?}");
        }
        let json = grid_operator_json(&[row]);
        let r = &json["operator_scaling"][0];
        assert_eq!(r["operator"], "mobius");
        assert_eq!(r["grid"], serde_json::json!([1, 1, 1, 2]));
        assert_eq!(r["weak"], true);
        assert_eq!(r["efficiency"], 0.8);
        assert_eq!(r["ls"], LS);
    }
}
