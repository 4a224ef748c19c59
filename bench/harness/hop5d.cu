// hop5d.cu: the 4D Wilson hop on a 5D field (one parity, f32, recon 12), with several
// maps of threads to (4D site, slice): which one lets L1 serve the neighbour reuse that
// the 4D hop gets from L2? Standalone (nvcc on the GPU machine; see README.md).
//
//   nvcc -O3 -arch=sm_90 -o hop5d hop5d.cu && ./hop5d [L=32] [Ls=12]
//
// The layout is the generated kernels' (qdsl_core::dsl::layout): chunk c of 5D site
// (s, i) is element c * stride + s * half + i (float4 chunks, 6 per spinor); link chunk c
// of direction mu at checkerboard index ln is element (3 mu + c) * V + ln, recon 12.
// Every variant computes the same function with the same arithmetic; outputs are compared
// with the first variant's bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

struct cplx { float re, im; };
__device__ __forceinline__ cplx c_add(cplx a, cplx b) { return {a.re + b.re, a.im + b.im}; }
__device__ __forceinline__ cplx c_sub(cplx a, cplx b) { return {a.re - b.re, a.im - b.im}; }
__device__ __forceinline__ cplx c_mul(cplx a, cplx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
__device__ __forceinline__ cplx c_conj_mul(cplx a, cplx b) { return {a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re}; }
__device__ __forceinline__ cplx c_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re - a.im * b.im, acc.im + a.re * b.im + a.im * b.re}; }
__device__ __forceinline__ cplx c_conj_fma(cplx acc, cplx a, cplx b) { return {acc.re + a.re * b.re + a.im * b.im, acc.im + a.re * b.im - a.im * b.re}; }

struct Lat { int L[4]; int half, V, Ls; };

__device__ __forceinline__ void unpack12(cplx (&m)[3][3], const float* g) {
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int b = 0; b < 3; b++) m[a][b] = {g[6 * a + 2 * b], g[6 * a + 2 * b + 1]};
#pragma unroll
    for (int b = 0; b < 3; b++) {
        const int b1 = (b + 1) % 3, b2 = (b + 2) % 3;
        const cplx x = c_sub(c_mul(m[0][b1], m[1][b2]), c_mul(m[0][b2], m[1][b1]));
        m[2][b] = {x.re, -x.im};
    }
}
template <bool DAG> __device__ __forceinline__ void transport(cplx (&v)[2][3], const cplx (&m)[3][3]) {
#pragma unroll
    for (int k = 0; k < 2; k++) {
        cplx w[3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            w[a] = DAG ? c_conj_mul(m[0][a], v[k][0]) : c_mul(m[a][0], v[k][0]);
#pragma unroll
            for (int b = 1; b < 3; b++) w[a] = DAG ? c_conj_fma(w[a], m[b][a], v[k][b]) : c_fma(w[a], m[a][b], v[k][b]);
        }
#pragma unroll
        for (int a = 0; a < 3; a++) v[k][a] = w[a];
    }
}

// (1 -+ gamma_mu) projection in the DeGrand-Rossi basis of the generated code, as
// h0 = v0 + c0 * v[p0], h1 = v1 + c1 * v[p1] with c in {+-1, +-i}; the reconstruction
// adds h back to the four spins. Encoded per (mu, sign): partner spins and phases.
// mu 0: (1 - g0): h0 = v0 - i v3, h1 = v1 - i v2; recon acc2 += i h1, acc3 += i h0.
// The table below was written from the generated Wilson hop's terms (qdsl emit --cuda).
__device__ __forceinline__ cplx mul_phase(cplx v, int ph) { // v * i^ph
    switch (ph & 3) { case 0: return v; case 1: return {-v.im, v.re}; case 2: return {-v.re, -v.im}; default: return {v.im, -v.re}; }
}
// For term (mu, fwd): h0 = v[0] + i^p0 v[q0], h1 = v[1] + i^p1 v[q1];
// acc[0] += h0, acc[1] += h1, acc[r2] += i^e2 h[k2], acc[r3] += i^e3 h[k3] (acc2 from h k2, acc3 from h k3).
struct Proj { int q0, p0, q1, p1, k2, e2, k3, e3; };
__device__ __forceinline__ Proj proj_of(int term) { // folds: term is a constant after unrolling
    switch (term) {
    case 0: return Proj{3, 3, 2, 3, 1, 1, 0, 1};
    case 1: return Proj{3, 1, 2, 1, 1, 3, 0, 3};
    case 2: return Proj{3, 0, 2, 2, 1, 2, 0, 0};
    case 3: return Proj{3, 2, 2, 0, 1, 0, 0, 2};
    case 4: return Proj{2, 3, 3, 1, 0, 1, 1, 3};
    case 5: return Proj{2, 1, 3, 3, 0, 3, 1, 1};
    case 6: return Proj{2, 2, 3, 2, 0, 2, 1, 2};
    case 7: return Proj{2, 0, 3, 0, 0, 0, 1, 0};
    default: return Proj{2, 0, 3, 0, 0, 0, 1, 0};
    }
}

// One 5D output site: out(s5, x) = sum_mu (1 - g_mu) U_mu(x) psi(x + mu) + (1 + g_mu) U_mu(x - mu)^dag psi(x - mu).
template <bool CACHED_LINKS>
__device__ __forceinline__ void hop_site(float4* __restrict__ out, const float4* __restrict__ psi, const float4* __restrict__ u,
                                         const Lat& lat, const int (&x)[4], int cb, int s5, int i, int stride) {
    cplx acc[4][3];
#pragma unroll
    for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = acc[q][2] = cplx{0, 0};
#pragma unroll
    for (int term = 0; term < 8; term++) {
        const int mu = term >> 1;
        const bool fwd = (term & 1) == 0;
        int y[4] = {x[0], x[1], x[2], x[3]};
        if (fwd) { y[mu] += 1; if (y[mu] >= lat.L[mu]) y[mu] -= lat.L[mu]; }
        else { y[mu] -= 1; if (y[mu] < 0) y[mu] += lat.L[mu]; }
        const int lex = y[0] + lat.L[0] * (y[1] + lat.L[1] * (y[2] + lat.L[2] * y[3]));
        const int n = s5 * lat.half + (lex >> 1);
        float r[24];
#pragma unroll
        for (int c = 0; c < 6; c++) { const float4 v = psi[c * stride + n]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
        cplx v[4][3];
#pragma unroll
        for (int q = 0; q < 4; q++)
#pragma unroll
            for (int a = 0; a < 3; a++) v[q][a] = {r[6 * q + 2 * a], r[6 * q + 2 * a + 1]};
        const Proj p = proj_of(term);
        cplx h[2][3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            h[0][a] = c_add(v[0][a], mul_phase(v[p.q0][a], p.p0));
            h[1][a] = c_add(v[1][a], mul_phase(v[p.q1][a], p.p1));
        }
        const int ln = fwd ? cb : (((y[0] + y[1] + y[2] + y[3]) & 1) * lat.half + (lex >> 1));
        float g[12];
#pragma unroll
        for (int c = 0; c < 3; c++) {
            const float4* pu = u + (3 * mu + c) * lat.V + ln;
            const float4 w = CACHED_LINKS ? *pu : __ldcs(pu);
            g[4 * c] = w.x; g[4 * c + 1] = w.y; g[4 * c + 2] = w.z; g[4 * c + 3] = w.w;
        }
        cplx m[3][3];
        unpack12(m, g);
        if (fwd) transport<false>(h, m); else transport<true>(h, m);
#pragma unroll
        for (int a = 0; a < 3; a++) {
            acc[0][a] = c_add(acc[0][a], h[0][a]);
            acc[1][a] = c_add(acc[1][a], h[1][a]);
            acc[2][a] = c_add(acc[2][a], mul_phase(h[p.k2][a], p.e2));
            acc[3][a] = c_add(acc[3][a], mul_phase(h[p.k3][a], p.e3));
        }
    }
    const int io = s5 * lat.half + i;
#pragma unroll
    for (int c = 0; c < 6; c++) {
        const int q0 = (4 * c) / 6, a0 = ((4 * c) % 6) / 2, q1 = (4 * c + 2) / 6, a1 = ((4 * c + 2) % 6) / 2;
        out[c * stride + io] = make_float4(acc[q0][a0].re, acc[q0][a0].im, acc[q1][a1].re, acc[q1][a1].im);
    }
}

// Coordinates of checkerboard index idx of parity `parity`.
__device__ __forceinline__ void coords(const Lat& lat, int idx, int parity, int (&x)[4]) {
    int r = 2 * idx;
    x[0] = r % lat.L[0]; r /= lat.L[0]; x[1] = r % lat.L[1]; r /= lat.L[1]; x[2] = r % lat.L[2]; x[3] = r / lat.L[2];
    x[0] += (x[0] + x[1] + x[2] + x[3] + parity) & 1;
}

// A: what the generator emits today: block (bx, Ls), thread x -> site in z-bands (band_b planes), y -> slice.
template <bool CACHED_LINKS>
__global__ void hop_rows(float4* out, const float4* psi, const float4* u, Lat lat, int stride, int band_sites) {
    const int i_sweep = blockIdx.x * blockDim.x + threadIdx.x;
    if (i_sweep >= lat.half) return;
    const int s5 = blockIdx.y * blockDim.y + threadIdx.y;
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], L3 = lat.L[3];
    int band_b = L2;
    while ((band_b & 1) == 0 && L0 * L1 * band_b * (int)(gridDim.y * blockDim.y) > band_sites) band_b >>= 1;
    const int hx = L0 >> 1, per_t = hx * L1 * band_b, per_band = per_t * L3;
    const int band = i_sweep / per_band, r = i_sweep - band * per_band;
    const int t = r / per_t, w = r - t * per_t;
    const int xh = w % hx, x1 = (w / hx) % L1, zl = w / (hx * L1);
    const int i = xh + hx * (x1 + L1 * (band * band_b + zl + L2 * t));
    int x[4];
    coords(lat, i, 0, x);
    hop_site<CACHED_LINKS>(out, psi, u, lat, x, i, s5, i, stride);
}

