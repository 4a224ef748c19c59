//! The gather plan of a smearing's pull-back (the fermion force's smearing part) on the
//! GPU: no atomics, every thin-link gradient Ĝ_d(z) computed by the one thread that owns
//! it, from the same spec as the forward smearing.
//!
//! Given G, the gradient of S with respect to the smeared links F (dS = Σ Re tr[G† dF]),
//! Ĝ is the sum over every path, every link position in it, of
//! c (W₁ ⋯ W_{k−1})† G (W_{k+1} ⋯ W_L)† ([`super::fermion_force`]). The terms split in two:
//!
//! * **chain terms**: `[±ν₁, …, ±ν_b, +mu, ∓ν_b, …, ∓ν₁]`, b ≤ 3 distinct names (the
//!   one-link, 3-, 5- and 7-staples: MILC's and QUDA's nesting). They share one chain of
//!   levels: K_b(x; D), the level-b staple sum for a set D of b used directions ≠ μ,
//!
//!   K_B = c_B U_μ,  K_b(x; D) = c_b U_μ(x) + Σ_{d ∉ D ∪ μ, ±} W_{±d}(x) K_{b+1}(x ± d̂; D ∪ d) W_{±d}(x + μ̂)†,
//!
//!   (c_b the sum of the depth-b terms' coefficients, F = K_0 + the loose terms), and its
//!   reverse, the adjoints Ā_b(y; D) (the gradient of S with respect to K_b, summed over
//!   the orientations the enclosing wraps took, which the closed K_b does not depend on):
//!
//!   Ā_0 = G_μ,  Ā_b(y; D) = Σ_{d ∈ D, ±} W_{±d}(y ∓ d̂)† Ā_{b−1}(y ∓ d̂; D ∖ d) W_{±d}(y ∓ d̂ + μ̂).
//!
//!   Each Ā_b is a *gather*: the site y reads its parents. So are the thin-link
//!   gradients: a wrap V += W_in Q W_out† gives W_in the gradient Ā W_out Q† and W_out
//!   Ā† W_in Q, so the owner of U_d(z) (d ≠ μ) reads, per level b and slot D ∌ d, the four
//!   wraps that hop over it (Q = K_{b+1}(· ; D ∪ d)):
//!
//!   | wrap | anchor x | contribution to U_d(z) |
//!   |---|---|---|
//!   | +d, W_in | z | Ā(z) U_d(z + μ̂) Q(z + d̂)† |
//!   | +d, W_out | z − μ̂ | Ā(x)† U_d(x) Q(x + d̂) |
//!   | −d, W_in | z + d̂ | Q(z) U_d(z + μ̂) Ā(x)† |
//!   | −d, W_out | z − μ̂ + d̂ | Q(z − μ̂)† U_d(z − μ̂) Ā(x) |
//!
//!   and the owner of U_μ(z) adds Σ_b c_b Σ_D Ā_b(z; D) (the cores U_μ).
//! * **loose terms**: every other term (Lepage's `[+nu, +nu, +mu, -nu, -nu]`, the Naik
//!   term, any path that is not a chain). The owner of U_d(z) walks each concrete path of
//!   each μ through each position k whose step lies on U_d(z) as the closed loop
//!   R = W_{k+1} ⋯ W_L G_μ(x)† W₁ ⋯ W_{k−1} (L − 1 products, one running matrix) and adds
//!   c R† (a forward step) or c R (a backward one).
//!
//! **Launches** (per μ, the fields of one μ in a scratch reused by the next, as the
//! staged forward plan): the levels K_{B−1} … K_1 (one thread per slot and site), the
//! adjoints Ā_1 … Ā_{B−1}, the gather (one thread per thin link, adding the μ's
//! contributions to its own Ĝ); then once the loose gather over all μ. Asqtad fat
//! (B = 3, Lepage loose): 4 · 5 + 1 = 21 launches, 12 slots of 18 reals per site
//! (906 MB at 32⁴ in f32), no atomics; the CPU emulation ([`pullback_cpu`]) does the
//! same arithmetic in the same order per thread.
//!
//! **Products per site** ([`ReversePlan::products_per_site`]), asqtad fat: levels 144,
//! adjoints 144, chain gather 432 (48 of them the inline Ā₃), Lepage 480 (6 paths · 5
//! positions · 4 products per μ) — 1,200 (0.24 Mflop), against the atomic kernel's
//! 4 · [`super::pullback_cuda::products_per_link`] and its ~4,500 atomic adds per link.

