// The grouped lookup kernel (GPH §5.1, §5.2) as a template over its shape:
// M slots per bucket, |g| threads per bucket, K keys per thread, and whether
// bucket loads are marked evict-first. lookup.cu instantiates the
// shape production launches; engine_bench instantiates the others it
// measures (engine/bench/lookup_shapes.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_table.cuh"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {

inline constexpr unsigned kFullWarp = 0xffffffffu;

// GPH §5.1 Lookup Group + §5.2 Bucket Requester.
//
// Each thread owns K query keys (coalesced loads, coalesced result stores) and
// computes their cells and buckets. A group of G threads then reads the G*K
// buckets of its members' keys: a bucket is M (key, value) pairs of 16 bytes,
// each thread loads P = M/G of them, and all G*K*P loads are issued before the
// first compare, so a thread has that many independent 16-byte requests in
// flight (memory-level parallelism is what a random gather lives on). A ballot
// over the group finds the matching lane, which holds the value already (the
// pair it matched), and a shuffle hands it to the key's owner, which writes it
// out: a hit costs one bucket read, as a miss does.
template <bool kStream>
__device__ __forceinline__ ulonglong2 load_slots(const ulonglong2* p) {
  if constexpr (kStream) return __ldcs(p);
  return __ldg(p);
}

// The lane's pairs that hold `want`: true, and its value in *value, if one does.
template <int P>
__device__ __forceinline__ bool match_pairs(const ulonglong2 (&pairs)[P], uint64_t want, uint64_t* value) {
  bool hit = false;
#pragma unroll
  for (int x = 0; x < P; ++x) {
    if (pairs[x].x == want) {
      hit = true;
      *value = pairs[x].y;
    }
  }
  return hit;
}

template <int M, int G, int K, bool kStream>
__global__ void __launch_bounds__(256)
    lookup_grouped(DeviceTable t, const uint64_t* __restrict__ queries, uint64_t n, uint64_t* __restrict__ out_values,
                   uint8_t* __restrict__ out_found) {
  static_assert(M % G == 0, "a bucket splits into whole pairs per thread");
  constexpr int P = M / G;
  const uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x) * K + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int member = lane % G;
  const int leader = lane - member;
  const unsigned group_mask = (G == 32 ? kFullWarp : ((1u << G) - 1u)) << leader;

  // Every lane stays to the end: the shuffles below need the whole warp.
  uint64_t key[K];
  uint32_t bucket[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const uint64_t i = first + static_cast<uint64_t>(k) * blockDim.x;
    key[k] = i < n ? queries[i] : 0;
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    bucket[k] = 0;
    if (key[k] != gph::kEmptyKey) {
      const uint32_t cell = gph::cell_of(t.geo, key[k]);
      bucket[k] = gph::bucket_for_key(t.geo, key[k], cell, __ldg(t.cells + cell_byte_at(cell)));
    }
  }

  // Bucket Requester: all loads first.
  ulonglong2 slots[K][G][P];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const uint32_t b = __shfl_sync(kFullWarp, bucket[k], leader + r);
      const ulonglong2* p = reinterpret_cast<const ulonglong2*>(t.slots) + static_cast<uint64_t>(b) * M + member * P;
#pragma unroll
      for (int x = 0; x < P; ++x) slots[k][r][x] = load_slots<kStream>(p + x);
    }
  }

  // Compare: the lane that matched holds the value.
  uint64_t hit_value[K][G];
  unsigned group_hits[K][G];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const uint64_t want = __shfl_sync(kFullWarp, key[k], leader + r);
      hit_value[k][r] = 0;
      const bool hit = match_pairs(slots[k][r], want, &hit_value[k][r]);
      group_hits[k][r] = __ballot_sync(kFullWarp, hit) & group_mask;
    }
  }

#pragma unroll
  for (int k = 0; k < K; ++k) {
    uint64_t my_value = 0;
    bool my_found = false;
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const int src = group_hits[k][r] ? __ffs(group_hits[k][r]) - 1 : leader;
      const uint64_t v = __shfl_sync(kFullWarp, hit_value[k][r], src);
      if (member == r) {
        my_value = v;
        my_found = group_hits[k][r] != 0;
      }
    }
    const uint64_t i = first + static_cast<uint64_t>(k) * blockDim.x;
    if (i >= n) continue;
    if (key[k] == gph::kEmptyKey) {  // out of band: it would "match" vacant slots
      my_found = t.oob->present != 0;
      my_value = t.oob->value;
    }
    out_found[i] = my_found;
    if (my_found) out_values[i] = my_value;
  }
}