// B: a 4D tile per block (whole x rows x TY x TZ x TT) with S slices in block.y, each thread
// looping over the slices s = threadIdx.y + k S (LOOP) or one slice (blocks of the same tile
// and different slice groups adjacent in blockIdx.x).
template <bool LOOP>
__global__ void hop_tiles(float4* out, const float4* psi, const float4* u, Lat lat, int stride, int TY, int TZ, int TT) {
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2];
    const int hx = L0 >> 1;
    const int ny = L1 / TY, nz = L2 / TZ;
    int b = blockIdx.x, sgroup = 0;
    const int groups = lat.Ls / blockDim.y;
    if (!LOOP) { sgroup = b % groups; b /= groups; }
    const int ty = b % ny, tz = (b / ny) % nz, tt = b / (ny * nz);
    const int w = threadIdx.x;
    const int xh = w % hx, ly = (w / hx) % TY, lz = (w / (hx * TY)) % TZ, lt = w / (hx * TY * TZ);
    const int i = xh + hx * (ty * TY + ly + L1 * (tz * TZ + lz + L2 * (tt * TT + lt)));
    int x[4];
    coords(lat, i, 0, x);
    if (LOOP) {
        for (int s5 = threadIdx.y; s5 < lat.Ls; s5 += blockDim.y) hop_site<true>(out, psi, u, lat, x, i, s5, i, stride);
    } else {
        hop_site<true>(out, psi, u, lat, x, i, sgroup * blockDim.y + threadIdx.y, i, stride);
    }
}


// C: shared-memory tiles. A block owns a 4D tile (whole x rows x TY x TZ x TT) and walks
// the slices s = 0..Ls-1: the rows of the other parity that the tile's hops read (its own
// rows, and one row beyond each face in y, z and t) are copied into shared memory with
// cp.async, STAGES slices in flight; each thread keeps its 8 links (recon 12) in registers
// for all slices. Global traffic per 5D site: (rows / own rows) spinor reads, one write,
// the links once per tile.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

struct Tile {
    int TY, TZ, TT;
    __device__ int own() const { return TY * TZ * TT; }
    __device__ int rows() const { return TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ); }
    // Slot of the row at tile-local (ly, lz, lt), one of them possibly -1 or the extent.
    __device__ int slot(int ly, int lz, int lt) const {
        const int o = own();
        if (ly < 0 || ly >= TY) return o + (ly >= TY) + 2 * (lz + TZ * lt);
        if (lz < 0 || lz >= TZ) return o + 2 * TZ * TT + (lz >= TZ) + 2 * (ly + TY * lt);
        if (lt < 0 || lt >= TT) return o + 2 * (TZ * TT + TY * TT) + (lt >= TT) + 2 * (ly + TY * lz);
        return ly + TY * (lz + TZ * lt);
    }
    // The tile-local (ly, lz, lt) of a slot (inverse of slot()).
    __device__ void row_of(int r, int& ly, int& lz, int& lt) const {
        const int o = own();
        if (r < o) { ly = r % TY; lz = (r / TY) % TZ; lt = r / (TY * TZ); return; }
        r -= o;
        if (r < 2 * TZ * TT) { const int side = r & 1, k = r >> 1; ly = side ? TY : -1; lz = k % TZ; lt = k / TZ; return; }
        r -= 2 * TZ * TT;
        if (r < 2 * TY * TT) { const int side = r & 1, k = r >> 1; lz = side ? TZ : -1; ly = k % TY; lt = k / TY; return; }
        r -= 2 * TY * TT;
        const int side = r & 1, k = r >> 1; lt = side ? TT : -1; ly = k % TY; lz = k / TY;
    }
};

template <int STAGES, bool LREG>
__global__ void __launch_bounds__(256) hop_smem(float4* __restrict__ out, const float4* __restrict__ psi, const float4* __restrict__ u, Lat lat, int stride, int TY, int TZ, int TT) {
    extern __shared__ float4 sm[];
    const Tile tile{TY, TZ, TT};
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], L3 = lat.L[3];
    const int hx = L0 >> 1;
    const int ny = L1 / TY, nz = L2 / TZ;
    const int b = blockIdx.x;
    const int oy = (b % ny) * TY, oz = ((b / ny) % nz) * TZ, ot = (b / (ny * nz)) * TT;
    const int rows = tile.rows(), per_slice = rows * hx; // float4 chunks per component
    const int w = threadIdx.x;
    const int xh = w % hx, ly = (w / hx) % TY, lz = (w / (hx * TY)) % TZ, lt = w / (hx * TY * TZ);
    const int i = xh + hx * (oy + ly + L1 * (oz + lz + L2 * (ot + lt)));
    int x[4];
    coords(lat, i, 0, x);
    // The 8 links (recon 12): in registers for every slice (LREG), else re-read through L1 each slice.
    int lnk[8];
    float g[LREG ? 8 : 1][12];
#pragma unroll
    for (int term = 0; term < 8; term++) {
        const int mu = term >> 1;
        int ln = i;
        if (term & 1) {
            int y[4] = {x[0], x[1], x[2], x[3]};
            y[mu] -= 1; if (y[mu] < 0) y[mu] += lat.L[mu];
            const int lex = y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]));
            ln = ((y[0] + y[1] + y[2] + y[3]) & 1) * lat.half + (lex >> 1);
        }
        lnk[term] = (3 * mu) * lat.V + ln;
        if (LREG) {
#pragma unroll
            for (int c = 0; c < 3; c++) { const float4 v = __ldcs(u + lnk[term] + c * lat.V); g[LREG ? term : 0][4 * c] = v.x; g[LREG ? term : 0][4 * c + 1] = v.y; g[LREG ? term : 0][4 * c + 2] = v.z; g[LREG ? term : 0][4 * c + 3] = v.w; }
        }
    }
    // The shared-memory positions this thread reads for each term (component stride per_slice).
    int pos[8];
