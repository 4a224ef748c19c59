//! The Sheikholeslami–Wohlert (clover) term: the field strength from the four clover
//! leaves, the site-local matrix A(x) of the Wilson-clover operator, and its inverse.
//!
//! # Conventions (Lüscher, Sint, Sommer, Weisz, Nucl. Phys. B478 (1996) 365; openQCD)
//!
//! The clover Q_μν(x) is the sum of the four plaquette leaves in the μν plane that start
//! and end at x, each traversed counter-clockwise (first step along +μ or its rotation):
//!
//! Q_μν(x) = U_μ(x) U_ν(x+μ̂) U_μ†(x+ν̂) U_ν†(x)
//!         + U_ν(x) U_μ†(x+ν̂−μ̂) U_ν†(x−μ̂) U_μ(x−μ̂)
//!         + U_μ†(x−μ̂) U_ν†(x−μ̂−ν̂) U_μ(x−μ̂−ν̂) U_ν(x−ν̂)
//!         + U_ν†(x−ν̂) U_μ(x−ν̂) U_ν(x−ν̂+μ̂) U_μ†(x),
//!
//! so Q_νμ = Q_μν†. The field strength is anti-hermitian:
//!
//! F̂_μν(x) = (1/8) [Q_μν(x) − Q_μν†(x)]                       ([`FieldStrengthTrace::Keep`]),
//! F̂_μν(x) = (1/8) [Q_μν(x) − Q_μν†(x)] − (1/3) tr{…} · 1      ([`FieldStrengthTrace::Remove`]).
//!
//! The trace tr F̂_μν = (i/4) Im tr Q_μν is **not** zero for SU(3) links: tr of an SU(3)
//! plaquette is complex (tr U = 3 − ½ tr(aF)² − (i/6) tr(aF)³ + …, and tr F³ ≠ 0 for
//! SU(3)), so the four-leaf average lies in the Lie algebra of U(3). The convention is a
//! knob ([`FieldStrengthTrace`], [`clover_field_with`]); the default keeps the trace, as
//! QUDA does (`computeFmunu`, include/kernels/field_strength_tensor.cuh: F = (Q − Q†)/8
//! used as it is by `clover_compute.cuh`) and openQCD does (`ftensor.c`: "the field tensor
//! calculated here is in the Lie algebra of U(3) not SU(3)"; its SW term uses the same
//! leaves). Removing it (qdsl's convention before) projects F̂ to su(3); the two clover
//! terms differ by (i c_sw/2) Σ_{μ<ν} σ_μν (tr F̂_μν / 3) ⊗ 1_colour. With
//! σ_μν = (i/2)[γ_μ, γ_ν]
//! ([`crate::math::sigma`], hermitian) the Wilson-clover operator in mass normalisation is
//!
//! M = A − ½ H,  A(x) = (m + 4)·1 + (i c_sw/4) Σ_{μ,ν} σ_μν F̂_μν(x)
//!                   = (m + 4)·1 + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν(x),
//!
//! H the Wilson hop with (1 − γ_μ) U_μ(x) ψ(x+μ̂) forwards (qdsl-kernels' `WilsonHop`, the
//! same sign convention as Lüscher et al.'s D_w = ½{γ_μ(∇_μ + ∇*_μ) − ∇*_μ∇_μ}). In terms
//! of the hermitian F_μν = −i F̂_μν = (Q_μν − Q_μν†)/(8i) (traceless part) this reads
//! A = (m + 4) − (c_sw/2) Σ_{μ<ν} σ_μν F_μν. A(x) is hermitian (σ hermitian, F̂
//! anti-hermitian) and commutes with γ5, so it is stored as two 6 × 6 chiral blocks
//! ([`CloverField`]). On unit links F̂ = 0 and A = (m + 4)·1.
//!
//! The sign is the one that cancels the O(a) Pauli term of the Wilson term at tree level
//! (c_sw = 1): with U_μ(x) = exp(a A_μ) and D_μ = ∂_μ + A_μ, F̂_μν = a² [D_μ, D_ν] + O(a⁴)
//! (the constant abelian field of `tests/clover.rs` checks this orientation), and since
//! γ_μγ_ν = δ_μν − iσ_μν, D² = (γ·D)² + (i/2) σ_μν [D_μ, D_ν]; the Wilson term −(a/2) D²
//! therefore carries −(i a/4) σ_μν [D_μ, D_ν], which +(i c_sw/4) σ_μν F̂_μν / a removes.
//!
//! Twisted clover D = A + iμγ5 is not hermitian and does not fit the packed layout, but
//! its inverse does as two hermitian fields: D⁻¹ = B − iμγ5 C with C = (A² + μ²)⁻¹,
//! B = A C ([`invert_twisted_clover`]).

