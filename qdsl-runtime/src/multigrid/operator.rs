//! [`DenseOperator`]: an operator M = X − D on a lattice with dense N × N site matrices
//! and links, the form of the multigrid coarse operator (the catalog's `CoarseOp`), in
//! which the fine Wilson-clover operator (N = 12) is written too, so that one coarsening
//! routine serves every level.

use super::dense::{mul_add, C, ZERO};
use super::CoarsenError;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{
    clover_block_entry, CloverField, ColourSpinorField, DenseKind, DenseLinkField, GaugeField,
    SiteSubset, SpinorLayout, CLOVER_BLOCK_DIM, CLOVER_BLOCK_REALS, CLOVER_SITE_REALS,
};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::math::Gamma;
use rayon::prelude::*;

/// M = X − D on fields of N = N_s · N_c components per site (site vector in the
/// [`SpinorLayout`] order, k = σ N_c + a):
///
/// (M φ)(x) = X(x) φ(x) − Σ_μ [ Y⁺_μ(x) φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂) ],
///
/// with X (`x`) one dense N × N matrix per site and Y⁺ (`yf`), Y⁻ (`yb`) dense N × N links
/// per site and direction: exactly the catalog's `CoarseOp` (X − D_c, D_c the
/// `CoarseHop`), whose fields these are. Boundary signs live in the links (the hops wrap
/// periodically). The first N/2 components have chirality +1, the last N/2 chirality −1
/// (Γ5 = diag(1, −1) in blocks of N/2): the coarse spin of a chirality-split prolongator,
/// and spins {0, 1} and {2, 3} of the fine DeGrand–Rossi basis (γ5 = diag(1, 1, −1, −1)).
#[derive(Clone, Debug, PartialEq)]
pub struct DenseOperator {
    /// X(x), the site-local part.
    pub x: DenseLinkField<f64>,
    /// Y⁺_μ(x), the link of the forward hop.
    pub yf: DenseLinkField<f64>,
    /// Y⁻_μ(x), applied adjoint on the backward hop from x + μ̂.
    pub yb: DenseLinkField<f64>,
    /// (N_s, N_c) of the fields M acts on (N = N_s · N_c).
    shape: (usize, usize),
}

impl DenseOperator {
    /// The operator of site matrices `x` and links `yf`, `yb` on fields of `shape`
    /// = (N_s, N_c). An error if the three fields are not of one lattice and N =
    /// N_s · N_c (even), or `x` is not a site-matrix field or `yf`, `yb` link fields.
    pub fn new(
        x: DenseLinkField<f64>,
        yf: DenseLinkField<f64>,
        yb: DenseLinkField<f64>,
        shape: (usize, usize),
    ) -> Result<Self, CoarsenError> {
        let n = shape.0 * shape.1;
        if n == 0 || !n.is_multiple_of(2) {
            return Err(CoarsenError::Shape(format!(
                "fields of {} spins × {} colours: N = {n} must be even and non-zero \
                 (two chiral halves)",
                shape.0, shape.1
            )));
        }
        for (name, f, kind) in [
            ("X", &x, DenseKind::SiteMatrix),
            ("Y⁺", &yf, DenseKind::Links),
            ("Y⁻", &yb, DenseKind::Links),
        ] {
            if f.n() != n || f.kind() != kind || f.lattice() != x.lattice() {
                return Err(CoarsenError::Shape(format!(
                    "{name}: expected {kind:?} of {n} × {n} on {:?}, found {:?} of {} × {} on {:?}",
                    x.lattice().dims(),
                    f.kind(),
                    f.n(),
                    f.n(),
                    f.lattice().dims()
                )));
            }
        }
        Ok(Self { x, yf, yb, shape })
    }

