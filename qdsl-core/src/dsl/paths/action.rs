//! Closed loops and gauge actions as `link_paths!` data.
//!
//! An action spec is a list of loop terms `name: c * [s₁, …, s_L]` whose every direction
//! name is free: distinct names take distinct directions among all four, each in both
//! orientations, and the path must close (the steps in each name cancel). Its value is
//!
//! S[U] = β Σ_t c_t Σ_x Σ_{L ∈ loops_t(x)} (1 − Re tr U_L(x) / 3),
//!
//! loops_t(x) the distinct loops of the shape of term t based at x (a loop traversed from
//! another corner or in the other sense is the same loop: Re tr is invariant under both).
//! The plaquette `[+mu, +nu, -mu, -nu]` has 6 loops per site (one per plane), the
//! rectangle `[+mu, +mu, +nu, -mu, -mu, -nu]` 12 (two orientations per plane), so
//! Wilson is `c = 1 · plaquette` and tree-level Symanzik (Lüscher–Weisz)
//! `c₀ = 5/3 · plaquette, c₁ = −1/12 · rectangle`.
//!
//! Every assignment of directions to a term's names yields a concrete loop; those that
//! are the same loop (equal up to a cyclic rotation of the steps and reversal) form a
//! class, and every class of a term must have the same number `m_t` of members (its
//! multiplicity: 8 for the plaquette, 4 for the rectangle), so that
//! Σ_{L ∈ loops_t(x)} = (1/m_t) Σ_{assignments}.

use super::cpu::path_product;
use super::spec::{assignments_among, ConcreteStep, Dir, PathTerm, Step};
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::real::Real;
use crate::reduce::ordered_sum_by_index;
use std::collections::BTreeMap;

/// A gauge-action spec: closed-loop terms, every direction name free.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionSpec {
    /// Action name (snake case).
    pub name: String,
    /// The direction names, indexed by [`Dir::Free`].
    pub free_names: Vec<String>,
    /// The loop terms; steps use only [`Dir::Free`].
    pub terms: Vec<PathTerm>,
}

/// The concrete loops of one term: one representative per class (distinct loop per
/// site), and the class multiplicity m_t.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopClasses {
    /// One concrete loop per class, in a deterministic order.
    pub loops: Vec<Vec<ConcreteStep>>,
    /// Members of every class among the term's direction assignments.
    pub multiplicity: usize,
}

/// The steps of a loop traversed in the other sense: reversed order, each step negated.
pub fn reversed<S: Copy>(steps: &[S], negate: impl Fn(S) -> S) -> Vec<S> {
    steps.iter().rev().map(|s| negate(*s)).collect()
}

/// The smallest of the rotations of a concrete loop and of its reversal: two concrete
/// loops are the same loop (up to translation) iff their canonical forms agree.
pub fn canonical_loop(steps: &[ConcreteStep]) -> Vec<ConcreteStep> {
    let back = reversed(steps, |(d, o)| (d, -o));
    let n = steps.len();
    (0..n)
        .flat_map(|r| {
            [steps, &back[..]].map(|s| s[r..].iter().chain(&s[..r]).copied().collect::<Vec<_>>())
        })
        .min()
        .unwrap_or_default()
}

/// The concrete path of a term under one assignment (free index, direction,
/// orientation) of its names.
fn concrete(steps: &[Step], choice: &[(usize, usize, isize)]) -> Vec<ConcreteStep> {
    steps
        .iter()
        .map(|s| {
            let k = match s.dir {
                Dir::Free(k) => k,
                Dir::Mu => usize::MAX,
            };
            let (d, o) = choice
                .iter()
                .find(|c| c.0 == k)
                .map_or((0, 1), |c| (c.1, c.2));
            (d, if s.forward { o } else { -o })
        })
        .collect()
}

impl ActionSpec {
    fn error(&self, reason: String) -> DslError {
        DslError::InvalidSpec {
            kernel: self.name.clone(),
            reason,
        }
    }

