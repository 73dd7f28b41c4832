// The store: the GPH table (an engine::ElasticTable) plus the value heap,
// and the rules that tie them together: every key's slot holds a value
// handle, the --memory cap covers both (the table's cap is whatever the value
// heap leaves), and the table grows by background rebuilds (lookups and
// writes keep being served from the old table plus an overlay while one
// runs) instead of ever dropping a write. Applies whole runs of same-kind
// calls as engine batches. Owned and called by the executor thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "gphkv/engine/table.h"
#include "server/call.h"
#include "server/get_answers.h"
#include "server/get_stages.h"
#include "server/value_heap.h"

namespace gphkv::server {

class DeviceGets;

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
  // A background rebuild grows the table once a put takes it past this load
  // factor (engine::ElasticOptions::max_load_factor, at most 0.95). The CPU
  // backend reaches ~0.85 with the default M, R and cells (docs/gph.md), so
  // 0.80 leaves room for Extended Move to succeed.
  double max_load_factor = 0.80;
  // A grown table is sized so its keys fill it to this (used up to
  // 0.625 x max_load_factor, so 0.5 at the default).
  double rebuild_load_factor = 0.50;
  engine::TableOptions table{};
  // CUDA backend: values in device memory (DeviceValueHeap) instead of host
  // memory. Off only to measure the host heap's path against it.
  bool device_value_heap = true;
  // CUDA backend with the device heap: get batches in flight at once, each
  // on its own stream (0: the synchronous path for every get).
  int gpu_pipeline_depth = 2;
  // Time each pipelined get batch's device stages with CUDA events.
  bool time_get_stages = false;
};

// Counters the store keeps for Stats and metrics.
struct StoreCounters {
  uint64_t rebuilds = 0;  // all causes
  // By engine::RebuildEvent::cause: load_factor, no_room, burst, shrink.
  std::map<std::string, uint64_t> rebuilds_by_cause;
  uint64_t rebuild_keys = 0;            // keys in the new tables, summed
  uint64_t rebuild_writes_during = 0;   // writes served by the overlay while rebuilds ran
  double rebuild_seconds = 0;           // snapshot to swap, summed
  uint64_t relocations = 0;             // Extended Moves by the insert path (CUDA tables count them)
  uint64_t sync_get_runs = 0;           // get runs that took the synchronous path
  uint64_t pipelined_get_runs = 0;      // get runs that took the CUDA pipeline
  uint64_t late_get_downloads = 0;      // pipelined runs whose values outgrew the download sent with them
};

class Store {
 public:
  static absl::StatusOr<std::unique_ptr<Store>> create(const StoreOptions& options);
  ~Store();

  // Each applies a run of calls of one kind, in order, as one engine launch
  // (two for puts and deletes: a find for the old handles, then the write).
  // statuses[i] is the outcome of calls[i]; an OK call's response is filled,
  // a refused call changed nothing. The returned status is an engine failure
  // that refused every call of the run.
  void apply_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  void apply_puts(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  void apply_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);
  // An operator's shrink request (every call of the run gets the same
  // answer): starts a background rebuild into a table sized for the keys
  // stored now, unless the table already is. FAILED_PRECONDITION while
  // another rebuild runs, since waiting for it would stall every call behind.
  void apply_shrinks(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses);

  // The pipelined CUDA get path (server/cuda/device_gets.h). Usable while
  // the store has it (CUDA backend, device value heap, depth > 0) and no
  // rebuild runs: the rebuild overlay is on the host, so apply_gets serves
  // gets then. The caller (the executor) finishes every batch in flight
  // before any apply_* call, so no write overtakes a submitted read.
  bool can_pipeline_gets() const;
  int pipeline_depth() const;
  size_t gets_in_flight() const;
  // Enqueues a run of gets (gets_in_flight() < pipeline_depth()). On error
  // nothing is in flight for the run and its calls are the caller's.
  absl::Status submit_gets(absl::Span<Call* const> calls);
  // Waits for the oldest run in flight and returns its answers, to be
  // filled into the responses on any thread (server/get_answers.h). Writes
  // may be applied meanwhile: the run read the table and heap already.
  std::shared_ptr<GetAnswers> finish_gets(GetStageTimes* times);

  // "device" (CUDA slabs) or "host".
  const char* value_heap_kind() const { return device_heap_ ? "device" : "host"; }

  uint64_t keys() const { return table_->size(); }
  // Of the table serving now (the old one while a rebuild runs).
  double load_factor() const { return table_->load_factor(); }
  // The serving table plus, while a rebuild runs, the one being built.
  uint64_t table_bytes() const { return table_->table_bytes(); }
  uint64_t value_heap_bytes() const { return heap_->reserved_bytes(); }
  uint64_t memory_limit_bytes() const { return options_.memory_limit_bytes; }
  const StoreCounters& counters() const { return counters_; }
  const engine::ElasticTable& table() const { return *table_; }
  // A background rebuild is in flight (reads see its overlay).
  bool rebuilding() const { return table_->rebuilding(); }
  // Waits for a rebuild in flight and swaps it in (tests, shutdown).
  absl::Status finish_rebuild();

 private:
  Store(const StoreOptions& options, std::unique_ptr<engine::ElasticTable> table,
        std::unique_ptr<ValueHeap> heap, std::unique_ptr<DeviceGets> gets);
  // Adds the serving table's new relocations to the counters.
  void count_relocations();

  void on_rebuild(const engine::RebuildEvent& e);
  // Gives the table whatever --memory the value heap leaves.
  void update_table_cap();

  StoreOptions options_;
  std::unique_ptr<engine::ElasticTable> table_;
  std::unique_ptr<ValueHeap> heap_;
  std::unique_ptr<DeviceGets> gets_;  // null without the CUDA pipeline
  bool device_heap_ = false;
  StoreCounters counters_;
  const engine::Table* relocations_table_ = nullptr;  // the table relocations_seen_ is of
  uint64_t relocations_seen_ = 0;
  // Scratch buffers reused across batches.
  std::vector<uint64_t> keys_, values_;
  std::vector<uint8_t> flags_;
  std::vector<engine::UpsertOutcome> outcomes_;
};

}  // namespace gphkv::server
