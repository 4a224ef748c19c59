//! The lane engine: runs the [`Term`]s of a spec over every output site, [`LANES`] sites
//! at a time in structure-of-arrays lanes ([`super::lanes`]), so that each operation is
//! a short loop over lanes that LLVM turns into SIMD instructions.
//!
//! Per batch of sites and per term it gathers the source's rows and the links at the
//! neighbours named by the neighbour table ([`NeighbourTable`]) into lanes, applies the
//! spin structure, the boundary factor times the coefficient, and the link product
//! (adjoint links are read transposed and conjugated, recon-12 links get their third row
//! rebuilt in lanes), and accumulates; the batch is then stored, with xpay where asked.
//! Work is split over rayon tasks of [`SITES_PER_TASK`] sites; on x86-64 CPUs with AVX2
//! (detected at run time; the build targets baseline x86-64) the site loop runs a copy
//! compiled for AVX2.
//!
//! The engine is compiled once per precision in this crate ([`LaneEngine`], a supertrait
//! of [`Real`]): generated code only builds the term list and calls it, so specs add
//! little to their crate's compile time.

use super::lanes::{add_assign, mat_mul, mat_vec, phase, scale, CLane, Lane, MLane, VLane, LANES};
use super::table::{NeighbourTable, Site};
use super::terms::{LinkRead, Term, TermSpin};
use super::Xpay;
use crate::dsl::spin::{Phase, ProjectorPlan};
use crate::field::{clover_apply_site, ColourSpinorField, SiteSubset, SpinorLayout};
use crate::lattice::Lattice;
use crate::math::{ColourVector, SpinColourVector};
use crate::Real;
use num_complex::Complex;
use rayon::prelude::*;

/// Output sites per rayon task (a multiple of [`LANES`]): enough to amortise the
/// scheduling, few enough to balance two to a few dozen threads at 8⁴ and above.
pub const SITES_PER_TASK: usize = 16 * LANES;

/// One application: the terms, the neighbour table they index, the output layout, the
/// xpay operands and whether links are stored as recon 12.
#[derive(Clone, Copy, Debug)]
pub struct Job<'a, T: Real> {
    /// The terms (fields checked against the output by the generated code).
    pub terms: &'a [Term<'a, T>],
    /// The neighbour table of the terms' columns, for the output's sites.
    pub table: &'a NeighbourTable,
    /// The output layout.
    pub out: SpinorLayout,
    /// out = a · x + b · acc when present.
    pub xpay: Option<Xpay<'a, T>>,
    /// Links hold rows 0 and 1 only: row 2 = conj(row 0 × row 1) is rebuilt.
    pub recon12: bool,
}

/// The lane engine of one precision (implemented for f32 and f64 here, so that it is
/// compiled once, in this crate).
pub trait LaneEngine: Sized {
    /// Writes every output site of `job` into `out` (the output field's components).
    fn apply_terms(job: &Job<'_, Self>, out: &mut [Complex<Self>])
    where
        Self: Real;
}

impl LaneEngine for f32 {
    fn apply_terms(job: &Job<'_, f32>, out: &mut [Complex<f32>]) {
        apply(job, out)
    }
}

impl LaneEngine for f64 {
    fn apply_terms(job: &Job<'_, f64>, out: &mut [Complex<f64>]) {
        apply(job, out)
    }
}

/// Whether the AVX2 copy of the site loop may run (x86-64 CPUs with AVX2, detected at
/// run time).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `job` over the output in parallel tasks of [`SITES_PER_TASK`] sites.
fn apply<T: Real>(job: &Job<'_, T>, out: &mut [Complex<T>]) {
    let comps = job.out.site_len();
    let avx2 = has_avx2();
    let sources: Vec<SourceView<'_, T>> = job
        .terms
        .iter()
        .map(|t| SourceView::new(t.source))
        .collect();
    let sources = &sources;
    out.par_chunks_mut(comps * SITES_PER_TASK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let first = c * SITES_PER_TASK;
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: the CPU supports AVX2 (has_avx2).
                return unsafe { run_chunk_avx2(job, sources, first, chunk) };
            }
            let _ = avx2;
            run_chunk(job, sources, first, chunk)
        });
}

