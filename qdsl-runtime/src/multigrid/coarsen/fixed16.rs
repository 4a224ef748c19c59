//! The coarse operator stored in 16-bit fixed point, accumulated through integers so
//! that it is bitwise identical for any order and grouping of the sums (the GPU's launch
//! configuration): the CPU reference of the two-pass construction.
//!
//! The unit of accumulation is one fine site's contribution c_u to one coarse matrix
//! ([`super::cpu::site_contributions`]); a launch configuration only decides which
//! thread block adds which units, and in which order. Every entry (re and im apart) of
//! each X_c and of each link is stored as q · S / 2¹⁵ with q an i16 and S a power of two
//! per kind (one S for X, one for the links):
//!
//! 1. **max |Y|.** With m the largest |entry| of any unit and T the most units one
//!    matrix sums, S₀ = 2^⌈log₂(T m)⌉ bounds every sum; each unit is rounded to an i64
//!    in units of S₀ 2⁻⁶⁰ and summed exactly, so max |Y| over the matrices is exact and
//!    order independent; S is the least power of two above it.
//! 2. **The product with the scale fixed.** Each unit is rounded to an i32 in units of
//!    δ = S 2⁻²⁴ (|c_u| < 2⁷ S, else an error), the units of a group are added, and the
//!    groups' sums added (the GPU's atomicAdd) in any order — integer sums are exact, so
//!    the total is the same bits for every grouping and order; then q = round(total / 2⁹)
//!    (half to even), clamped to ±32767.
//!
//! Error per entry: |Ŷ − Y| ≤ T δ/2 + S 2⁻¹⁶ (+ S 2⁻¹⁵ where clamped), below S 2⁻¹⁴ for
//! T ≤ 2⁹.

use super::super::dense::C;
use super::super::{CoarsenError, DenseOperator, Prolongator};
use super::cpu::{assemble, check_fit, site_contributions, Target};

/// Bits of the 16-bit fraction: a stored value is q · S / 2¹⁵.
pub const STORE_BITS: i32 = 15;
/// Bits of the 32-bit accumulator's fraction: δ = S / 2²⁴.
pub const ACC_BITS: i32 = 24;
/// Bits of pass 1's 64-bit accumulator's fraction of S₀.
const BOUND_BITS: i32 = 60;

/// How the units of a coarse matrix are grouped and ordered, as a launch configuration
/// would: groups of `group` consecutive fine sites of the block (in the block's site
/// order, or reversed), each group's units added first, then the groups' sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grouping {
    /// Fine sites per group (≥ 1).
    pub group: usize,
    /// Whether the block's sites are taken in reverse order.
    pub reversed: bool,
}

/// The coarse operator in 16-bit fixed point: per coarse site the 9 matrices of
/// [`Target::ALL`] (2N_v × 2N_v, row-major, (re, im) each an i16) and the two scales.
#[derive(Clone, Debug, PartialEq)]
pub struct Fixed16Coarse {
    /// S of the site matrices X_c (a power of two).
    pub x_scale: f64,
    /// S of the links Y⁺_c, Y⁻_c (a power of two).
    pub y_scale: f64,
    /// q per coarse site, matrix ([`Target::ALL`] order), entry, (re, im).
    pub q: Vec<[i16; 2]>,
    nc2: usize,
}

impl Fixed16Coarse {
    /// The operator of the scales and the accumulated totals (in δ of their kind's S;
    /// per coarse site, matrix in [`Target::ALL`] order, entry, (re, im)), each stored
    /// as [`store`] rounds it; 2N_v × 2N_v = `nc2`² entries per matrix.
    pub(crate) fn from_totals(x_scale: f64, y_scale: f64, totals: &[i32], nc2: usize) -> Self {
        Self {
            x_scale,
            y_scale,
            q: totals
                .chunks(2)
                .map(|t| [store(t[0]), store(t[1])])
                .collect(),
            nc2,
        }
    }

