//! Running a [`PathPlan`] on the CPU: every node is a field over all sites (checkerboard
//! order), computed once from earlier nodes and dropped after its last use.

use super::plan::{DirectionPlan, Node, PathPlan};
use super::spec::ConcreteStep;
use crate::dsl::DslError;
use crate::field::GaugeField;
use crate::lattice::{Coords, Lattice};
use crate::math::ColourMatrix;
use crate::real::Real;
use rayon::prelude::*;

/// The link W_s(y) from y to y + ŝ for s = (d, o): U_d(y) if o = +1, U_d(y − d̂)† if o = −1.
pub(crate) fn hop<T: Real>(
    u: &GaugeField<T>,
    y: Coords,
    (d, o): ConcreteStep,
) -> (ColourMatrix<T>, Coords) {
    let lat = u.lattice();
    let next = lat.shift(y, d, o).0;
    if o > 0 {
        (*u.link_at(y, d), next)
    } else {
        (u.link_at(next, d).adjoint(), next)
    }
}

/// The ordered product of links along a concrete path from y,
/// P = W_{s₁}(y) W_{s₂}(y + ŝ₁) ⋯ (the identity for an empty path).
pub(crate) fn path_product<T: Real>(
    u: &GaugeField<T>,
    mut y: Coords,
    steps: &[ConcreteStep],
) -> ColourMatrix<T> {
    let mut p: Option<ColourMatrix<T>> = None;
    for &s in steps {
        let (w, next) = hop(u, y, s);
        p = Some(p.map_or(w, |p| p * w));
        y = next;
    }
    p.unwrap_or_else(ColourMatrix::identity)
}

/// The smeared links of a plan: F_μ(x) = Σ_t c_t u0^(−(len_t − 1)) Σ_nodes N(x), for
/// thin links `u` (with any phases already folded in) and tadpole factor `u0`.
///
/// Errors only for a plan built by hand whose nodes refer to later ones (plans from
/// [`PathPlan::new`] never do).
pub fn smear<T: Real>(
    plan: &PathPlan,
    u: &GaugeField<T>,
    u0: f64,
) -> Result<GaugeField<T>, DslError> {
    let lat = *u.lattice();
    let per_mu = plan
        .directions
        .iter()
        .map(|d| direction(d, plan.displacement, u, u0))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|reason| DslError::InvalidSpec {
            kernel: plan.spec.name.clone(),
            reason,
        })?;
    let mut out = GaugeField::unit(lat);
    for (mu, field) in per_mu.iter().enumerate() {
        for (cb, m) in field.iter().enumerate() {
            *out.link_mut(cb, mu) = *m;
        }
    }
    Ok(out)
}

/// The output field of one direction (an error names a node that refers to a later one).
fn direction<T: Real>(
    plan: &DirectionPlan,
    n: usize,
    u: &GaugeField<T>,
    u0: f64,
) -> Result<Vec<ColourMatrix<T>>, String> {
    let lat: Lattice = *u.lattice();
    let mu = plan.mu;
    for (i, node) in plan.nodes.iter().enumerate() {
        let refs = match node {
            Node::Staple { inner, .. } => vec![*inner],
            Node::Sum(a, b) => vec![*a, *b],
            Node::Path(_) => vec![],
        };
        if let Some(j) = refs.into_iter().find(|&j| j >= i) {
            return Err(format!(
                "direction {mu}: node {i} expected to read earlier nodes, found node {j}"
            ));
        }
    }
    if let Some(j) = plan
        .terms
        .iter()
        .flat_map(|t| t.nodes.iter())
        .find(|&&j| j >= plan.nodes.len())
    {
        return Err(format!(
            "direction {mu}: expected output nodes below {}, found {j}",
            plan.nodes.len()
        ));
    }
    // The last node (or term) that reads each node, so fields can be dropped early.
    let mut last_use = vec![usize::MAX; plan.nodes.len()];
    for (i, node) in plan.nodes.iter().enumerate() {
        match node {
            Node::Staple { inner, .. } => last_use[*inner] = i,
            Node::Sum(a, b) => {
                last_use[*a] = i;
                last_use[*b] = i;
            }
            Node::Path(_) => {}
        }
    }
    let output_nodes: Vec<usize> = plan.terms.iter().flat_map(|t| t.nodes.clone()).collect();
    for &i in &output_nodes {
        last_use[i] = usize::MAX;
    }
    let mut fields: Vec<Option<Vec<ColourMatrix<T>>>> = vec![None; plan.nodes.len()];
    let missing = |j: usize| {
        format!("direction {mu}: expected node {j} computed before use, found it later or absent")
    };
    for (i, node) in plan.nodes.iter().enumerate() {
        let field: Vec<ColourMatrix<T>> = match node {
            Node::Path(steps) => (0..lat.volume())
                .into_par_iter()
                .map(|cb| path_product(u, lat.coords_of_cb(cb), steps))
                .collect(),
            Node::Staple { step, inner } => {
                let q = fields[*inner].as_ref().ok_or_else(|| missing(*inner))?;
                (0..lat.volume())
                    .into_par_iter()
                    .map(|cb| {
                        let x = lat.coords_of_cb(cb);
                        let (w_in, xs) = hop(u, x, *step);
                        let end = lat.shift(x, mu, n as isize).0;
                        let (w_out, _) = hop(u, end, *step);
                        (w_in * q[lat.cb_index(xs)]).mul_adjoint(&w_out)
                    })
                    .collect()
            }
            Node::Sum(a, b) => {
                let fa = fields[*a].as_ref().ok_or_else(|| missing(*a))?;
                let fb = fields[*b].as_ref().ok_or_else(|| missing(*b))?;
                fa.iter().zip(fb).map(|(p, q)| *p + *q).collect()
            }
        };
        fields[i] = Some(field);
        for (j, f) in fields.iter_mut().enumerate().take(i + 1) {
            if last_use[j] == i {
                *f = None;
            }
        }
    }
    let mut out = vec![ColourMatrix::zero(); lat.volume()];
    for t in &plan.terms {
        let c = T::from_f64(t.coeff / u0.powi(t.length as i32 - 1));
        for &i in &t.nodes {
            let f = fields
                .get(i)
                .and_then(|f| f.as_ref())
                .ok_or_else(|| missing(i))?;
            for (o, m) in out.iter_mut().zip(f) {
                *o += m.scale(c);
            }
        }
    }
    Ok(out)
}