use super::cpu::hop;
use super::spec::{Dir, PathSpec, Step};
use super::staged::slots_per_mu;
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;
use crate::real::Real;
use rayon::prelude::*;
use std::fmt;

/// Whether `steps` is a chain term `[±ν₁, …, ±ν_b, +mu, ∓ν_b, …, ∓ν₁]` (distinct free
/// names, each wrap closing with the opposite sign): its depth b.
pub fn chain_depth(steps: &[Step]) -> Option<usize> {
    if steps.len().is_multiple_of(2) {
        return None;
    }
    let b = steps.len() / 2;
    let core = steps[b];
    if core.dir != Dir::Mu || !core.forward || b > 3 {
        return None;
    }
    let mut names = Vec::new();
    for i in 0..b {
        let (open, close) = (steps[i], steps[steps.len() - 1 - i]);
        match (open.dir, close.dir) {
            (Dir::Free(k), Dir::Free(m)) if k == m && open.forward != close.forward => {
                if names.contains(&k) {
                    return None;
                }
                names.push(k);
            }
            _ => return None,
        }
    }
    Some(b)
}

/// The gather plan of a spec's pull-back (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct ReversePlan {
    /// The spec.
    pub spec: PathSpec,
    /// Displacement n of every path (the chain needs n = 1).
    pub displacement: usize,
    /// The chain terms by depth: `chain[b]` the indices of the depth-b terms
    /// (b = 0 ..= B; empty when no term is a chain).
    pub chain: Vec<Vec<usize>>,
    /// The other terms' indices.
    pub loose: Vec<usize>,
}

impl ReversePlan {
    /// Validates a spec and splits its terms.
    pub fn new(spec: &PathSpec) -> Result<Self, DslError> {
        let displacement = spec.validate()?;
        let mut chain: Vec<Vec<usize>> = Vec::new();
        let mut loose = Vec::new();
        for (t, term) in spec.terms.iter().enumerate() {
            match chain_depth(&term.steps) {
                Some(b) if displacement == 1 => {
                    if chain.len() <= b {
                        chain.resize(b + 1, Vec::new());
                    }
                    chain[b].push(t);
                }
                _ => loose.push(t),
            }
        }
        Ok(Self {
            spec: spec.clone(),
            displacement,
            chain,
            loose,
        })
    }

    /// B, the deepest chain level (`None` without chain terms).
    pub fn depth(&self) -> Option<usize> {
        self.chain.len().checked_sub(1)
    }

    /// The levels stored as fields: 1 ..= B − 1 (the level-B core is a link, Ā_B is
    /// summed inline by the gather).
    pub fn stored_levels(&self) -> std::ops::Range<usize> {
        1..self.depth().unwrap_or(0).max(1)
    }

    /// The first slot of level b's field K_b in the scratch of one μ (b in
    /// [`Self::stored_levels`]); the adjoints Ā_b follow at [`Self::adjoint_slot`].
    pub fn level_slot(&self, b: usize) -> usize {
        (1..b).map(slots_per_mu).sum()
    }

    /// The first slot of Ā_b in the scratch of one μ.
    pub fn adjoint_slot(&self, b: usize) -> usize {
        self.stored_levels().map(slots_per_mu).sum::<usize>() + self.level_slot(b)
    }

