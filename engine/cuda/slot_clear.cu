// A memset cannot write the two words of a pair with different bytes (the
// key all ones, the value zero), so one 16-byte store per slot does.
#include "engine/cuda/slot_clear.h"

#include <algorithm>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

__global__ void clear_slots(ulonglong2* slots, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    slots[i] = make_ulonglong2(gph::kEmptyKey, 0);
  }
}

}  // namespace

cudaError_t launch_clear_slots(uint64_t* slots, uint64_t num_slots, cudaStream_t stream) {
  if (num_slots == 0) return cudaSuccess;
  constexpr int kBlock = 256;
  const auto grid = static_cast<unsigned>(std::min<uint64_t>((num_slots + kBlock - 1) / kBlock, 1u << 16));
  clear_slots<<<grid, kBlock, 0, stream>>>(reinterpret_cast<ulonglong2*>(slots), num_slots);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
