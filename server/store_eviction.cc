// Eviction at the --memory cap (issue 27, --eviction=lru): CLOCK over the
// table's slots. Each stored value has an access bit (ValueHeap's), set when
// it is written and when a get reads it; on the CUDA backend the get
// pipeline's kernels set it where they read the value, so the lookups
// themselves keep the clock. When a put call does not fit, its plan asks
// the store to evict (server/evictor.h): the hand walks the table keys
// listed when its pass began, a step of kClockStepKeys slots at a time; an
// item whose bit is set gets a second chance (the bit is cleared), one
// whose bit is clear is evicted, until enough came back. So no item read or
// written since the hand last passed it is taken.
//
// The hand passes over the slots of the put's own keys (their old values
// are the plan's to free) and over keys that lost their slot to a
// collision (CollidedKeys: about one in 2^64 / n), which are never evicted.
// With a data directory (StoreOptions::record_evictions) the victims' keys are
// kept for the log, which records them as deletes before the run that evicted
// them; no key of that run is ever a victim.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "server/byte_key.h"
#include "server/extent_value_heap.h"
#include "server/store.h"
#include "server/value_handle.h"

namespace gphkv::server {

absl::StatusOr<uint64_t> Store::evict(uint64_t bytes, const absl::flat_hash_set<uint64_t>& held) {
  // Admission asks for this mid-run: its time so far is admission's, this call's the eviction's.
  put_lap(kPutAdmit);
  struct EvictLap {
    Store* store;
    ~EvictLap() { store->put_lap(kPutEvict); }
  } lap{this};
  const uint64_t goal = std::max(bytes, budget_.limit_bytes() / kEvictionSlackDivisor);
  uint64_t freed = 0, evicted = 0;
  // At most one whole revolution and a bit from wherever the hand stands:
  // the first may only clear bits, the second then finds them clear.
  int listings = 0;
  while (freed < goal) {
    if (clock_next_ >= clock_keys_.size()) {
      if (listings == 2) break;
      ++listings;
      // The slots are listed from the serving table, which misses a
      // rebuild's overlay: the rebuild is finished first.
      if (table_->rebuilding()) {
        if (absl::Status s = finish_rebuild(); !s.ok()) return s;
      }
      if (absl::Status s = table_->serving_table().export_keys(&clock_keys_); !s.ok()) return s;
      if (absl::Status s = order_by_place(&clock_keys_); !s.ok()) return s;
      clock_next_ = 0;
      if (clock_keys_.empty()) break;
    }
    if (absl::Status s = clock_step(goal, held, &freed, &evicted); !s.ok()) return s;
  }
  return evicted;
}

absl::Status Store::clock_step(uint64_t goal, const absl::flat_hash_set<uint64_t>& held, uint64_t* freed,
                               uint64_t* evicted) {
  const size_t n = std::min(kClockStepKeys, clock_keys_.size() - clock_next_);
  const absl::Span<const uint64_t> slots = absl::MakeConstSpan(clock_keys_).subspan(clock_next_, n);
  std::vector<uint64_t> handles(n);
  std::vector<uint8_t> found(n);
  if (absl::Status s = table_->find(slots, absl::MakeSpan(handles), absl::MakeSpan(found)); !s.ok()) return s;
  std::vector<uint64_t> places;  // for on_clock_step, read before any victim is freed
  if (options_.on_clock_step) {
    places.resize(n);
    for (size_t i = 0; i < n; ++i) places[i] = found[i] ? heap_->place(handles[i]) : 0;
  }
  std::vector<ValueHandle> candidates;
  std::vector<size_t> candidate_at;
  for (size_t i = 0; i < n; ++i) {
    if (found[i] && !held.contains(slots[i]) && !in_put_run(slots[i])) {
      candidates.push_back(handles[i]);
      candidate_at.push_back(i);
    }
  }
  std::vector<uint8_t> bits;
  if (absl::Status s = heap_->read_accessed(candidates, &bits); !s.ok()) return s;
  // The hand stops at the item that makes the goal: the bits of those past
  // it stay as they are, for its next pass.
  std::vector<ClockVerdict> verdicts(n, ClockVerdict::kPassedOver);
  std::vector<ValueHandle> second_chances, victim_handles;
  std::vector<uint64_t> victims;
  size_t passed = n;
  for (size_t j = 0; j < candidates.size(); ++j) {
    const size_t i = candidate_at[j];
    if (bits[j]) {
      second_chances.push_back(candidates[j]);
      verdicts[i] = ClockVerdict::kSecondChance;
      continue;
    }
    victims.push_back(slots[i]);
    victim_handles.push_back(candidates[j]);
    verdicts[i] = ClockVerdict::kEvicted;
    *freed += ExtentValueHeap::extent_bytes(value_handle::length(candidates[j]));
    if (*freed >= goal) {
      passed = i + 1;
      break;
    }
  }
  clock_next_ += passed;
  if (absl::Status s = heap_->clear_accessed(second_chances); !s.ok()) return s;
  // A byte key's bytes are in its record: read before the record is freed.
  std::vector<std::string> victim_keys;
  if (options_.record_evictions) {
    if (absl::Status s = read_record_keys(victim_handles, &victim_keys); !s.ok()) return s;
  }
  std::vector<uint8_t> erased(victims.size());
  if (absl::Status s = table_->erase(victims, absl::MakeSpan(erased)); !s.ok()) return s;
  for (size_t v = 0; v < victims.size(); ++v) {
    if (!erased[v]) continue;  // found a moment ago, on the owner thread: cannot happen
    if (value_handle::is_record(victim_handles[v])) --table_records_;
    heap_->release(victim_handles[v]);
    if (options_.record_evictions) {
      if (value_handle::is_record(victim_handles[v])) {
        evicted_.byte_keys.push_back(std::move(victim_keys[v]));
      } else {
        evicted_.ids.push_back(victims[v]);
      }
    }
    ++*evicted;
    // Counted as each goes: a later step's failure must not hide these.
    ++counters_.evictions;
  }
  if (options_.on_clock_step) {
    verdicts.resize(passed);
    places.resize(passed);
    options_.on_clock_step(
        ClockStep{std::vector<uint64_t>(slots.begin(), slots.begin() + passed), verdicts, std::move(places)});
  }
  return absl::OkStatus();
}

// The hand walks the items by where their values lie, from the heap's last
// chunk's end toward its start, so the items it evicts lie side by side:
// their extents merge into holes that new values fit, and a compaction that
// slides a chunk moves only the few items kept in the part the hand passed.
// Walked in the table's slot order, the victims lay scattered over every
// chunk, no hole they left held the next value, and nearly every put at the
// cap compacted (docs/performance.md, "Where the cap's time goes"). The order
// is the revolution's start; values that move meanwhile keep their turn.
absl::Status Store::order_by_place(std::vector<uint64_t>* table_keys) {
  // In pieces: one find of a whole large table would take device scratch
  // beside a cache that is at its cap.
  constexpr size_t kPiece = size_t{1} << 20;
  const size_t n = table_keys->size();
  std::vector<std::pair<uint64_t, uint64_t>> by_place;  // (place, table key)
  by_place.reserve(n);
  std::vector<uint64_t> handles;
  std::vector<uint8_t> found;
  for (size_t at = 0; at < n; at += kPiece) {
    const absl::Span<const uint64_t> piece = absl::MakeConstSpan(*table_keys).subspan(at, kPiece);
    handles.resize(piece.size());
    found.resize(piece.size());
    if (absl::Status s = table_->find(piece, absl::MakeSpan(handles), absl::MakeSpan(found)); !s.ok()) return s;
    for (size_t i = 0; i < piece.size(); ++i) {
      if (found[i]) by_place.emplace_back(heap_->place(handles[i]), piece[i]);
    }
  }
  std::stable_sort(by_place.begin(), by_place.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  table_keys->clear();
  for (const auto& [place, key] : by_place) table_keys->push_back(key);
  return absl::OkStatus();
}

bool Store::in_put_run(uint64_t table_key) {
  if (put_run_.empty()) return false;
  if (!put_run_keys_made_) {
    put_run_keys_.clear();
    for (const Call* c : put_run_) put_run_keys_.insert(c->keys().begin(), c->keys().end());
    put_run_keys_made_ = true;
  }
  return put_run_keys_.contains(table_key);
}

absl::Status Store::read_record_keys(absl::Span<const ValueHandle> handles, std::vector<std::string>* keys) {
  keys->assign(handles.size(), std::string());
  std::vector<ValueHandle> records;
  for (ValueHandle h : handles) {
    if (value_handle::is_record(h)) records.push_back(h);
  }
  if (records.empty()) return absl::OkStatus();
  std::string bytes;
  if (absl::Status s = heap_->gather(records, &bytes); !s.ok()) return s;
  size_t off = 0;
  for (size_t v = 0; v < handles.size(); ++v) {
    if (!value_handle::is_record(handles[v])) continue;
    const uint32_t n = heap_->length(handles[v]);
    const std::optional<byte_key::Record> r = byte_key::parse_record(std::string_view(bytes).substr(off, n));
    if (!r) return absl::InternalError("eviction: a stored record does not parse; nothing was evicted in this step");
    (*keys)[v] = std::string(r->key);
    off += n;
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server
