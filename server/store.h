// The store: the GPH table plus the value heap, and the rules that tie them
// together: every key's slot holds a value handle, the --memory cap covers
// both, and the table grows (a rebuild into a bigger table) instead of ever
// dropping a write. Applies whole runs of same-kind calls as engine batches.
// Owned and called by the executor thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/table.h"
#include "server/call.h"
#include "server/value_heap.h"

namespace gphkv::server {

struct StoreOptions {
  engine::Backend backend = engine::Backend::kCpu;
  int device = 0;
  // The cap on table bytes + value heap bytes.
  uint64_t memory_limit_bytes = uint64_t{1} << 30;
  // Keys the first table is sized for (at max_load_factor).
  uint64_t initial_capacity = 1 << 20;
  uint32_t max_value_bytes = 1 << 20;
  // A Get whose values would exceed this is refused (RESOURCE_EXHAUSTED)
  // instead of building a response gRPC would refuse to send.
  uint64_t max_response_bytes = uint64_t{256} << 20;
  // The table grows before a put would take it past this load factor. The
  // CPU backend reaches ~0.85 with the default M, R and cells (docs/gph.md),
  // so 0.80 leaves room for Extended Move to succeed.
  double max_load_factor = 0.80;
  engine::TableOptions table{};
};

// Counters the store keeps for Stats and metrics.
struct StoreCounters {
  uint64_t rebuilds = 0;          // all causes
  uint64_t rebuilds_no_room = 0;  // of them: an insert found no room below the load-factor limit
  uint64_t rebuild_keys = 0;
};

class Store {
 public:
  static absl::StatusOr<std::unique_ptr<Store>> create(const StoreOptions& options);

  // Each applies a run of calls of one kind, in order, as one engine launch
  // (two for puts and deletes: a find for the old handles, then the write).
  // statuses[i] is the outcome of calls[i]; an OK call's response is filled,
  // a refused call changed nothing. The returned status is an engine failure
  // that refused every call of the run.
  void apply_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  void apply_puts(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  void apply_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);

  uint64_t keys() const { return table_->size(); }
  double load_factor() const { return table_->load_factor(); }
  uint64_t table_bytes() const;
  uint64_t value_heap_bytes() const { return heap_->reserved_bytes(); }
  uint64_t memory_limit_bytes() const { return options_.memory_limit_bytes; }
  const StoreCounters& counters() const { return counters_; }
  const engine::Table& table() const { return *table_; }

 private:
  Store(const StoreOptions& options, std::unique_ptr<engine::Table> table,
        std::unique_ptr<ValueHeap> heap);

  // Bytes a table of `buckets` buckets takes: slots (key + handle) and cells.
  uint64_t bytes_for_buckets(uint64_t buckets) const;
  // The bucket count a grown table gets so that it holds `keys` keys within
  // max_load_factor: at least double the current one.
  uint64_t grown_buckets(uint64_t keys) const;
  // Rebuilds into a table of at least `buckets` buckets holding every pair.
  absl::Status grow(uint64_t buckets, const char* cause);

  StoreOptions options_;
  std::unique_ptr<engine::Table> table_;
  std::unique_ptr<ValueHeap> heap_;
  StoreCounters counters_;
  // Scratch buffers reused across batches.
  std::vector<uint64_t> keys_, values_;
  std::vector<uint8_t> flags_;
  std::vector<engine::UpsertOutcome> outcomes_;
};

}  // namespace gphkv::server
