//! The coarse construction against the fine operator: M_c v = P†(M(P v)) with the fine
//! Wilson-clover operator of the generated Wilson hop and the clover field (4⁴ fine,
//! 2⁴ blocks, N_v = 24 and 4), the coarse links run in the catalog's generated
//! `CoarseOp`, Γ5-hermiticity of the coarse operator from chirality-split vectors, a
//! second coarsening of a coarse operator, X⁻¹Y and the even-odd Schur complement
//! against a dense solve written here, and the inputs refused.
// Textbook index loops on purpose.
#![allow(clippy::needless_range_loop)]

use super::dense::{C, ZERO};
use super::*;
use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, TimeBoundary};
use qdsl_core::dsl::Variant;
use qdsl_core::field::{
    CloverField, ColourSpinorField, DenseKind, DenseLinkField, GaugeField, SiteSubset, SpinorLayout,
};
use qdsl_core::gauge::clover_field;
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_kernels::{CoarseOp, WilsonHop};

/// A 4⁴ weak-field Wilson-clover set-up: links, the full-lattice clover field (mass m,
/// c_sw = 1.2) and its dense operator with an antiperiodic time boundary.
pub(super) fn wilson_clover(
    mass: f64,
    seed: u64,
) -> (GaugeField<f64>, CloverField<f64>, DenseOperator) {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let gauge = GaugeField::<f64>::weak(lat, seed, 0.4);
    let clover = clover_field(&gauge, mass, 1.2);
    let op = DenseOperator::wilson_clover(&gauge, &clover, TimeBoundary::Antiperiodic).unwrap();
    (gauge, clover, op)
}

/// The fine operator M ψ = A ψ − ½ H ψ from the generated Wilson hop (every site) and
/// the clover field's own product: independent of [`DenseOperator`].
fn fine_apply(
    gauge: &GaugeField<f64>,
    clover: &CloverField<f64>,
    psi: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let variant = Variant {
        sites: OutputSites::Full,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    };
    let mut h = ColourSpinorField::zeros(*psi.layout());
    let none: Option<Xpay<'_, f64>> = None;
    WilsonHop
        .apply_cpu(&variant, &mut h, psi, gauge, none)
        .unwrap();
    let mut out = ColourSpinorField::zeros(*psi.layout());
    clover.apply(&mut out, psi).unwrap();
    for (o, h) in out.data_mut().iter_mut().zip(h.data()) {
        *o -= h * 0.5;
    }
    out
}

/// `nv` Gaussian full-lattice fields of `layout`.
pub(super) fn gaussian_vectors(
    layout: SpinorLayout,
    nv: usize,
    seed: u64,
) -> Vec<ColourSpinorField<f64>> {
    (0..nv)
        .map(|a| ColourSpinorField::gaussian(layout, seed + a as u64))
        .collect()
}

/// max |a − b| / max |b|.
fn rel_diff(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    let diff = a
        .data()
        .iter()
        .zip(b.data())
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max);
    diff / b.data().iter().map(|z| z.norm()).fold(0.0, f64::max)
}

/// ⟨a, b⟩ = Σ conj(a) b.
fn dot(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> C {
    a.data()
        .iter()
        .zip(b.data())
        .map(|(x, y)| x.conj() * y)
        .sum()
}

/// Γ5 φ: the last half of every site's components negated (chirality −).
fn gamma5(f: &ColourSpinorField<f64>) -> ColourSpinorField<f64> {
    let n = f.layout().site_len();
    let mut g = f.clone();
    for (k, z) in g.data_mut().iter_mut().enumerate() {
        if k % n >= n / 2 {
            *z = -*z;
        }
    }
    g
}

/// M ψ through a [`DenseOperator`].
fn apply(op: &DenseOperator, psi: &ColourSpinorField<f64>) -> ColourSpinorField<f64> {
    let mut out = ColourSpinorField::zeros(*psi.layout());
    op.apply(&mut out, psi).unwrap();
    out
}

/// The Wilson-clover operator written densely (N = 12) equals the generated hop with
/// the clover product, to rounding.
#[test]
fn dense_wilson_clover_equals_the_fine_operator() {
    let (gauge, clover, op) = wilson_clover(0.1, 3);
    let psi = ColourSpinorField::gaussian(op.layout(), 5);
    let d = rel_diff(&apply(&op, &psi), &fine_apply(&gauge, &clover, &psi));
    assert!(d < 1e-14, "dense vs generated: {d:e}");
}

/// P†P = 1 (block orthonormal) and P Γ5 = γ5 P (chirality split), N_v = 24 on 2⁴ blocks.
#[test]
fn prolongator_is_block_orthonormal_and_chirality_split() {
    let (_, _, op) = wilson_clover(0.1, 3);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 100), [2, 2, 2, 2]).unwrap();
    let phi = ColourSpinorField::gaussian(p.coarse_layout(), 7);
    let back = p.restrict(&p.prolong(&phi).unwrap()).unwrap();
    assert!(
        rel_diff(&back, &phi) < 1e-13,
        "P†P φ ≠ φ: {:e}",
        rel_diff(&back, &phi)
    );
    let lhs = p.prolong(&gamma5(&phi)).unwrap();
    let rhs = gamma5(&p.prolong(&phi).unwrap());
    assert_eq!(lhs.data(), rhs.data(), "P Γ5 ≠ γ5 P");
}

