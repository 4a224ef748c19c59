//! Boundary conditions of fermion fields, expressed as signs on hops that wrap.

use super::{Coords, Lattice};

/// The boundary condition of a fermion field in one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BoundaryCondition {
    /// ψ(x + L μ̂) = ψ(x).
    #[default]
    Periodic,
    /// ψ(x + L μ̂) = −ψ(x) (the physical choice in time).
    Antiperiodic,
}

impl BoundaryCondition {
    /// The sign a field picks up crossing the boundary `wraps` times (signed).
    pub fn sign(self, wraps: isize) -> f64 {
        match self {
            BoundaryCondition::Periodic => 1.0,
            BoundaryCondition::Antiperiodic if wraps % 2 != 0 => -1.0,
            BoundaryCondition::Antiperiodic => 1.0,
        }
    }
}

/// Boundary conditions in all four directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BoundaryConditions(pub [BoundaryCondition; 4]);

impl BoundaryConditions {
    /// Periodic in every direction.
    pub fn periodic() -> Self {
        Self([BoundaryCondition::Periodic; 4])
    }

    /// Periodic in space, antiperiodic in time: the usual fermion boundary condition.
    pub fn antiperiodic_time() -> Self {
        let mut b = Self::periodic();
        b.0[3] = BoundaryCondition::Antiperiodic;
        b
    }

    /// The sign of the hop from site `c` by `steps` (±1, ±3) in direction μ: −1 when the
    /// hop crosses an antiperiodic boundary an odd number of times, else +1.
    pub fn hop_sign(&self, lattice: &Lattice, c: Coords, mu: usize, steps: isize) -> f64 {
        let (_, wraps) = lattice.shift(c, mu, steps);
        self.0[mu].sign(wraps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn antiperiodic_time_flips_only_wrapping_time_hops() {
        let lat = Lattice::new([4, 4, 4, 4]).unwrap();
        let bc = BoundaryConditions::antiperiodic_time();
        assert_eq!(bc.hop_sign(&lat, [0, 0, 0, 3], 3, 1), -1.0);
        assert_eq!(bc.hop_sign(&lat, [0, 0, 0, 2], 3, 1), 1.0);
        assert_eq!(bc.hop_sign(&lat, [0, 0, 0, 0], 3, -1), -1.0);
        assert_eq!(bc.hop_sign(&lat, [0, 0, 0, 1], 3, 3), -1.0);
        assert_eq!(bc.hop_sign(&lat, [0, 0, 0, 0], 3, 3), 1.0);
        assert_eq!(
            bc.hop_sign(&lat, [3, 0, 0, 0], 0, 1),
            1.0,
            "space stays periodic"
        );
    }
}
