// The table as kernels see it: plain pointers and the geometry, passed by value.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {

// The slot of the one key equal to kEmptyKey, which cannot live in a bucket
// (kEmptyKey marks vacant slots there).
struct OutOfBandSlot {
  uint32_t present;
  uint32_t pad;
  uint64_t value;
};

// What Refinement did, counted on the device since the table was made (the
// service exports these as insert_relocations_total and friends).
struct RefinementStats {
  unsigned long long transactions;  // overflowed keys handed to Refinement
  unsigned long long attempts;      // tries, restarts after a wait-die death or a stale plan included
  unsigned long long deaths;        // wait-die: met an older transaction's lock, released, restarted
  unsigned long long direct;        // placed by Direct Insert after another move made room
  unsigned long long moves;         // Extended Moves applied (relocations of one cell)
  unsigned long long mappings;      // bucket sets the planner's occupancy counts loaded
};

struct DeviceTable {
  gph::Geometry geo;
  uint8_t* cells;  // L bytes: the Cell Index, Φ<<log2R | Δ
  // N*M slots, bucket-major, each a (key, value) pair of words: the key
  // (kEmptyKey when vacant) at slots[2s], its value at slots[2s + 1]. A
  // bucket's keys and values share its 16*M bytes, so a hit reads nothing
  // after the bucket (docs/gph.md, "Pairs in the bucket").
  uint64_t* slots;
  OutOfBandSlot* oob;
  unsigned long long* size;  // keys stored, counted on the device
  uint32_t* locks;           // Refinement's bucket locks, striped: lock of bucket b is b & lock_mask
  uint32_t lock_mask;
  unsigned int* fault;  // set when a kernel meets a broken invariant (a bug); checked by the host
  RefinementStats* stats;
};

// Slot s's key and value words.
GPHKV_HD uint64_t* slot_key(const DeviceTable& t, uint64_t s) { return t.slots + 2 * s; }
GPHKV_HD uint64_t* slot_value(const DeviceTable& t, uint64_t s) { return t.slots + 2 * s + 1; }
// Bucket b's M slots as 16-byte vectors: .x the key, .y the value.
GPHKV_HD const ulonglong2* bucket_pairs(const DeviceTable& t, uint64_t b) {
  return reinterpret_cast<const ulonglong2*>(t.slots) + b * t.geo.slots_per_bucket;
}

// Per-key result codes of the insert pipeline, by sorted position.
enum InsertStatus : uint8_t {
  kStatusInserted = 0,   // = UpsertOutcome::kInserted
  kStatusAssigned = 1,   // = UpsertOutcome::kAssigned
  kStatusNoRoom = 2,     // = UpsertOutcome::kNoRoom
  kStatusDuplicate = 3,  // a later occurrence of a key; its outcome follows the first one's
  kStatusOverflow = 4,   // bucket full in Saturation Fill; Refinement decides
};

#if defined(__CUDACC__)
// Loads and stores that bypass L1 (not coherent across SMs): Refinement reads
// what other blocks wrote under the same locks.
__device__ __forceinline__ uint64_t load_cg(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ void store_cg(uint64_t* p, uint64_t v) {
  __stcg(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ uint8_t load_cell_cg(const uint8_t* p) {
  return *reinterpret_cast<const volatile uint8_t*>(p);
}

// Adds the number of lanes with `pred` to *counter with one atomic per warp.
// Every lane of the warp must call it.
__device__ __forceinline__ void warp_count_add(unsigned long long* counter, bool pred, int sign) {
  const unsigned mask = __ballot_sync(0xffffffffu, pred);
  if ((threadIdx.x & 31) == 0 && mask != 0) {
    const unsigned long long n = static_cast<unsigned long long>(__popc(mask));
    atomicAdd(counter, sign > 0 ? n : static_cast<unsigned long long>(-static_cast<long long>(n)));
  }
}
#endif

}  // namespace gphkv::engine::cuda
