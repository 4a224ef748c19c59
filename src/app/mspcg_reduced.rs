//! Reduced-Ls MSPCG on the CPU ([`qdsl_runtime::solver::mspcg::ReducedLs`]): the
//! preconditioner z = (T† K̂ T + μ) r of the Möbius normal equations M̂†M̂ x = M̂† b̂, K̂
//! the k inner f32 CG iterations of MSPCG on the blocks of the Möbius operator with the
//! same b5, c5, M5, m_f and L̂s slices; training T on one configuration
//! ([`train_transfer`]: low-mode vectors from full-Ls MSPCG residuals or errors, χ² minimised by
//! L-BFGS with its analytic gradient), and the solve with a trained or loaded T.
//!
//! The reduced operator may carry a larger Möbius scale than the full one: with
//! `scale` = s, b̂5 + ĉ5 = s (b5 + c5) and b̂5 − ĉ5 = b5 − c5. s = Ls/L̂s is the choice of
//! Yin and Mawhinney's MADWF: the Möbius approximation of the sign function is
//! tanh(Ls · atanh((b5 + c5) h)) for the kernel's eigenvalues h, ≈ tanh(Ls (b5 + c5) h)
//! for small h, so L̂s · s (b5 + c5) = Ls (b5 + c5) matches the two operators on the low
//! modes, which are what the preconditioner must carry.

use crate::app::mobius::MobiusSolver;
use crate::app::mobius_mspcg::{solve_pcg, MspcgConfig, MspcgSolution};
use qdsl_core::field::{ColourSpinorField, SiteSubset};
use qdsl_core::lattice::Parity;
use qdsl_runtime::linear::{NormalForm, NormalOperator};
use qdsl_runtime::operator::mobius::{MobiusBlocks, MobiusParams};
use qdsl_runtime::solver::mspcg::training::{
    calibrate, low_mode_vectors, train, Calibration, Objective, TrainOptions, TrainReport,
};
use qdsl_runtime::solver::mspcg::{
    MultiSplitting, PaddedBlocks, ReducedLs, Transfer, TransferForm, TransferStart,
};
use std::time::Instant;

type F64 = ColourSpinorField<f64>;

/// How T is trained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainConfig {
    /// The parametrisation.
    pub form: TransferForm,
    /// μ of the preconditioner being trained.
    pub mu: f64,
    /// Random sources of the low-mode solves (Gaussian, seeds `seed`, `seed + 1`, …).
    pub sources: usize,
    /// Full-Ls MSPCG iterations per source.
    pub pcg_iterations: usize,
    /// Residuals kept from the last iterations of each source's solve.
    pub keep: usize,
    /// L-BFGS iterations at most.
    pub iterations: usize,
    /// Seed of the first source.
    pub seed: u64,
    /// Train μ together with T (starting from `mu`).
    pub train_mu: bool,
    /// The transfer training starts from.
    pub start: TransferStart,
    /// What χ² measures: residual or error vectors.
    pub objective: Objective,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            form: TransferForm::Spin,
            mu: 0.05,
            sources: 4,
            pcg_iterations: 6,
            keep: 2,
            iterations: 20,
            seed: 1000,
            train_mu: false,
            start: TransferStart::Walls,
            objective: Objective::Residual,
        }
    }
}

/// The reduced-Ls preconditioner's parameters: T, μ and the reduced operator's Möbius
/// scale (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct ReducedSetup {
    /// T.
    pub transfer: Transfer,
    /// μ.
    pub mu: f64,
    /// b̂5 + ĉ5 = scale · (b5 + c5).
    pub scale: f64,
}

/// A trained transfer and how training went.
#[derive(Debug)]
pub struct Trained {
    /// T.
    pub transfer: Transfer,
    /// The closed-form fit of T's scale (and μ) before the minimisation.
    pub calibration: Calibration,
    /// χ² history, evaluations, why it stopped.
    pub report: TrainReport,
    /// Training vectors used.
    pub vectors: usize,
    /// Seconds for the vectors and for the minimisation.
    pub seconds: (f64, f64),
}

