#include "engine/cuda/spill_marks.h"

#include <algorithm>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

// One thread per slot, reading the key word only.
__global__ void mark_spills(DeviceTable t) {
  const uint32_t M = t.geo.slots_per_bucket;
  const uint64_t n = t.geo.num_slots();
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t s = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; s < n; s += stride) {
    const uint64_t key = *slot_key(t, s);
    if (key == gph::kEmptyKey) continue;
    const auto bucket = static_cast<uint32_t>(s / M);
    const uint32_t lh = line_hash(t.geo, key), line = home_line_of(t.geo, lh);
    if (!in_line(t.geo, line, static_cast<uint32_t>(s - static_cast<uint64_t>(bucket) * M))) {
      mark_spill(t, bucket, line, lh, gph::cell_of(t.geo, key));
    }
  }
}

// One thread per cell group: its flag word.
__global__ void clear_cell_flags(DeviceTable t, uint64_t groups) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t g = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; g < groups; g += stride) {
    *reinterpret_cast<uint32_t*>(t.cells + g * kGroupBytes + kGroupCells) = 0;
  }
}

}  // namespace

cudaError_t launch_mark_spills(const DeviceTable& t, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(t.spill, 0, spill_words(t.geo) * sizeof(uint32_t), stream);
  if (e != cudaSuccess || lines_per_bucket(t.geo) == 1) return e;
  constexpr int kBlock = 256;
  auto grid_for = [](uint64_t n) {
    return static_cast<unsigned>(std::clamp<uint64_t>((n + kBlock - 1) / kBlock, 1, 1u << 16));
  };
  const uint64_t groups = cell_index_bytes(t.geo.num_cells) / kGroupBytes;
  clear_cell_flags<<<grid_for(groups), kBlock, 0, stream>>>(t, groups);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  mark_spills<<<grid_for(t.geo.num_slots()), kBlock, 0, stream>>>(t);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
