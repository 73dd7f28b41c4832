// What a put plan calls when --memory refuses a call and the store evicts
// (--eviction=lru, issue 27): the store's CLOCK (server/store_eviction.cc)
// frees memory by evicting stored items other than the plan's own, so the
// plan's old handles stay valid, and the plan tries the call again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace gphkv::server {

class Evictor {
 public:
  virtual ~Evictor() = default;
  // Evicts items until at least `bytes` of value heap (their slots) came
  // back, or the hand found nothing more to take; never the items in the
  // table slots of `held` (table keys). Returns how many table keys it
  // evicted (0: none could be); an error of the table or heap.
  virtual absl::StatusOr<uint64_t> evict(uint64_t bytes, const absl::flat_hash_set<uint64_t>& held) = 0;
};

// What the eviction's hand did with each table slot it passed, in order
// (StoreOptions::on_clock_step: tests check it against CLOCK's own rule).
enum class ClockVerdict : uint8_t {
  kEvicted,       // its access bit was clear: the item was evicted
  kSecondChance,  // its bit was set: cleared, the item kept
  kPassedOver,    // not stored any more, or held by the put being admitted
};
struct ClockStep {
  std::vector<uint64_t> table_keys;
  std::vector<ClockVerdict> verdicts;
  std::vector<uint64_t> places;  // ValueHeap::place of each item's value at the step (0 where none is stored)
};

}  // namespace gphkv::server