/// The constructed coarse operator applied to coarse vectors equals P†(M(P v)) with the
/// fine operator of the generated Wilson hop and the clover field: 4⁴ fine, 2⁴ blocks,
/// N_v = 24 (the catalog's size) and 4, antiperiodic time (signs in the coarse links).
#[test]
fn coarse_operator_equals_restricted_fine_operator() {
    let (gauge, clover, op) = wilson_clover(-0.2, 9);
    for nv in [24, 4] {
        let p = Prolongator::new(&gaussian_vectors(op.layout(), nv, 200), [2, 2, 2, 2]).unwrap();
        let mc = coarsen(&op, &p).unwrap();
        assert_eq!((mc.n(), mc.lattice().dims()), (2 * nv, [2, 2, 2, 2]));
        for seed in [1, 2] {
            let v = ColourSpinorField::gaussian(p.coarse_layout(), seed);
            let want = p
                .restrict(&fine_apply(&gauge, &clover, &p.prolong(&v).unwrap()))
                .unwrap();
            let d = rel_diff(&apply(&mc, &v), &want);
            assert!(d < 1e-13, "N_v = {nv}: M_c v vs P†MPv: {d:e}");
        }
    }
}

/// The coarse links in the catalog's generated `CoarseOp` (X − D_c, N_v = 24, every
/// site, periodic: the boundary signs are in the links) give P†(M(P v)).
#[test]
fn coarse_links_run_in_the_generated_coarse_op() {
    let (gauge, clover, op) = wilson_clover(0.1, 4);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 300), [2, 2, 2, 2]).unwrap();
    let mc = coarsen(&op, &p).unwrap();
    let v = ColourSpinorField::gaussian(p.coarse_layout(), 8);
    let variant = Variant {
        sites: OutputSites::Full,
        boundary: TimeBoundary::Periodic,
        ..Variant::default()
    };
    let mut out = ColourSpinorField::zeros(p.coarse_layout());
    let none: Option<Xpay<'_, f64>> = None;
    CoarseOp
        .apply_cpu(&variant, &mut out, &v, &mc.x, &mc.yf, &mc.yb, none)
        .unwrap();
    let want = p
        .restrict(&fine_apply(&gauge, &clover, &p.prolong(&v).unwrap()))
        .unwrap();
    let d = rel_diff(&out, &want);
    assert!(d < 1e-13, "generated CoarseOp vs P†MPv: {d:e}");
}

