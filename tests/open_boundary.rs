//! Open and Schrödinger-functional time boundaries of the Wilson-clover operator
//! (openQCD's boundary types 0 and 1, `qdsl_core::gauge::OpenBoundary`) against their
//! defining properties and a textbook operator written here:
//!
//! * the dense matrix of the library's full operator on a 2³×6 lattice equals the
//!   textbook D = P [(m + 4 + (c_F − 1) δ_{x0 ∈ improvement}) + clover − ½ H] P on the
//!   active slices (P: zero on the slices where the quark fields vanish), the decoupled
//!   1 + iμγ5 on the vanishing slices, for open and SF boundaries, with and without
//!   twist;
//! * no hop crosses the boundary: a point source on the last active slice reaches
//!   neither x0 = L_t − 1 nor x0 = 0;
//! * the free field's diagonal is m + 4 + c_F − 1 on the improvement slices, m + 4
//!   elsewhere (analytic);
//! * γ5-hermiticity D† = γ5 D γ5;
//! * a Wilson-clover solve with open boundaries on openQCD's own open-boundary file
//!   (`tests/data/openqcd/gauge.bc_0.bin`, its recorded plaquette checked on reading),
//!   its solution checked with the textbook operator.
//!
//! The clover term σ·F itself comes from `clover_field` on the unmodified links (it is
//! checked against a textbook clover in `tests/clover.rs`); everything the boundary
//! changes is written out here.

mod common;
mod reference_operators;

use qdsl::app::solve::{
    solve_full_on, solve_on, Action, FermionBoundary, Precision, SolveBackend, SolveConfig, Source,
};
use qdsl_core::dsl::variant::TimeBoundary;
use qdsl_core::field::{
    unpack_clover_block, ColourSpinorField, GaugeField, SiteSubset, SpinorLayout,
    CLOVER_BLOCK_REALS,
};
use qdsl_core::gauge::{clover_field, FieldStrengthTrace, OpenBoundary};
use qdsl_core::io::{read_gauge, Check, ReadOptions};
use qdsl_core::lattice::{BoundaryConditions, Lattice, Parity};
use qdsl_runtime::operator::even_odd::Xpay;
use qdsl_runtime::operator::{EvenOddBlocks, EvenOddClover};
use qdsl_runtime::solver::SolverKind;
use reference_operators::*;

type F64 = ColourSpinorField<f64>;

const MASS: f64 = -0.05;
const CSW: f64 = 1.978;
const CF: f64 = 1.3;

fn zero() -> C {
    C::new(0.0, 0.0)
}

/// The textbook operator with `boundary` on a full-lattice field ψ (checkerboard order,
/// [spin][colour] per site, complex f64): the module docs' D, written from the
/// definition (the library's clover field enters only as the plain σ·F term).
fn textbook(u: &GaugeField<f64>, boundary: &OpenBoundary, mu: f64, psi: &[C]) -> Vec<C> {
    let lat = *u.lattice();
    let lt = lat.dims()[3];
    let active = |cb: usize| !boundary.vanishes(lat.coords_of_cb(cb)[3], lt);
    // P ψ, then the hop of the unmodified links (a hop from a vanishing site carries 0).
    let masked: Vec<C> = psi
        .iter()
        .enumerate()
        .map(|(k, z)| if active(k / 12) { *z } else { zero() })
        .collect();
    let wilson = WilsonOperator {
        gauge: u.clone(),
        kappa: 0.0,
        boundary: BoundaryConditions::periodic(),
    };
    let h = wilson.hop(&masked, 1.0);
    let plain = clover_field(u, MASS, CSW);
    let mut out = vec![zero(); psi.len()];
    for cb in 0..lat.volume() {
        let x0 = lat.coords_of_cb(cb)[3];
        if !active(cb) {
            // 1 + iμγ5: the vanishing slices decouple.
            for i in 0..12 {
                let g5 = if i < 6 { 1.0 } else { -1.0 };
                out[12 * cb + i] = psi[12 * cb + i] * C::new(1.0, mu * g5);
            }
            continue;
        }
        let shift = match (x0, boundary.kind) {
            (1, _) => boundary.c_f - 1.0,
            (t, qdsl_core::gauge::OpenBoundaryKind::Open) if t == lt - 2 => {
                boundary.c_f_prime - 1.0
            }
            (t, qdsl_core::gauge::OpenBoundaryKind::Sf) if t == lt - 1 => boundary.c_f_prime - 1.0,
            _ => 0.0,
        };
        let blocks: Vec<_> = plain
            .site(cb)
            .chunks_exact(CLOVER_BLOCK_REALS)
            .map(unpack_clover_block)
            .collect();
        for i in 0..12 {
            let (b, r) = (i / 6, i % 6);
            let a_psi: C = (0..6)
                .map(|c| blocks[b][r][c] * psi[12 * cb + 6 * b + c])
                .sum();
            let g5 = if i < 6 { 1.0 } else { -1.0 };
            out[12 * cb + i] =
                a_psi + psi[12 * cb + i] * shift + C::new(0.0, mu * g5) * psi[12 * cb + i]
                    - h[12 * cb + i] * 0.5;
        }
    }
    out
}

