// GPH §6.3: Saturation Fill, then Refinement for the overflowed keys.
#include "engine/cuda/insert.h"

#include "engine/cuda/batch_order.cuh"
#include "engine/cuda/batch_sort.h"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

constexpr int kBlock = 256;

// GPH §6.1 Direct Insert's write: claims a slot of `bucket` that was seen
// vacant (`vacant`, a mask over its M slots) with atomicCAS, moving on to the
// next when another key wins it; the key's home line first, the rest of the
// bucket only when that line is full, which sets the line's spill bit
// (device_table.cuh, "Lines"). False when every slot seen vacant was taken.
__device__ bool claim_slot(const DeviceTable& t, uint32_t bucket, uint64_t key, uint64_t value,
                           unsigned long long vacant) {
  const uint32_t lh = line_hash(t.geo, key), line = home_line_of(t.geo, lh);
  const unsigned long long home = line_mask(t.geo, line);
  const uint64_t base = static_cast<uint64_t>(bucket) * t.geo.slots_per_bucket;
  for (unsigned long long pass : {vacant & home, vacant & ~home}) {
    while (pass != 0) {
      const uint32_t s = __ffsll(static_cast<long long>(pass)) - 1;
      pass &= pass - 1;
      unsigned long long* slot = reinterpret_cast<unsigned long long*>(slot_key(t, base + s));
      if (atomicCAS(slot, gph::kEmptyKey, key) == gph::kEmptyKey) {
        *slot_value(t, base + s) = value;
        if (!in_line(t.geo, line, s)) mark_spill(t, bucket, line, lh, gph::cell_of(t.geo, key));
        return true;
      }
    }
  }
  return false;
}

// GPH §6.1 Direct Insert, lock-free (§6.3 Saturation Fill). One thread per
// position of the batch's order (batch_order.cuh); only the first occurrence of a key acts, with the value of
// the last occurrence (last write wins). Cells do not change in this kernel and
// slots only go from vacant to taken, so a key seen absent stays absent and a
// slot seen taken stays taken: a failed compare-and-swap moves on to the next
// vacant slot. A full bucket sends the key to the overflow list.
template <int kM, bool kGrouped>  // kM: M when known at compile time (the loads unroll), else 0
__global__ void __launch_bounds__(kBlock)
    saturation_fill(DeviceTable t, BatchOrder b, const uint64_t* __restrict__ values, uint64_t n,
                    uint8_t* __restrict__ status, uint2* __restrict__ overflow, uint32_t* __restrict__ overflow_count) {
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  bool inserted = false;
  if (p < n) {
    const uint64_t key = b.keys[p];
    if (!leads<kGrouped>(b, p, key)) {
      status[p] = kStatusDuplicate;
    } else {
      const uint64_t last = last_occurrence<kGrouped>(b, n, p, key);
      const uint64_t value = values[b.index[last]];
      uint8_t st;
      if (key == gph::kEmptyKey) {  // the one out-of-band key; deduped, so one thread
        st = t.oob->present ? kStatusAssigned : kStatusInserted;
        t.oob->present = 1;
        t.oob->value = value;
      } else {
        const uint32_t M = kM ? kM : t.geo.slots_per_bucket;
        const uint32_t cell = gph::cell_of(t.geo, key);
        const uint64_t base =
            static_cast<uint64_t>(gph::bucket_for_key(t.geo, key, cell, t.cells[cell_byte_at(cell)])) * M;
        const ulonglong2* pairs = bucket_pairs(t, base / M);
        unsigned long long vacant_mask = 0;
        uint32_t found = M;
        // A stale (L1) view is harmless here: a slot seen vacant that is not
        // fails its compare-and-swap, and no slot turns vacant in this kernel.
#pragma unroll
        for (uint32_t s = 0; s < M; ++s) {
          const uint64_t k = pairs[s].x;
          if (k == key) found = s;
          if (k == gph::kEmptyKey) vacant_mask |= 1ull << s;
        }
        if (found < M) {
          *slot_value(t, base + found) = value;
          st = kStatusAssigned;
        } else {
          st = claim_slot(t, static_cast<uint32_t>(base / M), key, value, vacant_mask) ? kStatusInserted
                                                                                       : kStatusOverflow;
          if (st == kStatusOverflow) overflow[atomicAdd(overflow_count, 1u)] = make_uint2(p, last);
        }
      }
      status[p] = st;
      inserted = st == kStatusInserted;
    }
  }
  warp_count_add(t.size, inserted, +1);
}

