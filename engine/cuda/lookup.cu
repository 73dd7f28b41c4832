// GPH §5: one bucket probe per key, hit or miss.
#include "engine/cuda/lookup.h"

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// GPH §5.1 Lookup Group + §5.2 Bucket Requester.
//
// Each thread owns K query keys (coalesced loads, coalesced result stores) and
// computes their cells and buckets. A group of G threads then reads the G*K
// buckets of its members' keys: each thread loads V = M/(2G) 16-byte vectors
// per bucket, and all G*K*V loads are issued before the first compare, so a
// thread has that many independent 16-byte requests in flight (memory-level
// parallelism is what a random gather lives on). A ballot over the group finds
// the matching lane; only that lane reads the value array (all value reads of
// the thread again issued together), and a shuffle hands the value to the
// key's owner, which writes it out. K > 1 doubles the requests in flight in
// both phases; the value read of a hit depends on the compare, so without it
// a hit costs two full memory latencies with half the parallelism.
template <bool kStream>
__device__ __forceinline__ ulonglong2 load_slots(const ulonglong2* p) {
  if constexpr (kStream) return __ldcs(p);
  return __ldg(p);
}
template <bool kStream>
__device__ __forceinline__ uint64_t load_value(const uint64_t* p) {
  if constexpr (kStream) return __ldcs(reinterpret_cast<const unsigned long long*>(p));
  return *p;
}

template <int M, int G, int K, bool kStream>
__global__ void __launch_bounds__(256) lookup_grouped(DeviceTable t, const uint64_t* __restrict__ queries,
                                                      uint64_t n, uint64_t* __restrict__ out_values,
                                                      uint8_t* __restrict__ out_found) {
  static_assert(M % (2 * G) == 0, "a bucket splits into whole 16-byte vectors per thread");
  constexpr int V = M / (2 * G);
  const uint64_t first = blockIdx.x * static_cast<uint64_t>(blockDim.x) * K + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const int member = lane % G;
  const int leader = lane - member;
  const unsigned group_mask = (G == 32 ? kFullWarp : ((1u << G) - 1u)) << leader;

  // Every lane stays to the end: the shuffles below need the whole warp.
  uint64_t key[K];
  uint32_t bucket[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const uint64_t i = first + static_cast<uint64_t>(k) * blockDim.x;
    key[k] = i < n ? queries[i] : 0;
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    bucket[k] = 0;
    if (key[k] != gph::kEmptyKey) {
      const uint32_t cell = gph::cell_of(t.geo, key[k]);
      bucket[k] = gph::bucket_for_key(t.geo, key[k], cell, __ldg(t.cells + cell));
    }
  }

  // Bucket Requester: all loads first.
  ulonglong2 slots[K][G][V];
  uint32_t buckets[K][G];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < G; ++r) {
      buckets[k][r] = __shfl_sync(kFullWarp, bucket[k], leader + r);
      const ulonglong2* p =
          reinterpret_cast<const ulonglong2*>(t.keys + static_cast<uint64_t>(buckets[k][r]) * M) + member * V;
#pragma unroll
      for (int x = 0; x < V; ++x) slots[k][r][x] = load_slots<kStream>(p + x);
    }
  }

  // Compare, then read the value of each hit (still all before any shuffle).
  uint64_t hit_value[K][G];
  unsigned group_hits[K][G];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const uint64_t want = __shfl_sync(kFullWarp, key[k], leader + r);
      int slot = -1;
#pragma unroll
      for (int x = 0; x < V; ++x) {
        if (slots[k][r][x].x == want) slot = member * 2 * V + 2 * x;
        if (slots[k][r][x].y == want) slot = member * 2 * V + 2 * x + 1;
      }
      group_hits[k][r] = __ballot_sync(kFullWarp, slot >= 0) & group_mask;
      hit_value[k][r] = 0;
      if (slot >= 0) hit_value[k][r] = load_value<kStream>(t.values + static_cast<uint64_t>(buckets[k][r]) * M + slot);
    }
  }