    /// Slots of the scratch (the fields of one μ, reused by the next): K_b and Ā_b for
    /// every stored level, 18 reals per site each.
    pub fn slots(&self) -> usize {
        2 * self.stored_levels().map(slots_per_mu).sum::<usize>()
    }

    /// Reals of the scratch on `volume` sites.
    pub fn scratch_reals(&self, volume: usize) -> usize {
        self.slots() * 18 * volume
    }

    /// Launches of one pull-back: per μ the stored levels, their adjoints and the chain
    /// gather (none without chain terms); one loose gather (none without loose terms).
    pub fn launches(&self) -> usize {
        let chain = match self.depth() {
            Some(_) => 4 * (2 * self.stored_levels().len() + 1),
            None => 0,
        };
        chain + usize::from(!self.loose.is_empty())
    }

    /// Matrix products per site (all four μ): the stored levels (2 per wrap), the
    /// adjoints (2 per parent read), the chain gather (the inline Ā_B, 2 per wrap
    /// contribution) and the loose gather (L − 1 per path position).
    pub fn products_per_site(&self) -> usize {
        let mut total = 0;
        if let Some(depth) = self.depth() {
            for b in self.stored_levels() {
                // K_b: 2 products per wrap over d ∉ D ∪ μ, ±.
                total += 4 * slots_per_mu(b) * (3 - b) * 2 * 2;
                // Ā_b: 2 per parent d ∈ D, ±.
                total += 4 * slots_per_mu(b) * b * 2 * 2;
            }
            // The inline Ā_B in the U_μ thread.
            if depth >= 1 {
                total += 4 * slots_per_mu(depth) * depth * 2 * 2;
            }
            // Wrap contributions: per μ, per d ≠ μ, per level b < B, per slot D ∌ d:
            // 4 placements of 2 products.
            for b in 0..depth {
                let slots_without_d = binomial(2, b);
                total += 4 * 3 * slots_without_d * 4 * 2;
            }
        }
        for &t in &self.loose {
            let len = self.spec.terms[t].len();
            total += 4 * self.paths_of(t) * len * (len - 1);
        }
        total
    }

    /// Concrete paths of term `t` per μ.
    fn paths_of(&self, t: usize) -> usize {
        let own = self.spec.terms[t].free_dirs().len();
        (0..own).map(|j| 2 * (3 - j)).product()
    }
}

/// C(n, k) for the small numbers here.
fn binomial(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    (0..k).fold(1, |acc, j| acc * (n - j) / (j + 1))
}

impl fmt::Display for ReversePlan {
    /// The plan as `qdsl emit --plan` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |ts: &[usize]| {
            ts.iter()
                .map(|&t| self.spec.terms[t].name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            f,
            "pull-back gather plan of `{}`: {} launches, {} matrix products per site, {} scratch slots of one mu (18 reals per site each), no atomics",
            self.spec.name,
            self.launches(),
            self.products_per_site(),
            self.slots()
        )?;
        for (b, ts) in self.chain.iter().enumerate() {
            writeln!(f, "  chain level {b}: [{}]", names(ts))?;
        }
        for b in self.stored_levels() {
            writeln!(
                f,
                "  per mu: level K{b} ({} slots from slot {}), adjoint A{b} ({} slots from slot {})",
                slots_per_mu(b),
                self.level_slot(b),
                slots_per_mu(b),
                self.adjoint_slot(b)
            )?;
        }
        if self.depth().is_some() {
            writeln!(
                f,
                "  per mu: the gather, one thread per thin link (wraps over it; cores of U_mu)"
            )?;
        }
        if !self.loose.is_empty() {
            writeln!(
                f,
                "  loose terms, every mu, every position, one thread per thin link: [{}]",
                names(&self.loose)
            )?;
        }
        Ok(())
    }
}

