//! The MSPCG flags of `qdsl solve` ([`MspcgArgs`]: `--blocks`, `--inner`,
//! `--no-snake`), for `--solver mspcg` ([`SolverArg::Mspcg`]).

use super::solver_arg::SolverArg;
use crate::app::mobius_mspcg::MspcgConfig;
use clap::Args;
use qdsl_runtime::solver::mspcg::Snake;

/// The MSPCG flags.
#[derive(Debug, Args, Clone, Copy, PartialEq, Eq)]
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
    pub fn config(&self, solver: SolverArg) -> Result<Option<MspcgConfig>, String> {
        if solver != SolverArg::Mspcg {
            let given = [
                ("--blocks", self.blocks.is_some()),
                ("--inner", self.inner.is_some()),
                ("--no-snake", self.no_snake),
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
        Ok(Some(MspcgConfig {
            blocks,
            inner,
            snake: if self.no_snake {
                Snake::Exclude
            } else {
                Snake::Include
            },
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
            blocks: None,
            inner: Some(4),
            no_snake: false,
        };
        assert!(args
            .config(SolverArg::Kind(SolverKind::Cgnr))
            .unwrap_err()
            .contains("--inner"));
        assert!(args
            .config(SolverArg::Mspcg)
            .unwrap_err()
            .contains("--blocks"));
    }
}
