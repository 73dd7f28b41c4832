// Kernels of the engine benchmark that are not the engine: the gather ceiling,
// query generators and the baseline table (bucketed linear probing).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gphkv::bench {

// splitmix64's finalizer: a bijection, so key(i) is distinct for distinct i.
__host__ __device__ inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// The i-th key of a benchmark key space. Stored keys use i in [0, N), absent
// ones i in [2^40, ...), burst keys i in [2^41, ...).
__host__ __device__ inline uint64_t bench_key(uint64_t i) { return mix64(i * 0x9e3779b97f4a7c15ull + 0x1234567ull); }
constexpr uint64_t kAbsentBase = 1ull << 40;
constexpr uint64_t kBurstBase = 1ull << 41;

// ---- the random-gather ceiling (the method of shared/device/ceiling_probe.cu) ----

__device__ __forceinline__ uint32_t bench_fmix32(uint32_t h) {
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
  return h;
}

// Each group of G threads reads one random BYTES-byte block (16 bytes per
// vector); when value_every > 0, every value_every-th query also reads one
// 8-byte word at another random place (a hit's value read).
template <int G, int BYTES>
__global__ void gather_ceiling(const int4* table, uint64_t nb, uint64_t nq, uint32_t seed,
                               const uint64_t* values, uint64_t nvalues, int value_every,
                               unsigned long long* sink) {
  constexpr int V = BYTES / 16 / G;
  const uint64_t tid = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint32_t lane = threadIdx.x % G;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x / G;
  uint64_t acc = 0;
  for (uint64_t q = tid / G; q < nq; q += stride) {
    const uint32_t h = bench_fmix32(static_cast<uint32_t>(q) ^ seed);
    const uint64_t b = static_cast<uint64_t>(h) * nb >> 32;
    const int4* p = table + b * (BYTES / 16) + lane * V;
    int4 v[V];
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = __ldg(p + i);
#pragma unroll
    for (int i = 0; i < V; ++i) acc += static_cast<uint32_t>(v[i].x) ^ static_cast<uint32_t>(v[i].w);
    if (value_every > 0 && lane == 0 && q % value_every == 0) {
      acc += __ldg(values + (static_cast<uint64_t>(bench_fmix32(h)) * nvalues >> 32));
    }
  }
  if (acc == 42) atomicAdd(sink, 1ull);
}

// ---- query generation ----

// queries[q]: a stored key with probability hit_pct/100, else an absent one.
// Uniform: index uniform in [0, n_keys). Zipf (TaoBench-like): rank r drawn
// with P(rank <= x) = (x/n)^(1-s), s = 0.877, so the hottest 20% of ranks take
// 0.2^0.123 = 82% of the queries; ranks are scattered over the key space by
// multiplying with a large odd constant mod n (a bijection when coprime).
__global__ void make_queries(uint64_t* queries, uint64_t nq, uint64_t n_keys, int hit_pct, bool zipf,
                             uint64_t seed, uint64_t scatter) {
  const uint64_t q = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (q >= nq) return;
  const uint64_t r1 = mix64(q ^ seed), r2 = mix64(r1 + seed);
  const bool hit = (r1 % 100) < static_cast<uint64_t>(hit_pct);
  uint64_t index;
  if (zipf) {
    const double u = (static_cast<double>(r2 >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    constexpr double kOneMinusS = 0.123;
    uint64_t rank = static_cast<uint64_t>(pow(u, 1.0 / kOneMinusS) * static_cast<double>(n_keys));
    if (rank >= n_keys) rank = n_keys - 1;
    index = static_cast<uint64_t>((static_cast<unsigned __int128>(rank) * scatter) % n_keys);
  } else {
    index = static_cast<uint64_t>((static_cast<unsigned __int128>(r2) * n_keys) >> 64);
  }
  queries[q] = bench_key(hit ? index : kAbsentBase + index);
}

__global__ void make_keys(uint64_t* keys, uint64_t* values, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  keys[i] = bench_key(first + i);
  values[i] = mix64(first + i) ^ 0x5555;
}

__global__ void count_ones(const uint8_t* flags, uint64_t n, unsigned long long* count) {
  uint64_t c = 0;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    c += flags[i] == 1;
  }
  atomicAdd(count, static_cast<unsigned long long>(c));
}

// ---- the baseline: bucketed linear probing, same slot layout (N buckets of M
// keys, values in a parallel array). A key starts at bucket h(k) and moves to
// the next bucket while the bucket is full; a lookup stops at the key or at a
// bucket with a vacant slot. The kind of table the GPH paper compares against.

struct BaselineTable {
  uint64_t* keys;
  uint64_t* values;
  uint64_t num_buckets;
};

__device__ __forceinline__ uint64_t baseline_home(const BaselineTable& t, uint64_t key) {
  return static_cast<uint64_t>(bench_fmix32(static_cast<uint32_t>(key) ^ bench_fmix32(static_cast<uint32_t>(key >> 32)))) *
         t.num_buckets >> 32;
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
__global__ void __launch_bounds__(256) baseline_lookup(BaselineTable t, const uint64_t* __restrict__ queries, uint64_t n,
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

}  // namespace gphkv::bench
