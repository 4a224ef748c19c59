//! MSPCG solves of the Möbius system on the CPU: the normal equations
//! M̂†M̂ x = M̂† b̂ of the asymmetric even-odd M̂ by the multi-splitting preconditioned CG
//! ([`qdsl_runtime::solver::mspcg`]): outer flexible PCG in f64 (or f64 mixed with f32
//! through reliable updates), the preconditioner k inner f32 CG iterations on each
//! block's local A_s (with or without the snake terms), source preparation,
//! reconstruction and the residual on the 5D D as for every Möbius solve
//! ([`MobiusSolver::solve_with`]).

use crate::app::history::history_entries;
use crate::app::mobius::{MobiusSolution, MobiusSolver};
use crate::app::precision::Precision;
use qdsl_core::field::ColourSpinorField;
use qdsl_runtime::linear::{LinearOperator, NormalForm, NormalOperator, SolverField};
use qdsl_runtime::operator::mobius::MobiusBlocks;
use qdsl_runtime::solver::mspcg::{
    pcg, Identity, MultiSplitting, PaddedBlocks, PcgResult, Preconditioner, Snake,
};
use qdsl_runtime::solver::SolverError;
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
}

/// An MSPCG solve: the 5D solution (its `result` the whole solve on M̂†M̂) and the
/// preconditioner's report.
#[derive(Debug)]
pub struct MspcgSolution {
    /// ψ, the result and the residual on D.
    pub solution: MobiusSolution,
    /// Preconditioned iterations, preconditioner applications, breakdown.
    pub pcg: PcgResult,
}

/// D ψ = η with MSPCG on M̂†M̂ (module docs). The solver must iterate on the CPU in f64
/// or f32.
pub fn solve_mspcg(
    solver: &MobiusSolver,
    eta: &F64,
    config: &MspcgConfig,
) -> Result<MspcgSolution, String> {
    let precond = preconditioner(solver, config)?;
    solve_pcg(solver, eta, &precond)
}

/// The baseline of the study: the same outer iteration on the same normal equations
/// with the identity for the preconditioner — CG on M̂†M̂ with Polak–Ribière β and the
/// same stopping criterion.
pub fn solve_plain_cg(solver: &MobiusSolver, eta: &F64) -> Result<MspcgSolution, String> {
    solve_pcg(solver, eta, &Identity)
}

/// MSPCG's preconditioner for the solver's operator (f32 inner iterations).
fn preconditioner(
    solver: &MobiusSolver,
    config: &MspcgConfig,
) -> Result<MultiSplitting<MobiusBlocks<f32>>, String> {
    if solver.is_on_device() {
        return Err("--solver mspcg runs on the CPU only (for now): use --backend cpu".into());
    }
    let high = solver.operator();
    let blocks = high.blocks();
    let grid = PaddedBlocks::new(
        *blocks.gauge().lattice(),
        blocks.params().ls(),
        config.blocks,
        high.parity(),
    )
    .map_err(|e| e.to_string())?;
    MultiSplitting::<MobiusBlocks<f32>>::mobius(
        blocks.gauge(),
        blocks.params(),
        high.parity(),
        blocks.boundary(),
        grid,
        config.snake,
        config.inner,
    )
    .map_err(|e| e.to_string())
}

/// D ψ = η by [`pcg`] on M̂†M̂ x = M̂† b̂ with the preconditioner `precond`.
pub fn solve_pcg<P>(solver: &MobiusSolver, eta: &F64, precond: &P) -> Result<MspcgSolution, String>
where
    P: Preconditioner<F64> + Preconditioner<ColourSpinorField<f32>>,
{
    let high = solver.operator();
    let mut outcome = None;
    let solution = solver
        .solve_with(eta, |b| {
            let mut rhs = b.zeros_like();
            high.apply_dagger(&mut rhs, b)?;
            let a = NormalOperator::new(high, NormalForm::MdagM);
            let mut x = b.zeros_like();
            let opts = solver.options();
            let out = match solver.precision() {
                Precision::F64 => pcg(&a, &a, precond, &rhs, &mut x, opts)?,
                Precision::F32 => {
                    let a32 = NormalOperator::new(solver.operator_f32(), NormalForm::MdagM);
                    pcg(&a, &a32, precond, &rhs, &mut x, opts)?
                }
                other => {
                    return Err(SolverError::operator(std::io::Error::other(format!(
                        "--solver mspcg iterates in f64 or f32 (mixed with f64), not {}",
                        other.name()
                    ))))
                }
            };
            let result = out.result.clone();
            outcome = Some(out);
            Ok((result, x))
        })
        .map_err(|e| e.to_string())?;
    let pcg = outcome.ok_or("the MSPCG iteration did not run")?;
    Ok(MspcgSolution { solution, pcg })
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
        "inner_precision": "f32",
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
        "breakdown": breakdown,
        "history": history_entries(&r.history),
    })
}
