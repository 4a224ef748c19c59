//! The Möbius operator against the textbook (random fields, a real configuration, every
//! knob), M5⁻¹ against dense inversion, the whole operator and its Schur complements
//! against dense matrices on 2⁴ × Ls 4, γ5 R5-hermiticity, gauge covariance, the free
//! field in momentum space, and the Shamir limit against the standard domain-wall
//! operator.

#![allow(clippy::needless_range_loop)] // index loops mirror the formulas' indices

use super::textbook::{Textbook, C};
use super::*;
use crate::operator::SchurForm;
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset};
use qdsl_core::gauge::GaugeTransform;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_core::math::Gamma;

fn c(re: f64, im: f64) -> C {
    C::new(re, im)
}

/// Every knob of the parameters: Shamir, Möbius, zMöbius (complex, s-dependent), a small
/// and a large mass.
pub(super) fn knobs(ls: usize) -> Vec<(&'static str, MobiusParams)> {
    let zb: Vec<C> = (0..ls)
        .map(|s| c(1.2 + 0.1 * s as f64, 0.05 * s as f64))
        .collect();
    let zc: Vec<C> = (0..ls).map(|s| c(0.3 - 0.02 * s as f64, -0.03)).collect();
    vec![
        ("shamir", MobiusParams::shamir(ls, 1.8, 0.01).unwrap()),
        (
            "mobius",
            MobiusParams::mobius(ls, 1.5, 0.5, 1.8, 0.01).unwrap(),
        ),
        (
            "mobius-heavy",
            MobiusParams::mobius(ls, 1.5, 0.5, 1.4, 0.4).unwrap(),
        ),
        ("zmobius", MobiusParams::zmobius(zb, zc, 1.6, 0.05).unwrap()),
    ]
}

pub(super) fn bc(boundary: TimeBoundary) -> BoundaryConditions {
    match boundary {
        TimeBoundary::Periodic => BoundaryConditions::periodic(),
        _ => BoundaryConditions::antiperiodic_time(),
    }
}

/// The library's full operator D ψ (dagger: D†) through the blocks' Schur layer.
fn library_apply(
    u: &GaugeField<f64>,
    params: &MobiusParams,
    boundary: TimeBoundary,
    psi: &ColourSpinorField<f64>,
    dagger: bool,
) -> ColourSpinorField<f64> {
    let op = EvenOddMobius::asymmetric(u.clone(), params.clone(), Parity::Even, boundary).unwrap();
    let (pe, po) = split_parities(psi).unwrap();
    let (mut oe, mut oo) = (pe.clone(), po.clone());
    op.apply_full((&mut oe, &mut oo), (&pe, &po), dagger)
        .unwrap();
    join_parities(&oe, &oo).unwrap()
}

pub(super) fn random_5d(u: &GaugeField<f64>, ls: usize, seed: u64) -> ColourSpinorField<f64> {
    let l = qdsl_core::lattice::Lattice5D::new(u.lattice().dims(), ls).unwrap();
    ColourSpinorField::gaussian(
        qdsl_core::field::SpinorLayout::domain_wall(l, SiteSubset::Full),
        seed,
    )
}

pub(super) fn max_diff(a: &[C], b: &[C]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max)
}

pub(super) fn max_abs(a: &[C]) -> f64 {
    a.iter().map(|x| x.norm()).fold(0.0, f64::max)
}

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(name)
}

fn check_against_textbook(u: &GaugeField<f64>, ls: usize) {
    for (name, params) in knobs(ls) {
        let tb = Textbook::of(&params);
        for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
            for dagger in [false, true] {
                let psi = random_5d(u, ls, 7);
                let lib = library_apply(u, &params, boundary, &psi, dagger);
                let want = tb.apply(u, &bc(boundary), psi.data(), dagger);
                let err = max_diff(lib.data(), &want) / max_abs(&want);
                assert!(err < 1e-14, "{name} {boundary:?} dagger {dagger}: {err:e}");
            }
        }
    }
}

