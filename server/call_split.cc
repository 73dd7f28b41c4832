#include "server/call_split.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "prometheus/histogram.h"

namespace gphkv::server {
int64_t single_partition(const Call& call, const KeyPlacement& placement) {
  if (placement.partitions() == 1) return 0;
  const KeySpan keys = call.keys();
  if (keys.empty()) return -1;  // a shrink or a flush_all goes to every partition
  const uint32_t first = placement.partition_of(keys[0]);
  for (size_t i = 1; i < keys.size(); ++i) {
    if (placement.partition_of(keys[i]) != first) return -1;
  }
  return first;
}

SplitParts SplitCall::split(Call call, const KeyPlacement& placement,
                            std::shared_ptr<const std::vector<std::string>> partition_names,
                            uint64_t max_response_bytes, const CallStageHistograms* stages) {
  const OpKind kind = call.kind();
  const uint32_t n = placement.partitions();
  auto state = std::make_shared<SplitCall>(std::move(call), std::move(partition_names), max_response_bytes, stages);
  const Call& original = state->original_;

  // The parts, in partition order, before any Call points into them.
  std::vector<Part>& parts = state->parts_;
  const KeySpan keys = original.keys();
  if (kind == OpKind::kShrink || (kind == OpKind::kPut && original.put().mode == PutMode::kFlush)) {
    parts.resize(n);
    for (uint32_t p = 0; p < n; ++p) parts[p].partition = p;
  } else {
    std::vector<int32_t> part_of(n, -1);
    std::vector<uint32_t> where(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) where[i] = placement.partition_of(keys[i]);
    for (uint32_t p : where) {
      if (part_of[p] < 0) part_of[p] = 0;  // touched
    }
    for (uint32_t p = 0; p < n; ++p) {
      if (part_of[p] < 0) continue;
      part_of[p] = static_cast<int32_t>(parts.size());
      parts.emplace_back().partition = p;
    }
    for (size_t i = 0; i < keys.size(); ++i) parts[part_of[where[i]]].positions.push_back(static_cast<uint32_t>(i));
  }

  // Each part's keys (and values) in their original order, so repeated keys
  // of one call keep their order on their partition.
  for (Part& part : parts) {
    part.keys.reserve(part.positions.size());
    for (uint32_t i : part.positions) part.keys.push_back(keys[i]);
  }
  const ByteKeys byte_keys = original.byte_keys();
  if (!byte_keys.empty()) {
    std::vector<std::string_view> key(byte_keys.size());
    byte_keys.for_each([&](size_t i, std::string_view k) { key[i] = k; });
    for (Part& part : parts) {
      part.key_lengths.reserve(part.positions.size());
      for (uint32_t i : part.positions) {
        part.key_lengths.push_back(static_cast<uint32_t>(key[i].size()));
        part.key_bytes.append(key[i]);
      }
    }
  }
  if (kind == OpKind::kGet && !original.get().key_sessions.empty()) {
    for (Part& part : parts) {
      part.key_sessions.reserve(part.positions.size());
      for (uint32_t i : part.positions) part.key_sessions.push_back(original.get().key_sessions[i]);
    }
  }
  if (kind == OpKind::kPut) {
    const PutOp& put = original.put();
    // Where each key's value starts in the original's values.
    std::vector<uint64_t> offset(put.keys.size() + 1, 0);
    for (size_t i = 0; i < put.keys.size(); ++i) offset[i + 1] = offset[i] + put.value_lengths[i];
    for (Part& part : parts) {
      uint64_t bytes = 0;
      for (uint32_t i : part.positions) bytes += put.value_lengths[i];
      part.values.reserve(bytes);
      part.value_lengths.reserve(part.positions.size());
      for (uint32_t i : part.positions) {
        part.value_lengths.push_back(put.value_lengths[i]);
        part.values.append(put.values.substr(offset[i], put.value_lengths[i]));
      }
    }
  }

  SplitParts out;
  out.call = state;
  out.parts.reserve(parts.size());
  for (size_t j = 0; j < parts.size(); ++j) {
    Part& part = parts[j];
    Call c;
    const ByteKeys part_byte_keys{part.key_bytes, part.key_lengths};
    switch (kind) {
      case OpKind::kGet:
        c.op = GetOp{part.keys,
                     original.get().exists_only,
                     original.get().packed,
                     &part.get_response,
                     part_byte_keys,
                     original.get().items != nullptr ? &part.items : nullptr,
                     original.get().needs_cas,
                     original.get().touch,
                     original.get().touch_exptime,
                     original.get().with_items,
                     part.key_sessions};
        break;
      case OpKind::kPut:
        // A conditional put has one key, so never splits; a set keeps its item fields.
        c.op = PutOp{part.keys,         part.value_lengths,  part.values,          &part.put_response,
                     part_byte_keys,    original.put().mode, original.put().flags, original.put().exptime,
                     original.put().cas};
        break;
      case OpKind::kDelete: c.op = DeleteOp{part.keys, &part.delete_response, part_byte_keys}; break;
      case OpKind::kShrink: c.op = ShrinkOp{&part.shrink_response}; break;
    }
    c.deadline = original.deadline;
    c.session = original.session;
    c.received = original.received;
    c.done = [state, j](absl::Status s) { state->settle(j, std::move(s)); };
    out.parts.push_back(CallPart{part.partition, std::move(c)});
  }
  state->unsettled_ = parts.size() + 1;
  return out;
}

void SplitCall::release(bool answer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = answer;
  }
  settle(parts_.size(), absl::OkStatus());
}