    /// Checks every term: a non-empty path, only free directions (at most 4), closed
    /// (the steps in each name cancel), no step undoing the one before it (cyclically),
    /// no link traversed twice, classes of one size.
    pub fn validate(&self) -> Result<(), DslError> {
        if self.terms.is_empty() {
            return Err(self.error("expected at least one loop term, found none".into()));
        }
        for t in &self.terms {
            self.classes(t)?;
        }
        Ok(())
    }

    /// Validates one term and returns its loop classes.
    pub fn classes(&self, t: &PathTerm) -> Result<LoopClasses, DslError> {
        let term_err = |reason: String| self.error(format!("term `{}`: {reason}", t.name));
        let name = |k: usize| self.free_names.get(k).map_or("?", |s| s.as_str());
        if t.is_empty() {
            return Err(term_err("expected a closed loop, found `[]`".into()));
        }
        if t.steps.iter().any(|s| s.dir == Dir::Mu) {
            return Err(term_err(
                "expected only free direction names in a loop, found the link direction".into(),
            ));
        }
        let free = t.free_dirs();
        if free.len() > 4 {
            return Err(term_err(format!(
                "expected at most 4 direction names, found {}",
                free.len()
            )));
        }
        for &k in &free {
            let net: i64 = t
                .steps
                .iter()
                .filter(|s| s.dir == Dir::Free(k))
                .map(|s| if s.forward { 1 } else { -1 })
                .sum();
            if net != 0 {
                return Err(term_err(format!(
                    "expected a closed loop, found a net {net}·{} from start to end",
                    name(k)
                )));
            }
        }
        let n = t.steps.len();
        for i in 0..n {
            let (a, b) = (t.steps[i], t.steps[(i + 1) % n]);
            if a.dir == b.dir && a.forward != b.forward {
                let spell = |s: Step| match s.dir {
                    Dir::Free(k) => format!("{}{}", if s.forward { '+' } else { '-' }, name(k)),
                    Dir::Mu => "mu".to_string(),
                };
                return Err(term_err(format!(
                    "step {} (`{}`) undoes step {} (`{}`) of the closed loop: the same link back and forth",
                    (i + 1) % n + 1,
                    spell(b),
                    i + 1,
                    spell(a)
                )));
            }
        }
        let choices = assignments_among(&[0, 1, 2, 3], &free);
        if let Some(first) = choices.first() {
            let path = concrete(&t.steps, first);
            let mut site = [0i64; 4];
            let mut links = Vec::new();
            for (d, o) in path {
                let mut next = site;
                next[d] += o as i64;
                let link = (if o > 0 { site } else { next }, d);
                if links.contains(&link) {
                    return Err(term_err(
                        "expected every link of the loop once, found one traversed twice".into(),
                    ));
                }
                links.push(link);
                site = next;
            }
        }
        let mut classes: BTreeMap<Vec<ConcreteStep>, (usize, Vec<ConcreteStep>)> = BTreeMap::new();
        for choice in &choices {
            let path = concrete(&t.steps, choice);
            let entry = classes.entry(canonical_loop(&path)).or_insert((0, path));
            entry.0 += 1;
        }
        let sizes: Vec<usize> = classes.values().map(|c| c.0).collect();
        let multiplicity = sizes.first().copied().unwrap_or(1);
        if sizes.iter().any(|&s| s != multiplicity) {
            return Err(term_err(format!(
                "expected every distinct loop to arise from equally many direction choices, found {sizes:?}"
            )));
        }
        Ok(LoopClasses {
            loops: classes.into_values().map(|c| c.1).collect(),
            multiplicity,
        })
    }

    /// The action S[U] = β Σ_t c_t Σ_x Σ_{L ∈ loops_t(x)} (1 − Re tr U_L(x)/3), summed in
    /// f64 in a fixed order (0 on unit links).
    pub fn action<T: Real>(&self, u: &GaugeField<T>, beta: f64) -> Result<f64, DslError> {
        self.validate()?;
        let terms = self
            .terms
            .iter()
            .map(|t| Ok((t.coeff, self.classes(t)?.loops)))
            .collect::<Result<Vec<_>, DslError>>()?;
        let lat = *u.lattice();
        let sum = ordered_sum_by_index(lat.volume(), |cb| {
            let x = lat.coords_of_cb(cb);
            terms
                .iter()
                .map(|(c, loops)| {
                    c * loops
                        .iter()
                        .map(|l| 1.0 - path_product(u, x, l).trace().re.to_f64() / 3.0)
                        .sum::<f64>()
                })
                .sum::<f64>()
        });
        Ok(beta * sum)
    }