use crate::field::{
    pack_clover_block, unpack_clover_block, CloverField, GaugeField, SiteSubset, CLOVER_BLOCK_DIM,
    CLOVER_BLOCK_REALS, CLOVER_SITE_REALS,
};
use crate::math::{sigma, ColourMatrix, Gamma, SpinMatrix, NC};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;
use thiserror::Error;

type C64 = Complex<f64>;
type Block = [[C64; CLOVER_BLOCK_DIM]; CLOVER_BLOCK_DIM];

/// Why a clover field could not be inverted.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CloverError {
    /// A chiral block holds a NaN or an infinity.
    #[error("clover block {block} of site {site} ({subset:?}) holds a non-finite entry")]
    NonFinite {
        /// Site index within the field's subset (checkerboard index on the full lattice).
        site: usize,
        /// The sites the field holds.
        subset: SiteSubset,
        /// The chiral block: 0 (spins 0, 1) or 1 (spins 2, 3).
        block: usize,
    },
    /// A chiral block is singular to working precision.
    #[error(
        "clover block {block} of site {site} ({subset:?}) is singular: pivot {pivot:e} \
         against a largest entry of {scale:e}"
    )]
    Singular {
        /// Site index within the field's subset (checkerboard index on the full lattice).
        site: usize,
        /// The sites the field holds.
        subset: SiteSubset,
        /// The chiral block: 0 (spins 0, 1) or 1 (spins 2, 3).
        block: usize,
        /// The largest pivot candidate found, |p|.
        pivot: f64,
        /// The largest |entry| of the block.
        scale: f64,
    },
}

/// The clover Q_μν(x) (module docs: the four counter-clockwise leaves at x in the μν
/// plane), for the site with checkerboard index `cb`, in f64. Q_νμ = Q_μν†.
pub fn clover_leaves<T: Real>(
    u: &GaugeField<T>,
    cb: usize,
    mu: usize,
    nu: usize,
) -> ColourMatrix<f64> {
    let lat = u.lattice();
    let link = |site: usize, dir: usize| u.link(site, dir).cast::<f64>();
    let step = |site: usize, dir: usize, s: isize| lat.neighbour_cb(site, dir, s);
    let (x_pmu, x_pnu) = (step(cb, mu, 1), step(cb, nu, 1));
    let (x_mmu, x_mnu) = (step(cb, mu, -1), step(cb, nu, -1));
    let x_pnu_mmu = step(x_pnu, mu, -1);
    let x_mmu_mnu = step(x_mmu, nu, -1);
    let x_mnu_pmu = step(x_mnu, mu, 1);
    // U_μ(x) U_ν(x+μ̂) [U_ν(x) U_μ(x+ν̂)]†
    let leaf1 = (link(cb, mu) * link(x_pmu, nu)).mul_adjoint(&(link(cb, nu) * link(x_pnu, mu)));
    // U_ν(x) [U_ν(x−μ̂) U_μ(x+ν̂−μ̂)]† U_μ(x−μ̂)
    let leaf2 =
        link(cb, nu).mul_adjoint(&(link(x_mmu, nu) * link(x_pnu_mmu, mu))) * link(x_mmu, mu);
    // [U_ν(x−μ̂−ν̂) U_μ(x−μ̂)]† U_μ(x−μ̂−ν̂) U_ν(x−ν̂)
    let leaf3 = (link(x_mmu_mnu, nu) * link(x_mmu, mu))
        .adjoint_mul(&(link(x_mmu_mnu, mu) * link(x_mnu, nu)));
    // U_ν†(x−ν̂) U_μ(x−ν̂) U_ν(x−ν̂+μ̂) U_μ†(x)
    let leaf4 = link(x_mnu, nu)
        .adjoint_mul(&(link(x_mnu, mu) * link(x_mnu_pmu, nu)))
        .mul_adjoint(&link(cb, mu));
    leaf1 + leaf2 + leaf3 + leaf4
}

