//! The fermion force of smeared-link actions, derived from the `link_paths!` plans by the
//! chain rule along every path (reverse-mode differentiation of the plan).
//!
//! **Gradients.** For a real function S of complex 3 × 3 links, its gradient with respect
//! to a link field F is the field G with
//!
//! dS = Σ_{x,μ} Re tr[G_μ(x)† dF_μ(x)]
//!
//! (the real inner product ⟨A, B⟩ = Re tr[A† B] of C^{3×3} seen as R^18). A smearing
//! F = F[U] is real-linear in U and U† path by path, so its pull-back — the gradient with
//! respect to the thin links, Ĝ, with dS = Σ Re tr[Ĝ† dU] — is a sum over every path
//! and every link position in it ([`pullback`]): for a path P = W₁ ⋯ W_L with coefficient
//! c, the link at position k receives
//!
//! c · (W₁ ⋯ W_{k−1})† G (W_{k+1} ⋯ W_L)†,
//!
//! and its adjoint when W_k = U† (a backward step). The plan's nested staples
//! S(x) = W(x) Q(x + ŝ) W(x + nμ̂)† pass A (the gradient of S) on as W† A W' to the inner
//! node Q, A W' Q† to the first link and A† W Q to the last, so sub-paths shared by the
//! forward plan are shared by the backward one.
//!
//! **The U(3) projection** W = V (V†V)^{−1/2} of HISQ ([`pullback_polar_u3`]): the
//! Cayley–Hamilton form R = (V†V)^{−1/2} = f₀ + f₁Q + f₂Q² differentiated in reverse mode
//! ([`polar`]); the tests check it against the textbook form through a Lyapunov equation
//! (with H = (V†V)^{1/2}: G_V = G_W H⁻¹ + 2 V Y, Y H + H Y = herm(−H⁻¹ V† G_W H⁻¹)) and
//! finite differences.
//!
//! **Force.** For U_μ(x) → e^{tX} U_μ(x), X ∈ su(3): dS/dt = Re tr[Ĝ† X U] =
//! tr[X F], F = TA[U Ĝ†] ([`force_from_gradient`]), the convention of the gauge force
//! ([`super::force`]), so the momentum step is P ← P + ε F for both.
//!
//! **Staggered actions** ([`staggered_gradient`]): with M = 2m + D, the even-odd
//! A = (M†M)_pp and X = (A + σ)⁻¹ φ on parity p, Y = D_qp X on the other parity,
//! S = φ† (A + σ)⁻¹ φ has
//!
//! dS = X† dD_pq Y − Y† dD_qp X,
//!
//! i.e. the gradient with respect to the one-hop links (n = 1) and the three-hop links
//! (n = 3) G_μ(x) = 2 ε(x) Z(x) Z(x + nμ̂)†, Z = X on p and Y on q, ε(x) = +1 on p and
//! −1 on q (from dS = −X† dA X, A = 4m² − D_pq D_qp, D† = −D). A rational action
//! φ† [α₀ + Σ_i α_i (A + σ_i)⁻¹] φ sums these with weights α_i.

use super::cpu::hop;
use super::plan::{DirectionPlan, Node, PathPlan};
use super::spec::ConcreteStep;
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::lattice::{Coords, Lattice};
use crate::math::{ColourMatrix, ColourVector};
use crate::real::Real;

/// The gradient of S with respect to the thin links U, given its gradient `grad` with
/// respect to the smeared links F = plan(U) (tadpole factor `u0`): the chain rule along
/// every path of the plan, every link position (see the module documentation).
///
/// Errors only for a plan built by hand whose nodes refer to later ones.
pub fn pullback<T: Real>(
    plan: &PathPlan,
    u: &GaugeField<T>,
    u0: f64,
    grad: &GaugeField<T>,
) -> Result<GaugeField<T>, DslError> {
    let lat = *u.lattice();
    let mut out = zero_field(lat);
    for d in &plan.directions {
        direction(d, plan.displacement, u, u0, grad, &mut out).map_err(|reason| {
            DslError::InvalidSpec {
                kernel: plan.spec.name.clone(),
                reason,
            }
        })?;
    }
    Ok(out)
}

