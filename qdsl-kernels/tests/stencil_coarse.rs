//! The multigrid coarse hop D_c and the whole coarse operator M = X − D_c (2 spins × N_c
//! colours, dense N × N links and site matrix X, N = 2 N_c) against a hand-written
//! textbook dense loop, for N_c = 24 (the catalog's [`CoarseHop`], [`CoarseOp`]) and
//! N_c = 4 (specs of the same form defined here); their hermiticity when the backward
//! links equal the forward ones (and X is hermitian); X = 1 with Y = 0 is the identity;
//! the variants and fields they refuse; their CUDA (NVRTC + ptxas for sm_90, reviewed
//! snapshots).
// The textbook operator is written as index loops on purpose (as in a paper).
#![allow(clippy::needless_range_loop)]

mod nvrtc;

use qdsl_core::dsl::cpu::Xpay;
use qdsl_core::dsl::variant::{DirichletBlocks, OutputSites, Recon, StorageFormat, TimeBoundary};
use qdsl_core::dsl::{DslError, Stencil, Variant};
use qdsl_core::field::{ColourSpinorField, DenseKind, DenseLinkField, SiteSubset, SpinorLayout};
use qdsl_core::lattice::{Coords, Lattice, Parity};
use qdsl_core::Complex;
use qdsl_kernels::{CoarseHop, CoarseOp};
use qdsl_macros::stencil;

type C = Complex<f64>;

stencil! {
    /// The coarse hop on 2 × 4 fields (N = 8): out(x) = Σ_μ [Y⁺_μ(x) φ(x + μ̂) +
    /// Y⁻_μ(x − μ̂)† φ(x − μ̂)]. No knob restrictions: the dense path itself refuses what
    /// it does not generate.
    pub coarse_hop_small(out: Spinor<2, 4>, phi: Spinor<2, 4>, yf: Gauge<8>, yb: Gauge<8>) {
        for mu in 0..4 {
            out += yf[mu](x) * phi(x + mu);
            out += yb[mu](x - mu).dagger() * phi(x - mu);
        }
    }
}

stencil! {
    /// The coarse operator on 2 × 4 fields (N = 8): out(x) = X(x) φ(x) − Σ_μ [Y⁺_μ(x)
    /// φ(x + μ̂) + Y⁻_μ(x − μ̂)† φ(x − μ̂)], X a dense 8 × 8 matrix per site.
    pub coarse_op_small(out: Spinor<2, 4>, phi: Spinor<2, 4>, xm: SiteMatrix<8>, yf: Gauge<8>, yb: Gauge<8>) {
        out += xm(x) * phi(x);
        for mu in 0..4 {
            out -= yf[mu](x) * phi(x + mu);
            out -= yb[mu](x - mu).dagger() * phi(x - mu);
        }
    }
}

stencil! {
    /// A one-spin hop with dense 6 × 6 links, anti-hermitian like the staggered hop:
    /// out(x) = Σ_μ [Y_μ(x) χ(x + μ̂) − Y_μ(x − μ̂)† χ(x − μ̂)]; its dagger knob is
    /// Γ D Γ with Γ = ε(x) (odd hops change sign), which is D† = −D.
    pub dense_one_spin_hop(out: Spinor<1, 6>, chi: Spinor<1, 6>, y: Gauge<6>) {
        for mu in 0..4 {
            out += y[mu](x) * chi(x + mu);
            out -= y[mu](x - mu).dagger() * chi(x - mu);
        }
    }
}

/// A full-lattice field as plain vectors: `v[lex][k]`, k = σ N_c + a.
type Plain = Vec<Vec<C>>;

