#include "server/put_plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "server/byte_key.h"
#include "server/value_handle.h"

namespace gphkv::server {

PutPlan::PutPlan(absl::Span<Call* const> calls, bool placed, uint64_t* next_cas) : placed_(placed) {
  groups_.reserve(calls.size());
  group_first_.reserve(calls.size());
  uint32_t occurrences = 0;
  for (Call* c : calls) {
    const PutOp& put = c->put();
    group_first_.push_back(occurrences);
    occurrences += static_cast<uint32_t>(put.keys.size());
    groups_.push_back(Group{put.keys, put.value_lengths, put.values, {}, put.response});
    if (!placed_) {
      for (uint64_t k : put.keys) entry_.push_back(keys_.add(k));
    }
  }
  if (!placed_) return;
  // Distinct by identity; a byte key's value becomes its record.
  absl::flat_hash_map<std::string, uint32_t> index;
  std::vector<uint64_t> group_records(calls.size() + 1, 0);
  std::vector<KeyRef> refs;
  for (size_t g = 0; g < calls.size(); ++g) {
    const PutOp& put = calls[g]->put();
    refs.clear();
    append_key_refs(put, &refs);
    size_t off = 0;
    for (size_t i = 0; i < refs.size(); ++i) {
      auto [it, inserted] = index.try_emplace(refs[i].identity(), static_cast<uint32_t>(entries_.size()));
      if (inserted) entries_.push_back(refs[i]);
      entry_.push_back(it->second);
      const std::string_view value = put.values.substr(off, put.value_lengths[i]);
      off += put.value_lengths[i];
      if (refs[i].is_bytes()) {
        // The item's flags and expiry (Store::resolve_item_fields made the
        // expiry absolute), or those recovery read back; and its CAS version:
        // a new one for every write (a refused call's number is skipped,
        // which keeps them unique), or the one a touch keeps or recovery
        // read back, which the counter then moves past.
        byte_key::ItemMeta meta{put.flags, static_cast<uint32_t>(put.exptime), put.keep_cas};
        if (!put.item_metas.empty()) meta = put.item_metas[i];
        if (next_cas != nullptr) {
          if (meta.cas == 0) {
            meta.cas = (*next_cas)++;
          } else if (meta.cas >= *next_cas) {
            *next_cas = meta.cas + 1;
          }
        }
        if (i == 0) std::get<PutOp>(calls[g]->op).first_cas = meta.cas;
        byte_key::append_record(refs[i].bytes, value, meta, &records_);
        record_lengths_.push_back(static_cast<uint32_t>(byte_key::record_bytes(refs[i].bytes, value, meta)));
      }
    }
    group_records[g + 1] = records_.size();
  }
  // The byte-key calls store their records: views made once records_ is whole.
  size_t lengths_at = 0;
  for (size_t g = 0; g < calls.size(); ++g) {
    if (calls[g]->put().byte_keys.empty()) continue;
    const size_t n = groups_[g].keys.size();
    groups_[g].lengths = absl::Span<const uint32_t>(record_lengths_.data() + lengths_at, n);
    groups_[g].bytes = std::string_view(records_).substr(group_records[g], group_records[g + 1] - group_records[g]);
    lengths_at += n;
  }
}

PutPlan::PutPlan(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  pair_lengths_.reserve(values.size());
  for (std::string_view v : values) pair_lengths_.push_back(static_cast<uint32_t>(v.size()));
  groups_.push_back(Group{keys, pair_lengths_, {}, values, nullptr});
  group_first_.push_back(0);
  for (uint64_t k : keys) entry_.push_back(keys_.add(k));
}

void PutPlan::start_planning(size_t distinct, uint64_t table_keys) {
  present_ = found_;
  pending_.assign(distinct, kNoHandle);
  counted_in_.assign(distinct, UINT32_MAX);
  base_keys_ = table_keys;
}

absl::Status PutPlan::find_stored(engine::ElasticTable& table) {
  const size_t u = keys_.size();
  old_handle_.assign(u, 0);
  found_.assign(u, 0);
  if (absl::Status s = table.find(keys_.keys, absl::MakeSpan(old_handle_), absl::MakeSpan(found_)); !s.ok()) {
    return s;
  }
  start_planning(u, table.size());
  return absl::OkStatus();
}

absl::Status PutPlan::place(engine::ElasticTable& table, const ValueHeap& heap, const CollidedKeys& collided) {
  PlacedKeys placed;
  if (absl::Status s = place_keys(entries_, table, heap, collided, /*with_values=*/false, /*now=*/0, &placed); !s.ok())
    return s;
  const size_t u = entries_.size();
  found_.resize(u);
  old_handle_.resize(u);
  home_.resize(u);
  for (size_t x = 0; x < u; ++x) {
    found_[x] = placed.places[x].stored;
    old_handle_[x] = placed.places[x].handle;
    home_[x] = placed.places[x].home;
  }
  start_planning(u, table.size());
  return absl::OkStatus();
}

absl::Status PutPlan::admit(size_t gi, MemoryBudget& budget, Evictor* evictor) {
  const Group& g = groups_[gi];
  const size_t n = g.keys.size();
  const uint32_t* entry = entry_.data() + group_first_[gi];
  uint64_t group_new = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = entry[i];
    if (!present_[x] && counted_in_[x] != gi) {
      counted_in_[x] = static_cast<uint32_t>(gi);
      ++group_new;
    }
  }
  absl::Status st = budget.admit_put(base_keys_ + new_keys_ + group_new, g.lengths, &slots_);
  if (!st.ok() && evictor != nullptr && st.code() == absl::StatusCode::kResourceExhausted) {
    uint64_t bytes = 0;
    for (uint32_t len : g.lengths) bytes += (uint64_t{len} + 7) / 8 * 8;  // 8-byte granules
    for (int round = 0; round < kEvictionRounds && !st.ok() && budget.could_ever_fit(bytes); ++round) {
      absl::StatusOr<uint64_t> evicted = evictor->evict(std::max<uint64_t>(bytes, 8) << round, held_table_keys());
      if (!evicted.ok()) return evicted.status();
      if (*evicted == 0) break;
      base_keys_ -= std::min(base_keys_, *evicted);
      st = budget.admit_put(base_keys_ + new_keys_ + group_new, g.lengths, &slots_);
      if (!st.ok() && st.code() != absl::StatusCode::kResourceExhausted) return st;
    }
  }
  if (!st.ok()) return st;
  // Admitted: created flags against the state before this call, then the
  // group's values become the pending ones (the last occurrence wins).
  if (g.response != nullptr) {
    g.response->mutable_created()->Resize(static_cast<int>(n), false);
    for (size_t i = 0; i < n; ++i) g.response->set_created(static_cast<int>(i), !present_[entry[i]]);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = entry[i];
    present_[x] = 1;
    if (pending_[x] != kNoHandle) superseded_.push_back(pending_[x]);
    // A byte key's slot holds its record: the handle says so (value_handle.h).
    pending_[x] = placed_ && entries_[x].is_bytes() ? value_handle::as_record(slots_[i]) : slots_[i];
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

const absl::flat_hash_set<uint64_t>& PutPlan::held_table_keys() {
  if (!held_made_) {
    if (placed_) {
      for (const KeyRef& k : entries_) held_.insert(k.table_key);
    } else {
      held_.insert(keys_.keys.begin(), keys_.keys.end());
    }
    held_made_ = true;
  }
  return held_;
}

void PutPlan::table_batch(std::vector<uint64_t>* keys, std::vector<uint64_t>* handles) const {
  keys->clear();
  handles->clear();
  for (size_t x = 0; x < pending_.size(); ++x) {
    if (pending_[x] == kNoHandle) continue;
    if (!placed_) {
      keys->push_back(keys_.keys[x]);
    } else if (home_[x] == KeyHome::kTable) {
      keys->push_back(entries_[x].table_key);
    } else {
      continue;
    }
    handles->push_back(pending_[x]);
  }
}

uint64_t PutPlan::apply_collided(CollidedKeys* collided) const {
  uint64_t new_records = 0;
  for (size_t x = 0; x < pending_.size() && placed_; ++x) {
    if (pending_[x] == kNoHandle) continue;
    if (home_[x] == KeyHome::kCollided) {
      // The old handle, when there was one, is release_replaced's to free.
      collided->assign(entries_[x].identity(), pending_[x]);
    } else if (entries_[x].is_bytes() && !found_[x]) {
      ++new_records;
    }
  }
  return new_records;
}

void PutPlan::release_replaced(ValueHeap& heap) const {
  for (size_t x = 0; x < pending_.size(); ++x) {
    if (found_[x] && pending_[x] != kNoHandle) heap.release(old_handle_[x]);
  }
  for (ValueHandle h : superseded_) heap.release(h);
}

void PutPlan::release_written(ValueHeap& heap) const {
  for (ValueHandle h : written_handles_) heap.release(h);
}

void PutPlan::release_unstored(ValueHeap& heap) const {
  for (size_t x = 0; x < pending_.size(); ++x) {
    if (pending_[x] != kNoHandle) heap.release(pending_[x]);
  }
  for (ValueHandle h : superseded_) heap.release(h);
}

}  // namespace gphkv::server
