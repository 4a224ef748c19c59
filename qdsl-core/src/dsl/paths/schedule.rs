//! The launch schedule of a [`PathPlan`] on the GPU: per link direction μ, the plan's nodes
//! in dependency order (node i of direction μ in buffer slot i; slots are reused across
//! directions), then the output F_μ = Σ_t c_t u0^(−(L_t − 1)) Σ_nodes N.
//!
//! Two fusions keep the launch count and the node-buffer traffic down without changing
//! the arithmetic:
//!
//! * a node N = S₁ + S₂ whose operands are the two staples of one direction d in opposite
//!   orientations, each used only by that sum (the orientation sum MILC does by
//!   linearity), is one [`Launch::StaplePair`]: both staples in registers, added in the
//!   order S₁ + S₂ — 1 launch instead of 3, and the two staple fields never stored;
//! * the output terms of a direction are added [`ACCUMULATE_WIDTH`] nodes per
//!   [`Launch::Accumulate`], F_μ = [F_μ +] Σ_k c_k N_k, so F_μ is read and written once per
//!   group rather than once per node.
//!
//! For asqtad fat links this takes a direction from 55 node and 19 accumulate launches to
//! 19 and 3.

use super::plan::{Node, PathPlan};
use super::spec::ConcreteStep;

/// Nodes one [`Launch::Accumulate`] adds (the kernel's node parameters `n0..n7`).
pub const ACCUMULATE_WIDTH: usize = 8;

/// One kernel launch of the schedule (buffers are node buffer slots).
#[derive(Clone, Debug, PartialEq)]
pub enum Launch {
    /// `<name>_path` into buffer `out` along `steps`.
    Path {
        /// Output buffer.
        out: usize,
        /// The concrete steps.
        steps: Vec<ConcreteStep>,
    },
    /// `<name>_staple` into `out` from `inner`: out(x) = W_s(x) inner(x + ŝ) W_s(x + nμ̂)†.
    Staple {
        /// Output buffer.
        out: usize,
        /// Inner buffer.
        inner: usize,
        /// Link direction.
        mu: usize,
        /// Displacement along μ.
        n: usize,
        /// Wrapping step.
        step: ConcreteStep,
    },
    /// `<name>_staple_pair` into `out`: the staple of `inners[0]` wrapped by s = `step`
    /// plus the staple of `inners[1]` wrapped by the opposite step s' = (d, −o),
    /// out(x) = W_s(x) N₀(x + ŝ) W_s(x + nμ̂)† + W_s'(x) N₁(x + ŝ') W_s'(x + nμ̂)†.
    StaplePair {
        /// Output buffer.
        out: usize,
        /// Inner buffers of the first and the second staple.
        inners: [usize; 2],
        /// Link direction.
        mu: usize,
        /// Displacement along μ.
        n: usize,
        /// The first staple's step (d, o); the second's is (d, −o).
        step: ConcreteStep,
    },
    /// `<name>_sum`: out = a + b.
    Sum {
        /// Output buffer.
        out: usize,
        /// First operand buffer.
        a: usize,
        /// Second operand buffer.
        b: usize,
    },
    /// `<name>_accumulate`: F_μ(x) = [F_μ(x) +] Σ_k c_k u0^(−(L_k − 1)) N_k(x) over at most
    /// [`ACCUMULATE_WIDTH`] terms, in order.
    Accumulate {
        /// Link direction.
        mu: usize,
        /// (node buffer, coefficient before the tadpole factor, path length) per term.
        terms: Vec<(usize, f64, usize)>,
        /// Whether this launch overwrites instead of adding.
        first: bool,
    },
}

/// The step and inner node of node `i` if it is a staple, else `None`.
fn staple_of(nodes: &[Node], i: usize) -> Option<(ConcreteStep, usize)> {
    match nodes.get(i) {
        Some(Node::Staple { step, inner }) => Some((*step, *inner)),
        _ => None,
    }
}

/// The launch schedule of a plan (module docs): fused staple pairs, grouped accumulation.
pub fn schedule(plan: &PathPlan) -> Vec<Launch> {
    let mut out = Vec::new();
    for d in &plan.directions {
        // How many nodes and output terms read each node.
        let mut uses = vec![0usize; d.nodes.len()];
        for node in &d.nodes {
            match node {
                Node::Staple { inner, .. } => uses[*inner] += 1,
                Node::Sum(a, b) => {
                    uses[*a] += 1;
                    uses[*b] += 1;
                }
                Node::Path(_) => {}
            }
        }
        for t in &d.terms {
            for &i in &t.nodes {
                uses[i] += 1;
            }
        }
        let mut fused = vec![false; d.nodes.len()];
        let mut pairs = vec![None; d.nodes.len()];
        for (i, node) in d.nodes.iter().enumerate() {
            if let Node::Sum(a, b) = *node {
                if let (Some(((da, oa), ia)), Some(((db, ob), ib))) =
                    (staple_of(&d.nodes, a), staple_of(&d.nodes, b))
                {
                    if da == db && oa == -ob && a != b && uses[a] == 1 && uses[b] == 1 {
                        fused[a] = true;
                        fused[b] = true;
                        pairs[i] = Some(([ia, ib], (da, oa)));
                    }
                }
            }
        }
        for (i, node) in d.nodes.iter().enumerate() {
            if fused[i] {
                continue;
            }
            out.push(match (node, pairs[i]) {
                (_, Some((inners, step))) => Launch::StaplePair {
                    out: i,
                    inners,
                    mu: d.mu,
                    n: plan.displacement,
                    step,
                },
                (Node::Path(steps), None) => Launch::Path {
                    out: i,
                    steps: steps.clone(),
                },
                (Node::Staple { step, inner }, None) => Launch::Staple {
                    out: i,
                    inner: *inner,
                    mu: d.mu,
                    n: plan.displacement,
                    step: *step,
                },
                (Node::Sum(a, b), None) => Launch::Sum {
                    out: i,
                    a: *a,
                    b: *b,
                },
            });
        }
        let terms: Vec<(usize, f64, usize)> = d
            .terms
            .iter()
            .flat_map(|t| t.nodes.iter().map(move |&node| (node, t.coeff, t.length)))
            .collect();
        for (k, group) in terms.chunks(ACCUMULATE_WIDTH).enumerate() {
            out.push(Launch::Accumulate {
                mu: d.mu,
                terms: group.to_vec(),
                first: k == 0,
            });
        }
    }
    out
}

/// Node buffers the schedule needs (the largest node count of one direction).
pub fn buffer_count(plan: &PathPlan) -> usize {
    plan.directions
        .iter()
        .map(|d| d.nodes.len())
        .max()
        .unwrap_or(0)
}