/// The textbook coarse hop on the full lattice, written from the equation:
/// out(x)_r = Σ_μ [ s⁺ Σ_c Yf_μ(x)_{rc} φ(x+μ̂)_c + s⁻ Σ_c conj(Yb_μ(x−μ̂)_{cr}) φ(x−μ̂)_c ],
/// s± the antiperiodic-time sign of the hop (when `antiperiodic`), and 0 for a hop that
/// crosses a Dirichlet wall between blocks of `walls[μ]` sites. With a site matrix `xm`
/// it is the coarse operator, out(x)_r = Σ_c X(x)_{rc} φ(x)_c − (the hop's sum).
fn textbook(
    xm: Option<&DenseLinkField<f64>>,
    yf: &DenseLinkField<f64>,
    yb: &DenseLinkField<f64>,
    phi: &Plain,
    antiperiodic: bool,
    walls: Option<[usize; 4]>,
) -> Plain {
    let lat = *yf.lattice();
    let n = yf.n();
    let entry = |y: &DenseLinkField<f64>, c: Coords, mu: usize, r: usize, col: usize| {
        y.link(lat.cb_index(c), mu)[r * n + col]
    };
    let hop_sign = if xm.is_some() { -1.0 } else { 1.0 };
    let mut out = vec![vec![C::new(0.0, 0.0); n]; lat.volume()];
    for lex in 0..lat.volume() {
        let x = lat.coords_of_lex(lex);
        if let Some(xm) = xm {
            for r in 0..n {
                for c in 0..n {
                    out[lex][r] += entry(xm, x, 0, r, c) * phi[lex][c];
                }
            }
        }
        for mu in 0..4 {
            for step in [1isize, -1] {
                let (y, wraps) = lat.shift(x, mu, step);
                let mut sign = if antiperiodic && mu == 3 && wraps % 2 != 0 {
                    -1.0
                } else {
                    1.0
                };
                if let Some(b) = walls {
                    if x[mu] / b[mu] != y[mu] / b[mu] {
                        sign = 0.0;
                    }
                }
                let src = &phi[lat.lex_index(y)];
                for r in 0..n {
                    for c in 0..n {
                        let m = if step > 0 {
                            entry(yf, x, mu, r, c)
                        } else {
                            entry(yb, y, mu, c, r).conj()
                        };
                        out[lex][r] += m * src[c] * sign * hop_sign;
                    }
                }
            }
        }
    }
    out
}

/// A random full-lattice field of 2 × `nc` components (complex Gaussians, fixed seed).
fn random_plain(lat: &Lattice, nc: usize, seed: u64) -> Plain {
    random_plain_shaped(lat, (2, nc), seed)
}

/// A random full-lattice field of `ns` × `nc` components.
fn random_plain_shaped(lat: &Lattice, (ns, nc): (usize, usize), seed: u64) -> Plain {
    let f = ColourSpinorField::<f64>::gaussian(
        SpinorLayout::new(*lat, 1, SiteSubset::Full, ns, nc).unwrap(),
        seed,
    );
    (0..lat.volume())
        .map(|lex| f.site(0, lat.lex_to_cb(lex)).to_vec())
        .collect()
}

/// The 2 × `nc` field of `subset` holding the sites of `p`.
fn to_field(p: &Plain, lat: &Lattice, nc: usize, subset: SiteSubset) -> ColourSpinorField<f64> {
    to_field_shaped(p, lat, (2, nc), subset)
}

/// The `ns` × `nc` field of `subset` holding the sites of `p`.
fn to_field_shaped(
    p: &Plain,
    lat: &Lattice,
    (ns, nc): (usize, usize),
    subset: SiteSubset,
) -> ColourSpinorField<f64> {
    let layout = SpinorLayout::new(*lat, 1, subset, ns, nc).unwrap();
    let mut f = ColourSpinorField::zeros(layout);
    for i in 0..layout.sites_per_slice() {
        let lex = lat.lex_index(layout.coords_of_site(i));
        f.site_mut(0, i).copy_from_slice(&p[lex]);
    }
    f
}