/// Whether the clover term's field strength keeps the trace of (Q − Q†)/8 (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FieldStrengthTrace {
    /// F̂ = (Q − Q†)/8 in u(3): QUDA's and openQCD's convention (the default).
    #[default]
    Keep,
    /// F̂ = (Q − Q†)/8 − (1/3) tr(…)·1, projected to su(3).
    Remove,
}

impl FieldStrengthTrace {
    /// The names the command line takes: "keep", "remove".
    pub const NAMES: [&'static str; 2] = ["keep", "remove"];

    /// The convention's name.
    pub fn name(self) -> &'static str {
        match self {
            FieldStrengthTrace::Keep => Self::NAMES[0],
            FieldStrengthTrace::Remove => Self::NAMES[1],
        }
    }
}

impl std::str::FromStr for FieldStrengthTrace {
    type Err = String;

    /// "keep" or "remove" (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, String> {
        [FieldStrengthTrace::Keep, FieldStrengthTrace::Remove]
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown field-strength trace convention {s:?}: expected keep or remove")
            })
    }
}

/// The anti-hermitian field strength F̂_μν(x) = (1/8)[Q_μν(x) − Q_μν†(x)], with its trace
/// removed if `trace` says so (module docs), in f64.
pub fn field_strength<T: Real>(
    u: &GaugeField<T>,
    cb: usize,
    mu: usize,
    nu: usize,
    trace: FieldStrengthTrace,
) -> ColourMatrix<f64> {
    let q = clover_leaves(u, cb, mu, nu);
    let f = (q - q.adjoint()).scale(0.125);
    match trace {
        FieldStrengthTrace::Keep => f,
        FieldStrengthTrace::Remove => f - ColourMatrix::scalar(f.trace() / NC as f64),
    }
}

/// The six σ_μν, μ < ν, in the order (01, 02, 03, 12, 13, 23) with their (μ, ν).
fn sigmas() -> Vec<(usize, usize, SpinMatrix<f64>)> {
    let mut out = Vec::with_capacity(6);
    for mu in 0..4 {
        for nu in mu + 1..4 {
            out.push((mu, nu, sigma(Gamma::DIRECTIONS[mu], Gamma::DIRECTIONS[nu])));
        }
    }
    out
}

/// The 72 packed reals of A(x) = (m + 4)·1 + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν(x) at the site
/// `cb`, computed in f64: block b, row 3s' + a, column 3t' + c holds
/// (m + 4) δ + (i c_sw/2) Σ_{μ<ν} (σ_μν)_{2b+s', 2b+t'} (F̂_μν)_{ac}.
fn clover_site<T: Real>(
    u: &GaugeField<T>,
    cb: usize,
    diagonal: f64,
    c_sw: f64,
    trace: FieldStrengthTrace,
    sig: &[(usize, usize, SpinMatrix<f64>)],
    out: &mut [T],
) {
    let f: Vec<ColourMatrix<f64>> = sig
        .iter()
        .map(|&(mu, nu, _)| field_strength(u, cb, mu, nu, trace))
        .collect();
    let coefficient = C64::new(0.0, 0.5 * c_sw);
    let mut packed = [0.0f64; CLOVER_SITE_REALS];
    for b in 0..2 {
        let block: Block = std::array::from_fn(|r| {
            std::array::from_fn(|c| {
                let (s, t) = (2 * b + r / NC, 2 * b + c / NC);
                let mut z = C64::new(if r == c { diagonal } else { 0.0 }, 0.0);
                for ((_, _, sm), fm) in sig.iter().zip(&f) {
                    z += coefficient * sm.0[s][t] * fm.0[r % NC][c % NC];
                }
                z
            })
        });
        pack_clover_block(&block, &mut packed[b * CLOVER_BLOCK_REALS..]);
    }
    for (o, p) in out.iter_mut().zip(packed) {
        *o = T::from_f64(p);
    }
}

