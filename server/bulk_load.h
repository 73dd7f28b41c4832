// Recovery's fast path into an empty store (docs/durability.md, "Recovery,
// before the server listens"): a snapshot's pairs are loaded with one bulk
// build of the table instead of going through the insert path block by
// block, which grows the table by rebuilds on the way.
//
// Each block of pairs the snapshot reader hands over goes straight to the
// value heap (one allocate_packed_slots and one write_bulk for the whole
// block: on the device, asynchronous, waited for before the build), admitted
// under --memory as a put that brings the table to every pair so far, with
// the same RESOURCE_EXHAUSTED as any put. Only (key, handle) is kept. Once the
// snapshot is in, finish() builds the table from them in one step
// (engine::ElasticTable::load), sized for them: no insert, no rebuild. A key
// that occurs more than once (a snapshot may repeat one: the last occurrence
// wins) is built with its last handle; the others' slots are freed then.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "server/memory_budget.h"
#include "server/prefault.h"
#include "server/value_heap.h"

namespace gphkv::server {

class BulkLoad {
 public:
  // What one bulk build takes (engine::bulk_build: under 2^31 writes); a
  // larger snapshot takes the ordinary path.
  static constexpr uint64_t kMaxPairs = (uint64_t{1} << 31) - 1;

  // The table must be empty, and the heap hold no value, for the whole load;
  // all three must outlive it.
  BulkLoad(engine::ElasticTable& table, ValueHeap& heap, MemoryBudget& budget)
      : table_(table), heap_(heap), budget_(budget) {}
  // An unfinished load gives its value slots back.
  ~BulkLoad() { abandon(); }
  BulkLoad(const BulkLoad&) = delete;
  BulkLoad& operator=(const BulkLoad&) = delete;

  // Room for this many pairs (the snapshot header's count, a hint).
  void reserve(uint64_t pairs);
  // Stores values[i] for keys[i] in the heap and keeps its handle for the
  // build. RESOURCE_EXHAUSTED past --memory, with nothing taken for this run.
  absl::Status add(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  // Builds the table from every pair added (then the load is empty again).
  // On an error every slot taken is freed and the table stays empty.
  absl::Status finish();
  // Frees every slot taken so far; the table stays empty.
  void abandon();

  uint64_t pairs() const { return writes_.size(); }

 private:
  engine::ElasticTable& table_;
  ValueHeap& heap_;
  MemoryBudget& budget_;
  // One put per pair, in the snapshot's order: the key and its value's handle.
  std::vector<engine::WriteOp> writes_;
  // Fills in writes_' pages ahead of add() (server/prefault.h); declared
  // after writes_, so it stops before the array goes.
  Prefault writes_prefault_;
  uint64_t value_bytes_ = 0;
  // In add(), for the log line: taking the slots, writing (or staging) the
  // bytes, keeping the pairs for the build.
  double slot_seconds_ = 0, write_seconds_ = 0, keep_seconds_ = 0;
  // The heap's backing_seconds() at reserve(): what the load added to it.
  double backing_seconds_at_begin_ = 0;
  // Scratch of add().
  std::vector<uint32_t> lengths_;
  std::vector<ValueHandle> slots_;
};

}  // namespace gphkv::server