    /// The value q · S / 2¹⁵ of every entry as a [`DenseOperator`] on `p`'s coarse
    /// lattice (`p` the prolongator the operator was built with).
    pub fn to_operator(&self, p: &Prolongator) -> Result<DenseOperator, CoarsenError> {
        let m = self.nc2 * self.nc2;
        let sites: Vec<Vec<Vec<C>>> = self
            .q
            .chunks(Target::ALL.len() * m)
            .map(|site| {
                Target::ALL
                    .iter()
                    .map(|t| {
                        let s = self.scale(*t) / f64::from(1 << STORE_BITS);
                        site[t.index() * m..(t.index() + 1) * m]
                            .iter()
                            .map(|[re, im]| C::new(f64::from(*re) * s, f64::from(*im) * s))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        assemble(p, &sites)
    }

    /// S of the matrices of `t`'s kind.
    fn scale(&self, t: Target) -> f64 {
        if t == Target::Site {
            self.x_scale
        } else {
            self.y_scale
        }
    }
}

/// Kind of a target for the scales: 0 for X, 1 for the links.
pub(crate) fn kind(t: Target) -> usize {
    usize::from(t != Target::Site)
}

/// Pass 1's bound S₀ = the least power of two above T m (T units of at most m each).
pub(crate) fn bound(count: usize, largest: f64) -> f64 {
    power_of_two_above(count as f64 * largest)
}

/// Pass 1's quantum S₀ 2⁻⁶⁰ of the exact i64 sums.
pub(crate) fn bound_quantum(bound: f64) -> f64 {
    bound * 2f64.powi(-BOUND_BITS)
}

/// S from pass 1: the least power of two above max |Y| = `max_abs` quanta of `bound`.
pub(crate) fn scale_of(max_abs: i64, bound: f64) -> f64 {
    power_of_two_above(max_abs as f64 * bound_quantum(bound))
}

/// Pass 2's quantum δ = S 2⁻²⁴.
pub(crate) fn delta(scale: f64) -> f64 {
    scale * 2f64.powi(-ACC_BITS)
}

/// The stored q of an accumulated total (in δ): round(total / 2⁹), half to even, clamped
/// to ±32767.
pub(crate) fn store(total: i32) -> i16 {
    let shift = f64::from(1 << (ACC_BITS - STORE_BITS));
    let r = (f64::from(total) / shift).round_ties_even();
    r.clamp(-f64::from(i16::MAX), f64::from(i16::MAX)) as i16
}

/// The units of coarse site `xc`: per fine site of the block (in order), its
/// contributions.
fn units(op: &DenseOperator, p: &Prolongator, xc: usize) -> Vec<Vec<(Target, Vec<C>)>> {
    p.block_sites(xc)
        .iter()
        .map(|&cb| {
            let mut u = Vec::new();
            site_contributions(op, p, cb, |t, c| u.push((t, c.to_vec())));
            u
        })
        .collect()
}

/// The least power of two strictly above `x` (1 for x = 0).
fn power_of_two_above(x: f64) -> f64 {
    if x > 0.0 {
        2f64.powi(x.log2().floor() as i32 + 1)
    } else {
        1.0
    }
}

/// x / quantum rounded to the nearest integer (half to even) as an i64, or None beyond
/// ±`limit`.
fn to_integer(x: f64, quantum: f64, limit: f64) -> Option<i64> {
    let r = (x / quantum).round_ties_even();
    (r.abs() <= limit).then_some(r as i64)
}

/// M_c = P† M P in 16-bit fixed point through the two passes of the module docs, the
/// units grouped and ordered as `grouping` says (the result does not depend on it). An
/// error if P does not fit M, a unit exceeds the 32-bit accumulator (|c_u| ≥ 2⁷ S) or a
/// sum overflows it, or the grouping is empty.
pub fn coarsen_fixed16(
    op: &DenseOperator,
    p: &Prolongator,
    grouping: Grouping,
) -> Result<Fixed16Coarse, CoarsenError> {
    check_fit(op, p)?;
    if grouping.group == 0 {
        return Err(CoarsenError::Shape("a grouping of 0 sites".into()));
    }
    let nc2 = 2 * p.n_vectors();
    let m = nc2 * nc2;
    let coarse_sites = p.coarse_lattice().volume();
    let all: Vec<_> = (0..coarse_sites).map(|xc| units(op, p, xc)).collect();
    // Pass 1: the bound S₀ per kind (largest entry, most units per matrix), then the
    // exact max |Y| from i64 sums.
    let (mut largest, mut count) = ([0.0f64; 2], [0usize; 2]);
    for site in &all {
        let mut per_matrix = [0usize; 9];
        for (t, c) in site.iter().flatten() {
            per_matrix[t.index()] += 1;
            for z in c {
                largest[kind(*t)] = largest[kind(*t)].max(z.re.abs()).max(z.im.abs());
            }
        }
        for t in Target::ALL {
            count[kind(t)] = count[kind(t)].max(per_matrix[t.index()]);
        }
    }
    let bound: [f64; 2] = std::array::from_fn(|k| bound(count[k], largest[k]));
    let mut max_abs = [0i64; 2];
    for site in &all {
        let mut sums = vec![[0i64; 2]; 9 * m];
        for (t, c) in site.iter().flatten() {
            let quantum = bound_quantum(bound[kind(*t)]);
            for (s, z) in sums[t.index() * m..].iter_mut().zip(c) {
                for (acc, x) in s.iter_mut().zip([z.re, z.im]) {
                    // |x| ≤ S₀ / T: at most 2⁶⁰ / T units, T of them sum below 2⁶⁰.
                    *acc += (x / quantum).round_ties_even() as i64;
                }
            }
        }
        for (i, s) in sums.iter().enumerate() {
            let k = kind(Target::ALL[i / m]);
            max_abs[k] = max_abs[k].max(s[0].abs()).max(s[1].abs());
        }
    }
    let scale: [f64; 2] = std::array::from_fn(|k| scale_of(max_abs[k], bound[k]));
    // Pass 2: i32 units in δ = S 2⁻²⁴, grouped, then the groups' sums.
    let mut q = vec![[0i16; 2]; coarse_sites * 9 * m];
    for (xc, site) in all.iter().enumerate() {
        let mut order: Vec<usize> = (0..site.len()).collect();
        if grouping.reversed {
            order.reverse();
        }
        let mut total = vec![[0i32; 2]; 9 * m];
        for group in order.chunks(grouping.group) {
            let mut partial = vec![[0i32; 2]; 9 * m];
            for (t, c) in group.iter().flat_map(|&u| &site[u]) {
                let delta = delta(scale[kind(*t)]);
                for (s, z) in partial[t.index() * m..].iter_mut().zip(c) {
                    for (acc, x) in s.iter_mut().zip([z.re, z.im]) {
                        let i = to_integer(x, delta, f64::from(i32::MAX))
                            .ok_or(CoarsenError::FixedPointOverflow { coarse_site: xc })?;
                        *acc = acc
                            .checked_add(i as i32)
                            .ok_or(CoarsenError::FixedPointOverflow { coarse_site: xc })?;
                    }
                }
            }
            for (t, p) in total.iter_mut().zip(&partial) {
                for (a, b) in t.iter_mut().zip(p) {
                    *a = a
                        .checked_add(*b)
                        .ok_or(CoarsenError::FixedPointOverflow { coarse_site: xc })?;
                }
            }
        }
        for (dst, t) in q[xc * 9 * m..(xc + 1) * 9 * m].iter_mut().zip(&total) {
            for (d, v) in dst.iter_mut().zip(t) {
                *d = store(*v);
            }
        }
    }
    Ok(Fixed16Coarse {
        x_scale: scale[0],
        y_scale: scale[1],
        q,
        nc2,
    })
}
