#include "server/put_plan.h"

namespace gphkv::server {

PutPlan::PutPlan(absl::Span<Call* const> calls) : calls_(calls) {
  for (Call* c : calls) {
    for (uint64_t k : c->put().request->keys()) keys_.add(k);
  }
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

absl::Status PutPlan::admit(size_t ci, MemoryBudget& budget) {
  const v1::PutRequest& req = *calls_[ci]->put().request;
  const int n = req.keys_size();
  uint64_t call_new = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t x = keys_.at(req.keys(i));
    if (!present_[x] && counted_in_[x] != ci) {
      counted_in_[x] = static_cast<uint32_t>(ci);
      ++call_new;
    }
  }
  lengths_.assign(req.value_lengths().begin(), req.value_lengths().end());
  if (absl::Status st = budget.admit_put(base_keys_ + new_keys_ + call_new, lengths_, &slots_); !st.ok()) return st;
  // Admitted: created flags against the state before this call, then the
  // call's values become the pending ones (the last occurrence wins).
  v1::PutResponse* out = calls_[ci]->put().response;
  out->mutable_created()->Resize(n, false);
  for (int i = 0; i < n; ++i) out->set_created(i, !present_[keys_.at(req.keys(i))]);
  for (int i = 0; i < n; ++i) {
    const uint32_t x = keys_.at(req.keys(i));
    present_[x] = 1;
    if (pending_[x] != kNoHandle) superseded_.push_back(pending_[x]);
    pending_[x] = slots_[i];
  }
  size_t off = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t len = req.value_lengths(i);
    written_handles_.push_back(slots_[i]);
    written_bytes_.push_back(std::string_view(req.values()).substr(off, len));
    off += len;
  }
  new_keys_ += call_new;
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