// Saturation Fill read the way the lookup reads (GPH §5.1/§5.2 applied to
// §6.3), for M = 8, 16 or 32: each thread owns one position of the batch's
// order; a group of 4 threads loads the 4 buckets of its members' keys, M/4
// 16-byte pairs each, all before the first compare, then shuffles each
// bucket's match and vacancy mask to the key's owner, which overwrites or
// claims a vacant slot with atomicCAS (moving on to the next vacant slot when
// another key wins it). ncu saw the one-thread-per-bucket kernel
// latency-bound at 32% of DRAM bandwidth.
constexpr int kFillGroup = 4;
template <uint32_t M, bool kGrouped>
__global__ void __launch_bounds__(kBlock)
    saturation_fill_grouped(DeviceTable t, BatchOrder b, const uint64_t* __restrict__ values, uint64_t n,
                            uint8_t* __restrict__ status, uint2* __restrict__ overflow,
                            uint32_t* __restrict__ overflow_count) {
  constexpr int G = kFillGroup, P = M / G;
  static_assert(M % G == 0 && M <= 32, "whole pairs per thread; the vacancy mask is 32 bits");
  constexpr unsigned kFull = 0xffffffffu;
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const int lane = threadIdx.x & 31, member = lane % G, leader = lane - member;

  // Every lane stays to the end: the shuffles need the whole warp.
  uint64_t key = 0, value = 0, last = p;
  bool acts = false;
  if (p < n) {
    key = b.keys[p];
    acts = leads<kGrouped>(b, p, key);
    if (!acts) status[p] = kStatusDuplicate;
  }
  uint32_t bucket = 0;
  if (acts) {
    last = last_occurrence<kGrouped>(b, n, p, key);
    value = values[b.index[last]];
    if (key != gph::kEmptyKey) {
      const uint32_t cell = gph::cell_of(t.geo, key);
      bucket = gph::bucket_for_key(t.geo, key, cell, t.cells[cell_byte_at(cell)]);
    }
  }
  ulonglong2 slots[G][P];
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint32_t bk = __shfl_sync(kFull, bucket, leader + r);
    const ulonglong2* v = reinterpret_cast<const ulonglong2*>(t.slots) + static_cast<uint64_t>(bk) * M + member * P;
#pragma unroll
    for (int x = 0; x < P; ++x) slots[r][x] = v[x];  // a stale (L1) view is harmless, as above
  }
  int my_found = -1;
  uint32_t my_vacant = 0;
#pragma unroll
  for (int r = 0; r < G; ++r) {
    const uint64_t want = __shfl_sync(kFull, key, leader + r);
    int found = -1;
    uint32_t vacant = 0;
#pragma unroll
    for (int x = 0; x < P; ++x) {
      const int slot = member * P + x;
      if (slots[r][x].x == want) found = slot;
      vacant |= (slots[r][x].x == gph::kEmptyKey ? 1u : 0u) << slot;
    }
#pragma unroll
    for (int d = 1; d < G; d <<= 1) {  // combine over the group
      found = max(found, __shfl_xor_sync(kFull, found, d));
      vacant |= __shfl_xor_sync(kFull, vacant, d);
    }
    if (member == r) {
      my_found = found;
      my_vacant = vacant;
    }
  }
  bool inserted = false;
  if (acts) {
    uint8_t st;
    if (key == gph::kEmptyKey) {  // the one out-of-band key; deduped, so one thread
      st = t.oob->present ? kStatusAssigned : kStatusInserted;
      t.oob->present = 1;
      t.oob->value = value;
    } else if (my_found >= 0) {
      *slot_value(t, static_cast<uint64_t>(bucket) * M + my_found) = value;
      st = kStatusAssigned;
    } else {
      st = claim_slot(t, bucket, key, value, my_vacant) ? kStatusInserted : kStatusOverflow;
      if (st == kStatusOverflow) overflow[atomicAdd(overflow_count, 1u)] = make_uint2(p, last);
    }
    status[p] = st;
    inserted = st == kStatusInserted;
  }
  warp_count_add(t.size, inserted, +1);
}

