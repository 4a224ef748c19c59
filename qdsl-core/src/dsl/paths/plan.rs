//! Lowering a [`PathSpec`] to a plan of shared sub-paths, computed once per site the way
//! MILC's fat-link routine nests its staple calls: a staple over a free direction d of an
//! inner path Q,
//!
//! S(x) = W_{±d}(x) · Q(x ± d̂) · W_{±d}(x + nμ̂)†,
//!
//! (W_{+d}(y) = U_d(y), W_{−d}(y) = U_d(y − d̂)†, n the displacement along μ) is built from
//! the inner path's field, so 5-staples reuse 3-staples and 7-staples reuse 5-staples.
//! By linearity the two orientations of d are summed before the next level wraps them
//! (as MILC does), unless the inner path uses d itself (Lepage), where the orientation is
//! tied. Identical nodes are interned once (hash-consing).

use super::spec::{ConcreteStep, Dir, PathSpec, Step};
use crate::dsl::DslError;
use std::collections::HashMap;

/// One node of a plan: a field of 3 × 3 matrices over all sites, each from x to x + nμ̂.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// The ordered product of links along a concrete path (length − 1 products; the
    /// one-link path `[+mu]` is the thin link itself).
    Path(Vec<ConcreteStep>),
    /// W_s(x) · inner(x + ŝ) · W_s(x + nμ̂)† for the step s = (direction, orientation):
    /// 2 products.
    Staple {
        /// The wrapping step.
        step: ConcreteStep,
        /// The inner node (an earlier index).
        inner: usize,
    },
    /// The sum of two earlier nodes (18 real additions).
    Sum(usize, usize),
}

/// One term of the output: c · u0^(−(length − 1)) · Σ nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanTerm {
    /// The coefficient c (before the tadpole factor).
    pub coeff: f64,
    /// The path length (for the tadpole factor).
    pub length: usize,
    /// The nodes summed (one per choice of free directions).
    pub nodes: Vec<usize>,
}

/// The plan of one link direction μ: nodes in dependency order, and the output terms.
#[derive(Clone, Debug, PartialEq)]
pub struct DirectionPlan {
    /// The link direction.
    pub mu: usize,
    /// Nodes; every node refers only to earlier ones.
    pub nodes: Vec<Node>,
    /// Output terms.
    pub terms: Vec<PlanTerm>,
}

/// A lowered spec: one [`DirectionPlan`] per μ.
#[derive(Clone, Debug, PartialEq)]
pub struct PathPlan {
    /// The spec.
    pub spec: PathSpec,
    /// Displacement n of every path (x → x + nμ̂).
    pub displacement: usize,
    /// Plans for μ = 0..4.
    pub directions: Vec<DirectionPlan>,
}

/// Floating-point operations of one 3 × 3 complex matrix product: 27 complex
/// multiplications (6 flops) and 18 complex additions (2 flops).
pub const MATMUL_FLOPS: usize = 198;

/// Real numbers in a 3 × 3 complex matrix.
const MATRIX_REALS: usize = 18;

impl PathPlan {
    /// Validates and lowers a spec.
    pub fn new(spec: &PathSpec) -> Result<Self, DslError> {
        let displacement = spec.validate()?;
        let directions = (0..4).map(|mu| lower_direction(spec, mu)).collect();
        Ok(PathPlan {
            spec: spec.clone(),
            displacement,
            directions,
        })
    }

    /// Matrix products per site with the sub-path reuse of this plan:
    /// Σ_μ Σ_nodes (2 per staple, length − 1 per path).
    pub fn products_with_reuse(&self) -> usize {
        self.directions
            .iter()
            .flat_map(|d| d.nodes.iter())
            .map(|n| match n {
                Node::Path(p) => p.len() - 1,
                Node::Staple { .. } => 2,
                Node::Sum(..) => 0,
            })
            .sum()
    }

    /// Matrix products per site when every concrete path is multiplied out on its own:
    /// Σ_μ Σ_paths (length − 1).
    pub fn products_without_reuse(&self) -> usize {
        (0..4)
            .flat_map(|mu| self.spec.concrete_paths(mu, 1.0))
            .map(|(_, p)| p.len() - 1)
            .sum()
    }

    /// Flops per site: 198 per matrix product, 18 per node sum, and per μ the output
    /// F = Σ_t c_t Σ_nodes: 18 per node added within a term, 18 to scale each term and
    /// 18 to add it to the output (the first term's addition is free).
    pub fn flops_per_site(&self) -> usize {
        let mut flops = MATMUL_FLOPS * self.products_with_reuse();
        for d in &self.directions {
            let sums = d
                .nodes
                .iter()
                .filter(|n| matches!(n, Node::Sum(..)))
                .count();
            flops += MATRIX_REALS * sums;
            for t in &d.terms {
                flops += MATRIX_REALS * (t.nodes.len() - 1) + 2 * MATRIX_REALS;
            }
            flops -= MATRIX_REALS;
        }
        flops
    }
}

/// Every assignment of distinct directions ≠ μ to `count` free directions.
fn direction_choices(mu: usize, count: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for _ in 0..count {
        let mut next = Vec::new();
        for partial in &out {
            for d in (0..4).filter(|d| *d != mu && !partial.contains(d)) {
                let mut p: Vec<usize> = partial.clone();
                p.push(d);
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// Builds the nodes of one direction, interning identical ones.
struct Builder {
    mu: usize,
    nodes: Vec<Node>,
    index: HashMap<Node, usize>,
}

impl Builder {
    fn intern(&mut self, node: Node) -> usize {
        if let Some(&i) = self.index.get(&node) {
            return i;
        }
        self.nodes.push(node.clone());
        self.index.insert(node, self.nodes.len() - 1);
        self.nodes.len() - 1
    }

    fn sum(&mut self, ids: &[usize]) -> usize {
        let mut acc = ids[0];
        for &b in &ids[1..] {
            acc = self.intern(Node::Sum(acc, b));
        }
        acc
    }

    /// The node of `steps` summed over the orientations of free directions not fixed in
    /// `orient`; `dirs[k]` is the direction of free direction k.
    fn build(&mut self, steps: &[Step], dirs: &[usize], orient: &mut [Option<isize>]) -> usize {
        let sign = |s: &Step| if s.forward { 1 } else { -1 };
        if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
            if let (Dir::Free(k), true) = (first.dir, steps.len() >= 3) {
                if last.dir == first.dir && last.forward != first.forward {
                    let inner = &steps[1..steps.len() - 1];
                    let d = dirs[k];
                    if let Some(o) = orient[k] {
                        let i = self.build(inner, dirs, orient);
                        return self.intern(Node::Staple {
                            step: (d, sign(first) * o),
                            inner: i,
                        });
                    }
                    let inner_uses_k = inner.iter().any(|s| s.dir == Dir::Free(k));
                    let mut parts = Vec::new();
                    let shared = (!inner_uses_k).then(|| self.build(inner, dirs, orient));
                    for o in [1, -1] {
                        let i = match shared {
                            Some(i) => i,
                            None => {
                                orient[k] = Some(o);
                                let i = self.build(inner, dirs, orient);
                                orient[k] = None;
                                i
                            }
                        };
                        parts.push(self.intern(Node::Staple {
                            step: (d, sign(first) * o),
                            inner: i,
                        }));
                    }
                    return self.sum(&parts);
                }
            }
        }
        // Not staple-shaped: multiply out every orientation choice left open.
        let open: Vec<usize> = (0..orient.len())
            .filter(|&k| orient[k].is_none() && steps.iter().any(|s| s.dir == Dir::Free(k)))
            .collect();
        let mut parts = Vec::new();
        for bits in 0..(1usize << open.len()) {
            let mut o = orient.to_vec();
            for (j, &k) in open.iter().enumerate() {
                o[k] = Some(if bits >> j & 1 == 0 { 1 } else { -1 });
            }
            let path = steps
                .iter()
                .map(|s| {
                    let (d, or) = match s.dir {
                        Dir::Mu => (self.mu, 1),
                        Dir::Free(k) => (dirs[k], o[k].unwrap_or(1)),
                    };
                    (d, sign(s) * or)
                })
                .collect();
            parts.push(self.intern(Node::Path(path)));
        }
        self.sum(&parts)
    }
}

/// The plan of direction μ.
fn lower_direction(spec: &PathSpec, mu: usize) -> DirectionPlan {
    let mut b = Builder {
        mu,
        nodes: Vec::new(),
        index: HashMap::new(),
    };
    let nfree = spec.free_names.len().max(
        spec.terms
            .iter()
            .flat_map(|t| t.free_dirs())
            .map(|k| k + 1)
            .max()
            .unwrap_or(0),
    );
    let mut terms = Vec::new();
    for t in &spec.terms {
        let free = t.free_dirs();
        let mut nodes = Vec::new();
        for choice in direction_choices(mu, free.len()) {
            let mut dirs = vec![mu; nfree];
            for (k, d) in free.iter().zip(&choice) {
                dirs[*k] = *d;
            }
            let mut orient = vec![None; nfree];
            nodes.push(b.build(&t.steps, &dirs, &mut orient));
        }
        terms.push(PlanTerm {
            coeff: t.coeff,
            length: t.len(),
            nodes,
        });
    }
    DirectionPlan {
        mu,
        nodes: b.nodes,
        terms,
    }
}
