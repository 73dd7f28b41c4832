// GPH §5: one bucket probe per key, hit or miss.
#include "engine/cuda/lookup.h"

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// GPH §5.1 Lookup Group + §5.2 Bucket Requester.
//
// Each thread owns one query key (coalesced load, coalesced result store) and
// computes its cell and bucket. A group of G threads then reads the G buckets
// of its members' keys: each thread loads V = M/(2G) 16-byte vectors per
// bucket, and all G*V loads are issued before the first compare, so a thread
// has G*V independent 16-byte requests in flight (memory-level parallelism is
// what a random gather lives on). A ballot over the group finds the matching
// lane; only that lane reads the value array, and a shuffle hands the value to
// the key's owner, which writes it out.
template <int M, int G>
__global__ void __launch_bounds__(256) lookup_grouped(DeviceTable t, const uint64_t* __restrict__ queries,
                                                      uint64_t n, uint64_t* __restrict__ out_values,
                                                      uint8_t* __restrict__ out_found) {
  static_assert(M % (2 * G) == 0, "a bucket splits into whole 16-byte vectors per thread");
  constexpr int V = M / (2 * G);
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int member = lane % G;
  const int leader = lane - member;
  const bool valid = i < n;

  // Every lane stays to the end: the shuffles below need the whole warp.
  const uint64_t key = valid ? queries[i] : 0;
  uint32_t bucket = 0;
  if (valid && key != gph::kEmptyKey) {
    const uint32_t cell = gph::cell_of(t.geo, key);
    bucket = gph::bucket_for_key(t.geo, key, cell, __ldg(t.cells + cell));
  }

  // Bucket Requester: all loads first.
  ulonglong2 slots[G][V];
  uint32_t buckets[G];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    buckets[r] = __shfl_sync(kFullWarp, bucket, leader + r);
    const ulonglong2* p =
        reinterpret_cast<const ulonglong2*>(t.keys + static_cast<uint64_t>(buckets[r]) * M) + member * V;
#pragma unroll
    for (int x = 0; x < V; ++x) slots[r][x] = __ldg(p + x);
  }

  // Compare, then read the value of each hit (still all before any shuffle).
  uint64_t hit_value[G];
  unsigned group_hits[G];
  const unsigned group_mask = (G == 32 ? kFullWarp : ((1u << G) - 1u)) << leader;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint64_t k = __shfl_sync(kFullWarp, key, leader + r);
    int slot = -1;
#pragma unroll
    for (int x = 0; x < V; ++x) {
      if (slots[r][x].x == k) slot = member * 2 * V + 2 * x;
      if (slots[r][x].y == k) slot = member * 2 * V + 2 * x + 1;
    }
    group_hits[r] = __ballot_sync(kFullWarp, slot >= 0) & group_mask;
    hit_value[r] = 0;
    if (slot >= 0) hit_value[r] = t.values[static_cast<uint64_t>(buckets[r]) * M + slot];
  }

  uint64_t my_value = 0;
  bool my_found = false;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const int src = group_hits[r] ? __ffs(group_hits[r]) - 1 : leader;
    const uint64_t v = __shfl_sync(kFullWarp, hit_value[r], src);
    if (member == r) {
      my_value = v;
      my_found = group_hits[r] != 0;
    }
  }
  if (!valid) return;
  if (key == gph::kEmptyKey) {  // out of band: it would "match" vacant slots
    my_found = t.oob->present != 0;
    my_value = t.oob->value;
  }
  out_found[i] = my_found;
  if (my_found) out_values[i] = my_value;
}

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
  const uint64_t base = static_cast<uint64_t>(gph::bucket_for_key(t.geo, key, cell, t.cells[cell])) * M;
  for (uint32_t s = 0; s < M; ++s) {
    if (t.keys[base + s] == key) {
      out_values[i] = t.values[base + s];
      out_found[i] = 1;
      return;
    }
  }
  out_found[i] = 0;
}

template <int M, int G>
cudaError_t launch_grouped(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                           uint8_t* found, int block, cudaStream_t stream) {
  const uint64_t grid = (n + block - 1) / block;
  lookup_grouped<M, G><<<static_cast<unsigned>(grid), block, 0, stream>>>(t, keys, n, values, found);
  return cudaGetLastError();
}

}  // namespace

bool lookup_shape_supported(uint32_t m, int g) {
  switch (m) {
    case 8: return g == 2 || g == 4;
    case 16: return g == 2 || g == 4 || g == 8;
    case 32: return g == 4 || g == 8 || g == 16;
    default: return false;
  }
}

cudaError_t launch_lookup(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                          uint8_t* found, LookupShape shape, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const uint32_t m = t.geo.slots_per_bucket;
  const int b = shape.block;
  if (b <= 0 || b > 256 || b % 32 != 0) return cudaErrorInvalidConfiguration;
  if (m == 8 && shape.group == 2) return launch_grouped<8, 2>(t, keys, n, values, found, b, stream);
  if (m == 8 && shape.group == 4) return launch_grouped<8, 4>(t, keys, n, values, found, b, stream);
  if (m == 16 && shape.group == 2) return launch_grouped<16, 2>(t, keys, n, values, found, b, stream);
  if (m == 16 && shape.group == 4) return launch_grouped<16, 4>(t, keys, n, values, found, b, stream);
  if (m == 16 && shape.group == 8) return launch_grouped<16, 8>(t, keys, n, values, found, b, stream);
  if (m == 32 && shape.group == 4) return launch_grouped<32, 4>(t, keys, n, values, found, b, stream);
  if (m == 32 && shape.group == 8) return launch_grouped<32, 8>(t, keys, n, values, found, b, stream);
  if (m == 32 && shape.group == 16) return launch_grouped<32, 16>(t, keys, n, values, found, b, stream);
  const uint64_t grid = (n + b - 1) / b;
  lookup_generic<<<static_cast<unsigned>(grid), b, 0, stream>>>(t, keys, n, values, found);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
