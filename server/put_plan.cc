#include "server/put_plan.h"

namespace gphkv::server {

PutPlan::PutPlan(absl::Span<Call* const> calls) {
  groups_.reserve(calls.size());
  for (Call* c : calls) {
    const PutOp& put = c->put();
    groups_.push_back(Group{put.keys, put.value_lengths, put.values, {}, put.response});
    for (uint64_t k : put.keys) keys_.add(k);
  }
}

PutPlan::PutPlan(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  pair_lengths_.reserve(values.size());
  for (std::string_view v : values) pair_lengths_.push_back(static_cast<uint32_t>(v.size()));
  groups_.push_back(Group{keys, pair_lengths_, {}, values, nullptr});
  for (uint64_t k : keys) keys_.add(k);
}

absl::Status PutPlan::find_stored(engine::ElasticTable& table) {
  const size_t u = keys_.size();
  old_handle_.assign(u, 0);
  found_.assign(u, 0);
  if (absl::Status s = table.find(keys_.keys, absl::MakeSpan(old_handle_), absl::MakeSpan(found_)); !s.ok()) {
    return s;
  }
  present_ = found_;
  pending_.assign(u, kNoHandle);
  counted_in_.assign(u, UINT32_MAX);
  base_keys_ = table.size();
  return absl::OkStatus();
}

absl::Status PutPlan::admit(size_t gi, MemoryBudget& budget) {
  const Group& g = groups_[gi];
  const size_t n = g.keys.size();
  uint64_t group_new = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = keys_.at(g.keys[i]);
    if (!present_[x] && counted_in_[x] != gi) {
      counted_in_[x] = static_cast<uint32_t>(gi);
      ++group_new;
    }
  }
  if (absl::Status st = budget.admit_put(base_keys_ + new_keys_ + group_new, g.lengths, &slots_); !st.ok()) return st;
  // Admitted: created flags against the state before this call, then the
  // group's values become the pending ones (the last occurrence wins).
  if (g.response != nullptr) {
    g.response->mutable_created()->Resize(static_cast<int>(n), false);
    for (size_t i = 0; i < n; ++i) g.response->set_created(static_cast<int>(i), !present_[keys_.at(g.keys[i])]);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = keys_.at(g.keys[i]);
    present_[x] = 1;
    if (pending_[x] != kNoHandle) superseded_.push_back(pending_[x]);
    pending_[x] = slots_[i];
  }
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    written_handles_.push_back(slots_[i]);
    written_bytes_.push_back(g.values.empty() ? g.bytes.substr(off, g.lengths[i]) : g.values[i]);
    off += g.lengths[i];
  }
  new_keys_ += group_new;
  return absl::OkStatus();
}

void PutPlan::table_batch(std::vector<uint64_t>* keys, std::vector<uint64_t>* handles) const {
  keys->clear();
  handles->clear();
  for (size_t x = 0; x < keys_.size(); ++x) {
    if (pending_[x] == kNoHandle) continue;
    keys->push_back(keys_.keys[x]);
    handles->push_back(pending_[x]);
  }
}

void PutPlan::release_replaced(ValueHeap& heap) const {
  for (size_t x = 0; x < keys_.size(); ++x) {
    if (found_[x] && pending_[x] != kNoHandle) heap.release(old_handle_[x]);
  }
  for (ValueHandle h : superseded_) heap.release(h);
}

void PutPlan::release_written(ValueHeap& heap) const {
  for (ValueHandle h : written_handles_) heap.release(h);
}

void PutPlan::release_unstored(ValueHeap& heap) const {
  for (size_t x = 0; x < keys_.size(); ++x) {
    if (pending_[x] != kNoHandle) heap.release(pending_[x]);
  }
  for (ValueHandle h : superseded_) heap.release(h);
}

}  // namespace gphkv::server
