// Store::apply_placed_deletes for a run that holds a compare-and-delete
// (DeleteOp::compare_cas, memcached's md C): in the run's order, the plain
// deletes between them as one erase each, and each compare alone, decided
// against the CAS version its key's item holds at that point.
#include <string_view>

#include "absl/strings/str_cat.h"
#include "server/store.h"

namespace gphkv::server {

void Store::apply_deletes_in_order(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  std::vector<absl::Status> erased;
  size_t begin = 0;
  while (begin < calls.size()) {
    if (calls[begin]->del().compare_cas) {
      (*statuses)[begin] = apply_compare_delete(*calls[begin]);
      ++begin;
      continue;
    }
    size_t end = begin;
    while (end < calls.size() && !calls[end]->del().compare_cas) ++end;
    erase_placed(calls.subspan(begin, end - begin), &erased);
    std::copy(erased.begin(), erased.end(), statuses->begin() + static_cast<std::ptrdiff_t>(begin));
    begin = end;
  }
}

absl::Status Store::apply_compare_delete(Call& call) {
  const DeleteOp& op = call.del();
  if (op.keys.size() != 1 || op.byte_keys.size() != 1) {
    // The memcached port sends one byte key; a caller that builds another
    // has a bug.
    return absl::InternalError("a compare-and-delete takes exactly one byte key");
  }
  // The item as it is now: the deletes before this one in the run are applied.
  HeldItem held;
  if (absl::Status s = read_one_item(op.keys, op.byte_keys, /*exists_only=*/true, &held); !s.ok()) return s;
  if (held.found() && (held.item() == nullptr || held.item()->cas != op.cas)) {
    return absl::AbortedError(
        absl::StrCat("delete: the item's CAS version is not ", op.cas, " (it was written since); nothing was changed"));
  }
  // A miss goes through the plain delete too: it answers deleted=false.
  Call* const deletes[] = {&call};
  std::vector<absl::Status> erased;
  erase_placed(deletes, &erased);
  return erased[0];
}

}  // namespace gphkv::server
