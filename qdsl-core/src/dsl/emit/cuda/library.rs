//! The shared device library: the CUDA C++ helpers every generated kernel draws from,
//! each piece defined once — complex arithmetic, 3 × 3 complex matrices (SU(3)/U(3): the
//! stencils' register form `cplx m[3][3]` with `transport`, the link paths' `struct mat`
//! with products, adjoints, cofactors and the traceless antihermitian part), spinor
//! operations (the clover product), lattice indexing of the link paths, the link codecs
//! of the link paths (recon 18, recon 12 + phase) and the grid-dependency wait. The
//! storage codecs of the stencils (chunk loads/stores, narrow formats, recon 12/8, long
//! links) are printed by `storage` and `long_link` from their formats.
//!
//! A kernel source includes the pieces it uses ([`crate::dsl::kernel_ir::DeviceLib`]
//! for stencils; the link-path emitters list theirs), after `typedef … real;`.

/// `struct cplx` and its arithmetic, for compute type `real`.
pub const COMPLEX: &str = r#"struct cplx { real re, im; };
__device__ __forceinline__ cplx c_add(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ cplx c_sub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }
__device__ __forceinline__ cplx c_scale(real s, cplx a) { return {s * a.re, s * a.im}; }
// a b
__device__ __forceinline__ cplx c_mul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
// conj(a) b
__device__ __forceinline__ cplx c_conj_mul(cplx a, cplx b) { return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re}; }
// acc + a b
__device__ __forceinline__ cplx c_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re - a.im * b.im, acc.im + a.re * b.im + a.im * b.re}; }
// acc + conj(a) b
__device__ __forceinline__ cplx c_conj_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re + a.im * b.im, acc.im + a.re * b.im - a.im * b.re}; }

"#;

/// `box_site(thread, parity, lo, n, x)`: the site x of the box `[lo, lo + n)` that
/// `thread` covers for parity `parity`, paired along x (n₀ even), else along y (n₁ even),
/// else one thread per site; false for an idle thread (wrong parity, no pairing). The map
/// of [`crate::lattice::SiteBox`] (its docs give the equations): the sub-box stencils and
/// the face kernels.
pub const BOX_SITE: &str = r#"// The site of box [lo, lo + n) that thread covers for parity p (qdsl_core::lattice::SiteBox).
__device__ __forceinline__ bool box_site(int thread, int p, const int (&lo)[4], const int (&n)[4], int (&x)[4]) {
    const int pair = (n[0] & 1) == 0 ? 0 : (n[1] & 1) == 0 ? 1 : -1;
    int r;
    if (pair == 0) { r = 2 * thread; x[0] = r % n[0]; r /= n[0]; x[1] = r % n[1]; r /= n[1]; }
    else if (pair == 1) { x[0] = thread % n[0]; r = thread / n[0]; x[1] = 2 * (r % (n[1] >> 1)); r /= n[1] >> 1; }
    else { r = thread; x[0] = r % n[0]; r /= n[0]; x[1] = r % n[1]; r /= n[1]; }
    x[2] = r % n[2]; x[3] = r / n[2];
#pragma unroll
    for (int mu = 0; mu < 4; mu++) { x[mu] += lo[mu]; }
    const int wrong = (x[0] + x[1] + x[2] + x[3] + p) & 1;
    if (pair < 0) { return wrong == 0; }
    x[pair] += wrong;
    return true;
}

"#;

