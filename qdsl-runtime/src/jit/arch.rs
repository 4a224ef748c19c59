//! GPU architectures: the `sm_XY` NVRTC and ptxas compile for.

use std::fmt;
use std::str::FromStr;

/// A compute capability X.Y, written `sm_XY` (e.g. `sm_90` for the H100).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major version X.
    pub major: u32,
    /// Minor version Y.
    pub minor: u32,
}

impl Arch {
    /// Compute capability `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The H100's architecture, sm_90: the default target of offline compiles.
    pub const SM_90: Arch = Arch::new(9, 0);

    /// The virtual architecture of the same capability, `compute_XY`: what NVRTC is asked
    /// for, since qdsl keeps only the PTX. (Given `sm_XY`, NVRTC also assembles a cubin —
    /// a second ptxas run, 40–60 % of its time — that qdsl would throw away; the PTX is
    /// the same either way.)
    pub fn virtual_name(&self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// A string that is not an architecture.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid GPU architecture {found:?}: expected sm_XY (e.g. sm_90), XY or X.Y")]
pub struct InvalidArch {
    /// The string given.
    pub found: String,
}

impl FromStr for Arch {
    type Err = InvalidArch;

    /// Parses `sm_90`, `90` or `9.0` (also `sm_100`, `100`, `10.0`: the minor version is
    /// the last digit).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidArch {
            found: s.to_string(),
        };
        let t = s.trim();
        let t = t.strip_prefix("sm_").unwrap_or(t);
        let (major, minor) = match t.split_once('.') {
            Some((a, b)) => (a, b),
            None if t.len() >= 2 => t.split_at(t.len() - 1),
            None => return Err(bad()),
        };
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) || minor.len() != 1 {
            return Err(bad());
        }
        Ok(Arch::new(
            major.parse().map_err(|_| bad())?,
            minor.parse().map_err(|_| bad())?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_spellings_and_prints_sm_xy() {
        for s in ["sm_90", "90", "9.0"] {
            assert_eq!(s.parse(), Ok(Arch::SM_90), "{s}");
        }
        assert_eq!("sm_100".parse(), Ok(Arch::new(10, 0)));
        assert_eq!("8.6".parse::<Arch>().unwrap().to_string(), "sm_86");
        for bad in ["", "9", "sm_", "sm_9x", "9.10", "compute_90"] {
            assert!(bad.parse::<Arch>().is_err(), "{bad}");
        }
    }
}
