//! The generated naive and improved staggered hops against a hand-written textbook
//! staggered hop, the free-field M†M spectrum, ε-hermiticity and gauge covariance.
// The textbook operators are written as index loops on purpose (as in a paper).
#![allow(clippy::needless_range_loop)]

mod stencil_support;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, GaugeField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Lattice, Parity};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Complex;
use qdsl_kernels::{ImprovedStaggeredHop, NaiveStaggeredHop};
use stencil_support::*;

/// Textbook staggered hop on the full lattice, one term per (μ, ±, 1 or 3 sites):
/// out(x) = Σ_μ F_μ(x)χ(x+μ̂) − F_μ†(x−μ̂)χ(x−μ̂) + L_μ(x)χ(x+3μ̂) − L_μ†(x−3μ̂)χ(x−3μ̂),
/// each times the boundary sign of its hop; the long terms only when `long` is given.
fn textbook(
    fat: &GaugeField<f64>,
    long: Option<&GaugeField<f64>>,
    chi: &Plain,
    antiperiodic: bool,
) -> Plain {
    let lat = *fat.lattice();
    let mut out = vec![vec![[C::new(0.0, 0.0); 3]; 1]; lat.volume()];
    for lex in 0..lat.volume() {
        let x = lat.coords_of_lex(lex);
        for mu in 0..4 {
            let mut hops: Vec<(&GaugeField<f64>, isize)> = vec![(fat, 1), (fat, -1)];
            if let Some(l) = long {
                hops.extend([(l, 3), (l, -3)]);
            }
            for (links, n) in hops {
                let (y, wraps) = lat.shift(x, mu, n);
                let bsign = if antiperiodic && mu == 3 && wraps % 2 != 0 {
                    -1.0
                } else {
                    1.0
                };
                let m: ColourMatrix<f64> = if n > 0 {
                    *links.link_at(x, mu)
                } else {
                    links.link_at(y, mu).adjoint()
                };
                let sign = if n > 0 { bsign } else { -bsign };
                for a in 0..3 {
                    for b in 0..3 {
                        out[lex][0][a] += m.0[a][b] * chi[lat.lex_index(y)][0][b] * sign;
                    }
                }
            }
        }
    }
    out
}

fn subsets(v: &Variant) -> (SiteSubset, SiteSubset) {
    match v.sites {
        OutputSites::Parity(p) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
        OutputSites::Full => (SiteSubset::Full, SiteSubset::Full),
    }
}

fn run<T: qdsl_core::Real>(
    improved: bool,
    v: &Variant,
    fat: &GaugeField<f64>,
    long: &GaugeField<f64>,
    chi: &Plain,
    x: &Plain,
) -> ColourSpinorField<T> {
    let lat = *fat.lattice();
    let (out_s, in_s) = subsets(v);
    let chi_f = from_plain(chi, SpinorLayout::staggered(lat, in_s)).cast::<T>();
    let x_f = from_plain(x, SpinorLayout::staggered(lat, out_s)).cast::<T>();
    let mut out = ColourSpinorField::<T>::zeros(SpinorLayout::staggered(lat, out_s));
    let xpay = v.xpay.then_some(Xpay {
        a: T::from_f64(0.3),
        x: &x_f,
        b: T::from_f64(1.0),
    });
    if improved {
        ImprovedStaggeredHop
            .apply_cpu(
                v,
                &mut out,
                &chi_f,
                &fat.cast::<T>(),
                &long.cast::<T>(),
                xpay,
            )
            .unwrap();
    } else {
        NaiveStaggeredHop
            .apply_cpu(v, &mut out, &chi_f, &fat.cast::<T>(), xpay)
            .unwrap();
    }
    out
}