/// Γ5 M_c is hermitian (⟨u, Γ5 M_c v⟩ = ⟨Γ5 M_c u, v⟩) as the fine γ5 M is, and on the
/// links Γ5 Y⁺_μ Γ5 = Y⁻_μ, Γ5 X Γ5 = X†; the fine operator's check fails if γ5 is
/// left out (the property is not trivial).
#[test]
fn coarse_operator_is_gamma5_hermitian() {
    let (_, _, op) = wilson_clover(0.1, 6);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 8, 400), [2, 2, 2, 2]).unwrap();
    let mc = coarsen(&op, &p).unwrap();
    for (m, label) in [(&op, "fine"), (&mc, "coarse")] {
        let u = ColourSpinorField::gaussian(m.layout(), 21);
        let v = ColourSpinorField::gaussian(m.layout(), 22);
        let lhs = dot(&u, &gamma5(&apply(m, &v)));
        let rhs = dot(&gamma5(&apply(m, &u)), &v);
        assert!(
            (lhs - rhs).norm() < 1e-12 * lhs.norm(),
            "{label}: {lhs} vs {rhs}"
        );
        let plain = (dot(&u, &apply(m, &v)) - dot(&apply(m, &u), &v)).norm();
        assert!(
            plain > 1e-3 * lhs.norm(),
            "{label}: M itself is not hermitian"
        );
    }
    let n = mc.n();
    let g = |i: usize| if i < n / 2 { 1.0 } else { -1.0 };
    let scale = mc.yf.data().iter().map(|z| z.norm()).fold(0.0, f64::max);
    for xc in 0..mc.lattice().volume() {
        for mu in 0..4 {
            let (yf, yb) = (mc.yf.link(xc, mu), mc.yb.link(xc, mu));
            for r in 0..n {
                for c in 0..n {
                    let d = (yf[r * n + c] * g(r) * g(c) - yb[r * n + c]).norm();
                    assert!(
                        d < 1e-13 * scale,
                        "Γ5 Y⁺ Γ5 ≠ Y⁻ at {xc}, μ {mu}, ({r}, {c})"
                    );
                }
            }
        }
        let x = mc.x.link(xc, 0);
        for r in 0..n {
            for c in 0..n {
                let d = (x[r * n + c] * g(r) * g(c) - x[c * n + r].conj()).norm();
                assert!(d < 1e-13 * scale, "Γ5 X Γ5 ≠ X† at {xc}, ({r}, {c})");
            }
        }
    }
}

/// Coarsening a coarse operator again (the second level): a random dense operator on 4⁴
/// with 2 × N_c components as the fine one, 2⁴ blocks, N_c → N_v of 4 → 6 and of 24 →
/// 32 (the shape of QUDA's second-level set-up): M_cc v = P†(M(P v)).
#[test]
fn coarsening_a_coarse_operator() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    for (nc, nv) in [(4, 6), (24, 32)] {
        let n = 2 * nc;
        let m = DenseOperator::new(
            DenseLinkField::random_of(DenseKind::SiteMatrix, lat, n, 31).unwrap(),
            DenseLinkField::random(lat, n, 32).unwrap(),
            DenseLinkField::random(lat, n, 33).unwrap(),
            (2, nc),
        )
        .unwrap();
        let p = Prolongator::new(&gaussian_vectors(m.layout(), nv, 500), [2, 2, 2, 2]).unwrap();
        let mc = coarsen(&m, &p).unwrap();
        assert_eq!(mc.shape(), (2, nv));
        let v = ColourSpinorField::gaussian(p.coarse_layout(), 9);
        let want = p.restrict(&apply(&m, &p.prolong(&v).unwrap())).unwrap();
        let d = rel_diff(&apply(&mc, &v), &want);
        assert!(d < 1e-13, "N_c {nc} → {nv}: M_cc v vs P†MPv: {d:e}");
    }
}

/// The dense matrix of a [`DenseOperator`] on its full lattice (columns: M applied to
/// unit vectors), row-major, dimension V · N.
fn dense_matrix(m: &DenseOperator) -> (Vec<C>, usize) {
    let dim = m.layout().len();
    let mut a = vec![ZERO; dim * dim];
    let mut e = ColourSpinorField::zeros(m.layout());
    for col in 0..dim {
        e.data_mut()[col] = C::new(1.0, 0.0);
        let y = apply(m, &e);
        e.data_mut()[col] = ZERO;
        for (row, z) in y.data().iter().enumerate() {
            a[row * dim + col] = *z;
        }
    }
    (a, dim)
}

/// x = A⁻¹ b by Gaussian elimination with partial pivoting and back substitution (the
/// textbook dense solve, independent of the Gauss–Jordan inversion under test).
fn dense_solve(mut a: Vec<C>, mut b: Vec<C>, n: usize) -> Vec<C> {
    for k in 0..n {
        let piv = (k..n)
            .max_by(|&i, &j| a[i * n + k].norm().total_cmp(&a[j * n + k].norm()))
            .unwrap();
        for c in 0..n {
            a.swap(k * n + c, piv * n + c);
        }
        b.swap(k, piv);
        for i in k + 1..n {
            let f = a[i * n + k] / a[k * n + k];
            for c in k..n {
                let akc = a[k * n + c];
                a[i * n + c] -= f * akc;
            }
            let bk = b[k];
            b[i] -= f * bk;
        }
    }
    let mut x = vec![ZERO; n];
    for k in (0..n).rev() {
        let s: C = (k + 1..n).map(|c| a[k * n + c] * x[c]).sum();
        x[k] = (b[k] - s) / a[k * n + k];
    }
    x
}

