//! The host operators against hand-written textbook operators (plain loops over the
//! full lattice, written here without the generated kernels), their adjoint identities,
//! and solves on the real configurations of tests/data.

use super::cpu::{EvenOddStaggered, EvenOddWilson, StaggeredLinks};
use crate::solver::{cg, cgnr, LinearOperator, SolverField, SolverOptions};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_core::math::Gamma;
use qdsl_core::Complex;

type C = Complex<f64>;

fn lattice() -> Lattice {
    Lattice::new([4, 4, 4, 6]).expect("valid lattice")
}

/// The full-lattice field (cb order) with `part` on parity p and zero on the other.
fn embed(part: &[C], p: Parity, volume: usize, per_site: usize) -> Vec<C> {
    let mut full = vec![C::new(0.0, 0.0); volume * per_site];
    let offset = if p == Parity::Even { 0 } else { volume / 2 };
    full[offset * per_site..(offset + volume / 2) * per_site].copy_from_slice(part);
    full
}

/// The parity-p half of a full field.
fn restrict(full: &[C], p: Parity, volume: usize, per_site: usize) -> Vec<C> {
    let offset = if p == Parity::Even { 0 } else { volume / 2 };
    full[offset * per_site..(offset + volume / 2) * per_site].to_vec()
}

/// Textbook Wilson hop, full lattice, cb order:
/// (H ψ)(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x+μ̂) + (1 + γ_μ) U_μ†(x−μ̂) ψ(x−μ̂)] · boundary signs.
/// Index loops on purpose: they mirror the formula's indices.
#[allow(clippy::needless_range_loop)]
pub(crate) fn textbook_wilson_hop(
    u: &GaugeField<f64>,
    psi: &[C],
    bc: &BoundaryConditions,
) -> Vec<C> {
    let lat = *u.lattice();
    let gammas: Vec<_> = Gamma::DIRECTIONS
        .iter()
        .map(|g| g.matrix::<f64>().0)
        .collect();
    let mut out = vec![C::new(0.0, 0.0); psi.len()];
    for cb in 0..lat.volume() {
        let x = lat.coords_of_cb(cb);
        for mu in 0..4 {
            for (dir, proj) in [(1isize, -1.0), (-1isize, 1.0)] {
                let (y, _) = lat.shift(x, mu, dir);
                let sign = bc.hop_sign(&lat, x, mu, dir);
                let ycb = lat.cb_index(y);
                let link = if dir == 1 {
                    *u.link_at(x, mu)
                } else {
                    u.link_at(y, mu).adjoint()
                };
                let mut v = [[C::new(0.0, 0.0); 3]; 4];
                for (s, row) in v.iter_mut().enumerate() {
                    for (a, z) in row.iter_mut().enumerate() {
                        for b in 0..3 {
                            *z += link.0[a][b] * psi[(ycb * 4 + s) * 3 + b];
                        }
                    }
                }
                for s in 0..4 {
                    for a in 0..3 {
                        let mut w = v[s][a];
                        for (t, vt) in v.iter().enumerate() {
                            w += gammas[mu][s][t] * proj * vt[a];
                        }
                        out[(cb * 4 + s) * 3 + a] += w * sign;
                    }
                }
            }
        }
    }
    out
}

/// Textbook staggered hop (phases in the links), full lattice, cb order:
/// (D χ)(x) = Σ_μ [F_μ(x) χ(x+μ̂) − F_μ†(x−μ̂) χ(x−μ̂) + L_μ(x) χ(x+3μ̂) − L_μ†(x−3μ̂) χ(x−3μ̂)],
/// the long terms absent for naive staggered.
pub(super) fn textbook_staggered_hop(
    fat: &GaugeField<f64>,
    long: Option<&GaugeField<f64>>,
    chi: &[C],
) -> Vec<C> {
    let lat = *fat.lattice();
    let mut out = vec![C::new(0.0, 0.0); chi.len()];
    for cb in 0..lat.volume() {
        let x = lat.coords_of_cb(cb);
        for mu in 0..4 {
            let mut terms = vec![(fat, 1isize)];
            if let Some(l) = long {
                terms.push((l, 3));
            }
            for (u, n) in terms {
                for (dir, sign) in [(1isize, 1.0), (-1, -1.0)] {
                    let (y, _) = lat.shift(x, mu, dir * n);
                    let link = if dir == 1 {
                        *u.link_at(x, mu)
                    } else {
                        u.link_at(y, mu).adjoint()
                    };
                    let ycb = lat.cb_index(y);
                    for a in 0..3 {
                        for b in 0..3 {
                            out[cb * 3 + a] += link.0[a][b] * chi[ycb * 3 + b] * sign;
                        }
                    }
                }
            }
        }
    }
    out
}

