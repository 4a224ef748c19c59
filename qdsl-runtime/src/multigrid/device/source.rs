//! The CUDA of the device coarse construction (one program per N_f, 2N_v and block of
//! the fixed-point kernel), with the kernels' interfaces:
//!
//! | kernel | does |
//! |---|---|
//! | `coarse_gather_{f64,f32}` | the tile operands of a chunk of products: per unit u of product p, A rows a_i = (A_u)_{·i} and B rows b_j = s (B_u)_{·j} ([`super::super::coarsen::units`]), K = 2 N_f · units reals (padded with zeros to the tile depth) |
//! | `coarse_place` | a chunk's products c (2N_v × 2N_v complex) into their slots of a field, conjugated or not |
//! | `coarse_units_fixed16` | the units of a target summed in integers: pass 0 max \|entry\|, pass 1 i64 sums in S₀ 2⁻⁶⁰, pass 2 i32 sums in δ = S 2⁻²⁴ |
//! | `coarse_max_abs` | max \|sum\| of pass 1 per kind (X, links) |
//! | `coarse_invert` | X⁻¹ per coarse site, Gauss–Jordan with partial pivoting |
//! | `coarse_xinv_gather_{f64,f32}` | the tile operands of X⁻¹Y⁺ (rows conj(X⁻¹)_i·, columns Y⁺_·j) and Y⁻X^{−†} (rows Y⁻_i·, rows X⁻¹(x+μ̂)_j·, the product conjugated by `coarse_place`) |
//!
//! The fixed-point units are computed as the CPU reference's loops compute them
//! (`__dmul_rn`, `__dadd_rn`, `__dsub_rn`: every product and sum rounded on its own, no
//! fused multiply-add, the same order), so every unit is the reference's bits and its
//! integer the reference's integer; integer sums do not depend on their order, so the
//! result is bitwise the CPU's for any block and grouping.

use qdsl_core::dsl::interface::{
    Elem, Geometry, KernelInterface, KernelProgram, ParamDecl, ParamKind,
};
use std::fmt::Write;

/// The sizes a program is generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoarseSizes {
    /// Components of a fine site, N_f (12 for Wilson-clover; 2N_v of a coarse level).
    pub nf: usize,
    /// Columns of V, 2N_v (= rows and columns of a coarse matrix).
    pub nc2: usize,
    /// Threads of a block of `coarse_units_fixed16` (a multiple of 32).
    pub threads: usize,
}

impl CoarseSizes {
    /// Entries of a coarse matrix each thread of `coarse_units_fixed16` owns.
    pub fn entries_per_thread(&self) -> usize {
        (self.nc2 * self.nc2).div_ceil(self.threads)
    }

    /// Dynamic shared memory of `coarse_units_fixed16`: a unit's A and B (N_f × 2N_v
    /// complex f64 each).
    pub fn units_shared(&self) -> usize {
        2 * self.nf * self.nc2 * 16
    }

    /// Dynamic shared memory of `coarse_invert`: the matrix and its inverse being built,
    /// and the column's factors.
    pub fn invert_shared(&self) -> usize {
        2 * self.nc2 * self.nc2 * 16 + self.nc2 * 16
    }

    /// The program's name.
    pub fn name(&self) -> String {
        format!(
            "coarse_build_nf{}_nc{}_t{}",
            self.nf, self.nc2, self.threads
        )
    }
}

fn p(name: &str, kind: ParamKind) -> ParamDecl {
    ParamDecl::new(name, kind)
}

fn linear(block: u32, shared: usize) -> Geometry {
    let mut g = Geometry::linear()
        .with_fixed_block(block)
        .with_max_grid_x(i32::MAX as u32);
    g.shared_fixed = u32::try_from(shared).unwrap_or(u32::MAX);
    g
}

