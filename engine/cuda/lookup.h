// The lookup kernel (GPH §5) and its launch shape.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// The launch shape of a lookup: |g| threads per key and threads per block.
// Defaults measured on the H100 (docs/gph.md, "Tuning on the H100").
struct LookupShape {
  int group = 4;    // |g|: threads that read one bucket together (GPH §5.1)
  int block = 256;  // threads per block
  int keys_per_thread = 2;  // K: keys each thread owns (1, 2 or 4), all probed at once
};

// True when the fast kernel exists for this (M, |g|); otherwise the launch
// falls back to one thread per key that reads the bucket slot by slot.
bool lookup_shape_supported(uint32_t slots_per_bucket, int group);

// For each keys[i]: found[i] = 1 and values[i] = its value, or found[i] = 0.
// Stream-ordered; returns the launch error, if any.
cudaError_t launch_lookup(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                          uint8_t* found, LookupShape shape, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