/// X⁻¹Y against dense linear algebra on the coarse operator of a Wilson-clover field
/// (N_v = 4, 2⁴ coarse sites, dimension 128): X(x) X(x)⁻¹ = 1 and X(x) Y'⁺_μ(x) = Y⁺_μ(x)
/// by matrix products; the solution x of M x = b from a dense solve satisfies the
/// even-odd Schur system M̂_pp x_p = b'_p + D'_pq b'_q and x_q = b'_q + D'_qp x_p
/// (b' = X⁻¹ b), on both parities.
#[test]
fn x_inv_y_against_a_dense_solve() {
    let (_, _, op) = wilson_clover(0.3, 12);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 4, 600), [2, 2, 2, 2]).unwrap();
    let mc = coarsen(&op, &p).unwrap();
    let pre = Preconditioned::new(&mc).unwrap();
    let n = mc.n();
    for xc in 0..mc.lattice().volume() {
        let (x, xi) = (mc.x.link(xc, 0), pre.x_inv.link(xc, 0));
        for mu in 0..4 {
            let (y, y1) = (mc.yf.link(xc, mu), pre.op.yf.link(xc, mu));
            for r in 0..n {
                for c in 0..n {
                    let xx: C = (0..n).map(|k| x[r * n + k] * xi[k * n + c]).sum();
                    let want = if r == c { 1.0 } else { 0.0 };
                    assert!(
                        (xx - C::new(want, 0.0)).norm() < 1e-12,
                        "X X⁻¹ at {xc} ({r},{c})"
                    );
                    let xy: C = (0..n).map(|k| x[r * n + k] * y1[k * n + c]).sum();
                    assert!((xy - y[r * n + c]).norm() < 1e-12 * (1.0 + y[r * n + c].norm()));
                }
            }
        }
    }
    let (a, dim) = dense_matrix(&mc);
    let b = ColourSpinorField::gaussian(mc.layout(), 13);
    let x =
        ColourSpinorField::from_data(mc.layout(), dense_solve(a, b.data().to_vec(), dim)).unwrap();
    assert!(rel_diff(&apply(&mc, &x), &b) < 1e-12, "the dense solve");
    let mut b1 = ColourSpinorField::zeros(mc.layout());
    pre.apply_x_inv(&mut b1, &b).unwrap();
    for par in [Parity::Even, Parity::Odd] {
        let q = par.opposite();
        // rhs = b'_p + D'_pq b'_q: apply_hop gives −D'_p·, so subtract it.
        let (mut bq, mut hop) = (b1.clone(), ColourSpinorField::zeros(mc.layout()));
        preconditioned::mask_to_parity(&mut bq, q);
        pre.op.apply_hop(&mut hop, &bq, par).unwrap();
        let mut rhs = b1.clone();
        preconditioned::mask_to_parity(&mut rhs, par);
        for (r, h) in rhs.data_mut().iter_mut().zip(hop.data()) {
            *r -= h;
        }
        let mut lhs = ColourSpinorField::zeros(mc.layout());
        pre.apply_schur(&mut lhs, &x, par).unwrap();
        let d = rel_diff(&lhs, &rhs);
        assert!(d < 1e-11, "{par:?}: M̂ x_p vs b'_p + D'_pq b'_q: {d:e}");
        // x_q = b'_q + D'_qp x_p.
        let mut xp = x.clone();
        preconditioned::mask_to_parity(&mut xp, par);
        let mut hop = ColourSpinorField::zeros(mc.layout());
        pre.op.apply_hop(&mut hop, &xp, q).unwrap();
        let mut xq = bq.clone();
        for (r, h) in xq.data_mut().iter_mut().zip(hop.data()) {
            *r -= h;
        }
        let mut want = x.clone();
        preconditioned::mask_to_parity(&mut want, q);
        assert!(rel_diff(&xq, &want) < 1e-11, "{par:?}: reconstruction");
    }
}

