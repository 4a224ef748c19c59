//! Choosing a solver by name: [`SolverKind`] (for command lines and configuration).

use super::{
    bicgstab, cg, cgne, cgnr, ConvertFrom, LinearOperator, SolveResult, SolverError, SolverField,
    SolverOptions,
};
use std::fmt;
use std::str::FromStr;

/// A single-shift solver for M x = b.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SolverKind {
    /// [`cg`]: M itself must be Hermitian positive definite.
    Cg,
    /// [`cgnr`]: CG on M†M x = M† b.
    Cgnr,
    /// [`cgne`]: CG on M M† y = b, x = M† y.
    Cgne,
    /// [`bicgstab`]: BiCGStab on M.
    BiCgStab,
}

impl SolverKind {
    /// Every kind, in the order of their names in [`SolverKind::NAMES`].
    pub const ALL: [SolverKind; 4] = [
        SolverKind::Cg,
        SolverKind::Cgnr,
        SolverKind::Cgne,
        SolverKind::BiCgStab,
    ];

    /// The names [`FromStr`] accepts: "cg", "cgnr", "cgne", "bicgstab".
    pub const NAMES: [&'static str; 4] = ["cg", "cgnr", "cgne", "bicgstab"];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Cg => Self::NAMES[0],
            SolverKind::Cgnr => Self::NAMES[1],
            SolverKind::Cgne => Self::NAMES[2],
            SolverKind::BiCgStab => Self::NAMES[3],
        }
    }

    /// Solves M x = b with this solver (high precision H with `op_high`, iteration in
    /// L with `op_low`; see each solver for the meaning of `x` on entry).
    pub fn solve<H, L, OH, OL>(
        self,
        op_high: &OH,
        op_low: &OL,
        b: &H,
        x: &mut H,
        opts: &SolverOptions,
    ) -> Result<SolveResult, SolverError>
    where
        H: SolverField + ConvertFrom<L>,
        L: SolverField + ConvertFrom<H>,
        OH: LinearOperator<H> + ?Sized,
        OL: LinearOperator<L> + ?Sized,
    {
        match self {
            SolverKind::Cg => cg(op_high, op_low, b, x, opts),
            SolverKind::Cgnr => cgnr(op_high, op_low, b, x, opts),
            SolverKind::Cgne => cgne(op_high, op_low, b, x, opts),
            SolverKind::BiCgStab => bicgstab(op_high, op_low, b, x, opts),
        }
    }
}

impl fmt::Display for SolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A solver name that is not one of [`SolverKind::NAMES`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown solver {found:?}: expected one of cg, cgnr, cgne, bicgstab")]
pub struct UnknownSolver {
    /// The name given.
    pub found: String,
}

impl FromStr for SolverKind {
    type Err = UnknownSolver;

    /// Parses a name of [`SolverKind::NAMES`], ignoring ASCII case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownSolver {
                found: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for kind in SolverKind::ALL {
            assert_eq!(kind.to_string().parse::<SolverKind>(), Ok(kind));
        }
        assert_eq!("BiCGStab".parse::<SolverKind>(), Ok(SolverKind::BiCgStab));
        let error = "gmres".parse::<SolverKind>().unwrap_err();
        assert_eq!(error.found, "gmres");
        assert!(error.to_string().contains("cgnr"));
    }
}
