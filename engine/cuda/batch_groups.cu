#include "engine/cuda/batch_groups.h"

namespace gphkv::engine::cuda {
namespace {

constexpr int kBlock = 256;

// Linear probing over batch positions: a vacant slot is claimed with the
// position (compare-and-swap); a slot holding a position of the same key
// belongs to this key, whose owner then becomes the smaller position
// (atomicMin), so an owner only ever changes to another occurrence of the
// same key and a reader comparing keys[owner] always compares this slot's key.
// `slot_of` (the lead array, reused) keeps each position's slot for the next kernel.
__global__ void __launch_bounds__(kBlock)
    claim_groups(const uint64_t* __restrict__ keys, uint64_t n, uint32_t* __restrict__ owner,
                 uint32_t* __restrict__ last, uint64_t mask, uint32_t* __restrict__ slot_of,
                 uint32_t* __restrict__ index) {
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (p >= n) return;
  const uint64_t key = keys[p];
  const uint32_t me = static_cast<uint32_t>(p);
  uint64_t h = batch_group_hash(key) & mask;
  for (;;) {
    const uint32_t cur = atomicCAS(owner + h, kNotLead, me);
    if (cur == kNotLead) break;
    if (keys[cur] == key) {
      atomicMin(owner + h, me);
      break;
    }
    h = (h + 1) & mask;
  }
  atomicMax(last + h, me);
  slot_of[p] = static_cast<uint32_t>(h);
  index[p] = me;
}

// Once every position has claimed: the first occurrence leads, with its key's last.
__global__ void __launch_bounds__(kBlock) mark_leads(uint64_t n, const uint32_t* __restrict__ owner,
                                                     const uint32_t* __restrict__ last, uint32_t* __restrict__ lead) {
  const uint64_t p = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (p >= n) return;
  const uint32_t h = lead[p];  // the slot claim_groups left there
  lead[p] = owner[h] == static_cast<uint32_t>(p) ? last[h] : kNotLead;
}

}  // namespace

uint64_t batch_group_capacity(uint64_t n) {
  uint64_t c = 1024;
  while (c < 2 * n) c <<= 1;
  return c;
}

bool batch_groups_fit(uint64_t n, uint64_t l2_bytes) {
  return batch_group_capacity(n) * 2 * sizeof(uint32_t) <= l2_bytes / 2;  // owner and last
}

cudaError_t group_batch(const uint64_t* keys, uint64_t n, const GroupedBatch& g, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(g.owner, 0xff, g.capacity * sizeof(uint32_t), stream);  // kNotLead: vacant
  if (e != cudaSuccess) return e;
  if ((e = cudaMemsetAsync(g.last, 0, g.capacity * sizeof(uint32_t), stream)) != cudaSuccess) return e;
  const unsigned grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  claim_groups<<<grid, kBlock, 0, stream>>>(keys, n, g.owner, g.last, g.capacity - 1, g.lead, g.index);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  mark_leads<<<grid, kBlock, 0, stream>>>(n, g.owner, g.last, g.lead);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda
