// How the insert and erase kernels see a batch once its repeats are found:
// sorted by key (batch_sort.h: a key's occurrences are neighbours, in batch
// order) or grouped in place (batch_groups.h: lead names each key's first and
// last occurrence). Position p is a sorted position in the first case and a
// batch position in the second; index[p] is its batch position either way.
#pragma once

#include <cstdint>

#include "engine/cuda/batch_groups.h"
#include "engine/cuda/batch_sort.h"

namespace gphkv::engine::cuda {

struct BatchOrder {
  const uint64_t* keys;   // keys[p]
  const uint32_t* index;  // index[p]: p's batch position
  const uint32_t* lead;   // grouped: GroupedBatch::lead; sorted: nullptr
};

// Finds the repeats of the batch `keys`: by grouping when grouped.lead is set
// (the caller chose it: CudaTable::groups_repeats), else by sorting; *order is
// the view the kernels then take. Stream-ordered.
inline cudaError_t order_batch(const uint64_t* keys, uint64_t n, const SortedBatch& sorted, const GroupedBatch& grouped,
                               cudaStream_t stream, BatchOrder* order) {
  if (grouped.lead != nullptr) {
    *order = BatchOrder{keys, grouped.index, grouped.lead};
    return group_batch(keys, n, grouped, stream);
  }
  *order = BatchOrder{sorted.keys, sorted.index, nullptr};
  return sort_batch(keys, n, sorted, stream);
}

// Whether p is its key's first occurrence (kGrouped: b.lead is set).
template <bool kGrouped>
__device__ __forceinline__ bool leads(const BatchOrder& b, uint64_t p, uint64_t key) {
  if (kGrouped) return b.lead[p] != kNotLead;
  return p == 0 || b.keys[p - 1] != key;
}

// For a p that leads: the position of its key's last occurrence (whose value a put applies).
template <bool kGrouped>
__device__ __forceinline__ uint64_t last_occurrence(const BatchOrder& b, uint64_t n, uint64_t p, uint64_t key) {
  if (kGrouped) return b.lead[p];
  uint64_t l = p;
  while (l + 1 < n && b.keys[l + 1] == key) ++l;
  return l;
}

}  // namespace gphkv::engine::cuda