/// The solver's Möbius parameters with `ls_hat` slices and b5 + c5 multiplied by `scale`
/// (b5 − c5 kept; module docs; constant b5, c5 only).
pub fn reduced_params(
    solver: &MobiusSolver,
    ls_hat: usize,
    scale: f64,
) -> Result<MobiusParams, String> {
    let p = solver.params();
    let constant = |v: &[qdsl_core::Complex<f64>]| v.iter().all(|z| *z == v[0] && z.im == 0.0);
    if !(constant(p.b5()) && constant(p.c5())) {
        return Err("--reduced-ls needs constant real b5 and c5 (Möbius, not zMöbius)".into());
    }
    if ls_hat == 0 || ls_hat >= p.ls() {
        return Err(format!(
            "--reduced-ls {ls_hat}: must lie between 1 and Ls − 1 = {}",
            p.ls() - 1
        ));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(format!(
            "--reduced-scale {scale}: must be a positive number"
        ));
    }
    let (b5, c5) = (p.b5()[0].re, p.c5()[0].re);
    let (plus, minus) = (scale * (b5 + c5), b5 - c5);
    MobiusParams::mobius(
        ls_hat,
        0.5 * (plus + minus),
        0.5 * (plus - minus),
        p.m5(),
        p.mass(),
    )
    .map_err(|e| e.to_string())
}

/// MSPCG's block preconditioner (f32 inner CG) for the solver's operator with `params`.
fn blocks_preconditioner(
    solver: &MobiusSolver,
    params: &MobiusParams,
    config: &MspcgConfig,
) -> Result<MultiSplitting<MobiusBlocks<f32>>, String> {
    if solver.is_on_device() {
        return Err("--solver mspcg runs on the CPU only (for now): use --backend cpu".into());
    }
    let high = solver.operator();
    let gauge = high.blocks().gauge();
    let grid = PaddedBlocks::new(*gauge.lattice(), params.ls(), config.blocks, high.parity())
        .map_err(|e| e.to_string())?;
    MultiSplitting::<MobiusBlocks<f32>>::mobius(
        gauge,
        params,
        high.parity(),
        high.blocks().boundary(),
        grid,
        config.snake,
        config.inner,
    )
    .map_err(|e| e.to_string())
}

/// The reduced-Ls preconditioner z = (T† K̂ T + μ) r for the solver's operator.
pub fn reduced_preconditioner(
    solver: &MobiusSolver,
    config: &MspcgConfig,
    setup: ReducedSetup,
) -> Result<ReducedLs<MultiSplitting<MobiusBlocks<f32>>>, String> {
    let ReducedSetup {
        transfer,
        mu,
        scale,
    } = setup;
    if transfer.ls() != solver.params().ls() {
        return Err(format!(
            "the transfer maps Ls {} → {}, but the operator has Ls {}",
            transfer.ls(),
            transfer.ls_hat(),
            solver.params().ls()
        ));
    }
    if !(mu.is_finite() && mu >= 0.0) {
        return Err(format!("--mu {mu}: must be a finite number ≥ 0"));
    }
    let params = reduced_params(solver, transfer.ls_hat(), scale)?;
    let inner = blocks_preconditioner(solver, &params, config)?;
    Ok(ReducedLs::new(transfer, mu, inner))
}

/// Trains T for L̂s = `ls_hat` and the reduced operator's `scale` on the solver's
/// configuration (module docs): from the configured start, its scale (and μ with
/// `train_mu`) fitted in closed form, then L-BFGS; `progress` gets each accepted
/// iteration's χ².
pub fn train_transfer(
    solver: &MobiusSolver,
    config: &MspcgConfig,
    ls_hat: usize,
    scale: f64,
    train_config: &TrainConfig,
    progress: impl FnMut(usize, f64),
) -> Result<Trained, String> {
    let params = reduced_params(solver, ls_hat, scale)?;
    let high = solver.operator();
    let a = NormalOperator::new(high, NormalForm::MdagM);
    let start = Instant::now();
    let full = blocks_preconditioner(solver, solver.params(), config)?;
    let layout = high.blocks().layout(SiteSubset::Single(Parity::Even));
    let sources: Vec<F64> = (0..train_config.sources as u64)
        .map(|i| F64::gaussian(layout, train_config.seed + i))
        .collect();
    let vectors = low_mode_vectors(
        &a,
        &full,
        &sources,
        train_config.pcg_iterations,
        train_config.keep,
        train_config.objective,
    )
    .map_err(|e| e.to_string())?;
    if vectors.is_empty() {
        return Err("no training vectors (every low-mode solve stopped at once)".into());
    }
    let vector_seconds = start.elapsed().as_secs_f64();
    let k = blocks_preconditioner(solver, &params, config)?;
    let mut transfer = train_config
        .start
        .transfer(solver.params().ls(), ls_hat, train_config.form)
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let calibration = calibrate(
        &a,
        &k,
        &transfer,
        train_config.mu,
        &vectors,
        train_config.train_mu,
    )
    .map_err(|e| e.to_string())?;
    transfer.scale(calibration.sigma.sqrt());
    let report = train(
        &a,
        &k,
        &mut transfer,
        calibration.mu,
        &vectors,
        &TrainOptions {
            iterations: train_config.iterations,
            train_mu: train_config.train_mu,
        },
        progress,
    )
    .map_err(|e| e.to_string())?;
    Ok(Trained {
        transfer,
        calibration,
        report,
        vectors: vectors.len(),
        seconds: (vector_seconds, start.elapsed().as_secs_f64()),
    })
}