/// Largest |generated − textbook| over the output's sites, relative to the largest
/// textbook component.
fn rel_diff<T: qdsl_core::Real>(got: &ColourSpinorField<T>, want: &Plain) -> f64 {
    let (lat, layout) = (got.layout().lattice(), got.layout());
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for i in 0..layout.sites_per_slice() {
        let w = &want[lat.lex_index(layout.coords_of_site(i))];
        for (g, w) in got.site(0, i).iter().zip(w) {
            let g = C::new(g.re.to_f64(), g.im.to_f64());
            diff = diff.max((g - w).norm());
            scale = scale.max(w.norm());
        }
    }
    diff / scale
}

/// Which spec runs: the catalog's 2 × 24 or the 2 × 4 one.
#[derive(Clone, Copy, Debug)]
enum Spec {
    Nc24,
    Nc4,
}

impl Spec {
    fn nc(self) -> usize {
        match self {
            Spec::Nc24 => 24,
            Spec::Nc4 => 4,
        }
    }
}

/// Runs the generated CPU code of `spec` for `v` in precision `T`: the hop, or with a
/// site matrix `xm` the coarse operator (whose source covers the whole lattice: it is
/// read at x and at x ± μ̂).
#[allow(clippy::too_many_arguments)]
fn run<T: qdsl_core::Real>(
    spec: Spec,
    v: &Variant,
    xm: Option<&DenseLinkField<f64>>,
    yf: &DenseLinkField<f64>,
    yb: &DenseLinkField<f64>,
    phi: &Plain,
    x: &Plain,
    (a, b): (f64, f64),
) -> Result<ColourSpinorField<T>, DslError> {
    let lat = *yf.lattice();
    let nc = spec.nc();
    let (out_s, in_s) = match (v.sites, xm) {
        (OutputSites::Parity(p), None) => (SiteSubset::Single(p), SiteSubset::Single(p.opposite())),
        (OutputSites::Parity(p), Some(_)) => (SiteSubset::Single(p), SiteSubset::Full),
        (OutputSites::Full, _) => (SiteSubset::Full, SiteSubset::Full),
    };
    let phi_f = to_field(phi, &lat, nc, in_s).cast::<T>();
    let x_f = to_field(x, &lat, nc, out_s).cast::<T>();
    let (yf, yb) = (yf.cast::<T>(), yb.cast::<T>());
    let mut out = ColourSpinorField::<T>::zeros(SpinorLayout::new(lat, 1, out_s, 2, nc).unwrap());
    let xpay = v.xpay.then_some(Xpay {
        a: T::from_f64(a),
        x: &x_f,
        b: T::from_f64(b),
    });
    match (spec, xm.map(|m| m.cast::<T>())) {
        (Spec::Nc24, None) => CoarseHop.apply_cpu(v, &mut out, &phi_f, &yf, &yb, xpay)?,
        (Spec::Nc4, None) => CoarseHopSmall.apply_cpu(v, &mut out, &phi_f, &yf, &yb, xpay)?,
        (Spec::Nc24, Some(m)) => CoarseOp.apply_cpu(v, &mut out, &phi_f, &m, &yf, &yb, xpay)?,
        (Spec::Nc4, Some(m)) => CoarseOpSmall.apply_cpu(v, &mut out, &phi_f, &m, &yf, &yb, xpay)?,
    }
    Ok(out)
}

/// Every variant the coarse hop supports on the CPU that changes the arithmetic: output
/// sites, xpay, time boundary, Dirichlet walls, f64 and f32.
fn variants() -> Vec<Variant> {
    let mut vs = Vec::new();
    for sites in [
        OutputSites::Parity(Parity::Even),
        OutputSites::Parity(Parity::Odd),
        OutputSites::Full,
    ] {
        for xpay in [false, true] {
            for boundary in [TimeBoundary::Periodic, TimeBoundary::Antiperiodic] {
                vs.push(Variant {
                    sites,
                    xpay,
                    boundary,
                    ..Variant::default()
                });
            }
        }
    }
    vs.push(Variant {
        sites: OutputSites::Full,
        dirichlet: Some(DirichletBlocks {
            block: [2, 2, 4, 2],
        }),
        ..Variant::default()
    });
    vs.push(Variant {
        sites: OutputSites::Parity(Parity::Odd),
        xpay: true,
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        boundary: TimeBoundary::Antiperiodic,
        ..Variant::default()
    });
    vs
}

