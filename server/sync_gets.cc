#include "server/sync_gets.h"

#include "absl/strings/str_cat.h"

namespace gphkv::server {

void SyncGets::apply(absl::Span<Call* const> calls, engine::ElasticTable& table, ValueHeap& heap, bool mark_accessed,
                     uint64_t max_response_bytes, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  keys_.clear();
  for (Call* c : calls) keys_.insert(keys_.end(), c->get().keys.begin(), c->get().keys.end());
  handles_.resize(keys_.size());
  found_.resize(keys_.size());
  if (auto s = table.find(keys_, absl::MakeSpan(handles_), absl::MakeSpan(found_)); !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  if (mark_accessed) {
    hits_.clear();
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (found_[i]) hits_.push_back(handles_[i]);
    }
    if (auto s = heap.mark_accessed(hits_); !s.ok()) {
      statuses->assign(calls.size(), s);
      return;
    }
  }
  size_t pos = 0;
  for (size_t ci = 0; ci < calls.size(); ++ci) {
    Call* c = calls[ci];
    const int n = static_cast<int>(c->get().keys.size());
    const bool with_values = !c->get().exists_only;
    v1::GetResponse* out = c->get().response;
    out->mutable_found()->Resize(n, false);
    out->mutable_value_lengths()->Resize(n, 0);
    found_handles_.clear();
    uint64_t bytes = 0;
    for (int i = 0; i < n; ++i, ++pos) {
      if (!found_[pos]) continue;
      out->set_found(i, true);
      if (with_values) {
        const uint32_t len = heap.length(handles_[pos]);
        out->set_value_lengths(i, len);
        bytes += len;
        found_handles_.push_back(handles_[pos]);
      }
    }
    if (bytes > max_response_bytes) {
      out->Clear();
      (*statuses)[ci] = absl::ResourceExhaustedError(
          absl::StrCat("the values of this Get total ", bytes, " bytes, over the response limit of ",
                       max_response_bytes, " bytes; ask for fewer keys per call"));
      continue;
    }
    // One contiguous buffer per call: the response's `values` field itself.
    if (with_values) {
      if (auto s = heap.gather(found_handles_, out->mutable_values()); !s.ok()) {
        out->Clear();
        (*statuses)[ci] = s;
      }
    }
  }
}

}  // namespace gphkv::server
