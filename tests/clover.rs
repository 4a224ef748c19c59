//! The Wilson-clover term and the even-odd clover operator, against independent facts:
//! a textbook clover built here from dense σ_μν = (i/2)(γ_μγ_ν − γ_νγ_μ) and explicit
//! leaf products over coordinates (summed over all ordered μ ≠ ν with c_sw/4), the exact
//! clover of a constant abelian field, gauge covariance, γ5-hermiticity, and even-odd
//! solves (plain and twisted clover) checked with the full operator M = A + iμγ5 − ½H
//! built from the textbook pieces.

mod common;
mod reference_operators;

use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{
    unpack_clover_block, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout,
};
use qdsl_core::gauge::{
    clover_field, clover_field_with, clover_leaves, field_strength, invert_clover,
    FieldStrengthTrace, GaugeTransform,
};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{BoundaryConditions, Coords, Lattice, Parity};
use qdsl_core::math::{ColourMatrix, Gamma};
use qdsl_runtime::operator::EvenOddClover;
use qdsl_runtime::solver::{cgnr, LinearOperator, SolverOptions};
use reference_operators::*;

type F64 = ColourSpinorField<f64>;
type Dense12 = [[C; 12]; 12];

const MASS: f64 = 0.1;
const CSW: f64 = 1.3;

fn lattice() -> Lattice {
    Lattice::new([4; 4]).unwrap()
}

fn zero() -> C {
    C::new(0.0, 0.0)
}

/// 4 × 4 and 3 × 3 dense complex products, written out.
fn mul4(a: &[[C; 4]; 4], b: &[[C; 4]; 4]) -> [[C; 4]; 4] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..4).map(|k| a[i][k] * b[k][j]).sum()))
}