/// The walking kernels' tile map and row copies ([`crate::dsl::kernel_ir::walk`]): a
/// tile of TY × TZ × TT whole x rows, its copied rows (own rows first, then one row
/// beyond each face: −y, +y pairs, then z, then t), and the asynchronous 16-byte copies
/// of one slice's rows into a shared-memory stage.
pub const WALK: &str = r#"// A tile of ty x tz x tt whole x rows and the rows its one-hop terms read: its own,
// then one beyond each face (pairs -/+ along y, then z, then t).
struct WalkTile {
    int ty, tz, tt;
    __device__ int own() const { return ty * tz * tt; }
    __device__ int rows() const { return own() + 2 * (tz * tt + ty * tt + ty * tz); }
    // The place of the row at tile coordinates (ly, lz, lt), at most one of them -1 or the extent.
    __device__ int slot(int ly, int lz, int lt) const {
        const int o = own();
        if (ly < 0 || ly >= ty) { return o + (ly >= ty) + 2 * (lz + tz * lt); }
        if (lz < 0 || lz >= tz) { return o + 2 * tz * tt + (lz >= tz) + 2 * (ly + ty * lt); }
        if (lt < 0 || lt >= tt) { return o + 2 * (tz * tt + ty * tt) + (lt >= tt) + 2 * (ly + ty * lz); }
        return ly + ty * (lz + tz * lt);
    }
    // The tile coordinates of place r (the inverse of slot).
    __device__ void row_of(int r, int& ly, int& lz, int& lt) const {
        const int o = own();
        if (r < o) { ly = r % ty; lz = (r / ty) % tz; lt = r / (ty * tz); return; }
        r -= o;
        if (r < 2 * tz * tt) { const int k = r >> 1; ly = (r & 1) ? ty : -1; lz = k % tz; lt = k / tz; return; }
        r -= 2 * tz * tt;
        if (r < 2 * ty * tt) { const int k = r >> 1; lz = (r & 1) ? tz : -1; ly = k % ty; lt = k / ty; return; }
        r -= 2 * ty * tt;
        const int k = r >> 1; lt = (r & 1) ? tt : -1; ly = k % ty; lz = k / ty;
    }
};
// The sites (in one slice of the source) of the row elements thread t of nt copies into
// each stage: element e = t + j nt of the stage's per_slice (row e / hx, x e % hx); -1 past it.
template <int J> __device__ __forceinline__ void walk_rows_of(int (&from)[J], const WalkTile& tile, int hx, const int (&o)[3],
                                                            const int (&L)[4], int t, int nt, int per_slice) {
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int e = t + j * nt;
        from[j] = -1;
        if (e < per_slice) {
            int r[3];
            tile.row_of(e / hx, r[0], r[1], r[2]);
            int g[3];
#pragma unroll
            for (int d = 0; d < 3; d++) { g[d] = o[d] + r[d]; g[d] += (g[d] < 0) * L[d + 1] - (g[d] >= L[d + 1]) * L[d + 1]; }
            from[j] = e % hx + hx * (g[0] + L[1] * (g[1] + L[2] * g[2]));
        }
    }
}
// Queues the copy of one slice's rows (chunk c of site n at src[c * stride + n]) into a
// stage (chunk c of element e at dst[c * per_slice + e]), 16 bytes per cp.async.
template <int C, int J, typename V> __device__ __forceinline__ void walk_copy(V* dst, const V* __restrict__ src, int stride, const int (&from)[J],
                                                                            int t, int nt, int per_slice) {
#pragma unroll
    for (int j = 0; j < J; j++) {
        if (from[j] < 0) { continue; }
        const int e = t + j * nt;
#pragma unroll
        for (int c = 0; c < C; c++) {
            const unsigned d = (unsigned)__cvta_generic_to_shared(dst + c * per_slice + e);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src + c * stride + from[j]));
        }
    }
}
__device__ __forceinline__ void walk_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void walk_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }

"#;

/// `qdsl_grid_dependency_wait()`: `griddepcontrol.wait` on sm_90 and later. A kernel
/// launched as a programmatic dependent (the runtime does so for stencils) may start
/// while the kernel before it is still running; the wait returns once that kernel has
/// finished and its writes are visible, and is a no-op otherwise.
pub const GRID_DEPENDENCY_WAIT: &str = r#"// Programmatic dependent launch: waits for the kernel this one depends on to finish
// (sm_90+; a no-op for a normal launch).
__device__ __forceinline__ void qdsl_grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

"#;

/// The colour transport v ← U v (or U† v) of K colour vectors held as `cplx[K][3]`, U as
/// `cplx[3][3]` (after [`COMPLEX`]).
pub const TRANSPORT: &str = r#"// v <- U v (DAGGER: v <- U^dagger v) for each of K rows.
template <int K, bool DAGGER> __device__ __forceinline__ void transport(cplx (&v)[K][3], const cplx (&m)[3][3]) {
#pragma unroll
    for (int k = 0; k < K; k++) {
        cplx w[3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            w[a] = DAGGER ? c_conj_mul(m[0][a], v[k][0]) : c_mul(m[a][0], v[k][0]);
#pragma unroll
            for (int b = 1; b < 3; b++) { w[a] = DAGGER ? c_conj_fma(w[a], m[b][a], v[k][b]) : c_fma(w[a], m[a][b], v[k][b]); }
        }
#pragma unroll
        for (int a = 0; a < 3; a++) { v[k][a] = w[a]; }
    }
}
"#;