/// The pull-back Ĝ of `grad` (the gradient with respect to the smeared links) through
/// the plan's smearing of `u` with term coefficients `coeffs` (tadpole factors
/// included, in term order), computed as the GPU kernels compute it: the chain levels and
/// adjoints as fields of one μ, then every thin link gathering its contributions.
///
/// Errors unless there is one coefficient per term.
pub fn pullback_cpu<T: Real>(
    plan: &ReversePlan,
    u: &GaugeField<T>,
    grad: &GaugeField<T>,
    coeffs: &[f64],
) -> Result<GaugeField<T>, DslError> {
    if coeffs.len() != plan.spec.terms.len() || grad.lattice() != u.lattice() {
        return Err(DslError::InvalidSpec {
            kernel: plan.spec.name.clone(),
            reason: format!(
                "expected {} term coefficients and a gradient on {}, found {} and {}",
                plan.spec.terms.len(),
                u.lattice(),
                coeffs.len(),
                grad.lattice()
            ),
        });
    }
    let lat = *u.lattice();
    let c: Vec<T> = coeffs.iter().map(|&x| T::from_f64(x)).collect();
    let level_c: Vec<T> = plan
        .chain
        .iter()
        .map(|ts| ts.iter().fold(T::zero(), |acc, &t| acc + c[t]))
        .collect();
    let mut out = super::fermion_force::zero_field(lat);
    if let Some(depth) = plan.depth() {
        for mu in 0..4 {
            let chain = Chain {
                u,
                grad,
                mu,
                depth,
                level_c: &level_c,
            };
            let fields = chain.fields(plan);
            let add: Vec<ColourMatrix<T>> = (0..4 * lat.volume())
                .into_par_iter()
                .map(|i| {
                    let (d, cb) = (i / lat.volume(), i % lat.volume());
                    chain.gather(&fields, lat.coords_of_cb(cb), d)
                })
                .collect();
            for (i, m) in add.iter().enumerate() {
                let (d, cb) = (i / lat.volume(), i % lat.volume());
                *out.link_mut(cb, d) += *m;
            }
        }
    }
    if !plan.loose.is_empty() {
        let add: Vec<ColourMatrix<T>> = (0..4 * lat.volume())
            .into_par_iter()
            .map(|i| {
                let (d, cb) = (i / lat.volume(), i % lat.volume());
                loose_gather(plan, u, grad, &c, lat.coords_of_cb(cb), d)
            })
            .collect();
        for (i, m) in add.iter().enumerate() {
            let (d, cb) = (i / lat.volume(), i % lat.volume());
            *out.link_mut(cb, d) += *m;
        }
    }
    Ok(out)
}

/// The chain of one μ on the CPU.
struct Chain<'a, T: Real> {
    u: &'a GaugeField<T>,
    grad: &'a GaugeField<T>,
    mu: usize,
    depth: usize,
    level_c: &'a [T],
}

/// The stored fields of one μ: `level[b][slot][cb]`, `adjoint[b][slot][cb]` (index b for
/// the stored levels, empty otherwise).
struct Fields<T: Real> {
    level: Vec<Vec<Vec<ColourMatrix<T>>>>,
    adjoint: Vec<Vec<Vec<ColourMatrix<T>>>>,
}

/// The k-subsets of the three directions ≠ μ in the kernels' slot order (3-bit masks
/// over the other directions in increasing order, ranked), as direction bit masks.
pub fn slot_sets(mu: usize, k: usize) -> Vec<usize> {
    let others: Vec<usize> = (0..4).filter(|&d| d != mu).collect();
    (0..8usize)
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| {
            (0..3)
                .filter(|b| m >> b & 1 == 1)
                .fold(0, |acc, b| acc | 1 << others[b])
        })
        .collect()
}

/// The slot of direction set `set` (a bit mask of directions ≠ μ) among [`slot_sets`].
fn slot_of(mu: usize, set: usize) -> usize {
    slot_sets(mu, set.count_ones() as usize)
        .iter()
        .position(|&s| s == set)
        .expect("a subset of the directions other than mu")
}