fn mul3(a: &[[C; 3]; 3], b: &[[C; 3]; 3]) -> [[C; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

fn dag3(a: &[[C; 3]; 3]) -> [[C; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| a[j][i].conj()))
}

/// U_μ(x) at coordinates x + Σ steps (periodic), as a plain array.
fn link(u: &GaugeField<f64>, x: Coords, steps: &[(usize, isize)], mu: usize) -> [[C; 3]; 3] {
    let lat = u.lattice();
    let y = steps.iter().fold(x, |y, &(d, s)| lat.shift(y, d, s).0);
    u.link_at(y, mu).0
}

/// σ_μν = (i/2)(γ_μγ_ν − γ_νγ_μ) from the dense DeGrand–Rossi matrices.
fn textbook_sigma(mu: usize, nu: usize) -> [[C; 4]; 4] {
    let g = |m: usize| Gamma::DIRECTIONS[m].matrix::<f64>().0;
    let (ab, ba) = (mul4(&g(mu), &g(nu)), mul4(&g(nu), &g(mu)));
    std::array::from_fn(|i| std::array::from_fn(|j| C::new(0.0, 0.5) * (ab[i][j] - ba[i][j])))
}

/// The textbook clover at x, dense 12 × 12 (row 3σ + a):
/// A = (m + 4) + (i c_sw/4) Σ_{μ≠ν} σ_μν F̂_μν, F̂ = (Q − Q†)/8, its trace kept or
/// removed as `trace` says, each leaf a product of four links at explicit coordinates.
fn textbook_clover_with(
    u: &GaugeField<f64>,
    x: Coords,
    mass: f64,
    csw: f64,
    trace: FieldStrengthTrace,
) -> Dense12 {
    let mut a = [[zero(); 12]; 12];
    for (i, row) in a.iter_mut().enumerate() {
        row[i] = C::new(mass + 4.0, 0.0);
    }
    for mu in 0..4 {
        for nu in (0..4).filter(|&nu| nu != mu) {
            let l = |steps: &[(usize, isize)], d: usize| link(u, x, steps, d);
            let (m, n) = ((mu, 1), (nu, 1));
            let (mm, mn) = ((mu, -1), (nu, -1));
            let leaves = [
                [
                    l(&[], mu),
                    l(&[m], nu),
                    dag3(&l(&[n], mu)),
                    dag3(&l(&[], nu)),
                ],
                [
                    l(&[], nu),
                    dag3(&l(&[n, mm], mu)),
                    dag3(&l(&[mm], nu)),
                    l(&[mm], mu),
                ],
                [
                    dag3(&l(&[mm], mu)),
                    dag3(&l(&[mm, mn], nu)),
                    l(&[mm, mn], mu),
                    l(&[mn], nu),
                ],
                [
                    dag3(&l(&[mn], nu)),
                    l(&[mn], mu),
                    l(&[mn, m], nu),
                    dag3(&l(&[], mu)),
                ],
            ];
            let mut q = [[zero(); 3]; 3];
            for leaf in &leaves {
                let p = mul3(&mul3(&leaf[0], &leaf[1]), &mul3(&leaf[2], &leaf[3]));
                for i in 0..3 {
                    for j in 0..3 {
                        q[i][j] += p[i][j];
                    }
                }
            }
            let mut f: [[C; 3]; 3] =
                std::array::from_fn(|i| std::array::from_fn(|j| (q[i][j] - q[j][i].conj()) / 8.0));
            if trace == FieldStrengthTrace::Remove {
                let tr = (f[0][0] + f[1][1] + f[2][2]) / 3.0;
                for (i, row) in f.iter_mut().enumerate() {
                    row[i] -= tr;
                }
            }
            let s = textbook_sigma(mu, nu);
            for i in 0..12 {
                for j in 0..12 {
                    a[i][j] += C::new(0.0, csw / 4.0) * s[i / 3][j / 3] * f[i % 3][j % 3];
                }
            }
        }
    }
    a
}

/// The textbook clover in the default convention (the trace kept).
fn textbook_clover(u: &GaugeField<f64>, x: Coords, mass: f64, csw: f64) -> Dense12 {
    textbook_clover_with(u, x, mass, csw, FieldStrengthTrace::Keep)
}

/// The library clover at checkerboard site cb as a dense 12 × 12 (zero between the
/// chiral blocks).
fn library_dense(site: &[f64]) -> Dense12 {
    let mut a = [[zero(); 12]; 12];
    for b in 0..2 {
        let block = unpack_clover_block(&site[36 * b..36 * b + 36]);
        for r in 0..6 {
            for c in 0..6 {
                a[6 * b + r][6 * b + c] = block[r][c];
            }
        }
    }
    a
}

fn max_diff(a: &Dense12, b: &Dense12) -> f64 {
    (0..144)
        .map(|k| (a[k / 12][k % 12] - b[k / 12][k % 12]).norm())
        .fold(0.0, f64::max)
}

/// The textbook clover equals `clover_field` (the default: the trace kept) and
/// `clover_field_with(.., Remove)` the traceless textbook, on a random (rough) gauge
/// field at every site, including zeros between the chiral blocks; the textbook A is
/// hermitian.
#[test]
fn clover_field_matches_the_textbook_clover() {
    let u = GaugeField::<f64>::random(lattice(), 21);
    let a = clover_field(&u, MASS, CSW);
    let traceless = clover_field_with(&u, MASS, CSW, FieldStrengthTrace::Remove);
    let lat = lattice();
    for cb in 0..lat.volume() {
        let x = lat.coords_of_cb(cb);
        let want = textbook_clover(&u, x, MASS, CSW);
        let got = library_dense(a.site(cb));
        assert!(max_diff(&got, &want) < 1e-13, "site {cb}");
        let want_traceless = textbook_clover_with(&u, x, MASS, CSW, FieldStrengthTrace::Remove);
        let got_traceless = library_dense(traceless.site(cb));
        assert!(
            max_diff(&got_traceless, &want_traceless) < 1e-13,
            "site {cb}"
        );
        let adjoint: Dense12 = std::array::from_fn(|i| std::array::from_fn(|j| want[j][i].conj()));
        assert!(
            max_diff(&want, &adjoint) < 1e-14,
            "site {cb}: not hermitian"
        );
    }
    // The off-diagonal part is far from negligible on a random field.
    let off = (0..12)
        .flat_map(|i| (0..12).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| library_dense(a.site(5))[i][j].norm())
        .fold(0.0, f64::max);
    assert!(off > 0.1, "{off}");
}

/// A constant abelian field: U_x(x) = exp(i b y T), U_z(x) = exp(i b' t T') with
/// T = diag(1, −1, 0), T' = diag(0, 1, −1), on a 4 × 8 × 4 × 8 lattice with b = 2π/8,
/// b' = 4π/8 (b L_y, b' L_t ∈ 2πℤ: the flux is uniform across the periodic wrap), other
/// links 1. Every leaf in the xy plane is
/// exp(−i b T), so F̂_xy = −i sin(b) T exactly (−i b T + O(b³): the continuum
/// F_xy = −b T), likewise F̂_zt = −i sin(b') T', the other planes vanish, and
/// A = (m + 4) + (c_sw/2)[sin b σ_xy ⊗ T + sin b' σ_zt ⊗ T'] with σ_xy = diag(1, −1, 1, −1)
/// and σ_zt = diag(−1, 1, 1, −1): diagonal.
#[test]
fn constant_abelian_field_has_the_analytic_clover() {
    let lat = Lattice::new([4, 8, 4, 8]).unwrap();
    let (b, b2) = (
        2.0 * std::f64::consts::PI / 8.0,
        4.0 * std::f64::consts::PI / 8.0,
    );
    let t = [1.0, -1.0, 0.0];
    let t2 = [0.0, 1.0, -1.0];
    let phase = |theta: f64, d: [f64; 3]| {
        ColourMatrix::from_fn(|i, j| {
            if i == j {
                C::from_polar(1.0, theta * d[i])
            } else {
                zero()
            }
        })
    };
    let u = GaugeField::<f64>::from_fn(lat, |x, mu| match mu {
        0 => phase(b * x[1] as f64, t),
        2 => phase(b2 * x[3] as f64, t2),
        _ => ColourMatrix::identity(),
    });
    let (sxy, szt) = ([1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, 1.0, -1.0]);
    let a = clover_field(&u, MASS, CSW);
    for cb in 0..lat.volume() {
        let f = field_strength(&u, cb, 0, 1, FieldStrengthTrace::Remove);
        for (i, ti) in t.iter().enumerate() {
            assert!((f.0[i][i] - C::new(0.0, -b.sin() * ti)).norm() < 1e-14);
        }
        assert!(field_strength(&u, cb, 0, 2, FieldStrengthTrace::Keep).max_abs_component() < 1e-14);
        let got = library_dense(a.site(cb));
        let want: Dense12 = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                if i != j {
                    return zero();
                }
                let (s, c) = (i / 3, i % 3);
                let clover = b.sin() * sxy[s] * t[c] + b2.sin() * szt[s] * t2[c];
                C::new(MASS + 4.0 + CSW / 2.0 * clover, 0.0)
            })
        });
        assert!(max_diff(&got, &want) < 1e-14, "site {cb}");
    }
}