/// [`run_chunk`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_chunk_avx2<T: Real>(
    job: &Job<'_, T>,
    sources: &[SourceView<'_, T>],
    first: usize,
    chunk: &mut [Complex<T>],
) {
    run_chunk(job, sources, first, chunk)
}

/// A term's source as the engine reads it: its components, and where the sites of a
/// checkerboard index start (a field on one parity holds that parity's sites only).
struct SourceView<'a, T> {
    data: &'a [Complex<T>],
    first_cb: usize,
    sites_per_slice: usize,
    comps: usize,
}

impl<'a, T: Real> SourceView<'a, T> {
    fn new(field: &'a ColourSpinorField<T>) -> Self {
        let layout = field.layout();
        let first_cb = match layout.subset() {
            SiteSubset::Full => 0,
            SiteSubset::Single(p) => layout.lattice().join_cb(p, 0),
        };
        SourceView {
            data: field.data(),
            first_cb,
            sites_per_slice: layout.sites_per_slice(),
            comps: layout.site_len(),
        }
    }

    /// The components of the site with checkerboard index `cb` in slice `s` (a site the
    /// field holds: the hop's parity was checked against the field's subset).
    #[inline(always)]
    fn site(&self, s: usize, cb: usize) -> &'a [Complex<T>] {
        let start = (s * self.sites_per_slice + cb - self.first_cb) * self.comps;
        &self.data[start..start + self.comps]
    }
}

/// One batch of [`LANES`] output sites: each lane's slice s and neighbour-table row. A
/// batch at the end of a chunk is padded with copies of its last site (computed, not
/// stored).
struct Batch<'a> {
    slice: [usize; LANES],
    index: [usize; LANES],
    rows: [Site<'a>; LANES],
}

impl<'a> Batch<'a> {
    /// The batch of global output sites `k` (site k mod n of slice k / n).
    #[inline(always)]
    fn new(table: &'a NeighbourTable, k: [usize; LANES], n: usize) -> Self {
        // Consecutive sites: one division for the batch, then carry across the slice end.
        let (mut s, mut i) = (k[0] / n, k[0] % n);
        let (mut slice, mut index) = ([s; LANES], [i; LANES]);
        let mut rows = [table.site(i); LANES];
        for l in 1..LANES {
            if k[l] != k[l - 1] {
                i += 1;
                if i == n {
                    (s, i) = (s + 1, 0);
                }
            }
            (slice[l], index[l], rows[l]) = (s, i, table.site(i));
        }
        Batch { slice, index, rows }
    }
}

/// The output sites `first ..` of one chunk (site k is site k mod n of slice k / n):
/// per batch, the terms into the accumulator, then the store.
#[inline(always)]
fn run_chunk<T: Real>(
    job: &Job<'_, T>,
    sources: &[SourceView<'_, T>],
    first: usize,
    chunk: &mut [Complex<T>],
) {
    let n = job.out.sites_per_slice();
    let (ns, comps) = (job.out.nspin(), job.out.site_len());
    let sites = chunk.len() / comps;
    let mut acc = vec![[CLane::zero(); 3]; ns];
    for b in (0..sites).step_by(LANES) {
        let mut k = [0; LANES];
        for (l, k) in k.iter_mut().enumerate() {
            *k = first + (b + l).min(sites - 1);
        }
        let batch = Batch::new(job.table, k, n);
        if b + AHEAD < sites {
            let ahead = k.map(|k| (k + AHEAD).min(first + sites - 1));
            prefetch_batch(job, sources, &Batch::new(job.table, ahead, n));
        }
        acc.fill([CLane::zero(); 3]);
        for (term, source) in job.terms.iter().zip(sources) {
            add_term(job, term, source, &batch, &mut acc);
        }
        let outs = chunk[b * comps..].chunks_exact_mut(comps).take(LANES);
        for (l, site) in outs.enumerate() {
            let x = (job.xpay.as_ref()).map(|xp| (xp, xp.x.site(batch.slice[l], batch.index[l])));
            store_lane(site, &acc, l, x);
        }
    }
}

/// How many sites ahead of the computation [`prefetch_batch`] asks for data.
const AHEAD: usize = LANES;

/// Asks the caches for what `batch` will read (every term's source sites and links),
/// a batch ahead of its computation: the loads then find the data close instead of
/// waiting on memory one lane at a time.
#[inline(always)]
fn prefetch_batch<T: Real>(job: &Job<'_, T>, sources: &[SourceView<'_, T>], batch: &Batch<'_>) {
    for (term, source) in job.terms.iter().zip(sources) {
        for (row, &s) in batch.rows.iter().zip(&batch.slice) {
            prefetch(source.site(s, row.cb(term.hop)));
            for link in &term.links {
                let u = link.field.link(row.cb(link.at), link.mu);
                prefetch(std::slice::from_ref(u));
            }
        }
    }
}

