//! The staged GPU plan of a [`PathTree`]: the tree's inner nodes whose value depends only
//! on the link direction μ and on the set of directions already used (not on the
//! orientations the enclosing wraps chose) are computed once per site by their own
//! kernel (a *pass*) into a field in global memory, and read back by every wrap around
//! them, instead of being recomputed inside each enclosing wrap as the one-kernel tree
//! does. This is MILC's and QUDA's fat-link nesting (the 3-staple of (μ, ν) built from
//! the 5-staples of (μ, ν, ρ), themselves from the 7-staples), derived from the tree.
//!
//! **Which part of a node is stored.** A node N at depth b (b free names bound by the
//! `New` wraps above it, so |used| = b + 1) has the value V_N = F_N + R_N:
//!
//! * F_N, its *closed* part: the cores that name no bound direction and the `New`
//!   children whose subtree names no direction bound above N (it may name the one N's
//!   own wrap binds, which N sums over). F_N(y; μ, used) is a field of
//!   4 · C(3, b) slots (one per μ and choice of the b used directions ≠ μ);
//! * R_N, the rest (cores naming a bound direction, `Tied` wraps such as Lepage's
//!   [+ν, +ν, +μ, −ν, −ν], children that name directions bound above N), evaluated inline
//!   where N is read, as in the tree.
//!
//! A non-root node with at least one closed `New` child (so F_N costs products) is
//! *materialised*: pass N computes F_N for every slot and site, and every later read of
//! V_N(y) is a field load plus R_N. Passes run children first (reverse preorder); the last
//! kernel is the tree's root with the materialised nodes read from their fields. A node
//! without such a child is evaluated inline (a core [+mu] is a single link load).
//!
//! **Asqtad fat links** (terms one-link, 3-, 5-, 7-staple, Lepage; the tree
//! root → A (ν) → B (ρ) → C (σ), and A → Lepage tied to ν):
//!
//! | kernel | slots | products per slot and site | products per site |
//! |---|---|---|---|
//! | pass B: c₅ U_μ + Σ_{σ,±} W (c₇ U_μ) W† | 12 (μ; ν, ρ) | 1 · 2 · 2 = 4 | 48 |
//! | pass A: c₃ U_μ + Σ_{ρ,±} W B W† | 12 (μ; ν) | 2 · 2 · 2 = 8 | 96 |
//! | root: c₁ U_μ + Σ_{ν,±} W (A + W (c_L U_μ) W†) W† | 4 (μ) | 3 · 2 · (2 + 2) = 24 | 96 |
//!
//! 240 products per site (47,520 flops in products, 198 each) against the tree's
//! 4 · 168 = 672 and MILC's 300 (which also stores the 3-staples of each orientation).
//!
//! **One direction at a time.** The passes and the root run per link direction μ (one
//! launch each per μ): a level's value for (μ, used) reads only that level's fields of the
//! same μ, so the scratch holds the fields of one μ — C(3, b) slots per materialised node
//! ([`Staging::slots`]) — and is reused by the next μ. Asqtad and fat7: 3 + 3 = 6 slots,
//! 6 · 18 reals per site: 453 MB at 32⁴ in f32 (906 MB in f64), a quarter of the 24 slots
//! (1.81 GB / 3.62 GB) of running each level over all μ at once, for 4 × the launches
//! (12 for asqtad's fat links, each still 1–3 V threads). Both levels are live while the
//! upper one is computed, so 6 slots is the least without recomputing a level.
//!
//! **Bytes.** Each slot is 18 reals per site, written once by its pass and read by the
//! next level (the wraps read the neighbours x ± ŝ of one slot: cached, ~one read per
//! reading wrap direction set). Asqtad f32: 24 slot-sweeps · 72 B · (1 write + 1 read) =
//! 3,456 B per site, plus the thin links (288 B) read by each of the three kernels and
//! the output (288 B): ~4.6 kB per site, 4.8 GB at 32⁴ — 1.6 ms at the H100's ~3 TB/s,
//! 1.15 ms at the H200's 4.2 TB/s; the 49.8 GFLOP of products take ~1.5–2 ms at 25–33
//! TFLOP/s of f32 sustained. Running per μ does not change these counts (the same
//! slot-sweeps, each launch reads the links it needs). Each smearer owns its scratch
//! unless it shares another's (HISQ's fat7 and second level run on one stream and share
//! one).
//!
//! **Thread map.** A pass has C(3, b) slots per site. Mapped lane-major (slot = i / V),
//! each slot swept the whole lattice in turn and read the thin links from DRAM again: on
//! the H100 (ncu, fat7 f32 at 32⁴) the passes ran at 75 % of DRAM bandwidth with a 30 % L2
//! hit rate and moved ~2.5× their bytes. The passes, the root and the gather map
//! threads warp by warp (`lane_site` of [`super::cuda`]): the slots of 32 sites are
//! neighbouring warps of a block, so each link is read from memory once per launch
//! (fat7 f32 7.25 → 6.57 ms, HISQ 18.03 → 15.53 ms on the H100).
//!
//! **Expected time** (32⁴, f32, asqtad fat + long: 248 products, 49.1 kflop per site,
//! 51.5 GFLOP; ~5.2 kB per site, 5.4 GB): the bytes alone take 1.8 ms on the H100
//! (2.98 TB/s measured copy) and 1.3 ms on the H200 (4.26 TB/s); the products 1.5 ms at
//! half of the 67 TFLOP/s f32 peak, or 4.9 ms at the 10.5 TFLOP/s the one-kernel tree
//! sustained on the H200 (680 products per site in 13.41 ms). So 2–5 ms on either card
//! against the tree's 13.41 ms and QUDA's kernels' 7.35 ms (H200); fat7 (192 products)
//! ~1.6–4 ms, HISQ (fat7 + projection + second level + Naik) ~4–9 ms against 26.66 ms.
//!
//! **Compiled** (ptxas -v, sm_80/sm_90, no spills): asqtad fat f32 passes 96 registers,
//! root 128; f64 passes 164–168, root 226–251. NVRTC + ptxas of the whole staged program
//! took 0.75× the one-kernel tree's time under the same load on the build machine
//! (3.0–4.9 s against 5.0–6.9 s on 2 shared cores; the tree's took 0.6–0.9 s on the GPU
//! machine, so the staged plan's first-call JIT is expected under 1 s there).

