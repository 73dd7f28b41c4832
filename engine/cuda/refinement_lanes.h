// Refinement's transaction with the planner's candidates across lanes
// (RefinementKernel::kLanes, refinement_lanes.cu): R = 8, M = 8 or 16.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_table.cuh"
#include "engine/cuda/refinement.h"

namespace gphkv::engine::cuda {

// Whether a geometry takes the lanes kernel (R = 8: a group of 8 lanes is one
// mapping; M = 8 or 16: a bucket's slots are one 32-bit mask, its room 5 bits).
bool lanes_refinement_fits(const gph::Geometry& g);

cudaError_t prepare_refinement_lanes(const gph::Geometry& g, int sms, RefinementShape* shape);

cudaError_t launch_refinement_lanes(const DeviceTable& t, const uint64_t* sorted_keys, const uint32_t* sorted_index,
                                    const uint64_t* values, uint8_t* status, const uint2* overflow,
                                    uint32_t* overflow_count, const RefinementShape& shape, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
