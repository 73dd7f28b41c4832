#include "server/bulk_load.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/elapsed.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {

void BulkLoad::reserve(uint64_t pairs) {
  // A hint from a file: never more than the table could hold under --memory.
  backing_seconds_at_begin_ = heap_.backing_seconds();
  const uint64_t n = std::min<uint64_t>(pairs, table_.key_limit_under(budget_.limit_bytes()));
  writes_prefault_.stop();  // before the old array goes
  writes_.reserve(n);
  writes_prefault_.start(writes_.data() + writes_.size(),
                         (writes_.capacity() - writes_.size()) * sizeof(engine::WriteOp));
  heap_.reserve_values(n);
}

absl::Status BulkLoad::add(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat(keys.size(), " keys but ", values.size(), " values"));
  }
  if (keys.empty()) return absl::OkStatus();
  if (writes_.size() + keys.size() > kMaxPairs) {
    return absl::InvalidArgumentError(absl::StrCat("a bulk load takes at most ", kMaxPairs, " pairs"));
  }
  const auto t0 = std::chrono::steady_clock::now();
  lengths_.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) lengths_[i] = static_cast<uint32_t>(values[i].size());
  // As a put of the whole run that brings the table to every pair so far
  // (an upper bound on the keys: a key may repeat), so the table the build
  // makes fits beside the values.
  if (absl::Status s = budget_.admit_put(writes_.size() + keys.size(), lengths_, &slots_, /*packed=*/true); !s.ok())
    return s;
  const auto t1 = std::chrono::steady_clock::now();
  slot_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  // Asynchronous where the heap can (the device's): finish() waits for it.
  if (absl::Status s = heap_.write_bulk(slots_, values); !s.ok()) {
    for (ValueHandle h : slots_) heap_.release(h);
    return absl::InternalError(absl::StrCat("value heap write failed: ", s.message()));
  }
  const auto t2 = std::chrono::steady_clock::now();
  write_seconds_ += std::chrono::duration<double>(t2 - t1).count();
  for (size_t i = 0; i < keys.size(); ++i) {
    writes_.push_back({keys[i], slots_[i], false});
    value_bytes_ += lengths_[i];
  }
  keep_seconds_ += seconds_since(t2);
  return absl::OkStatus();
}

absl::Status BulkLoad::finish() {
  writes_prefault_.stop();  // writes_ goes at the end
  if (writes_.empty()) return absl::OkStatus();
  // Every value in place before the table can find it.
  const auto tf = std::chrono::steady_clock::now();
  if (absl::Status s = heap_.flush_writes(); !s.ok()) {
    abandon();
    return absl::InternalError(absl::StrCat("value heap write failed: ", s.message()));
  }
  const double flush_seconds = seconds_since(tf);
  const auto t0 = std::chrono::steady_clock::now();
  // The table may take what the values left; admission kept room for it.
  budget_.fit_table_to_heap();
  engine::BuildStats stats;
  absl::Status s = table_.load(writes_, &stats);
  budget_.fit_heap_to_table();
  if (!s.ok()) {
    abandon();
    return s;
  }
  uint64_t repeats = 0;
  if (table_.size() != writes_.size()) {
    // A key came more than once: the table holds its last handle; free the others.
    std::vector<uint64_t> keys(writes_.size()), handles(writes_.size());
    std::vector<uint8_t> found(writes_.size());
    for (size_t i = 0; i < writes_.size(); ++i) keys[i] = writes_[i].key;
    if (s = table_.find(keys, absl::MakeSpan(handles), absl::MakeSpan(found)); !s.ok()) {
      writes_ = {};  // the table holds them now: not the load's to free
      return s;
    }
    for (size_t i = 0; i < writes_.size(); ++i) {
      if (found[i] && handles[i] == writes_[i].value) continue;
      heap_.release(writes_[i].value);
      ++repeats;
    }
    budget_.fit_table_to_heap();
    budget_.fit_heap_to_table();
  }
  spdlog::info(
      "recovery: {} snapshot pairs ({} value bytes) went to the value heap (slots {:.2f} s, {:.2f} s of it taking "
      "memory; bytes {:.2f} s, the last of them waited for {:.2f} s; keeping the handles {:.2f} s), then one bulk "
      "build of the table: {} keys in {} buckets (load factor {:.2f}), {:.2f} s{}",
      writes_.size(), value_bytes_, slot_seconds_, heap_.backing_seconds() - backing_seconds_at_begin_, write_seconds_,
      flush_seconds, keep_seconds_, table_.size(), table_.num_buckets(), table_.load_factor(), seconds_since(t0),
      repeats == 0 ? std::string() : absl::StrCat("; ", repeats, " repeated keys' earlier values freed"));
  writes_ = {};
  value_bytes_ = 0;
  slot_seconds_ = write_seconds_ = keep_seconds_ = 0;
  return absl::OkStatus();
}

void BulkLoad::abandon() {
  writes_prefault_.stop();
  // The heap's staging goes back; the values are being freed, so a write
  // that failed does not matter any more.
  (void)heap_.flush_writes();
  for (const engine::WriteOp& w : writes_) heap_.release(w.value);
  if (!writes_.empty()) budget_.fit_table_to_heap();
  writes_ = {};
  value_bytes_ = 0;
  slot_seconds_ = write_seconds_ = keep_seconds_ = 0;
}

}  // namespace gphkv::server
