// The insert pipeline (GPH §6): repeats found (by sort or by grouping),
// Saturation Fill, Refinement, per-occurrence outcomes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/batch_groups.h"
#include "engine/cuda/batch_sort.h"
#include "engine/cuda/device_table.cuh"
#include "engine/cuda/refinement.h"

namespace gphkv::engine::cuda {

// Device scratch of one insert batch of n keys (see CudaTable::insert_or_assign_async).
// The repeats are found by grouping when grouped.lead is set, else by sorting
// (InsertVariants::repeats); positions below are the order's (batch_order.cuh).
struct InsertScratch {
  SortedBatch sorted;
  GroupedBatch grouped;
  uint8_t* status;           // n, InsertStatus by position
  uint2* overflow;           // n: (first, last) positions of each overflowed key
  uint32_t* overflow_count;  // the overflow list's length
};

// keys/values: the batch in batch order; outcomes: n UpsertOutcome bytes in batch order.
cudaError_t launch_insert(const DeviceTable& t, const uint64_t* keys, const uint64_t* values, uint64_t n,
                          uint8_t* outcomes, const InsertScratch& s, const RefinementShape& shape, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
