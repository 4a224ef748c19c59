//! `--solver` of `qdsl solve` ([`SolverArg`]: a [`SolverKind`], or `mspcg` for
//! `--action mobius`) and the MSPCG flags ([`MspcgArgs`]: `--blocks`, `--inner`,
//! `--no-snake`).

use crate::app::mobius_mspcg::MspcgConfig;
use clap::Args;
use qdsl_runtime::solver::mspcg::Snake;
use qdsl_runtime::solver::SolverKind;
use std::fmt;
use std::str::FromStr;

/// The `--solver` of `qdsl solve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolverArg {
    /// One of the single-shift solvers.
    Kind(SolverKind),
    /// Multi-splitting preconditioned CG on M̂†M̂ (`--action mobius`).
    Mspcg,
}

impl FromStr for SolverArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("mspcg") {
            return Ok(Self::Mspcg);
        }
        text.parse::<SolverKind>()
            .map(Self::Kind)
            .map_err(|e| format!("{e} (or mspcg, with --action mobius)"))
    }
}

impl fmt::Display for SolverArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kind(kind) => write!(f, "{kind}"),
            Self::Mspcg => f.write_str("mspcg"),
        }
    }
}

impl SolverArg {
    /// The single-shift solver, or an error for mspcg outside `--action mobius`.
    pub fn kind(self, action: impl fmt::Display) -> Result<SolverKind, String> {
        match self {
            Self::Kind(kind) => Ok(kind),
            Self::Mspcg => Err(format!(
                "--solver mspcg solves --action mobius only, not --action {action}"
            )),
        }
    }
}

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

    /// Names parse (mspcg and the solver kinds); blocks need four positive counts.
    #[test]
    fn solver_and_blocks_parse() {
        assert_eq!("mspcg".parse::<SolverArg>(), Ok(SolverArg::Mspcg));
        assert_eq!(
            "cgnr".parse::<SolverArg>(),
            Ok(SolverArg::Kind(SolverKind::Cgnr))
        );
        assert!("gmres".parse::<SolverArg>().unwrap_err().contains("mspcg"));
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