#pragma unroll
    for (int term = 0; term < 8; term++) {
        const int mu = term >> 1, d = (term & 1) ? -1 : 1;
        int p;
        if (mu == 0) { // same row, the neighbour's x >> 1 (periodic: the row is whole)
            int xn = x[0] + d; if (xn < 0) xn += L0; if (xn >= L0) xn -= L0;
            p = tile.slot(ly, lz, lt) * hx + (xn >> 1);
        } else {
            p = tile.slot(ly + (mu == 1) * d, lz + (mu == 2) * d, lt + (mu == 3) * d) * hx + (x[0] >> 1);
        }
        pos[term] = p;
    }
    // The rows' sites this thread copies (the same for every slice): their global offsets.
    constexpr int MAXJ = 8;
    int goff[MAXJ];
#pragma unroll
    for (int j = 0; j < MAXJ; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        goff[j] = -1;
        if (e < per_slice) {
            const int r = e / hx, xx = e - r * hx;
            int ry, rz, rt;
            tile.row_of(r, ry, rz, rt);
            int gy = oy + ry, gz = oz + rz, gt = ot + rt;
            gy += (gy < 0) * L1 - (gy >= L1) * L1; gz += (gz < 0) * L2 - (gz >= L2) * L2; gt += (gt < 0) * L3 - (gt >= L3) * L3;
            goff[j] = xx + hx * (gy + L1 * (gz + L2 * gt));
        }
    }
    auto load_slice = [&](int s, int stage) {
        float4* dst = sm + stage * 6 * per_slice;
        const float4* src = psi + (size_t)s * lat.half;
#pragma unroll
        for (int j = 0; j < MAXJ; j++) {
            if (goff[j] < 0) continue;
            const int e = threadIdx.x + j * blockDim.x;
#pragma unroll
            for (int c = 0; c < 6; c++) cp_async16(dst + c * per_slice + e, src + (size_t)c * stride + goff[j]);
        }
    };
#pragma unroll
    for (int k = 0; k < STAGES - 1; k++) { if (k < lat.Ls) load_slice(k, k); cp_async_commit(); }
    for (int s = 0; s < lat.Ls; s++) {
        if (s + STAGES - 1 < lat.Ls) load_slice(s + STAGES - 1, (s + STAGES - 1) % STAGES);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const float4* buf = sm + (s % STAGES) * 6 * per_slice;
        cplx acc[4][3];
#pragma unroll
        for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = acc[q][2] = cplx{0, 0};
#pragma unroll
        for (int term = 0; term < 8; term++) {
            float r[24];
#pragma unroll
            for (int c = 0; c < 6; c++) { const float4 v = buf[c * per_slice + pos[term]]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
            cplx v[4][3];
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int a = 0; a < 3; a++) v[q][a] = {r[6 * q + 2 * a], r[6 * q + 2 * a + 1]};
            const Proj p = proj_of(term);
            cplx h[2][3];
#pragma unroll
            for (int a = 0; a < 3; a++) {
                h[0][a] = c_add(v[0][a], mul_phase(v[p.q0][a], p.p0));
                h[1][a] = c_add(v[1][a], mul_phase(v[p.q1][a], p.p1));
            }
            cplx m[3][3];
            if (LREG) { unpack12(m, g[LREG ? term : 0]); }
            else {
                float gl[12];
#pragma unroll
                for (int c = 0; c < 3; c++) { const float4 v = __ldg(u + lnk[term] + c * lat.V); gl[4 * c] = v.x; gl[4 * c + 1] = v.y; gl[4 * c + 2] = v.z; gl[4 * c + 3] = v.w; }
                unpack12(m, gl);
            }
            if ((term & 1) == 0) transport<false>(h, m); else transport<true>(h, m);
#pragma unroll
            for (int a = 0; a < 3; a++) {
                acc[0][a] = c_add(acc[0][a], h[0][a]);
                acc[1][a] = c_add(acc[1][a], h[1][a]);
                acc[2][a] = c_add(acc[2][a], mul_phase(h[p.k2][a], p.e2));
                acc[3][a] = c_add(acc[3][a], mul_phase(h[p.k3][a], p.e3));
            }
        }
        const int io = s * lat.half + i;
#pragma unroll
        for (int c = 0; c < 6; c++) {
            const int q0 = (4 * c) / 6, a0 = ((4 * c) % 6) / 2, q1 = (4 * c + 2) / 6, a1 = ((4 * c + 2) % 6) / 2;
            __stcs(out + c * stride + io, make_float4(acc[q0][a0].re, acc[q0][a0].im, acc[q1][a1].re, acc[q1][a1].im));
        }
        __syncthreads(); // the buffer of slice s is refilled next
    }
}

// D: shared-memory tiles as in C, with the eight hop terms split over NSPLIT warps per 32
// sites (warp-uniform, so no divergence): warp group g owns the terms of directions
// [4g/NSPLIT, 4(g+1)/NSPLIT) and keeps only their links in registers (8/NSPLIT links), so
// the block runs NSPLIT times the threads of C at a fraction of its registers. The partial
// sums meet in shared memory; group g adds and stores chunks [6g/NSPLIT, 6(g+1)/NSPLIT).
template <int NSPLIT, int G>
__device__ __forceinline__ void split_setup(float (&g)[8 / NSPLIT][12], int (&pos)[8 / NSPLIT], const float4* __restrict__ u, const Lat& lat,
                                            const Tile& tile, const int (&x)[4], int i, int ly, int lz, int lt) {
    constexpr int NT = 8 / NSPLIT;
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], hx = L0 >> 1;
#pragma unroll
    for (int k = 0; k < NT; k++) {
        const int term = G * NT + k, mu = term >> 1, d = (term & 1) ? -1 : 1;
        int ln = i;
        if (term & 1) {
            int y[4] = {x[0], x[1], x[2], x[3]};
            y[mu] -= 1; if (y[mu] < 0) y[mu] += lat.L[mu];
            const int lex = y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]));
            ln = ((y[0] + y[1] + y[2] + y[3]) & 1) * lat.half + (lex >> 1);
        }