/// Prefetches the cache lines of `data` into L1 (a hint: no effect on results).
#[inline(always)]
fn prefetch<E>(data: &[E]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 64;
        let start = data.as_ptr() as usize;
        let end = start + std::mem::size_of_val(data);
        let mut line = start & !(LINE - 1);
        while line < end {
            // SAFETY: a prefetch reads nothing architecturally and never faults; SSE is
            // part of the x86-64 baseline.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(line as *const i8)
            };
            line += LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// acc += c · f · S [L] src(x + d) for one term on one batch (see [`super::terms`]).
#[inline(always)]
fn add_term<T: Real>(
    job: &Job<'_, T>,
    term: &Term<'_, T>,
    source: &SourceView<'_, T>,
    batch: &Batch<'_>,
    acc: &mut [VLane<T>],
) {
    let coeff = factors::<T>(batch, term.hop).scaled(term.coeff);
    let sites = source_sites(source, term.hop, batch);
    match term.spin {
        TermSpin::Projected(plan) => {
            let mut psi = [[CLane::zero(); 3]; 4];
            for (s, row) in psi.iter_mut().enumerate() {
                *row = gather_row(&sites, s);
            }
            let mut h = project(&psi, &plan);
            for v in &mut h {
                *v = scale_by(v, &coeff);
            }
            let w = transport(job, &term.links, batch, h);
            reconstruct_add(acc, &w, &plan);
        }
        TermSpin::Rows => {
            for (s, a) in acc.iter_mut().enumerate() {
                let v = scale_by(&gather_row(&sites, s), &coeff);
                let [w] = transport(job, &term.links, batch, [v]);
                add_assign(a, &w);
            }
        }
        TermSpin::Twisted => {
            for (s, a) in acc.iter_mut().enumerate() {
                let v = phase(&gather_row(&sites, s), twist_phase(s));
                let [w] = transport(job, &term.links, batch, [scale_by(&v, &coeff)]);
                add_assign(a, &w);
            }
        }
        TermSpin::Clover(a) => {
            let w = clover_lanes(a, batch, term.hop, &sites);
            for (a, v) in acc.iter_mut().zip(&w) {
                add_assign(a, &scale_by(v, &coeff));
            }
        }
    }
}

/// The lane factors c · f(x_l, d): the boundary factor of each lane's hop times the
/// term's coefficient; `None` when every lane's factor is 1 (nothing to multiply).
struct Factors<T>(Option<Lane<T>>);

impl<T: Real> Factors<T> {
    /// These factors times `c`.
    #[inline(always)]
    fn scaled(self, c: T) -> Self {
        match self.0 {
            None if c == T::one() => Factors(None),
            None => Factors(Some(Lane::splat(c))),
            Some(f) => Factors(Some(f * Lane::splat(c))),
        }
    }
}

/// The boundary factors of column `j` of the batch's rows.
#[inline(always)]
fn factors<T: Real>(batch: &Batch<'_>, j: usize) -> Factors<T> {
    let mut f = [0i8; LANES];
    for (f, row) in f.iter_mut().zip(&batch.rows) {
        *f = row.factor(j);
    }
    if f.iter().all(|&f| f == 1) {
        return Factors(None);
    }
    let mut lane = Lane::splat(T::zero());
    for (z, f) in lane.0.iter_mut().zip(f) {
        *z = T::from_f64(f64::from(f));
    }
    Factors(Some(lane))
}

/// v times the lane factors.
#[inline(always)]
fn scale_by<T: Real>(v: &VLane<T>, c: &Factors<T>) -> VLane<T> {
    match c.0 {
        Some(c) => scale(v, c),
        None => *v,
    }
}

/// The index, within a field on `subset`, of the site with checkerboard index `cb`.
#[inline(always)]
fn subset_index(lattice: &Lattice, subset: SiteSubset, cb: usize) -> usize {
    match subset {
        SiteSubset::Full => cb,
        SiteSubset::Single(_) => lattice.split_cb(cb).1,
    }
}

/// Each lane's source site x_l + d (its components, spin-major, 3 colours).
#[inline(always)]
fn source_sites<'a, T: Real>(
    source: &SourceView<'a, T>,
    hop: usize,
    batch: &Batch<'_>,
) -> [&'a [Complex<T>]; LANES] {
    let mut sites: [&[Complex<T>]; LANES] = [&[]; LANES];
    for (l, site) in sites.iter_mut().enumerate() {
        *site = source.site(batch.slice[l], batch.rows[l].cb(hop));
    }
    sites
}

