//! The MSPCG flags of `qdsl solve` ([`MspcgArgs`]: `--blocks`, `--inner`,
//! `--no-snake`, and for the reduced-Ls preconditioner `--reduced-ls`, `--transfer`,
//! `--train-transfer`, `--mu`, `--transfer-form`, `--train-*`), for `--solver mspcg`
//! ([`SolverArg::Mspcg`]).

use super::solver_arg::SolverArg;
use crate::app::mobius_mspcg::MspcgConfig;
use crate::app::mspcg_reduced::TrainConfig;
use crate::app::precision::Precision;
use clap::Args;
use qdsl_core::dsl::fused5d::M5invMode;
use qdsl_runtime::solver::mspcg::training::Objective;
use qdsl_runtime::solver::mspcg::{Snake, TransferForm, TransferStart};
use std::path::PathBuf;

/// Where the reduced-Ls preconditioner's T comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TransferSource {
    /// Read from a file written by an earlier `--train-transfer`.
    Load(PathBuf),
    /// Trained on this configuration, then written to the file.
    Train(PathBuf),
}

/// The reduced-Ls MSPCG knobs: z = (T† K̂ T + μ) r.
#[derive(Clone, Debug, PartialEq)]
pub struct ReducedLsConfig {
    /// L̂s (`--reduced-ls`; when loading, the file's if not given).
    pub ls_hat: Option<usize>,
    /// Where T comes from.
    pub transfer: TransferSource,
    /// μ (`--mu`; when loading, the file's if not given).
    pub mu: Option<f64>,
    /// The reduced operator's Möbius scale (`--reduced-scale`; when loading, the file's if
    /// not given; else 1).
    pub scale: Option<f64>,
    /// How to train (with [`TransferSource::Train`]).
    pub train: TrainConfig,
}

/// The outer FCG's kept directions without `--fcg-directions`.
pub const DEFAULT_FCG_DIRECTIONS: usize = 4;

/// The MSPCG flags.
#[derive(Debug, Args, Clone, PartialEq, Default)]
pub struct MspcgArgs {
    /// MSPCG: blocks per direction Bx,By,Bz,Bt of the virtual block grid (each block's
    /// extent even; e.g. 2,2,2,2 or 1,2,2,2).
    #[arg(long, value_parser = parse_blocks)]
    pub blocks: Option<[usize; 4]>,
    /// MSPCG: inner CG iterations on each block per preconditioner application.
    #[arg(long)]
    pub inner: Option<usize>,
    /// MSPCG: leave out the snake terms (plain Dirichlet blocks).
    #[arg(long)]
    pub no_snake: bool,
    /// MSPCG: the outer flexible CG makes each search direction A-orthogonal to this many
    /// previous ones (Notay's FCG(m); default 4; 1 is the Polak–Ribière β). On the 24⁴
    /// study 3 inner iterations took 10789 outer iterations with 1 and 3737 with 4 (CG:
    /// 6362), 4 and 6 inner 2–4 % fewer; two fields of memory each (docs/mspcg.md).
    #[arg(long)]
    pub fcg_directions: Option<usize>,
    /// MSPCG: the inner vectors' precision: f32 (the default), or on the GPU fixed16 or
    /// fixed8 (computed in f32). With --solver mspcg, --m5inv chooses the inner
    /// operator's M5⁻¹ (GPU).
    #[arg(long)]
    pub inner_precision: Option<Precision>,
    /// MSPCG: the reduced-Ls preconditioner z = (T† K̂ T + μ) r with K̂ the block solves
    /// on L̂s slices (e.g. 4 or 6 for Ls 12); needs --transfer or --train-transfer.
    #[arg(long)]
    pub reduced_ls: Option<usize>,
    /// Reduced-Ls MSPCG: read T from this file (written by --train-transfer).
    #[arg(long, conflicts_with = "train_transfer")]
    pub transfer: Option<PathBuf>,
    /// Reduced-Ls MSPCG: train T on this configuration, write it to this file, then solve.
    #[arg(long)]
    pub train_transfer: Option<PathBuf>,
    /// Reduced-Ls MSPCG: the reduced operator's b5 + c5 is this factor times the solve's
    /// (b5 − c5 kept); Ls/L̂s is MADWF's choice (default: the transfer file's, else 1).
    #[arg(long)]
    pub reduced_scale: Option<f64>,
    /// Reduced-Ls MSPCG training: the transfer it starts from, walls (the default: the
    /// wall slices' chiral halves kept whole, the bulk averaged) or averaging (block
    /// averages of the whole fifth dimension).
    #[arg(long, value_parser = TransferStart::from_name)]
    pub transfer_start: Option<TransferStart>,
    /// Reduced-Ls MSPCG training: the vectors χ² is measured on, residual (‖A P v − v‖²
    /// over PCG residuals) or error (‖P A e − e‖² over PCG errors x* − x_k, each training
    /// solve run to convergence).
    #[arg(long, value_parser = Objective::from_name)]
    pub train_objective: Option<Objective>,
    /// Reduced-Ls MSPCG training: spin (16 parameters per (ŝ, s) pair) or chiral (2).
    #[arg(long, value_parser = TransferForm::from_name)]
    pub transfer_form: Option<TransferForm>,
    /// Reduced-Ls MSPCG training: random sources of the low-mode solves (default 4).
    #[arg(long)]
    pub train_sources: Option<usize>,
    /// Reduced-Ls MSPCG training: full-Ls MSPCG iterations per source (default 6); the
    /// residuals of the last --train-keep (default 2) are the training vectors.
    #[arg(long)]
    pub train_pcg: Option<usize>,
    /// Reduced-Ls MSPCG training: residuals kept per source (default 2).
    #[arg(long)]
    pub train_keep: Option<usize>,
    /// Reduced-Ls MSPCG training: L-BFGS iterations at most (default 20).
    #[arg(long)]
    pub train_iterations: Option<usize>,
    /// Reduced-Ls MSPCG training: train μ together with T (from --mu or 0.05).
    #[arg(long)]
    pub train_mu: bool,
}