/// D and D† from the blocks equal the textbook operator on a random gauge field, for
/// Shamir, Möbius and zMöbius, periodic and antiperiodic time.
#[test]
fn full_operator_equals_the_textbook_on_random_links() {
    let u = GaugeField::<f64>::random(Lattice::new([4, 2, 2, 4]).unwrap(), 3);
    check_against_textbook(&u, 5);
}

/// The same on MILC's lat.sample.l8 (8⁴), Ls = 4.
#[test]
fn full_operator_equals_the_textbook_on_a_real_configuration() {
    let u = read_gauge(data("lat.sample.l8"), &ReadOptions::default())
        .expect("lat.sample.l8")
        .field;
    check_against_textbook(&u, 4);
}

/// M5, M_φ and their adjoints equal the textbook's; M5⁻¹ (closed form) equals the
/// textbook's constant-coefficient closed form and is the inverse of M5 by dense
/// Gauss–Jordan inversion of the Ls × Ls matrix of each chirality (every knob).
#[test]
fn s_operators_equal_the_textbook_and_m5_inverse_is_the_dense_inverse() {
    let lat = Lattice::new([2, 2, 2, 2]).unwrap();
    for ls in [2, 5, 8] {
        for (name, params) in knobs(ls) {
            let tb = Textbook::of(&params);
            let u = GaugeField::<f64>::unit(lat);
            let psi = random_5d(&u, ls, 11);
            let sites = lat.volume();
            let mut out = psi.clone();
            for dagger in [false, true] {
                let m5 = ChiralSOperator::m5(&params);
                let m5 = if dagger { m5.adjoint() } else { m5 };
                m5.apply(&mut out, &psi, None).unwrap();
                let err = max_diff(out.data(), &tb.m5(psi.data(), sites, dagger));
                assert!(err < 1e-13, "{name} Ls {ls} M5 dagger {dagger}: {err:e}");
                let mphi = ChiralSOperator::m_phi(&params);
                let mphi = if dagger { mphi.adjoint() } else { mphi };
                mphi.apply(&mut out, &psi, None).unwrap();
                let err = max_diff(out.data(), &tb.m_phi(psi.data(), sites, dagger));
                assert!(err < 1e-13, "{name} Ls {ls} M_phi dagger {dagger}: {err:e}");
            }
            let inverse = ChiralSOperator::m5_inverse(&params);
            if !name.starts_with('z') {
                inverse.apply(&mut out, &psi, None).unwrap();
                let err = max_diff(out.data(), &tb.m5_inverse(psi.data(), sites));
                assert!(err < 1e-13, "{name} Ls {ls} M5inv closed forms: {err:e}");
            }
            let m5 = ChiralSOperator::m5(&params);
            for chirality in [Chirality::Plus, Chirality::Minus] {
                let a: Vec<Vec<C>> = (0..ls)
                    .map(|s| (0..ls).map(|t| m5.entry(chirality, s, t)).collect())
                    .collect();
                let dense = gauss_jordan_inverse(a);
                for s in 0..ls {
                    for t in 0..ls {
                        let got = inverse.entry(chirality, s, t);
                        assert!(
                            (got - dense[s][t]).norm() < 1e-12,
                            "{name} Ls {ls} {chirality:?} ({s}, {t}): {got} vs {}",
                            dense[s][t]
                        );
                    }
                }
            }
        }
    }
}

/// The inverse of a dense complex matrix by Gauss–Jordan elimination with partial
/// pivoting.
pub(super) fn gauss_jordan_inverse(mut a: Vec<Vec<C>>) -> Vec<Vec<C>> {
    let n = a.len();
    let mut inv: Vec<Vec<C>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| c(if i == j { 1.0 } else { 0.0 }, 0.0))
                .collect()
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&i, &j| a[i][col].norm().total_cmp(&a[j][col].norm()))
            .unwrap();
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let p = a[col][col];
        assert!(p.norm() > 1e-300, "singular matrix");
        for j in 0..n {
            a[col][j] /= p;
            inv[col][j] /= p;
        }
        for i in 0..n {
            if i != col {
                let f = a[i][col];
                if f.norm() != 0.0 {
                    for j in 0..n {
                        let (acj, icj) = (a[col][j], inv[col][j]);
                        a[i][j] -= f * acj;
                        inv[i][j] -= f * icj;
                    }
                }
            }
        }
    }
    inv
}