// Per occurrence, in batch order: the first occurrence reports what happened
// to the key; a later one reports kAssigned if the key is now stored (its
// value was applied after the first's), kNoRoom if not, as the CPU backend does.
__global__ void write_outcomes(DeviceTable t, BatchOrder b, const uint8_t* __restrict__ status, uint64_t n,
                               uint8_t* __restrict__ outcomes) {
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (p >= n) return;
  uint8_t st = status[p];
  if (st == kStatusDuplicate) {
    const uint64_t key = b.keys[p];
    bool present = false;
    if (key == gph::kEmptyKey) {
      present = t.oob->present != 0;
    } else {
      const uint32_t M = t.geo.slots_per_bucket;
      const uint32_t cell = gph::cell_of(t.geo, key);
      const uint64_t base =
          static_cast<uint64_t>(gph::bucket_for_key(t.geo, key, cell, t.cells[cell_byte_at(cell)])) * M;
      for (uint32_t s = 0; s < M && !present; ++s) present = *slot_key(t, base + s) == key;
    }
    st = present ? kStatusAssigned : kStatusNoRoom;
  }
  outcomes[b.index[p]] = st;
}

template <bool kGrouped>
void launch_fill(const DeviceTable& t, const BatchOrder& b, const uint64_t* values, uint64_t n, const InsertScratch& s,
                 cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  switch (t.geo.slots_per_bucket) {
    case 8:
      saturation_fill_grouped<8, kGrouped>
          <<<grid, kBlock, 0, stream>>>(t, b, values, n, s.status, s.overflow, s.overflow_count);
      break;
    case 16:
      saturation_fill_grouped<16, kGrouped>
          <<<grid, kBlock, 0, stream>>>(t, b, values, n, s.status, s.overflow, s.overflow_count);
      break;
    case 32:
      saturation_fill_grouped<32, kGrouped>
          <<<grid, kBlock, 0, stream>>>(t, b, values, n, s.status, s.overflow, s.overflow_count);
      break;
    default:
      saturation_fill<0, kGrouped>
          <<<grid, kBlock, 0, stream>>>(t, b, values, n, s.status, s.overflow, s.overflow_count);
  }
}

}  // namespace

cudaError_t launch_insert(const DeviceTable& t, const uint64_t* keys, const uint64_t* values, uint64_t n,
                          uint8_t* outcomes, const InsertScratch& s, const RefinementShape& shape,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  BatchOrder b;
  cudaError_t e = order_batch(keys, n, s.sorted, s.grouped, stream, &b);
  if (e != cudaSuccess) return e;
  if ((e = cudaMemsetAsync(s.overflow_count, 0, sizeof(uint32_t), stream)) != cudaSuccess) return e;
  b.lead != nullptr ? launch_fill<true>(t, b, values, n, s, stream) : launch_fill<false>(t, b, values, n, s, stream);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  e = launch_refinement(t, b.keys, b.index, values, s.status, s.overflow, s.overflow_count, shape, stream);
  if (e != cudaSuccess) return e;
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  write_outcomes<<<grid, kBlock, 0, stream>>>(t, b, s.status, n, outcomes);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
