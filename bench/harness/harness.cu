// Timing harness for one qdsl-generated stencil kernel at 32^4, one parity (see README.md).
//
// Built by run.sh with -DKFILE="\"file.cu\"" (the kernel source, #included), -DKNAME=<its
// extern "C" name> and -DKIND=<signature>:
//   1  improved staggered, f32, fat recon 18, long recon 13 (record, phase array, scale)
//   2  Wilson hop, fixed16, recon 12 (norms)
//   3  Wilson hop, f32, recon 12
//   4  improved staggered, f32, fat recon 18, long recon 12 + sign (record, scale)
// Fields are filled with hashed random data on the device (timing does not depend on the
// values; the long-recon-13 phases are the 0/1 that recon 12 + sign computes, so kinds 1
// and 4 compute the same function). Every launch configuration of blocks x shared-memory
// throttle is timed (median of 15 batches of 10 launches after 10 warm-up launches), the
// best one again 41 times; one line "RESULT ..." per kernel. With a second argument the
// output of one launch (block 128, output poisoned first) is written there for comparison.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include KFILE

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__device__ unsigned hash32(unsigned x) { x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x; }
__global__ void fill_words(unsigned* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = hash32((unsigned)i * 2654435761u + seed);
}
__global__ void fill_f32(float* p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = lo + (hi - lo) * (hash32((unsigned)i * 2654435761u + seed) >> 8) * (1.0f / 16777216.0f);
}
// t = arg(det W)/pi in {0, 1}: the staggered sign of each 3-site long link (MILC phases,
// antiperiodic time), the sign recon 12 + sign computes in the kernel.
__global__ void fill_phase(float* ph, int V, int L0, int L1, int L2, int L3) {
    int ln = blockIdx.x * blockDim.x + threadIdx.x;
    if (ln >= V) return;
    int half = V / 2, par = ln / half, idx = ln % half, z[4], r = 2 * idx;
    z[0] = r % L0; r /= L0; z[1] = r % L1; r /= L1; z[2] = r % L2; z[3] = r / L2;
    z[0] += (z[0] + z[1] + z[2] + z[3] + par) & 1;
    for (int mu = 0; mu < 4; mu++) {
        int e = (mu == 0) ? z[3] : (mu == 1) ? z[3] + z[0] : (mu == 2) ? z[3] + z[0] + z[1] : 0;
        if (mu == 3) e += (z[3] >= L3 - 3);
        ph[mu * V + ln] = (e & 1) ? 1.0f : 0.0f;
    }
}
static char* dalloc(size_t bytes) { void* p; CK(cudaMalloc(&p, bytes)); return (char*)p; }

int main(int argc, char** argv) {
    const char* name = argv[1];
    const char* dump = argc > 2 ? argv[2] : nullptr;
    const int L = 32, V = L * L * L * L, half = V / 2;
    const bool staggered = KIND == 1 || KIND == 4;
    // Bytes per site of the fields: spinor (out, in), gauge (per site, 4 links), long links.
    const size_t site = staggered ? 24 : KIND == 2 ? 52 : 96;
    const size_t links = staggered ? 288 : KIND == 2 ? 96 : 192;
    char* d_out = dalloc(site * half);
    char* d_in = dalloc(site * half);
    char* d_u = dalloc(links * V);
    char* d_long = staggered ? dalloc(192ull * V) : nullptr;
    float* d_phase = KIND == 1 ? (float*)dalloc(16ull * V) : nullptr;
    if (KIND == 2) {
        fill_words<<<1024, 256>>>((unsigned*)d_in, 48ull * half / 4, 1);
        fill_f32<<<1024, 256>>>((float*)(d_in + 48ull * half), half, 2, 0.5f, 2.0f);
        fill_words<<<1024, 256>>>((unsigned*)d_u, links * V / 4, 3);
    } else {
        fill_f32<<<1024, 256>>>((float*)d_in, site * half / 4, 1, -1, 1);
        fill_f32<<<1024, 256>>>((float*)d_u, links * V / 4, 3, -1, 1);
    }
    if (d_long) fill_f32<<<1024, 256>>>((float*)d_long, 192ull * V / 4, 4, -1, 1);
    if (d_phase) fill_phase<<<(V + 255) / 256, 256>>>(d_phase, V, L, L, L, L);
    CK(cudaDeviceSynchronize());
    (void)d_long;
    (void)d_phase;
    auto launch = [&](int block, int smem) {
        const int grid = (half + block - 1) / block;
#if KIND == 1
        KNAME<<<grid, block, smem>>>((float4*)d_out, (const float4*)d_in, (const float4*)d_u, (const float4*)d_long, d_phase, -0.04f, L, L, L, L, half, half, half, V, V);
#elif KIND == 2
        KNAME<<<grid, block, smem>>>((uint4*)d_out, (float*)(d_out + 48ull * half), (const uint4*)d_in, (const float*)(d_in + 48ull * half), (const uint2*)d_u, L, L, L, L, half, half, half, V);
#elif KIND == 3
        KNAME<<<grid, block, smem>>>((float4*)d_out, (const float4*)d_in, (const float4*)d_u, L, L, L, L, half, half, half, V);
#else
        KNAME<<<grid, block, smem>>>((float4*)d_out, (const float4*)d_in, (const float4*)d_u, (const float4*)d_long, -0.04f, L, L, L, L, half, half, half, V, V);
#endif
    };
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto batches = [&](int block, int smem, int n) {
        std::vector<float> t;
        for (int s = 0; s < n; s++) {
            CK(cudaEventRecord(e0));
            for (int r = 0; r < 10; r++) launch(block, smem);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 100.0f);  // µs per launch
        }
        std::sort(t.begin(), t.end());
        return t;
    };
    float best = 1e30f;
    int best_block = 0, best_smem = 0;
    for (int block : {64, 96, 128, 192, 256, 384, 512}) {
        for (int smem : {0, 6144, 13568, 28160}) {
            for (int w = 0; w < 10; w++) launch(block, smem);
            CK(cudaGetLastError());
            const float med = batches(block, smem, 15)[7];
            if (med < best) { best = med; best_block = block; best_smem = smem; }
        }
    }
    const std::vector<float> t = batches(best_block, best_smem, 41);
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, KNAME));
    printf("RESULT %-34s best %7.2f us (block %3d smem %5d)  repeat median %7.2f  min %7.2f  max %7.2f  regs %d\n",
           name, best, best_block, best_smem, t[20], t[0], t[40], fa.numRegs);
    if (dump) {
        CK(cudaMemset(d_out, 0xff, site * half));
        launch(128, 0);
        CK(cudaDeviceSynchronize());
        std::vector<char> h(site * half);
        CK(cudaMemcpy(h.data(), d_out, h.size(), cudaMemcpyDeviceToHost));
        FILE* f = fopen(dump, "wb");
        fwrite(h.data(), 1, h.size(), f);
        fclose(f);
    }
    return 0;
}