/// The note key of the reduced operator's Möbius scale in a transfer file.
pub const SCALE_NOTE: &str = "reduced_scale";

/// The notes saved with a transfer: the action's parameters, the blocks it was trained
/// with and the reduced operator's scale (read back as the default scale).
pub fn transfer_notes(
    solver: &MobiusSolver,
    config: &MspcgConfig,
    scale: f64,
) -> Vec<(String, String)> {
    let p = solver.params();
    let dims = solver.operator().blocks().gauge().lattice().dims();
    vec![
        ("b5".into(), p.b5()[0].re.to_string()),
        ("c5".into(), p.c5()[0].re.to_string()),
        ("m5".into(), p.m5().to_string()),
        ("mass".into(), p.mass().to_string()),
        ("lattice".into(), format!("{dims:?}")),
        ("blocks".into(), format!("{:?}", config.blocks)),
        ("inner".into(), config.inner.to_string()),
        (SCALE_NOTE.into(), scale.to_string()),
    ]
}

/// D ψ = η by PCG on M̂†M̂ with the reduced-Ls preconditioner of `setup`.
pub fn solve_reduced(
    solver: &MobiusSolver,
    eta: &F64,
    config: &MspcgConfig,
    setup: ReducedSetup,
) -> Result<MspcgSolution, String> {
    let precond = reduced_preconditioner(solver, config, setup)?;
    solve_pcg(solver, eta, &precond, &config.options(solver))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_core::dsl::variant::TimeBoundary;
    use qdsl_core::field::GaugeField;
    use qdsl_core::lattice::Lattice;
    use qdsl_runtime::solver::SolverOptions;

    /// The reduced operator: L̂s slices, b̂5 + ĉ5 = s (b5 + c5) and b̂5 − ĉ5 = b5 − c5 (here
    /// 1.5, 0.5 and s = 3: b̂5 = 3.5, ĉ5 = 2.5), M5 and m_f kept; s ≤ 0 and L̂s ≥ Ls refused.
    #[test]
    fn the_reduced_operator_scales_b5_plus_c5_only() {
        let gauge = GaugeField::random(Lattice::new([4, 4, 4, 4]).unwrap(), 5);
        let params = MobiusParams::mobius(12, 1.5, 0.5, 1.8, 0.01).unwrap();
        let solver = MobiusSolver::new(
            &gauge,
            params,
            TimeBoundary::Antiperiodic,
            crate::app::precision::Precision::F64,
            SolverOptions::with_tolerance(1e-8),
        )
        .unwrap();
        let p = reduced_params(&solver, 4, 3.0).unwrap();
        assert_eq!(p.ls(), 4);
        assert!(p
            .b5()
            .iter()
            .all(|b| (b.re - 3.5).abs() < 1e-15 && b.im == 0.0));
        assert!(p
            .c5()
            .iter()
            .all(|c| (c.re - 2.5).abs() < 1e-15 && c.im == 0.0));
        assert_eq!((p.m5(), p.mass()), (1.8, 0.01));
        let same = reduced_params(&solver, 4, 1.0).unwrap();
        assert_eq!((same.b5()[0].re, same.c5()[0].re), (1.5, 0.5));
        let e = reduced_params(&solver, 4, 0.0).unwrap_err();
        assert!(e.contains("--reduced-scale 0"), "{e}");
        assert!(reduced_params(&solver, 12, 1.0)
            .unwrap_err()
            .contains("--reduced-ls 12"));
    }
}
