// Store::apply_puts for a run that holds conditional or read-modify-write
// puts (PutOp::mode): in the run's order, the plain sets between them as
// one plan each, and each conditional put alone, decided against the value
// its key holds at that point (server/conditional_put.h).
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "server/conditional_put.h"
#include "server/put_plan.h"
#include "server/store.h"

namespace gphkv::server {

void Store::apply_puts_in_order(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  std::vector<absl::Status> sets;
  size_t begin = 0;
  while (begin < calls.size()) {
    if (calls[begin]->put().mode != PutMode::kSet) {
      (*statuses)[begin] = apply_conditional(*calls[begin]);
      ++begin;
      continue;
    }
    size_t end = begin;
    while (end < calls.size() && calls[end]->put().mode == PutMode::kSet) ++end;
    const absl::Span<Call* const> run = calls.subspan(begin, end - begin);
    PutPlan plan(run, /*placed=*/needs_placed(run), &next_cas_);
    apply_plan(plan, &sets);
    std::copy(sets.begin(), sets.end(), statuses->begin() + static_cast<std::ptrdiff_t>(begin));
    begin = end;
  }
}

void Store::apply_flush(const PutOp& op) {
  if (op.exptime <= 0) {
    // Every item written so far took a CAS below next_cas_.
    set_flush(durability::FlushMark{next_cas_, 0});
    return;
  }
  // memcached's rule for the delay: up to 30 days relative, else absolute; a
  // later flush_all replaces a pending one, as memcached's does.
  const uint32_t at = byte_key::absolute_exptime(op.exptime, now());
  if (now() >= at) {
    apply_flush(PutOp{});
    return;
  }
  set_flush(durability::FlushMark{0, at});
}

absl::Status Store::apply_conditional(Call& call) {
  PutOp& op = std::get<PutOp>(call.op);
  if (op.mode == PutMode::kFlush) {
    apply_flush(op);
    return absl::OkStatus();
  }
  if (op.keys.size() != 1 || op.value_lengths.size() != 1) {
    // The intake refuses these (request_validation.cc); a caller inside the
    // server that builds one has a bug.
    return absl::InternalError(absl::StrCat(put_mode_name(op.mode), " takes exactly one key"));
  }
  // What the key holds now: the puts before this one in the run are applied.
  HeldItem held;
  if (absl::Status s = read_one_item(op.keys, op.byte_keys, /*exists_only=*/false, &held); !s.ok()) return s;
  const byte_key::ItemMeta* item = held.item();
  std::optional<std::string_view> stored;
  if (held.found()) stored = std::string_view(held.response.values()).substr(0, held.response.value_lengths(0));
  if (stored && op.mode != PutMode::kAdd && op.mode != PutMode::kReplace && op.mode != PutMode::kCompareAndSet &&
      item != nullptr) {
    // append, prepend, incr and decr keep the item's flags and expiry, as
    // memcached's do (its absolute expiry: Store::resolve_item_fields keeps it).
    op.flags = item->flags;
    op.exptime = item->exptime;
  }

  ResolvedPut resolved;
  const PutMode mode = op.mode;
  const bool arithmetic = mode == PutMode::kIncrement || mode == PutMode::kDecrement;
  const uint32_t max_value_bytes =
      options_.max_put_value_bytes != 0 ? options_.max_put_value_bytes : options_.max_value_bytes;
  const uint64_t stored_cas = item != nullptr ? item->cas : 0;
  WriteOutcome outcome;
  outcome.now = now();
  outcome.exptime_before = stored && item != nullptr ? item->exptime : 0;
  if (op.touch) outcome.touch_exptime = byte_key::absolute_exptime(op.touch_exptime, outcome.now);
  if (op.vivify) {
    // N0 (no expiry) takes --default_ttl, as a set without one does.
    const int64_t vivify_exptime = op.vivify_exptime == 0 ? options_.default_ttl_seconds : op.vivify_exptime;
    outcome.vivify_exptime = byte_key::absolute_exptime(vivify_exptime, outcome.now);
  }
  if (!stored && arithmetic && op.vivify) {
    // ma N: the miss takes the initial number (not incremented), flags 0,
    // and N's expiry, or T's where T came after N (memcached's order).
    resolved.counter = op.initial;
    resolved.value = absl::StrCat(op.initial);
    outcome.created = true;
    op.flags = 0;
    op.exptime = op.touch && op.touch_after_vivify ? outcome.touch_exptime : outcome.vivify_exptime;
  } else if (absl::Status s =
                 resolve_put(mode, stored, op.values, max_value_bytes, &resolved, stored_cas, op.cas, op.compare_cas);
             !s.ok()) {
    return s;
  } else if (arithmetic && op.touch) {
    op.exptime = outcome.touch_exptime;  // ma T: the item's new expiry
  }
  items_may_expire_ |= op.exptime != 0;
  // From here the call is a plain set of what it stores: the plan, the log
  // and a later look at the call all see that.
  call.resolved_value.assign(resolved.value.begin(), resolved.value.end());
  call.resolved_length.assign(1, static_cast<uint32_t>(resolved.value.size()));
  op.values = std::string_view(call.resolved_value.data(), call.resolved_value.size());
  op.value_lengths = absl::MakeConstSpan(call.resolved_length);
  op.mode = PutMode::kSet;

  Call* const puts[] = {&call};
  PutPlan plan(puts, /*placed=*/needs_placed(puts), &next_cas_);
  std::vector<absl::Status> put_status;
  apply_plan(plan, &put_status);
  if (put_status[0].ok() && op.response != nullptr && arithmetic) op.response->set_counter(resolved.counter);
  if (put_status[0].ok() && op.outcome != nullptr) {
    outcome.cas = op.first_cas;  // the CAS version the plan gave the record
    *op.outcome = outcome;
  }
  return put_status[0];
}

}  // namespace gphkv::server