/// Generated CPU = the textbook loop, for N_c = 24 and 4, every variant: to f64
/// rounding (1e-13 relative) in f64, to f32 rounding (1e-5) in f32.
#[test]
fn generated_coarse_hop_equals_the_textbook_dense_loop() {
    compare_with_textbook(None);
}

/// The coarse operator X − D_c: generated CPU = the textbook loop with X, for N_c = 24
/// and 4, every variant, to the same tolerances.
#[test]
fn generated_coarse_op_equals_the_textbook_dense_loop() {
    compare_with_textbook(Some(15));
}

/// The generated code of the hop (`xm_seed` None) or of the operator with a random site
/// matrix X (seeded) against [`textbook`], for N_c = 24 and 4 and every [`variants`].
fn compare_with_textbook(xm_seed: Option<u64>) {
    let lat = Lattice::new([4, 4, 4, 4]).unwrap();
    let (a, b) = (0.7, -1.3);
    for spec in [Spec::Nc24, Spec::Nc4] {
        let nc = spec.nc();
        let yf = DenseLinkField::<f64>::random(lat, 2 * nc, 11).unwrap();
        let yb = DenseLinkField::<f64>::random(lat, 2 * nc, 12).unwrap();
        let xm = xm_seed.map(|seed| {
            DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, lat, 2 * nc, seed).unwrap()
        });
        let (phi, x) = (random_plain(&lat, nc, 13), random_plain(&lat, nc, 14));
        for v in variants() {
            let walls = v.dirichlet.map(|d| d.block);
            let mut want = textbook(
                xm.as_ref(),
                &yf,
                &yb,
                &phi,
                v.boundary == TimeBoundary::Antiperiodic,
                walls,
            );
            if v.xpay {
                for (w, xs) in want.iter_mut().zip(&x) {
                    for (w, xs) in w.iter_mut().zip(xs) {
                        *w = xs * a + *w * b;
                    }
                }
            }
            let (diff, tol) = if v.spinor == StorageFormat::F32 {
                let got = run::<f32>(spec, &v, xm.as_ref(), &yf, &yb, &phi, &x, (a, b)).unwrap();
                (rel_diff(&got, &want), 1e-5)
            } else {
                let got = run::<f64>(spec, &v, xm.as_ref(), &yf, &yb, &phi, &x, (a, b)).unwrap();
                (rel_diff(&got, &want), 1e-13)
            };
            assert!(
                diff < tol,
                "{spec:?} {}: relative difference {diff:e}",
                v.canonical()
            );
        }
    }
}

