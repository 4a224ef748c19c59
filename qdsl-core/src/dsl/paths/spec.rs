//! A `link_paths!` spec as data: terms c · [s₁, s₂, …], each step a signed direction that
//! is either the link direction μ or a free direction (ν, ρ, σ) ranging over the others.

use crate::dsl::DslError;

/// A direction of a path step, relative to the link direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// The link direction μ.
    Mu,
    /// Free direction number `k` of the spec (the k-th distinct name other than `mu`).
    Free(usize),
}

/// One step of a symbolic path: a direction and its sign (`+nu` forward, `-nu` backward).
/// A free direction's sign is relative: `+nu` ranges over both orientations of ν, and
/// `-nu` is then the opposite of whichever orientation `+nu` took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The direction.
    pub dir: Dir,
    /// True for `+`, false for `-`.
    pub forward: bool,
}

/// One step of a concrete path: direction (0..4) and orientation (+1 or −1).
pub type ConcreteStep = (usize, isize);

/// One term of a spec: `name: coeff * [steps]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PathTerm {
    /// The term's name (`staple3`).
    pub name: String,
    /// The coefficient c before the tadpole factor.
    pub coeff: f64,
    /// The symbolic path.
    pub steps: Vec<Step>,
}

impl PathTerm {
    /// The number of links of the path.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the path has no links (never true for a validated spec).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The coefficient with the tadpole factor: c · u0^(−(length − 1)).
    pub fn tadpole_coeff(&self, u0: f64) -> f64 {
        self.coeff / u0.powi(self.len() as i32 - 1)
    }

    /// The free directions the path uses, in order of first appearance.
    pub fn free_dirs(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for s in &self.steps {
            if let Dir::Free(k) = s.dir {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        out
    }
}

/// A smeared-link spec: the output link of direction μ at x is
/// F_μ(x) = Σ_terms c_t u0^(−(len_t − 1)) Σ_{choices} P_t(x), the inner sum running over
/// every assignment of distinct directions ≠ μ to the term's free directions and both
/// orientations of each.
#[derive(Clone, Debug, PartialEq)]
pub struct PathSpec {
    /// Kernel name (snake case).
    pub name: String,
    /// The name of the output field.
    pub output: String,
    /// The free direction names, indexed by [`Dir::Free`].
    pub free_names: Vec<String>,
    /// The terms.
    pub terms: Vec<PathTerm>,
}

impl PathSpec {
    /// Checks the spec and returns its displacement n: every path runs from x to x + n μ̂
    /// with n ≥ 1 (1 for fat links, 3 for Naik links).
    ///
    /// Errors: no terms, an empty path, more than three free directions in a path, a
    /// path whose free steps do not cancel, or paths of different displacements.
    pub fn validate(&self) -> Result<usize, DslError> {
        let err = |reason: String| DslError::InvalidSpec {
            kernel: self.name.clone(),
            reason,
        };
        if self.terms.is_empty() {
            return Err(err("expected at least one path term, found none".into()));
        }
        let mut displacement = None;
        for t in &self.terms {
            if t.is_empty() {
                return Err(err(format!(
                    "term `{}`: expected a path, found `[]`",
                    t.name
                )));
            }
            if t.free_dirs().len() > 3 {
                return Err(err(format!(
                    "term `{}`: expected at most 3 free directions (the others than μ), found {}",
                    t.name,
                    t.free_dirs().len()
                )));
            }
            let net = |d: Dir| {
                t.steps
                    .iter()
                    .filter(|s| s.dir == d)
                    .map(|s| if s.forward { 1 } else { -1 })
                    .sum::<i64>()
            };
            for k in t.free_dirs() {
                if net(Dir::Free(k)) != 0 {
                    return Err(err(format!(
                        "term `{}`: expected the steps in `{}` to cancel, found a net {}",
                        t.name,
                        self.free_names.get(k).map_or("?", |s| s.as_str()),
                        net(Dir::Free(k))
                    )));
                }
            }
            let n = net(Dir::Mu);
            if n < 1 {
                return Err(err(format!(
                    "term `{}`: expected a path from x to x + n·mu with n ≥ 1, found n = {n}",
                    t.name
                )));
            }
            match displacement {
                None => displacement = Some(n),
                Some(m) if m != n => {
                    return Err(err(format!(
                        "term `{}`: expected displacement {m}·mu like the first term, found {n}·mu",
                        t.name
                    )))
                }
                _ => {}
            }
        }
        Ok(displacement.unwrap_or(1) as usize)
    }

    /// Every concrete path of direction `mu` with its tadpole-corrected coefficient:
    /// each term once per assignment of distinct directions ≠ μ to its free directions
    /// and per orientation of each.
    pub fn concrete_paths(&self, mu: usize, u0: f64) -> Vec<(f64, Vec<ConcreteStep>)> {
        let mut out = Vec::new();
        for t in &self.terms {
            for choice in assignments(mu, &t.free_dirs()) {
                let path = t
                    .steps
                    .iter()
                    .map(|s| {
                        let (d, o) = match s.dir {
                            Dir::Mu => (mu, 1),
                            Dir::Free(k) => choice
                                .iter()
                                .find(|c| c.0 == k)
                                .map_or((mu, 1), |c| (c.1, c.2)),
                        };
                        (d, if s.forward { o } else { -o })
                    })
                    .collect();
                out.push((t.tadpole_coeff(u0), path));
            }
        }
        out
    }
}

/// Every assignment (free index, direction, orientation) of distinct directions ≠ μ and
/// both orientations to the free directions `free`.
pub fn assignments(mu: usize, free: &[usize]) -> Vec<Vec<(usize, usize, isize)>> {
    let allowed: Vec<usize> = (0..4).filter(|d| *d != mu).collect();
    assignments_among(&allowed, free)
}

/// Every assignment (free index, direction, orientation) of distinct directions taken
/// from `allowed`, and both orientations, to the free directions `free` (for closed
/// loops, where every name is free, `allowed` is all four directions).
pub fn assignments_among(allowed: &[usize], free: &[usize]) -> Vec<Vec<(usize, usize, isize)>> {
    let mut out = vec![Vec::new()];
    for &k in free {
        let mut next = Vec::new();
        for partial in &out {
            for &d in allowed
                .iter()
                .filter(|d| !partial.iter().any(|p: &(usize, usize, isize)| p.1 == **d))
            {
                for o in [1, -1] {
                    let mut p = partial.clone();
                    p.push((k, d, o));
                    next.push(p);
                }
            }
        }
        out = next;
    }
    out
}