use super::spec::Dir;
use super::tree::{new_names, Core, PathTree, TreeNode, Wrap};
use std::fmt;

/// What the staged plan does with one tree node (nodes in preorder: a node, then each
/// child's subtree in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStage {
    /// Free names bound by the `New` wraps above the node (b; |used| = b + 1).
    pub bound: usize,
    /// Per core: whether it belongs to the closed part F (names no bound direction).
    pub closed_cores: Vec<bool>,
    /// Per child: whether it belongs to the closed part F (a `New` child whose subtree
    /// names no direction bound above the node).
    pub closed_children: Vec<bool>,
    /// The node's field when materialised: its first slot in the scratch of one μ.
    pub field: Option<usize>,
}

impl NodeStage {
    /// Slots of a materialised node's field over all four μ: 4 · C(3, b) (its pass
    /// computes each once per site).
    pub fn slots(&self) -> usize {
        4 * self.slots_per_mu()
    }

    /// Slots of a materialised node's field for one μ: C(3, b) (a pass launch's
    /// threads are these slots times the sites).
    pub fn slots_per_mu(&self) -> usize {
        slots_per_mu(self.bound)
    }
}

/// C(3, b): the choices of b used directions among the three ≠ μ.
pub fn slots_per_mu(bound: usize) -> usize {
    match bound {
        0 | 3 => 1,
        1 | 2 => 3,
        _ => 0,
    }
}

