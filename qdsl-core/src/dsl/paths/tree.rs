//! The GPU plan of a [`PathSpec`]: its terms factored into a tree of nested staples
//! (Horner's rule over the staple levels), evaluated by one thread per link, every
//! intermediate in registers.
//!
//! A term whose path starts with a free step s and ends with its reverse is a *wrap*
//! around its inner path Q: W_s(x) Q(x + ŝ) W_s(x + nμ̂)† (W_{+d}(y) = U_d(y),
//! W_{−d}(y) = U_d(y − d̂)†, n the displacement along μ). Peeling wraps from the outside
//! leaves a *core*: the link itself (`[+mu]`), the Naik path (`[+mu, +mu, +mu]`) or a path
//! that is no wrap (the rectangle staples of a gauge force). Terms with the same wraps
//! share them: by linearity
//!
//! Σ_σ wrap_σ(c₃ U) + Σ_{σ,ρ} wrap_σ(wrap_ρ(c₅ U)) + Σ_{σ,ρ,ν} wrap_σ(wrap_ρ(wrap_ν(c₇ U)))
//!   = Σ_σ wrap_σ(c₃ U + Σ_ρ wrap_ρ(c₅ U + Σ_ν wrap_ν(c₇ U))),
//!
//! so the value of a tree node at a site is the sum of its cores (each times its term's
//! coefficient) and of its children wrapped around it, a child evaluated at the
//! neighbouring site. A wrap binds a *new* free direction (summed over the directions
//! not yet used and both orientations) or is *tied* to one an enclosing wrap bound (the
//! Lepage term `[+nu, +nu, +mu, -nu, -nu]`: the inner ν takes the outer one's
//! orientation). Free names are renumbered in the order the wraps bind them, then the
//! core's own, so terms that differ only in their names' spelling share the tree.
//!
//! For asqtad fat links this is 168 matrix products per link (3 · 2 outer wraps of
//! 2 + 26) rather than MILC's 300 per site with every sub-staple stored as a field — more
//! arithmetic, no intermediate fields, one launch; the tree is the same for every μ, so
//! the emitted loops run over the directions (one copy of the code, not one per
//! direction choice).

use super::cpu::{hop, path_product};
use super::spec::{ConcreteStep, Dir, PathSpec, Step};
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::lattice::Coords;
use crate::math::ColourMatrix;
use crate::real::Real;
use rayon::prelude::*;
use std::fmt;

/// How a wrap chooses its direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wrap {
    /// Binds free name `k` (the next unbound one) to each direction not yet used,
    /// in both orientations.
    New(usize),
    /// Uses the direction of free name `k`, bound by an enclosing wrap, with its
    /// orientation (`same`) or the opposite one.
    Tied {
        /// The free name.
        name: usize,
        /// Whether the wrap's first step has the binding's orientation.
        same: bool,
    },
}

/// A core of a tree node: term `term`'s innermost path (steps in the tree's names),
/// multiplied out at the node's site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    /// Index of the term in the spec (its coefficient).
    pub term: usize,
    /// Free names bound by the enclosing wraps (names `0..bound`).
    pub bound: usize,
    /// The steps; free names below the node's depth are bound by its wraps, the others
    /// range over the remaining directions and both orientations.
    pub steps: Vec<Step>,
}

/// One node of the tree: the value V(x) = Σ_cores c_t core(x) + Σ_children wrap(V_child).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeNode {
    /// Cores summed at this node.
    pub cores: Vec<Core>,
    /// Children, each wrapped around this node.
    pub children: Vec<(Wrap, TreeNode)>,
}

/// A spec's tree: the root's value at x is F_μ(x).
#[derive(Clone, Debug, PartialEq)]
pub struct PathTree {
    /// The spec.
    pub spec: PathSpec,
    /// Displacement n of every path (x → x + nμ̂).
    pub displacement: usize,
    /// The root node.
    pub root: TreeNode,
}

/// A path's wraps from the outside in, its core and the names the wraps bind, names
/// renumbered (module docs).
fn peel(steps: &[Step]) -> (Vec<Wrap>, Vec<Step>, usize) {
    // Old name → (new name, whether its orientation is flipped).
    let mut rename: Vec<(usize, usize, bool)> = Vec::new();
    let mut wraps = Vec::new();
    let mut inner = steps;
    let renamed = |rename: &[(usize, usize, bool)], s: &Step| -> Step {
        match s.dir {
            Dir::Mu => *s,
            Dir::Free(k) => {
                let &(_, new, flip) = rename.iter().find(|r| r.0 == k).expect("renamed");
                Step {
                    dir: Dir::Free(new),
                    forward: s.forward != flip,
                }
            }
        }
    };
    while let (Some(first), Some(last), true) = (inner.first(), inner.last(), inner.len() >= 3) {
        let k = match (first.dir, last.dir) {
            (Dir::Free(a), Dir::Free(b)) if a == b && first.forward != last.forward => a,
            _ => break,
        };
        match rename.iter().find(|r| r.0 == k) {
            Some(&(_, new, flip)) => wraps.push(Wrap::Tied {
                name: new,
                same: first.forward != flip,
            }),
            None => {
                let new = rename.len();
                // Orient the name so that its first step is forward: it ranges over both.
                rename.push((k, new, !first.forward));
                wraps.push(Wrap::New(new));
            }
        }
        inner = &inner[1..inner.len() - 1];
    }
    let bound = rename.len();
    for s in inner {
        if let Dir::Free(k) = s.dir {
            if !rename.iter().any(|r| r.0 == k) {
                let new = rename.len();
                rename.push((k, new, !s.forward));
            }
        }
    }
    let core = inner.iter().map(|s| renamed(&rename, s)).collect();
    (wraps, core, bound)
}

impl TreeNode {
    fn insert(&mut self, wraps: &[Wrap], core: Core) {
        match wraps.split_first() {
            None => self.cores.push(core),
            Some((w, rest)) => {
                let child = match self.children.iter().position(|c| c.0 == *w) {
                    Some(i) => &mut self.children[i].1,
                    None => {
                        self.children.push((*w, TreeNode::default()));
                        &mut self.children.last_mut().expect("pushed").1
                    }
                };
                child.insert(rest, core);
            }
        }
    }

    /// Matrix products of one evaluation of this node at a site, for link direction
    /// with `used` directions already bound (μ included): 2 per wrap plus the child's,
    /// length − 1 per core path.
    pub fn products(&self, used: usize) -> usize {
        let free = 4 - used;
        let cores: usize = self
            .cores
            .iter()
            .map(|c| choices(free, new_names(&c.steps, c.bound)) * (c.steps.len() - 1))
            .sum();
        let children: usize = self
            .children
            .iter()
            .map(|(w, child)| match w {
                Wrap::New(_) => free * 2 * (2 + child.products(used + 1)),
                Wrap::Tied { .. } => 2 + child.products(used),
            })
            .sum();
        cores + children
    }
}

/// Names of `steps` at or above `bound` (the core's own).
pub(crate) fn new_names(steps: &[Step], bound: usize) -> usize {
    let mut names: Vec<usize> = steps
        .iter()
        .filter_map(|s| match s.dir {
            Dir::Free(k) if k >= bound => Some(k),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

/// Ordered choices of `k` distinct directions among `free`, times 2^k orientations.
fn choices(free: usize, k: usize) -> usize {
    (0..k).map(|i| 2 * free.saturating_sub(i)).product()
}

impl PathTree {
    /// Validates and factors a spec.
    pub fn new(spec: &PathSpec) -> Result<Self, DslError> {
        let displacement = spec.validate()?;
        let mut root = TreeNode::default();
        for (term, t) in spec.terms.iter().enumerate() {
            let (wraps, steps, bound) = peel(&t.steps);
            root.insert(&wraps, Core { term, bound, steps });
        }
        Ok(PathTree {
            spec: spec.clone(),
            displacement,
            root,
        })
    }

    /// Matrix products one thread computes for one link (the same for every μ).
    pub fn products_per_link(&self) -> usize {
        self.root.products(1)
    }

    /// The coefficient of each term with its tadpole factor, c_t u0^(−(L_t − 1)), in
    /// term order (the kernel's `c0`, `c1`, …).
    pub fn coefficients(&self, u0: f64) -> Vec<f64> {
        self.spec
            .terms
            .iter()
            .map(|t| t.tadpole_coeff(u0))
            .collect()
    }
}

/// The name of free name `k` of a tree: ν, ρ, σ, then `f3`, ….
pub(crate) fn name_of(k: usize) -> String {
    ["nu", "rho", "sigma"]
        .get(k)
        .map_or_else(|| format!("f{k}"), |s| s.to_string())
}

fn step_text(s: &Step) -> String {
    let d = match s.dir {
        Dir::Mu => "mu".to_string(),
        Dir::Free(k) => name_of(k),
    };
    format!("{}{d}", if s.forward { '+' } else { '-' })
}

impl fmt::Display for PathTree {
    /// The plan as `qdsl emit --plan` prints it: one line per node, children indented.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "link_paths! `{}`: one thread per link, {} matrix products per link, displacement {}",
            self.spec.name,
            self.products_per_link(),
            self.displacement
        )?;
        writeln!(f, "F_mu(x) =")?;
        fn node(
            f: &mut fmt::Formatter<'_>,
            spec: &PathSpec,
            n: &TreeNode,
            depth: usize,
        ) -> fmt::Result {
            let pad = "  ".repeat(depth + 1);
            for c in &n.cores {
                let steps: Vec<String> = c.steps.iter().map(step_text).collect();
                writeln!(
                    f,
                    "{pad}+ c{} [{}]   ({}: {})",
                    c.term,
                    steps.join(", "),
                    spec.terms[c.term].name,
                    spec.terms[c.term].coeff
                )?;
            }
            for (w, child) in &n.children {
                match w {
                    Wrap::New(k) => writeln!(
                        f,
                        "{pad}+ sum over {} (each free direction, both orientations) of W_{0}(x) [",
                        name_of(*k)
                    )?,
                    Wrap::Tied { name, same } => writeln!(
                        f,
                        "{pad}+ W_{}{}(x) [   (tied)",
                        if *same { "+" } else { "-" },
                        name_of(*name)
                    )?,
                }
                node(f, spec, child, depth + 1)?;
                writeln!(f, "{pad}  ](x + s) W(x + n mu)^dagger")?;
            }
            Ok(())
        }
        node(f, &self.spec, &self.root, 0)
    }
}

/// The (direction, orientation) bound to each free name on the way down the tree.
type Bindings = Vec<(usize, isize)>;

/// Every assignment of distinct directions outside `used` (a bit mask) and both
/// orientations to `count` new names, appended to `bound`.
fn bind_new(used: usize, count: usize, bound: &Bindings, out: &mut Vec<Bindings>) {
    if count == 0 {
        out.push(bound.clone());
        return;
    }
    for d in (0..4).filter(|d| used >> d & 1 == 0) {
        for o in [1, -1] {
            let mut b = bound.clone();
            b.push((d, o));
            bind_new(used | 1 << d, count - 1, &b, out);
        }
    }
}

/// A core's steps made concrete under `bindings` (names beyond them are the core's own,
/// bound by the caller).
fn concrete(steps: &[Step], mu: usize, bindings: &Bindings) -> Vec<ConcreteStep> {
    steps
        .iter()
        .map(|s| {
            let (d, o) = match s.dir {
                Dir::Mu => (mu, 1),
                Dir::Free(k) => bindings[k],
            };
            (d, if s.forward { o } else { -o })
        })
        .collect()
}

/// The tree's evaluation on the CPU, the reference of the GPU kernel: the same
/// recursion, one link at a time.
struct Eval<'a, T: Real> {
    tree: &'a PathTree,
    u: &'a GaugeField<T>,
    coeffs: &'a [T],
    mu: usize,
}