#pragma unroll
  for (int k = 0; k < K; ++k) {
    uint64_t my_value = 0;
    bool my_found = false;
#pragma unroll
    for (int r = 0; r < G; ++r) {
      const int src = group_hits[k][r] ? __ffs(group_hits[k][r]) - 1 : leader;
      const uint64_t v = __shfl_sync(kFullWarp, hit_value[k][r], src);
      if (member == r) {
        my_value = v;
        my_found = group_hits[k][r] != 0;
      }
    }
    const uint64_t i = first + static_cast<uint64_t>(k) * blockDim.x;
    if (i >= n) continue;
    if (key[k] == gph::kEmptyKey) {  // out of band: it would "match" vacant slots
      my_found = t.oob->present != 0;
      my_value = t.oob->value;
    }
    out_found[i] = my_found;
    if (my_found) out_values[i] = my_value;
  }
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

template <class Kernel>
cudaError_t launch_with_window(Kernel kernel, unsigned grid, int block, const DeviceTable& t, const uint64_t* keys,
                               uint64_t n, uint64_t* values, uint8_t* found, bool persist, CellWindow window,
                               cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  if (persist && window.bytes > 0) {
    // The Cell Index is read at random by every lookup: keep it in L2 while
    // the buckets stream through (GPH §5 puts it in shared memory; ours is
    // too large for that, docs/gph.md).
    attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
    attr[0].val.accessPolicyWindow.base_ptr = t.cells;
    attr[0].val.accessPolicyWindow.num_bytes = window.bytes;
    attr[0].val.accessPolicyWindow.hitRatio = window.hit_ratio;
    attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    config.attrs = attr;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, t, keys, n, values, found);
}

template <int M, int G>
cudaError_t launch_grouped(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint64_t* values,
                           uint8_t* found, const LookupShape& shape, CellWindow window, cudaStream_t stream) {
  const int block = shape.block;
  const uint64_t per_block = static_cast<uint64_t>(block) * shape.keys_per_thread;
  const unsigned grid = static_cast<unsigned>((n + per_block - 1) / per_block);
  const bool p = shape.persist_cells;
  const bool s = shape.streaming_loads;
  switch (shape.keys_per_thread * 2 + (s ? 1 : 0)) {
    case 2: return launch_with_window(lookup_grouped<M, G, 1, false>, grid, block, t, keys, n, values, found, p, window, stream);
    case 3: return launch_with_window(lookup_grouped<M, G, 1, true>, grid, block, t, keys, n, values, found, p, window, stream);
    case 4: return launch_with_window(lookup_grouped<M, G, 2, false>, grid, block, t, keys, n, values, found, p, window, stream);
    case 5: return launch_with_window(lookup_grouped<M, G, 2, true>, grid, block, t, keys, n, values, found, p, window, stream);
    default: return cudaErrorInvalidConfiguration;
  }
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
                          uint8_t* found, LookupShape shape, CellWindow window, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const uint32_t m = t.geo.slots_per_bucket;
  const int b = shape.block;
  if (b <= 0 || b > 256 || b % 32 != 0) return cudaErrorInvalidConfiguration;
  if (m == 8 && shape.group == 2) return launch_grouped<8, 2>(t, keys, n, values, found, shape, window, stream);
  if (m == 8 && shape.group == 4) return launch_grouped<8, 4>(t, keys, n, values, found, shape, window, stream);
  if (m == 16 && shape.group == 2) return launch_grouped<16, 2>(t, keys, n, values, found, shape, window, stream);
  if (m == 16 && shape.group == 4) return launch_grouped<16, 4>(t, keys, n, values, found, shape, window, stream);
  if (m == 16 && shape.group == 8) return launch_grouped<16, 8>(t, keys, n, values, found, shape, window, stream);
  if (m == 32 && shape.group == 4) return launch_grouped<32, 4>(t, keys, n, values, found, shape, window, stream);
  if (m == 32 && shape.group == 8) return launch_grouped<32, 8>(t, keys, n, values, found, shape, window, stream);
  if (m == 32 && shape.group == 16) return launch_grouped<32, 16>(t, keys, n, values, found, shape, window, stream);
  const uint64_t grid = (n + b - 1) / b;
  lookup_generic<<<static_cast<unsigned>(grid), b, 0, stream>>>(t, keys, n, values, found);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