/// Gauge covariance: under U_μ(x) → Ω(x) U_μ(x) Ω†(x+μ̂) the clover transforms as
/// A(x) → Ω(x) A(x) Ω†(x) (colour indices only).
#[test]
fn clover_is_gauge_covariant() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 3);
    let omega = GaugeTransform::<f64>::random(lat, 17);
    let mut v = u.clone();
    omega.apply_to_links(&mut v).unwrap();
    let (a, a_v) = (clover_field(&u, MASS, CSW), clover_field(&v, MASS, CSW));
    for cb in 0..lat.volume() {
        let g = omega.at(cb).0;
        let x = library_dense(a.site(cb));
        let want: Dense12 = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                let (s, ca, t, cb2) = (i / 3, i % 3, j / 3, j % 3);
                let mut z = zero();
                for c in 0..3 {
                    for d in 0..3 {
                        z += g[ca][c] * x[3 * s + c][3 * t + d] * g[cb2][d].conj();
                    }
                }
                z
            })
        });
        assert!(
            max_diff(&library_dense(a_v.site(cb)), &want) < 1e-13,
            "site {cb}"
        );
    }
}

/// Splits a full Wilson field (checkerboard order: even sites first) into its parities.
fn split(psi: &F64) -> (F64, F64) {
    let lat = *psi.layout().lattice();
    let half = lat.half_volume() * 12;
    let part = |p: Parity, range: std::ops::Range<usize>| {
        F64::from_data(
            SpinorLayout::wilson(lat, SiteSubset::Single(p)),
            psi.data()[range].to_vec(),
        )
        .unwrap()
    };
    (
        part(Parity::Even, 0..half),
        part(Parity::Odd, half..2 * half),
    )
}

/// The full operator M ψ = A ψ + iμγ5 ψ − ½ H ψ from the textbook pieces: the dense
/// textbook clover per site, the twist on spins 0, 1 (+iμ) and 2, 3 (−iμ), and the
/// textbook Wilson hop (antiperiodic in time).
fn textbook_full(u: &GaugeField<f64>, psi: &[C], mu: f64) -> Vec<C> {
    textbook_full_with(u, psi, MASS, CSW, mu)
}