/// Row σ of each lane's site, in lanes.
#[inline(always)]
fn gather_row<T: Real>(sites: &[&[Complex<T>]; LANES], s: usize) -> VLane<T> {
    let mut row: [&[Complex<T>]; LANES] = [&[]; LANES];
    for (r, site) in row.iter_mut().zip(sites) {
        *r = &site[3 * s..3 * s + 3];
    }
    let mut v = [CLane::zero(); 3];
    for (a, z) in v.iter_mut().enumerate() {
        for (l, r) in row.iter().enumerate() {
            (z.re.0[l], z.im.0[l]) = (r[a].re, r[a].im);
        }
    }
    v
}

/// The link U_μ(x_l + d) of each lane, in lanes (row 2 rebuilt for recon 12), not yet
/// adjoint.
#[inline(always)]
fn gather_link<T: Real>(job: &Job<'_, T>, link: &LinkRead<'_, T>, batch: &Batch<'_>) -> MLane<T> {
    let rows = if job.recon12 { 2 } else { 3 };
    // Every lane's link first, then component by component: the lanes' loads of one
    // component are issued together (their cache misses overlap).
    let first = &link.field.link(batch.rows[0].cb(link.at), link.mu).0;
    let mut u = [first; LANES];
    for (u, row) in u.iter_mut().zip(&batch.rows).skip(1) {
        *u = &link.field.link(row.cb(link.at), link.mu).0;
    }
    let mut m = [[CLane::zero(); 3]; 3];
    for (i, mr) in m.iter_mut().enumerate().take(rows) {
        for (j, z) in mr.iter_mut().enumerate() {
            for (l, u) in u.iter().enumerate() {
                (z.re.0[l], z.im.0[l]) = (u[i][j].re, u[i][j].im);
            }
        }
    }
    if job.recon12 {
        // Row 2 = conj(row 0 × row 1).
        let (a, b) = (m[0], m[1]);
        for (k, z) in m[2].iter_mut().enumerate() {
            let (i, j) = ((k + 1) % 3, (k + 2) % 3);
            let (p, q) = (a[i] * b[j], a[j] * b[i]);
            *z = CLane {
                re: p.re - q.re,
                im: q.im - p.im,
            };
        }
    }
    m
}

/// The adjoint M† of a matrix in lanes.
#[inline(always)]
fn adjoint<T: Real>(m: &MLane<T>) -> MLane<T> {
    let mut a = *m;
    for (i, row) in a.iter_mut().enumerate() {
        for (j, z) in row.iter_mut().enumerate() {
            *z = m[j][i].conj();
        }
    }
    a
}

/// (M† v)_i = Σ_j conj(M_ji) v_j, without forming M†.
#[inline(always)]
fn adjoint_vec<T: Real>(m: &MLane<T>, v: &VLane<T>) -> VLane<T> {
    let mut w = [CLane::zero(); 3];
    for (i, z) in w.iter_mut().enumerate() {
        for (j, vj) in v.iter().enumerate() {
            *z += conj_mul(m[j][i], *vj);
        }
    }
    w
}

/// conj(a) · b lane-wise.
#[inline(always)]
fn conj_mul<T: Real>(a: CLane<T>, b: CLane<T>) -> CLane<T> {
    CLane {
        re: a.re * b.re + a.im * b.im,
        im: a.re * b.im - a.im * b.re,
    }
}

