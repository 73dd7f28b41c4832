// The random-gather ceiling (the method of shared/device/ceiling_probe.cu):
// the memory traffic of a one-probe lookup without its work.
#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {
namespace {

// Each group of G threads reads one random BYTES-byte block (16 bytes per
// vector); when value_every > 0, every value_every-th query also reads one
// 8-byte word at another random place (a hit's value read).
template <int G, int BYTES>
__global__ void gather_ceiling(const int4* table, uint64_t nb, uint64_t nq, uint32_t seed, const uint64_t* values,
                               uint64_t nvalues, int value_every, unsigned long long* sink) {
  constexpr int V = BYTES / 16 / G;
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint32_t lane = threadIdx.x % G;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x / G;
  uint64_t acc = 0;
  for (uint64_t q = tid / G; q < nq; q += stride) {
    const uint32_t h = fmix32(static_cast<uint32_t>(q) ^ seed);
    const uint64_t b = static_cast<uint64_t>(h) * nb >> 32;
    const int4* p = table + b * (BYTES / 16) + lane * V;
    int4 v[V];
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = __ldg(p + i);
#pragma unroll
    for (int i = 0; i < V; ++i) acc += static_cast<uint32_t>(v[i].x) ^ static_cast<uint32_t>(v[i].w);
    if (value_every > 0 && lane == 0 && q % value_every == 0) {
      acc += __ldg(values + (static_cast<uint64_t>(fmix32(h)) * nvalues >> 32));
    }
  }
  if (acc == 42) atomicAdd(sink, 1ull);
}

}  // namespace

double gather_ceiling_gops(Context& c, uint64_t bytes, uint64_t nq, int value_every, const uint64_t* values,
                           uint64_t nvalues) {
  int4* buf;
  unsigned long long* sink;
  CK(cudaMalloc(&buf, bytes));
  CK(cudaMalloc(&sink, 8));
  CK(cudaMemsetAsync(buf, 1, bytes, c.s));
  const uint64_t nb = bytes / 128;
  uint32_t seed = 1;
  const double ms = median_ms(c.args.reps, c.s, [&] {
    gather_ceiling<4, 128><<<c.sms * 8, 512, 0, c.s>>>(buf, nb, nq, seed++, values, nvalues, value_every, sink);
    CK(cudaGetLastError());
  });
  CK(cudaFree(buf));
  CK(cudaFree(sink));
  return gops(nq, ms);
}

}  // namespace gphkv::bench