/// The clover product v ← A v of a 4 × 3 spinor on a packed site
/// ([`crate::field::CloverField`]), after [`COMPLEX`].
pub const CLOVER: &str = r#"// v <- A v for a packed clover site a: chiral block b (spins 2b, 2b + 1, row r = 3 s' + colour)
// holds reals 36 b + r (the real diagonal), then the strictly-lower entries (r, c), r > c, row
// by row as (re, im) at 36 b + 6 + r (r - 1) + 2 c; the upper entries are their conjugates.
__device__ __forceinline__ void clover_mul(cplx (&v)[4][3], const real* a) {
    cplx w[4][3];
#pragma unroll
    for (int b = 0; b < 2; b++) {
        const real* blk = a + 36 * b;
#pragma unroll
        for (int r = 0; r < 6; r++) {
            cplx acc = c_scale(blk[r], v[2 * b + r / 3][r % 3]);
#pragma unroll
            for (int c = 0; c < 6; c++) {
                const cplx vc = v[2 * b + c / 3][c % 3];
                if (c < r) { const int o = 6 + r * (r - 1) + 2 * c; acc = c_fma(acc, cplx{blk[o], blk[o + 1]}, vc); }
                if (c > r) { const int o = 6 + c * (c - 1) + 2 * r; acc = c_conj_fma(acc, cplx{blk[o], blk[o + 1]}, vc); }
            }
            w[2 * b + r / 3][r % 3] = acc;
        }
    }
#pragma unroll
    for (int q = 0; q < 4; q++) { for (int c = 0; c < 3; c++) { v[q][c] = w[q][c]; } }
}
"#;

/// 3 × 3 complex matrices as `struct mat` (row-major re[9], im[9]): load/store of 18
/// reals, adjoint, a b (27 complex multiply-adds), a + b, a† b, the cofactor C_ij.
pub const MATRIX: &str = r#"struct mat { real re[9], im[9]; };
__device__ __forceinline__ mat load(const real* p) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = p[2 * k]; m.im[k] = p[2 * k + 1]; }
    return m;
}
__device__ __forceinline__ void store(real* p, const mat& m) {
    for (int k = 0; k < 9; k++) { p[2 * k] = m.re[k]; p[2 * k + 1] = m.im[k]; }
}
__device__ __forceinline__ mat adjoint(const mat& a) {
    mat m;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) { m.re[3 * i + j] = a.re[3 * j + i]; m.im[3 * i + j] = -a.im[3 * j + i]; }
    return m;
}
// a b: 27 complex multiply-adds (198 flops)
__device__ __forceinline__ mat mul(const mat& a, const mat& b) {
    mat m;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            real re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += a.re[3 * i + k] * b.re[3 * k + j] - a.im[3 * i + k] * b.im[3 * k + j];
                im += a.re[3 * i + k] * b.im[3 * k + j] + a.im[3 * i + k] * b.re[3 * k + j];
            }
            m.re[3 * i + j] = re;
            m.im[3 * i + j] = im;
        }
    return m;
}
__device__ __forceinline__ mat add(const mat& a, const mat& b) {
    mat m;
    for (int k = 0; k < 9; k++) { m.re[k] = a.re[k] + b.re[k]; m.im[k] = a.im[k] + b.im[k]; }
    return m;
}
// a^+ b
__device__ __forceinline__ mat adjoint_mul(const mat& a, const mat& b) {
    mat m;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            real re = 0, im = 0;
            for (int k = 0; k < 3; k++) {
                re += a.re[3 * k + i] * b.re[3 * k + j] + a.im[3 * k + i] * b.im[3 * k + j];
                im += a.re[3 * k + i] * b.im[3 * k + j] - a.im[3 * k + i] * b.re[3 * k + j];
            }
            m.re[3 * i + j] = re;
            m.im[3 * i + j] = im;
        }
    return m;
}
// the cofactor C_ij (cyclic indices carry the sign); det = sum_j m_0j C_0j
__device__ __forceinline__ void cofactor(const mat& m, int i, int j, real* re, real* im) {
    int i1 = 3 * ((i + 1) % 3), i2 = 3 * ((i + 2) % 3), j1 = (j + 1) % 3, j2 = (j + 2) % 3;
    *re = m.re[i1 + j1] * m.re[i2 + j2] - m.im[i1 + j1] * m.im[i2 + j2]
        - (m.re[i1 + j2] * m.re[i2 + j1] - m.im[i1 + j2] * m.im[i2 + j1]);
    *im = m.re[i1 + j1] * m.im[i2 + j2] + m.im[i1 + j1] * m.re[i2 + j2]
        - (m.re[i1 + j2] * m.im[i2 + j1] + m.im[i1 + j2] * m.re[i2 + j1]);
}
"#;

