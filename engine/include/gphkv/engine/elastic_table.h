// A GPH table that grows, shrinks on request, and takes write bursts by
// either of GPH's two write paths, while it keeps answering lookups.
//
// The executor that owns the device owns one ElasticTable. Unlike Table, an
// insert here never ends in kNoRoom: the table rebuilds into a larger one
// (HashGraph-style bulk build) instead, and a batch is refused as a whole,
// with RESOURCE_EXHAUSTED and no change, only when the memory cap cannot hold
// it. Rebuilds run in the background: until the new table is swapped in
// (between two calls), lookups are answered from the current table plus the
// writes that arrived since the rebuild's snapshot, so every acknowledged
// write is visible and nothing is lost or read twice.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine {

// The CPU never rebuilds for a burst: its insert path absorbed even a 60%
// burst 3.5x faster than a rebuild (bench/results/cpu_table_bench_16core.json).
inline constexpr double kCpuRebuildBurstFraction = 0;
// The CUDA backend never does either: on the H100 the insert kernel absorbed
// bursts of 0.1%, 1%, 10% and 100% of a 10^8-key table (sized so the burst
// brings it to load 0.80) in 0.16, 0.53, 5.5 and 49 ms, the device rebuild in
// 34, 37, 48 and 111 ms: no crossover up to 100% (engine_bench
// --sections=burst, bench/results/engine_bench_build_h100_da7a0063e549.json;
// docs/gph.md, "Bulk build"). A burst that does not fit still goes to a
// rebuild through the max_load_factor rule.
inline constexpr double kCudaRebuildBurstFraction = 0;

struct ElasticOptions {
  Backend backend = Backend::kCpu;
  int device = 0;
  // The shape of every table (M, R, cells per bucket, seed); num_buckets is the
  // initial size, and the floor that shrinking stops at.
  TableOptions shape;
  // After a write leaves the table fuller than this, a background rebuild
  // grows it. Below the incremental path's reachable 0.85 (docs/gph.md), so
  // inserts rarely meet a full cell before the new table is in.
  double max_load_factor = 0.80;
  // A grown or shrunk table is sized so its keys fill it to this load factor.
  double rebuild_load_factor = 0.50;
  // A write batch with at least this many keys per key stored goes through a
  // rebuild instead of the insert path; 0 never; negative (the default): the
  // backend's measured default, kCpuRebuildBurstFraction or
  // kCudaRebuildBurstFraction below.
  double rebuild_burst_fraction = -1;
  // Cap on the bytes of tables (cells and buckets), both tables counted while
  // a rebuild runs; 0 = no cap.
  uint64_t max_table_bytes = 0;
};

// One rebuild, as logged and counted.
struct RebuildEvent {
  std::string cause;  // "load_factor", "no_room", "burst", "shrink"
  uint64_t keys = 0;  // keys in the new table
  uint64_t old_buckets = 0;
  uint64_t new_buckets = 0;
  uint64_t writes_during = 0;  // writes that arrived while it was built
  double seconds = 0;          // from snapshot to swap
  BuildStats build;
};

class ElasticTable {
 public:
  static absl::StatusOr<std::unique_ptr<ElasticTable>> create(const ElasticOptions& options);
  ~ElasticTable();
  ElasticTable(const ElasticTable&) = delete;
  ElasticTable& operator=(const ElasticTable&) = delete;

