//! `qdsl solve --action mobius --solver mspcg --reduced-ls L̂s (--transfer FILE |
//! --train-transfer OUT) [--mu μ]`: obtaining T (read, checked against the solve, or
//! trained on this configuration and written) before the reduced-Ls solve
//! ([`crate::app::mspcg_reduced`]).

use super::mspcg_args::{ReducedLsConfig, TransferSource};
use super::CliError;
use crate::app::mobius::MobiusSolver;
use crate::app::mobius_mspcg::MspcgConfig;
use crate::app::mspcg_reduced::{train_transfer, transfer_notes, ReducedSetup, SCALE_NOTE};
use qdsl_runtime::solver::mspcg::Transfer;
use serde_json::{json, Value};

/// T, μ and the reduced operator's scale for the solve, and what to record of them in
/// the JSON: read from the file (its Ls must be the solve's, its L̂s the one asked for,
/// if any; notes that differ from this solve's action or blocks are printed), or
/// trained and written.
pub fn obtain_transfer(
    solver: &MobiusSolver,
    config: &MspcgConfig,
    reduced: &ReducedLsConfig,
) -> Result<(ReducedSetup, Value), CliError> {
    let ls = solver.params().ls();
    match &reduced.transfer {
        TransferSource::Load(path) => {
            let loaded = Transfer::load(path)?;
            let t = loaded.transfer;
            if t.ls() != ls {
                return Err(format!(
                    "{}: the transfer maps Ls {} → {}, the solve has Ls {ls} (expected Ls {ls}, found {})",
                    path.display(),
                    t.ls(),
                    t.ls_hat(),
                    t.ls()
                )
                .into());
            }
            if let Some(ls_hat) = reduced.ls_hat {
                if ls_hat != t.ls_hat() {
                    return Err(format!(
                        "{}: --reduced-ls {ls_hat}, but the transfer maps to L̂s {} (expected {ls_hat}, found {})",
                        path.display(),
                        t.ls_hat(),
                        t.ls_hat()
                    )
                    .into());
                }
            }
            let noted_scale = loaded.notes.iter().find(|(k, _)| k == SCALE_NOTE);
            let file_scale = match noted_scale {
                Some((_, v)) => v.parse::<f64>().map_err(|_| {
                    format!(
                        "{}: note {SCALE_NOTE}: expected a number, found {v:?}",
                        path.display()
                    )
                })?,
                None => 1.0,
            };
            let scale = reduced.scale.unwrap_or(file_scale);
            let ours = transfer_notes(solver, config, scale);
            for (key, value) in &loaded.notes {
                if let Some((_, here)) = ours.iter().find(|(k, _)| k == key) {
                    if here != value {
                        println!(
                            "  note        {}: trained with {key} {value}, solving with {here}",
                            path.display()
                        );
                    }
                }
            }
            let mu = reduced.mu.unwrap_or(loaded.mu);
            if mu != loaded.mu {
                println!(
                    "  note        {}: trained with μ {}, solving with μ {mu}",
                    path.display(),
                    loaded.mu
                );
            }
            println!(
                "  transfer    {}: {} form, Ls {} → L̂s {}, μ {mu}, reduced scale {scale}",
                path.display(),
                t.form(),
                t.ls(),
                t.ls_hat()
            );
            let info = json!({
                "ls_hat": t.ls_hat(),
                "mu": mu,
                "reduced_scale": scale,
                "form": t.form().name(),
                "transfer_file": path.display().to_string(),
                "trained_here": false,
            });
            let setup = ReducedSetup {
                transfer: t,
                mu,
                scale,
            };
            Ok((setup, info))
        }
        TransferSource::Train(path) => {
            let ls_hat = reduced
                .ls_hat
                .ok_or("--train-transfer needs --reduced-ls")?;
            let tc = &reduced.train;
            let scale = reduced.scale.unwrap_or(1.0);
            println!(
                "  training    T ({} form from {}, Ls {ls} → {ls_hat}, reduced scale {scale}, μ {}): {} sources × {} MSPCG iterations, last {} {}s each; L-BFGS ≤ {} iterations",
                tc.form, tc.start.name(), tc.mu, tc.sources, tc.pcg_iterations, tc.keep, tc.objective.name(), tc.iterations
            );
            let trained = train_transfer(solver, config, ls_hat, scale, tc, |i, chi2| {
                println!("              iteration {i:3}  χ² {chi2:.6e}");
            })?;
            let c = &trained.calibration;
            println!(
                "  calibrated  T × √σ, σ {:.4e}, μ {}: χ² {:.4e} → {:.4e}",
                c.sigma, c.mu, c.chi2.0, c.chi2.1
            );
            let r = &trained.report;
            trained
                .transfer
                .save(path, r.mu, &transfer_notes(solver, config, scale))?;
            println!(
                "  trained     χ² {:.4e} → {:.4e} ({} evaluations, {}), μ {}; vectors {:.1} s, minimisation {:.1} s; written to {}",
                r.chi2[0],
                r.chi2.last().copied().unwrap_or(f64::NAN),
                r.evaluations,
                r.stop,
                r.mu,
                trained.seconds.0,
                trained.seconds.1,
                path.display()
            );
            let mu = r.mu;
            let info = json!({
                "ls_hat": ls_hat,
                "mu": mu,
                "mu_trained": tc.train_mu,
                "reduced_scale": scale,
                "form": tc.form.name(),
                "start": tc.start.name(),
                "objective": tc.objective.name(),
                "calibration": {"sigma": c.sigma, "mu": c.mu, "chi2": [c.chi2.0, c.chi2.1]},
                "transfer_file": path.display().to_string(),
                "trained_here": true,
                "training": {
                    "vectors": trained.vectors,
                    "sources": tc.sources,
                    "pcg_iterations": tc.pcg_iterations,
                    "keep": tc.keep,
                    "chi2": r.chi2,
                    "evaluations": r.evaluations,
                    "stop": r.stop,
                    "seconds_vectors": trained.seconds.0,
                    "seconds_minimisation": trained.seconds.1,
                },
            });
            let setup = ReducedSetup {
                transfer: trained.transfer,
                mu,
                scale,
            };
            Ok((setup, info))
        }
    }
}