#pragma unroll
        for (int c = 0; c < 3; c++) { const float4 v = __ldcs(u + (3 * mu + c) * lat.V + ln); g[k][4 * c] = v.x; g[k][4 * c + 1] = v.y; g[k][4 * c + 2] = v.z; g[k][4 * c + 3] = v.w; }
        if (mu == 0) {
            int xn = x[0] + d; if (xn < 0) xn += L0; if (xn >= L0) xn -= L0;
            pos[k] = tile.slot(ly, lz, lt) * hx + (xn >> 1);
        } else {
            pos[k] = tile.slot(ly + (mu == 1) * d, lz + (mu == 2) * d, lt + (mu == 3) * d) * hx + (x[0] >> 1);
        }
    }
}
template <int NSPLIT, int G>
__device__ __forceinline__ void split_partial(cplx (&acc)[4][3], const float4* buf, int per_slice, const int (&pos)[8 / NSPLIT], const float (&g)[8 / NSPLIT][12]) {
    constexpr int NT = 8 / NSPLIT;
#pragma unroll
    for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = acc[q][2] = cplx{0, 0};
#pragma unroll
    for (int k = 0; k < NT; k++) {
        const int term = G * NT + k;
        float r[24];
#pragma unroll
        for (int c = 0; c < 6; c++) { const float4 v = buf[c * per_slice + pos[k]]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
        cplx v[4][3];
#pragma unroll
        for (int q = 0; q < 4; q++)
#pragma unroll
            for (int a = 0; a < 3; a++) v[q][a] = {r[6 * q + 2 * a], r[6 * q + 2 * a + 1]};
        const Proj p = proj_of(term);
        cplx h[2][3];
#pragma unroll
        for (int a = 0; a < 3; a++) {
            h[0][a] = c_add(v[0][a], mul_phase(v[p.q0][a], p.p0));
            h[1][a] = c_add(v[1][a], mul_phase(v[p.q1][a], p.p1));
        }
        cplx m[3][3];
        unpack12(m, g[k]);
        if ((term & 1) == 0) transport<false>(h, m); else transport<true>(h, m);
#pragma unroll
        for (int a = 0; a < 3; a++) {
            acc[0][a] = c_add(acc[0][a], h[0][a]);
            acc[1][a] = c_add(acc[1][a], h[1][a]);
            acc[2][a] = c_add(acc[2][a], mul_phase(h[p.k2][a], p.e2));
            acc[3][a] = c_add(acc[3][a], mul_phase(h[p.k3][a], p.e3));
        }
    }
}
template <int NSPLIT, int STAGES>
__global__ void __launch_bounds__(NSPLIT == 2 ? 256 : 512) hop_split(float4* __restrict__ out, const float4* __restrict__ psi, const float4* __restrict__ u, Lat lat, int stride, int TY, int TZ, int TT) {
    constexpr int NT = 8 / NSPLIT;
    extern __shared__ float4 sm[];
    const Tile tile{TY, TZ, TT};
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], L3 = lat.L[3];
    const int hx = L0 >> 1;
    const int ny = L1 / TY, nz = L2 / TZ;
    const int b = blockIdx.x;
    const int oy = (b % ny) * TY, oz = ((b / ny) % nz) * TZ, ot = (b / (ny * nz)) * TT;
    const int rows = tile.rows(), per_slice = rows * hx, T = hx * tile.own();
    const int warp = threadIdx.x >> 5, grp = warp % NSPLIT;
    const int w = (warp / NSPLIT) * 32 + (threadIdx.x & 31);
    const int xh = w % hx, ly = (w / hx) % TY, lz = (w / (hx * TY)) % TZ, lt = w / (hx * TY * TZ);
    const int i = xh + hx * (oy + ly + L1 * (oz + lz + L2 * (ot + lt)));
    int x[4];
    coords(lat, i, 0, x);
    float g[NT][12];
    int pos[NT];
    switch (grp) {
    case 0: split_setup<NSPLIT, 0>(g, pos, u, lat, tile, x, i, ly, lz, lt); break;
    case 1: split_setup<NSPLIT, (NSPLIT > 1 ? 1 : 0)>(g, pos, u, lat, tile, x, i, ly, lz, lt); break;
    case 2: split_setup<NSPLIT, (NSPLIT > 2 ? 2 : 0)>(g, pos, u, lat, tile, x, i, ly, lz, lt); break;
    default: split_setup<NSPLIT, (NSPLIT > 3 ? 3 : 0)>(g, pos, u, lat, tile, x, i, ly, lz, lt); break;
    }
    constexpr int MAXJ = 8;
    int goff[MAXJ];
#pragma unroll
    for (int j = 0; j < MAXJ; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        goff[j] = -1;
        if (e < per_slice) {
            const int r = e / hx, xx = e - r * hx;
            int ry, rz, rt;
            tile.row_of(r, ry, rz, rt);
            int gy = oy + ry, gz = oz + rz, gt = ot + rt;
            gy += (gy < 0) * L1 - (gy >= L1) * L1; gz += (gz < 0) * L2 - (gz >= L2) * L2; gt += (gt < 0) * L3 - (gt >= L3) * L3;
            goff[j] = xx + hx * (gy + L1 * (gz + L2 * gt));
        }
    }
    auto load_slice = [&](int s, int stage) {
        float4* dst = sm + stage * 6 * per_slice;
        const float4* src = psi + (size_t)s * lat.half;
#pragma unroll
        for (int j = 0; j < MAXJ; j++) {
            if (goff[j] < 0) continue;
            const int e = threadIdx.x + j * blockDim.x;
#pragma unroll
            for (int c = 0; c < 6; c++) cp_async16(dst + c * per_slice + e, src + (size_t)c * stride + goff[j]);
        }
    };
    float4* xbuf = sm + STAGES * 6 * per_slice; // [group][chunk][site]
    const int c0 = (grp * 6) / NSPLIT, c1 = ((grp + 1) * 6) / NSPLIT;
#pragma unroll
    for (int k = 0; k < STAGES - 1; k++) { if (k < lat.Ls) load_slice(k, k); cp_async_commit(); }
    for (int s = 0; s < lat.Ls; s++) {
        if (s + STAGES - 1 < lat.Ls) load_slice(s + STAGES - 1, (s + STAGES - 1) % STAGES);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const float4* buf = sm + (s % STAGES) * 6 * per_slice;
        cplx acc[4][3];
        switch (grp) {
        case 0: split_partial<NSPLIT, 0>(acc, buf, per_slice, pos, g); break;
        case 1: split_partial<NSPLIT, (NSPLIT > 1 ? 1 : 0)>(acc, buf, per_slice, pos, g); break;
        case 2: split_partial<NSPLIT, (NSPLIT > 2 ? 2 : 0)>(acc, buf, per_slice, pos, g); break;
        default: split_partial<NSPLIT, (NSPLIT > 3 ? 3 : 0)>(acc, buf, per_slice, pos, g); break;
        }
#pragma unroll
        for (int c = 0; c < 6; c++) {
            const int q0 = (4 * c) / 6, a0 = ((4 * c) % 6) / 2, q1 = (4 * c + 2) / 6, a1 = ((4 * c + 2) % 6) / 2;
            xbuf[(grp * 6 + c) * T + w] = make_float4(acc[q0][a0].re, acc[q0][a0].im, acc[q1][a1].re, acc[q1][a1].im);
        }
        __syncthreads(); // every partial is in xbuf; every read of this slice's buffer is done
        const int io = s * lat.half + i;
        for (int c = c0; c < c1; c++) {
            float4 t = xbuf[c * T + w];
#pragma unroll
            for (int q = 1; q < NSPLIT; q++) { const float4 v = xbuf[(q * 6 + c) * T + w]; t.x += v.x; t.y += v.y; t.z += v.z; t.w += v.w; }
            __stcs(out + c * stride + io, t);
        }
    }
}

// F: C generalised to 4D tiles (TXH checkerboard sites of x per row, TXH = L0/2 being C's
// whole rows) and to a tile order: the tiles of a launch are visited in groups of
// GX x GY x GZ x GT tiles (t fastest inside a group), so that the tiles resident at one time
// form a compact 4D block and a halo row one tile copies is still in L2 when its
// neighbour copies it. A partial row has one extra site at each end (the x neighbours);
// halo rows use the inner TXH places of the same width.
struct Tile4 {
    int TXH, TY, TZ, TT, hx;
    __device__ int width() const { return TXH == hx ? hx : TXH + 2; }
    __device__ int pad() const { return TXH == hx ? 0 : 1; }
};
__device__ __forceinline__ void tile_origin(int b, const int (&n)[4], const int (&G)[4], int (&c)[4]) {
    const int gsize = G[0] * G[1] * G[2] * G[3];
    int in = b % gsize, g = b / gsize;
    int w[4];
    w[3] = in % G[3]; in /= G[3]; w[0] = in % G[0]; in /= G[0]; w[1] = in % G[1]; w[2] = in / G[1];
    int gg[4];
    gg[0] = g % (n[0] / G[0]); g /= n[0] / G[0]; gg[1] = g % (n[1] / G[1]); g /= n[1] / G[1]; gg[2] = g % (n[2] / G[2]); gg[3] = g / (n[2] / G[2]);
#pragma unroll
    for (int d = 0; d < 4; d++) c[d] = gg[d] * G[d] + w[d];
}
template <int STAGES>
__global__ void __launch_bounds__(256) hop_tile4(float4* __restrict__ out, const float4* __restrict__ psi, const float4* __restrict__ u, Lat lat, int stride,
                                                 int TXH, int TY, int TZ, int TT, int GX, int GY, int GZ, int GT, int rev_period) {
    extern __shared__ float4 sm[];
    const Tile tile{TY, TZ, TT};
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], L3 = lat.L[3];
    const int hx = L0 >> 1;
    const Tile4 t4{TXH, TY, TZ, TT, hx};
    const int W = t4.width(), pad = t4.pad();
    int tc[4];
    {
        const int n[4] = {hx / TXH, L1 / TY, L2 / TZ, L3 / TT}, G[4] = {GX, GY, GZ, GT};
        tile_origin(blockIdx.x, n, G, tc);
    }
    const int oxh = tc[0] * TXH, oy = tc[1] * TY, oz = tc[2] * TZ, ot = tc[3] * TT;
    // Every other run of rev_period blocks walks the slices backwards: the rows the previous
    // run copied last are the first this one needs, while they are still in L2.
    const bool rev = rev_period > 0 && ((blockIdx.x / rev_period) & 1);
    const int rows = tile.rows(), per_slice = rows * W;
    const int w = threadIdx.x;
    const int lx = w % TXH, ly = (w / TXH) % TY, lz = (w / (TXH * TY)) % TZ, lt = w / (TXH * TY * TZ);
    const int i = oxh + lx + hx * (oy + ly + L1 * (oz + lz + L2 * (ot + lt)));
    int x[4];
    coords(lat, i, 0, x);
    float g[8][12];
    int pos[8];