/// Dense D on a full lattice, assembled entry by entry from the formula (module docs of
/// [`super`]): D[(s,x,σ,a),(s',y,τ,b)] = δ_xy δ_στ δ_ab M5_χ(τ)(s, s')
///  − ½ Σ_μ± (1 ∓ γ_μ)_στ [U]_ab sign · M_φ,χ(τ)(s, s'), the s-matrices written out here.
fn dense_operator(u: &GaugeField<f64>, tb: &Textbook, bcs: &BoundaryConditions) -> Vec<Vec<C>> {
    let lat = *u.lattice();
    let (v, ls) = (lat.volume(), tb.ls);
    let dim = ls * v * 12;
    let idx = |s: usize, cb: usize, sp: usize, a: usize| ((s * v + cb) * 4 + sp) * 3 + a;
    // S_χ(s, s') with χ = +1 (spins 0, 1) or −1 (spins 2, 3).
    let s_hop = |plus: bool, s: usize, t: usize| -> f64 {
        let (from, to) = if plus { (t, s) } else { (s, t) };
        if to == from + 1 {
            1.0
        } else if from == ls - 1 && to == 0 {
            -tb.mass
        } else {
            0.0
        }
    };
    let four = 4.0 - tb.m5;
    let mut d = vec![vec![c(0.0, 0.0); dim]; dim];
    let gammas: Vec<_> = Gamma::DIRECTIONS
        .iter()
        .map(|g| g.matrix::<f64>().0)
        .collect();
    for s in 0..ls {
        for t in 0..ls {
            for cb in 0..v {
                for sp in 0..4 {
                    let plus = sp < 2;
                    let delta = if s == t { 1.0 } else { 0.0 };
                    let sh = s_hop(plus, s, t);
                    let m5 = (tb.b[s] * four + 1.0) * delta + (tb.c[s] * four - 1.0) * sh;
                    for a in 0..3 {
                        d[idx(s, cb, sp, a)][idx(t, cb, sp, a)] += m5;
                    }
                }
                let x = lat.coords_of_cb(cb);
                for mu in 0..4 {
                    for (dir, proj) in [(1isize, -1.0), (-1isize, 1.0)] {
                        let (y, _) = lat.shift(x, mu, dir);
                        let sign = bcs.hop_sign(&lat, x, mu, dir);
                        let link = if dir == 1 {
                            *u.link_at(x, mu)
                        } else {
                            u.link_at(y, mu).adjoint()
                        };
                        let ycb = lat.cb_index(y);
                        for sp in 0..4 {
                            for tp in 0..4 {
                                let id = if sp == tp { 1.0 } else { 0.0 };
                                let spin = c(id, 0.0) + gammas[mu][sp][tp] * proj;
                                if spin.norm() == 0.0 {
                                    continue;
                                }
                                let delta = if s == t { 1.0 } else { 0.0 };
                                let mphi = tb.b[s] * delta + tb.c[s] * s_hop(tp < 2, s, t);
                                for a in 0..3 {
                                    for b in 0..3 {
                                        d[idx(s, cb, sp, a)][idx(t, ycb, tp, b)] +=
                                            spin * link.0[a][b] * mphi * (-0.5 * sign);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    d
}

fn mat_vec(m: &[Vec<C>], x: &[C]) -> Vec<C> {
    m.iter()
        .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
        .collect()
}

/// The rows/columns of the dense matrix on parity r sites (cb order: each slice's even
/// sites first): the indices of the parity-r part in slice-major order.
fn parity_indices(v: usize, ls: usize, r: Parity) -> Vec<usize> {
    let offset = if r == Parity::Even { 0 } else { v / 2 };
    (0..ls)
        .flat_map(|s| (0..v / 2 * 12).map(move |k| (s * v + offset) * 12 + k))
        .collect()
}

fn sub(m: &[Vec<C>], rows: &[usize], cols: &[usize]) -> Vec<Vec<C>> {
    rows.iter()
        .map(|&i| cols.iter().map(|&j| m[i][j]).collect())
        .collect()
}

fn mat_mul(a: &[Vec<C>], b: &[Vec<C>]) -> Vec<Vec<C>> {
    let (n, k, m) = (a.len(), b.len(), b[0].len());
    let mut out = vec![vec![c(0.0, 0.0); m]; n];
    for i in 0..n {
        for l in 0..k {
            let ail = a[i][l];
            if ail.norm() == 0.0 {
                continue;
            }
            for j in 0..m {
                out[i][j] += ail * b[l][j];
            }
        }
    }
    out
}

/// On 2⁴ × Ls 4: the library's D equals the dense matrix assembled from the formula, and
/// the library's asymmetric and symmetric M̂ (and M̂†) equal D_pp − D_pq D_qq⁻¹ D_qp and
/// D_pp⁻¹ (D_pp − D_pq D_qq⁻¹ D_qp) computed densely, on both parities.
#[test]
fn whole_operator_and_schur_complements_equal_dense_matrices() {
    let lat = Lattice::new([2, 2, 2, 2]).unwrap();
    let u = GaugeField::<f64>::random(lat, 5);
    let ls = 4;
    for (name, params) in knobs(ls).into_iter().filter(|(n, _)| *n != "mobius-heavy") {
        let tb = Textbook::of(&params);
        let boundary = TimeBoundary::Antiperiodic;
        let d = dense_operator(&u, &tb, &bc(boundary));
        let psi = random_5d(&u, ls, 9);
        let lib = library_apply(&u, &params, boundary, &psi, false);
        let err = max_diff(lib.data(), &mat_vec(&d, psi.data()));
        assert!(err < 1e-13, "{name}: D vs dense {err:e}");
        for p in [Parity::Even, Parity::Odd] {
            let (ip, iq) = (
                parity_indices(lat.volume(), ls, p),
                parity_indices(lat.volume(), ls, p.opposite()),
            );
            let dqq_inv = gauss_jordan_inverse(sub(&d, &iq, &iq));
            let corr = mat_mul(&sub(&d, &ip, &iq), &mat_mul(&dqq_inv, &sub(&d, &iq, &ip)));
            let dpp = sub(&d, &ip, &ip);
            let hat: Vec<Vec<C>> = dpp
                .iter()
                .zip(&corr)
                .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x - y).collect())
                .collect();
            let sym = mat_mul(&gauss_jordan_inverse(dpp), &hat);
            let x = ColourSpinorField::gaussian(
                EvenOddMobius::<f64>::asymmetric(u.clone(), params.clone(), p, boundary)
                    .unwrap()
                    .blocks()
                    .layout(SiteSubset::Single(p)),
                13,
            );
            for (form, dense) in [(SchurForm::Complement, &hat), (SchurForm::Symmetric, &sym)] {
                let op = if form == SchurForm::Complement {
                    EvenOddMobius::asymmetric(u.clone(), params.clone(), p, boundary)
                } else {
                    EvenOddMobius::symmetric(u.clone(), params.clone(), p, boundary)
                }
                .unwrap();
                let mut out = x.clone();
                op.apply_in((), &mut out, &x, false).unwrap();
                let want = mat_vec(dense, x.data());
                let err = max_diff(out.data(), &want) / max_abs(&want);
                assert!(err < 1e-12, "{name} {p:?} {form:?}: {err:e}");
                let dagger: Vec<Vec<C>> = (0..dense.len())
                    .map(|i| (0..dense.len()).map(|j| dense[j][i].conj()).collect())
                    .collect();
                op.apply_in((), &mut out, &x, true).unwrap();
                let want = mat_vec(&dagger, x.data());
                let err = max_diff(out.data(), &want) / max_abs(&want);
                assert!(err < 1e-12, "{name} {p:?} {form:?} dagger: {err:e}");
            }
        }
    }
}

/// Source preparation and reconstruction: for η = D ψ (textbook D, random ψ), the
/// prepared source b̂ satisfies M̂ ψ_p = b̂ and the reconstruction returns ψ_q, in the
/// asymmetric and the symmetric form.
#[test]
fn prepared_source_and_reconstruction_invert_the_textbook_operator() {
    let u = GaugeField::<f64>::random(Lattice::new([4, 2, 2, 4]).unwrap(), 17);
    let boundary = TimeBoundary::Antiperiodic;
    for (name, params) in knobs(6) {
        let tb = Textbook::of(&params);
        let psi = random_5d(&u, 6, 19);
        let eta = tb.apply(&u, &bc(boundary), psi.data(), false);
        let eta = ColourSpinorField::from_data(*psi.layout(), eta).unwrap();
        let (pe, po) = split_parities(&psi).unwrap();
        let (ee, eo) = split_parities(&eta).unwrap();
        for symmetric in [false, true] {
            let op = if symmetric {
                EvenOddMobius::symmetric(u.clone(), params.clone(), Parity::Even, boundary)
            } else {
                EvenOddMobius::asymmetric(u.clone(), params.clone(), Parity::Even, boundary)
            }
            .unwrap();
            let b_hat = op.prepare_source(&ee, &eo).unwrap();
            let mut m_psi = pe.clone();
            op.apply_in((), &mut m_psi, &pe, false).unwrap();
            let err = max_diff(m_psi.data(), b_hat.data()) / max_abs(b_hat.data());
            assert!(
                err < 1e-13,
                "{name} symmetric {symmetric}: M̂ψ_p vs b̂ {err:e}"
            );
            let psi_q = op.reconstruct(&pe, &eo).unwrap();
            let err = max_diff(psi_q.data(), po.data()) / max_abs(po.data());
            assert!(err < 1e-13, "{name} symmetric {symmetric}: ψ_q {err:e}");
        }
    }
}

/// γ5 R5 conjugation (R5: s → Ls − 1 − s): since R5 S R5 = S† and γ5 D_W γ5 = D_W†,
///
/// γ5 R5 D γ5 R5 = D_W† (b + c S†) + 1 − S† = [(b + c S) D_W + 1 − S]†,
///
/// for real, reflection-symmetric b, c: the Möbius operator in QUDA's and Grid's order
/// (M_φ first, then the hop) is γ5 R5-conjugate to the adjoint of the operator with the
/// opposite order. In the Shamir limit (c = 0) the two orders agree and D is γ5 R5
/// Hermitian, D† = γ5 R5 D γ5 R5; for c ≠ 0 it is not (D_W and P± do not commute), and
/// the test checks that too. Library D and D† against the textbook pieces.
#[test]
fn gamma5_r5_conjugation() {
    let u = GaugeField::<f64>::random(Lattice::new([4, 2, 2, 4]).unwrap(), 23);
    let ls = 6;
    let boundary = TimeBoundary::Antiperiodic;
    let g5r5 = |f: &ColourSpinorField<f64>| {
        let n = f.layout().sites_per_slice() * 12;
        let data = (0..f.data().len())
            .map(|k| {
                let (s, r) = (k / n, k % n);
                let z = f.data()[(ls - 1 - s) * n + r];
                if r % 12 < 6 {
                    z
                } else {
                    -z
                }
            })
            .collect();
        ColourSpinorField::from_data(*f.layout(), data).unwrap()
    };
    let mut checked = 0;
    for (name, params) in knobs(ls) {
        if !params.is_reflection_symmetric() {
            continue;
        }
        checked += 1;
        let tb = Textbook::of(&params);
        let psi = random_5d(&u, ls, 29);
        let conj = g5r5(&library_apply(&u, &params, boundary, &g5r5(&psi), false));
        // [(b + c S) D_W + 1 − S]† ψ = D_W† M_φ† ψ + ψ − S† ψ.
        let sites = u.lattice().volume();
        let w = tb.wilson(&u, &bc(boundary), &tb.m_phi(psi.data(), sites, true), true);
        let sd = tb.s_hop(psi.data(), sites, true);
        let other: Vec<C> = (0..w.len()).map(|k| w[k] + psi.data()[k] - sd[k]).collect();
        let err = max_diff(conj.data(), &other) / max_abs(&other);
        assert!(err < 1e-14, "{name}: {err:e}");
        let dag = library_apply(&u, &params, boundary, &psi, true);
        let herm = max_diff(dag.data(), conj.data()) / max_abs(dag.data());
        if params.c5().iter().all(|z| z.norm() == 0.0) {
            assert!(herm < 1e-14, "{name}: D† vs γ5R5 D γ5R5 {herm:e}");
        } else {
            assert!(
                herm > 1e-3,
                "{name}: D† = γ5R5 D γ5R5 unexpectedly ({herm:e})"
            );
        }
    }
    assert_eq!(
        checked, 3,
        "shamir, mobius and mobius-heavy are reflection symmetric"
    );
    let (_, z) = knobs(ls).pop().unwrap();
    assert!(!z.is_reflection_symmetric());
}

/// Gauge covariance: D[U^g] (g ψ) = g D[U] ψ for a random gauge transformation g.
#[test]
fn gauge_covariance() {
    let lat = Lattice::new([4, 2, 2, 4]).unwrap();
    let u = GaugeField::<f64>::random(lat, 31);
    let g = GaugeTransform::<f64>::random(lat, 37);
    let mut ug = u.clone();
    g.apply_to_links(&mut ug).unwrap();
    let ls = 4;
    for (name, params) in knobs(ls) {
        let psi = random_5d(&u, ls, 41);
        let mut gpsi = psi.clone();
        g.apply_to_fermion(&mut gpsi).unwrap();
        let lhs = library_apply(&ug, &params, TimeBoundary::Antiperiodic, &gpsi, false);
        let mut rhs = library_apply(&u, &params, TimeBoundary::Antiperiodic, &psi, false);
        g.apply_to_fermion(&mut rhs).unwrap();
        let err = max_diff(lhs.data(), rhs.data()) / max_abs(rhs.data());
        assert!(err < 1e-13, "{name}: {err:e}");
    }
}

/// The free field: on unit links a plane wave ψ(x, s) = e^{ip·x} u(s) (u a spinor per
/// slice, colour 0; p_t = (2n + 1)π/L_t for the antiperiodic time) is mapped to
/// e^{ip·x} (D(p) u)(s) with the Ls × Ls matrix of spin matrices, by hand:
/// D(p)_ss' = D_W(p) [b_s δ_ss' + c_s S_ss'] + δ_ss' − S_ss',
/// D_W(p) = Σ_μ (1 − cos p_μ) − M5 + i Σ_μ γ_μ sin p_μ, S_ss' = P₋ [s' = s + 1] +
/// P₊ [s' = s − 1], −m_f on the wrap-around.
#[test]
fn free_field_is_block_diagonal_in_momentum_space() {
    let lat = Lattice::new([4, 4, 2, 4]).unwrap();
    let u = GaugeField::<f64>::unit(lat);
    let ls = 5;
    let gam: Vec<_> = Gamma::DIRECTIONS
        .iter()
        .map(|g| g.matrix::<f64>().0)
        .collect();
    let g5 = Gamma::Five.matrix::<f64>().0;
    let proj = |sign: f64| -> [[C; 4]; 4] {
        let mut m = [[c(0.0, 0.0); 4]; 4];
        for i in 0..4 {
            for j in 0..4 {
                m[i][j] = (c(if i == j { 1.0 } else { 0.0 }, 0.0) + g5[i][j] * sign) * 0.5;
            }
        }
        m
    };
    let (pp, pm) = (proj(1.0), proj(-1.0));
    for (name, params) in knobs(ls) {
        for n in [[0usize, 0, 0, 0], [1, 2, 1, 3], [3, 1, 0, 2]] {
            let p: Vec<f64> = (0..4)
                .map(|mu| {
                    let l = lat.extent(mu) as f64;
                    let twist = if mu == 3 { 1.0 } else { 0.0 };
                    std::f64::consts::PI * (2.0 * n[mu] as f64 + twist) / l
                })
                .collect();
            // D_W(p) as a 4 × 4 matrix.
            let mut dw = [[c(0.0, 0.0); 4]; 4];
            let scalar: f64 = p.iter().map(|q| 1.0 - q.cos()).sum::<f64>() - params.m5();
            for i in 0..4 {
                dw[i][i] += scalar;
                for mu in 0..4 {
                    for j in 0..4 {
                        dw[i][j] += c(0.0, p[mu].sin()) * gam[mu][i][j];
                    }
                }
            }
            let s_entry = |s: usize, t: usize| -> [[C; 4]; 4] {
                let m = params.mass();
                let minus = if t == s + 1 {
                    1.0
                } else if s == ls - 1 && t == 0 {
                    -m
                } else {
                    0.0
                };
                let plus = if s == t + 1 {
                    1.0
                } else if s == 0 && t == ls - 1 {
                    -m
                } else {
                    0.0
                };
                let mut out = [[c(0.0, 0.0); 4]; 4];
                for i in 0..4 {
                    for j in 0..4 {
                        out[i][j] = pm[i][j] * minus + pp[i][j] * plus;
                    }
                }
                out
            };
            // A random spinor per slice.
            let spin: Vec<[C; 4]> = (0..ls)
                .map(|s| {
                    std::array::from_fn(|i| {
                        c(
                            (s * 7 + i * 3) as f64 * 0.1 - 0.9,
                            (i as f64 - s as f64) * 0.2,
                        )
                    })
                })
                .collect();
            let mut want = vec![[c(0.0, 0.0); 4]; ls];
            for s in 0..ls {
                for t in 0..ls {
                    let sm = s_entry(s, t);
                    let delta = if s == t { 1.0 } else { 0.0 };
                    for i in 0..4 {
                        for j in 0..4 {
                            // [b δ + c S](k, j), then D_W(p)(i, k).
                            let mut e = c(0.0, 0.0);
                            for k in 0..4 {
                                let inner = params.b5()[s] * if k == j { delta } else { 0.0 }
                                    + params.c5()[s] * sm[k][j];
                                e += dw[i][k] * inner;
                            }
                            e += c(if i == j { delta } else { 0.0 }, 0.0) - sm[i][j];
                            want[s][i] += e * spin[t][j];
                        }
                    }
                }
            }
            let l5 = qdsl_core::lattice::Lattice5D::new(lat.dims(), ls).unwrap();
            let layout = qdsl_core::field::SpinorLayout::domain_wall(l5, SiteSubset::Full);
            let phase = |x: [usize; 4]| {
                let arg: f64 = (0..4).map(|mu| p[mu] * x[mu] as f64).sum();
                c(arg.cos(), arg.sin())
            };
            let psi = ColourSpinorField::from_fn(layout, |s, x, sp, a| {
                if a == 0 {
                    phase(x) * spin[s][sp]
                } else {
                    c(0.0, 0.0)
                }
            });
            let out = library_apply(&u, &params, TimeBoundary::Antiperiodic, &psi, false);
            let expected = ColourSpinorField::from_fn(layout, |s, x, sp, a| {
                if a == 0 {
                    phase(x) * want[s][sp]
                } else {
                    c(0.0, 0.0)
                }
            });
            let err = max_diff(out.data(), expected.data());
            assert!(err < 1e-13, "{name} n = {n:?}: {err:e}");
        }
    }
}

/// The Shamir limit: Möbius with b5 = 1, c5 = 0 is the standard domain-wall operator
/// D_DW ψ(s) = (5 − M5) ψ(s) − ½ H ψ(s) − P₋ ψ(s + 1) − P₊ ψ(s − 1) (−m_f across the wall),
/// written here directly (QUDA's DiracDomainWall, up to its normalisation), and so is
/// the even-odd M̂ = M5 − ¼ H M5⁻¹ H with M5 = (5 − M5) − S.
#[test]
fn shamir_limit_is_standard_domain_wall() {
    let u = GaugeField::<f64>::random(Lattice::new([4, 2, 2, 4]).unwrap(), 43);
    let ls = 6;
    let (m5, mass) = (1.8, 0.02);
    let bcs = BoundaryConditions::antiperiodic_time();
    let psi = random_5d(&u, ls, 47);
    let n = u.lattice().volume() * 12;
    let mut standard = Vec::with_capacity(psi.data().len());
    for s in 0..ls {
        let h =
            crate::operator::tests::textbook_wilson_hop(&u, &psi.data()[s * n..(s + 1) * n], &bcs);
        for k in 0..n {
            let (up, up_f) = if s + 1 < ls { (s + 1, 1.0) } else { (0, -mass) };
            let (dn, dn_f) = if s > 0 { (s - 1, 1.0) } else { (ls - 1, -mass) };
            // Spins 2, 3 (k % 12 ≥ 6) are P₋, spins 0, 1 are P₊.
            let hop5 = if k % 12 >= 6 {
                psi.data()[up * n + k] * up_f
            } else {
                psi.data()[dn * n + k] * dn_f
            };
            standard.push(psi.data()[s * n + k] * (5.0 - m5) - h[k] * 0.5 - hop5);
        }
    }
    for params in [
        MobiusParams::shamir(ls, m5, mass).unwrap(),
        MobiusParams::mobius(ls, 1.0, 0.0, m5, mass).unwrap(),
    ] {
        let lib = library_apply(&u, &params, TimeBoundary::Antiperiodic, &psi, false);
        let err = max_diff(lib.data(), &standard) / max_abs(&standard);
        assert!(err < 1e-14, "{err:e}");
    }
}

/// Bad parameters are errors naming what is wrong, never panics.
#[test]
fn bad_parameters_are_errors() {
    assert_eq!(MobiusParams::shamir(1, 1.8, 0.1), Err(MobiusError::Ls(1)));
    assert_eq!(
        MobiusParams::zmobius(vec![c(1.0, 0.0); 4], vec![c(0.0, 0.0); 3], 1.8, 0.1),
        Err(MobiusError::CoefficientCount {
            name: "c5",
            expected: 4,
            found: 3
        })
    );
    // b (4 − M5) + 1 = 0 at b = 1, M5 = 5.
    assert_eq!(
        MobiusParams::shamir(4, 5.0, 0.1),
        Err(MobiusError::SingularDiagonal { s: 0 })
    );
    assert_eq!(
        MobiusParams::mobius(4, f64::NAN, 0.5, 1.8, 0.1),
        Err(MobiusError::NotFinite("b5"))
    );
    let params = MobiusParams::shamir(4, 1.8, 0.1).unwrap();
    let wrong = ColourSpinorField::<f64>::zeros(qdsl_core::field::SpinorLayout::wilson(
        Lattice::new([2, 2, 2, 2]).unwrap(),
        SiteSubset::Full,
    ));
    let mut out = wrong.clone();
    let err = ChiralSOperator::m5(&params)
        .apply(&mut out, &wrong, None)
        .unwrap_err();
    assert!(err.to_string().contains("Ls = 1"), "{err}");
}