fn parse_blocks(text: &str) -> Result<[usize; 4], String> {
    let parts: Vec<&str> = text.split(',').collect();
    let bad = || format!("--blocks {text}: expected four positive counts Bx,By,Bz,Bt");
    if parts.len() != 4 {
        return Err(bad());
    }
    let mut out = [0; 4];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = p.trim().parse::<usize>().map_err(|_| bad())?;
        if *o == 0 {
            return Err(bad());
        }
    }
    Ok(out)
}

impl MspcgArgs {
    /// The MSPCG configuration for `--solver mspcg` (default 6 inner iterations; blocks
    /// required); for any other solver an error naming a given MSPCG flag.
    pub fn config(
        &self,
        solver: SolverArg,
        m5inv: Option<M5invMode>,
    ) -> Result<Option<MspcgConfig>, String> {
        if solver != SolverArg::Mspcg {
            let given = [
                ("--blocks", self.blocks.is_some()),
                ("--inner", self.inner.is_some()),
                ("--no-snake", self.no_snake),
                ("--fcg-directions", self.fcg_directions.is_some()),
                ("--inner-precision", self.inner_precision.is_some()),
                ("--reduced-ls", self.reduced_ls.is_some()),
                ("--transfer", self.transfer.is_some()),
                ("--train-transfer", self.train_transfer.is_some()),
            ];
            return match given.iter().find(|(_, g)| *g) {
                Some((flag, _)) => Err(format!("{flag} is a flag of --solver mspcg, not {solver}")),
                None => Ok(None),
            };
        }
        let blocks = self
            .blocks
            .ok_or("--solver mspcg needs --blocks Bx,By,Bz,Bt (e.g. 2,2,2,2)")?;
        let inner = self.inner.unwrap_or(6);
        if inner == 0 {
            return Err("--inner must be at least 1".into());
        }
        let directions = self.fcg_directions.unwrap_or(DEFAULT_FCG_DIRECTIONS);
        if directions == 0 {
            return Err("--fcg-directions must be at least 1 (1: the Polak–Ribière β)".into());
        }
        Ok(Some(MspcgConfig {
            blocks,
            inner,
            snake: if self.no_snake {
                Snake::Exclude
            } else {
                Snake::Include
            },
            inner_precision: self.inner_precision.unwrap_or(Precision::F32),
            m5inv: m5inv.unwrap_or(M5invMode::Sweep),
            directions,
        }))
    }
}