/// The clover field A(x) = (m + 4)·1 + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν(x) on the full
/// lattice (module docs) in the default convention ([`FieldStrengthTrace::Keep`]):
/// [`clover_field_with`].
pub fn clover_field<T: Real>(u: &GaugeField<T>, mass: f64, c_sw: f64) -> CloverField<T> {
    clover_field_with(u, mass, c_sw, FieldStrengthTrace::default())
}

/// The clover field A(x) = (m + 4)·1 + (i c_sw/2) Σ_{μ<ν} σ_μν F̂_μν(x) on the full
/// lattice with the field strength's `trace` kept or removed (module docs), computed in
/// f64 from the links and rounded to `T`; rayon over sites. `mass` is the bare mass m of
/// M = A − ½H. Host and GPU operators both take this field (the device clover term is
/// uploaded from it).
pub fn clover_field_with<T: Real>(
    u: &GaugeField<T>,
    mass: f64,
    c_sw: f64,
    trace: FieldStrengthTrace,
) -> CloverField<T> {
    let lattice = *u.lattice();
    let sig = sigmas();
    let mut field = CloverField::zeros(lattice, SiteSubset::Full);
    field
        .data_mut()
        .par_chunks_mut(CLOVER_SITE_REALS)
        .enumerate()
        .for_each(|(cb, site)| clover_site(u, cb, mass + 4.0, c_sw, trace, &sig, site));
    field
}

/// The inverse of a 6 × 6 complex matrix by Gauss–Jordan elimination with partial
/// pivoting in f64, or the (pivot, scale) that shows it singular. Pivoting (rather than
/// Cholesky) keeps indefinite blocks, which occur at negative masses on rough fields,
/// invertible. The result is made exactly hermitian, (X + X†)/2, since A⁻¹ of a
/// hermitian A is hermitian.
fn invert_block(a: &Block) -> Result<Block, (f64, f64)> {
    let n = CLOVER_BLOCK_DIM;
    let scale = a.iter().flatten().map(|z| z.norm()).fold(0.0f64, f64::max);
    let mut m = *a;
    let mut inv: Block = std::array::from_fn(|r| {
        std::array::from_fn(|c| C64::new(if r == c { 1.0 } else { 0.0 }, 0.0))
    });
    for col in 0..n {
        let pivot_row = (col..n).fold(col, |best, r| {
            if m[r][col].norm() > m[best][col].norm() {
                r
            } else {
                best
            }
        });
        let pivot = m[pivot_row][col];
        if pivot.norm() <= 64.0 * f64::EPSILON * scale || !pivot.norm().is_finite() {
            return Err((pivot.norm(), scale));
        }
        m.swap(col, pivot_row);
        inv.swap(col, pivot_row);
        let p_inv = pivot.inv();
        for j in 0..n {
            m[col][j] *= p_inv;
            inv[col][j] *= p_inv;
        }
        for r in (0..n).filter(|&r| r != col) {
            let f = m[r][col];
            for j in 0..n {
                let (mc, ic) = (m[col][j], inv[col][j]);
                m[r][j] -= f * mc;
                inv[r][j] -= f * ic;
            }
        }
    }
    Ok(hermitian_part(&inv))
}

