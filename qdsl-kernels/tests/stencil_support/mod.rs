//! Shared pieces of the stencil tests: random fields, a textbook-independent field store
//! (full lattice, lexicographic, f64), and comparisons. Nothing here uses the DSL.
#![allow(dead_code, clippy::needless_range_loop)]

use qdsl_core::field::{
    haar_su3, ColourSpinorField, GaugeField, RandomStream, SiteSubset, SpinorLayout, StreamDomain,
};
use qdsl_core::gauge::GaugeTransform;
use qdsl_core::io::{read_gauge, ReadOptions};
use qdsl_core::lattice::{Coords, Lattice, Parity};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Complex;
use std::path::PathBuf;

pub type C = Complex<f64>;

/// A Haar-random SU(3) gauge field.
pub fn random_gauge(lat: Lattice, seed: u64) -> GaugeField<f64> {
    GaugeField::from_fn(lat, |x, mu| {
        let mut s = RandomStream::new(
            seed,
            StreamDomain::GaugeLinks,
            (4 * lat.lex_index(x) + mu) as u64,
        );
        haar_su3(&mut s)
    })
}

/// A random non-unitary 3×3 complex matrix field (smeared-link-like; for recon 18 only).
pub fn random_matrices(lat: Lattice, seed: u64) -> GaugeField<f64> {
    GaugeField::from_fn(lat, |x, mu| {
        let mut s = RandomStream::new(
            seed,
            StreamDomain::User(7),
            (4 * lat.lex_index(x) + mu) as u64,
        );
        ColourMatrix::from_fn(|_, _| s.gaussian_complex())
    })
}

/// A random gauge transformation g(x) ∈ SU(3) (qdsl-core's, itself tested for unitarity,
/// Haar moments and gauge invariance of loops).
pub fn random_transform(lat: Lattice, seed: u64) -> GaugeTransform<f64> {
    GaugeTransform::random(lat, seed)
}

/// U^g_μ(x) = g(x) U_μ(x) g(x+μ̂)†.
pub fn transform_links(g: &GaugeTransform<f64>, u: &GaugeField<f64>) -> GaugeField<f64> {
    let mut ug = u.clone();
    g.apply_to_links(&mut ug).unwrap();
    ug
}

/// (gψ)(x) = g(x) ψ(x), every spin (full or single-parity field).
pub fn transform_field(
    g: &GaugeTransform<f64>,
    f: &ColourSpinorField<f64>,
) -> ColourSpinorField<f64> {
    let mut out = f.clone();
    g.apply_to_fermion(&mut out).unwrap();
    out
}

