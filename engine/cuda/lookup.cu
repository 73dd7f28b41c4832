// GPH §5: one bucket probe per key, hit or miss.
#include "engine/cuda/lookup.h"

#include "engine/cuda/lookup_kernel.cuh"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

// Any even M: one thread per key, slot by slot.
__global__ void lookup_generic(DeviceTable t, const uint64_t* __restrict__ queries, uint64_t n,
                               uint64_t* __restrict__ out_values, uint8_t* __restrict__ out_found) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const uint64_t key = queries[i];
  if (key == gph::kEmptyKey) {
    out_found[i] = t.oob->present != 0;
    if (out_found[i]) out_values[i] = t.oob->value;
    return;
  }
  const uint32_t M = t.geo.slots_per_bucket;
  const uint32_t cell = gph::cell_of(t.geo, key);
  const uint64_t base = static_cast<uint64_t>(gph::bucket_for_key(t.geo, key, cell, t.cells[cell_byte_at(cell)])) * M;
  for (uint32_t s = 0; s < M; ++s) {
    if (*slot_key(t, base + s) == key) {
      out_values[i] = *slot_value(t, base + s);
      out_found[i] = 1;
      return;
    }
  }
  out_found[i] = 0;
}

template <int M>
cudaError_t launch_grouped(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                           cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>((n + kLookupBlock - 1) / kLookupBlock);
  lookup_grouped<M, kLookupGroup, 1, true><<<grid, kLookupBlock, 0, stream>>>(t, keys, n, values, found);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_lookup(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // The grouped kernels split what they read into whole 16-byte vectors per
  // thread of the group (|g| = 4): at M = 16 the key's home line, and the
  // other line only after a spill; at M = 8 (one line) and 32 the bucket.
  const unsigned grid = static_cast<unsigned>((n + kLookupBlock - 1) / kLookupBlock);
  switch (t.geo.slots_per_bucket) {
    case 8: return launch_grouped<8>(t, keys, n, values, found, stream);
    case 16:
      lookup_two_lines<kLookupGroup, true><<<grid, kLookupBlock, 0, stream>>>(t, keys, n, values, found);
      return cudaGetLastError();
    case 32: return launch_grouped<32>(t, keys, n, values, found, stream);
    default: break;
  }
  lookup_generic<<<grid, kLookupBlock, 0, stream>>>(t, keys, n, values, found);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
