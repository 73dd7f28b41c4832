// Sorts a batch's keys with their batch positions (stable radix sort), so the
// occurrences of one key sit side by side in batch order: the insert and erase
// pipelines use this to apply "last write wins" and "first erase reports"
// exactly as the CPU backend does.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gphkv::engine::cuda {

// Bytes of cub scratch that sort_batch needs for n keys.
cudaError_t sort_batch_temp_bytes(uint64_t n, size_t* bytes);

// A batch of n keys sorted by key, and the scratch that sorting it takes.
struct SortedBatch {
  uint64_t* keys;       // n, ascending
  uint32_t* index;      // n: the batch position of keys[p]
  uint32_t* index_tmp;  // n, scratch
  void* temp;           // cub scratch, sort_batch_temp_bytes(n)
  size_t temp_bytes;
};

// Fills s.keys and s.index from the batch `keys`. Stream-ordered.
cudaError_t sort_batch(const uint64_t* keys, uint64_t n, const SortedBatch& s, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
