//! MSPCG solves of the Möbius system: the normal equations M̂†M̂ x = M̂† b̂ of the
//! asymmetric even-odd M̂ by the multi-splitting preconditioned CG
//! ([`qdsl_runtime::solver::mspcg`]): outer flexible PCG in f64 (or f64 mixed with a
//! narrower precision through reliable updates), the preconditioner k inner CG
//! iterations on each block's local A_s (with or without the snake terms), source
//! preparation, reconstruction and the residual on the 5D D as for every Möbius solve
//! ([`MobiusSolver::solve_with`]). On the CPU the inner vectors are f32 and the outer
//! iteration f64 or f32; on the GPU ([`super::mspcg_device`]) the outer iteration runs
//! in any Möbius precision and the inner one in f32, fixed16 or fixed8, M5⁻¹ swept or on
//! the tensor cores.

use crate::app::history::history_entries;
use crate::app::mobius::{MobiusSolution, MobiusSolver};
use crate::app::mspcg_device::DevicePreconditioner;
use crate::app::precision::Precision;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_core::field::{ColourSpinorField, GaugeField};
use qdsl_runtime::linear::{LinearOperator, NormalForm, NormalOperator, SolverField};
use qdsl_runtime::operator::mobius::MobiusBlocks;
use qdsl_runtime::solver::mspcg::{
    pcg, Identity, MultiSplitting, PaddedBlocks, PcgResult, Preconditioner, Snake,
};
use qdsl_runtime::solver::{SolverError, SolverOptions};
use serde_json::{json, Value};

type F64 = ColourSpinorField<f64>;

/// The MSPCG knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MspcgConfig {
    /// Blocks per direction (the virtual block grid).
    pub blocks: [usize; 4],
    /// Inner CG iterations per preconditioner application.
    pub inner: usize,
    /// With or without the snake terms.
    pub snake: Snake,
    /// The inner vectors' precision (f32; on the GPU also fixed16, fixed8).
    pub inner_precision: Precision,
    /// How the inner operator applies M5⁻¹ (the sweep; on the GPU also the tensor cores).
    pub m5inv: M5invMode,
    /// The outer flexible CG's kept search directions, FCG(m)
    /// ([`SolverOptions::flexible_directions`]; 1: the Polak–Ribière β).
    pub directions: usize,
}

impl MspcgConfig {
    /// The solver's options with this configuration's kept directions.
    pub fn options(&self, solver: &MobiusSolver) -> SolverOptions {
        SolverOptions {
            flexible_directions: self.directions,
            ..solver.options().clone()
        }
    }
}

/// An MSPCG solve: the 5D solution (its `result` the whole solve on M̂†M̂) and the
/// preconditioner's report.
#[derive(Debug)]
pub struct MspcgSolution {
    /// ψ, the result and the residual on D.
    pub solution: MobiusSolution,
    /// Preconditioned iterations, preconditioner applications, breakdown.
    pub pcg: PcgResult,
    /// On a decomposed lattice of GPUs: the bytes each rank sends per outer iteration
    /// (the faces of M̂†M̂'s four hops in the iteration's format; the preconditioner
    /// sends none).
    pub face_bytes_per_iteration: Option<usize>,
}

/// D ψ = η with MSPCG on M̂†M̂ (module docs). The solver must iterate on the CPU in f64
/// or f32.
pub fn solve_mspcg(
    solver: &MobiusSolver,
    eta: &F64,
    config: &MspcgConfig,
) -> Result<MspcgSolution, String> {
    if let Some(grid) = solver.grid() {
        let mut face_bytes = None;
        let mut sol = with_outcome(solver, eta, |b| {
            let (rank, x) = grid.iterate_mspcg(solver, b, config)?;
            face_bytes = rank.face_bytes_per_iteration;
            Ok((rank.outcome, x))
        })?;
        sol.face_bytes_per_iteration = face_bytes;
        return Ok(sol);
    }
    let opts = config.options(solver);
    if let Some(device) = solver.device() {
        let precond = DevicePreconditioner::mspcg(solver, device.context(), config)?;
        return solve_on_device(solver, eta, &precond, &opts);
    }
    let precond = preconditioner(solver, config)?;
    solve_pcg(solver, eta, &precond, &opts)
}

/// The baseline of the study: the same outer iteration on the same normal equations
/// with the identity for the preconditioner — CG on M̂†M̂ with Polak–Ribière β and the
/// same stopping criterion.
pub fn solve_plain_cg(solver: &MobiusSolver, eta: &F64) -> Result<MspcgSolution, String> {
    if solver.is_on_device() {
        return solve_on_device(
            solver,
            eta,
            &DevicePreconditioner::Identity,
            solver.options(),
        );
    }
    solve_pcg(solver, eta, &Identity, solver.options())
}

