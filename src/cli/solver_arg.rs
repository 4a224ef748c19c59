//! `--solver` of `qdsl solve` ([`SolverArg`]): a single-shift Krylov solver of the
//! even-odd system ([`SolverKind`]), `mspcg` (`--action mobius`) or `sap-gcr` (Wilson and
//! clover, the full system) — one definition for every solver the command runs.

use qdsl_runtime::solver::SolverKind;
use std::fmt;
use std::str::FromStr;

/// The `--solver` of `qdsl solve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolverArg {
    /// cg, cgnr, cgne or bicgstab on M̂.
    Kind(SolverKind),
    /// Multi-splitting preconditioned CG on M̂†M̂ (`--action mobius`).
    Mspcg,
    /// SAP-preconditioned GCR on the full M (Wilson and clover).
    SapGcr,
}

impl FromStr for SolverArg {
    type Err = String;

    /// "mspcg", "sap-gcr", or a [`SolverKind`] name (ASCII case ignored).
    fn from_str(text: &str) -> Result<Self, String> {
        if text.eq_ignore_ascii_case("mspcg") {
            return Ok(Self::Mspcg);
        }
        if text.eq_ignore_ascii_case("sap-gcr") {
            return Ok(Self::SapGcr);
        }
        text.parse::<SolverKind>().map(Self::Kind).map_err(|e| {
            format!("{e} (or mspcg, with --action mobius; or sap-gcr, with wilson or clover)")
        })
    }
}

impl fmt::Display for SolverArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kind(kind) => write!(f, "{kind}"),
            Self::Mspcg => f.write_str("mspcg"),
            Self::SapGcr => f.write_str("sap-gcr"),
        }
    }
}

impl SolverArg {
    /// The single-shift solver, or an error naming `action` for the solvers that are
    /// not one.
    pub fn kind(self, action: impl fmt::Display) -> Result<SolverKind, String> {
        match self {
            Self::Kind(kind) => Ok(kind),
            Self::Mspcg => Err(format!(
                "--solver mspcg solves --action mobius only, not --action {action}"
            )),
            Self::SapGcr => Err(format!(
                "--solver sap-gcr solves --action wilson or clover, not --action {action}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name parses to its solver and prints back; an unknown name lists them.
    #[test]
    fn names_parse_and_print() {
        for (name, want) in [
            ("mspcg", SolverArg::Mspcg),
            ("SAP-GCR", SolverArg::SapGcr),
            ("cgnr", SolverArg::Kind(SolverKind::Cgnr)),
            ("bicgstab", SolverArg::Kind(SolverKind::BiCgStab)),
        ] {
            let got = name.parse::<SolverArg>().unwrap();
            assert_eq!(got, want);
            assert_eq!(got.to_string(), name.to_ascii_lowercase());
        }
        let e = "gmres".parse::<SolverArg>().unwrap_err();
        assert!(e.contains("mspcg") && e.contains("sap-gcr"), "{e}");
        assert!(SolverArg::Mspcg
            .kind("wilson")
            .unwrap_err()
            .contains("mobius"));
        assert!(SolverArg::SapGcr
            .kind("asqtad")
            .unwrap_err()
            .contains("asqtad"));
    }
}
