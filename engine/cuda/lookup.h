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
  int keys_per_thread = 1;  // K: keys each thread owns (1 or 2), all probed at once
  // Bucket and value loads marked evict-first (ld.global.cs): they are read
  // once, and would otherwise push the Cell Index out of L2.
  bool streaming_loads = true;
  // Launch with an L2 access-policy window that keeps the Cell Index resident
  // (persisting lines): CudaTable::set_cell_persistence turns it on.
  bool persist_cells = false;
};

// The L2 window over the Cell Index, prepared by the table for its device.
struct CellWindow {
  size_t bytes = 0;       // window length (0: no window)
  float hit_ratio = 0.f;  // fraction of the window that may persist
};

// True when the fast kernel exists for this (M, |g|); otherwise the launch
// falls back to one thread per key that reads the bucket slot by slot.
bool lookup_shape_supported(uint32_t slots_per_bucket, int group);

// For each keys[i]: found[i] = 1 and values[i] = its value, or found[i] = 0.
// Stream-ordered; returns the launch error, if any.
cudaError_t launch_lookup(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                          uint8_t* found, LookupShape shape, CellWindow window, cudaStream_t stream);

}  // namespace gphkv::engine::cuda