impl MspcgArgs {
    /// The reduced-Ls configuration, if any reduced-Ls flag is given (with --solver
    /// mspcg): an error naming the flag that is missing or out of range. `mu` is the
    /// command's `--mu` (the twisted mass of other actions; μ of z = (T†K̂T + μ)r here).
    pub fn reduced(&self, mu: Option<f64>) -> Result<Option<ReducedLsConfig>, String> {
        let training = [
            ("--transfer-form", self.transfer_form.is_some()),
            ("--transfer-start", self.transfer_start.is_some()),
            ("--train-objective", self.train_objective.is_some()),
            ("--train-sources", self.train_sources.is_some()),
            ("--train-pcg", self.train_pcg.is_some()),
            ("--train-keep", self.train_keep.is_some()),
            ("--train-iterations", self.train_iterations.is_some()),
            ("--train-mu", self.train_mu),
        ];
        let transfer = match (&self.transfer, &self.train_transfer) {
            (Some(path), None) => {
                if let Some((flag, _)) = training.iter().find(|(_, g)| *g) {
                    return Err(format!(
                        "{flag} is a training flag: use it with --train-transfer, not --transfer"
                    ));
                }
                TransferSource::Load(path.clone())
            }
            (None, Some(path)) => TransferSource::Train(path.clone()),
            (Some(_), Some(_)) => {
                return Err(
                    "--transfer (read T) and --train-transfer (train T) exclude each other".into(),
                )
            }
            (None, None) => {
                let given = [
                    ("--reduced-ls", self.reduced_ls.is_some()),
                    ("--reduced-scale", self.reduced_scale.is_some()),
                ]
                .into_iter()
                .chain(training);
                return match given.into_iter().find(|(_, g)| *g) {
                    Some((flag, _)) => Err(format!(
                        "{flag} belongs to reduced-Ls MSPCG: give --transfer FILE or --train-transfer OUT"
                    )),
                    None => Ok(None),
                };
            }
        };
        if let TransferSource::Train(_) = transfer {
            if self.reduced_ls.is_none() {
                return Err("--train-transfer needs --reduced-ls L̂s (e.g. 4 for Ls 12)".into());
            }
        }
        if let Some(mu) = mu {
            if !(mu.is_finite() && mu >= 0.0) {
                return Err(format!("--mu {mu}: must be a finite number ≥ 0"));
            }
        }
        if let Some(scale) = self.reduced_scale {
            if !(scale.is_finite() && scale > 0.0) {
                return Err(format!(
                    "--reduced-scale {scale}: must be a positive number"
                ));
            }
        }
        let defaults = TrainConfig::default();
        let positive = |flag: &str, v: Option<usize>, default: usize| match v {
            Some(0) => Err(format!("{flag} must be at least 1")),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        let train = TrainConfig {
            form: self.transfer_form.unwrap_or(defaults.form),
            mu: mu.unwrap_or(defaults.mu),
            sources: positive("--train-sources", self.train_sources, defaults.sources)?,
            pcg_iterations: positive("--train-pcg", self.train_pcg, defaults.pcg_iterations)?,
            keep: positive("--train-keep", self.train_keep, defaults.keep)?,
            iterations: self.train_iterations.unwrap_or(defaults.iterations),
            seed: defaults.seed,
            train_mu: self.train_mu,
            start: self.transfer_start.unwrap_or(defaults.start),
            objective: self.train_objective.unwrap_or(defaults.objective),
        };
        if train.keep > train.pcg_iterations {
            return Err(format!(
                "--train-keep {} exceeds --train-pcg {}: the residuals kept come from the solve's iterations",
                train.keep, train.pcg_iterations
            ));
        }
        Ok(Some(ReducedLsConfig {
            ls_hat: self.reduced_ls,
            transfer,
            mu,
            scale: self.reduced_scale,
            train,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdsl_runtime::solver::SolverKind;

    /// Blocks need four positive counts; the MSPCG flags belong to --solver mspcg.
    #[test]
    fn blocks_parse_and_flags_belong_to_mspcg() {
        assert_eq!(parse_blocks("1,2,2,2"), Ok([1, 2, 2, 2]));
        assert!(parse_blocks("2,2,2").is_err());
        assert!(parse_blocks("2,0,2,2").is_err());
        let args = MspcgArgs {
            inner: Some(4),
            ..MspcgArgs::default()
        };
        assert!(args
            .config(SolverArg::Kind(SolverKind::Cgnr), None)
            .unwrap_err()
            .contains("--inner"));
        assert!(args
            .config(SolverArg::Mspcg, None)
            .unwrap_err()
            .contains("--blocks"));
        // The outer FCG's kept directions: default 4, 0 refused, an MSPCG flag.
        let with = |m| MspcgArgs {
            blocks: Some([1, 1, 2, 2]),
            fcg_directions: m,
            ..MspcgArgs::default()
        };
        let config = |m| with(m).config(SolverArg::Mspcg, None);
        assert_eq!(config(None).unwrap().unwrap().directions, 4);
        assert_eq!(config(Some(1)).unwrap().unwrap().directions, 1);
        assert!(config(Some(0)).unwrap_err().contains("--fcg-directions"));
        let alone = MspcgArgs {
            fcg_directions: Some(4),
            ..MspcgArgs::default()
        };
        assert!(alone
            .config(SolverArg::Kind(SolverKind::Cgnr), None)
            .unwrap_err()
            .contains("--fcg-directions"));
    }

    /// Reduced-Ls flags: --transfer and --train-transfer exclude each other, training
    /// needs --reduced-ls, training flags need --train-transfer, bad values are named.
    #[test]
    fn reduced_ls_flags() {
        let base = MspcgArgs {
            blocks: Some([2, 2, 2, 2]),
            ..MspcgArgs::default()
        };
        assert_eq!(base.reduced(None), Ok(None));
        // --mu alone is the twisted mass of other actions: no reduced-Ls configuration.
        assert_eq!(base.reduced(Some(0.1)), Ok(None));
        let with = |f: &dyn Fn(&mut MspcgArgs)| {
            let mut a = base.clone();
            f(&mut a);
            a
        };
        let e = with(&|a| a.reduced_ls = Some(4)).reduced(None).unwrap_err();
        assert!(
            e.contains("--reduced-ls") && e.contains("--transfer FILE"),
            "{e}"
        );
        let train = with(&|a| a.train_transfer = Some("T.out".into()));
        assert!(train.reduced(None).unwrap_err().contains("--reduced-ls"));
        let train4 = MspcgArgs {
            reduced_ls: Some(4),
            ..train.clone()
        };
        let ok = train4.reduced(Some(0.3)).unwrap().unwrap();
        assert_eq!(ok.transfer, TransferSource::Train("T.out".into()));
        assert_eq!((ok.ls_hat, ok.train.mu), (Some(4), 0.3));
        let e = train4.reduced(Some(f64::NAN)).unwrap_err();
        assert!(e.contains("--mu NaN"), "{e}");
        let e = MspcgArgs {
            train_keep: Some(9),
            ..train4.clone()
        }
        .reduced(None)
        .unwrap_err();
        assert!(e.contains("--train-keep 9"), "{e}");
        let e = with(&|a| {
            a.transfer = Some("T.in".into());
            a.train_iterations = Some(3);
        })
        .reduced(None)
        .unwrap_err();
        assert!(e.contains("--train-iterations"), "{e}");
        // The reduced operator's scale and the training start.
        let e = with(&|a| a.reduced_scale = Some(3.0))
            .reduced(None)
            .unwrap_err();
        assert!(e.contains("--reduced-scale"), "{e}");
        let scaled = MspcgArgs {
            reduced_scale: Some(3.0),
            transfer_start: Some(TransferStart::Walls),
            ..train4.clone()
        };
        let ok = scaled.reduced(None).unwrap().unwrap();
        assert_eq!(
            (ok.scale, ok.train.start),
            (Some(3.0), TransferStart::Walls)
        );
        assert_eq!(train4.reduced(None).unwrap().unwrap().scale, None);
        let e = MspcgArgs {
            reduced_scale: Some(0.0),
            ..train4.clone()
        }
        .reduced(None)
        .unwrap_err();
        assert!(e.contains("--reduced-scale 0"), "{e}");
        let e = with(&|a| {
            a.transfer = Some("T.in".into());
            a.transfer_start = Some(TransferStart::Walls);
        })
        .reduced(None)
        .unwrap_err();
        assert!(e.contains("--transfer-start"), "{e}");
        let e = with(&|a| {
            a.transfer = Some("T.in".into());
            a.train_objective = Some(Objective::Error);
        })
        .reduced(None)
        .unwrap_err();
        assert!(e.contains("--train-objective"), "{e}");
        let err = MspcgArgs {
            train_objective: Some(Objective::Error),
            ..train4.clone()
        };
        assert_eq!(
            err.reduced(None).unwrap().unwrap().train.objective,
            Objective::Error
        );
        assert_eq!(Objective::from_name("error"), Ok(Objective::Error));
        assert!(Objective::from_name("errors")
            .unwrap_err()
            .contains("residual"));
        assert_eq!(TransferStart::from_name("walls"), Ok(TransferStart::Walls));
        assert!(TransferStart::from_name("wall")
            .unwrap_err()
            .contains("averaging"));
    }
}