/// Bad input is an error naming the problem: repeated vectors (linearly dependent on a
/// block), blocks that do not divide the lattice, a prolongator of another lattice,
/// vectors of different layouts.
#[test]
fn bad_input_is_refused_with_a_reason() {
    let (_, _, op) = wilson_clover(0.1, 3);
    let mut vs = gaussian_vectors(op.layout(), 3, 700);
    vs.push(vs[1].clone());
    let e = Prolongator::new(&vs, [2, 2, 2, 2]).unwrap_err();
    assert!(
        matches!(e, CoarsenError::DependentVectors { vector: 3, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("vector 3"), "{e}");
    let e = Prolongator::new(&vs[..2], [3, 2, 2, 2]).unwrap_err();
    assert!(matches!(e, CoarsenError::Geometry(_)), "{e}");
    let other = Lattice::new([4, 4, 4, 8]).unwrap();
    let layout = SpinorLayout::new(other, 1, SiteSubset::Full, 4, 3).unwrap();
    let p = Prolongator::new(&gaussian_vectors(layout, 2, 1), [2, 2, 2, 2]).unwrap();
    let e = coarsen(&op, &p).unwrap_err();
    assert!(e.to_string().contains("prolongator"), "{e}");
    let mixed = vec![vs[0].clone(), ColourSpinorField::gaussian(layout, 2)];
    assert!(Prolongator::new(&mixed, [2, 2, 2, 2]).is_err());
}

/// The fixed-point coarse operator is the same bits for every grouping and order of its
/// sums (the launch configurations of the GPU construction), while f32 sums of the same
/// units grouped the same ways differ (so the check can fail).
#[test]
fn fixed16_coarse_is_bitwise_identical_for_any_grouping() {
    let (_, _, op) = wilson_clover(0.1, 14);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 8, 800), [2, 2, 2, 2]).unwrap();
    let groupings = [(1, false), (3, true), (16, false), (5, false)]
        .map(|(group, reversed)| Grouping { group, reversed });
    let first = coarsen_fixed16(&op, &p, groupings[0]).unwrap();
    for g in &groupings[1..] {
        assert!(
            coarsen_fixed16(&op, &p, *g).unwrap() == first,
            "{g:?} differs"
        );
    }
    // f32 sums: the site matrix X_c of coarse site 0 with the units grouped two ways.
    let f32_sum = |g: Grouping| -> Vec<(f32, f32)> {
        let mut order: Vec<usize> = p.block_sites(0).to_vec();
        if g.reversed {
            order.reverse();
        }
        let n = 4 * p.n_vectors() * p.n_vectors();
        let mut total = vec![(0f32, 0f32); n];
        for group in order.chunks(g.group) {
            let mut part = vec![(0f32, 0f32); n];
            for &cb in group {
                coarsen::cpu::site_contributions(&op, &p, cb, |t, c| {
                    if t == coarsen::cpu::Target::Site {
                        for (a, z) in part.iter_mut().zip(c) {
                            *a = (a.0 + z.re as f32, a.1 + z.im as f32);
                        }
                    }
                });
            }
            for (a, b) in total.iter_mut().zip(&part) {
                *a = (a.0 + b.0, a.1 + b.1);
            }
        }
        total
    };
    assert_ne!(
        f32_sum(groupings[0]),
        f32_sum(groupings[1]),
        "f32 sums happened to agree"
    );
}

/// The fixed-point coarse operator is the f64 one within the 16-bit bound of the module
/// docs (|Ŷ − Y| ≤ S 2⁻¹⁴ per entry, S the power-of-two scale of its kind, max |Y| in
/// [S/2, S)), and not exactly (the 16-bit rounding is real); it still gives P†MP to
/// that accuracy.
#[test]
fn fixed16_coarse_is_within_the_16_bit_bound() {
    let (gauge, clover, op) = wilson_clover(0.1, 15);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 8, 900), [2, 2, 2, 2]).unwrap();
    let exact = coarsen(&op, &p).unwrap();
    let fixed = coarsen_fixed16(
        &op,
        &p,
        Grouping {
            group: 4,
            reversed: false,
        },
    )
    .unwrap();
    let approx = fixed.to_operator(&p).unwrap();
    for (name, a, b, s) in [
        ("X", &exact.x, &approx.x, fixed.x_scale),
        ("Y⁺", &exact.yf, &approx.yf, fixed.y_scale),
        ("Y⁻", &exact.yb, &approx.yb, fixed.y_scale),
    ] {
        let err = a
            .data()
            .iter()
            .zip(b.data())
            .map(|(x, y)| (x - y).re.abs().max((x - y).im.abs()))
            .fold(0.0, f64::max);
        assert!(
            err <= s * 2f64.powi(-14),
            "{name}: error {err:e} above S 2⁻¹⁴ = {:e}",
            s * 2f64.powi(-14)
        );
        assert!(err > 0.0, "{name}: no rounding at all");
        assert_eq!(
            s.log2().fract(),
            0.0,
            "{name}: S = {s} is not a power of two"
        );
        if name != "Y⁻" {
            let max = a
                .data()
                .iter()
                .map(|z| z.re.abs().max(z.im.abs()))
                .fold(0.0, f64::max);
            assert!(
                max < s && max >= s / 2.0,
                "{name}: max {max} not in [S/2, S) for S = {s}"
            );
        }
    }
    let v = ColourSpinorField::gaussian(p.coarse_layout(), 3);
    let want = p
        .restrict(&fine_apply(&gauge, &clover, &p.prolong(&v).unwrap()))
        .unwrap();
    let d = rel_diff(&apply(&approx, &v), &want);
    assert!(d < 1e-3, "fixed-point M_c v vs P†MPv: {d:e}");
}

