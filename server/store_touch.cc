// memcached's touch, gat and gats (GetOp::touch, issue 27): a get run whose
// calls set a new expiry on the items they find. Each touching call's items
// are read, then rewritten with the new expiry and their own value, flags
// and CAS version (memcached's touch keeps the CAS), before any later call
// of the run reads them, so the run keeps its calls' order.
#include <deque>
#include <optional>
#include <string_view>

#include "server/put_plan.h"
#include "server/store.h"

namespace gphkv::server {

void Store::apply_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  begin_run("apply_gets");
  ++counters_.sync_get_runs;
  bool any_touch = false;
  for (const Call* c : calls) any_touch |= c->get().touch;
  if (!any_touch) {
    read_values(calls, statuses);
    return;
  }
  statuses->assign(calls.size(), absl::OkStatus());
  std::vector<absl::Status> part;
  size_t begin = 0;
  while (begin < calls.size()) {
    // The calls up to and including the next touching one.
    size_t end = begin;
    while (end < calls.size() && !calls[end]->get().touch) ++end;
    if (end < calls.size()) ++end;
    const absl::Span<Call* const> run = calls.subspan(begin, end - begin);
    Call& last = *run.back();
    std::vector<byte_key::ItemMeta> items;
    GetOp& get = std::get<GetOp>(last.op);
    if (get.touch && get.items == nullptr) get.items = &items;  // the touch needs the items' fields
    read_values(run, &part);
    if (get.touch && part.back().ok()) part.back() = touch_found(last);
    if (get.items == &items) get.items = nullptr;
    std::copy(part.begin(), part.end(), statuses->begin() + static_cast<std::ptrdiff_t>(begin));
    begin = end;
  }
}

absl::Status Store::touch_found(const Call& call) {
  const GetOp& get = call.get();
  const v1::GetResponse& got = *get.response;
  if (get.exists_only) {
    return absl::InternalError("a touch reads its items' values to rewrite them; exists_only is not for it");
  }
  // One plain set per found key: its value as read, its flags and CAS kept,
  // the new expiry (made absolute by resolve_item_fields).
  const size_t n = get.keys.size();
  std::vector<std::string_view> key_bytes(n);
  get.byte_keys.for_each([&](size_t i, std::string_view k) { key_bytes[i] = k; });
  std::deque<uint32_t> lengths;  // stable addresses: the ops view them
  std::vector<Call> sets;
  sets.reserve(n);
  uint64_t value_offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const int at = static_cast<int>(i);
    if (at >= got.found_size() || !got.found(at)) continue;
    const uint32_t length = got.value_lengths(at);
    const std::string_view value = std::string_view(got.values()).substr(value_offset, length);
    value_offset += length;
    const byte_key::ItemMeta meta = i < get.items->size() ? (*get.items)[i] : byte_key::ItemMeta{};
    Call& set = sets.emplace_back();
    PutOp op;
    op.keys = get.keys.subspan(i, 1);
    lengths.push_back(length);
    op.value_lengths = absl::Span<const uint32_t>(&lengths.back(), 1);
    op.values = value;
    if (!get.byte_keys.empty()) {
      lengths.push_back(static_cast<uint32_t>(key_bytes[i].size()));
      op.byte_keys = ByteKeys{key_bytes[i], absl::Span<const uint32_t>(&lengths.back(), 1)};
    }
    op.flags = meta.flags;
    op.exptime = get.touch_exptime;
    op.keep_cas = meta.cas;
    set.op = op;
  }
  if (sets.empty()) return absl::OkStatus();
  std::vector<Call*> puts;
  puts.reserve(sets.size());
  for (Call& c : sets) puts.push_back(&c);
  resolve_item_fields(puts);
  // At the cap an eviction makes room as for a put run, sparing the keys
  // being rewritten (Store::in_put_run).
  put_run_ = puts;
  put_run_keys_made_ = false;
  PutPlan plan(puts, /*placed=*/needs_placed(puts), &next_cas_);
  std::vector<absl::Status> put_status;
  apply_plan(plan, &put_status);
  put_run_ = {};
  if (options_.logged_writes) keep_touched(puts, put_status);
  for (absl::Status& s : put_status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void Store::keep_touched(absl::Span<Call* const> sets, const std::vector<absl::Status>& statuses) {
  // One status per call: each set holds one key (touch_found).
  for (size_t i = 0; i < sets.size() && i < statuses.size(); ++i) {
    if (!statuses[i].ok()) continue;
    const PutOp& op = sets[i]->put();
    if (op.byte_keys.empty()) {
      touched_.ids.push_back(op.keys[0]);
      touched_.id_lengths.push_back(op.value_lengths[0]);
      touched_.id_values.append(op.values);
      continue;
    }
    op.byte_keys.for_each([&](size_t, std::string_view k) { touched_.byte_keys.emplace_back(k); });
    touched_.byte_lengths.push_back(op.value_lengths[0]);
    touched_.byte_values.append(op.values);
    // The version the record took: the item's own, or a new one where it had none.
    const uint64_t cas = op.keep_cas != 0 ? op.keep_cas : op.first_cas;
    touched_.metas.push_back(byte_key::ItemMeta{op.flags, static_cast<uint32_t>(op.exptime), cas});
  }
}

}  // namespace gphkv::server
