#include "engine/bench/context.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gphkv::bench {
namespace {

__global__ void count_ones(const uint8_t* flags, uint64_t n, unsigned long long* count) {
  uint64_t c = 0;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    c += flags[i] == 1;
  }
  atomicAdd(count, static_cast<unsigned long long>(c));
}

}  // namespace

double median_ms(int reps, cudaStream_t s, const std::function<void()>& body, const std::function<void()>& between) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int r = 0; r <= reps; ++r) {
    if (between) between();
    CK(cudaEventRecord(a, s));
    body();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (r > 0) t.push_back(ms);  // r == 0 is the warm-up
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

TableBuffers::TableBuffers(uint64_t batch, uint64_t nq) {
  CK(cudaMalloc(&keys, batch * 8));
  CK(cudaMalloc(&values, batch * 8));
  CK(cudaMalloc(&outcomes, batch));
  CK(cudaMalloc(&erased, batch));
  CK(cudaMalloc(&queries, nq * 8));
  CK(cudaMalloc(&out, nq * 8));
  CK(cudaMalloc(&found, nq));
  CK(cudaMalloc(&count, 8));
}

TableBuffers::~TableBuffers() {
  for (void* p : {(void*)keys, (void*)values, (void*)outcomes, (void*)erased, (void*)queries, (void*)out, (void*)found,
                  (void*)count}) {
    CK(cudaFree(p));
  }
}

void check_hits(Context& c, const uint8_t* found, uint64_t nq, int hit_pct, unsigned long long* count,
                const char* who) {
  CK(cudaMemsetAsync(count, 0, 8, c.s));
  count_ones<<<c.sms * 4, 256, 0, c.s>>>(found, nq, count);
  CK(cudaGetLastError());
  unsigned long long hits = 0;
  CK(cudaMemcpyAsync(&hits, count, 8, cudaMemcpyDeviceToHost, c.s));
  CK(cudaStreamSynchronize(c.s));
  const double frac = static_cast<double>(hits) / nq;
  if (std::abs(frac - hit_pct / 100.0) > 0.01) {
    std::fprintf(stderr, "%s: %.4f of the queries hit, expected %d%%\n", who, frac, hit_pct);
    std::exit(3);
  }
}

void trim_memory_pool() {
  CK(cudaDeviceSynchronize());
  cudaMemPool_t pool;
  CK(cudaDeviceGetDefaultMemPool(&pool, 0));
  CK(cudaMemPoolTrimTo(pool, 0));
}

}  // namespace gphkv::bench