impl<T: Real> Chain<'_, T> {
    fn lat(&self) -> Lattice {
        *self.u.lattice()
    }

    fn link(&self, x: Coords, d: usize) -> ColourMatrix<T> {
        *self.u.link_at(x, d)
    }

    fn shift(&self, x: Coords, d: usize, o: isize) -> Coords {
        self.lat().shift(x, d, o).0
    }

    /// K_b(x; D) read where the kernels read it: a field for stored levels, c_B U_μ(x) at
    /// the deepest.
    fn level(&self, f: &Fields<T>, b: usize, set: usize, x: Coords) -> ColourMatrix<T> {
        if b == self.depth {
            self.link(x, self.mu).scale(self.level_c[b])
        } else {
            f.level[b][slot_of(self.mu, set)][self.lat().cb_index(x)]
        }
    }

    /// Ā_b(x; D): G_μ for b = 0, a field for stored levels, computed from Ā_{B−1} at the
    /// deepest.
    fn adjoint(&self, f: &Fields<T>, b: usize, set: usize, x: Coords) -> ColourMatrix<T> {
        if b == 0 {
            *self.grad.link_at(x, self.mu)
        } else if b == self.depth {
            self.adjoint_from_parents(f, b, set, x)
        } else {
            f.adjoint[b][slot_of(self.mu, set)][self.lat().cb_index(x)]
        }
    }

    /// Σ_{d ∈ D, ±} W(y ∓ d̂)† Ā_{b−1}(y ∓ d̂; D ∖ d) W(y ∓ d̂ + μ̂).
    fn adjoint_from_parents(
        &self,
        f: &Fields<T>,
        b: usize,
        set: usize,
        y: Coords,
    ) -> ColourMatrix<T> {
        let mut v = ColourMatrix::zero();
        for d in (0..4).filter(|d| set >> d & 1 == 1) {
            for o in [1, -1] {
                let x = self.shift(y, d, -o);
                let a = self.adjoint(f, b - 1, set & !(1 << d), x);
                let (w_in, _) = hop(self.u, x, (d, o));
                let (w_out, _) = hop(self.u, self.shift(x, self.mu, 1), (d, o));
                v += w_in.adjoint_mul(&a) * w_out;
            }
        }
        v
    }

    /// The stored levels (deepest first) and adjoints (shallowest first) of one μ.
    fn fields(&self, plan: &ReversePlan) -> Fields<T> {
        let lat = self.lat();
        let mu = self.mu;
        let mut f = Fields {
            level: vec![Vec::new(); self.depth + 1],
            adjoint: vec![Vec::new(); self.depth + 1],
        };
        for b in plan.stored_levels().rev() {
            let sets = slot_sets(mu, b);
            let level: Vec<Vec<ColourMatrix<T>>> = sets
                .iter()
                .map(|&set| {
                    (0..lat.volume())
                        .into_par_iter()
                        .map(|cb| {
                            let x = lat.coords_of_cb(cb);
                            let mut v = self.link(x, mu).scale(self.level_c[b]);
                            for d in (0..4).filter(|&d| d != mu && set >> d & 1 == 0) {
                                for o in [1, -1] {
                                    let (w_in, y) = hop(self.u, x, (d, o));
                                    let (w_out, _) = hop(self.u, self.shift(x, mu, 1), (d, o));
                                    let q = self.level(&f, b + 1, set | 1 << d, y);
                                    v += (w_in * q).mul_adjoint(&w_out);
                                }
                            }
                            v
                        })
                        .collect()
                })
                .collect();
            f.level[b] = level;
        }
        for b in plan.stored_levels() {
            let sets = slot_sets(mu, b);
            let adjoint: Vec<Vec<ColourMatrix<T>>> = sets
                .iter()
                .map(|&set| {
                    (0..lat.volume())
                        .into_par_iter()
                        .map(|cb| self.adjoint_from_parents(&f, b, set, lat.coords_of_cb(cb)))
                        .collect()
                })
                .collect();
            f.adjoint[b] = adjoint;
        }
        f
    }

    /// The chain's contributions of this μ to Ĝ_d(z).
    fn gather(&self, f: &Fields<T>, z: Coords, d: usize) -> ColourMatrix<T> {
        let mu = self.mu;
        let mut acc = ColourMatrix::zero();
        if d == mu {
            for b in 0..=self.depth {
                for set in slot_sets(mu, b) {
                    acc += self.adjoint(f, b, set, z).scale(self.level_c[b]);
                }
            }
            return acc;
        }
        for b in 0..self.depth {
            for set in slot_sets(mu, b).into_iter().filter(|s| s >> d & 1 == 0) {
                let child = set | 1 << d;
                let q = |x: Coords| self.level(f, b + 1, child, x);
                let a = |x: Coords| self.adjoint(f, b, set, x);
                let zm = self.shift(z, mu, -1);
                // +d, W_in at x = z.
                acc += (a(z) * self.link(self.shift(z, mu, 1), d))
                    .mul_adjoint(&q(self.shift(z, d, 1)));
                // +d, W_out at x = z − μ̂.
                acc += a(zm).adjoint_mul(&self.link(zm, d)) * q(self.shift(zm, d, 1));
                // −d, W_in at x = z + d̂.
                acc += (q(z) * self.link(self.shift(z, mu, 1), d))
                    .mul_adjoint(&a(self.shift(z, d, 1)));
                // −d, W_out at x = z − μ̂ + d̂.
                acc += q(zm).adjoint_mul(&self.link(zm, d)) * a(self.shift(zm, d, 1));
            }
        }
        acc
    }
}