// The lookup of a bucket of two lines (M = 16 pairs; device_table.cuh,
// "Lines"), in the shape of lookup_grouped with K = 1: a group of G threads
// reads the home lines of its members' keys (8 pairs, 8/G per thread, all
// loads first), and then, for the keys not found there whose cell is flagged
// and whose spill bit is set in their home line, the other line, one key of
// the group at a time.
template <int G, bool kStream>
__global__ void __launch_bounds__(256)
    lookup_two_lines(DeviceTable t, const uint64_t* __restrict__ queries, uint64_t n, uint64_t* __restrict__ out_values,
                     uint8_t* __restrict__ out_found) {
  constexpr int M = 2 * kLinePairs, P = kLinePairs / G;
  static_assert(kLinePairs % G == 0, "a line splits into whole pairs per thread");
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int member = lane % G;
  const int leader = lane - member;
  const unsigned group_mask = ((1u << G) - 1u) << leader;

  // Every lane stays to the end: the shuffles below need the whole warp.
  // Queries and answers stream through (evict-first), as the lines do.
  const uint64_t key = i < n ? __ldcs(reinterpret_cast<const unsigned long long*>(queries) + i) : 0;
  uint32_t bucket = 0, line = 0, lh = 0;
  bool flagged = false;  // a key of the cell may sit outside its home line
  if (key != gph::kEmptyKey) {
    const uint32_t h = gph::cell_hash(t.geo, key);
    const uint32_t cell = gph::reduce(h, t.geo.num_cells);
    // The cell byte and the cell's flag word share one 32-byte sector.
    const uint8_t cell_byte = __ldg(t.cells + cell_byte_at(cell));
    flagged = (__ldg(reinterpret_cast<const uint32_t*>(t.cells + cell_flags_at(cell))) & cell_flag_bit(cell)) != 0;
    bucket = gph::bucket_for_key(t.geo, key, cell, cell_byte);
    lh = line_hash_of(h);
    line = home_line_of(t.geo, lh);
  }
  // Where member r's key's line `which` (0: home, 1: the other) starts.
  auto line_start = [&](int r, uint32_t which) {
    const uint32_t b = __shfl_sync(kFullWarp, bucket, leader + r);
    const uint32_t l = __shfl_sync(kFullWarp, line, leader + r) ^ which;
    return reinterpret_cast<const ulonglong2*>(t.slots) + static_cast<uint64_t>(b) * M + l * kLinePairs + member * P;
  };

  // Bucket Requester: all home-line loads first.
  ulonglong2 slots[G][P];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const ulonglong2* p = line_start(r, 0);
#pragma unroll
    for (int x = 0; x < P; ++x) slots[r][x] = load_slots<kStream>(p + x);
  }
  // Member r's answer from the group's compares: whether a lane matched, and
  // that lane's value (warp-collective).
  auto group_answer = [&](bool hit, uint64_t value, uint64_t* answer) {
    const unsigned hits = __ballot_sync(kFullWarp, hit) & group_mask;
    *answer = __shfl_sync(kFullWarp, value, hits ? __ffs(hits) - 1 : leader);
    return hits != 0;
  };
  uint64_t my_value = 0;
  bool my_found = false;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    uint64_t value = 0, answer;
    const bool hit = match_pairs(slots[r], __shfl_sync(kFullWarp, key, leader + r), &value);
    const bool found = group_answer(hit, value, &answer);
    if (member == r) {
      my_value = answer;
      my_found = found;
    }
  }

  // The other line, for the keys that may have spilled there: rounds in
  // which each group serves its next such member (rarely more than one).
  // The spill word only after a miss in the home line, and only when the
  // key's cell is flagged: a hit never reads it, nor do most misses.
  bool pending = i < n && key != gph::kEmptyKey && !my_found && flagged && spill_set(t, bucket, line, lh);
  for (unsigned waiting = __ballot_sync(kFullWarp, pending); waiting != 0;
       waiting = __ballot_sync(kFullWarp, pending)) {
    const unsigned mine = (waiting & group_mask) >> leader;
    const int r = mine ? __ffs(mine) - 1 : 0;
    const ulonglong2* p = line_start(r, 1);  // every lane: the shuffles inside need the warp
    const uint64_t want = __shfl_sync(kFullWarp, key, leader + r);
    uint64_t value = 0, answer;
    bool hit = false;
    if (mine) {
      ulonglong2 other[P];
#pragma unroll
      for (int x = 0; x < P; ++x) other[x] = load_slots<kStream>(p + x);
      hit = match_pairs(other, want, &value);
    }
    const bool found = group_answer(hit, value, &answer);
    if (mine && member == r) {
      my_value = answer;
      my_found = found;
      pending = false;
    }
  }

  if (i >= n) return;
  if (key == gph::kEmptyKey) {  // out of band: it would "match" vacant slots
    my_found = t.oob->present != 0;
    my_value = t.oob->value;
  }
  __stcs(out_found + i, static_cast<uint8_t>(my_found));
  if (my_found) __stcs(reinterpret_cast<unsigned long long*>(out_values) + i, my_value);
}

}  // namespace gphkv::engine::cuda