fn rel_diff(a: &[C], b: &[C]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).norm_sqr()).sum();
    let n: f64 = b.iter().map(|y| y.norm_sqr()).sum();
    (d / n).sqrt()
}

fn as_c64<T: qdsl_core::Real>(f: &ColourSpinorField<T>) -> Vec<C> {
    f.data()
        .iter()
        .map(|z| C::new(z.re.to_f64(), z.im.to_f64()))
        .collect()
}

/// M̂ ψ_p = ψ_p − κ² [H (H ψ_p)_q]_p with the textbook hop, on a random gauge field with
/// antiperiodic time, both parities, M̂ and M̂† (M̂† from H† = γ5 H γ5: the textbook
/// operator applied to γ5-conjugated fields), in f64 (1e-13) and f32 (3e-6).
#[test]
fn even_odd_wilson_equals_the_textbook_schur_complement() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 11);
    let bc = BoundaryConditions::antiperiodic_time();
    let kappa = 0.13;
    let g5 = |v: &[C]| -> Vec<C> {
        v.iter()
            .enumerate()
            .map(|(k, z)| if (k / 3) % 4 >= 2 { -z } else { *z })
            .collect()
    };
    for p in [Parity::Even, Parity::Odd] {
        let layout = SpinorLayout::wilson(lat, SiteSubset::Single(p));
        let psi = ColourSpinorField::<f64>::gaussian(layout, 5);
        let full = embed(&as_c64(&psi), p, lat.volume(), 12);
        for dagger in [false, true] {
            let src = if dagger { g5(&full) } else { full.clone() };
            let h1 = embed(
                &restrict(
                    &textbook_wilson_hop(&u, &src, &bc),
                    p.opposite(),
                    lat.volume(),
                    12,
                ),
                p.opposite(),
                lat.volume(),
                12,
            );
            let h2 = textbook_wilson_hop(&u, &h1, &bc);
            let h2 = if dagger { g5(&h2) } else { h2 };
            let want: Vec<C> = restrict(&full, p, lat.volume(), 12)
                .iter()
                .zip(restrict(&h2, p, lat.volume(), 12))
                .map(|(x, h)| x - h * kappa * kappa)
                .collect();
            let op = EvenOddWilson::new(u.clone(), kappa, p, TimeBoundary::Antiperiodic);
            let mut out = ColourSpinorField::zeros(layout);
            if dagger {
                op.apply_dagger(&mut out, &psi).unwrap();
            } else {
                op.apply(&mut out, &psi).unwrap();
            }
            let e = rel_diff(&as_c64(&out), &want);
            assert!(e < 1e-13, "{p:?} dagger={dagger}: {e:e}");
            let op32 = EvenOddWilson::new(u.cast::<f32>(), kappa, p, TimeBoundary::Antiperiodic);
            let mut out32 = ColourSpinorField::<f32>::zeros(layout);
            let psi32 = psi.cast::<f32>();
            if dagger {
                op32.apply_dagger(&mut out32, &psi32).unwrap();
            } else {
                op32.apply(&mut out32, &psi32).unwrap();
            }
            let e = rel_diff(&as_c64(&out32), &want);
            assert!(e < 3e-6, "f32 {p:?} dagger={dagger}: {e:e}");
        }
    }
    // (V/2)(1320 + 1320 + 72) flops.
    let op = EvenOddWilson::new(u, kappa, Parity::Even, TimeBoundary::Periodic);
    assert_eq!(op.flops_per_apply(), (lat.volume() / 2 * 2712) as u64);
}

/// ⟨χ, M̂ψ⟩ = ⟨M̂†χ, ψ⟩ for random fields on a random gauge field.
#[test]
fn even_odd_wilson_dagger_is_the_adjoint() {
    let lat = lattice();
    let op = EvenOddWilson::new(
        GaugeField::<f64>::random(lat, 4),
        0.12,
        Parity::Even,
        TimeBoundary::Antiperiodic,
    );
    let layout = op.layout();
    let psi = ColourSpinorField::<f64>::gaussian(layout, 1);
    let chi = ColourSpinorField::<f64>::gaussian(layout, 2);
    let (mut m_psi, mut md_chi) = (
        ColourSpinorField::zeros(layout),
        ColourSpinorField::zeros(layout),
    );
    op.apply(&mut m_psi, &psi).unwrap();
    op.apply_dagger(&mut md_chi, &chi).unwrap();
    let lhs = chi.dot(&m_psi).unwrap();
    let rhs = md_chi.dot(&psi).unwrap();
    assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{lhs} vs {rhs}");
    // M̂ is not Hermitian: the identity is not trivially satisfied by M̂ itself.
    let mut m_chi = ColourSpinorField::zeros(layout);
    op.apply(&mut m_chi, &chi).unwrap();
    assert!((m_chi.dot(&psi).unwrap() - lhs).norm() > 1e-3 * lhs.norm());
}

