// The lookup kernel (engine/cuda/lookup_kernel.cuh) in the shapes production
// does not launch, for engine_bench's tuning sweep: |g| = 2, 4 or 8 threads
// per bucket, 1 or 2 keys per thread, blocks of 128 or 256, evict-first
// loads on or off; and optionally with an L2 access-policy window that keeps
// the Cell Index resident. The engine instantiates only its one shape
// (engine/cuda/lookup.h), so these live here.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/bench/cuda_check.h"
#include "engine/cuda/device_table.cuh"
#include "engine/cuda/lookup_kernel.cuh"

namespace gphkv::bench {

struct LookupShape {
  int group = 4;                // |g|: threads that read one bucket together (GPH §5.1)
  int block = 256;              // threads per block
  int keys_per_thread = 1;      // K: keys each thread owns (1 or 2), all probed at once
  bool streaming_loads = true;  // bucket and value loads marked evict-first (ld.global.cs)
};

// An L2 window over the Cell Index (keep_cells_in_l2).
struct CellWindow {
  size_t bytes = 0;       // window length (0: no window)
  float hit_ratio = 0.f;  // fraction of the window that may persist
};

// Sets aside persisting L2 lines for the Cell Index of `t` (a device-wide
// limit: raised, never lowered here) and returns the window to launch with,
// so that the random cell reads hit L2 while the buckets stream through
// (GPH §5 puts the cells in shared memory; ours are too large for that). On
// the H100 it sped misses up by 7% and 50%-hit lookups by 1%, but the
// set-aside (31 MB of the 50 MB L2 at 10^8 keys) is taken from every other
// kernel: a build that does not use it ran 3x slower (docs/gph.md, "Tuning on
// the H100"). So only the benchmark keeps it.
inline CellWindow keep_cells_in_l2(const engine::cuda::DeviceTable& t, int device) {
  CellWindow w;
  int max_persist = 0, max_window = 0;
  CK(cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, device));
  CK(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device));
  if (max_persist <= 0 || max_window <= 0) return w;  // no L2 persistence on this device
  const size_t cells = engine::cuda::cell_index_bytes(t.geo.num_cells);
  size_t current = 0;
  CK(cudaDeviceGetLimit(&current, cudaLimitPersistingL2CacheSize));
  const size_t want = std::min<size_t>(cells, static_cast<size_t>(max_persist));
  if (want > current) {
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, want));
    current = want;
  }
  w.bytes = std::min<size_t>(cells, static_cast<size_t>(max_window));
  w.hit_ratio = static_cast<float>(std::min(1.0, static_cast<double>(current) / static_cast<double>(w.bytes)));
  return w;
}

// Gives the persisting lines back, once the lookups on `s` are done.
inline void stop_keeping_cells_in_l2(cudaStream_t s) {
  CK(cudaStreamSynchronize(s));
  CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
  CK(cudaCtxResetPersistingL2Cache());
}

namespace lookup_shapes {

template <class Kernel>
cudaError_t launch(Kernel kernel, unsigned grid, int block, const engine::cuda::DeviceTable& t, const uint64_t* keys,
                   uint64_t n, uint64_t* values, uint8_t* found, const CellWindow* window, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  if (window != nullptr && window->bytes > 0) {
    attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
    attr[0].val.accessPolicyWindow.base_ptr = t.cells;
    attr[0].val.accessPolicyWindow.num_bytes = window->bytes;
    attr[0].val.accessPolicyWindow.hitRatio = window->hit_ratio;
    attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, t, keys, n, values, found);
}

template <int M, int G>
cudaError_t launch_grouped(const engine::cuda::DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                           uint8_t* found, const LookupShape& shape, const CellWindow* window, cudaStream_t stream) {
  using engine::cuda::lookup_grouped;
  const int block = shape.block;
  const uint64_t per_block = static_cast<uint64_t>(block) * shape.keys_per_thread;
  const unsigned grid = static_cast<unsigned>((n + per_block - 1) / per_block);
  const auto* w = window;
  switch (shape.keys_per_thread * 2 + (shape.streaming_loads ? 1 : 0)) {
    case 2: return launch(lookup_grouped<M, G, 1, false>, grid, block, t, keys, n, values, found, w, stream);
    case 3: return launch(lookup_grouped<M, G, 1, true>, grid, block, t, keys, n, values, found, w, stream);
    case 4: return launch(lookup_grouped<M, G, 2, false>, grid, block, t, keys, n, values, found, w, stream);
    case 5: return launch(lookup_grouped<M, G, 2, true>, grid, block, t, keys, n, values, found, w, stream);
    default: return cudaErrorInvalidConfiguration;
  }
}

template <int G>
cudaError_t launch_two_lines(const engine::cuda::DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                             uint8_t* found, const LookupShape& shape, const CellWindow* window, cudaStream_t stream) {
  using engine::cuda::lookup_two_lines;
  const unsigned grid = static_cast<unsigned>((n + shape.block - 1) / shape.block);
  if (shape.streaming_loads)
    return launch(lookup_two_lines<G, true>, grid, shape.block, t, keys, n, values, found, window, stream);
  return launch(lookup_two_lines<G, false>, grid, shape.block, t, keys, n, values, found, window, stream);
}

}  // namespace lookup_shapes