/// [`textbook_full`] for mass m and clover coefficient c_sw.
fn textbook_full_with(u: &GaugeField<f64>, psi: &[C], mass: f64, csw: f64, mu: f64) -> Vec<C> {
    let lat = *u.lattice();
    let wilson = WilsonOperator {
        gauge: u.clone(),
        kappa: 0.0,
        boundary: BoundaryConditions::antiperiodic_time(),
    };
    let h = wilson.hop(psi, 1.0);
    let mut out = vec![zero(); psi.len()];
    for cb in 0..lat.volume() {
        let a = textbook_clover(u, lat.coords_of_cb(cb), mass, csw);
        for i in 0..12 {
            let ax: C = (0..12).map(|j| a[i][j] * psi[12 * cb + j]).sum();
            let g5 = if i < 6 { 1.0 } else { -1.0 };
            let twist = C::new(0.0, mu * g5) * psi[12 * cb + i];
            out[12 * cb + i] = ax + twist - h[12 * cb + i] * 0.5;
        }
    }
    out
}

fn dot(a: &[C], b: &[C]) -> C {
    a.iter().zip(b).map(|(a, b)| a.conj() * b).sum()
}

fn gamma5(psi: &[C]) -> Vec<C> {
    psi.iter()
        .enumerate()
        .map(|(k, z)| if (k % 12) / 3 < 2 { *z } else { -*z })
        .collect()
}

/// γ5-hermiticity of the full clover operator built from `clover_field`:
/// ⟨φ, γ5 M γ5 ψ⟩ = ⟨M φ, ψ⟩, with M = A − ½H (library A applied site by site, the
/// textbook hop), on random fields.
#[test]
fn full_clover_operator_is_gamma5_hermitian() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 8);
    let a = clover_field(&u, MASS, CSW);
    let wilson = WilsonOperator {
        gauge: u.clone(),
        kappa: 0.0,
        boundary: BoundaryConditions::antiperiodic_time(),
    };
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let m = |psi: &[C]| -> Vec<C> {
        let field = F64::from_data(full, psi.to_vec()).unwrap();
        let mut a_psi = F64::zeros(full);
        a.apply(&mut a_psi, &field).unwrap();
        let h = wilson.hop(psi, 1.0);
        a_psi
            .data()
            .iter()
            .zip(h)
            .map(|(x, h)| x - h * 0.5)
            .collect()
    };
    let phi = to_c64(&F64::gaussian(full, 1));
    let psi = to_c64(&F64::gaussian(full, 2));
    let lhs = dot(&phi, &gamma5(&m(&gamma5(&psi))));
    let rhs = dot(&m(&phi), &psi);
    assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{lhs} vs {rhs}");
    // Not trivially satisfied: M itself is not hermitian.
    let not_herm = dot(&phi, &m(&psi)) - dot(&m(&phi), &psi);
    assert!(not_herm.norm() > 1e-3 * lhs.norm());
}

/// The even-odd operator's dagger is its adjoint and is γ5-conjugate to the operator of
/// opposite twist: ⟨φ, M̂ ψ⟩ = ⟨M̂† φ, ψ⟩ and M̂(μ)† φ = γ5 M̂(−μ) γ5 φ, on both parities,
/// for plain (μ = 0) and twisted (μ = 0.25) clover.
#[test]
fn even_odd_dagger_is_the_adjoint_and_gamma5_conjugate() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 4);
    let bc = TimeBoundary::Antiperiodic;
    for p in [Parity::Even, Parity::Odd] {
        for mu in [0.0, 0.25] {
            let op = EvenOddClover::twisted(u.clone(), MASS, CSW, mu, p, bc).unwrap();
            let op_minus = EvenOddClover::twisted(u.clone(), MASS, CSW, -mu, p, bc).unwrap();
            let layout = op.layout();
            let (phi, psi) = (F64::gaussian(layout, 5), F64::gaussian(layout, 6));
            let (mut m_psi, mut md_phi) = (F64::zeros(layout), F64::zeros(layout));
            op.apply(&mut m_psi, &psi).unwrap();
            op.apply_dagger(&mut md_phi, &phi).unwrap();
            let lhs = dot(&to_c64(&phi), &to_c64(&m_psi));
            let rhs = dot(&to_c64(&md_phi), &to_c64(&psi));
            assert!(
                (lhs - rhs).norm() < 1e-12 * lhs.norm(),
                "{p:?} μ = {mu}: {lhs} vs {rhs}"
            );
            let g5_phi = F64::from_data(layout, gamma5(&to_c64(&phi))).unwrap();
            let mut m_g5 = F64::zeros(layout);
            op_minus.apply(&mut m_g5, &g5_phi).unwrap();
            let conj = gamma5(&to_c64(&m_g5));
            let e = relative_difference(&conj, &to_c64(&md_phi));
            assert!(e < 1e-13, "{p:?} μ = {mu}: {e:e}");
        }
    }
}

