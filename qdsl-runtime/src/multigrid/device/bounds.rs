//! The bounds the device construction is checked against (tests and `qdsl check`): per
//! entry of a coarse matrix, the tile mode's ε times √2 ‖a_i‖ ‖b_j‖ of its product.

use super::super::coarsen::cpu::Target;
use super::super::coarsen::tiles::TileMode;
use super::super::coarsen::units::{matrix, unit_table, Side};
use super::super::dense::{mul_add, C, ZERO};
use super::super::{DenseOperator, Prolongator};
use super::{DeviceCoarsen, Tiles};
use qdsl_core::dsl::mma::{self, MmaTile};
use qdsl_kernels::multigrid::{CoarseVuvBf16x3, CoarseVuvF64};

/// A side's values on the CPU (as the device gathers them).
pub fn side(op: &DenseOperator, p: &Prolongator, s: Side) -> Vec<C> {
    let (nf, nc2) = (op.n(), 2 * p.n_vectors());
    match s.matrix {
        None => p.v(s.site).to_vec(),
        Some(k) => {
            let mut uv = vec![ZERO; nf * nc2];
            mul_add(&mut uv, matrix(op, k), p.v(s.site), (nf, nf, nc2));
            uv
        }
    }
}

/// Per target and coarse site, √2 ‖a_i‖ ‖b_j‖ (the rows of the tile product, over all
/// units): Cauchy–Schwarz bounds the Σ|a||b| of the tiles' error bound.
pub fn magnitudes(op: &DenseOperator, p: &Prolongator) -> Vec<Vec<f64>> {
    let nc2 = 2 * p.n_vectors();
    let table = unit_table(op, p);
    let sites = p.coarse_lattice().volume();
    let mut out = Vec::new();
    for t in Target::ALL {
        let per = table.count[t.index()];
        for xc in 0..sites {
            let (mut na, mut nb) = (vec![0.0; nc2], vec![0.0; nc2]);
            for u in &table.units[t.index()][xc * per..(xc + 1) * per] {
                for (norms, s) in [(&mut na, u.a), (&mut nb, u.b)] {
                    for (k, z) in side(op, p, s).iter().enumerate() {
                        norms[k % nc2] += z.norm_sqr();
                    }
                }
            }
            out.push(
                (0..nc2 * nc2)
                    .map(|e| std::f64::consts::SQRT_2 * (na[e / nc2] * nb[e % nc2]).sqrt())
                    .collect(),
            );
        }
    }
    out
}

/// The mode's relative bound ε for products of depth k.
pub fn epsilon(mode: TileMode, nc2: usize, k: usize) -> f64 {
    let (v, _) = Tiles::variant(mode, nc2, k).unwrap();
    let spec = match mode {
        TileMode::F64 => CoarseVuvF64::spec(),
        TileMode::Bf16x3 => CoarseVuvBf16x3::spec(),
    };
    mma::cpu::error_bound(&spec, v.input, v.tile_k, k)
}

/// The worst entry of `got` against `want` as a fraction of its bound: twice the
/// mode's ε (GPU and the f64 reference each within it of the exact value) times
/// √2 ‖a_i‖ ‖b_j‖ of the entry's product ([`magnitudes`]); ≤ 1 passes.
pub fn worst_ratio(
    got: &DenseOperator,
    want: &DenseOperator,
    op: &DenseOperator,
    p: &Prolongator,
    dc: &DeviceCoarsen<'_>,
    mode: TileMode,
) -> f64 {
    let mags = magnitudes(op, p);
    let sites = p.coarse_lattice().volume();
    let nc2 = 2 * p.n_vectors();
    let mut worst: f64 = 0.0;
    for t in Target::ALL {
        let eps = 2.0 * epsilon(mode, nc2, dc.depth(t)) + 1e-15;
        for xc in 0..sites {
            let pick = |m: &DenseOperator| -> Vec<C> {
                match t {
                    Target::Site => m.x.link(xc, 0).to_vec(),
                    Target::Forward(mu) => m.yf.link(xc, mu).to_vec(),
                    Target::Backward(mu) => m.yb.link(xc, mu).to_vec(),
                }
            };
            let mag = &mags[t.index() * sites + xc];
            for (e, (g, w)) in pick(got).iter().zip(pick(want)).enumerate() {
                let d = g - w;
                worst = worst.max(d.re.abs().max(d.im.abs()) / (eps * mag[e]));
            }
        }
    }
    worst
}