/// A tree with its staging decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Staging {
    /// The tree.
    pub tree: PathTree,
    /// Per node, in preorder.
    pub nodes: Vec<NodeStage>,
    /// Slots of the scratch buffer, the fields of one μ (Σ C(3, b) over materialised
    /// nodes, reused by every μ); each slot is 18 reals per site.
    pub slots: usize,
}

/// The lowest free name a subtree refers to that its own wraps or cores did not bind:
/// core steps naming k < core.bound and `Tied` wraps.
fn lowest_ref(n: &TreeNode) -> Option<usize> {
    let cores = n.cores.iter().flat_map(core_refs);
    let wraps = n.children.iter().filter_map(|(w, _)| match w {
        Wrap::Tied { name, .. } => Some(*name),
        Wrap::New(_) => None,
    });
    let children = n.children.iter().filter_map(|(_, c)| lowest_ref(c));
    cores.chain(wraps).chain(children).min()
}

/// Bound names a core's steps refer to.
fn core_refs(c: &Core) -> impl Iterator<Item = usize> + '_ {
    c.steps.iter().filter_map(move |s| match s.dir {
        Dir::Free(k) if k < c.bound => Some(k),
        _ => None,
    })
}

impl Staging {
    /// Decides the staging of `tree` (module docs).
    pub fn new(tree: &PathTree) -> Self {
        let mut nodes = Vec::new();
        visit(&tree.root, 0, true, &mut nodes);
        // Slots of one μ in reverse preorder: the order the passes run.
        let mut slots = 0;
        for n in nodes.iter_mut().rev() {
            if n.field.is_some() {
                n.field = Some(slots);
                slots += n.slots_per_mu();
            }
        }
        Staging {
            tree: tree.clone(),
            nodes,
            slots,
        }
    }

    /// The preorder indices of the materialised nodes in the order their passes run.
    pub fn passes(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .rev()
            .filter(|&i| self.nodes[i].field.is_some())
            .collect()
    }

    /// Kernel launches per smearing: per μ, one per pass and the root's; a plan without
    /// passes runs its root over all μ in one launch.
    pub fn launches(&self) -> usize {
        match self.passes().len() {
            0 => 1,
            passes => 4 * (passes + 1),
        }
    }

    /// Reals of the scratch on a lattice of `volume` sites: [`Self::slots`] · 18 · V.
    pub fn scratch_reals(&self, volume: usize) -> usize {
        self.slots * 18 * volume
    }

    /// Bytes of the scratch on a lattice of `volume` sites in a real type of
    /// `real_bytes` bytes (4 or 8).
    pub fn scratch_bytes(&self, volume: usize, real_bytes: usize) -> usize {
        self.scratch_reals(volume) * real_bytes
    }

    /// How many wraps (one site each) lie between a kernel's own site and the farthest
    /// site at which it reads a materialised field: the halo depth the fields need when
    /// every kernel runs over a rank's own sites and the fields' halos are exchanged
    /// between the passes (the "standard" smearing of
    /// `qdsl_runtime::distributed::smear`). One for asqtad and fat7 (each level reads the
    /// level below at x ± ŝ); 0 without passes.
    pub fn field_reach(&self) -> usize {
        let mut reach = 0;
        // The root kernel evaluates the root whole; each pass its node's closed part.
        self.field_reads(&self.tree.root, 0, 0, Part::All, &mut reach);
        let mut index = 0;
        walk(&self.tree.root, &mut index, &mut |i, n| {
            if self.nodes[i].field.is_some() {
                self.field_reads(n, i, 0, Part::Closed, &mut reach);
            }
        });
        reach
    }

    /// Raises `reach` to the wraps between a kernel's site and each field load made
    /// while evaluating `part` of node `n` (preorder index `i`) `steps` wraps away.
    fn field_reads(&self, n: &TreeNode, i: usize, steps: usize, part: Part, reach: &mut usize) {
        let mut child_index = i + 1;
        for ((_, child), &closed) in n.children.iter().zip(&self.nodes[i].closed_children) {
            let evaluated = match part {
                Part::All => true,
                Part::Closed => closed,
                Part::Open => !closed,
            };
            if evaluated {
                // A materialised child is its field's load plus its open part; any
                // other child is evaluated whole.
                let part = if self.nodes[child_index].field.is_some() {
                    *reach = (*reach).max(steps + 1);
                    Part::Open
                } else {
                    Part::All
                };
                self.field_reads(child, child_index, steps + 1, part, reach);
            }
            child_index += subtree_size(child);
        }
    }

