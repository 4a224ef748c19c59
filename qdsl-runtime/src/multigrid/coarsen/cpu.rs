//! The reference coarse construction on the CPU: UV, V†UV and X_c of the module docs
//! ([`super`]) as plain loops in f64, rayon over coarse sites (each coarse site sums
//! over its own fine sites only, so the result does not depend on the threads).

use super::super::dense::{adjoint, adjoint_mul_add, mul_add, C, ZERO};
use super::super::{CoarsenError, DenseOperator, Prolongator};
use qdsl_core::field::{DenseKind, DenseLinkField};
use rayon::prelude::*;

/// One coarse site's X_c and its 4 forward and 4 backward coarse links (2N_v × 2N_v
/// each, row-major).
struct CoarseSite {
    x: Vec<C>,
    yf: [Vec<C>; 4],
    yb: [Vec<C>; 4],
}

/// M_c = P† M P in [`DenseOperator`] form (module docs of [`super`]): the coarse links
/// Y⁺_c,μ = Σ V†UV⁺_μ and Y⁻_c,μ = Σ V†UV⁻_μ over each block's forward face, and X_c the
/// site term plus the hops inside the block. An error if P's fine lattice or components
/// are not M's.
pub fn coarsen(op: &DenseOperator, p: &Prolongator) -> Result<DenseOperator, CoarsenError> {
    let (fine, nf) = (*op.lattice(), op.n());
    if fine != *p.fine_lattice() || nf != p.n_fine() {
        return Err(CoarsenError::Shape(format!(
            "prolongator for {:?} with {} components per site, operator on {:?} with {nf}",
            p.fine_lattice().dims(),
            p.n_fine(),
            fine.dims()
        )));
    }
    let (coarse, nc2) = (*p.coarse_lattice(), 2 * p.n_vectors());
    let b = p.block_dims();
    let sites: Vec<CoarseSite> = (0..coarse.volume())
        .into_par_iter()
        .map(|xc| {
            let zero = || vec![ZERO; nc2 * nc2];
            let mut s = CoarseSite {
                x: zero(),
                yf: std::array::from_fn(|_| zero()),
                yb: std::array::from_fn(|_| zero()),
            };
            let mut xv = vec![ZERO; nf * nc2];
            let (mut uvf, mut uvb) = (xv.clone(), xv.clone());
            for &cb in p.block_sites(xc) {
                let v = p.v(cb);
                // The site term V(x)† X(x) V(x).
                xv.fill(ZERO);
                mul_add(&mut xv, op.x.link(cb, 0), v, (nf, nf, nc2));
                adjoint_mul_add(&mut s.x, v, &xv, (nc2, nf, nc2), 1.0);
                let z = fine.coords_of_cb(cb);
                for mu in 0..4 {
                    let w = fine.cb_index(fine.shift(z, mu, 1).0);
                    // UV⁺ = Y⁺_μ(z) V(z+μ̂), UV⁻ = Y⁻_μ(z) V(z+μ̂).
                    uvf.fill(ZERO);
                    uvb.fill(ZERO);
                    mul_add(&mut uvf, op.yf.link(cb, mu), p.v(w), (nf, nf, nc2));
                    mul_add(&mut uvb, op.yb.link(cb, mu), p.v(w), (nf, nf, nc2));
                    if z[mu] % b[mu] == b[mu] - 1 {
                        // The hop leaves the block: a coarse link.
                        adjoint_mul_add(&mut s.yf[mu], v, &uvf, (nc2, nf, nc2), 1.0);
                        adjoint_mul_add(&mut s.yb[mu], v, &uvb, (nc2, nf, nc2), 1.0);
                    } else {
                        // Inside the block: −V†UV⁺ and −(V†UV⁻)† into X_c.
                        adjoint_mul_add(&mut s.x, v, &uvf, (nc2, nf, nc2), -1.0);
                        let mut t = vec![ZERO; nc2 * nc2];
                        adjoint_mul_add(&mut t, v, &uvb, (nc2, nf, nc2), 1.0);
                        for (x, t) in s.x.iter_mut().zip(adjoint(&t, (nc2, nc2))) {
                            *x -= t;
                        }
                    }
                }
            }
            s
        })
        .collect();
    let mut x = DenseLinkField::zeros_of(DenseKind::SiteMatrix, coarse, nc2)?;
    let mut yf = DenseLinkField::zeros(coarse, nc2)?;
    let mut yb = DenseLinkField::zeros(coarse, nc2)?;
    for (xc, s) in sites.into_iter().enumerate() {
        x.link_mut(xc, 0).copy_from_slice(&s.x);
        for mu in 0..4 {
            yf.link_mut(xc, mu).copy_from_slice(&s.yf[mu]);
            yb.link_mut(xc, mu).copy_from_slice(&s.yb[mu]);
        }
    }
    DenseOperator::new(x, yf, yb, (2, p.n_vectors()))
}
