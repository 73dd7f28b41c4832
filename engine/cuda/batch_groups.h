// Finds each key's occurrences in an insert or erase batch without sorting it
// (issue 29, round five): a scratch open-addressing set over batch positions,
// claimed with atomics, names every key's first and last occurrence. It is the
// other way to batch_sort.h's stable radix sort, which costs eight passes over
// 64-bit keys (217 of a 1% burst's ~1570 µs at 10^8 keys), while the set costs
// one compare-and-swap and one atomicMax per key in a scratch that stays in L2
// for batches up to a few million keys.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gphkv::engine::cuda {

// lead[p] for a position that is not its key's first occurrence.
inline constexpr uint32_t kNotLead = 0xffffffffu;

// The set's slot hash: MurmurHash3's 64-bit finalizer. The slots only need
// keys spread; a batch that collides (crafted keys) costs longer probes,
// never a wrong group. Host and device: the tests build colliding keys with it.
__host__ __device__ inline uint64_t batch_group_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

// Slots of the scratch set for n keys: a power of two, at least 2n (load at
// most one half, so a probe sequence stays short).
uint64_t batch_group_capacity(uint64_t n);

// Whether grouping n keys is the faster way to their repeats on a device of
// l2_bytes of L2: while the set takes at most half of it (docs/gph.md, round five).
bool batch_groups_fit(uint64_t n, uint64_t l2_bytes);

// A batch of n keys grouped by key, and the scratch that grouping takes.
struct GroupedBatch {
  uint32_t* owner;    // capacity: a slot's key's smallest batch position, or kNotLead when vacant
  uint32_t* last;     // capacity: that key's largest batch position
  uint32_t* lead;     // n: last occurrence of keys[p]'s key where p is its first, else kNotLead
  uint32_t* index;    // n: p, so kernels that take a position's batch index read it the same way
  uint64_t capacity;  // batch_group_capacity(n)
};

// Fills g.lead and g.index from the batch `keys` (stream-ordered).
cudaError_t group_batch(const uint64_t* keys, uint64_t n, const GroupedBatch& g, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