  // As Table::find: one probe of the current table per key, and the writes a
  // rebuild in flight has not taken in yet.
  absl::Status find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values, absl::Span<uint8_t> found);
  // Inserts or overwrites (outcomes are kInserted or kAssigned, last write of
  // a repeated key wins). RESOURCE_EXHAUSTED, with nothing changed, when the
  // batch could leave more keys than the largest table under the cap holds.
  absl::Status insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                absl::Span<UpsertOutcome> outcomes);
  // As Table::erase.
  absl::Status erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased);

  // Fills an empty table (no rebuild in flight) with one bulk build of
  // `writes`, applied in order (a key written more than once: the last write
  // wins; an erase removes it), in the foreground, into a table sized for
  // them as a grown table is (rebuild_load_factor, not below the initial
  // size; the largest table under the cap where that one is not). For an
  // owner restoring a saved state in one step (the server's recovery from a
  // snapshot) instead of growing through inserts and rebuilds. Not a
  // rebuild: rebuilds() and the listener are untouched. RESOURCE_EXHAUSTED,
  // with nothing changed, when the writes could leave more keys than
  // key_limit(); FAILED_PRECONDITION when the table holds keys.
  absl::Status load(absl::Span<const WriteOp> writes, BuildStats* stats = nullptr);

  // Rebuilds into a table sized for the keys now stored (not below the
  // initial size), in the background like any rebuild.
  absl::Status shrink_to_fit();
  // Waits for a rebuild in flight and swaps it in.
  absl::Status finish_rebuild();
  bool rebuilding() const { return build_.valid(); }
  // The table serving now (the old one while a rebuild runs; it misses the
  // overlay then). For owners that drive a backend's own API directly, e.g.
  // the server's stream-ordered CUDA gets, which use it only while
  // rebuilding() is false. Valid until the next call that may swap a rebuild
  // in (find, insert_or_assign, erase, finish_rebuild, shrink_to_fit).
  Table& serving_table() { return *table_; }
  const Table& serving_table() const { return *table_; }

  uint64_t size() const { return size_; }
  // Of the table serving now.
  double load_factor() const { return table_->load_factor(); }
  uint64_t num_buckets() const { return table_->geometry().num_buckets; }
  // Bytes of the serving table, plus the one being built.
  uint64_t table_bytes() const;
  Backend backend() const { return options_.backend; }
  uint64_t rebuilds() const { return rebuilds_; }
  // The burst threshold in force (the backend's default when the options left it negative).
  double rebuild_burst_fraction() const { return options_.rebuild_burst_fraction; }

  // Called on the owner's thread after every swap.
  void on_rebuild(std::function<void(const RebuildEvent&)> listener) { listener_ = std::move(listener); }

  // Bytes of a table of `num_buckets` buckets of this shape.
  uint64_t bytes_for(uint64_t num_buckets) const;

  // The cap on table bytes (ElasticOptions::max_table_bytes; 0 = none). An
  // owner that shares its memory budget with other data (the server's value
  // heap) moves it as that data grows or shrinks; lowering it below
  // table_bytes() takes nothing back, it only limits what comes next.
  void set_max_table_bytes(uint64_t bytes) { options_.max_table_bytes = bytes; }
  uint64_t max_table_bytes() const { return options_.max_table_bytes; }
  // The most keys a batch may leave stored under the cap (at
  // max_load_factor, in the largest table under it); beyond it a batch is
  // refused with RESOURCE_EXHAUSTED.
  uint64_t key_limit() const { return key_limit_under(options_.max_table_bytes); }
  uint64_t key_limit_under(uint64_t max_table_bytes) const;
  // A cap under which `keys` keys are within key_limit() (the smallest, to
  // within one bucket's bytes): what an owner must leave the table for a
  // batch that brings the total to `keys`. UINT64_MAX when no cap is enough.
  uint64_t bytes_to_hold(uint64_t keys) const;

 private:
  explicit ElasticTable(const ElasticOptions& options) : options_(options) {}

  // A write the current table has not seen: the last one per key.
  struct Pending {
    uint64_t value;
    bool erase;
    bool in_build = false;  // part of the burst the rebuild in flight takes in
  };

  absl::Status poll_rebuild();  // swaps a finished rebuild in
  absl::Status swap_in(std::unique_ptr<Table> built);
  // Starts a background rebuild from the current table's pairs plus `burst`.
  absl::Status start_rebuild(const std::string& cause, std::vector<WriteOp> burst);
  uint64_t buckets_for_keys(uint64_t keys) const;
  // The largest table under the cap, alone.
  uint64_t max_buckets() const { return max_buckets_under(options_.max_table_bytes); }
  uint64_t max_buckets_under(uint64_t max_table_bytes) const;
  // Applies a batch of writes to the overlay of a rebuild in flight.
  absl::Status write_pending(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values, bool erase,
                             absl::Span<UpsertOutcome> outcomes, absl::Span<uint8_t> erased);

  ElasticOptions options_;
  std::unique_ptr<Table> table_;
  uint64_t size_ = 0;  // keys stored, counting the overlay
  uint64_t rebuilds_ = 0;
  std::function<void(const RebuildEvent&)> listener_;

  // The rebuild in flight: its result, the overlay of writes since its
  // snapshot, and what will be logged when it lands.
  std::future<absl::StatusOr<std::unique_ptr<Table>>> build_;
  absl::flat_hash_map<uint64_t, Pending> pending_;
  RebuildEvent event_;
  std::unique_ptr<BuildStats> build_stats_;
  uint64_t building_buckets_ = 0;
  double build_started_ = 0;
};

}  // namespace gphkv::engine