#pragma unroll
    for (int term = 0; term < 8; term++) {
        const int mu = term >> 1, d = (term & 1) ? -1 : 1;
        int ln = i;
        if (term & 1) {
            int y[4] = {x[0], x[1], x[2], x[3]};
            y[mu] -= 1; if (y[mu] < 0) y[mu] += lat.L[mu];
            const int lex = y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]));
            ln = ((y[0] + y[1] + y[2] + y[3]) & 1) * lat.half + (lex >> 1);
        }
#pragma unroll
        for (int c = 0; c < 3; c++) { const float4 v = __ldcs(u + (3 * mu + c) * lat.V + ln); g[term][4 * c] = v.x; g[term][4 * c + 1] = v.y; g[term][4 * c + 2] = v.z; g[term][4 * c + 3] = v.w; }
        if (mu == 0) {
            int xn = x[0] + d; if (xn < 0) xn += L0; if (xn >= L0) xn -= L0;
            int local = (xn >> 1) - oxh + pad; // the place in the row, the x halo at 0 and W - 1
            if (local < 0) local += hx;
            if (local >= hx) local -= hx;
            pos[term] = tile.slot(ly, lz, lt) * W + local;
        } else {
            pos[term] = tile.slot(ly + (mu == 1) * d, lz + (mu == 2) * d, lt + (mu == 3) * d) * W + lx + pad;
        }
    }
    constexpr int MAXJ = 8;
    int goff[MAXJ];
#pragma unroll
    for (int j = 0; j < MAXJ; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        goff[j] = -1;
        if (e < per_slice) {
            const int r = e / W, k = e - r * W;
            int ry, rz, rt;
            tile.row_of(r, ry, rz, rt);
            const bool own = r < tile.own();
            if (own || (k >= pad && k < pad + TXH)) {
                int cx = oxh + k - pad; cx += (cx < 0) * hx - (cx >= hx) * hx;
                int gy = oy + ry, gz = oz + rz, gt = ot + rt;
                gy += (gy < 0) * L1 - (gy >= L1) * L1; gz += (gz < 0) * L2 - (gz >= L2) * L2; gt += (gt < 0) * L3 - (gt >= L3) * L3;
                goff[j] = cx + hx * (gy + L1 * (gz + L2 * gt));
            }
        }
    }
    auto load_slice = [&](int s, int stage) {
        float4* dst = sm + stage * 6 * per_slice;
        const float4* src = psi + (size_t)(rev ? lat.Ls - 1 - s : s) * lat.half;
#pragma unroll
        for (int j = 0; j < MAXJ; j++) {
            if (goff[j] < 0) continue;
            const int e = threadIdx.x + j * blockDim.x;
#pragma unroll
            for (int c = 0; c < 6; c++) cp_async16(dst + c * per_slice + e, src + (size_t)c * stride + goff[j]);
        }
    };
#pragma unroll
    for (int k = 0; k < STAGES - 1; k++) { if (k < lat.Ls) load_slice(k, k); cp_async_commit(); }
    for (int s = 0; s < lat.Ls; s++) {
        if (s + STAGES - 1 < lat.Ls) load_slice(s + STAGES - 1, (s + STAGES - 1) % STAGES);
        cp_async_commit();
        cp_async_wait<STAGES - 1>();
        __syncthreads();
        const float4* buf = sm + (s % STAGES) * 6 * per_slice;
        cplx acc[4][3];
#pragma unroll
        for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = acc[q][2] = cplx{0, 0};
#pragma unroll
        for (int term = 0; term < 8; term++) {
            float r[24];
#pragma unroll
            for (int c = 0; c < 6; c++) { const float4 v = buf[c * per_slice + pos[term]]; r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
            cplx v[4][3];
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int a = 0; a < 3; a++) v[q][a] = {r[6 * q + 2 * a], r[6 * q + 2 * a + 1]};
            const Proj p = proj_of(term);
            cplx h[2][3];
#pragma unroll
            for (int a = 0; a < 3; a++) {
                h[0][a] = c_add(v[0][a], mul_phase(v[p.q0][a], p.p0));
                h[1][a] = c_add(v[1][a], mul_phase(v[p.q1][a], p.p1));
            }
            cplx m[3][3];
            unpack12(m, g[term]);
            if ((term & 1) == 0) transport<false>(h, m); else transport<true>(h, m);
#pragma unroll
            for (int a = 0; a < 3; a++) {
                acc[0][a] = c_add(acc[0][a], h[0][a]);
                acc[1][a] = c_add(acc[1][a], h[1][a]);
                acc[2][a] = c_add(acc[2][a], mul_phase(h[p.k2][a], p.e2));
                acc[3][a] = c_add(acc[3][a], mul_phase(h[p.k3][a], p.e3));
            }
        }
        const int io = (rev ? lat.Ls - 1 - s : s) * lat.half + i;
#pragma unroll
        for (int c = 0; c < 6; c++) {
            const int q0 = (4 * c) / 6, a0 = ((4 * c) % 6) / 2, q1 = (4 * c + 2) / 6, a1 = ((4 * c + 2) % 6) / 2;
            __stcs(out + c * stride + io, make_float4(acc[q0][a0].re, acc[q0][a0].im, acc[q1][a1].re, acc[q1][a1].im));
        }
        __syncthreads(); // the buffer of slice s is refilled next
    }
}