    /// The Wilson-clover operator in mass normalisation, M = A − ½ H (A the clover field
    /// on the full lattice, H the Wilson hop of [`crate::operator::WilsonLinks`]), as a
    /// dense operator on N = 12 (4 spins × 3 colours): X(x) = A(x) and
    ///
    /// Y⁺_μ(x) = ½ s_μ(x) (1 − γ_μ) ⊗ U_μ(x),   Y⁻_μ(x) = ½ s_μ(x) (1 + γ_μ) ⊗ U_μ(x),
    ///
    /// so that Y⁻_μ(x − μ̂)† = ½ s (1 + γ_μ) ⊗ U_μ(x − μ̂)†, the backward term of H;
    /// s_μ(x) = −1 on the time links of the last slice for an antiperiodic boundary, else
    /// 1. An error if the clover field is not on the links' full lattice.
    pub fn wilson_clover(
        gauge: &GaugeField<f64>,
        clover: &CloverField<f64>,
        boundary: TimeBoundary,
    ) -> Result<Self, CoarsenError> {
        let lat = *gauge.lattice();
        if *clover.lattice() != lat || clover.subset() != SiteSubset::Full {
            return Err(CoarsenError::Shape(format!(
                "clover field on {:?} ({:?}), expected the full lattice {:?}",
                clover.lattice().dims(),
                clover.subset(),
                lat.dims()
            )));
        }
        let n = 12;
        let mut x = DenseLinkField::zeros_of(DenseKind::SiteMatrix, lat, n)?;
        let mut yf = DenseLinkField::zeros(lat, n)?;
        let mut yb = DenseLinkField::zeros(lat, n)?;
        for cb in 0..lat.volume() {
            let site = &clover.data()[cb * CLOVER_SITE_REALS..(cb + 1) * CLOVER_SITE_REALS];
            let xm = x.link_mut(cb, 0);
            for b in 0..2 {
                let block = &site[b * CLOVER_BLOCK_REALS..(b + 1) * CLOVER_BLOCK_REALS];
                for r in 0..CLOVER_BLOCK_DIM {
                    for c in 0..CLOVER_BLOCK_DIM {
                        xm[(6 * b + r) * n + 6 * b + c] = clover_block_entry(block, r, c);
                    }
                }
            }
            let coords = lat.coords_of_cb(cb);
            for mu in 0..4 {
                let wraps = mu == 3 && coords[3] == lat.extent(3) - 1;
                let s = if wraps && boundary == TimeBoundary::Antiperiodic {
                    -0.5
                } else {
                    0.5
                };
                let (g, u) = (Gamma::DIRECTIONS[mu].matrix::<f64>(), gauge.link(cb, mu));
                for (field, sign) in [(&mut yf, -1.0), (&mut yb, 1.0)] {
                    let y = field.link_mut(cb, mu);
                    for (sr, sc) in (0..4).flat_map(|r| (0..4).map(move |c| (r, c))) {
                        let delta = if sr == sc { 1.0 } else { 0.0 };
                        let p = (C::new(delta, 0.0) + g.0[sr][sc] * sign) * s;
                        for (a, b) in (0..3).flat_map(|a| (0..3).map(move |b| (a, b))) {
                            y[(3 * sr + a) * n + 3 * sc + b] = p * u.0[a][b];
                        }
                    }
                }
            }
        }
        Self::new(x, yf, yb, (4, 3))
    }

    /// The lattice.
    pub fn lattice(&self) -> &Lattice {
        self.x.lattice()
    }

    /// N, the components per site.
    pub fn n(&self) -> usize {
        self.x.n()
    }

    /// (N_s, N_c) of the fields M acts on.
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }

    /// The layout of full-lattice fields M acts on.
    pub fn layout(&self) -> SpinorLayout {
        SpinorLayout::new(
            *self.lattice(),
            1,
            SiteSubset::Full,
            self.shape.0,
            self.shape.1,
        )
        .expect("a valid lattice and a non-zero shape")
    }

    /// out = M φ on the full lattice (plain loops, rayon over output sites). An error if
    /// a field's layout is not [`Self::layout`].
    pub fn apply(
        &self,
        out: &mut ColourSpinorField<f64>,
        phi: &ColourSpinorField<f64>,
    ) -> Result<(), CoarsenError> {
        self.apply_parts(out, phi, true, None)
    }

    /// out = −D φ restricted to output sites of parity `p` (the other parity's outputs
    /// zero): the off-diagonal block −D_pq of the even-odd split, on full-lattice
    /// fields. An error as for [`Self::apply`].
    pub fn apply_hop(
        &self,
        out: &mut ColourSpinorField<f64>,
        phi: &ColourSpinorField<f64>,
        p: Parity,
    ) -> Result<(), CoarsenError> {
        self.apply_parts(out, phi, false, Some(p))
    }

    /// out(x) = [X(x) φ(x) if `site`] − Σ_μ [Y⁺_μ(x) φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂)]
    /// on the sites of `parity` (all for None; the others set to zero).
    fn apply_parts(
        &self,
        out: &mut ColourSpinorField<f64>,
        phi: &ColourSpinorField<f64>,
        site: bool,
        parity: Option<Parity>,
    ) -> Result<(), CoarsenError> {
        let layout = self.layout();
        layout.expect_same(phi.layout())?;
        layout.expect_same(out.layout())?;
        let (lat, n) = (*self.lattice(), self.n());
        out.data_mut()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(cb, o)| {
                o.fill(ZERO);
                let x = lat.coords_of_cb(cb);
                if parity.is_some_and(|p| lat.parity(x) != p) {
                    return;
                }
                if site {
                    mul_add(o, self.x.link(cb, 0), phi.site(0, cb), (n, n, 1));
                }
                let mut hop = vec![ZERO; n];
                for mu in 0..4 {
                    let fwd = lat.cb_index(lat.shift(x, mu, 1).0);
                    mul_add(&mut hop, self.yf.link(cb, mu), phi.site(0, fwd), (n, n, 1));
                    let bwd = lat.cb_index(lat.shift(x, mu, -1).0);
                    let y = self.yb.link(bwd, mu);
                    let v = phi.site(0, bwd);
                    for (r, h) in hop.iter_mut().enumerate() {
                        for (c, vc) in v.iter().enumerate() {
                            *h += y[c * n + r].conj() * vc;
                        }
                    }
                }
                for (o, h) in o.iter_mut().zip(&hop) {
                    *o -= h;
                }
            });
        Ok(())
    }
}