/// The link product of a term applied to each of `K` rows: w_r = L_1 ⋯ L_k h_r (rows
/// unchanged without links).
#[inline(always)]
fn transport<T: Real, const K: usize>(
    job: &Job<'_, T>,
    links: &[LinkRead<'_, T>],
    batch: &Batch<'_>,
    h: [VLane<T>; K],
) -> [VLane<T>; K] {
    match links {
        [] => h,
        [one] => {
            let m = gather_link(job, one, batch);
            let mut w = h;
            for v in &mut w {
                *v = if one.dagger {
                    adjoint_vec(&m, v)
                } else {
                    mat_vec(&m, v)
                };
            }
            w
        }
        [first, rest @ ..] => {
            let oriented = |l: &LinkRead<'_, T>| {
                let m = gather_link(job, l, batch);
                if l.dagger {
                    adjoint(&m)
                } else {
                    m
                }
            };
            let m = rest
                .iter()
                .fold(oriented(first), |m, l| mat_mul(&m, &oriented(l)));
            let mut w = h;
            for v in &mut w {
                *v = mat_vec(&m, v);
            }
            w
        }
    }
}

/// The half spinor h_r = ψ_r + (sign · g_r) ψ_{c(r)}, r = 0, 1 ([`ProjectorPlan`]).
#[inline(always)]
fn project<T: Real>(psi: &[VLane<T>; 4], plan: &ProjectorPlan) -> [VLane<T>; 2] {
    let mut h = [[CLane::zero(); 3]; 2];
    for (r, h) in h.iter_mut().enumerate() {
        let (c, p) = plan.project[r];
        *h = phase(&psi[c], p);
        add_assign(h, &psi[r]);
    }
    h
}

/// acc += P w: acc_r += w_r (r = 0, 1), acc_s += (sign · g_s) w_{c(s)} (s = 2, 3).
#[inline(always)]
fn reconstruct_add<T: Real>(acc: &mut [VLane<T>], w: &[VLane<T>; 2], plan: &ProjectorPlan) {
    add_assign(&mut acc[0], &w[0]);
    add_assign(&mut acc[1], &w[1]);
    for (k, &(r, p)) in plan.reconstruct.iter().enumerate() {
        add_assign(&mut acc[2 + k], &phase(&w[r], p));
    }
}

/// The phase of row σ in i γ5 (DeGrand–Rossi): i for σ = 0, 1, −i for σ = 2, 3.
#[inline(always)]
fn twist_phase(s: usize) -> Phase {
    Phase {
        re: 0,
        im: if s < 2 { 1 } else { -1 },
    }
}

/// The clover product A(x_l + d) ψ(x_l + d) of each lane, one lane at a time
/// ([`clover_apply_site`]).
fn clover_lanes<T: Real>(
    a: &crate::field::CloverField<T>,
    batch: &Batch<'_>,
    hop: usize,
    sites: &[&[Complex<T>]; LANES],
) -> [VLane<T>; 4] {
    let lattice = a.lattice();
    let mut out = [[CLane::zero(); 3]; 4];
    for (l, site) in sites.iter().enumerate() {
        let psi = SpinColourVector(std::array::from_fn(|s| {
            ColourVector(std::array::from_fn(|c| site[3 * s + c]))
        }));
        let cb = batch.rows[l].cb(hop);
        let w = clover_apply_site(a.site(subset_index(lattice, a.subset(), cb)), &psi);
        for (row, wr) in out.iter_mut().zip(&w.0) {
            for (z, c) in row.iter_mut().zip(&wr.0) {
                (z.re.0[l], z.im.0[l]) = (c.re, c.im);
            }
        }
    }
    out
}

/// Stores lane `l` of `acc` into one output site: out = acc, or out = a·x + b·acc with
/// the xpay operands and x's site.
#[inline(always)]
fn store_lane<T: Real>(
    out: &mut [Complex<T>],
    acc: &[VLane<T>],
    l: usize,
    xpay: Option<(&Xpay<'_, T>, &[Complex<T>])>,
) {
    for (s, (outs, row)) in out.chunks_exact_mut(3).zip(acc).enumerate() {
        for (a, (o, z)) in outs.iter_mut().zip(row).enumerate() {
            let d = Complex::new(z.re.0[l], z.im.0[l]);
            *o = match xpay {
                Some((xp, x)) => x[3 * s + a] * xp.a + d * xp.b,
                None => d,
            };
        }
    }
}