// E: C's tiles grouped into thread-block clusters (CY x CZ x CT tiles, sm_90): a tile's
// halo rows that another tile of the cluster owns are not copied from L2 but read from that
// tile's shared memory (distributed shared memory, ld.shared::cluster). One cluster barrier
// per slice: after it, every tile's slice s is in place and every tile is done reading
// slice s - 1, whose buffer the next copy reuses. Global reads per 5D site fall from C's
// rows / own rows to the cluster's.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned map_rank(unsigned addr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}
__device__ __forceinline__ float4 ld_cluster(unsigned addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <int STAGES>
__global__ void __launch_bounds__(256) hop_cluster(float4* __restrict__ out, const float4* __restrict__ psi, const float4* __restrict__ u, Lat lat, int stride,
                                                   int TY, int TZ, int TT, int CY, int CZ, int CT) {
    extern __shared__ float4 sm[];
    const Tile tile{TY, TZ, TT};
    const int L0 = lat.L[0], L1 = lat.L[1], L2 = lat.L[2], L3 = lat.L[3];
    const int hx = L0 >> 1;
    const int oy = blockIdx.x * TY, oz = blockIdx.y * TZ, ot = blockIdx.z * TT;
    const int cy = blockIdx.x % CY, cz = blockIdx.y % CZ, ct = blockIdx.z % CT; // place in the cluster
    const int rows = tile.rows(), per_slice = rows * hx;
    const int w = threadIdx.x;
    const int xh = w % hx, ly = (w / hx) % TY, lz = (w / (hx * TY)) % TZ, lt = w / (hx * TY * TZ);
    const int i = xh + hx * (oy + ly + L1 * (oz + lz + L2 * (ot + lt)));
    int x[4];
    coords(lat, i, 0, x);
    float g[8][12];
    unsigned addr[8]; // cluster-window byte address of the term's neighbour, chunk 0 of stage 0
    const unsigned base = smem_addr(sm);
    const unsigned chunk_bytes = per_slice * 16;
#pragma unroll
    for (int term = 0; term < 8; term++) {
        const int mu = term >> 1, d = (term & 1) ? -1 : 1;
        int ln = i;
        if (term & 1) {
            int y[4] = {x[0], x[1], x[2], x[3]};
            y[mu] -= 1; if (y[mu] < 0) y[mu] += lat.L[mu];
            const int lex = y[0] + L0 * (y[1] + L1 * (y[2] + L2 * y[3]));
            ln = ((y[0] + y[1] + y[2] + y[3]) & 1) * lat.half + (lex >> 1);
        }
#pragma unroll
        for (int c = 0; c < 3; c++) { const float4 v = __ldcs(u + (3 * mu + c) * lat.V + ln); g[term][4 * c] = v.x; g[term][4 * c + 1] = v.y; g[term][4 * c + 2] = v.z; g[term][4 * c + 3] = v.w; }
        if (mu == 0) {
            int xn = x[0] + d; if (xn < 0) xn += L0; if (xn >= L0) xn -= L0;
            addr[term] = base + 16u * (tile.slot(ly, lz, lt) * hx + (xn >> 1));
        } else {
            int ny_ = ly + (mu == 1) * d, nz_ = lz + (mu == 2) * d, nt_ = lt + (mu == 3) * d;
            int ry = cy, rz = cz, rt = ct; // the tile of the cluster that owns the row, if one does
            bool remote = false;
            if (ny_ < 0 && cy > 0) { remote = true; ry = cy - 1; ny_ += TY; }
            if (ny_ >= TY && cy + 1 < CY) { remote = true; ry = cy + 1; ny_ -= TY; }
            if (nz_ < 0 && cz > 0) { remote = true; rz = cz - 1; nz_ += TZ; }
            if (nz_ >= TZ && cz + 1 < CZ) { remote = true; rz = cz + 1; nz_ -= TZ; }
            if (nt_ < 0 && ct > 0) { remote = true; rt = ct - 1; nt_ += TT; }
            if (nt_ >= TT && ct + 1 < CT) { remote = true; rt = ct + 1; nt_ -= TT; }
            const unsigned a = base + 16u * (tile.slot(ny_, nz_, nt_) * hx + (x[0] >> 1));
            addr[term] = remote ? map_rank(a, ry + CY * (rz + CZ * rt)) : a;
        }
    }
    // Own rows and the halo rows no other tile of the cluster owns.
    constexpr int MAXJ = 8;
    int goff[MAXJ];
#pragma unroll
    for (int j = 0; j < MAXJ; j++) {
        const int e = threadIdx.x + j * blockDim.x;
        goff[j] = -1;
        if (e < per_slice) {
            const int r = e / hx, xx = e - r * hx;
            int ry, rz, rt;
            tile.row_of(r, ry, rz, rt);
            const bool shared = (ry < 0 && cy > 0) || (ry >= TY && cy + 1 < CY) || (rz < 0 && cz > 0) || (rz >= TZ && cz + 1 < CZ) ||
                                (rt < 0 && ct > 0) || (rt >= TT && ct + 1 < CT);
            if (!shared) {
                int gy = oy + ry, gz = oz + rz, gt = ot + rt;
                gy += (gy < 0) * L1 - (gy >= L1) * L1; gz += (gz < 0) * L2 - (gz >= L2) * L2; gt += (gt < 0) * L3 - (gt >= L3) * L3;
                goff[j] = xx + hx * (gy + L1 * (gz + L2 * gt));
            }
        }
    }
    auto load_slice = [&](int s, int stage) {
        float4* dst = sm + stage * 6 * per_slice;
        const float4* src = psi + (size_t)s * lat.half;
#pragma unroll
        for (int j = 0; j < MAXJ; j++) {
            if (goff[j] < 0) continue;
            const int e = threadIdx.x + j * blockDim.x;
#pragma unroll
            for (int c = 0; c < 6; c++) cp_async16(dst + c * per_slice + e, src + (size_t)c * stride + goff[j]);
        }
    };
#pragma unroll
    for (int k = 0; k < STAGES - 1; k++) { if (k < lat.Ls) load_slice(k, k); cp_async_commit(); }
    for (int s = 0; s < lat.Ls; s++) {
        cp_async_wait<STAGES - 2>(); // slice s has landed in this tile
        cluster_sync();              // ... and in every tile; every tile is done with slice s - 1
        if (s + STAGES - 1 < lat.Ls) load_slice(s + STAGES - 1, (s + STAGES - 1) % STAGES);
        cp_async_commit();
        const unsigned stage_off = (unsigned)(s % STAGES) * 6u * chunk_bytes;
        cplx acc[4][3];
#pragma unroll
        for (int q = 0; q < 4; q++) acc[q][0] = acc[q][1] = acc[q][2] = cplx{0, 0};
#pragma unroll
        for (int term = 0; term < 8; term++) {
            float r[24];
#pragma unroll
            for (int c = 0; c < 6; c++) { const float4 v = ld_cluster(addr[term] + stage_off + c * chunk_bytes); r[4 * c] = v.x; r[4 * c + 1] = v.y; r[4 * c + 2] = v.z; r[4 * c + 3] = v.w; }
            cplx v[4][3];
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int a = 0; a < 3; a++) v[q][a] = {r[6 * q + 2 * a], r[6 * q + 2 * a + 1]};
            const Proj p = proj_of(term);
            cplx h[2][3];
#pragma unroll
            for (int a = 0; a < 3; a++) {
                h[0][a] = c_add(v[0][a], mul_phase(v[p.q0][a], p.p0));
                h[1][a] = c_add(v[1][a], mul_phase(v[p.q1][a], p.p1));
            }
            cplx m[3][3];
            unpack12(m, g[term]);
            if ((term & 1) == 0) transport<false>(h, m); else transport<true>(h, m);
#pragma unroll
            for (int a = 0; a < 3; a++) {
                acc[0][a] = c_add(acc[0][a], h[0][a]);
                acc[1][a] = c_add(acc[1][a], h[1][a]);
                acc[2][a] = c_add(acc[2][a], mul_phase(h[p.k2][a], p.e2));
                acc[3][a] = c_add(acc[3][a], mul_phase(h[p.k3][a], p.e3));
            }
        }
        const int io = s * lat.half + i;
#pragma unroll
        for (int c = 0; c < 6; c++) {
            const int q0 = (4 * c) / 6, a0 = ((4 * c) % 6) / 2, q1 = (4 * c + 2) / 6, a1 = ((4 * c + 2) % 6) / 2;
            __stcs(out + c * stride + io, make_float4(acc[q0][a0].re, acc[q0][a0].im, acc[q1][a1].re, acc[q1][a1].im));
        }
    }
    cluster_sync(); // no tile leaves while another may still read its shared memory
}

// The card's L2 read bandwidth: every thread re-reads a buffer that fits in L2 (ld.global.cg).
__global__ void l2read(const float4* __restrict__ p, size_t n, int reps, float* sink) {
    float s = 0.f;
    for (int r = 0; r < reps; r++)
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
            const float4 v = __ldcg(p + i);
            s += v.x + v.y + v.z + v.w;
        }
    if (s == 1234.5f) sink[0] = s;
}

__global__ void copy_kernel(float4* dst, const float4* src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) dst[i] = src[i];
}
__device__ unsigned hash32(unsigned x) { x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x; }
__global__ void fill(float* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = -1.0f + 2.0f * (hash32((unsigned)i * 2654435761u + seed) >> 8) * (1.0f / 16777216.0f);
}

template <typename F> float time_ms(F launch, int reps = 30) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int k = 0; k < 5; k++) launch();
    std::vector<float> ts;
    for (int batch = 0; batch < 7; batch++) {
        CK(cudaEventRecord(a));
        for (int k = 0; k < reps; k++) launch();
        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms / reps);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