    /// The mean of Re tr U_L / 3 over the loops of term `index` and the sites (1 on unit
    /// links): the plaquette P for `[+mu, +nu, -mu, -nu]`, the rectangle average for
    /// `[+mu, +mu, +nu, -mu, -mu, -nu]`.
    pub fn loop_average<T: Real>(&self, u: &GaugeField<T>, index: usize) -> Result<f64, DslError> {
        let t = self.terms.get(index).ok_or_else(|| {
            self.error(format!(
                "expected a term index below {}, found {index}",
                self.terms.len()
            ))
        })?;
        let loops = self.classes(t)?.loops;
        let lat = *u.lattice();
        let sum = ordered_sum_by_index(lat.volume(), |cb| {
            let x = lat.coords_of_cb(cb);
            loops
                .iter()
                .map(|l| path_product(u, x, l).trace().re.to_f64() / 3.0)
                .sum::<f64>()
        });
        Ok(sum / (lat.volume() * loops.len()) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An action of one term from signed names (`"+a"`, `"-b"`), every name free.
    fn action(steps: &[&str]) -> ActionSpec {
        let mut names: Vec<String> = Vec::new();
        let steps = steps
            .iter()
            .map(|s| {
                let (sign, name) = s.split_at(1);
                let k = names.iter().position(|n| n == name).unwrap_or_else(|| {
                    names.push(name.to_string());
                    names.len() - 1
                });
                Step {
                    dir: Dir::Free(k),
                    forward: sign == "+",
                }
            })
            .collect();
        ActionSpec {
            name: "test".into(),
            free_names: names,
            terms: vec![PathTerm {
                name: "loop".into(),
                coeff: 1.0,
                steps,
            }],
        }
    }

    fn reason(spec: &ActionSpec) -> String {
        match spec.validate() {
            Err(DslError::InvalidSpec { reason, .. }) => reason,
            other => panic!("expected an invalid spec, found {other:?}"),
        }
    }

    /// Loops per site: 6 plaquettes (one per plane), 12 rectangles (two orientations in
    /// each of the 6 planes); multiplicities 8 and 4.
    #[test]
    fn plaquette_and_rectangle_classes() {
        let p = action(&["+a", "+b", "-a", "-b"]);
        let c = p.classes(&p.terms[0]).unwrap();
        assert_eq!((c.loops.len(), c.multiplicity), (6, 8));
        let r = action(&["+a", "+a", "+b", "-a", "-a", "-b"]);
        let c = r.classes(&r.terms[0]).unwrap();
        assert_eq!((c.loops.len(), c.multiplicity), (12, 4));
    }

    #[test]
    fn canonical_form_identifies_rotations_and_reversal() {
        let plaq = [(0, 1), (1, 1), (0, -1), (1, -1)];
        let rotated = [(1, 1), (0, -1), (1, -1), (0, 1)];
        let reversed_loop = [(1, 1), (0, 1), (1, -1), (0, -1)];
        let other_plane = [(0, 1), (2, 1), (0, -1), (2, -1)];
        assert_eq!(canonical_loop(&plaq), canonical_loop(&rotated));
        assert_eq!(canonical_loop(&plaq), canonical_loop(&reversed_loop));
        assert_ne!(canonical_loop(&plaq), canonical_loop(&other_plane));
    }

    #[test]
    fn malformed_loops_are_rejected_with_a_reason() {
        assert!(reason(&action(&["+a", "+b", "-a"])).contains("net 1·b"));
        assert!(reason(&action(&["+a", "-a", "+b", "-b"])).contains("undoes"));
        // Twice around a plaquette: every link traversed twice.
        assert!(
            reason(&action(&["+a", "+b", "-a", "-b", "+a", "+b", "-a", "-b"]))
                .contains("traversed twice")
        );
        assert!(reason(&action(&[])).contains("`[]`"));
    }
}
