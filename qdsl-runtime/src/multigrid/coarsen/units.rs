//! The coarse construction as a table of units: every contribution c_u of one fine site
//! to one coarse matrix ([`super::cpu::site_contributions`]) written as
//!
//! c_u = s · A† B,   A, B ∈ { V(w), M(w') V(w) }   (N_f × 2N_v each, s = ±1),
//!
//! with M one of the fine operator's matrices (X, Y⁺_μ or Y⁻_μ of a site). The device
//! construction ([`crate::multigrid::device`]) runs the table: per target (X_c, Y⁺_c,μ,
//! Y⁻_c,μ) and coarse site the units of the block's fine sites in the block's order:
//!
//! | unit | A | B | s | target |
//! |---|---|---|---|---|
//! | site term of x | V(x) | X(x) V(x) | + | X_c |
//! | forward hop z → z+μ̂ leaving the block | V(z) | Y⁺_μ(z) V(z+μ̂) | + | Y⁺_c,μ |
//! | backward link of z leaving the block | V(z) | Y⁻_μ(z) V(z+μ̂) | + | Y⁻_c,μ |
//! | forward hop inside the block | V(z) | Y⁺_μ(z) V(z+μ̂) | − | X_c |
//! | backward hop inside the block | Y⁻_μ(z) V(z+μ̂) | V(z) | − | X_c |
//!
//! (the last is −(V†UV⁻)† = −(UV⁻)† V). [`unit_product`] evaluates a unit on the CPU in
//! the order of the reference's loops, so that it is the same bits as the reference's
//! contribution (the device's fixed-point path relies on it).

use super::super::dense::{mul_add, C, ZERO};
use super::super::{DenseOperator, Prolongator};
use super::cpu::Target;

/// One side of a unit: V(site), or M · V(site) with M the fine operator's matrix
/// `matrix` (index 9 · cb + [`Target::index`] of the matrix's kind: X(cb), Y⁺_μ(cb),
/// Y⁻_μ(cb)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// The fine site of the vectors (checkerboard index).
    pub site: usize,
    /// The matrix applied to them, if any.
    pub matrix: Option<usize>,
}

/// A unit c_u = sign · a† b.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// A.
    pub a: Side,
    /// B.
    pub b: Side,
    /// ±1.
    pub sign: i32,
}

impl Unit {
    /// The five integers the device reads: a's site, a's matrix (−1 for none), b's site,
    /// b's matrix, the sign.
    pub fn encode(&self) -> [i32; 5] {
        let m = |s: Side| s.matrix.map_or(-1, |k| k as i32);
        [
            self.a.site as i32,
            m(self.a),
            self.b.site as i32,
            m(self.b),
            self.sign,
        ]
    }
}

/// The units of every target: `units[t]` holds, for coarse site 0, 1, …, `count[t]`
/// units each (t in [`Target::ALL`] order; a block's sites all alike, so the count is
/// the same for every coarse site).
#[derive(Clone, Debug)]
pub struct UnitTable {
    /// Per target, the units of every coarse site one after another.
    pub units: [Vec<Unit>; 9],
    /// Units per coarse site, per target.
    pub count: [usize; 9],
}

/// The matrix index of kind `t` at fine site `cb` (X: t = Site; links: Forward(μ) for
/// Y⁺_μ, Backward(μ) for Y⁻_μ).
pub fn matrix_index(cb: usize, t: Target) -> usize {
    9 * cb + t.index()
}

/// The unit table of `op` coarsened by `p` (P must fit M: [`super::cpu::check_fit`]).
pub fn unit_table(op: &DenseOperator, p: &Prolongator) -> UnitTable {
    let fine = *op.lattice();
    let b = p.block_dims();
    let mut units: [Vec<Unit>; 9] = Default::default();
    let v = |site| Side { site, matrix: None };
    for xc in 0..p.coarse_lattice().volume() {
        for &cb in p.block_sites(xc) {
            let z = fine.coords_of_cb(cb);
            units[Target::Site.index()].push(Unit {
                a: v(cb),
                b: Side {
                    site: cb,
                    matrix: Some(matrix_index(cb, Target::Site)),
                },
                sign: 1,
            });
            for mu in 0..4 {
                let w = fine.cb_index(fine.shift(z, mu, 1).0);
                let leaves = z[mu] % b[mu] == b[mu] - 1;
                for t in [Target::Forward(mu), Target::Backward(mu)] {
                    let uv = Side {
                        site: w,
                        matrix: Some(matrix_index(cb, t)),
                    };
                    let (target, unit) = match (leaves, t) {
                        (true, _) => (
                            t,
                            Unit {
                                a: v(cb),
                                b: uv,
                                sign: 1,
                            },
                        ),
                        (false, Target::Forward(_)) => (
                            Target::Site,
                            Unit {
                                a: v(cb),
                                b: uv,
                                sign: -1,
                            },
                        ),
                        (false, _) => (
                            Target::Site,
                            Unit {
                                a: uv,
                                b: v(cb),
                                sign: -1,
                            },
                        ),
                    };
                    units[target.index()].push(unit);
                }
            }
        }
    }
    let sites = p.coarse_lattice().volume();
    let count = std::array::from_fn(|t| units[t].len() / sites.max(1));
    UnitTable { units, count }
}

/// The fine operator's matrix of index `k` ([`matrix_index`]).
pub fn matrix(op: &DenseOperator, k: usize) -> &[C] {
    let (cb, t) = (k / 9, Target::ALL[k % 9]);
    match t {
        Target::Site => op.x.link(cb, 0),
        Target::Forward(mu) => op.yf.link(cb, mu),
        Target::Backward(mu) => op.yb.link(cb, mu),
    }
}

/// A side's N_f × 2N_v values, the product M V(w) summed as [`mul_add`] does.
fn side(op: &DenseOperator, p: &Prolongator, s: Side) -> Vec<C> {
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

/// c_u = sign · a† b (2N_v × 2N_v, row-major): c_ij = sign · Σ_l conj(a_li) b_lj summed
/// in l order from zero, each complex product's parts rounded before they are added (no
/// fused multiply-add) — the reference's bits.
pub fn unit_product(op: &DenseOperator, p: &Prolongator, u: &Unit) -> Vec<C> {
    let (nf, nc2) = (op.n(), 2 * p.n_vectors());
    let (a, b) = (side(op, p, u.a), side(op, p, u.b));
    let s = f64::from(u.sign);
    let mut c = vec![ZERO; nc2 * nc2];
    for i in 0..nc2 {
        for j in 0..nc2 {
            let mut acc = ZERO;
            for l in 0..nf {
                acc += a[l * nc2 + i].conj() * b[l * nc2 + j];
            }
            c[i * nc2 + j] = acc * s;
        }
    }
    c
}