int main(int argc, char** argv) {
    const int L = argc > 1 ? atoi(argv[1]) : 32, Ls = argc > 2 ? atoi(argv[2]) : 12;
    const char* filter = argc > 3 ? argv[3] : nullptr; // run only the variants whose name holds it (and the reference)
    auto want = [&](const char* name) { return filter == nullptr || strstr(name, filter) != nullptr; };
    Lat lat; lat.L[0] = lat.L[1] = lat.L[2] = lat.L[3] = L; lat.V = L * L * L * L; lat.half = lat.V / 2; lat.Ls = Ls;
    const int stride = lat.half * Ls;
    const size_t nspin = (size_t)6 * stride, nlink = (size_t)12 * lat.V;
    float4 *psi, *out, *ref, *u;
    CK(cudaMalloc(&psi, nspin * 16)); CK(cudaMalloc(&out, nspin * 16)); CK(cudaMalloc(&ref, nspin * 16)); CK(cudaMalloc(&u, nlink * 16));
    fill<<<1024, 256>>>((float*)psi, nspin * 4, 1); fill<<<1024, 256>>>((float*)u, nlink * 4, 2);
    CK(cudaDeviceSynchronize());
    // Copy roofline: 1 GiB read + write.
    const size_t ncopy = (size_t)1 << 26;
    float4 *ca, *cb2; CK(cudaMalloc(&ca, ncopy * 16)); CK(cudaMalloc(&cb2, ncopy * 16));
    const float copy_ms = time_ms([&] { copy_kernel<<<132 * 16, 256>>>(cb2, ca, ncopy); });
    const double copy_gbs = 2.0 * ncopy * 16 / (copy_ms * 1e6);
    {   // L2: 24 MiB re-read 40 times
        const size_t nl2 = (size_t)24 << 16; float* sink; CK(cudaMalloc(&sink, 4));
        int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        const float l2_ms = time_ms([&] { l2read<<<sms * 8, 256>>>(ca, nl2, 40, sink); }, 5);
        printf("L2 read (24 MiB x 40): %.0f GB/s\n", 40.0 * nl2 * 16 / (l2_ms * 1e6));
    }
    // The issue's minimal byte model: 24 reals in and out per 5D site, the recon-12 field once.
    const double bytes = (double)lat.half * Ls * 192 + (double)lat.V * 4 * 48;
    printf("lattice %d^4 Ls %d: copy %.0f GB/s; model bytes %.3f GB -> %.1f us at copy\n", L, Ls, copy_gbs, bytes / 1e9, bytes / copy_gbs / 1e3);
    auto report = [&](const char* name, float ms, bool is_ref) {
        if (is_ref) { CK(cudaMemcpy(ref, out, nspin * 16, cudaMemcpyDeviceToDevice)); }
        std::vector<float> a(nspin * 4), b(nspin * 4);
        CK(cudaMemcpy(a.data(), out, nspin * 16, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), ref, nspin * 16, cudaMemcpyDeviceToHost));
        double diff = 0; for (size_t k = 0; k < a.size(); k++) diff = std::max(diff, (double)fabsf(a[k] - b[k]));
        printf("RESULT %-58s %9.1f us  %6.1f %%copy  max|diff| %.2e\n", name, ms * 1e3, 100.0 * bytes / (ms * 1e6) / copy_gbs, diff);
        CK(cudaMemset(out, 0xff, nspin * 16));
    };
    const int hx = L / 2;
    // A: today's rows, block (bx, Ls or a divisor), band budgets.
    for (int cached = 0; cached < 2; cached++)
        for (int bx : {16})
            for (int by : {Ls, Ls / 2}) {
                if (Ls % by || bx * by > 1024) continue;
                for (int band : {1 << 16, 1 << 18}) {
                    const bool is_ref = cached == 0 && bx == 16 && by == Ls && band == (1 << 16);
                    if (!is_ref && filter != nullptr && strstr("rows", filter) == nullptr) continue;
                    dim3 block(bx, by), grid((lat.half + bx - 1) / bx, Ls / by);
                    auto go = [&] { if (cached) hop_rows<true><<<grid, block>>>(out, psi, u, lat, stride, band); else hop_rows<false><<<grid, block>>>(out, psi, u, lat, stride, band); };
                    const float ms = time_ms(go);
                    go(); CK(cudaDeviceSynchronize());
                    char name[128]; snprintf(name, sizeof name, "rows links=%s block=%dx%d band=%d", cached ? "cached" : "stream", bx, by, band);
                    report(name, ms, cached == 0 && bx == 16 && by == Ls && band == (1 << 16));
                }
            }
    // C: shared-memory tiles, 1 to 3 slices in flight.
    const int shapes[][3] = {{2, 2, 2}, {4, 2, 2}, {2, 2, 4}, {2, 4, 2}, {1, 2, 4}, {2, 1, 4}, {1, 1, 8}, {2, 2, 1}};
    for (auto& sh : shapes) {
        const int TY = sh[0], TZ = sh[1], TT = sh[2], nthreads = hx * TY * TZ * TT;
        if (L % TY || L % TZ || L % TT || nthreads > 256) continue;
        const int rows = TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ);
        for (int lreg = 0; lreg < 2; lreg++)
        for (int stages : {2, 3}) {
            const size_t smem = (size_t)stages * 6 * rows * hx * 16;
            if (smem > 227 * 1024) continue;
            char name[128]; snprintf(name, sizeof name, "smem %dx%dx%dx%d %s stages=%d (%.2f r/s, %zu KB)", hx, TY, TZ, TT, lreg ? "lreg" : "lL1", stages, (double)rows / (TY * TZ * TT), smem / 1024);
            if (!want(name)) continue;
            auto k = lreg ? (stages == 2 ? hop_smem<2, true> : hop_smem<3, true>) : (stages == 2 ? hop_smem<2, false> : hop_smem<3, false>);
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            const int tiles = lat.half / nthreads;
            auto go = [&] { k<<<tiles, nthreads, smem>>>(out, psi, u, lat, stride, TY, TZ, TT); };
            const float ms = time_ms(go);
            go(); CK(cudaDeviceSynchronize());
            report(name, ms, false);
        }
    }
    // D: the terms split over warps, shared-memory tiles.
    const int dshapes[][3] = {{2, 1, 4}, {1, 2, 4}, {2, 2, 2}, {2, 2, 4}, {1, 1, 8}, {2, 1, 8}};
    for (auto& sh : dshapes) {
        const int TY = sh[0], TZ = sh[1], TT = sh[2], T = hx * TY * TZ * TT;
        if (L % TY || L % TZ || L % TT || T % 32) continue;
        const int rows = TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ);
        for (int nsplit : {2, 4})
            for (int stages : {2, 3}) {
                const int nthreads = T * nsplit;
                if (nthreads > (nsplit == 2 ? 256 : 512)) continue;
                const size_t smem = ((size_t)stages * 6 * rows * hx + (size_t)nsplit * 6 * T) * 16;
                if (smem > 227 * 1024) continue;
                if ((rows * hx + nthreads - 1) / nthreads > 8) continue;
                char name[128]; snprintf(name, sizeof name, "split%d %dx%dx%dx%d stages=%d (%.2f r/s, %zu KB, %d thr)", nsplit, hx, TY, TZ, TT, stages, (double)rows / (TY * TZ * TT), smem / 1024, nthreads);
                if (!want(name)) continue;
                auto k = nsplit == 2 ? (stages == 2 ? hop_split<2, 2> : hop_split<2, 3>) : (stages == 2 ? hop_split<4, 2> : hop_split<4, 3>);
                CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                const int tiles = lat.half / T;
                auto go = [&] { k<<<tiles, nthreads, smem>>>(out, psi, u, lat, stride, TY, TZ, TT); };
                const float ms = time_ms(go);
                go(); CK(cudaDeviceSynchronize());
                report(name, ms, false);
            }
    }
    // E: C's tiles in clusters, the halo rows other tiles of the cluster own read from their shared memory.
    const int eshapes[][6] = {{2, 2, 4, 2, 2, 1}, {2, 2, 4, 2, 2, 2}, {2, 2, 4, 1, 2, 2}, {2, 2, 4, 2, 1, 2}, {2, 2, 4, 1, 1, 2}, {2, 2, 4, 2, 1, 1},
                              {2, 1, 4, 2, 2, 2}, {2, 1, 4, 1, 4, 2}, {2, 1, 4, 2, 4, 1}, {2, 2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 1}, {1, 2, 4, 4, 2, 1},
                              {2, 2, 4, 2, 2, 4}, {2, 2, 4, 4, 2, 2}};
    for (auto& sh : eshapes) {
        const int TY = sh[0], TZ = sh[1], TT = sh[2], CY = sh[3], CZ = sh[4], CT = sh[5], nthreads = hx * TY * TZ * TT;
        if (L % TY || L % TZ || L % TT || nthreads > 256 || (L / TY) % CY || (L / TZ) % CZ || (L / TT) % CT) continue;
        const int rows = TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ);
        const int own = TY * TZ * TT, CYT = CY * TY, CZT = CZ * TZ, CTT = CT * TT;
        const double loaded = (double)(CYT * CZT * CTT + 2 * (CZT * CTT + CYT * CTT + CYT * CZT)) / (CY * CZ * CT * own);
        for (int stages : {2, 3}) {
            const size_t smem = (size_t)stages * 6 * rows * hx * 16;
            if (smem > 227 * 1024 || (rows * hx + nthreads - 1) / nthreads > 8) continue;
            char name[128]; snprintf(name, sizeof name, "cluster %dx%dx%dx%d c%dx%dx%d stages=%d (%.2f r/s, %zu KB)", hx, TY, TZ, TT, CY, CZ, CT, stages, loaded, smem / 1024);
            if (!want(name)) continue;
            auto k = stages == 2 ? hop_cluster<2> : hop_cluster<3>;
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            if (CY * CZ * CT > 8) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(L / TY, L / TZ, L / TT); cfg.blockDim = dim3(nthreads); cfg.dynamicSmemBytes = smem;
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = CY; attr[0].val.clusterDim.y = CZ; attr[0].val.clusterDim.z = CT;
            cfg.attrs = attr; cfg.numAttrs = 1;
            int nclusters = 0;
            if (cudaOccupancyMaxActiveClusters(&nclusters, k, &cfg) != cudaSuccess || nclusters == 0) { cudaGetLastError(); printf("SKIP %s: no cluster fits\n", name); continue; }
            auto go = [&] { CK(cudaLaunchKernelEx(&cfg, k, out, (const float4*)psi, (const float4*)u, lat, stride, TY, TZ, TT, CY, CZ, CT)); };
            const float ms = time_ms(go);
            go(); CK(cudaDeviceSynchronize());
            printf("  (%d clusters resident)\n", nclusters);
            report(name, ms, false);
        }
    }
    // F: 4D tiles (partial x rows) and compact tile orders.
    const int fshapes[][8] = {
        // TXH TY TZ TT | group GX GY GZ GT (0: the whole extent)
        {0, 2, 2, 4, 1, 1, 1, 1}, {0, 2, 2, 4, 1, 4, 4, 0}, {0, 2, 2, 4, 1, 2, 8, 0}, {0, 2, 2, 4, 1, 8, 2, 0}, {0, 2, 2, 4, 1, 4, 8, 4},
        {0, 2, 2, 4, 1, 2, 4, 0}, {0, 2, 2, 4, 1, 0, 4, 2}, {0, 2, 2, 2, 1, 4, 4, 0}, {0, 2, 1, 4, 1, 4, 4, 0}, {0, 1, 2, 4, 1, 4, 4, 0}};
    for (auto& sh : fshapes) {
        const int TXH = sh[0] ? sh[0] : hx, TY = sh[1], TZ = sh[2], TT = sh[3];
        const int n[4] = {hx / TXH, L / TY, L / TZ, L / TT};
        int G[4];
        for (int d = 0; d < 4; d++) G[d] = sh[4 + d] ? sh[4 + d] : n[d];
        const int nthreads = TXH * TY * TZ * TT;
        bool ok = hx % TXH == 0 && (TXH == hx || TXH + 2 <= hx) && L % TY == 0 && L % TZ == 0 && L % TT == 0 && nthreads <= 256;
        for (int d = 0; d < 4 && ok; d++) ok = G[d] <= n[d] && n[d] % G[d] == 0;
        if (!ok) continue;
        const int Wd = TXH == hx ? hx : TXH + 2;
        const int rows = TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ);
        const double loaded = (double)(TY * TZ * TT * (TXH == hx ? hx : TXH + 2) + 2 * (TZ * TT + TY * TT + TY * TZ) * TXH) / nthreads;
        const int gsize = G[0] * G[1] * G[2] * G[3];
        for (int stages : {2, 3})
        for (int rev_period : {0, gsize, 132, 264}) {
            if (rev_period == gsize && gsize == 1) continue;
            const size_t smem = (size_t)stages * 6 * rows * Wd * 16;
            if (smem > 227 * 1024 || (rows * Wd + nthreads - 1) / nthreads > 8) continue;
            char name[160]; snprintf(name, sizeof name, "tile4 %dx%dx%dx%d order %dx%dx%dx%d rev %d stages=%d (%.2f r/s, %zu KB)", 2 * TXH, TY, TZ, TT, G[0], G[1], G[2], G[3], rev_period, stages, loaded, smem / 1024);
            if (!want(name)) continue;
            auto k = stages == 2 ? hop_tile4<2> : hop_tile4<3>;
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            const int tiles = lat.half / nthreads;
            auto go = [&] { k<<<tiles, nthreads, smem>>>(out, psi, u, lat, stride, TXH, TY, TZ, TT, G[0], G[1], G[2], G[3], rev_period); };
            const float ms = time_ms(go);
            go(); CK(cudaDeviceSynchronize());
            report(name, ms, false);
        }
    }
    // F in clusters: the tiles of one order group launched as one thread-block cluster, with
    // no distributed shared memory (each tile still copies all its rows): only so that they
    // run on one GPC, behind one L2 partition, and a halo row one copies is a hit for the next.
    const int cshapes[][8] = {{0, 2, 2, 4, 1, 1, 1, 2}, {0, 2, 2, 4, 1, 1, 2, 2}, {0, 2, 2, 4, 1, 2, 2, 1}, {0, 2, 2, 4, 1, 2, 2, 2},
                              {0, 2, 2, 4, 1, 1, 2, 4}, {0, 2, 2, 4, 1, 2, 2, 4}, {0, 2, 2, 4, 1, 4, 2, 2}, {0, 2, 2, 4, 1, 4, 4, 1},
                              {0, 2, 2, 2, 1, 2, 2, 2}, {0, 2, 2, 2, 1, 2, 2, 4}, {0, 2, 2, 2, 1, 4, 4, 1}};
    for (auto& sh : cshapes) {
        const int TXH = sh[0] ? sh[0] : hx, TY = sh[1], TZ = sh[2], TT = sh[3];
        const int n[4] = {hx / TXH, L / TY, L / TZ, L / TT};
        const int G[4] = {sh[4], sh[5], sh[6], sh[7]};
        const int nthreads = TXH * TY * TZ * TT, csize = G[0] * G[1] * G[2] * G[3];
        bool ok = TXH == hx && L % TY == 0 && L % TZ == 0 && L % TT == 0 && nthreads <= 256;
        for (int d = 0; d < 4 && ok; d++) ok = n[d] % G[d] == 0;
        if (!ok) continue;
        const int rows = TY * TZ * TT + 2 * (TZ * TT + TY * TT + TY * TZ);
        for (int clustered : {0, 1}) {
            const int stages = 2;
            const size_t smem = (size_t)stages * 6 * rows * hx * 16;
            char name[160]; snprintf(name, sizeof name, "gpc %dx%dx%dx%d group %dx%dx%dx%d %s stages=%d (%zu KB)", 2 * TXH, TY, TZ, TT, G[0], G[1], G[2], G[3], clustered ? "cluster" : "plain", stages, smem / 1024);
            if (!want(name)) continue;
            auto k = hop_tile4<2>;
            CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            if (csize > 8) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(lat.half / nthreads); cfg.blockDim = dim3(nthreads); cfg.dynamicSmemBytes = smem;
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = clustered ? csize : 1; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
            cfg.attrs = attr; cfg.numAttrs = 1;
            int nclusters = 0;
            if (cudaOccupancyMaxActiveClusters(&nclusters, k, &cfg) != cudaSuccess || nclusters == 0) { cudaGetLastError(); printf("SKIP %s: no cluster fits\n", name); continue; }
            const int zero = 0, GX = G[0], GY = G[1], GZ = G[2], GT = G[3];
            auto go = [&] { CK(cudaLaunchKernelEx(&cfg, k, out, (const float4*)psi, (const float4*)u, lat, stride, TXH, TY, TZ, TT, GX, GY, GZ, GT, zero)); };
            const float ms = time_ms(go);
            go(); CK(cudaDeviceSynchronize());
            printf("  (%d clusters of %d resident)\n", nclusters, clustered ? csize : 1);
            report(name, ms, false);
        }
    }
    return 0;
}
