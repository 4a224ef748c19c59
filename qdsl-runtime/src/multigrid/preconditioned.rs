//! The coarse operator preconditioned by its site-local part, X⁻¹M = 1 − X⁻¹D (QUDA's
//! X⁻¹Y), and its even-odd Schur complement.

use super::dense::{adjoint, invert, mul_add, C, ZERO};
use super::{CoarsenError, DenseOperator};
use qdsl_core::field::{ColourSpinorField, DenseKind, DenseLinkField};
use qdsl_core::lattice::Parity;
use rayon::prelude::*;

/// X⁻¹M = 1 − D' for M = X − D in [`DenseOperator`] form, D' the hop of the links
///
/// Y'⁺_μ(x) = X(x)⁻¹ Y⁺_μ(x),   Y'⁻_μ(x) = Y⁻_μ(x) X(x + μ̂)^{−†},
///
/// so that X(x)⁻¹ Y⁻_μ(x − μ̂)† = Y'⁻_μ(x − μ̂)†: the backward term of D' at x. Split by
/// parity (hops connect opposite parities), X⁻¹M = [1, −D'_pq; −D'_qp, 1] and M x = b is
/// solved by the Schur complement
///
/// M̂_pp x_p = (1 − D'_pq D'_qp) x_p = b'_p + D'_pq b'_q,   x_q = b'_q + D'_qp x_p,
///
/// with b' = X⁻¹ b.
#[derive(Clone, Debug)]
pub struct Preconditioned {
    /// X(x)⁻¹ per site.
    pub x_inv: DenseLinkField<f64>,
    /// 1 − D' in [`DenseOperator`] form: site matrices the identity, links Y'⁺, Y'⁻.
    pub op: DenseOperator,
}

impl Preconditioned {
    /// X⁻¹ (Gauss–Jordan with partial pivoting per site) and the links X⁻¹Y⁺, Y⁻X^{−†}
    /// of `m`. An error naming the site whose X is singular.
    pub fn new(m: &DenseOperator) -> Result<Self, CoarsenError> {
        let (lat, n) = (*m.lattice(), m.n());
        let inverses: Vec<Vec<C>> = (0..lat.volume())
            .into_par_iter()
            .map(|cb| {
                invert(m.x.link(cb, 0), n).map_err(|column| CoarsenError::SingularSiteMatrix {
                    site: lat.coords_of_cb(cb),
                    column,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut x_inv = DenseLinkField::zeros_of(DenseKind::SiteMatrix, lat, n)?;
        let mut ident = x_inv.clone();
        let (mut yf, mut yb) = (m.yf.clone(), m.yb.clone());
        for cb in 0..lat.volume() {
            x_inv.link_mut(cb, 0).copy_from_slice(&inverses[cb]);
            for r in 0..n {
                ident.link_mut(cb, 0)[r * n + r] = C::new(1.0, 0.0);
            }
            let x = lat.coords_of_cb(cb);
            for mu in 0..4 {
                let out = yf.link_mut(cb, mu);
                out.fill(ZERO);
                mul_add(out, &inverses[cb], m.yf.link(cb, mu), (n, n, n));
                let fwd = lat.cb_index(lat.shift(x, mu, 1).0);
                let out = yb.link_mut(cb, mu);
                out.fill(ZERO);
                mul_add(
                    out,
                    m.yb.link(cb, mu),
                    &adjoint(&inverses[fwd], (n, n)),
                    (n, n, n),
                );
            }
        }
        let op = DenseOperator::new(ident, yf, yb, m.shape())?;
        Ok(Self { x_inv, op })
    }

    /// out = X⁻¹ φ on the full lattice.
    pub fn apply_x_inv(
        &self,
        out: &mut ColourSpinorField<f64>,
        phi: &ColourSpinorField<f64>,
    ) -> Result<(), CoarsenError> {
        let layout = self.op.layout();
        layout.expect_same(phi.layout())?;
        layout.expect_same(out.layout())?;
        let n = self.op.n();
        out.data_mut()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(cb, o)| {
                o.fill(ZERO);
                mul_add(o, self.x_inv.link(cb, 0), phi.site(0, cb), (n, n, 1));
            });
        Ok(())
    }

    /// out = M̂_pp φ = (1 − D'_pq D'_qp) φ on the sites of parity `p` (full-lattice fields:
    /// φ is read on p only, out is zero on the other parity).
    pub fn apply_schur(
        &self,
        out: &mut ColourSpinorField<f64>,
        phi: &ColourSpinorField<f64>,
        p: Parity,
    ) -> Result<(), CoarsenError> {
        let lat = *self.op.lattice();
        let mut phi_p = phi.clone();
        mask_to_parity(&mut phi_p, p);
        // t = −D'_qp φ_p, then out = −D'_pq t = D'_pq D'_qp φ_p.
        let mut t = ColourSpinorField::zeros(*phi.layout());
        self.op.apply_hop(&mut t, &phi_p, p.opposite())?;
        self.op.apply_hop(out, &t, p)?;
        let n = self.op.n();
        for cb in 0..lat.volume() {
            if lat.parity(lat.coords_of_cb(cb)) == p {
                for (o, f) in out.data_mut()[cb * n..(cb + 1) * n]
                    .iter_mut()
                    .zip(phi_p.site(0, cb))
                {
                    *o = f - *o;
                }
            }
        }
        Ok(())
    }
}

/// Sets the sites of the parity opposite to `p` to zero.
pub fn mask_to_parity(f: &mut ColourSpinorField<f64>, p: Parity) {
    let lat = *f.layout().lattice();
    let n = f.layout().site_len();
    for (cb, site) in f.data_mut().chunks_mut(n).enumerate() {
        if lat.parity(lat.coords_of_cb(cb)) != p {
            site.fill(ZERO);
        }
    }
}
