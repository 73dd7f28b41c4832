#include "engine/cuda/erase.h"

#include "engine/cuda/batch_order.cuh"
#include "engine/cuda/batch_sort.h"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

constexpr int kBlock = 256;

// One thread per position of the batch's order (batch_order.cuh): only a
// key's first occurrence touches the table. A key has exactly one bucket, so
// clearing its slot is the whole delete.
template <int kM, bool kGrouped>  // kM: M when known at compile time (the loads unroll), else 0
__global__ void __launch_bounds__(kBlock)
    erase_kernel(DeviceTable t, BatchOrder b, uint64_t n, uint8_t* __restrict__ erased) {
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  bool removed = false;
  if (p < n) {
    const uint64_t key = b.keys[p];
    if (leads<kGrouped>(b, p, key)) {
      if (key == gph::kEmptyKey) {
        removed = t.oob->present != 0;
        t.oob->present = 0;
      } else {
        const uint32_t M = kM ? kM : t.geo.slots_per_bucket;
        const uint32_t cell = gph::cell_of(t.geo, key);
        const uint32_t bucket = gph::bucket_for_key(t.geo, key, cell, t.cells[cell_byte_at(cell)]);
        const uint64_t base = static_cast<uint64_t>(bucket) * M;
        const ulonglong2* pairs = bucket_pairs(t, bucket);
        // The key's home line, and the rest of the bucket only when the
        // cell is flagged and the line's spill bit for it is set, as a lookup reads
        // (device_table.cuh).
        const uint32_t lh = line_hash(t.geo, key);
        const uint32_t line = home_line_of(t.geo, lh);
        uint32_t found = M;
#pragma unroll
        for (uint32_t s = 0; s < M; ++s) {
          if (in_line(t.geo, line, s) && pairs[s].x == key) found = s;
        }
        if (found == M && lines_per_bucket(t.geo) > 1 && (*cell_flags(t, cell) & cell_flag_bit(cell)) != 0 &&
            spill_set(t, bucket, line, lh)) {
          for (uint32_t s = 0; s < M; ++s) {
            if (!in_line(t.geo, line, s) && pairs[s].x == key) found = s;
          }
        }
        if (found < M) {
          *slot_key(t, base + found) = gph::kEmptyKey;
          removed = true;
        }
      }
    }
    erased[b.index[p]] = removed;
  }
  warp_count_add(t.size, removed, -1);
}

template <bool kGrouped>
void launch_erase_kernel(const DeviceTable& t, const BatchOrder& b, uint64_t n, uint8_t* erased, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  switch (t.geo.slots_per_bucket) {
    case 8: erase_kernel<8, kGrouped><<<grid, kBlock, 0, stream>>>(t, b, n, erased); break;
    case 16: erase_kernel<16, kGrouped><<<grid, kBlock, 0, stream>>>(t, b, n, erased); break;
    case 32: erase_kernel<32, kGrouped><<<grid, kBlock, 0, stream>>>(t, b, n, erased); break;
    default: erase_kernel<0, kGrouped><<<grid, kBlock, 0, stream>>>(t, b, n, erased);
  }
}

}  // namespace

cudaError_t launch_erase(const DeviceTable& t, const uint64_t* keys, uint64_t n, uint8_t* erased,
                         const SortedBatch& sorted, const GroupedBatch& grouped, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BatchOrder b;
  if (cudaError_t e = order_batch(keys, n, sorted, grouped, stream, &b); e != cudaSuccess) return e;
  b.lead != nullptr ? launch_erase_kernel<true>(t, b, n, erased, stream)
                    : launch_erase_kernel<false>(t, b, n, erased, stream);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