/// A ψ_p = 4m² ψ_p − [D (D ψ_p)_q]_p with the textbook staggered hop, naive and
/// improved (random links standing in for phase-carrying fat and long links), f64;
/// A is Hermitian and ⟨ψ, Aψ⟩ ≥ 4m²‖ψ‖² (−D² = D†D ≥ 0).
#[test]
fn even_odd_staggered_equals_the_textbook_normal_operator() {
    let lat = lattice();
    let (fat, long) = (
        GaugeField::<f64>::random(lat, 7),
        GaugeField::<f64>::random(lat, 8),
    );
    let mass = 0.05;
    for improved in [false, true] {
        let links = if improved {
            StaggeredLinks::Improved {
                fat: fat.clone(),
                long: long.clone(),
            }
        } else {
            StaggeredLinks::Naive(fat.clone())
        };
        for p in [Parity::Even, Parity::Odd] {
            let op = EvenOddStaggered::new(links.clone(), mass, p);
            let layout = op.layout();
            let psi = ColourSpinorField::<f64>::gaussian(layout, 3);
            let full = embed(&as_c64(&psi), p, lat.volume(), 3);
            let l = improved.then_some(&long);
            let d1 = textbook_staggered_hop(&fat, l, &full);
            let d1 = embed(
                &restrict(&d1, p.opposite(), lat.volume(), 3),
                p.opposite(),
                lat.volume(),
                3,
            );
            let d2 = restrict(&textbook_staggered_hop(&fat, l, &d1), p, lat.volume(), 3);
            let want: Vec<C> = as_c64(&psi)
                .iter()
                .zip(&d2)
                .map(|(x, d)| x * (4.0 * mass * mass) - d)
                .collect();
            let mut out = ColourSpinorField::zeros(layout);
            op.apply(&mut out, &psi).unwrap();
            let e = rel_diff(&as_c64(&out), &want);
            assert!(e < 1e-13, "improved={improved} {p:?}: {e:e}");
            let chi = ColourSpinorField::<f64>::gaussian(layout, 9);
            let mut a_chi = ColourSpinorField::zeros(layout);
            op.apply(&mut a_chi, &chi).unwrap();
            let (lhs, rhs) = (chi.dot(&out).unwrap(), a_chi.dot(&psi).unwrap());
            assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{lhs} vs {rhs}");
            let q = psi.dot(&out).unwrap();
            assert!(q.im.abs() < 1e-10 * q.re && q.re >= 4.0 * mass * mass * psi.norm_sqr());
        }
    }
}

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(name)
}

/// CGNR on M̂ (Wilson, κ = 0.12, antiperiodic time) on MILC's lat.sample.l8 reaches
/// ‖b − M̂x‖/‖b‖ ≤ 1e-10, the residual recomputed here with M̂.
#[test]
fn cgnr_on_even_odd_wilson_solves_on_a_real_configuration() {
    let u = read_gauge(data("lat.sample.l8"), &ReadOptions::default())
        .expect("lat.sample.l8")
        .field;
    let op = EvenOddWilson::new(u, 0.12, Parity::Even, TimeBoundary::Antiperiodic);
    let b = ColourSpinorField::<f64>::gaussian(op.layout(), 21);
    let mut x = ColourSpinorField::zeros(op.layout());
    let opts = SolverOptions::with_tolerance(1e-10);
    let r = cgnr(&op, &op, &b, &mut x, &opts).expect("solve");
    assert!(r.is_converged(), "{r:?}");
    let mut mx = ColourSpinorField::zeros(op.layout());
    op.apply(&mut mx, &x).unwrap();
    mx.axpy(-1.0, &b).unwrap();
    let res = (mx.norm_sqr() / b.norm_sqr()).sqrt();
    assert!(res <= 1e-10, "{res:e}");
}