impl<T: Real> Eval<'_, T> {
    /// V_node(x) with the directions in `used` (μ included) bound as `bindings`.
    fn node(
        &self,
        n: &TreeNode,
        x: Coords,
        used: usize,
        bindings: &mut Bindings,
    ) -> ColourMatrix<T> {
        let lat = self.u.lattice();
        let mut v = ColourMatrix::zero();
        for c in &n.cores {
            let mut all = Vec::new();
            bind_new(used, new_names(&c.steps, c.bound), bindings, &mut all);
            for b in &all {
                let p = path_product(self.u, x, &concrete(&c.steps, self.mu, b));
                v += p.scale(self.coeffs[c.term]);
            }
        }
        let end = lat.shift(x, self.mu, self.tree.displacement as isize).0;
        for (w, child) in &n.children {
            let steps: Vec<(usize, isize)> = match *w {
                Wrap::New(_) => (0..4)
                    .filter(|d| used >> d & 1 == 0)
                    .flat_map(|d| [(d, 1), (d, -1)])
                    .collect(),
                Wrap::Tied { name, same } => {
                    let (d, o) = bindings[name];
                    vec![(d, if same { o } else { -o })]
                }
            };
            for s in steps {
                let (w_in, y) = hop(self.u, x, s);
                let (w_out, _) = hop(self.u, end, s);
                let inner = match *w {
                    Wrap::New(_) => {
                        bindings.push(s);
                        let q = self.node(child, y, used | 1 << s.0, bindings);
                        bindings.pop();
                        q
                    }
                    Wrap::Tied { .. } => self.node(child, y, used, bindings),
                };
                v += (w_in * inner).mul_adjoint(&w_out);
            }
        }
        v
    }
}

/// The smeared links of a tree on the CPU, link by link as the GPU kernel computes them:
/// F_μ(x) = V_root(x) for thin links `u` (phases folded in) and tadpole factor `u0`.
pub fn smear_cpu<T: Real>(tree: &PathTree, u: &GaugeField<T>, u0: f64) -> GaugeField<T> {
    let coeffs: Vec<T> = tree.coefficients(u0).into_iter().map(T::from_f64).collect();
    evaluate(tree, u, &coeffs)
}

/// [`smear_cpu`] with the term coefficients given (tadpole factors included, in term
/// order, as the kernel's `c0, c1, …`).
///
/// Errors unless there is one coefficient per term.
pub fn evaluate_cpu<T: Real>(
    tree: &PathTree,
    u: &GaugeField<T>,
    coeffs: &[f64],
) -> Result<GaugeField<T>, DslError> {
    if coeffs.len() != tree.spec.terms.len() {
        return Err(DslError::InvalidSpec {
            kernel: tree.spec.name.clone(),
            reason: format!(
                "expected {} term coefficients, found {}",
                tree.spec.terms.len(),
                coeffs.len()
            ),
        });
    }
    let coeffs: Vec<T> = coeffs.iter().map(|&c| T::from_f64(c)).collect();
    Ok(evaluate(tree, u, &coeffs))
}

fn evaluate<T: Real>(tree: &PathTree, u: &GaugeField<T>, coeffs: &[T]) -> GaugeField<T> {
    let lat = *u.lattice();
    let links: Vec<ColourMatrix<T>> = (0..4 * lat.volume())
        .into_par_iter()
        .map(|i| {
            let (cb, mu) = (i / 4, i % 4);
            let eval = Eval {
                tree,
                u,
                coeffs,
                mu,
            };
            eval.node(&tree.root, lat.coords_of_cb(cb), 1 << mu, &mut Vec::new())
        })
        .collect();
    let mut out = GaugeField::unit(lat);
    out.links_mut().copy_from_slice(&links);
    out
}