/// ⟨χ, D φ⟩ = Σ_x Σ_r conj(χ_r(x)) (Dφ)_r(x) on the full lattice.
fn inner(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> C {
    a.data()
        .iter()
        .zip(b.data())
        .map(|(a, b)| a.conj() * b)
        .sum()
}

/// |⟨χ, M φ⟩ − ⟨M χ, φ⟩| / |⟨χ, M φ⟩| on the full 4 × 4 × 2 × 4 lattice for the 2 × 24
/// hop (`xm` None) or operator with links `yf`, `yb` and random φ, χ: 0 (to rounding)
/// exactly when M is hermitian.
fn hermiticity_defect(
    xm: Option<&DenseLinkField<f64>>,
    yf: &DenseLinkField<f64>,
    yb: &DenseLinkField<f64>,
) -> f64 {
    let lat = *yf.lattice();
    let (phi, chi) = (random_plain(&lat, 24, 23), random_plain(&lat, 24, 24));
    let v = Variant {
        sites: OutputSites::Full,
        ..Variant::default()
    };
    let full = |p: &Plain| to_field(p, &lat, 24, SiteSubset::Full);
    let apply = |p: &Plain| run::<f64>(Spec::Nc24, &v, xm, yf, yb, p, p, (0.0, 0.0)).unwrap();
    let left = inner(&full(&chi), &apply(&phi));
    let right = inner(&apply(&chi), &full(&phi));
    (left - right).norm() / left.norm()
}

/// The lattice and links of the hermiticity tests: Y (seed 21) and an independent
/// Y' (seed 22), 48 × 48.
fn hermiticity_links() -> (DenseLinkField<f64>, DenseLinkField<f64>) {
    let lat = Lattice::new([4, 4, 2, 4]).unwrap();
    (
        DenseLinkField::<f64>::random(lat, 48, 21).unwrap(),
        DenseLinkField::<f64>::random(lat, 48, 22).unwrap(),
    )
}

/// With Y⁻ = Y⁺ the hop is hermitian: ⟨χ, D φ⟩ = ⟨D χ, φ⟩ (the backward term of one
/// side is the forward term of the other, shifted by μ̂). Negative control: with
/// independent Y⁻ the two differ by O(1) of their size.
#[test]
fn coarse_hop_is_hermitian_when_backward_links_equal_forward_links() {
    let (y, other) = hermiticity_links();
    let (equal, control) = (
        hermiticity_defect(None, &y, &y),
        hermiticity_defect(None, &y, &other),
    );
    assert!(equal < 1e-13, "hermiticity defect {equal:e}");
    assert!(control > 0.1, "control: defect {control:e}");
}

/// X(x) with its hermitian part: (X + X†)/2 at every site.
fn hermitian_part(xm: &DenseLinkField<f64>) -> DenseLinkField<f64> {
    let n = xm.n();
    let mut h = xm.clone();
    for cb in 0..xm.lattice().volume() {
        let (m, hm) = (xm.link(cb, 0), h.link_mut(cb, 0));
        for r in 0..n {
            for c in 0..n {
                hm[r * n + c] = (m[r * n + c] + m[c * n + r].conj()) * 0.5;
            }
        }
    }
    h
}

/// With Y⁻ = Y⁺ and hermitian X the coarse operator is hermitian: ⟨χ, M φ⟩ = ⟨M χ, φ⟩.
/// Negative controls: a non-hermitian X, or independent Y⁻, break it by O(1).
#[test]
fn coarse_op_is_hermitian_with_hermitian_x_and_equal_links() {
    let (y, other) = hermiticity_links();
    let xm = DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, *y.lattice(), 48, 25).unwrap();
    let herm = hermitian_part(&xm);
    let equal = hermiticity_defect(Some(&herm), &y, &y);
    assert!(equal < 1e-13, "hermiticity defect {equal:e}");
    let control_x = hermiticity_defect(Some(&xm), &y, &y);
    assert!(control_x > 0.1, "control X: defect {control_x:e}");
    let control_y = hermiticity_defect(Some(&herm), &y, &other);
    assert!(control_y > 0.1, "control Y: defect {control_y:e}");
}

/// X = 1 at every site and Y = 0: the coarse operator is the identity, out = φ exactly,
/// on each output parity and the full lattice, for N_c = 24 and 4.
#[test]
fn coarse_op_with_unit_x_and_no_links_is_the_identity() {
    let lat = Lattice::new([2, 4, 2, 4]).unwrap();
    for spec in [Spec::Nc24, Spec::Nc4] {
        let n = 2 * spec.nc();
        let mut one = DenseLinkField::<f64>::zeros_of(DenseKind::SiteMatrix, lat, n).unwrap();
        for cb in 0..lat.volume() {
            for r in 0..n {
                one.link_mut(cb, 0)[r * n + r] = C::new(1.0, 0.0);
            }
        }
        let zero = DenseLinkField::<f64>::zeros(lat, n).unwrap();
        let phi = random_plain(&lat, spec.nc(), 41);
        for sites in [
            OutputSites::Parity(Parity::Even),
            OutputSites::Parity(Parity::Odd),
            OutputSites::Full,
        ] {
            let v = Variant {
                sites,
                ..Variant::default()
            };
            let got =
                run::<f64>(spec, &v, Some(&one), &zero, &zero, &phi, &phi, (0.0, 0.0)).unwrap();
            assert_eq!(rel_diff(&got, &phi), 0.0, "{spec:?} {}", v.canonical());
        }
    }
}

