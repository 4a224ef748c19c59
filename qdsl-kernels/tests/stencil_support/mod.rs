//! Shared pieces of the stencil tests: random fields, a textbook-independent field store
//! (full lattice, lexicographic, f64), and comparisons. Nothing here uses the DSL.
#![allow(dead_code, clippy::needless_range_loop)]

use qdsl_core::field::{
    haar_su3, ColourSpinorField, GaugeField, RandomStream, SiteSubset, SpinorLayout, StreamDomain,
};
use qdsl_core::gauge::GaugeTransform;
use qdsl_core::lattice::{Coords, Lattice, Parity};
use qdsl_core::math::ColourMatrix;
use qdsl_core::Complex;

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
