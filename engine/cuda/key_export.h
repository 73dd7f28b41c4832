// Listing a table's keys on the device: the stored keys of a run of slots,
// compacted into one array, for a snapshot's key list (Table::export_keys).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gphkv::engine::cuda {

// Appends the keys of `num_slots` (key, value) slot pairs that are not
// kEmptyKey to `out` (room for num_slots keys) at *count, which it advances
// (set it to 0 first). Order: by slot within each warp, warps in any order.
cudaError_t launch_export_keys(const uint64_t* slots, uint64_t num_slots, uint64_t* out, unsigned long long* count,
                               cudaStream_t stream);

}  // namespace gphkv::engine::cuda