/// Every supported variant of both kernels (recon 18 only: the spec excludes recon 12)
/// equals the textbook hop on general complex matrices (smeared links are not unitary);
/// the dagger knob must give D† = −D (D is anti-hermitian).
#[test]
fn generated_hops_equal_textbook_for_every_variant() {
    let lat = Lattice::new([4, 4, 2, 8]).unwrap();
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = to_plain(&ColourSpinorField::gaussian(full, 21));
    let x = to_plain(&ColourSpinorField::gaussian(full, 22));
    let (fat, long) = (random_matrices(lat, 23), random_matrices(lat, 24));
    let mut checked = 0;
    for improved in [false, true] {
        for v in Variant::all() {
            let supported = if improved {
                ImprovedStaggeredHop::supports(&v)
            } else {
                NaiveStaggeredHop::supports(&v)
            };
            assert_eq!(supported, v.recon == Recon::R18, "{v}");
            if !supported {
                continue;
            }
            let (fat, long) = (&fat, &long);
            let mut want = textbook(
                fat,
                improved.then_some(long),
                &chi,
                v.boundary == TimeBoundary::Antiperiodic,
            );
            for (w, xs) in want.iter_mut().zip(&x) {
                for (z, xz) in w[0].iter_mut().zip(&xs[0]) {
                    let d = if v.dagger { -*z } else { *z };
                    *z = if v.xpay { *xz * 0.3 + d } else { d };
                }
            }
            let (err, tol) = match v.spinor {
                StorageFormat::F64 => (
                    rel_diff(&run::<f64>(improved, &v, fat, long, &chi, &x), &want),
                    1e-13,
                ),
                // f32 and the narrow formats (which compute in f32).
                _ => (
                    rel_diff(&run::<f32>(improved, &v, fat, long, &chi, &x), &want),
                    3e-6,
                ),
            };
            assert!(err < tol, "improved={improved} {v}: relative error {err:e}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * 48);
}

/// Recon 12 is excluded by the staggered specs' `#[knobs(recon = [18])]`: the generated
/// code and the CUDA emitter refuse it by name.
#[test]
fn excluded_knob_values_are_refused() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let v = Variant {
        recon: Recon::R12,
        ..Variant::default()
    };
    let (even, odd) = (
        SiteSubset::Single(Parity::Even),
        SiteSubset::Single(Parity::Odd),
    );
    let chi = ColourSpinorField::<f64>::zeros(SpinorLayout::staggered(lat, odd));
    let mut out = ColourSpinorField::<f64>::zeros(SpinorLayout::staggered(lat, even));
    let u = GaugeField::<f64>::unit(lat);
    let err = NaiveStaggeredHop
        .apply_cpu(&v, &mut out, &chi, &u, None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `naive_staggered_hop` does not support recon: recon = 12 is excluded by the spec; allowed: 18"
    );
    assert!(ImprovedStaggeredHop::cuda_source(&v).is_err());
    let info = ImprovedStaggeredHop::info(&Variant::default()).unwrap();
    assert!(info.knobs.contains(&("recon", vec!["18"])));
    assert!(info.knobs.contains(&("dagger", vec!["false", "true"])));
}

/// Free-field links c · η_μ(x) · b_μ(x) with MILC's staggered phases (DESIGN.md)
/// η_t = 1, η_x = (−1)^t, η_y = (−1)^{t+x}, η_z = (−1)^{t+x+y}, and b = −1 on t-links
/// whose hop of `span` sites crosses the last time slice (antiperiodic time folded in).
fn free_links(lat: Lattice, coeff: f64, span: usize) -> GaugeField<f64> {
    GaugeField::from_fn(lat, |x, mu| {
        let eta_exp: usize = if mu == 3 {
            0
        } else {
            x[3] + x[..mu].iter().sum::<usize>()
        };
        let eta = if eta_exp.is_multiple_of(2) { 1.0 } else { -1.0 };
        let wraps = mu == 3 && x[3] + span >= lat.extent(3);
        let b = if wraps { -1.0 } else { 1.0 };
        ColourMatrix::identity().scale(coeff * eta * b)
    })
}

/// Free field: M†M = 4m² + 4 Σ_μ s_μ² on plane waves, with s_μ = sin p_μ (naive) and
/// s_μ = (9/8) sin p_μ − (1/24) sin 3p_μ (improved, fat 9/8, long −1/24), antiperiodic
/// time folded into the links, p_t = (2n + 1)π/L_t.
#[test]
fn free_field_mdagm_has_the_staggered_spectrum() {
    let lat = Lattice::new([4, 6, 4, 8]).unwrap();
    let mass = 0.05;
    let pi = std::f64::consts::PI;
    let p = [2.0 * pi / 4.0, 2.0 * pi * 2.0 / 6.0, 0.0, 3.0 * pi / 8.0];
    let layout = SpinorLayout::staggered(lat, SiteSubset::Full);
    let colour = [C::new(0.3, -1.0), C::new(1.2, 0.4), C::new(-0.7, 0.1)];
    let wave = ColourSpinorField::<f64>::from_fn(layout, |_, x, _, a| {
        let phase: f64 = (0..4).map(|m| p[m] * x[m] as f64).sum();
        Complex::from_polar(1.0, phase) * colour[a]
    });
    let v = Variant {
        sites: OutputSites::Full,
        xpay: true,
        ..Variant::default()
    };
    let vd = Variant { dagger: true, ..v };
    for improved in [false, true] {
        let (c1, c3) = if improved {
            (9.0 / 8.0, -1.0 / 24.0)
        } else {
            (1.0, 0.0)
        };
        let fat = free_links(lat, c1, 1);
        let long = free_links(lat, c3, 3);
        let apply = |variant: &Variant, f: &ColourSpinorField<f64>| {
            let mut out = ColourSpinorField::zeros(layout);
            let xpay = Some(Xpay {
                a: 2.0 * mass,
                x: f,
                b: 1.0,
            });
            if improved {
                ImprovedStaggeredHop
                    .apply_cpu(variant, &mut out, f, &fat, &long, xpay)
                    .unwrap();
            } else {
                NaiveStaggeredHop
                    .apply_cpu(variant, &mut out, f, &fat, xpay)
                    .unwrap();
            }
            out
        };
        let mdm = apply(&vd, &apply(&v, &wave));
        let s2: f64 = p
            .iter()
            .map(|q| (c1 * q.sin() + c3 * (3.0 * q).sin()).powi(2))
            .sum();
        let lambda = 4.0 * mass * mass + 4.0 * s2;
        let worst = mdm
            .data()
            .iter()
            .zip(wave.data())
            .map(|(a, w)| (a - w * lambda).norm() / w.norm())
            .fold(0.0, f64::max);
        assert!(
            worst < 1e-12,
            "improved={improved}: residual {worst:e} (λ = {lambda})"
        );
        assert!(s2 > 0.1, "a non-trivial momentum");
    }
}

/// ε-hermiticity: D† = ε D ε with ε(x) = (−1)^{x+y+z+t}, checked as the adjoint relation
/// ⟨φ, D_eo χ⟩ = ⟨D†_oe φ, χ⟩ with the dagger knob, on random links.
#[test]
fn dagger_knob_is_the_adjoint() {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let (fat, long) = (random_matrices(lat, 31), random_matrices(lat, 32));
    let even = SpinorLayout::staggered(lat, SiteSubset::Single(Parity::Even));
    let odd = SpinorLayout::staggered(lat, SiteSubset::Single(Parity::Odd));
    let chi = ColourSpinorField::<f64>::gaussian(odd, 33);
    let phi = ColourSpinorField::<f64>::gaussian(even, 34);
    let d = Variant {
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    };
    let ddag = Variant {
        sites: OutputSites::Parity(Parity::Odd),
        dagger: true,
        ..d
    };
    let mut dchi = ColourSpinorField::zeros(even);
    ImprovedStaggeredHop
        .apply_cpu(&d, &mut dchi, &chi, &fat, &long, None)
        .unwrap();
    let mut ddphi = ColourSpinorField::zeros(odd);
    ImprovedStaggeredHop
        .apply_cpu(&ddag, &mut ddphi, &phi, &fat, &long, None)
        .unwrap();
    let (l, r) = (inner(&phi, &dchi), inner(&ddphi, &chi));
    assert!((l - r).norm() < 1e-12 * l.norm(), "{l} vs {r}");
}

/// Gauge covariance of the naive hop: D[U^g](gχ) = g D[U]χ.
#[test]
fn naive_hop_is_gauge_covariant() {
    let lat = Lattice::new([4, 2, 4, 4]).unwrap();
    let u = random_gauge(lat, 41);
    let g = random_transform(lat, 42);
    let ug = transform_links(&g, &u);
    let full = SpinorLayout::staggered(lat, SiteSubset::Full);
    let chi = ColourSpinorField::<f64>::gaussian(full, 43);
    let rotate = |f: &ColourSpinorField<f64>| transform_field(&g, f);
    let v = Variant {
        sites: OutputSites::Full,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    };
    let mut a = ColourSpinorField::zeros(full);
    NaiveStaggeredHop
        .apply_cpu(&v, &mut a, &rotate(&chi), &ug, None)
        .unwrap();
    let mut b = ColourSpinorField::zeros(full);
    NaiveStaggeredHop
        .apply_cpu(&v, &mut b, &chi, &u, None)
        .unwrap();
    let diff = max_abs_diff(&a, &rotate(&b));
    assert!(diff < 1e-12, "{diff:e}");
}

/// Standard flop counts (naive 570, improved 1146) and hand-counted bytes: improved f32
/// recon 18, QUDA model 16·(6 + 18)·4 + 6·4 = 1560, minimal (6 + 16·18 + 6)·4 = 1200.
#[test]
fn staggered_info_counts() {
    let v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    assert_eq!(NaiveStaggeredHop::info(&v).unwrap().flops_per_site, 570);
    let info = ImprovedStaggeredHop::info(&v).unwrap();
    assert_eq!(info.flops_per_site, 1146);
    assert_eq!((info.bytes.quda, info.bytes.minimal), (1560, 1200));
}
