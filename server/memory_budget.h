// The --memory cap, shared by the table and the value heap. Each may take
// what the other leaves: the heap's limit is the cap minus the tables held
// (both while a rebuild runs), the table's cap is the cap minus the heap's
// reserved bytes. A put call is admitted whole or not at all: only if the
// table it needs and the value slots it adds fit together. The one place
// that moves the two limits (ValueHeap::set_limit,
// engine::ElasticTable::set_max_table_bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "server/value_heap.h"

namespace gphkv::server {

class MemoryBudget {
 public:
  // Both must outlive the budget.
  MemoryBudget(uint64_t limit_bytes, engine::ElasticTable* table, ValueHeap* heap)
      : limit_(limit_bytes), table_(table), heap_(heap) {}

  uint64_t limit_bytes() const { return limit_; }

  // The value heap may reserve whatever the tables held now leave.
  void fit_heap_to_table();
  // The table may grow into whatever the value heap has not reserved.
  void fit_table_to_heap();

  // Admits a put call that brings the table to `projected_keys` keys and
  // stores values of `lengths` bytes: the larger of the tables held now and
  // the table the ElasticTable needs for the projected keys
  // (bytes_to_hold, so the two agree and the table never refuses an admitted
  // batch), plus every value slot the call adds, must fit under the cap. On
  // success `slots` holds the call's value slots (their bytes unwritten);
  // otherwise RESOURCE_EXHAUSTED naming the sizes, and nothing was taken.
  // packed: the slots are taken with ValueHeap::allocate_packed_slots (a bulk load).
  // Whether values of `heap_bytes` could fit beside the tables held now,
  // were the value heap empty: eviction does not start for a put that could not.
  bool could_ever_fit(uint64_t heap_bytes) const;
  absl::Status admit_put(uint64_t projected_keys, absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* slots,
                         bool packed = false);

 private:
  const uint64_t limit_;
  engine::ElasticTable* table_;
  ValueHeap* heap_;
};

}  // namespace gphkv::server