/// The interfaces of the program's kernels, in the order of [`program`]'s `kernels`.
fn interfaces(s: &CoarseSizes) -> Vec<KernelInterface> {
    let gather = |ty: &str, elem: Elem| KernelInterface {
        name: format!("coarse_gather_{ty}"),
        params: vec![
            p("v", ParamKind::read(Elem::F64)),
            p("mats", ParamKind::read(Elem::F64)),
            p("units", ParamKind::read(Elem::I32)),
            p("a", ParamKind::write(elem)),
            p("b", ParamKind::write(elem)),
            p("first", ParamKind::I64),
            p("products", ParamKind::I64),
            p("per_product", ParamKind::I64),
            p("k_pad", ParamKind::I64),
        ],
        geometry: linear(256, 0),
    };
    let xinv_gather = |ty: &str, elem: Elem| KernelInterface {
        name: format!("coarse_xinv_gather_{ty}"),
        params: vec![
            p("x_inv", ParamKind::read(Elem::F64)),
            p("y", ParamKind::read(Elem::F64)),
            p("neighbours", ParamKind::read(Elem::I32)),
            p("a", ParamKind::write(elem)),
            p("b", ParamKind::write(elem)),
            p("first", ParamKind::I64),
            p("products", ParamKind::I64),
            p("backward", ParamKind::I32),
        ],
        geometry: linear(256, 0),
    };
    vec![
        gather("f64", Elem::F64),
        gather("f32", Elem::F32),
        KernelInterface {
            name: "coarse_place".into(),
            params: vec![
                p("c", ParamKind::read(Elem::F64)),
                p("dst", ParamKind::write(Elem::F64)),
                p("products", ParamKind::I64),
                p("first", ParamKind::I64),
                p("dst_stride", ParamKind::I64),
                p("dst_offset", ParamKind::I64),
                p("conj", ParamKind::I32),
            ],
            geometry: linear(256, 0),
        },
        KernelInterface {
            name: "coarse_units_fixed16".into(),
            params: vec![
                p("v", ParamKind::read(Elem::F64)),
                p("mats", ParamKind::read(Elem::F64)),
                p("units", ParamKind::read(Elem::I32)),
                p("per_product", ParamKind::I64),
                p("group", ParamKind::I64),
                p("pass", ParamKind::I32),
                p("kind", ParamKind::I32),
                p("inv_quantum", ParamKind::F64),
                p("max_bits", ParamKind::write(Elem::I64)),
                p("sums", ParamKind::write(Elem::I64)),
                p("totals", ParamKind::write(Elem::I32)),
                p("status", ParamKind::write(Elem::I32)),
                p("dst_stride", ParamKind::I64),
                p("dst_offset", ParamKind::I64),
            ],
            geometry: linear(s.threads as u32, s.units_shared()),
        },
        KernelInterface {
            name: "coarse_max_abs".into(),
            params: vec![
                p("sums", ParamKind::read(Elem::I64)),
                p("max_abs", ParamKind::write(Elem::I64)),
                p("count", ParamKind::I64),
            ],
            geometry: Geometry::linear()
                .with_fixed_block(256)
                .with_max_grid_x(1024),
        },
        KernelInterface {
            name: "coarse_invert".into(),
            params: vec![
                p("x", ParamKind::read(Elem::F64)),
                p("x_inv", ParamKind::write(Elem::F64)),
                p("singular", ParamKind::write(Elem::I32)),
            ],
            geometry: linear(128, s.invert_shared()),
        },
        xinv_gather("f64", Elem::F64),
        xinv_gather("f32", Elem::F32),
    ]
}

/// The program of `s`: source and interfaces (gather f64, gather f32, place, units,
/// max_abs, invert, xinv gather f64, xinv gather f32).
pub fn program(s: &CoarseSizes) -> KernelProgram {
    KernelProgram {
        name: s.name(),
        source: source(s),
        options: Vec::new(),
        kernels: interfaces(s),
    }
}

/// The CUDA source of `s`.
pub fn source(s: &CoarseSizes) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "// {}: the device coarse construction (qdsl_runtime::multigrid::device). Generated; do not edit.\n\
         namespace {{\n\
         constexpr int NF = {};\n\
         constexpr int NC2 = {};\n\
         constexpr int THREADS = {};\n\
         constexpr int EPT = {};\n\
         }}",
        s.name(),
        s.nf,
        s.nc2,
        s.threads,
        s.entries_per_thread()
    );
    o.push_str(HELPERS);
    for (ty, c) in [("f64", "double"), ("f32", "float")] {
        o.push_str(&GATHER.replace("TY", ty).replace("REAL", c));
    }
    o.push_str(PLACE);
    o.push_str(UNITS);
    o.push_str(MAX_ABS);
    o.push_str(INVERT);
    for (ty, c) in [("f64", "double"), ("f32", "float")] {
        o.push_str(&XINV_GATHER.replace("TY", ty).replace("REAL", c));
    }
    o
}

