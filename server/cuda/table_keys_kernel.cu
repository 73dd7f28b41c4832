#include "server/cuda/table_keys_kernel.h"

#include "gphkv/cuda/status.h"
#include "server/byte_key.h"
#include "server/xxh3.h"

namespace gphkv::server::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535;

__global__ void __launch_bounds__(kThreads)
    table_keys_kernel(const uint32_t* key_offsets, const char* key_bytes, const uint64_t* given, uint64_t n,
                      int hash_bits, uint64_t* out) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint32_t begin = key_offsets[i], end = key_offsets[i + 1];
    out[i] = begin == end ? given[i]
                          : byte_key::keep_bits(xxh3::hash64(key_bytes + begin, end - begin, byte_key::kTableKeySeed),
                                                hash_bits);
  }
}

}  // namespace

cudaError_t launch_table_keys(const uint32_t* key_offsets, const char* key_bytes, const uint64_t* given, uint64_t n,
                              int hash_bits, uint64_t* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  gphkv::cuda::clear_stale_launch_error();
  const uint64_t blocks = (n + kThreads - 1) / kThreads;
  table_keys_kernel<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
      key_offsets, key_bytes, given, n, hash_bits, out);
  return cudaGetLastError();
}

}  // namespace gphkv::server::cuda
