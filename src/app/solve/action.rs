//! The [`Action`] solved and the [`Precision`] the iteration runs in, with their names.

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

/// The precision the iteration runs in; the solution and the true residual are always
/// kept in f64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Pure f64.
    F64,
    /// Mixed f64–f32: iteration in f32, reliable updates in f64.
    F32,
    /// Mixed f64–16-bit fixed point (per-site f32 norm), reliable updates in f64.
    Fixed16,
    /// Mixed f64–8-bit fixed point (per-site f32 norm), reliable updates in f64.
    Fixed8,
    /// Mixed f64–f16 (IEEE half), reliable updates in f64.
    F16,
    /// Mixed f64–20-bit packed (6 reals per 128 bits, shared exponent), reliable updates
    /// in f64; the operator computes in f32.
    Packed20,
    /// Mixed f64–30-bit packed (6 reals per 192 bits), reliable updates in f64; the
    /// operator computes in f64.
    Packed30,
}

impl Precision {
    /// Every precision, in the order of [`Self::NAMES`].
    pub const ALL: [Precision; 7] = [
        Precision::F64,
        Precision::F32,
        Precision::Fixed16,
        Precision::Fixed8,
        Precision::F16,
        Precision::Packed20,
        Precision::Packed30,
    ];

    /// The names [`FromStr`] accepts.
    pub const NAMES: [&'static str; 7] = [
        "f64", "f32", "fixed16", "fixed8", "f16", "packed20", "packed30",
    ];

    /// A description for the summary: "f64" or "f64–<low> (reliable updates)".
    pub fn describe(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f64–f32 (reliable updates)",
            Precision::Fixed16 => "f64–fixed16 (reliable updates)",
            Precision::Fixed8 => "f64–fixed8 (reliable updates)",
            Precision::F16 => "f64–f16 (reliable updates)",
            Precision::Packed20 => "f64–packed20 (reliable updates)",
            Precision::Packed30 => "f64–packed30 (reliable updates)",
        }
    }

    /// Whether the iteration runs in a lower precision than the solution.
    pub fn is_mixed(self) -> bool {
        self != Precision::F64
    }
}

impl FromStr for Precision {
    type Err = String;

    /// "f64", "f32", "fixed16", "fixed8", "f16", "packed20" or "packed30" (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(s))
            .map(|i| Self::ALL[i])
            .ok_or_else(|| {
                format!(
                    "unknown precision {s:?}: expected f64 (pure), or f32, fixed16, f16, \
                     packed20 or packed30 (mixed with f64)"
                )
            })
    }
}