const HELPERS: &str = r#"// c += a b and c += conj(a) b, every product and sum rounded on its own (no fused
// multiply-add), in the order of the CPU reference's complex arithmetic.
static __device__ __forceinline__ void qdsl_mul_acc(double& cr, double& ci, double ar, double ai, double br, double bi) {
    cr = __dadd_rn(cr, __dsub_rn(__dmul_rn(ar, br), __dmul_rn(ai, bi)));
    ci = __dadd_rn(ci, __dadd_rn(__dmul_rn(ar, bi), __dmul_rn(ai, br)));
}
static __device__ __forceinline__ void qdsl_conj_mul_acc(double& cr, double& ci, double ar, double ai, double br, double bi) {
    cr = __dadd_rn(cr, __dadd_rn(__dmul_rn(ar, br), __dmul_rn(ai, bi)));
    ci = __dadd_rn(ci, __dsub_rn(__dmul_rn(ar, bi), __dmul_rn(ai, br)));
}
// Entry (l, col) of a unit's side: V(site)[l][col], or (M V(site))[l][col] with M the
// fine matrix `mat`, summed over s in order from zero.
static __device__ __forceinline__ void qdsl_side(const double* __restrict__ v, const double* __restrict__ mats, int site, int mat, int l, int col, double& re, double& im) {
    const double* w = v + (long)site * (NF * NC2 * 2) + col * 2;
    if (mat < 0) { re = w[l * NC2 * 2]; im = w[l * NC2 * 2 + 1]; return; }
    const double* m = mats + ((long)mat * NF + l) * (NF * 2);
    double r = 0.0, i = 0.0;
    for (int s = 0; s < NF; s++) qdsl_mul_acc(r, i, m[2 * s], m[2 * s + 1], w[s * NC2 * 2], w[s * NC2 * 2 + 1]);
    re = r; im = i;
}
"#;

const GATHER: &str = r#"// The tile operands of products first .. first + products: unit u's A and s B columns
// as rows of K = k_pad reals, (u N_f + l) complex components in; the thread of the row's
// last component also zeroes its pad (the buffers are reused between targets).
extern "C" __global__ void coarse_gather_TY(const double* __restrict__ v, const double* __restrict__ mats, const int* __restrict__ units, REAL* __restrict__ a, REAL* __restrict__ b, const long first, const long products, const long per_product, const long k_pad)
{
    // Thread e is column col (fastest: a warp reads V's rows coalesced and one row of the
    // fine matrix) of component l of unit u of product p.
    const long e = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (e >= products * per_product * (NF * NC2)) return;
    const int col = (int)(e % NC2);
    long r = e / NC2;
    const int l = (int)(r % NF);
    r /= NF;
    const long u = r % per_product, p = r / per_product;
    const int* d = units + ((first + p) * per_product + u) * 5;
    double ar, ai, br, bi;
    qdsl_side(v, mats, d[0], d[1], l, col, ar, ai);
    qdsl_side(v, mats, d[2], d[3], l, col, br, bi);
    const double sg = (double)d[4];
    const long at = (p * NC2 + col) * k_pad + (u * NF + l) * 2;
    a[at] = (REAL)ar;
    a[at + 1] = (REAL)ai;
    b[at] = (REAL)(sg * br);
    b[at + 1] = (REAL)(sg * bi);
    if (u == per_product - 1 && l == NF - 1) {
        const long row = (p * NC2 + col) * k_pad;
        for (long k = per_product * NF * 2; k < k_pad; k++) { a[row + k] = (REAL)0; b[row + k] = (REAL)0; }
    }
}
"#;

