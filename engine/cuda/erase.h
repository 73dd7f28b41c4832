// The erase kernel: clears the key's one slot (no tombstones, GPH §4).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/batch_groups.h"
#include "engine/cuda/batch_sort.h"
#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// erased[i] = 1 when keys[i] was present; of repeats of a key in the batch only
// the first (in batch order) reports 1, as the CPU backend does. The repeats
// are found by grouping when grouped.lead is set, else by sorting.
cudaError_t launch_erase(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint8_t* erased,
                         const SortedBatch& sorted, const GroupedBatch& grouped, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