/// The coarse links through the V†UV tiles (`mma_tile!` batched products, their CPU
/// path) equal the reference construction's: to f64 rounding in DMMA, and within the
/// 16-bit fixed-point accuracy 3×BF16 reaches (2⁻¹⁴ of the largest link entry) — which
/// the rounding actually shows (not exact).
#[test]
fn coarse_links_through_the_mma_tiles() {
    use super::coarsen::tiles::{coarse_links_by_tiles, TileMode};
    let (_, _, op) = wilson_clover(0.1, 16);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 24, 1000), [2, 2, 2, 2]).unwrap();
    let reference = coarsen(&op, &p).unwrap();
    let scale = reference
        .yf
        .data()
        .iter()
        .chain(reference.yb.data())
        .map(|z| z.norm())
        .fold(0.0, f64::max);
    for (mode, tol) in [(TileMode::F64, 1e-13), (TileMode::Bf16x3, 2f64.powi(-14))] {
        let (yf, yb) = coarse_links_by_tiles(&op, &p, mode).unwrap();
        let err = [(&yf, &reference.yf), (&yb, &reference.yb)]
            .iter()
            .flat_map(|(a, b)| a.data().iter().zip(b.data()).map(|(x, y)| (x - y).norm()))
            .fold(0.0, f64::max)
            / scale;
        assert!(err <= tol, "{mode:?}: {err:e} > {tol:e}");
        if mode == TileMode::Bf16x3 {
            assert!(err > 1e-12, "3×BF16 rounding left no trace: {err:e}");
        }
    }
    let small = Prolongator::new(&gaussian_vectors(op.layout(), 4, 1), [2, 2, 2, 2]).unwrap();
    assert!(coarse_links_by_tiles(&op, &small, TileMode::F64).is_err());
}

/// The unit table is the reference's contributions: per coarse site and target, its
/// units evaluated by `unit_product` are, in order and bit for bit, what
/// `site_contributions` emits for the block's sites (what the device's fixed-point
/// path relies on); N_v = 8 on 2⁴ blocks.
#[test]
fn unit_table_is_the_reference_contributions_bitwise() {
    use coarsen::cpu::{site_contributions, Target};
    use coarsen::units::{unit_product, unit_table};
    let (_, _, op) = wilson_clover(0.1, 5);
    let p = Prolongator::new(&gaussian_vectors(op.layout(), 8, 300), [2, 2, 2, 2]).unwrap();
    let table = unit_table(&op, &p);
    // 16 site terms, per μ 8 hops leaving and 8 inside for each of Y⁺, Y⁻.
    assert_eq!(table.count, [16 + 4 * 16, 8, 8, 8, 8, 8, 8, 8, 8]);
    let bits = |c: &[C]| -> Vec<(u64, u64)> {
        c.iter().map(|z| (z.re.to_bits(), z.im.to_bits())).collect()
    };
    for xc in 0..p.coarse_lattice().volume() {
        let mut emitted: Vec<Vec<Vec<C>>> = vec![Vec::new(); 9];
        for &cb in p.block_sites(xc) {
            site_contributions(&op, &p, cb, |t, c| emitted[t.index()].push(c.to_vec()));
        }
        for t in Target::ALL {
            let per = table.count[t.index()];
            let units = &table.units[t.index()][xc * per..(xc + 1) * per];
            assert_eq!(units.len(), emitted[t.index()].len(), "{t:?} at {xc}");
            for (u, want) in units.iter().zip(&emitted[t.index()]) {
                assert_eq!(
                    bits(&unit_product(&op, &p, u)),
                    bits(want),
                    "{t:?} at coarse site {xc}: {u:?}"
                );
            }
        }
    }
}