/// max_i |a_i − b_i| over the components of two fields of one layout.
pub fn max_abs_diff(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> f64 {
    a.data()
        .iter()
        .zip(b.data())
        .map(|(p, q)| (p - q).norm())
        .fold(0.0, f64::max)
}

/// A field on the full lattice as plain nested arrays: psi[lex][spin][colour].
pub type Plain = Vec<Vec<[C; 3]>>;

/// Reads a full-lattice host field into [`Plain`].
pub fn to_plain(f: &ColourSpinorField<f64>) -> Plain {
    let l = f.layout();
    let lat = *l.lattice();
    (0..lat.volume())
        .map(|lex| {
            let x = lat.coords_of_lex(lex);
            (0..l.nspin())
                .map(|s| std::array::from_fn(|a| f.get(0, x, s, a).unwrap()))
                .collect()
        })
        .collect()
}

/// The restriction of a plain field to a layout's sites.
pub fn from_plain(p: &Plain, layout: SpinorLayout) -> ColourSpinorField<f64> {
    let lat = *layout.lattice();
    ColourSpinorField::from_fn(layout, |_, x, s, a| p[lat.lex_index(x)][s][a])
}

/// The sites of a subset.
pub fn sites(lat: &Lattice, subset: SiteSubset) -> Vec<Coords> {
    lat.sites_lex()
        .filter(|x| match subset {
            SiteSubset::Full => true,
            SiteSubset::Single(p) => lat.parity(*x) == p,
        })
        .collect()
}

/// max |a − b| / max |b| over the layout's sites, comparing a generated field (any
/// precision) with a plain f64 reference.
pub fn rel_diff<T: qdsl_core::Real>(a: &ColourSpinorField<T>, want: &Plain) -> f64 {
    let l = a.layout();
    let lat = *l.lattice();
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for x in sites(&lat, l.subset()) {
        for s in 0..l.nspin() {
            for c in 0..3 {
                let z = a.get(0, x, s, c).unwrap();
                let z = C::new(z.re.to_f64(), z.im.to_f64());
                let w = want[lat.lex_index(x)][s][c];
                diff = diff.max((z - w).norm());
                scale = scale.max(w.norm());
            }
        }
    }
    diff / scale
}

/// ⟨a, b⟩ = Σ conj(a) b over a field.
pub fn inner(a: &ColourSpinorField<f64>, b: &ColourSpinorField<f64>) -> C {
    a.data()
        .iter()
        .zip(b.data())
        .map(|(x, y)| x.conj() * y)
        .sum()
}

/// The shift of coordinates with wrap count.
pub fn shift(lat: &Lattice, x: Coords, mu: usize, n: isize) -> (Coords, isize) {
    lat.shift(x, mu, n)
}

/// Parity of output sites as a subset.
pub fn subset_of(p: Option<Parity>) -> SiteSubset {
    p.map_or(SiteSubset::Full, SiteSubset::Single)
}

/// DeGrand–Rossi γ_x, γ_y, γ_z, γ_t written out as dense complex 4 × 4 matrices.
pub fn gammas() -> [[[C; 4]; 4]; 4] {
    let o = C::new(0.0, 0.0);
    let one = C::new(1.0, 0.0);
    let i = C::new(0.0, 1.0);
    [
        [[o, o, o, i], [o, o, i, o], [o, -i, o, o], [-i, o, o, o]],
        [
            [o, o, o, -one],
            [o, o, one, o],
            [o, one, o, o],
            [-one, o, o, o],
        ],
        [[o, o, i, o], [o, o, o, -i], [-i, o, o, o], [o, i, o, o]],
        [
            [o, o, one, o],
            [o, o, o, one],
            [one, o, o, o],
            [o, one, o, o],
        ],
    ]
}

/// (P v)_s = Σ_t P_st v_t for a dense 4 × 4 spin matrix and a 4 × 3 site.
pub fn spin_mul(p: &[[C; 4]; 4], v: &[[C; 3]; 4]) -> [[C; 3]; 4] {
    std::array::from_fn(|s| std::array::from_fn(|a| (0..4).map(|t| p[s][t] * v[t][a]).sum()))
}

/// 1 + sign · γ_μ, dense (from [`gammas`]).
pub fn projector(mu: usize, sign: f64) -> [[C; 4]; 4] {
    let g = gammas();
    std::array::from_fn(|s| {
        std::array::from_fn(|t| {
            let one = if s == t { 1.0 } else { 0.0 };
            C::new(one, 0.0) + g[mu][s][t] * sign
        })
    })
}

/// The textbook Wilson hop on the full lattice (dense γ matrices, links read directly),
///
/// (H ψ)(x) = Σ_μ [(1 − γ_μ) U_μ(x) ψ(x + μ̂) + (1 + γ_μ) U_μ†(x − μ̂) ψ(x − μ̂)],
///
/// or its adjoint H† (projector signs swapped) for `dagger`; a hop across the time
/// boundary is negated for `antiperiodic`; with Dirichlet `blocks` b, a hop from x to a
/// y in another block (x_μ / b_μ ≠ y_μ / b_μ) is skipped.
pub fn textbook_wilson_hop(
    u: &GaugeField<f64>,
    psi: &Plain,
    dagger: bool,
    antiperiodic: bool,
    blocks: Option<[usize; 4]>,
) -> Plain {
    let lat = *u.lattice();
    let s = if dagger { -1.0 } else { 1.0 };
    let mut out = Vec::with_capacity(lat.volume());
    for x in lat.sites_lex() {
        let mut site = [[C::new(0.0, 0.0); 3]; 4];
        for mu in 0..4 {
            for (n, sign) in [(1isize, -s), (-1, s)] {
                let (y, wraps) = shift(&lat, x, mu, n);
                if blocks.is_some_and(|b| x[mu] / b[mu] != y[mu] / b[mu]) {
                    continue;
                }
                let bc = if antiperiodic && mu == 3 && wraps % 2 != 0 {
                    -1.0
                } else {
                    1.0
                };
                let m = if n > 0 {
                    *u.link_at(x, mu)
                } else {
                    u.link_at(y, mu).adjoint()
                };
                let py = &psi[lat.lex_index(y)];
                let moved: [[C; 3]; 4] = std::array::from_fn(|sp| {
                    std::array::from_fn(|c| (0..3).map(|b| m.0[c][b] * py[sp][b]).sum())
                });
                let w = spin_mul(&projector(mu, sign), &moved);
                for sp in 0..4 {
                    for c in 0..3 {
                        site[sp][c] += w[sp][c] * bc;
                    }
                }
            }
        }
        out.push(site.to_vec());
    }
    out
}

/// Textbook improved staggered hop on the full lattice (periodic; phases in the links):
/// out(x) = Σ_μ F_μ(x)χ(x+μ̂) − F_μ†(x−μ̂)χ(x−μ̂) + L_μ(x)χ(x+3μ̂) − L_μ†(x−3μ̂)χ(x−3μ̂).
pub fn textbook_improved_staggered_hop(
    fat: &GaugeField<f64>,
    long: &GaugeField<f64>,
    chi: &Plain,
) -> Plain {
    let lat = *fat.lattice();
    let mut out = vec![vec![[C::new(0.0, 0.0); 3]; 1]; lat.volume()];
    for (lex, o) in out.iter_mut().enumerate() {
        let x = lat.coords_of_lex(lex);
        for mu in 0..4 {
            for (links, n) in [(fat, 1), (fat, -1), (long, 3), (long, -3)] {
                let (y, _) = lat.shift(x, mu, n);
                let (m, sign): (ColourMatrix<f64>, f64) = if n > 0 {
                    (*links.link_at(x, mu), 1.0)
                } else {
                    (links.link_at(y, mu).adjoint(), -1.0)
                };
                let source = &chi[lat.lex_index(y)][0];
                for (a, row) in m.0.iter().enumerate() {
                    for (z, s) in row.iter().zip(source) {
                        o[0][a] += z * s * sign;
                    }
                }
            }
        }
    }
    out
}

/// MILC's asqtad links of its 8⁴ sample configuration (u0 = 0.502), read from the files
/// MILC wrote.
pub fn milc(name: &str) -> GaugeField<f64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/milc")
        .join(name);
    read_gauge(path, &ReadOptions::smeared_links())
        .expect("MILC smeared links")
        .field
}