/// A gauge field of zero matrices (a gradient's initial value).
pub fn zero_field<T: Real>(lat: Lattice) -> GaugeField<T> {
    let mut f = GaugeField::unit(lat);
    for l in f.links_mut() {
        *l = ColourMatrix::zero();
    }
    f
}

/// Adds B, the gradient of the hop W_s(y) ([`hop`]), to the thin-link gradient: to
/// U_d(y) for a forward step, B† to U_d(y − d̂) for a backward one.
fn add_hop_gradient<T: Real>(
    out: &mut GaugeField<T>,
    y: Coords,
    (d, o): ConcreteStep,
    b: ColourMatrix<T>,
) {
    let lat = *out.lattice();
    if o > 0 {
        *out.link_mut(lat.cb_index(y), d) += b;
    } else {
        let at = lat.shift(y, d, -1).0;
        *out.link_mut(lat.cb_index(at), d) += b.adjoint();
    }
}

/// The node fields of one direction, all kept (the backward sweep reads them).
fn forward_fields<T: Real>(
    plan: &DirectionPlan,
    n: usize,
    u: &GaugeField<T>,
) -> Result<Vec<Vec<ColourMatrix<T>>>, String> {
    let lat = *u.lattice();
    let mu = plan.mu;
    let mut fields: Vec<Vec<ColourMatrix<T>>> = Vec::with_capacity(plan.nodes.len());
    for (i, node) in plan.nodes.iter().enumerate() {
        let earlier = |j: usize| {
            if j < i {
                Ok(j)
            } else {
                Err(format!(
                    "direction {mu}: node {i} expected to read earlier nodes, found node {j}"
                ))
            }
        };
        let field = match node {
            Node::Path(steps) => (0..lat.volume())
                .map(|cb| super::cpu::path_product(u, lat.coords_of_cb(cb), steps))
                .collect(),
            Node::Staple { step, inner } => {
                let q = &fields[earlier(*inner)?];
                (0..lat.volume())
                    .map(|cb| {
                        let x = lat.coords_of_cb(cb);
                        let (w_in, xs) = hop(u, x, *step);
                        let (w_out, _) = hop(u, lat.shift(x, mu, n as isize).0, *step);
                        (w_in * q[lat.cb_index(xs)]).mul_adjoint(&w_out)
                    })
                    .collect()
            }
            Node::Sum(a, b) => {
                let (fa, fb) = (&fields[earlier(*a)?], &fields[earlier(*b)?]);
                fa.iter().zip(fb).map(|(p, q)| *p + *q).collect()
            }
        };
        fields.push(field);
    }
    Ok(fields)
}

/// The backward sweep of one direction, accumulating into `out`.
fn direction<T: Real>(
    plan: &DirectionPlan,
    n: usize,
    u: &GaugeField<T>,
    u0: f64,
    grad: &GaugeField<T>,
    out: &mut GaugeField<T>,
) -> Result<(), String> {
    let lat = *u.lattice();
    let mu = plan.mu;
    let fields = forward_fields(plan, n, u)?;
    let mut adj: Vec<Option<Vec<ColourMatrix<T>>>> = vec![None; plan.nodes.len()];
    let add = |adj: &mut Vec<Option<Vec<ColourMatrix<T>>>>, i: usize, cb: usize, m| {
        let field = adj[i].get_or_insert_with(|| vec![ColourMatrix::zero(); lat.volume()]);
        field[cb] += m;
    };
    for t in &plan.terms {
        let c = T::from_f64(t.coeff / u0.powi(t.length as i32 - 1));
        for &i in &t.nodes {
            if i >= plan.nodes.len() {
                return Err(format!(
                    "direction {mu}: expected output nodes below {}, found {i}",
                    plan.nodes.len()
                ));
            }
            for cb in 0..lat.volume() {
                add(&mut adj, i, cb, grad.link(cb, mu).scale(c));
            }
        }
    }
    for i in (0..plan.nodes.len()).rev() {
        let Some(a) = adj[i].take() else { continue };
        match &plan.nodes[i] {
            Node::Sum(p, q) => {
                for (cb, m) in a.iter().enumerate() {
                    add(&mut adj, *p, cb, *m);
                    add(&mut adj, *q, cb, *m);
                }
            }
            Node::Staple { step, inner } => {
                let q = &fields[*inner];
                for (cb, m) in a.iter().enumerate() {
                    let x = lat.coords_of_cb(cb);
                    let (w_in, xs) = hop(u, x, *step);
                    let end = lat.shift(x, mu, n as isize).0;
                    let (w_out, _) = hop(u, end, *step);
                    let qx = q[lat.cb_index(xs)];
                    add(
                        &mut adj,
                        *inner,
                        lat.cb_index(xs),
                        w_in.adjoint_mul(m) * w_out,
                    );
                    add_hop_gradient(out, x, *step, (*m * w_out).mul_adjoint(&qx));
                    add_hop_gradient(out, end, *step, m.adjoint_mul(&w_in) * qx);
                }
            }
            Node::Path(steps) => {
                for (cb, m) in a.iter().enumerate() {
                    path_gradient(u, lat.coords_of_cb(cb), steps, m, out);
                }
            }
        }
    }
    Ok(())
}