const PLACE: &str = r#"// Product p's c (NC2 x NC2 complex) into dst[(first + p) dst_stride + dst_offset ..],
// conjugated when conj.
extern "C" __global__ void coarse_place(const double* __restrict__ c, double* __restrict__ dst, const long products, const long first, const long dst_stride, const long dst_offset, const int conj)
{
    const long e = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (e >= products * (NC2 * NC2 * 2)) return;
    const long p = e / (NC2 * NC2 * 2), q = e % (NC2 * NC2 * 2);
    const double x = c[e];
    dst[(first + p) * dst_stride + dst_offset + q] = (conj && (q & 1)) ? -x : x;
}
"#;

const UNITS: &str = r#"// The units of one target in integers. Block = (product p, group g of `group` units);
// each unit's A and B staged in shared memory, each thread computes its entries
// e = threadIdx.x + k THREADS of c_u = s A^dagger B as the CPU does and
//   pass 0: the largest |re|, |im| -> max_bits[kind] (the bits of a non-negative double);
//   pass 1: rint(c inv_quantum) summed in 64 bits -> sums (atomicAdd);
//   pass 2: rint(c inv_quantum) (a unit beyond 32 bits: status = the largest such p + 1) summed in 32 bits
//           (two's complement, wrapping: the total is exact where it fits) -> totals.
extern "C" __global__ void coarse_units_fixed16(const double* __restrict__ v, const double* __restrict__ mats, const int* __restrict__ units, const long per_product, const long group, const int pass, const int kind, const double inv_quantum, long long* __restrict__ max_bits, long long* __restrict__ sums, int* __restrict__ totals, int* __restrict__ status, const long dst_stride, const long dst_offset)
{
    extern __shared__ __align__(16) unsigned char qdsl_smem[];
    double* const sa = reinterpret_cast<double*>(qdsl_smem);
    double* const sb = sa + NF * NC2 * 2;
    const long groups = (per_product + group - 1) / group;
    const long p = blockIdx.x / groups, g = blockIdx.x % groups;
    const long u0 = g * group, u1 = min(u0 + group, per_product);
    long long acc[EPT][2];
    #pragma unroll
    for (int k = 0; k < EPT; k++) { acc[k][0] = 0; acc[k][1] = 0; }
    double mx = 0.0;
    int bad = 0;
    for (long u = u0; u < u1; u++) {
        const int* d = units + (p * per_product + u) * 5;
        __syncthreads(); // every thread is done with the previous unit
        for (int e = threadIdx.x; e < NF * NC2; e += THREADS) {
            const int l = e / NC2, col = e % NC2;
            qdsl_side(v, mats, d[0], d[1], l, col, sa[2 * e], sa[2 * e + 1]);
            qdsl_side(v, mats, d[2], d[3], l, col, sb[2 * e], sb[2 * e + 1]);
        }
        __syncthreads();
        const double sg = (double)d[4];
        #pragma unroll
        for (int k = 0; k < EPT; k++) {
            const int e = threadIdx.x + k * THREADS;
            if (e >= NC2 * NC2) break;
            const int i = e / NC2, j = e % NC2;
            double cr = 0.0, ci = 0.0;
            for (int l = 0; l < NF; l++)
                qdsl_conj_mul_acc(cr, ci, sa[2 * (l * NC2 + i)], sa[2 * (l * NC2 + i) + 1], sb[2 * (l * NC2 + j)], sb[2 * (l * NC2 + j) + 1]);
            cr *= sg;
            ci *= sg;
            if (pass == 0) {
                mx = fmax(mx, fmax(fabs(cr), fabs(ci)));
            } else {
                const double qr = rint(cr * inv_quantum), qi = rint(ci * inv_quantum);
                if (pass == 2 && (fabs(qr) > 2147483647.0 || fabs(qi) > 2147483647.0)) bad = 1;
                acc[k][0] += (long long)qr;
                acc[k][1] += (long long)qi;
            }
        }
    }
    if (pass == 0) {
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if ((threadIdx.x & 31) == 0) atomicMax(reinterpret_cast<unsigned long long*>(max_bits + kind), (unsigned long long)__double_as_longlong(mx));
        return;
    }
    if (bad) atomicMax(status, (int)p + 1);
    #pragma unroll
    for (int k = 0; k < EPT; k++) {
        const int e = threadIdx.x + k * THREADS;
        if (e >= NC2 * NC2) break;
        const long at = p * dst_stride + dst_offset + 2 * e;
        if (pass == 1) {
            atomicAdd(reinterpret_cast<unsigned long long*>(sums + at), (unsigned long long)acc[k][0]);
            atomicAdd(reinterpret_cast<unsigned long long*>(sums + at + 1), (unsigned long long)acc[k][1]);
        } else {
            atomicAdd(reinterpret_cast<unsigned*>(totals + at), (unsigned)acc[k][0]);
            atomicAdd(reinterpret_cast<unsigned*>(totals + at + 1), (unsigned)acc[k][1]);
        }
    }
}
"#;

