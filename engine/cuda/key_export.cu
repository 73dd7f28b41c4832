// One atomic per warp, not per key: the warp's lanes that hold a key count
// themselves with a ballot, lane 0 reserves the run, each lane writes at its
// rank among them.
#include "engine/cuda/key_export.h"

#include <algorithm>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

__global__ void export_keys(const uint64_t* slots, uint64_t n, uint64_t* out, unsigned long long* count) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const unsigned lane = threadIdx.x % 32;
  // Every lane of a warp runs the same number of passes (n rounded up to
  // the stride), so the ballot always has the whole warp.
  const uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t passes = (n + stride - 1) / stride;
  for (uint64_t p = 0; p < passes; ++p) {
    const uint64_t i = first + p * stride;
    const uint64_t key = i < n ? slots[2 * i] : gph::kEmptyKey;
    const bool stored = key != gph::kEmptyKey;
    const unsigned mask = __ballot_sync(0xffffffffu, stored);
    if (mask == 0) continue;
    unsigned long long base = 0;
    if (lane == 0) base = atomicAdd(count, static_cast<unsigned long long>(__popc(mask)));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (stored) out[base + __popc(mask & ((1u << lane) - 1))] = key;
  }
}

}  // namespace

cudaError_t launch_export_keys(const uint64_t* slots, uint64_t num_slots, uint64_t* out, unsigned long long* count,
                               cudaStream_t stream) {
  if (num_slots == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  const auto grid = static_cast<unsigned>(std::min<uint64_t>((num_slots + kBlock - 1) / kBlock, 1u << 14));
  export_keys<<<grid, kBlock, 0, stream>>>(slots, num_slots, out, count);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