/// The gradient of Re tr[A† P] for the path product P = W₁ ⋯ W_L from y: link k gets
/// (W₁ ⋯ W_{k−1})† A (W_{k+1} ⋯ W_L)†.
fn path_gradient<T: Real>(
    u: &GaugeField<T>,
    y: Coords,
    steps: &[ConcreteStep],
    a: &ColourMatrix<T>,
    out: &mut GaugeField<T>,
) {
    let mut hops = Vec::with_capacity(steps.len());
    let mut at = y;
    for &s in steps {
        let (w, next) = hop(u, at, s);
        hops.push((at, s, w));
        at = next;
    }
    // suffix[k] = W_{k+1} ⋯ W_L (identity for k = L − 1).
    let mut suffix = vec![ColourMatrix::identity(); hops.len()];
    for k in (0..hops.len().saturating_sub(1)).rev() {
        suffix[k] = hops[k + 1].2 * suffix[k + 1];
    }
    let mut prefix = ColourMatrix::identity();
    for (k, &(at, s, w)) in hops.iter().enumerate() {
        add_hop_gradient(out, at, s, (prefix.adjoint_mul(a)).mul_adjoint(&suffix[k]));
        prefix *= w;
    }
}

/// The force F_μ(x) = TA[U_μ(x) Ĝ_μ(x)†] of a thin-link gradient Ĝ: dS/dt = tr[X F] for
/// U_μ(x) → e^{tX} U_μ(x) (one su(3) matrix per link in a [`GaugeField`]).
pub fn force_from_gradient<T: Real>(u: &GaugeField<T>, grad: &GaugeField<T>) -> GaugeField<T> {
    let mut f = u.clone();
    for (link, g) in f.links_mut().iter_mut().zip(grad.links()) {
        *link = link.mul_adjoint(g).traceless_antihermitian_part();
    }
    f
}

/// Adds the gradient of S = φ† (A + σ)⁻¹ φ, times `weight`, with respect to the hop
/// links of displacement `n` (1: fat, 3: long) to `grad`:
/// G_μ(x) += 2 · weight · ε(x) Z(x) Z(x + nμ̂)†, ε(x) = +1 on `parity` (the parity of
/// φ and X), −1 on the other, where `z(x)` is X on `parity` and Y = D X on the other
/// (see the module documentation).
pub fn staggered_gradient<T: Real>(
    grad: &mut GaugeField<T>,
    n: usize,
    parity: usize,
    weight: f64,
    z: impl Fn(Coords) -> ColourVector<T>,
) {
    let lat = *grad.lattice();
    for cb in 0..lat.volume() {
        let x = lat.coords_of_cb(cb);
        let on_p = x.iter().sum::<usize>() % 2 == parity;
        let c = T::from_f64(if on_p { 2.0 * weight } else { -2.0 * weight });
        let zx = z(x);
        for mu in 0..4 {
            let zy = z(lat.shift(x, mu, n as isize).0);
            let outer = ColourMatrix::from_fn(|i, j| zx.0[i] * zy.0[j].conj());
            *grad.link_mut(cb, mu) += outer.scale(c);
        }
    }
}

pub mod polar;
pub use polar::pullback_polar_u3;

#[cfg(test)]
mod tests;