    /// Matrix products per site: every pass over its slots, then the root per μ.
    pub fn products_per_site(&self) -> usize {
        let mut total = 4 * self.inline_products(&self.tree.root, 0, 1);
        let mut index = 0;
        walk(&self.tree.root, &mut index, &mut |i, n| {
            let st = &self.nodes[i];
            if st.field.is_some() {
                total += st.slots() * self.part_products(n, i, st.bound + 1, true);
            }
        });
        total
    }

    /// Products of evaluating node `n` (preorder index `i`) where it is read: the open
    /// part when materialised, else all of it.
    fn inline_products(&self, n: &TreeNode, i: usize, used: usize) -> usize {
        if self.nodes[i].field.is_some() {
            self.part_products(n, i, used, false)
        } else {
            self.part_products(n, i, used, true) + self.part_products(n, i, used, false)
        }
    }

    /// Products of the closed (`closed`) or open part of node `n`.
    fn part_products(&self, n: &TreeNode, i: usize, used: usize, closed: bool) -> usize {
        let st = &self.nodes[i];
        let free = 4 - used;
        let mut total = 0;
        for (c, &cl) in n.cores.iter().zip(&st.closed_cores) {
            if cl == closed {
                let own = new_names(&c.steps, c.bound);
                let choices: usize = (0..own).map(|j| 2 * free.saturating_sub(j)).product();
                total += choices * (c.steps.len() - 1);
            }
        }
        let mut child_index = i + 1;
        for ((w, child), &cl) in n.children.iter().zip(&st.closed_children) {
            if cl == closed {
                total += match w {
                    Wrap::New(_) => {
                        free * 2 * (2 + self.inline_products(child, child_index, used + 1))
                    }
                    Wrap::Tied { .. } => 2 + self.inline_products(child, child_index, used),
                };
            }
            child_index += subtree_size(child);
        }
        total
    }
}

/// Which part of a node a kernel evaluates ([`Staging::field_reach`]).
#[derive(Clone, Copy)]
enum Part {
    /// Cores and children, closed and open (the root, or a node without a field).
    All,
    /// The closed part (what a pass stores).
    Closed,
    /// The open part (evaluated beside a field load).
    Open,
}

/// Nodes in a subtree.
pub(crate) fn subtree_size(n: &TreeNode) -> usize {
    1 + n
        .children
        .iter()
        .map(|(_, c)| subtree_size(c))
        .sum::<usize>()
}

/// Calls `f(preorder index, node)` for every node of a subtree.
fn walk(n: &TreeNode, index: &mut usize, f: &mut impl FnMut(usize, &TreeNode)) {
    f(*index, n);
    *index += 1;
    for (_, c) in &n.children {
        walk(c, index, f);
    }
}

fn visit(n: &TreeNode, bound: usize, root: bool, out: &mut Vec<NodeStage>) {
    let closed_cores: Vec<bool> = n
        .cores
        .iter()
        .map(|c| core_refs(c).next().is_none())
        .collect();
    let closed_children: Vec<bool> = n
        .children
        .iter()
        .map(|(w, c)| matches!(w, Wrap::New(_)) && lowest_ref(c).is_none_or(|k| k >= bound))
        .collect();
    let materialise = !root && closed_children.iter().any(|&c| c);
    out.push(NodeStage {
        bound,
        closed_cores,
        closed_children,
        field: materialise.then_some(0),
    });
    for (w, c) in &n.children {
        let child_bound = match w {
            Wrap::New(_) => bound + 1,
            Wrap::Tied { .. } => bound,
        };
        visit(c, child_bound, false, out);
    }
}