void SplitCall::settle(size_t part, absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (part < parts_.size()) {
      parts_[part].status = std::move(status);
      if (stages_ != nullptr && first_settled_ == Clock::time_point{}) first_settled_ = Clock::now();
    }
    if (--unsettled_ != 0) return;
  }
  // The last one: every part is final, and no other thread touches them.
  finish();
}

void SplitCall::finish() {
  if (!answer_) return;  // refused whole by the submitter; `done` must not run
  const Clock::time_point t0 = stages_ != nullptr ? Clock::now() : Clock::time_point{};
  absl::Status s = failure();
  if (s.ok()) {
    switch (original_.kind()) {
      case OpKind::kGet: s = merge_gets(); break;
      case OpKind::kPut: merge_puts(); break;
      case OpKind::kDelete: merge_deletes(); break;
      case OpKind::kShrink: merge_shrinks(); break;
    }
  }
  if (stages_ != nullptr && first_settled_ != Clock::time_point{}) {
    (*stages_)[kCallSplitWait]->Observe(std::chrono::duration<double>(t0 - first_settled_).count());
    (*stages_)[kCallMerge]->Observe(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  auto done = std::move(original_.done);
  done(std::move(s));
}

absl::Status SplitCall::failure() const {
  const Part* failed = nullptr;
  std::vector<std::string> applied;
  for (const Part& part : parts_) {
    if (!part.status.ok()) {
      if (failed == nullptr) failed = &part;
    } else {
      applied.push_back((*names_)[part.partition]);
    }
  }
  if (failed == nullptr) return absl::OkStatus();
  std::string message = absl::StrCat((*names_)[failed->partition], ": ", failed->status.message());
  const OpKind kind = original_.kind();
  if (!applied.empty() && (kind == OpKind::kPut || kind == OpKind::kDelete)) {
    absl::StrAppend(&message, "; the call's keys on ", absl::StrJoin(applied, ", "),
                    " were applied (each partition applies its part of a call on its own)");
  }
  return absl::Status(failed->status.code(), message);
}

absl::Status SplitCall::merge_gets() {
  v1::GetResponse* out = original_.get().response;
  const int n = static_cast<int>(original_.num_keys());
  // Where each key's value lies in its part's response, then the values in
  // request order.
  std::vector<const char*> source(static_cast<size_t>(n), nullptr);
  out->mutable_found()->Resize(n, false);
  out->mutable_value_lengths()->Resize(n, 0);
  const bool with_items = original_.get().with_items;
  if (with_items) {
    out->mutable_flags()->Resize(n, 0);
    out->mutable_exptime()->Resize(n, 0);
    out->mutable_cas()->Resize(n, 0);
  }
  bool* found = out->mutable_found()->mutable_data();
  uint32_t* lengths = out->mutable_value_lengths()->mutable_data();
  uint64_t bytes = 0;
  std::vector<byte_key::ItemMeta>* items = original_.get().items;
  if (items != nullptr) items->assign(static_cast<size_t>(n), byte_key::ItemMeta{});
  for (const Part& part : parts_) {
    const v1::GetResponse& r = part.get_response;
    const char* values = r.values().data();
    if (items != nullptr && part.items.size() == part.positions.size()) {
      for (size_t j = 0; j < part.positions.size(); ++j) (*items)[part.positions[j]] = part.items[j];
    }
    for (size_t j = 0; j < part.positions.size(); ++j) {
      const uint32_t i = part.positions[j];
      const int k = static_cast<int>(j);
      found[i] = k < r.found_size() && r.found(k);
      lengths[i] = k < r.value_lengths_size() ? r.value_lengths(k) : 0;
      if (with_items && k < r.cas_size()) {
        out->set_flags(static_cast<int>(i), r.flags(k));
        out->set_exptime(static_cast<int>(i), r.exptime(k));
        out->set_cas(static_cast<int>(i), r.cas(k));
      }
      if (!found[i]) continue;
      source[i] = values;
      values += lengths[i];
      bytes += lengths[i];
    }
  }
  if (bytes > max_response_bytes_) {
    out->Clear();
    return absl::ResourceExhaustedError(absl::StrCat("the values of this get come to ", bytes,
                                                     " bytes, over the response limit of ", max_response_bytes_,
                                                     " bytes; ask for fewer keys per call"));
  }
  std::string* values = out->mutable_values();
  values->resize(bytes);
  char* to = values->data();
  for (int i = 0; i < n; ++i) {
    if (!found[i] || lengths[i] == 0) continue;
    std::memcpy(to, source[i], lengths[i]);
    to += lengths[i];
  }
  return absl::OkStatus();
}

template <class FlagsOf>
void SplitCall::scatter_flags(int keys, google::protobuf::RepeatedField<bool>* out, FlagsOf flags_of) const {
  out->Resize(keys, false);
  for (const Part& part : parts_) {
    const google::protobuf::RepeatedField<bool>& flags = flags_of(part);
    for (size_t j = 0; j < part.positions.size(); ++j) {
      const int k = static_cast<int>(j);
      out->Set(static_cast<int>(part.positions[j]), k < flags.size() && flags.Get(k));
    }
  }
}

void SplitCall::merge_puts() {
  scatter_flags(static_cast<int>(original_.num_keys()), original_.put().response->mutable_created(),
                [](const Part& p) -> const google::protobuf::RepeatedField<bool>& { return p.put_response.created(); });
}

void SplitCall::merge_deletes() {
  scatter_flags(
      static_cast<int>(original_.num_keys()), original_.del().response->mutable_deleted(),
      [](const Part& p) -> const google::protobuf::RepeatedField<bool>& { return p.delete_response.deleted(); });
}

void SplitCall::merge_shrinks() {
  // The server's figures: every partition's table, summed; started when any
  // partition began a rebuild.
  v1::ShrinkResponse* out = original_.shrink().response;
  out->Clear();
  for (const Part& part : parts_) {
    const v1::ShrinkResponse& r = part.shrink_response;
    out->set_started(out->started() || r.started());
    out->set_keys(out->keys() + r.keys());
    out->set_table_bytes(out->table_bytes() + r.table_bytes());
    out->set_new_table_bytes(out->new_table_bytes() + r.new_table_bytes());
  }
}

}  // namespace gphkv::server