const MAX_ABS: &str = r#"// max |sums| per kind (0: X, matrix 0 of a site's 9; 1: the links), a grid-stride loop.
extern "C" __global__ void coarse_max_abs(const long long* __restrict__ sums, long long* __restrict__ max_abs, const long count)
{
    long long m[2] = {0, 0};
    for (long e = blockIdx.x * (long)blockDim.x + threadIdx.x; e < count; e += (long)gridDim.x * blockDim.x) {
        const int kind = (e / (NC2 * NC2 * 2)) % 9 != 0;
        const long long x = sums[e] < 0 ? -sums[e] : sums[e];
        m[kind] = x > m[kind] ? x : m[kind];
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        m[0] = max(m[0], __shfl_xor_sync(0xffffffffu, m[0], o));
        m[1] = max(m[1], __shfl_xor_sync(0xffffffffu, m[1], o));
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(reinterpret_cast<unsigned long long*>(max_abs), (unsigned long long)m[0]);
        atomicMax(reinterpret_cast<unsigned long long*>(max_abs + 1), (unsigned long long)m[1]);
    }
}
"#;

const INVERT: &str = r#"// X^-1 of coarse site blockIdx.x by Gauss-Jordan elimination with partial pivoting (the
// CPU's dense::invert): singular[site] = column + 1 where the best pivot is below
// 1e-14 of the largest entry, else 0.
extern "C" __global__ void coarse_invert(const double* __restrict__ x, double* __restrict__ x_inv, int* __restrict__ singular)
{
    extern __shared__ __align__(16) unsigned char qdsl_smem[];
    double* const m = reinterpret_cast<double*>(qdsl_smem);
    double* const inv = m + NC2 * NC2 * 2;
    double* const fac = inv + NC2 * NC2 * 2;
    __shared__ int pivot;
    __shared__ double largest;
    const long site = blockIdx.x;
    const double* src = x + site * (NC2 * NC2 * 2);
    for (int e = threadIdx.x; e < NC2 * NC2; e += blockDim.x) {
        m[2 * e] = src[2 * e];
        m[2 * e + 1] = src[2 * e + 1];
        inv[2 * e] = (e / NC2 == e % NC2) ? 1.0 : 0.0;
        inv[2 * e + 1] = 0.0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int e = 0; e < NC2 * NC2; e++) s = fmax(s, hypot(m[2 * e], m[2 * e + 1]));
        largest = s;
    }
    __syncthreads();
    for (int col = 0; col < NC2; col++) {
        if (threadIdx.x == 0) {
            int best = col;
            double bn = -1.0;
            for (int r = col; r < NC2; r++) {
                const double nr = hypot(m[2 * (r * NC2 + col)], m[2 * (r * NC2 + col) + 1]);
                if (nr >= bn) { bn = nr; best = r; }
            }
            pivot = (bn <= 1e-14 * largest || isnan(bn)) ? -1 : best;
            if (pivot < 0) singular[site] = col + 1;
        }
        __syncthreads();
        const int pr = pivot;
        if (pr < 0) return;
        if (pr != col) {
            for (int c = threadIdx.x; c < NC2; c += blockDim.x) {
                for (int h = 0; h < 2; h++) {
                    double t = m[2 * (pr * NC2 + c) + h]; m[2 * (pr * NC2 + c) + h] = m[2 * (col * NC2 + c) + h]; m[2 * (col * NC2 + c) + h] = t;
                    t = inv[2 * (pr * NC2 + c) + h]; inv[2 * (pr * NC2 + c) + h] = inv[2 * (col * NC2 + c) + h]; inv[2 * (col * NC2 + c) + h] = t;
                }
            }
        }
        __syncthreads();
        const double pr_ = m[2 * (col * NC2 + col)], pi_ = m[2 * (col * NC2 + col) + 1];
        const double nn = pr_ * pr_ + pi_ * pi_, dr = pr_ / nn, di = -pi_ / nn;
        __syncthreads(); // the pivot read by all before the row is scaled
        for (int c = threadIdx.x; c < NC2; c += blockDim.x) {
            double* q = m + 2 * (col * NC2 + c);
            double* w = inv + 2 * (col * NC2 + c);
            const double a = q[0], b = q[1], e = w[0], f = w[1];
            q[0] = a * dr - b * di; q[1] = a * di + b * dr;
            w[0] = e * dr - f * di; w[1] = e * di + f * dr;
        }
        for (int r = threadIdx.x; r < NC2; r += blockDim.x) {
            fac[2 * r] = r == col ? 0.0 : m[2 * (r * NC2 + col)];
            fac[2 * r + 1] = r == col ? 0.0 : m[2 * (r * NC2 + col) + 1];
        }
        __syncthreads();
        for (int e = threadIdx.x; e < NC2 * NC2; e += blockDim.x) {
            const int r = e / NC2, c = e % NC2;
            const double fr = fac[2 * r], fi = fac[2 * r + 1];
            if (fr == 0.0 && fi == 0.0) continue;
            const double mr = m[2 * (col * NC2 + c)], mi = m[2 * (col * NC2 + c) + 1];
            const double ir = inv[2 * (col * NC2 + c)], ii = inv[2 * (col * NC2 + c) + 1];
            m[2 * e] -= fr * mr - fi * mi; m[2 * e + 1] -= fr * mi + fi * mr;
            inv[2 * e] -= fr * ir - fi * ii; inv[2 * e + 1] -= fr * ii + fi * ir;
        }
        __syncthreads();
    }
    double* dst = x_inv + site * (NC2 * NC2 * 2);
    for (int e = threadIdx.x; e < NC2 * NC2 * 2; e += blockDim.x) dst[e] = inv[e];
    if (threadIdx.x == 0) singular[site] = 0;
}
"#;

