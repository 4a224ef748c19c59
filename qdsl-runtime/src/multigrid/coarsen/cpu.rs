//! The reference coarse construction on the CPU: UV, V†UV and X_c of the module docs
//! ([`super`]) as plain loops in f64, rayon over coarse sites (each coarse site sums
//! over its own fine sites only, so the result does not depend on the threads).

use super::super::dense::{adjoint, adjoint_mul_add, mul_add, C, ZERO};
use super::super::{CoarsenError, DenseOperator, Prolongator};
use qdsl_core::field::{DenseKind, DenseLinkField};
use rayon::prelude::*;

/// Which coarse matrix of a coarse site a contribution adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// X_c, the site-local part.
    Site,
    /// Y⁺_c,μ.
    Forward(usize),
    /// Y⁻_c,μ.
    Backward(usize),
}

impl Target {
    /// The 9 matrices of a coarse site in a fixed order: X_c, Y⁺_c,0..4, Y⁻_c,0..4.
    pub const ALL: [Target; 9] = [
        Target::Site,
        Target::Forward(0),
        Target::Forward(1),
        Target::Forward(2),
        Target::Forward(3),
        Target::Backward(0),
        Target::Backward(1),
        Target::Backward(2),
        Target::Backward(3),
    ];

    /// The index of the target in [`Self::ALL`].
    pub fn index(self) -> usize {
        match self {
            Target::Site => 0,
            Target::Forward(mu) => 1 + mu,
            Target::Backward(mu) => 5 + mu,
        }
    }
}

/// Checks that `p` prolongs to `op`'s lattice and components.
pub(crate) fn check_fit(op: &DenseOperator, p: &Prolongator) -> Result<(), CoarsenError> {
    if *op.lattice() != *p.fine_lattice() || op.n() != p.n_fine() {
        return Err(CoarsenError::Shape(format!(
            "prolongator for {:?} with {} components per site, operator on {:?} with {}",
            p.fine_lattice().dims(),
            p.n_fine(),
            op.lattice().dims(),
            op.n()
        )));
    }
    Ok(())
}

/// Calls `emit(target, c)` with each 2N_v × 2N_v contribution of the fine site `cb` to
/// its coarse site (module docs of [`super`]): V(x)† X(x) V(x) to X_c; per direction μ
/// with UV⁺ = Y⁺_μ(x) V(x+μ̂), UV⁻ = Y⁻_μ(x) V(x+μ̂): V†UV⁺ to Y⁺_c,μ and V†UV⁻ to
/// Y⁻_c,μ when the hop leaves the block, else −V†UV⁺ and −(V†UV⁻)† to X_c.
pub fn site_contributions(
    op: &DenseOperator,
    p: &Prolongator,
    cb: usize,
    mut emit: impl FnMut(Target, &[C]),
) {
    let (fine, nf, nc2) = (*op.lattice(), op.n(), 2 * p.n_vectors());
    let b = p.block_dims();
    let v = p.v(cb);
    let mut uv = vec![ZERO; nf * nc2];
    let mut c = vec![ZERO; nc2 * nc2];
    // The site term V(x)† X(x) V(x).
    mul_add(&mut uv, op.x.link(cb, 0), v, (nf, nf, nc2));
    adjoint_mul_add(&mut c, v, &uv, (nc2, nf, nc2), 1.0);
    emit(Target::Site, &c);
    let z = fine.coords_of_cb(cb);
    for mu in 0..4 {
        let w = p.v(fine.cb_index(fine.shift(z, mu, 1).0));
        let leaves = z[mu] % b[mu] == b[mu] - 1;
        for (links, target) in [
            (&op.yf, Target::Forward(mu)),
            (&op.yb, Target::Backward(mu)),
        ] {
            // UV = Y_μ(z) V(z+μ̂), then V(z)† UV.
            uv.fill(ZERO);
            c.fill(ZERO);
            mul_add(&mut uv, links.link(cb, mu), w, (nf, nf, nc2));
            adjoint_mul_add(&mut c, v, &uv, (nc2, nf, nc2), 1.0);
            if leaves {
                emit(target, &c);
            } else {
                // Inside the block: −V†UV⁺ and −(V†UV⁻)† into X_c.
                let inner = match target {
                    Target::Forward(_) => c.iter().map(|z| -z).collect(),
                    _ => adjoint(&c, (nc2, nc2))
                        .iter()
                        .map(|z| -z)
                        .collect::<Vec<_>>(),
                };
                emit(Target::Site, &inner);
            }
        }
    }
}

/// Writes the 9 matrices of every coarse site (in [`Target::ALL`] order, 2N_v × 2N_v
/// each) into a [`DenseOperator`] on `p`'s coarse lattice.
pub(crate) fn assemble(
    p: &Prolongator,
    sites: &[Vec<Vec<C>>],
) -> Result<DenseOperator, CoarsenError> {
    let (coarse, nc2) = (*p.coarse_lattice(), 2 * p.n_vectors());
    let mut x = DenseLinkField::zeros_of(DenseKind::SiteMatrix, coarse, nc2)?;
    let mut yf = DenseLinkField::zeros(coarse, nc2)?;
    let mut yb = DenseLinkField::zeros(coarse, nc2)?;
    for (xc, m) in sites.iter().enumerate() {
        for t in Target::ALL {
            let dst = match t {
                Target::Site => x.link_mut(xc, 0),
                Target::Forward(mu) => yf.link_mut(xc, mu),
                Target::Backward(mu) => yb.link_mut(xc, mu),
            };
            dst.copy_from_slice(&m[t.index()]);
        }
    }
    DenseOperator::new(x, yf, yb, (2, p.n_vectors()))
}

/// M_c = P† M P in [`DenseOperator`] form (module docs of [`super`]): the coarse links
/// Y⁺_c,μ = Σ V†UV⁺_μ and Y⁻_c,μ = Σ V†UV⁻_μ over each block's forward face, and X_c the
/// site term plus the hops inside the block, summed in f64 in the order of the block's
/// fine sites. An error if P's fine lattice or components are not M's.
pub fn coarsen(op: &DenseOperator, p: &Prolongator) -> Result<DenseOperator, CoarsenError> {
    check_fit(op, p)?;
    let nc2 = 2 * p.n_vectors();
    let sites: Vec<Vec<Vec<C>>> = (0..p.coarse_lattice().volume())
        .into_par_iter()
        .map(|xc| {
            let mut m = vec![vec![ZERO; nc2 * nc2]; Target::ALL.len()];
            for &cb in p.block_sites(xc) {
                site_contributions(op, p, cb, |t, c| {
                    for (acc, z) in m[t.index()].iter_mut().zip(c) {
                        *acc += z;
                    }
                });
            }
            m
        })
        .collect();
    assemble(p, &sites)
}