/// Solving with the even-odd operator solves the full system: M̂ x_p = b̂_p by CGNR,
/// x_q reconstructed, and ‖b − M x‖/‖b‖ recomputed with the textbook full operator
/// (textbook clover, twist and hop) is at the solver tolerance, on both parities, for
/// plain and twisted clover.
#[test]
fn even_odd_solve_solves_the_full_clover_system() {
    let lat = lattice();
    let u = GaugeField::<f64>::weak(lat, 12, 0.3);
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let b = F64::gaussian(full, 9);
    let (b_even, b_odd) = split(&b);
    for p in [Parity::Even, Parity::Odd] {
        for mu in [0.0, 0.25] {
            let op =
                EvenOddClover::twisted(u.clone(), MASS, CSW, mu, p, TimeBoundary::Antiperiodic)
                    .unwrap();
            let (b_p, b_q) = match p {
                Parity::Even => (&b_even, &b_odd),
                Parity::Odd => (&b_odd, &b_even),
            };
            let b_hat = op.prepare_source(b_p, b_q).unwrap();
            let mut x_p = F64::zeros(op.layout());
            let opts = SolverOptions::with_tolerance(1e-11);
            let result = cgnr::<F64, F64, _, _>(&op, &op, &b_hat, &mut x_p, &opts).unwrap();
            assert!(
                result.is_converged(),
                "{p:?} μ = {mu}: {:?}",
                result.convergence
            );
            let x_q = op.reconstruct(&x_p, b_q).unwrap();
            let (x_even, x_odd) = match p {
                Parity::Even => (&x_p, &x_q),
                Parity::Odd => (&x_q, &x_p),
            };
            let x: Vec<C> = to_c64(x_even).into_iter().chain(to_c64(x_odd)).collect();
            let mx = textbook_full(&u, &x, mu);
            let r = relative_difference(&mx, &to_c64(&b));
            assert!(r < 1e-9, "{p:?} μ = {mu}: ‖b − M x‖/‖b‖ = {r:e}");
        }
    }
}

/// invert_clover on one parity of a rough field: A⁻¹(x) A(x) = 1 with A⁻¹ from the
/// parity restriction, checked by dense products (and the restriction is the right
/// run of sites: A_odd site i is the full field's site V/2 + i).
#[test]
fn parity_inverse_inverts_the_full_field_sites() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 30);
    let a = clover_field(&u, MASS, CSW);
    let odd = a.restrict(Parity::Odd).unwrap();
    let inv = invert_clover(&odd).unwrap();
    for i in 0..lat.half_volume() {
        let x = library_dense(a.site(lat.half_volume() + i));
        let y = library_dense(inv.site(i));
        let yx: Dense12 = std::array::from_fn(|r| {
            std::array::from_fn(|c| (0..12).map(|k| y[r][k] * x[k][c]).sum())
        });
        let one: Dense12 = std::array::from_fn(|r| {
            std::array::from_fn(|c| C::new(if r == c { 1.0 } else { 0.0 }, 0.0))
        });
        assert!(max_diff(&yx, &one) < 1e-12, "site {i}");
    }
}

/// tmLQCD's conf.48 (4³×8, β = 6.0), a real configuration with a recorded plaquette
/// P = 0.63500557222887 (tests/data/README.md).
fn conf48() -> GaugeField<f64> {
    read_gauge(common::data("tmlqcd/conf.48"), &ReadOptions::default())
        .unwrap()
        .field
}