/// The library's full operator M = D − ½H with `boundary` (dagger: M†) on a full field,
/// composed from the even-odd blocks of the two parities' operators (each holds its own
/// D_pp): (M ψ)_r = D_rr ψ_r + h K_rs ψ_s.
struct Library {
    by_parity: [EvenOddClover<f64>; 2],
    lattice: Lattice,
}

impl Library {
    fn new(u: &GaugeField<f64>, boundary: &OpenBoundary, mu: f64) -> Self {
        let (links, a) = boundary
            .clover_fields(u, MASS, CSW, FieldStrengthTrace::Keep)
            .unwrap();
        let op = |p| {
            EvenOddClover::from_clover(links.clone(), &a, mu, p, TimeBoundary::Periodic).unwrap()
        };
        Library {
            by_parity: [op(Parity::Even), op(Parity::Odd)],
            lattice: *u.lattice(),
        }
    }

    fn apply(&self, psi: &[C], dagger: bool) -> Vec<C> {
        let half = 12 * self.lattice.half_volume();
        let part = |p: Parity, data: &[C]| {
            F64::from_data(
                SpinorLayout::wilson(self.lattice, SiteSubset::Single(p)),
                data.to_vec(),
            )
            .unwrap()
        };
        let parts = [
            part(Parity::Even, &psi[..half]),
            part(Parity::Odd, &psi[half..]),
        ];
        let mut out = Vec::with_capacity(psi.len());
        for (r, (op, parity)) in self
            .by_parity
            .iter()
            .zip([Parity::Even, Parity::Odd])
            .enumerate()
        {
            let blocks = op.blocks();
            let mut diagonal = F64::zeros(*parts[r].layout());
            blocks
                .apply_diagonal((), parity, &mut diagonal, &parts[r], dagger)
                .unwrap();
            let mut result = F64::zeros(*parts[r].layout());
            let xpay = Xpay {
                a: 1.0,
                x: &diagonal,
                b: blocks.hop_coefficient(dagger),
            };
            blocks
                .hop((), parity, &mut result, &parts[1 - r], dagger, Some(xpay))
                .unwrap();
            out.extend_from_slice(result.data());
        }
        out
    }
}

fn lattice() -> Lattice {
    Lattice::new([2, 2, 2, 6]).unwrap()
}

fn boundaries() -> [OpenBoundary; 2] {
    [OpenBoundary::open(CF), OpenBoundary::sf(CF, 0.8)]
}

fn random_vector(n: usize, seed: u64) -> Vec<C> {
    let mut rng = TestRng::new(seed);
    (0..n).map(|_| rng.gaussian()).collect()
}

fn unit_vector(n: usize, k: usize) -> Vec<C> {
    let mut e = vec![zero(); n];
    e[k] = C::new(1.0, 0.0);
    e
}

/// The dense matrices (column by column) of the library operator and the textbook one
/// agree on a 2³×6 lattice, for open and SF boundaries, μ = 0 and μ = 0.3.
#[test]
fn dense_open_operator_equals_the_textbook_operator() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 21);
    let n = 12 * lat.volume();
    for boundary in boundaries() {
        for mu in [0.0, 0.3] {
            let lib = Library::new(&u, &boundary, mu);
            let mut worst = 0.0f64;
            for k in 0..n {
                let e = unit_vector(n, k);
                let (ours, theirs) = (lib.apply(&e, false), textbook(&u, &boundary, mu, &e));
                let d = ours
                    .iter()
                    .zip(&theirs)
                    .map(|(a, b)| (a - b).norm())
                    .fold(0.0, f64::max);
                worst = worst.max(d);
            }
            assert!(
                worst < 1e-13,
                "{boundary}, μ = {mu}: column difference {worst:e}"
            );
        }
    }
}

