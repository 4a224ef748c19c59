//! The [`Action`] solved, with its names.

use std::fmt;
use std::str::FromStr;

/// The fermion action whose even-odd operator is solved (the correlator supports
/// the first four, see [`crate::app::correlator`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Wilson fermions, hopping parameter κ.
    Wilson,
    /// Naive staggered fermions, quark mass m.
    Staggered,
    /// Asqtad improved staggered fermions, quark mass m, tadpole factor u0.
    Asqtad,
    /// HISQ improved staggered fermions, quark mass m, Naik correction ε (u0 = 1).
    Hisq,
    /// Wilson-clover fermions, hopping parameter κ, clover coefficient c_sw.
    Clover,
    /// Twisted-mass (clover) fermions, hopping parameter κ, twist μ, c_sw (default 0).
    TwistedMass,
    /// Möbius domain-wall fermions (Ls, b5, c5, M5, m_f): solved by [`crate::app::mobius`].
    Mobius,
}

impl Action {
    /// Every action, in the order of [`Self::NAMES`].
    pub const ALL: [Action; 7] = [
        Action::Wilson,
        Action::Staggered,
        Action::Asqtad,
        Action::Hisq,
        Action::Clover,
        Action::TwistedMass,
        Action::Mobius,
    ];

    /// The names [`FromStr`] accepts.
    pub const NAMES: [&'static str; 7] = [
        "wilson",
        "staggered",
        "asqtad",
        "hisq",
        "clover",
        "twisted-mass",
        "mobius",
    ];

    /// The action's name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Wilson => Self::NAMES[0],
            Action::Staggered => Self::NAMES[1],
            Action::Asqtad => Self::NAMES[2],
            Action::Hisq => Self::NAMES[3],
            Action::Clover => Self::NAMES[4],
            Action::TwistedMass => Self::NAMES[5],
            Action::Mobius => Self::NAMES[6],
        }
    }

    /// Whether the action is one of the Wilson family (κ, four spins): Wilson, clover,
    /// twisted mass.
    pub fn is_wilson_like(self) -> bool {
        matches!(self, Action::Wilson | Action::Clover | Action::TwistedMass)
    }

    /// Whether the action's operator takes the parameter of the command-line `flag`:
    /// `--kappa` (Wilson family), `--mass` (staggered family), `--csw` (clover, twisted
    /// mass), `--mu` (twisted mass), `--epsilon-naik` (HISQ), `--u0` as a smearing
    /// parameter (asqtad, HISQ); any other flag: no.
    pub fn uses(self, flag: &str) -> bool {
        match flag {
            "--kappa" => self.is_wilson_like(),
            "--mass" => !self.is_wilson_like(),
            "--csw" => matches!(self, Action::Clover | Action::TwistedMass),
            "--mu" => self == Action::TwistedMass,
            "--epsilon-naik" => self == Action::Hisq,
            "--u0" => matches!(self, Action::Asqtad | Action::Hisq),
            _ => false,
        }
    }

    /// The first flag of `given` (flag, whether it was given) that was given although
    /// the action does not use it ([`Self::uses`]).
    pub fn first_unused(self, given: &[(&'static str, bool)]) -> Option<&'static str> {
        given
            .iter()
            .find(|&&(flag, given)| given && !self.uses(flag))
            .map(|&(flag, _)| flag)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Action {
    type Err = String;

    /// One of [`Self::NAMES`] (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown action {s:?}: expected one of {}",
                    Self::NAMES.join(", ")
                )
            })
    }
}