/// The coarse operator's fields are checked: a link field (4 matrices per site) passed
/// as the site matrix, or a site matrix of the wrong N, is a field mismatch naming `xm`.
#[test]
fn coarse_op_refuses_wrong_site_matrices() {
    let lat = Lattice::new([2, 2, 2, 2]).unwrap();
    let y = DenseLinkField::<f64>::random(lat, 48, 1).unwrap();
    let small = DenseLinkField::<f64>::random_of(DenseKind::SiteMatrix, lat, 8, 2).unwrap();
    let p = random_plain(&lat, 24, 2);
    let v = Variant::default();
    for xm in [&y, &small] {
        match run::<f64>(Spec::Nc24, &v, Some(xm), &y, &y, &p, &p, (0.0, 0.0)) {
            Err(DslError::FieldMismatch {
                field, expected, ..
            }) => {
                assert_eq!(field, "xm");
                assert!(expected.contains("48 × 48 site matrices"), "{expected}");
            }
            other => panic!("expected a field mismatch, got {other:?}"),
        }
    }
}

/// One spin, dense links: the dagger variant is the adjoint, ⟨χ, D φ⟩ = ⟨D^dagger χ, φ⟩,
/// on the CPU; control: the plain variant in its place fails by O(1) (D is
/// anti-hermitian, so ⟨D χ, φ⟩ = −⟨χ, D φ⟩). The CUDA of the dagger variant compiles.
#[test]
fn one_spin_dense_dagger_is_the_adjoint() {
    let lat = Lattice::new([4, 2, 4, 2]).unwrap();
    let y = DenseLinkField::<f64>::random(lat, 6, 31).unwrap();
    let (phi, chi) = (
        random_plain_shaped(&lat, (1, 6), 32),
        random_plain_shaped(&lat, (1, 6), 33),
    );
    let full = |p: &Plain| to_field_shaped(p, &lat, (1, 6), SiteSubset::Full);
    let apply = |dagger: bool, p: &Plain| {
        let v = Variant {
            sites: OutputSites::Full,
            dagger,
            ..Variant::default()
        };
        let mut out = ColourSpinorField::<f64>::zeros(
            SpinorLayout::new(lat, 1, SiteSubset::Full, 1, 6).unwrap(),
        );
        DenseOneSpinHop
            .apply_cpu(&v, &mut out, &full(p), &y, None)
            .unwrap();
        out
    };
    let left = inner(&full(&chi), &apply(false, &phi));
    let adjoint = inner(&apply(true, &chi), &full(&phi));
    let control = inner(&apply(false, &chi), &full(&phi));
    assert!(
        (left - adjoint).norm() < 1e-13 * left.norm(),
        "{left} vs {adjoint}"
    );
    assert!(
        (left - control).norm() > 0.5 * left.norm(),
        "control {control}"
    );
    let dagger = Variant {
        dagger: true,
        ..Variant::default()
    };
    assert!(DenseOneSpinHop::cuda_source(&dagger).is_ok());
}