const XINV_GATHER: &str = r#"// The tile operands of X^-1 Y: product q = first + p is (site q / 4, mu = q % 4), rows of
// K = 2 NC2 reals. Forward: a_i(k) = conj(X^-1(x)_ik), b_j(k) = Y+_mu(x)_kj, so
// c = X^-1 Y+. Backward: a_i(k) = Y-_mu(x)_ik, b_j(k) = X^-1(x + mu)_jk, so conj(c) =
// Y- X^-dagger (conjugated when placed).
extern "C" __global__ void coarse_xinv_gather_TY(const double* __restrict__ x_inv, const double* __restrict__ y, const int* __restrict__ neighbours, REAL* __restrict__ a, REAL* __restrict__ b, const long first, const long products, const int backward)
{
    const long e = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (e >= products * (NC2 * NC2)) return;
    const int k = (int)(e % NC2), i = (int)((e / NC2) % NC2);
    const long p = e / (NC2 * NC2), q = first + p, site = q / 4;
    const double* xi = x_inv + site * (NC2 * NC2 * 2);
    const double* yl = y + q * (NC2 * NC2 * 2);
    const long at = (p * NC2 + i) * (2 * NC2) + 2 * k;
    double ar, ai, br, bi;
    if (!backward) {
        ar = xi[2 * (i * NC2 + k)]; ai = -xi[2 * (i * NC2 + k) + 1];
        br = yl[2 * (k * NC2 + i)]; bi = yl[2 * (k * NC2 + i) + 1];
    } else {
        const double* xn = x_inv + (long)neighbours[q] * (NC2 * NC2 * 2);
        ar = yl[2 * (i * NC2 + k)]; ai = yl[2 * (i * NC2 + k) + 1];
        br = xn[2 * (i * NC2 + k)]; bi = xn[2 * (i * NC2 + k) + 1];
    }
    a[at] = (REAL)ar; a[at + 1] = (REAL)ai;
    b[at] = (REAL)br; b[at + 1] = (REAL)bi;
}
"#;
