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

// sorted_keys/sorted_index: the keys ascending, each with its batch position;
// index_tmp: n uint32 of scratch. Stream-ordered.
cudaError_t sort_batch(const uint64_t* keys, uint64_t n, uint64_t* sorted_keys, uint32_t* index_tmp,
                       uint32_t* sorted_index, void* temp, size_t temp_bytes, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