impl fmt::Display for Staging {
    /// The staged plan as `qdsl emit --plan` prints it: one line per pass.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "staged plan of `{}`: {} launches (per link direction mu: each pass, then the root), {} matrix products per site, {} scratch slots of one mu, reused by the next (18 reals per site each)",
            self.tree.spec.name,
            self.launches(),
            self.products_per_site(),
            self.slots
        )?;
        for i in self.passes() {
            let st = &self.nodes[i];
            writeln!(
                f,
                "  pass node{i}: depth {} ({} slots per mu from slot {}): its closed part (cores {:?}, children {:?}) into a field",
                st.bound,
                st.slots_per_mu(),
                st.field.unwrap_or(0),
                st.closed_cores,
                st.closed_children
            )?;
        }
        writeln!(
            f,
            "  root: F_mu(x) per link, the materialised nodes read from their fields"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::paths::spec::{PathSpec, PathTerm, Step};

    fn step(dir: Dir, forward: bool) -> Step {
        Step { dir, forward }
    }

    /// The asqtad fat-link spec of qdsl-kernels, written here as data.
    fn asqtad(lepage: bool) -> PathSpec {
        let (mu, nu, rho, sigma) = (Dir::Mu, Dir::Free(0), Dir::Free(1), Dir::Free(2));
        let wrap = |d: Dir, inner: Vec<Step>| {
            let mut s = vec![step(d, true)];
            s.extend(inner);
            s.push(step(d, false));
            s
        };
        let link = vec![step(mu, true)];
        let mut terms = vec![
            ("one_link", 5.0 / 8.0, link.clone()),
            ("staple3", -1.0 / 16.0, wrap(nu, link.clone())),
            ("staple5", 1.0 / 64.0, wrap(nu, wrap(rho, link.clone()))),
            (
                "staple7",
                -1.0 / 384.0,
                wrap(nu, wrap(rho, wrap(sigma, link.clone()))),
            ),
        ];
        if lepage {
            terms.push(("lepage", -1.0 / 16.0, wrap(nu, wrap(nu, link))));
        }
        PathSpec {
            name: "asqtad_fat".into(),
            output: "fat".into(),
            free_names: vec!["nu".into(), "rho".into(), "sigma".into()],
            terms: terms
                .into_iter()
                .map(|(name, coeff, steps)| PathTerm {
                    name: name.into(),
                    coeff,
                    steps,
                })
                .collect(),
        }
    }

    /// Asqtad: the 5-staple level (depth 2) and the 3-staple level (depth 1) become
    /// fields of 12 slots each; Lepage stays inline (tied to ν). Products by hand:
    /// 12 · 4 + 12 · 8 + 4 · 3 · 2 · (2 + 2) = 240.
    #[test]
    fn asqtad_stores_the_five_and_three_staple_levels() {
        let st = Staging::new(&PathTree::new(&asqtad(true)).unwrap());
        let passes = st.passes();
        assert_eq!(passes.len(), 2);
        assert_eq!(st.nodes[passes[0]].bound, 2, "the 5-staple level first");
        assert_eq!(st.nodes[passes[1]].bound, 1);
        assert_eq!(st.nodes[passes[1]].closed_children, vec![true, false]);
        assert_eq!(st.slots, 6, "3 + 3 slots of one mu");
        assert_eq!(st.products_per_site(), 240);
        assert_eq!(st.launches(), 12);
        // The one-kernel tree: 4 · 168.
        assert_eq!(4 * st.tree.products_per_link(), 672);
        let text = st.to_string();
        assert!(
            text.contains("12 launches (per link direction mu: each pass, then the root), 240 matrix products per site, 6 scratch slots of one mu"),
            "{text}"
        );
        assert_eq!(text.matches("  pass node").count(), 2, "{text}");
        // The root reads the 3-staple level at x ± ν, pass A the 5-staple level at
        // x ± ρ; Lepage's second ν step reads links only.
        assert_eq!(st.field_reach(), 1);
    }

    /// A field read two wraps from its kernel's site: with a term whose ρ level wraps
    /// ν again (+ν +ρ +ν +μ −ν −ρ −ν), the ρ level (still stored: its σ child is closed)
    /// names ν, so the ν level keeps it open and is evaluated inline where the root
    /// reads it, and the root reads the ρ level's field at x ± ν ± ρ.
    #[test]
    fn field_reach_counts_the_wraps_to_each_field_load() {
        let mut spec = asqtad(false);
        spec.terms.retain(|t| t.name == "staple7");
        assert_eq!(
            Staging::new(&PathTree::new(&spec).unwrap()).field_reach(),
            1
        );
        let (mu, nu, rho) = (Dir::Mu, Dir::Free(0), Dir::Free(1));
        spec.terms.push(PathTerm {
            name: "nu_rho_nu".into(),
            coeff: 1.0,
            steps: vec![
                step(nu, true),
                step(rho, true),
                step(nu, true),
                step(mu, true),
                step(nu, false),
                step(rho, false),
                step(nu, false),
            ],
        });
        let st = Staging::new(&PathTree::new(&spec).unwrap());
        assert_eq!(st.passes().len(), 1, "{st}");
        assert_eq!(st.field_reach(), 2, "{st}");
        // The one-link spec stages nothing and reads no field.
        spec.terms.retain(|t| t.name == "one_link");
        spec.terms.push(asqtad(false).terms[0].clone());
        assert_eq!(
            Staging::new(&PathTree::new(&spec).unwrap()).field_reach(),
            0
        );
    }

    /// Fat7 (no Lepage): 12 · 4 + 12 · 8 + 4 · 3 · 2 · 2 = 192.
    #[test]
    fn fat7_products() {
        let st = Staging::new(&PathTree::new(&asqtad(false)).unwrap());
        assert_eq!(st.products_per_site(), 192);
        assert_eq!(st.slots, 6);
    }

    /// The scratch at 32⁴ by hand: 6 slots · 18 reals · 1,048,576 sites = 113,246,208
    /// reals, 452,984,832 B in f32 and 905,969,664 B in f64 (24 slots over all μ were
    /// 1,811,939,328 B and 3,623,878,656 B).
    #[test]
    fn scratch_of_one_direction_at_32_to_the_4() {
        let st = Staging::new(&PathTree::new(&asqtad(true)).unwrap());
        let v = 32usize.pow(4);
        assert_eq!(st.scratch_reals(v), 113_246_208);
        assert_eq!(st.scratch_bytes(v, 4), 452_984_832);
        assert_eq!(st.scratch_bytes(v, 8), 905_969_664);
        let all_mu: usize = st.passes().iter().map(|&i| st.nodes[i].slots()).sum();
        assert_eq!(all_mu * 18 * v * 4, 1_811_939_328);
        // The fields of one mu do not overlap and fill the scratch.
        let mut ranges: Vec<(usize, usize)> = st
            .passes()
            .iter()
            .map(|&i| {
                let n = &st.nodes[i];
                (n.field.unwrap(), n.field.unwrap() + n.slots_per_mu())
            })
            .collect();
        ranges.sort();
        assert_eq!(ranges, vec![(0, 3), (3, 6)]);
    }

    /// A spec without nested staples (the Naik link) stages nothing: the root kernel
    /// alone, the tree's products.
    #[test]
    fn a_single_level_spec_stages_nothing() {
        let spec = PathSpec {
            name: "long".into(),
            output: "long".into(),
            free_names: vec![],
            terms: vec![PathTerm {
                name: "naik".into(),
                coeff: 1.0,
                steps: vec![step(Dir::Mu, true); 3],
            }],
        };
        let tree = PathTree::new(&spec).unwrap();
        let st = Staging::new(&tree);
        assert_eq!((st.slots, st.launches()), (0, 1));
        assert_eq!(st.products_per_site(), 4 * tree.products_per_link());
    }
}