/// The dense path refuses what it does not generate, naming the knob: dagger (Γ D Γ is
/// not defined for dense spin-colour links), narrow formats, compressed links.
#[test]
fn unsupported_coarse_variants_are_refused() {
    let knob_of = |r: Result<String, DslError>| match r {
        Err(DslError::UnsupportedVariant { knob, .. }) => knob,
        other => panic!("expected UnsupportedVariant, got {other:?}"),
    };
    let dagger = Variant {
        dagger: true,
        ..Variant::default()
    };
    assert_eq!(knob_of(CoarseHopSmall::cuda_source(&dagger)), "dagger");
    let f16 = Variant {
        spinor: StorageFormat::F16,
        ..Variant::default()
    };
    assert_eq!(knob_of(CoarseHopSmall::cuda_source(&f16)), "spinor");
    let fixed8_links = Variant {
        gauge: StorageFormat::Fixed8,
        ..Variant::default()
    };
    assert_eq!(knob_of(CoarseHopSmall::cuda_source(&fixed8_links)), "gauge");
    let recon12 = Variant {
        recon: Recon::R12,
        ..Variant::default()
    };
    assert_eq!(knob_of(CoarseHopSmall::cuda_source(&recon12)), "recon");
    // The catalog spec restricts its knobs to what the dense path generates.
    assert!(!CoarseHop::supports(&f16) && !CoarseHop::supports(&dagger));
    assert!(CoarseHop::supports(&Variant::default()));
    let lat = Lattice::new([2, 2, 2, 2]).unwrap();
    let y = DenseLinkField::<f64>::random(lat, 48, 1).unwrap();
    let p = random_plain(&lat, 24, 2);
    let err = run::<f64>(Spec::Nc24, &dagger, None, &y, &y, &p, &p, (0.0, 0.0)).unwrap_err();
    assert!(
        matches!(err, DslError::UnsupportedVariant { knob: "dagger", .. }),
        "{err}"
    );
    // Links of the wrong dimension are a field mismatch naming the field.
    let small = DenseLinkField::<f64>::random(lat, 8, 1).unwrap();
    let v = Variant::default();
    let phi = to_field(&p, &lat, 24, SiteSubset::Single(Parity::Odd));
    let mut out = ColourSpinorField::<f64>::zeros(
        SpinorLayout::new(lat, 1, SiteSubset::Single(Parity::Even), 2, 24).unwrap(),
    );
    match CoarseHop.apply_cpu(&v, &mut out, &phi, &small, &y, None) {
        Err(DslError::FieldMismatch { field, .. }) => assert_eq!(field, "yf"),
        other => panic!("expected a field mismatch, got {other:?}"),
    }
}

/// KernelInfo: 8 terms of one 48 × 48 product each, 8N² − 2N = 18 336 flops, plus 2N = 96
/// per accumulation after the first: 147 360 (xpay adds 3 · 96); the links dominate the
/// bytes: QUDA's model reads 8 links of 2 · 48² reals (f32: 147 456 bytes) per site.
#[test]
fn coarse_hop_cost() {
    let info = CoarseHop::info(&Variant::default()).unwrap();
    assert_eq!(info.flops_per_site, 147_360);
    let xpay = Variant {
        xpay: true,
        ..Variant::default()
    };
    assert_eq!(
        CoarseHop::info(&xpay).unwrap().flops_per_site,
        147_360 + 288
    );
    let f32v = Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    };
    // 8 source sites + the output, 96 reals each, and 8 links of 4608 reals, 4 bytes each.
    assert_eq!(
        CoarseHop::info(&f32v).unwrap().bytes.quda,
        (9 * 96 + 8 * 4608) * 4
    );
}

/// KernelInfo of the coarse operator: 9 dense 48 × 48 products (8N² − 2N = 18 336 flops
/// each) and 8 accumulations of 2N = 96: 165 792; QUDA's bytes: the output, 9 source
/// sites and 9 matrices (8 links and X) of 2 · 48² reals; minimal: the output, the
/// source on both parities (read at x and x ± μ̂) and the 9 distinct matrices.
#[test]
fn coarse_op_cost() {
    let info = CoarseOp::info(&Variant::default()).unwrap();
    assert_eq!(info.flops_per_site, 9 * (8 * 48 * 48 - 2 * 48) + 8 * 96);
    assert_eq!(info.flops_per_site, 165_792);
    let info = CoarseOp::info(&f32_even()).unwrap();
    assert_eq!(info.bytes.quda, (10 * 96 + 9 * 4608) * 4);
    assert_eq!(info.bytes.minimal, (3 * 96 + 9 * 4608) * 4);
}

fn f32_even() -> Variant {
    Variant {
        spinor: StorageFormat::F32,
        gauge: StorageFormat::F32,
        ..Variant::default()
    }
}

