#include "engine/cuda/batch_sort.h"

#include <cub/device/device_radix_sort.cuh>

namespace gphkv::engine::cuda {
namespace {

__global__ void iota_kernel(uint32_t* out, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<uint32_t>(i);
}

}  // namespace

cudaError_t sort_batch_temp_bytes(uint64_t n, size_t* bytes) {
  *bytes = 0;
  return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const uint64_t*>(nullptr),
                                         static_cast<uint64_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n));
}

cudaError_t sort_batch(const uint64_t* keys, uint64_t n, const SortedBatch& s, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  iota_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(s.index_tmp, n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // LSD radix sort is stable: equal keys keep batch order.
  size_t temp_bytes = s.temp_bytes;
  return cub::DeviceRadixSort::SortPairs(s.temp, temp_bytes, keys, s.keys, s.index_tmp, s.index,
                                         static_cast<int64_t>(n), 0, 64, stream);
}

}  // namespace gphkv::engine::cuda
