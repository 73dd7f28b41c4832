// The lookup kernel (GPH §5), launched in the one shape production uses.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// The launch shape, measured best on the H100 (docs/gph.md, "Tuning on the
// H100"): a Lookup Group of |g| = 4 threads per bucket, 256 threads per block,
// one key per thread, bucket and value loads marked evict-first (read once,
// they would otherwise push the Cell Index out of L2). engine_bench --sweep
// measures the other shapes against it.
inline constexpr int kLookupGroup = 4;
inline constexpr int kLookupBlock = 256;

// For each keys[i]: found[i] = 1 and values[i] = its value, or found[i] = 0.
// Stream-ordered; returns the launch error, if any.
cudaError_t launch_lookup(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                          cudaStream_t stream);

}  // namespace gphkv::engine::cuda