/// c · TA(m), TA(m) = (m − m†)/2 − tr[(m − m†)/2]/3: the traceless antihermitian part
/// (the gauge force), after [`MATRIX`].
pub const TRACELESS_ANTIHERMITIAN: &str = r#"// c TA(m), TA(m) = (m - m^+)/2 - tr[(m - m^+)/2]/3
__device__ __forceinline__ mat scaled_ta(const mat& m, real c) {
    mat a;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            a.re[3 * i + j] = (real)0.5 * (m.re[3 * i + j] - m.re[3 * j + i]);
            a.im[3 * i + j] = (real)0.5 * (m.im[3 * i + j] + m.im[3 * j + i]);
        }
    real t = (a.im[0] + a.im[4] + a.im[8]) / (real)3;
    for (int i = 0; i < 3; i++) a.im[4 * i] -= t;
    for (int k = 0; k < 9; k++) { a.re[k] *= c; a.im[k] *= c; }
    return a;
}
"#;

/// `struct lattice` and the checkerboard indexing of the link paths: coordinates of a
/// checkerboard index, its inverse, a periodic shift.
pub const LATTICE: &str = r#"struct lattice { int L[4]; };
// coordinates of checkerboard index cb (even sites first, lexicographic x fastest)
__device__ __forceinline__ void coords_of_cb(const lattice& lat, int cb, int c[4]) {
    int half = lat.L[0] * lat.L[1] * lat.L[2] * lat.L[3] / 2;
    int parity = cb >= half;
    int lex = 2 * (cb - parity * half);
    int r = lex;
    for (int d = 0; d < 4; d++) { c[d] = r % lat.L[d]; r /= lat.L[d]; }
    if (((c[0] + c[1] + c[2] + c[3]) & 1) != parity) c[0] += 1;
}
__device__ __forceinline__ int cb_of(const lattice& lat, const int c[4]) {
    int half = lat.L[0] * lat.L[1] * lat.L[2] * lat.L[3] / 2;
    int lex = c[0] + lat.L[0] * (c[1] + lat.L[1] * (c[2] + lat.L[2] * c[3]));
    return ((c[0] + c[1] + c[2] + c[3]) & 1) * half + lex / 2;
}
__device__ __forceinline__ void shift(const lattice& lat, int c[4], int d, int s) {
    c[d] = ((c[d] + s) % lat.L[d] + lat.L[d]) % lat.L[d];
}
"#;

/// `load_link(u, i)`: link i of `u` stored as 18 reals (recon 18, the host layout of
/// [`crate::field::GaugeField`]), after [`MATRIX`].
pub const LINK18: &str = r#"// link i of u: 18 reals at 18 i
__device__ __forceinline__ mat load_link(const real* u, int i) { return load(u + 18 * i); }
"#;

/// `load_link(u, i)`: link i of `u` in recon 12 + phase (the 14-real records of
/// [`crate::dsl::paths::knobs`]): rows 0 and 1, λ = det L, then c_k = λ · conj(a_i b_j −
/// a_j b_i) in the order of [`crate::dsl::paths::knobs::decode_link`].
pub const LINK12: &str = r#"// link i of u in recon 12 + phase (14 reals: rows 0 and 1, then lambda = det L);
// row 2 = lambda * conj(row 0 x row 1)
__device__ __forceinline__ mat load_link(const real* u, int i) {
    const real* g = u + 14 * i;
    mat m;
    for (int k = 0; k < 6; k++) { m.re[k] = g[2 * k]; m.im[k] = g[2 * k + 1]; }
    const real lre = g[12], lim = g[13];
    for (int k = 0; k < 3; k++) {
        const int i1 = (k + 1) % 3, j1 = (k + 2) % 3;
        const real pre = m.re[i1] * m.re[3 + j1] - m.im[i1] * m.im[3 + j1];
        const real pim = m.re[i1] * m.im[3 + j1] + m.im[i1] * m.re[3 + j1];
        const real qre = m.re[j1] * m.re[3 + i1] - m.im[j1] * m.im[3 + i1];
        const real qim = m.re[j1] * m.im[3 + i1] + m.im[j1] * m.re[3 + i1];
        const real cre = pre - qre, cim = -(pim - qim);
        m.re[6 + k] = lre * cre - lim * cim;
        m.im[6 + k] = lre * cim + lim * cre;
    }
    return m;
}
"#;