// Whether `shape` can look up `t`: the grouped kernel reads one-line buckets
// (M = 8) with K = 1 or 2; the two-line kernel (M = 16, the engine's default
// since 2026-11-25) owns one key per thread.
inline bool lookup_shape_fits(const engine::cuda::DeviceTable& t, const LookupShape& shape) {
  const int m = static_cast<int>(t.geo.slots_per_bucket);
  if (shape.block <= 0 || shape.block > 256 || shape.block % 32 != 0) return false;
  if (shape.group != 2 && shape.group != 4 && shape.group != 8) return false;
  return m == 8 || (m == 16 && shape.keys_per_thread == 1);
}

// The shapes engine_bench --sweep measures, in its order, each with its row
// name: |g| = 2, 4, 8 at K = 1 and 2 in blocks of 256 (and |g| = 4, K = 1 in
// blocks of 128), then |g| = 4, K = 1 with evict-first loads off and on. A
// table's layout takes some of them (lookup_shape_fits); the engine's own
// shape, LookupShape{}, is among them and must fit every layout the engine
// builds (engine/tests/cuda_lookup_shapes_test.cu).
struct NamedShape {
  LookupShape shape;
  std::string name;
};
inline std::vector<NamedShape> lookup_sweep_shapes() {
  std::vector<NamedShape> shapes;
  for (int g : {2, 4, 8}) {
    for (int k : {1, 2}) {
      for (int block : {128, 256}) {
        if (block == 128 && !(g == 4 && k == 1)) continue;
        LookupShape shape;
        shape.group = g;
        shape.block = block;
        shape.keys_per_thread = k;
        shapes.push_back({shape, "find 50% uniform |g|=" + std::to_string(g) + " K=" + std::to_string(k) +
                                     " block=" + std::to_string(block)});
      }
    }
  }
  for (int stream : {0, 1}) {
    LookupShape shape;
    shape.streaming_loads = stream;
    shapes.push_back(
        {shape, std::string("find 50% uniform |g|=4 K=1 evict-first bucket loads ") + (stream ? "on" : "off")});
  }
  return shapes;
}

// The lookup of `t` (M = 8 or 16 slots per bucket) in `shape`, with the Cell
// Index window when `window` is given; cudaErrorInvalidConfiguration for a
// shape that does not fit the table (lookup_shape_fits).
inline cudaError_t launch_lookup_shape(const engine::cuda::DeviceTable& t, const uint64_t* keys, uint64_t n,
                                       uint64_t* values, uint8_t* found, const LookupShape& shape,
                                       const CellWindow* window, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!lookup_shape_fits(t, shape)) return cudaErrorInvalidConfiguration;
  if (t.geo.slots_per_bucket == 16) {
    switch (shape.group) {
      case 2: return lookup_shapes::launch_two_lines<2>(t, keys, n, values, found, shape, window, stream);
      case 4: return lookup_shapes::launch_two_lines<4>(t, keys, n, values, found, shape, window, stream);
      default: return lookup_shapes::launch_two_lines<8>(t, keys, n, values, found, shape, window, stream);
    }
  }
  switch (shape.group) {
    case 2: return lookup_shapes::launch_grouped<8, 2>(t, keys, n, values, found, shape, window, stream);
    case 4: return lookup_shapes::launch_grouped<8, 4>(t, keys, n, values, found, shape, window, stream);
    default: return lookup_shapes::launch_grouped<8, 8>(t, keys, n, values, found, shape, window, stream);
  }
}

}  // namespace gphkv::bench
