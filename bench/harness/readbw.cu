// Read-only and copy bandwidth on the device: float4 loads, U in flight per thread.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
template <int U> __global__ void readk(const float4* __restrict__ p, size_t n, float* out) {
    float s = 0.f;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i + (U - 1) * stride < n; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; u++) s += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    if (s == 1234.5f) out[0] = s;
}
__global__ void copyk(const float4* __restrict__ x, float4* __restrict__ y, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) y[i] = x[i];
}
int main() {
    size_t bytes = 1ull << 30, n = bytes / 16;
    float4 *a, *b; float* o; cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMalloc(&o, 4);
    cudaMemset(a, 1, bytes);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    auto time = [&](auto f) { for (int w = 0; w < 3; w++) f(); std::vector<float> t; for (int r = 0; r < 11; r++) { cudaEventRecord(e0); f(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); } std::sort(t.begin(), t.end()); return t[5]; };
    float tc = time([&] { copyk<<<sms * 8, 256>>>(a, b, n / 2); });
    printf("READBW copy (512 MiB -> 512 MiB): %.0f GB/s (read + write)\n", 2 * bytes / 2 / tc / 1e6);
    float t1 = time([&] { readk<1><<<sms * 8, 256>>>(a, n, o); });
    float t2 = time([&] { readk<2><<<sms * 8, 256>>>(a, n, o); });
    float t4 = time([&] { readk<4><<<sms * 8, 256>>>(a, n, o); });
    float t8 = time([&] { readk<8><<<sms * 8, 256>>>(a, n, o); });
    printf("READBW read 1 GiB: U=1 %.0f  U=2 %.0f  U=4 %.0f  U=8 %.0f GB/s\n", bytes / t1 / 1e6, bytes / t2 / 1e6, bytes / t4 / 1e6, bytes / t8 / 1e6);
    return 0;
}