/// The loose terms' contributions to Ĝ_d(z): every μ, every concrete path, every
/// position k whose link is U_d(z), as c R† (forward step) or c R (backward), R the loop
/// W_{k+1} ⋯ W_L G_μ(x)† W₁ ⋯ W_{k−1}.
fn loose_gather<T: Real>(
    plan: &ReversePlan,
    u: &GaugeField<T>,
    grad: &GaugeField<T>,
    c: &[T],
    z: Coords,
    d: usize,
) -> ColourMatrix<T> {
    let lat = *u.lattice();
    let n = plan.displacement as isize;
    let mut acc = ColourMatrix::zero();
    for mu in 0..4 {
        for &t in &plan.loose {
            let term = &plan.spec.terms[t];
            let single = PathSpec {
                terms: vec![term.clone()],
                ..plan.spec.clone()
            };
            for (_, path) in single.concrete_paths(mu, 1.0) {
                for (k, &(dk, ok)) in path.iter().enumerate() {
                    if dk != d {
                        continue;
                    }
                    // y_k: the site the step leaves from (U_d(z) forward, U_d(y_k − d̂)†
                    // backward).
                    let yk = if ok > 0 { z } else { lat.shift(z, d, 1).0 };
                    let mut y = lat.shift(yk, dk, ok).0;
                    let mut r: Option<ColourMatrix<T>> = None;
                    let times = |r: &mut Option<ColourMatrix<T>>, w: ColourMatrix<T>| {
                        *r = Some(r.map_or(w, |m| m * w));
                    };
                    for &s in &path[k + 1..] {
                        let (w, next) = hop(u, y, s);
                        times(&mut r, w);
                        y = next;
                    }
                    let x = lat.shift(y, mu, -n).0;
                    times(&mut r, grad.link_at(x, mu).adjoint());
                    y = x;
                    for &s in &path[..k] {
                        let (w, next) = hop(u, y, s);
                        times(&mut r, w);
                        y = next;
                    }
                    let r = r.expect("the gradient at least");
                    acc += if ok > 0 { r.adjoint() } else { r }.scale(c[t]);
                }
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests;