/// The site-wise inverse A⁻¹(x) of a clover field (on the full lattice or one parity):
/// each hermitian 6 × 6 chiral block inverted in f64 (Gauss–Jordan, partial pivoting)
/// and rounded to `T`. A block with a non-finite entry, or one singular to working
/// precision (pivot ≤ 64 ε · max|A_rc|), is an error naming the site and block.
pub fn invert_clover<T: Real>(a: &CloverField<T>) -> Result<CloverField<T>, CloverError> {
    map_blocks(a, invert_block)
}

/// The inverse of the twisted clover term D = A + iμγ5 (γ5 = +1 on block 0, −1 on
/// block 1), as two hermitian clover fields: since A commutes with γ5,
///
/// D⁻¹ = (A − iμγ5)(A² + μ²)⁻¹ = B − iμγ5 C,  C = (A² + μ²)⁻¹,  B = A C,
///
/// and D†⁻¹ = B + iμγ5 C. For μ ≠ 0, A² + μ² is positive definite on every block, so
/// the inverse exists whatever A is (the point of the twist).
#[derive(Clone, Debug, PartialEq)]
pub struct TwistedCloverInverse<T: Real> {
    /// B = A (A² + μ²)⁻¹, hermitian.
    pub b: CloverField<T>,
    /// C = (A² + μ²)⁻¹, hermitian.
    pub c: CloverField<T>,
    /// The twist μ.
    pub mu: f64,
}

/// D⁻¹ = B − iμγ5 C for D = A + iμγ5 ([`TwistedCloverInverse`]), each block in f64 and
/// rounded to `T`; errors as [`invert_clover`] (a block of A² + μ² singular, μ = 0 and
/// A singular).
pub fn invert_twisted_clover<T: Real>(
    a: &CloverField<T>,
    mu: f64,
) -> Result<TwistedCloverInverse<T>, CloverError> {
    let c_of = |x: &Block| invert_block(&square_plus(x, mu * mu));
    let c = map_blocks(a, c_of)?;
    let b = map_blocks(a, |x| Ok(hermitian_part(&product(x, &c_of(x)?))))?;
    Ok(TwistedCloverInverse { b, c, mu })
}

/// x y for 6 × 6 blocks.
fn product(x: &Block, y: &Block) -> Block {
    std::array::from_fn(|r| {
        std::array::from_fn(|c| (0..CLOVER_BLOCK_DIM).map(|k| x[r][k] * y[k][c]).sum())
    })
}

/// x² + s·1.
fn square_plus(x: &Block, s: f64) -> Block {
    let mut sq = product(x, x);
    for (r, row) in sq.iter_mut().enumerate() {
        row[r] += s;
    }
    sq
}

/// (x + x†)/2.
fn hermitian_part(x: &Block) -> Block {
    std::array::from_fn(|r| std::array::from_fn(|c| (x[r][c] + x[c][r].conj()) * 0.5))
}

