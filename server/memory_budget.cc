#include "server/memory_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gphkv::server {

void MemoryBudget::fit_heap_to_table() { heap_->set_limit(limit_ - std::min(limit_, table_->table_bytes())); }

void MemoryBudget::fit_table_to_heap() {
  // 0 would mean "no cap" to the table: never hand it that.
  const uint64_t heap = heap_->reserved_bytes();
  table_->set_max_table_bytes(std::max<uint64_t>(1, limit_ - std::min(limit_, heap)));
}

bool MemoryBudget::could_ever_fit(uint64_t heap_bytes) const {
  const uint64_t table = table_->table_bytes();
  return table <= limit_ && heap_bytes <= limit_ - table;
}

absl::Status MemoryBudget::admit_put(uint64_t projected_keys, absl::Span<const uint32_t> lengths,
                                     std::vector<ValueHandle>* slots, bool packed) {
  const uint64_t table_need = std::max(table_->table_bytes(), table_->bytes_to_hold(projected_keys));
  if (table_need > limit_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("put refused: storing ", projected_keys, " keys needs ", table_need,
                     " bytes of table, over the memory limit (--memory) of ", limit_, " bytes"));
  }
  heap_->set_limit(limit_ - table_need);
  slots->clear();
  // All or nothing: a refusal takes no slot and maps no chunk.
  absl::Status st = packed ? heap_->allocate_packed_slots(lengths, slots) : heap_->allocate_slots(lengths, slots);
  if (!st.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("put refused: ", st.message(), " (table ", table_need,
                                                     " bytes, value heap ", heap_->reserved_bytes(),
                                                     " bytes; --memory=", limit_, ")"));
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server