/// MSPCG's preconditioner for the solver's operator (f32 inner iterations).
fn preconditioner(
    solver: &MobiusSolver,
    config: &MspcgConfig,
) -> Result<MultiSplitting<MobiusBlocks<f32>>, String> {
    let high = solver.operator();
    let blocks = high.blocks();
    let grid = PaddedBlocks::new(
        *blocks.gauge().lattice(),
        blocks.params().ls(),
        config.blocks,
        high.parity(),
    )
    .map_err(|e| e.to_string())?;
    host_preconditioner(solver, config, grid, blocks.gauge())
}

/// The host preconditioner of `config` (f32 inner iterations, the swept M5⁻¹) on the
/// blocks of `grid` (the whole lattice's, or a rank's share) with the links `links` of
/// the grid's link lattice, for `solver`'s parameters, parity and boundary.
pub fn host_preconditioner(
    solver: &MobiusSolver,
    config: &MspcgConfig,
    grid: PaddedBlocks,
    links: &GaugeField<f64>,
) -> Result<MultiSplitting<MobiusBlocks<f32>>, String> {
    if config.inner_precision != Precision::F32 || config.m5inv != M5invMode::Sweep {
        return Err(format!(
            "--inner-precision {} --m5inv {}: on the CPU the inner iterations are f32 with \
             the swept M5⁻¹ (the others run on the GPU)",
            config.inner_precision.name(),
            config.m5inv.name()
        ));
    }
    let high = solver.operator();
    let blocks = high.blocks();
    MultiSplitting::<MobiusBlocks<f32>>::mobius(
        links,
        blocks.params(),
        high.parity(),
        blocks.boundary(),
        grid,
        config.snake,
        config.inner,
    )
    .map_err(|e| e.to_string())
}

/// D ψ = η by [`pcg`] on M̂†M̂ x = M̂† b̂ with the preconditioner `precond` and the
/// options `opts`, on the host.
pub fn solve_pcg<P>(
    solver: &MobiusSolver,
    eta: &F64,
    precond: &P,
    opts: &SolverOptions,
) -> Result<MspcgSolution, String>
where
    P: Preconditioner<F64> + Preconditioner<ColourSpinorField<f32>>,
{
    let high = solver.operator();
    with_outcome(solver, eta, |b| {
        let mut rhs = b.zeros_like();
        high.apply_dagger(&mut rhs, b)?;
        let a = NormalOperator::new(high, NormalForm::MdagM);
        let mut x = b.zeros_like();
        let out = match solver.precision() {
            Precision::F64 => pcg(&a, &a, precond, &rhs, &mut x, opts)?,
            Precision::F32 => {
                let a32 = NormalOperator::new(solver.operator_f32(), NormalForm::MdagM);
                pcg(&a, &a32, precond, &rhs, &mut x, opts)?
            }
            other => {
                return Err(SolverError::operator(std::io::Error::other(format!(
                    "--solver mspcg on the CPU iterates in f64 or f32 (mixed with f64), not {}",
                    other.name()
                ))))
            }
        };
        Ok((out, x))
    })
}

/// D ψ = η by [`pcg`] with the iteration on the GPU of the solver's device operators.
fn solve_on_device(
    solver: &MobiusSolver,
    eta: &F64,
    precond: &DevicePreconditioner,
    opts: &SolverOptions,
) -> Result<MspcgSolution, String> {
    let device = solver
        .device()
        .ok_or("the solver does not iterate on the GPU")?;
    with_outcome(solver, eta, |b| device.pcg(b, precond, opts))
}

/// D ψ = η with `iterate` solving M̂†M̂ x = M̂† b̂ by [`pcg`] (returning its outcome and
/// x), around the source preparation, reconstruction and residual of every Möbius solve.
fn with_outcome(
    solver: &MobiusSolver,
    eta: &F64,
    iterate: impl FnOnce(&F64) -> Result<(PcgResult, F64), SolverError>,
) -> Result<MspcgSolution, String> {
    let mut outcome = None;
    let solution = solver
        .solve_with(eta, |b| {
            let (out, x) = iterate(b)?;
            let result = out.result.clone();
            outcome = Some(out);
            Ok((result, x))
        })
        .map_err(|e| e.to_string())?;
    let pcg = outcome.ok_or("the MSPCG iteration did not run")?;
    Ok(MspcgSolution {
        solution,
        pcg,
        face_bytes_per_iteration: None,
    })
}

/// The solve as JSON: the knobs (blocks, inner iterations, snake terms, precision,
/// tolerance), the outcome (converged, reason, outer iterations, preconditioned
/// iterations, reliable updates, true residual on M̂†M̂, the residual recomputed on the
/// 5D D, preconditioner applications and flops, seconds), the preconditioner breakdown
/// if any (iteration, fault, its history) and `history` ([`history_entries`]).
pub fn mspcg_json(
    sol: &MspcgSolution,
    config: &MspcgConfig,
    precision: &str,
    tolerance: f64,
) -> Value {
    let r = &sol.solution.result;
    let breakdown = sol.pcg.breakdown.as_ref().map(|b| {
        json!({
            "iteration": b.iteration,
            "fault": b.fault.to_string(),
            "history": history_entries(&b.history),
        })
    });
    json!({
        "action": "mobius",
        "solver": "mspcg",
        "blocks": config.blocks,
        "inner_iterations": config.inner,
        "snake_terms": config.snake == Snake::Include,
        "precision": precision,
        "inner_precision": config.inner_precision.name(),
        "m5inv": config.m5inv.name(),
        "fcg_directions": config.directions,
        "tolerance": tolerance,
        "converged": r.is_converged(),
        "reason": r.convergence.to_string(),
        "iterations": r.iterations,
        "preconditioned_iterations": sol.pcg.preconditioned_iterations,
        "reliable_updates": r.reliable_updates,
        "true_residual": r.true_residual,
        "recomputed_residual_5d": sol.solution.residual,
        "operator_applications": r.operator_applications,
        "preconditioner_applications": sol.pcg.preconditioner_applications,
        "preconditioner_flops": sol.pcg.preconditioner_flops,
        "seconds": r.elapsed.as_secs_f64(),
        "face_bytes_per_iteration": sol.face_bytes_per_iteration,
        "breakdown": breakdown,
        "history": history_entries(&r.history),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::io::{read_gauge, ReadOptions};
    use qdsl_runtime::operator::mobius::MobiusParams;
    use qdsl_runtime::solver::SolverOptions;

    /// GPU: MSPCG with its preconditioner on the device (MILC's 8⁴ sample, Ls 8,
    /// b5 = 1.5, c5 = 0.5, M5 = 1.8, m_f = 0.01, blocks 1,1,2,2, 6 inner iterations, outer
    /// f64–f32, tolerance 1e-10 on M̂†M̂): with the snake terms and inner vectors in f32,
    /// in fixed16, and in f32 with the tensor-core M5⁻¹ it converges without a
    /// breakdown, the residual recomputed on the 5D D below 1e-8, in at most 60 % of
    /// the outer iterations of plain CG (the same device outer iteration with the
    /// identity); without the snake terms it converges in more outer iterations than
    /// with them. The host's MSPCG (f32 inner) needs the same outer iterations as the
    /// device's f32 one within 2.
    #[test]
    #[ignore = "needs a CUDA GPU: run the test binaries with --include-ignored on a GPU machine"]
    fn the_device_mspcg_solve_converges_in_fewer_outer_iterations() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/milc/lat.sample.l8");
        let u = read_gauge(path, &ReadOptions::default()).unwrap().field;
        let params = MobiusParams::mobius(8, 1.5, 0.5, 1.8, 0.01).unwrap();
        let (ctx, _dir) = qdsl_runtime::testing::context();
        let solver = || {
            MobiusSolver::new(
                &u,
                params.clone(),
                TimeBoundary::Antiperiodic,
                Precision::F32,
                SolverOptions::with_tolerance(1e-10),
            )
            .unwrap()
        };
        let device = solver().on_device(&ctx).unwrap();
        let eta = ColourSpinorField::gaussian(device.layout(), 3);
        let plain = solve_plain_cg(&device, &eta).unwrap();
        assert!(plain.solution.result.is_converged());
        let plain_iterations = plain.solution.result.iterations;
        println!("plain CG: {plain_iterations} outer iterations");
        let config = |snake, inner_precision, m5inv| MspcgConfig {
            blocks: [1, 1, 2, 2],
            inner: 6,
            snake,
            inner_precision,
            m5inv,
            directions: 1,
        };
        let mut with_snake = 0;
        for (snake, p, m) in [
            (Snake::Include, Precision::F32, M5invMode::Sweep),
            (Snake::Include, Precision::Fixed16, M5invMode::Sweep),
            (Snake::Include, Precision::F32, M5invMode::MmaF16),
            (Snake::Exclude, Precision::F32, M5invMode::Sweep),
        ] {
            let sol = solve_mspcg(&device, &eta, &config(snake, p, m)).unwrap();
            let r = &sol.solution.result;
            println!(
                "{snake:?} inner {} {}: {} outer iterations, residual on D {:.3e}",
                p.name(),
                m.name(),
                r.iterations,
                sol.solution.residual
            );
            assert!(r.is_converged(), "{:?}", r.convergence);
            assert!(sol.pcg.breakdown.is_none(), "{:?}", sol.pcg.breakdown);
            assert!(sol.solution.residual < 1e-8, "{:e}", sol.solution.residual);
            match snake {
                Snake::Include => {
                    assert!(
                        10 * r.iterations <= 6 * plain_iterations,
                        "{} against {plain_iterations}",
                        r.iterations
                    );
                    if p == Precision::F32 && m == M5invMode::Sweep {
                        with_snake = r.iterations;
                    }
                }
                Snake::Exclude => assert!(r.iterations > with_snake, "{}", r.iterations),
            }
        }
        let host = solve_mspcg(
            &solver(),
            &eta,
            &config(Snake::Include, Precision::F32, M5invMode::Sweep),
        )
        .unwrap();
        let d = host.solution.result.iterations.abs_diff(with_snake);
        assert!(
            d <= 2,
            "host {} against device {with_snake}",
            host.solution.result.iterations
        );
    }
}