/// CG on MILC's even-odd asqtad operator with the fat and long links of lat.sample.l8
/// (m = 0.05) reaches 1e-10, recomputed here.
#[test]
fn cg_on_even_odd_asqtad_solves_on_the_milc_links() {
    let read = |n| {
        read_gauge(data(n), &ReadOptions::smeared_links())
            .expect("MILC links")
            .field
    };
    let links = StaggeredLinks::Improved {
        fat: read("fat.l8"),
        long: read("long.l8"),
    };
    let op = EvenOddStaggered::new(links, 0.05, Parity::Even);
    let b = ColourSpinorField::<f64>::gaussian(op.layout(), 22);
    let mut x = ColourSpinorField::zeros(op.layout());
    let r = cg(&op, &op, &b, &mut x, &SolverOptions::with_tolerance(1e-10)).expect("solve");
    assert!(r.is_converged(), "{r:?}");
    let mut ax = ColourSpinorField::zeros(op.layout());
    op.apply(&mut ax, &x).unwrap();
    ax.axpy(-1.0, &b).unwrap();
    assert!((ax.norm_sqr() / b.norm_sqr()).sqrt() <= 1e-10);
}

/// Makes an operator on the given number of right-hand sides.
type MakeOperator<'a> = Box<dyn Fn(usize) -> Box<dyn LinearOperator<ColourSpinorField<f64>>> + 'a>;

/// The host operators on N right-hand sides (fields of N slices, `with_sources`) equal N
/// one-source applications bit for bit, M̂ and M̂†: Wilson, naive and improved staggered,
/// clover, twisted clover (the clover field and twist shared by the sources).
#[test]
fn operators_on_n_sources_equal_n_single_applications() {
    use super::EvenOddClover;
    const N: usize = 3;
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 41);
    let long = GaugeField::<f64>::random(lat, 42);
    let single: Vec<(&str, MakeOperator<'_>)> = vec![
        (
            "wilson",
            Box::new(|n| {
                Box::new(
                    EvenOddWilson::new(u.clone(), 0.12, Parity::Even, TimeBoundary::Antiperiodic)
                        .with_sources(n),
                )
            }),
        ),
        (
            "naive staggered",
            Box::new(|n| {
                Box::new(
                    EvenOddStaggered::new(StaggeredLinks::Naive(u.clone()), 0.1, Parity::Odd)
                        .with_sources(n),
                )
            }),
        ),
        (
            "improved staggered",
            Box::new(|n| {
                let links = StaggeredLinks::Improved {
                    fat: u.clone(),
                    long: long.clone(),
                };
                Box::new(EvenOddStaggered::new(links, 0.1, Parity::Even).with_sources(n))
            }),
        ),
        (
            "clover",
            Box::new(|n| {
                Box::new(
                    EvenOddClover::new(u.clone(), 0.1, 1.0, Parity::Even, TimeBoundary::Periodic)
                        .unwrap()
                        .with_sources(n),
                )
            }),
        ),
        (
            "twisted clover",
            Box::new(|n| {
                let op = EvenOddClover::twisted(
                    u.clone(),
                    0.1,
                    1.0,
                    0.2,
                    Parity::Odd,
                    TimeBoundary::Antiperiodic,
                );
                Box::new(op.unwrap().with_sources(n))
            }),
        ),
    ];
    for (name, make) in &single {
        let (one, batch) = (make(1), make(N));
        let spins = if name.contains("staggered") { 1 } else { 4 };
        let parity = if name.starts_with("naive") || name.starts_with("twisted") {
            Parity::Odd
        } else {
            Parity::Even
        };
        let layout = |ls| SpinorLayout::new(lat, ls, SiteSubset::Single(parity), spins, 3).unwrap();
        let psi = ColourSpinorField::<f64>::gaussian(layout(N), 43);
        let per = layout(1).len();
        for dagger in [false, true] {
            let mut out = psi.zeros_like();
            let run = |op: &dyn LinearOperator<ColourSpinorField<f64>>,
                       o: &mut ColourSpinorField<f64>,
                       p: &ColourSpinorField<f64>| {
                if dagger {
                    op.apply_dagger(o, p)
                } else {
                    op.apply(o, p)
                }
                .unwrap()
            };
            run(batch.as_ref(), &mut out, &psi);
            for k in 0..N {
                let psi_k = ColourSpinorField::from_data(
                    layout(1),
                    psi.data()[k * per..(k + 1) * per].to_vec(),
                )
                .unwrap();
                let mut want = psi_k.zeros_like();
                run(one.as_ref(), &mut want, &psi_k);
                assert!(
                    out.data()[k * per..(k + 1) * per] == *want.data(),
                    "{name} dagger={dagger}: source {k}"
                );
            }
            assert_eq!(
                batch.flops_per_apply(),
                N as u64 * one.flops_per_apply(),
                "{name}"
            );
        }
    }
}
