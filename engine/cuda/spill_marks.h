// Rebuilding a table's spill bits and cell flags (device_table.cuh, "Lines",
// "Cell groups") from its slots, for contents written without the placing
// kernels: a loaded image, a bulk build's placement.
#pragma once

#include <cuda_runtime.h>

#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// Clears every spill bit and cell flag, then sets the home line's bit and the
// cell's flag of every key stored outside its home line. Stream-ordered; nothing may write `t` meanwhile.
cudaError_t launch_mark_spills(const DeviceTable& t, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