/// Each of the four leaves of Q_μν(x) is the μν plaquette of one of the four sites
/// around x, traversed from x (same trace), so Σ_x Re tr Q_μν(x) = 4 Σ_x Re tr U_μν(x):
/// (1/(72 V)) Σ_x Σ_{μ<ν} Re tr Q_μν(x) is tmLQCD's recorded plaquette.
#[test]
fn clover_leaves_reproduce_the_recorded_plaquette_of_conf48() {
    let u = conf48();
    let lat = *u.lattice();
    let mut sum = 0.0;
    for cb in 0..lat.volume() {
        for mu in 0..4 {
            for nu in mu + 1..4 {
                sum += clover_leaves(&u, cb, mu, nu).trace().re;
            }
        }
    }
    let p = sum / (72.0 * lat.volume() as f64);
    assert!((p - 0.63500557222887).abs() < 1e-13, "{p}");
}

/// On conf.48 with the κ = 0.177 (m = 1/(2κ) − 4) and μ = 0.5 of the run that made it and
/// c_sw = 1: clover_field equals the textbook clover, and the even-odd twisted-clover
/// solve satisfies the textbook full system to the solver tolerance.
#[test]
fn twisted_clover_solve_on_conf48() {
    let u = conf48();
    let lat = *u.lattice();
    let (mass, csw, mu) = (1.0 / (2.0 * 0.177) - 4.0, 1.0, 0.5);
    let a = clover_field(&u, mass, csw);
    for cb in (0..lat.volume()).step_by(37) {
        let want = textbook_clover(&u, lat.coords_of_cb(cb), mass, csw);
        assert!(
            max_diff(&library_dense(a.site(cb)), &want) < 1e-13,
            "site {cb}"
        );
    }
    let full = SpinorLayout::wilson(lat, SiteSubset::Full);
    let b = F64::gaussian(full, 48);
    let (b_even, b_odd) = split(&b);
    let op =
        EvenOddClover::from_clover(u.clone(), &a, mu, Parity::Even, TimeBoundary::Antiperiodic)
            .unwrap();
    let b_hat = op.prepare_source(&b_even, &b_odd).unwrap();
    let mut x_even = F64::zeros(op.layout());
    let opts = SolverOptions::with_tolerance(1e-10);
    let result = cgnr::<F64, F64, _, _>(&op, &op, &b_hat, &mut x_even, &opts).unwrap();
    assert!(result.is_converged(), "{:?}", result.convergence);
    let x_odd = op.reconstruct(&x_even, &b_odd).unwrap();
    let x: Vec<C> = to_c64(&x_even).into_iter().chain(to_c64(&x_odd)).collect();
    let mx = textbook_full_with(&u, &x, mass, csw, mu);
    let r = relative_difference(&mx, &to_c64(&b));
    assert!(r < 1e-8, "‖b − M x‖/‖b‖ = {r:e}");
}

/// The two field-strength conventions on a real configuration (tmLQCD's conf.48): the
/// clover term that keeps the trace (QUDA, openQCD) minus the one that removes it is
/// exactly (i c_sw/2) Σ_{μ<ν} σ_μν ⊗ (t_μν/3)·1_colour with t_μν = tr (Q_μν − Q_μν†)/8
/// from the leaves, at every site, and it is not zero: the four-leaf average of SU(3)
/// links has an imaginary trace.
#[test]
fn trace_conventions_differ_by_exactly_the_trace_part_on_a_real_configuration() {
    let u = conf48();
    let lat = *u.lattice();
    let keep = clover_field(&u, MASS, CSW);
    let remove = clover_field_with(&u, MASS, CSW, FieldStrengthTrace::Remove);
    let mut largest_trace = 0.0_f64;
    for cb in 0..lat.volume() {
        let mut want = [[zero(); 12]; 12];
        for mu in 0..4 {
            for nu in mu + 1..4 {
                let q = clover_leaves(&u, cb, mu, nu);
                let t = (q.trace() - q.trace().conj()) / 8.0;
                largest_trace = largest_trace.max(t.norm());
                let sigma = textbook_sigma(mu, nu);
                for i in 0..12 {
                    for j in (0..12).filter(|j| j % 3 == i % 3) {
                        want[i][j] += C::new(0.0, CSW / 2.0) * sigma[i / 3][j / 3] * t / 3.0;
                    }
                }
            }
        }
        let (k, r) = (library_dense(keep.site(cb)), library_dense(remove.site(cb)));
        let got: Dense12 = std::array::from_fn(|i| std::array::from_fn(|j| k[i][j] - r[i][j]));
        assert!(max_diff(&got, &want) < 1e-14, "site {cb}");
    }
    assert!(
        largest_trace > 1e-3,
        "the trace part is not negligible: {largest_trace:e}"
    );
}