/// No hop crosses the boundary: a point source on the active slice next to each
/// boundary gives nothing on the vanishing slices (the time hop to x0 = L_t − 1 and the
/// wrap to x0 = 0 are gone), while it does reach its interior neighbour.
#[test]
fn no_hop_crosses_the_boundary() {
    let lat = lattice();
    let lt = lat.dims()[3];
    let u = GaugeField::<f64>::random(lat, 5);
    let n = 12 * lat.volume();
    let slice_norm = |v: &[C], t: usize| -> f64 {
        (0..lat.volume())
            .filter(|&cb| lat.coords_of_cb(cb)[3] == t)
            .flat_map(|cb| &v[12 * cb..12 * cb + 12])
            .map(|z| z.norm_sqr())
            .sum::<f64>()
            .sqrt()
    };
    for boundary in boundaries() {
        let lib = Library::new(&u, &boundary, 0.0);
        let last = if boundary.vanishes(lt - 1, lt) {
            lt - 2
        } else {
            lt - 1
        };
        for (source_t, inner_t) in [(1, 2), (last, last - 1)] {
            let cb = lat.cb_index([1, 0, 1, source_t]);
            for spin_colour in [0, 7] {
                let out = lib.apply(&unit_vector(n, 12 * cb + spin_colour), false);
                assert_eq!(slice_norm(&out, 0), 0.0, "{boundary}: reached x0 = 0");
                if boundary.vanishes(lt - 1, lt) {
                    assert_eq!(slice_norm(&out, lt - 1), 0.0, "{boundary}: reached L_t − 1");
                }
                assert!(
                    slice_norm(&out, inner_t) > 0.1,
                    "{boundary}: the interior hop"
                );
            }
        }
    }
}

/// Free field (unit links, F̂ = 0): the operator on a point source is, at the source,
/// m + 4 + c_F − 1 on the improvement slices and m + 4 on the others.
#[test]
fn free_field_diagonal_is_cf_weighted_on_the_boundary_slices() {
    let lat = lattice();
    let lt = lat.dims()[3];
    let u = GaugeField::<f64>::unit(lat);
    let n = 12 * lat.volume();
    for boundary in boundaries() {
        let lib = Library::new(&u, &boundary, 0.0);
        for t in 1..lt {
            if boundary.vanishes(t, lt) {
                continue;
            }
            let k = 12 * lat.cb_index([0, 1, 1, t]) + 4;
            let diagonal = lib.apply(&unit_vector(n, k), false)[k];
            let expected = match boundary.improvement(t, lt) {
                Some(c_f) => MASS + 4.0 + c_f - 1.0,
                None => MASS + 4.0,
            };
            assert!(
                (diagonal - C::new(expected, 0.0)).norm() < 1e-15,
                "{boundary}, x0 = {t}: {diagonal} vs {expected}"
            );
        }
        // The improvement slices are x0 = 1 and L_t − 2 (open) or L_t − 1 (SF).
        let far = if boundary.vanishes(lt - 1, lt) {
            lt - 2
        } else {
            lt - 1
        };
        assert_eq!(boundary.improvement(far, lt), Some(boundary.c_f_prime));
    }
}

fn gamma5(psi: &[C]) -> Vec<C> {
    psi.iter()
        .enumerate()
        .map(|(k, z)| if (k % 12) / 3 < 2 { *z } else { -*z })
        .collect()
}

fn dot(a: &[C], b: &[C]) -> C {
    a.iter().zip(b).map(|(a, b)| a.conj() * b).sum()
}

/// γ5-hermiticity with the boundary: M† = γ5 M γ5, and ⟨φ, M ψ⟩ = ⟨M† φ, ψ⟩.
#[test]
fn open_operator_is_gamma5_hermitian() {
    let lat = lattice();
    let u = GaugeField::<f64>::random(lat, 8);
    let n = 12 * lat.volume();
    let (phi, psi) = (random_vector(n, 1), random_vector(n, 2));
    for boundary in boundaries() {
        let lib = Library::new(&u, &boundary, 0.0);
        let dagger = lib.apply(&psi, true);
        let conjugated = gamma5(&lib.apply(&gamma5(&psi), false));
        assert!(
            relative_difference(&dagger, &conjugated) < 1e-14,
            "{boundary}"
        );
        let lhs = dot(&phi, &lib.apply(&psi, false));
        let rhs = dot(&lib.apply(&phi, true), &psi);
        assert!((lhs - rhs).norm() < 1e-12 * lhs.norm(), "{boundary}");
    }
}

fn openqcd_file() -> GaugeField<f64> {
    let file = read_gauge(
        common::data("openqcd/gauge.bc_0.bin"),
        &ReadOptions::default(),
    )
    .expect("openQCD's open-boundary file reads with the default checks");
    assert!(file
        .checks
        .contains(&Check::OpenTimeBoundary { zero_links: 64 }));
    file.field
}

fn clover_config(solver: SolverKind, boundary: FermionBoundary) -> SolveConfig {
    SolveConfig {
        clover_trace: Default::default(),
        action: Action::Clover,
        kappa: Some(0.135),
        mass: None,
        u0: None,
        csw: Some(CSW),
        mu: None,
        epsilon_naik: None,
        solver,
        precision: Precision::F64,
        tolerance: 1e-11,
        max_iterations: 5000,
        source: Source::Gaussian { seed: 3 },
        boundary,
    }
}

