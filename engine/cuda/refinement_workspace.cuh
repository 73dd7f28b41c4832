// What both Refinement kernels share (refinement.cu, refinement_lanes.cu):
// the warp's shared-memory Workspace and where a relocated key goes in its
// target bucket.
#pragma once

#include <cstdint>

#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda::refinement {

inline constexpr unsigned kFullWarp = 0xffffffffu;

// The warp's Workspace in shared memory (GPH §6.3 stages relocation there).
struct Workspace {
  uint64_t* keys;  // the cell's keys, the new one last
  uint64_t* values;
  uint64_t* old_slot;          // where each of the cell's keys sits now (global slot index)
  uint32_t* target;            // per key: canonical index of its bucket under the chosen byte
  uint32_t* held;              // lock ids this transaction holds
  uint32_t* bucket;            // [R] buckets of the mapping in `cache_phi`
  uint32_t* count;             // [R] per bucket r: slots held by other cells (or, in placement, keys to place)
  uint32_t* canon;             // [R] first r' with the same bucket
  unsigned long long* vacant;  // [R] vacancy masks during placement
  uint32_t* scalars;           // [0] held count, [1] cache_phi, [2] cache valid, [3] mapping loads
  uint8_t* line;               // per key: its home line, during placement
};

__host__ __device__ inline size_t workspace_bytes(const gph::Geometry& g) {
  const size_t cap = static_cast<size_t>(g.virtual_buckets) * g.slots_per_bucket + 1;
  const size_t R = g.virtual_buckets;
  return cap * (3 * sizeof(uint64_t) + sizeof(uint32_t)) + R * sizeof(unsigned long long) +
         (2 * R + 3 * R + 4) * sizeof(uint32_t) + cap * sizeof(uint8_t) + 32;
}

__device__ inline Workspace carve(const gph::Geometry& g, uint8_t* base) {
  const size_t cap = static_cast<size_t>(g.virtual_buckets) * g.slots_per_bucket + 1;
  const uint32_t R = g.virtual_buckets;
  Workspace w;
  w.keys = reinterpret_cast<uint64_t*>(base);
  w.values = w.keys + cap;
  w.old_slot = w.values + cap;
  w.vacant = reinterpret_cast<unsigned long long*>(w.old_slot + cap);
  w.target = reinterpret_cast<uint32_t*>(w.vacant + R);
  w.held = w.target + cap;
  w.bucket = w.held + 2 * R;
  w.count = w.bucket + R;
  w.canon = w.count + R;
  w.scalars = w.canon + R;
  w.line = reinterpret_cast<uint8_t*>(w.scalars + 4);
  return w;
}

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

// The n-th (from 0) set bit of `mask`, or 64 when it has n or fewer.
__device__ inline uint32_t nth_set_bit(unsigned long long mask, uint32_t n) {
  for (uint32_t j = 0; j < n && mask; ++j) mask &= mask - 1;
  return mask ? __ffsll(static_cast<long long>(mask)) - 1 : 64;
}

// Where key k of the Workspace goes in its target bucket r, whose vacant slots
// are w.vacant[r] (and home lines w.line): the keys of r with home line L take the vacant slots of L
// in order (the j-th of them, j = the keys before k with the same bucket and
// line); those past L's vacancies take, in order, the vacant slots that no
// key of the same bucket claims in its own line (device_table.cuh, "Lines").
// Every lane computes its keys' slots alone; the verified plan guarantees the
// bucket has room for all. Returns the slot in the bucket, or 64 (a bug);
// sets *spilled when the slot is outside the key's home line.
__device__ inline uint32_t slot_in_target(const DeviceTable& t, const Workspace& w, uint32_t n, uint32_t k,
                                          bool* spilled) {
  constexpr uint32_t kMaxLines = 64 / kLinePairs;
  const uint32_t r = w.target[k], lines = lines_per_bucket(t.geo);
  const uint32_t line = w.line[k];
  uint32_t per_line[kMaxLines] = {};
  uint32_t rank = 0;
  for (uint32_t q = 0; q < n; ++q) {
    if (w.target[q] != r) continue;
    const uint32_t l = w.line[q];
    rank += q < k && l == line;
    ++per_line[l];
  }
  const unsigned long long vacant = w.vacant[r];
  const unsigned long long own = vacant & line_mask(t.geo, line);
  *spilled = rank >= static_cast<uint32_t>(__popcll(own));
  if (!*spilled) return nth_set_bit(own, rank);
  // Past its line: rank among the bucket's spilled keys, lines in order, and
  // the slots every line leaves after its own keys.
  uint32_t spill_rank = rank - __popcll(own);
  unsigned long long left = 0;
  for (uint32_t l = 0; l < lines; ++l) {
    const unsigned long long in_line = vacant & line_mask(t.geo, l);
    const uint32_t free = __popcll(in_line);
    if (l < line && per_line[l] > free) spill_rank += per_line[l] - free;
    const uint32_t taken = min(per_line[l], free);
    const uint32_t first_left = nth_set_bit(in_line, taken);
    if (first_left < 64) left |= in_line & ~((1ull << first_left) - 1);
  }
  return nth_set_bit(left, spill_rank);
}

}  // namespace gphkv::engine::cuda::refinement
