// Clearing the slot array of a table: every key kEmptyKey, every value 0.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gphkv::engine::cuda {

// `slots` holds num_slots (key, value) pairs of words (DeviceTable::slots).
cudaError_t launch_clear_slots(uint64_t* slots, uint64_t num_slots, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