/// A Wilson-clover solve with open boundaries on openQCD's file (κ = 0.135,
/// c_sw = 1.978, c_F = 1.3, the parameters it was written for): the even-odd solve
/// reaches its tolerance, and the full system M ψ = η for a point source on an interior
/// slice gives ψ with ‖η − D ψ‖/‖η‖ < 1e-10 under the textbook operator, ψ = 0 on the
/// vanishing slices.
#[test]
fn wilson_clover_solve_with_open_boundaries_on_the_openqcd_file() {
    let gauge = openqcd_file();
    let lat = *gauge.lattice();
    let boundary = OpenBoundary::open(CF);
    let open = FermionBoundary::Open(boundary);
    for solver in [SolverKind::BiCgStab, SolverKind::Cgnr] {
        let report = solve_on(
            &SolveBackend::Cpu,
            &gauge,
            &clover_config(solver, open),
            None,
        )
        .unwrap();
        assert!(
            report.result.is_converged(),
            "{solver:?}: {:?}",
            report.result
        );
        assert!(
            report.recomputed_residual < 1e-10,
            "{}",
            report.recomputed_residual
        );
        assert!(report
            .parameters
            .contains("open time boundaries, c_F = 1.3"));
    }

    let layout = SpinorLayout::wilson(lat, SiteSubset::Full);
    let eta = F64::point_source(layout, 0, [1, 2, 3, 2], 1, 2).unwrap();
    let config = clover_config(SolverKind::BiCgStab, open);
    let full = solve_full_on(&SolveBackend::Cpu, &gauge, &config, &eta, None).unwrap();
    // The clover system's mass is m = 1/(2κ) − 4; the textbook uses MASS, so compare
    // with the κ of the file through its own mass.
    let m = 0.5 / 0.135 - 4.0;
    let psi = to_c64(&full.solution);
    let d_psi = textbook_with_mass(&gauge, &boundary, m, &psi);
    let residual = relative_difference(&d_psi, &to_c64(&eta));
    assert!(residual < 1e-10, "textbook residual {residual:e}");
    for cb in 0..lat.volume() {
        if boundary.vanishes(lat.coords_of_cb(cb)[3], lat.dims()[3]) {
            assert!(psi[12 * cb..12 * cb + 12].iter().all(|z| z.norm() == 0.0));
        }
    }
}

/// [`textbook`] at another bare mass (the clover part from `clover_field` at that mass).
fn textbook_with_mass(u: &GaugeField<f64>, boundary: &OpenBoundary, m: f64, psi: &[C]) -> Vec<C> {
    // D(m) = D(MASS) + (m − MASS) on the active slices (the unit matrix elsewhere).
    let lat = *u.lattice();
    let lt = lat.dims()[3];
    let mut out = textbook(u, boundary, 0.0, psi);
    for cb in 0..lat.volume() {
        if !boundary.vanishes(lat.coords_of_cb(cb)[3], lt) {
            let range = 12 * cb..12 * cb + 12;
            for (o, p) in out[range.clone()].iter_mut().zip(&psi[range]) {
                *o += p * (m - MASS);
            }
        }
    }
    out
}

/// Wilson with open boundaries is the clover system at c_sw = 0 (mass normalisation):
/// its even-odd solve converges and the report says so; staggered actions refuse open
/// boundaries, and a source left empty by the projection is an error, not a silent
/// zero solution.
#[test]
fn wilson_solves_and_bad_requests_are_clear_errors() {
    let gauge = openqcd_file();
    let open = FermionBoundary::Open(OpenBoundary::open(CF));
    let wilson = SolveConfig {
        clover_trace: Default::default(),
        action: Action::Wilson,
        csw: None,
        ..clover_config(SolverKind::BiCgStab, open)
    };
    let report = solve_on(&SolveBackend::Cpu, &gauge, &wilson, None).unwrap();
    assert!(report.result.is_converged());
    assert!(
        report.parameters.contains("mass normalisation")
            || report.parameters.contains("normalised")
    );

    let point = SolveConfig {
        clover_trace: Default::default(),
        source: Source::Point,
        ..clover_config(SolverKind::BiCgStab, open)
    };
    let err = solve_on(&SolveBackend::Cpu, &gauge, &point, None).unwrap_err();
    assert!(err.to_string().contains("vanish"), "{err}");

    let staggered = SolveConfig {
        clover_trace: Default::default(),
        action: Action::Staggered,
        kappa: None,
        csw: None,
        mass: Some(0.1),
        ..clover_config(SolverKind::Cgnr, open)
    };
    let err = solve_on(&SolveBackend::Cpu, &gauge, &staggered, None).unwrap_err();
    assert!(err.to_string().contains("not to staggered"), "{err}");
}