/// Applies `f` to every chiral block of `a` (unpacked to f64), packing the hermitian
/// results into a field of the same lattice and subset; `f`'s (pivot, scale) failure and
/// non-finite input blocks become errors naming the site and block (the first failing site).
fn map_blocks<T: Real>(
    a: &CloverField<T>,
    f: impl Fn(&Block) -> Result<Block, (f64, f64)> + Sync,
) -> Result<CloverField<T>, CloverError> {
    let subset = a.subset();
    // Collected per site and then searched in site order, so the error reported is the
    // first failing site's whatever order the threads finished in.
    let sites: Vec<Result<Vec<T>, CloverError>> = a
        .data()
        .par_chunks(CLOVER_SITE_REALS)
        .enumerate()
        .map(|(site, reals)| {
            let mut out = vec![T::zero(); CLOVER_SITE_REALS];
            for block in 0..2 {
                let range = block * CLOVER_BLOCK_REALS..(block + 1) * CLOVER_BLOCK_REALS;
                let packed: Vec<f64> = reals[range.clone()]
                    .iter()
                    .map(|&x| Real::to_f64(x))
                    .collect();
                if packed.iter().any(|x| !x.is_finite()) {
                    return Err(CloverError::NonFinite {
                        site,
                        subset,
                        block,
                    });
                }
                let result = f(&unpack_clover_block(&packed)).map_err(|(pivot, scale)| {
                    CloverError::Singular {
                        site,
                        subset,
                        block,
                        pivot,
                        scale,
                    }
                })?;
                let mut packed_result = [0.0f64; CLOVER_BLOCK_REALS];
                pack_clover_block(&result, &mut packed_result);
                for (o, p) in out[range].iter_mut().zip(packed_result) {
                    *o = T::from_f64(p);
                }
            }
            Ok(out)
        })
        .collect();
    let data = sites.into_iter().collect::<Result<Vec<_>, _>>()?.concat();
    // The length is that of `a`, which is valid for its lattice and subset.
    let mut result = CloverField::zeros(*a.lattice(), subset);
    result.data_mut().copy_from_slice(&data);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::clover_block_entry;
    use crate::lattice::Lattice;

    fn lattice() -> Lattice {
        Lattice::new([4, 4, 4, 4]).unwrap()
    }

    /// Unit links: every leaf is 1, F̂ = 0, and A = (m + 4)·1 exactly.
    #[test]
    fn unit_links_give_a_multiple_of_the_identity() {
        let u = GaugeField::<f64>::unit(lattice());
        let a = clover_field(&u, -0.3, 1.7);
        for site in 0..lattice().volume() {
            for b in 0..2 {
                let block = &a.site(site)[b * 36..b * 36 + 36];
                for r in 0..6 {
                    for c in 0..6 {
                        let want = if r == c { 3.7 } else { 0.0 };
                        assert_eq!(clover_block_entry(block, r, c), C64::new(want, 0.0));
                    }
                }
            }
        }
    }

    /// F̂ is anti-hermitian and F̂_νμ = −F̂_μν (Q_νμ = Q_μν†) in both conventions, on a
    /// random field; removing the trace leaves it traceless, and keeping it leaves a trace
    /// that is not zero (the leaves' Im tr), their difference exactly that trace over 3.
    #[test]
    fn field_strength_is_antihermitian_and_antisymmetric_with_or_without_its_trace() {
        let u = GaugeField::<f64>::random(lattice(), 11);
        let mut largest_trace = 0.0_f64;
        for cb in [0, 37, 200] {
            for mu in 0..4 {
                for nu in 0..4 {
                    let (keep, remove) = (FieldStrengthTrace::Keep, FieldStrengthTrace::Remove);
                    let f = field_strength(&u, cb, mu, nu, remove);
                    let g = field_strength(&u, cb, nu, mu, remove);
                    assert!((f + f.adjoint()).max_abs_component() < 1e-14);
                    assert!(f.trace().norm() < 1e-14);
                    assert!((f + g).max_abs_component() < 1e-14);
                    if mu != nu {
                        assert!(f.max_abs_component() > 1e-2);
                    }
                    let k = field_strength(&u, cb, mu, nu, keep);
                    let kg = field_strength(&u, cb, nu, mu, keep);
                    assert!((k + k.adjoint()).max_abs_component() < 1e-14);
                    assert!((k + kg).max_abs_component() < 1e-14);
                    let shift = ColourMatrix::scalar(k.trace() / 3.0);
                    assert!((k - shift - f).max_abs_component() < 1e-14);
                    largest_trace = largest_trace.max(k.trace().norm());
                }
            }
        }
        assert!(largest_trace > 1e-2, "{largest_trace:e}");
    }

    #[test]
    fn trace_conventions_parse_by_name() {
        assert_eq!("KEEP".parse(), Ok(FieldStrengthTrace::Keep));
        assert_eq!("remove".parse(), Ok(FieldStrengthTrace::Remove));
        let err = "drop".parse::<FieldStrengthTrace>().unwrap_err();
        assert!(err.contains("expected keep or remove"), "{err}");
        assert_eq!(FieldStrengthTrace::default(), FieldStrengthTrace::Keep);
    }

    /// A⁻¹ A = 1 per block, for a random field with c_sw large enough that the
    /// off-diagonal part is far from negligible.
    #[test]
    #[allow(clippy::needless_range_loop)] // index loops mirror the matrix product
    fn inverse_times_clover_is_the_identity() {
        let u = GaugeField::<f64>::random(Lattice::new([2, 2, 2, 4]).unwrap(), 5);
        let a = clover_field(&u, 0.1, 2.0);
        let inv = invert_clover(&a).unwrap();
        for site in 0..a.sites() {
            for b in 0..2 {
                let x = unpack_clover_block(&a.site(site)[b * 36..b * 36 + 36]);
                let y = unpack_clover_block(&inv.site(site)[b * 36..b * 36 + 36]);
                for r in 0..6 {
                    for c in 0..6 {
                        let z: C64 = (0..6).map(|k| y[r][k] * x[k][c]).sum();
                        let want = if r == c { 1.0 } else { 0.0 };
                        assert!((z - want).norm() < 1e-13, "site {site} block {b}");
                    }
                }
            }
        }
    }

    /// A zero block (m = −4 on unit links) and a NaN are errors naming site and block.
    #[test]
    fn singular_and_non_finite_blocks_are_errors() {
        let lat = Lattice::new([2, 2, 2, 2]).unwrap();
        let a = clover_field(&GaugeField::<f64>::unit(lat), -4.0, 1.0);
        match invert_clover(&a) {
            Err(CloverError::Singular { site, block, .. }) => assert_eq!((site, block), (0, 0)),
            other => panic!("expected a singular block, got {other:?}"),
        }
        let mut a = clover_field(&GaugeField::<f64>::unit(lat), 0.0, 1.0);
        a.site_mut(9)[36 + 20] = f64::NAN;
        assert_eq!(
            invert_clover(&a),
            Err(CloverError::NonFinite {
                site: 9,
                subset: SiteSubset::Full,
                block: 1
            })
        );
    }

    /// D⁻¹ D = 1 for D = A + iμγ5 with D⁻¹ = B − iμγ5 C, built densely per block
    /// (γ5 = +1 on block 0, −1 on block 1); also at m = −4 on unit links, where A = 0 is
    /// singular but D = iμγ5 is not.
    #[test]
    fn twisted_inverse_inverts_the_twisted_clover() {
        let lat = Lattice::new([2, 2, 2, 4]).unwrap();
        let mu = 0.3;
        for (u, mass) in [
            (GaugeField::<f64>::random(lat, 6), 0.1),
            (GaugeField::<f64>::unit(lat), -4.0),
        ] {
            let a = clover_field(&u, mass, 1.5);
            let inv = invert_twisted_clover(&a, mu).unwrap();
            for site in 0..a.sites() {
                for blk in 0..2 {
                    let g5 = if blk == 0 { 1.0 } else { -1.0 };
                    let twist = C64::new(0.0, mu * g5);
                    let range = blk * 36..blk * 36 + 36;
                    let mut d = unpack_clover_block(&a.site(site)[range.clone()]);
                    let b = unpack_clover_block(&inv.b.site(site)[range.clone()]);
                    let c = unpack_clover_block(&inv.c.site(site)[range]);
                    let d_inv: Block =
                        std::array::from_fn(|r| std::array::from_fn(|k| b[r][k] - twist * c[r][k]));
                    for (r, row) in d.iter_mut().enumerate() {
                        row[r] += twist;
                    }
                    let one = product(&d_inv, &d);
                    for (r, row) in one.iter().enumerate() {
                        for (k, z) in row.iter().enumerate() {
                            let want = if r == k { 1.0 } else { 0.0 };
                            assert!((z - want).norm() < 1e-13, "site {site} block {blk}");
                        }
                    }
                }
            }
        }
    }
}
