// The baseline: bucketed linear probing, the slot layout GPH had before its
// buckets held pairs (buckets of M = 16 keys, one 128-byte line, values in a
// parallel array), with as many slots as the GPH table. A key starts at bucket h(k) and moves to
// the next bucket while the bucket is full; a lookup stops at the key or at a
// bucket with a vacant slot. The kind of table the GPH paper compares against,
// measured at the same N, M and load as the GPH table.
#include "engine/bench/key_spaces.cuh"
#include "engine/bench/measurements.h"

namespace gphkv::bench {
namespace {

constexpr int kSlots = 16;  // M: 16 keys, one 128-byte line

struct BaselineTable {
  uint64_t* keys;
  uint64_t* values;
  uint64_t num_buckets;
};

__device__ __forceinline__ uint64_t baseline_home(const BaselineTable& t, uint64_t key) {
  return static_cast<uint64_t>(fmix32(static_cast<uint32_t>(key) ^ fmix32(static_cast<uint32_t>(key >> 32)))) *
             t.num_buckets >>
         32;
}

template <int M>
__global__ void baseline_insert(BaselineTable t, uint64_t first, uint64_t n, unsigned long long* failed) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const uint64_t key = bench_key(first + i);
  uint64_t b = baseline_home(t, key);
  for (uint64_t probes = 0; probes < t.num_buckets; ++probes) {
    unsigned long long* slots = reinterpret_cast<unsigned long long*>(t.keys + b * M);
    for (int s = 0; s < M; ++s) {
      if (slots[s] != ~0ull) continue;
      if (atomicCAS(slots + s, ~0ull, key) == ~0ull) {
        t.values[b * M + s] = mix64(first + i) ^ 0x5555;
        return;
      }
    }
    b = b + 1 == t.num_buckets ? 0 : b + 1;
  }
  atomicAdd(failed, 1ull);
}

// The same Lookup Group and Bucket Requester as the GPH kernel (G threads per
// bucket, all first-probe loads before the first compare); keys whose bucket
// was full and did not hold them continue to the next bucket.
template <int M, int G>
__global__ void __launch_bounds__(256)
    baseline_lookup(BaselineTable t, const uint64_t* __restrict__ queries, uint64_t n,
                    uint64_t* __restrict__ out_values, uint8_t* __restrict__ out_found) {
  constexpr int V = M / (2 * G);
  constexpr unsigned kFull = 0xffffffffu;
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31, member = lane % G, leader = lane - member;
  const unsigned group_mask = ((1u << G) - 1u) << leader;
  const bool valid = i < n;
  const uint64_t key = valid ? queries[i] : 0;
  const uint64_t home = baseline_home(t, key);
  ulonglong2 slots[G][V];
  uint64_t buckets[G];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    buckets[r] = __shfl_sync(kFull, home, leader + r);
    const ulonglong2* p = reinterpret_cast<const ulonglong2*>(t.keys + buckets[r] * M) + member * V;
#pragma unroll
    for (int x = 0; x < V; ++x) slots[r][x] = __ldg(p + x);
  }
  uint64_t my_value = 0;
  bool my_found = false;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint64_t k = __shfl_sync(kFull, key, leader + r);
    uint64_t b = buckets[r];
    bool active = true;  // uniform within the group
    for (uint64_t probes = 0;; ++probes) {
      int slot = -1;
      bool vacant = true;
      if (active) {
        vacant = false;
#pragma unroll
        for (int x = 0; x < V; ++x) {
          if (slots[r][x].x == k) slot = member * 2 * V + 2 * x;
          if (slots[r][x].y == k) slot = member * 2 * V + 2 * x + 1;
          vacant |= slots[r][x].x == ~0ull || slots[r][x].y == ~0ull;
        }
      }
      const unsigned hits = __ballot_sync(kFull, slot >= 0) & group_mask;
      const unsigned vacants = __ballot_sync(kFull, vacant) & group_mask;
      uint64_t v = 0;
      if (slot >= 0) v = t.values[b * M + slot];
      v = __shfl_sync(kFull, v, hits ? __ffs(hits) - 1 : leader);
      if (active && member == r && hits) {
        my_value = v;
        my_found = true;
      }
      // Groups of one warp may probe different numbers of buckets: the whole
      // warp loops while any group continues (the shuffles need the warp).
      const bool more = active && !hits && !vacants && probes + 1 < t.num_buckets;
      if (!__any_sync(kFull, more)) break;
      active = more;
      if (more) {
        b = b + 1 == t.num_buckets ? 0 : b + 1;
        const ulonglong2* p = reinterpret_cast<const ulonglong2*>(t.keys + b * M) + member * V;
#pragma unroll
        for (int x = 0; x < V; ++x) slots[r][x] = __ldg(p + x);
      }
    }
  }
  if (!valid) return;
  out_found[i] = my_found;
  if (my_found) out_values[i] = my_value;
}

}  // namespace

BaselineRates baseline(Context& c, uint64_t n, uint64_t num_slots, uint64_t nq, absl::Span<const FindCase> cases,
                       TableBuffers& b) {
  const uint64_t num_buckets = (num_slots + kSlots - 1) / kSlots;
  const uint64_t key_bytes = num_buckets * kSlots * 8;
  BaselineTable base;
  base.num_buckets = num_buckets;
  CK(cudaMalloc(&base.keys, key_bytes));
  CK(cudaMalloc(&base.values, key_bytes));
  CK(cudaMemsetAsync(base.keys, 0xff, key_bytes, c.s));
  CK(cudaMemsetAsync(b.count, 0, 8, c.s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, c.s));
  baseline_insert<kSlots><<<blocks_for(n), 256, 0, c.s>>>(base, 0, n, b.count);
  CK(cudaGetLastError());
  CK(cudaEventRecord(e1, c.s));
  unsigned long long failed = 0;
  CK(cudaMemcpyAsync(&failed, b.count, 8, cudaMemcpyDeviceToHost, c.s));
  CK(cudaStreamSynchronize(c.s));
  float build_ms;
  CK(cudaEventElapsedTime(&build_ms, e0, e1));
  if (failed) {
    std::fprintf(stderr, "baseline: %llu inserts failed\n", failed);
    std::exit(3);
  }
  BaselineRates rates;
  rates.build = gops(n, build_ms);
  for (const FindCase& fc : cases) {
    fill_queries(b.queries, nq, n, fc, 77 + fc.hit_pct, 0x9e3779b97f4a7c15ull % n | 1, c.s);
    const double ms = median_ms(c.args.reps, c.s, [&] {
      baseline_lookup<kSlots, 4><<<blocks_for(nq), 256, 0, c.s>>>(base, b.queries, nq, b.out, b.found);
      CK(cudaGetLastError());
    });
    check_hits(c, b.found, nq, fc.hit_pct, b.count, "baseline");
    rates.finds.push_back(gops(nq, ms));
  }
  CK(cudaFree(base.keys));
  CK(cudaFree(base.values));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return rates;
}

}  // namespace gphkv::bench