/// The generated CUDA of the f32 even variant (reviewed): dense row loop, unrolled by 4
/// over 48 columns, 64-bit offsets, the backward term reading conj(Y_{cr}).
#[test]
fn coarse_cuda_snapshot() {
    let src = CoarseHop::cuda_source(&f32_even()).unwrap();
    assert!(src.contains("for (int r = 0; r < 48; r++)"));
    assert!(src.contains("#pragma unroll 4"));
    assert!(src.contains("c_conj_fma(w, ld_c<4>(f_yb, "));
    assert_eq!(src, CoarseHop::cuda_source(&f32_even()).unwrap());
    insta::assert_snapshot!("coarse_hop_even_f32", src);
}

/// The generated CUDA of the coarse operator's f32 even variant (reviewed): the site
/// term X(x) φ(x) reads the site matrix record of the output site (`ln0 = cb`, chunk 0)
/// and φ at the output's own site, the hops are those of the coarse hop with −1.
#[test]
fn coarse_op_cuda_snapshot() {
    let src = CoarseOp::cuda_source(&f32_even()).unwrap();
    assert!(src.contains("// term 0: +1 * xm(x) * phi(x)"));
    assert!(src.contains("ln0 = cb;"));
    assert!(src.contains("c_fma(w, ld_c<4>(f_xm, 0, r * 48 + c, ln0, stride_xm)"));
    insta::assert_snapshot!("coarse_op_even_f32", src);
}

/// The coarse kernels (hops and operators) compile with NVRTC for sm_90 (f64/f32, parity
/// and full lattice, xpay, antiperiodic; N = 48, 8 and 6) without spills; ptxas's registers are printed
/// (ignored where the build found no NVRTC or ptxas).
#[test]
#[cfg_attr(
    not(qdsl_nvrtc),
    ignore = "needs NVRTC and ptxas (not found when the tests were built)"
)]
fn coarse_kernels_compile_with_nvrtc() {
    let tc = nvrtc::Toolchain::load();
    let mut variants = Vec::new();
    for spinor in [StorageFormat::F64, StorageFormat::F32] {
        for (sites, xpay, boundary) in [
            (
                OutputSites::Parity(Parity::Even),
                false,
                TimeBoundary::Periodic,
            ),
            (OutputSites::Full, true, TimeBoundary::Antiperiodic),
        ] {
            variants.push(Variant {
                sites,
                xpay,
                boundary,
                spinor,
                gauge: spinor,
                ..Variant::default()
            });
        }
    }
    type Source = fn(&Variant) -> Result<String, DslError>;
    type Name = fn(&Variant) -> String;
    let kernels: [(&str, Source, Name); 5] = [
        ("coarse_hop", CoarseHop::cuda_source, CoarseHop::kernel_name),
        ("coarse_op", CoarseOp::cuda_source, CoarseOp::kernel_name),
        (
            "coarse_op_small",
            CoarseOpSmall::cuda_source,
            CoarseOpSmall::kernel_name,
        ),
        (
            "coarse_hop_small",
            CoarseHopSmall::cuda_source,
            CoarseHopSmall::kernel_name,
        ),
        (
            "dense_one_spin_hop",
            DenseOneSpinHop::cuda_source,
            DenseOneSpinHop::kernel_name,
        ),
    ];
    for (name, source, kernel_name) in kernels {
        let mut program = String::new();
        for v in &variants {
            let src = source(v).unwrap();
            program.push_str(&format!(
                "namespace variant_{:016x} {{\n{src}}}\n",
                v.stable_hash()
            ));
        }
        let entries: Vec<String> = variants.iter().map(kernel_name).collect();
        let reports = tc.compile_checked(&program, name, "sm_90", &entries, true);
        for (entry, r) in &reports {
            println!(
                "{name} sm_90 {entry}: {} registers, {} + {} spill bytes",
                r.registers, r.spill_stores, r.spill_loads
            );
        }
        assert_eq!(reports.len(), variants.len());
    }
}
