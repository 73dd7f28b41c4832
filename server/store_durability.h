// The executor's side of the data directory (--data_dir; docs/durability.md):
// recovery into the store before serving, the group commit of each batch's
// writes (one log record, appended before any of them is answered), fuzzy
// snapshots fed between batches, and the final snapshot at shutdown. Every
// method but status() runs on the executor thread, which owns the store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/call.h"
#include "server/durability/data_dir.h"
#include "server/durability/snapshot_feed.h"
#include "server/durability/write_batch.h"
#include "server/snapshot_export.h"
#include "server/store.h"

namespace gphkv::server {

struct DataDirConfig {
  std::string dir;  // empty: the server keeps nothing on disk
  durability::DataDirOptions options;
};

// What Stats reports of the data directory.
struct DataDirStatus {
  durability::DataDirState state;
  // Why writes are refused: the log failed (empty while it works).
  std::string log_error;
  // Keys the store held once recovery was done.
  uint64_t recovered_keys = 0;
};

// A batch becomes one log record, which holds less than 4 GiB. A batch holds
// what was queued at once: at most max(--max_queue_bytes, the gRPC message
// limit) of values (one call larger than the queue bound is let into an
// empty queue) and --max_queue_keys keys, each up to --max_key_bytes long.
// INVALID_ARGUMENT, naming the flags, when that may not fit.
absl::Status check_log_record_bound(uint64_t max_queue_bytes, uint64_t max_message_bytes, uint64_t max_queue_keys,
                                    uint64_t max_key_bytes);

class StoreDurability {
 public:
  // Values a snapshot's export may hold ahead of the writer's thread: the
  // memory a snapshot takes beyond --memory, besides its list of keys.
  static constexpr uint64_t kFeedBytes = uint64_t{64} << 20;

  // Recovers config.dir into `store` (empty), then logs what the store
  // holds. `on_log_failed` runs once, on this thread, when the log fails.
  static absl::StatusOr<std::unique_ptr<StoreDurability>> open(const DataDirConfig& config, Store& store,
                                                               durability::DurabilityMetrics* metrics,
                                                               std::function<void(const absl::Status&)> on_log_failed);

  // A snapshot still being fed is abandoned (its writer would wait forever).
  ~StoreDurability();

  // OK while the log works; once it failed, the error every write gets.
  const absl::Status& log_error() const { return log_error_; }

  // A run that took effect: its OK calls join the batch's record.
  void add_puts(absl::Span<Call* const> run, const std::vector<absl::Status>& statuses);
  void add_deletes(absl::Span<Call* const> run, const std::vector<absl::Status>& statuses);
  // Keys the store evicted (Store::take_evictions), as deletes: before the
  // run that evicted them.
  void add_evictions(const Store::EvictedKeys& evicted);
  // Items touching gets rewrote (Store::take_touches), as puts of what they
  // hold now: recovery gives them their new expiry.
  void add_touches(const Store::TouchedItems& touched);
  // The store's flush_all marks (Store::take_flush_marks), after the writes
  // added before them.
  void add_flushes(const std::vector<durability::FlushMark>& marks);
  bool has_pending() const { return !batch_.empty(); }
  // Appends the record (if any write joined it) and returns once it is as
  // durable as --fsync promises; the log's error otherwise (it is broken
  // for good then: log_error()).
  absl::Status commit();

  // A snapshot is due, or its export under way: snapshot_step has work.
  bool snapshot_wanted(const Store& store) const;
  // Between batches: starts a snapshot when one is due (not while a table
  // rebuild runs: the key list waits for it), and exports the next chunk of
  // the one in progress when its writer has room. True when it exported one.
  bool snapshot_step(Store& store);
  // A snapshot's keys are still being exported.
  bool exporting() const { return export_.has_value(); }

  // After the last batch: the snapshot in progress gets the rest of its
  // chunks; then, unless nothing was appended since the newest snapshot
  // (or the log failed), a final snapshot is taken here, so the next start
  // replays no log.
  void close(Store& store);

  // Any thread.
  DataDirStatus status() const;

 private:
  StoreDurability(std::unique_ptr<durability::DataDir> dir, uint64_t recovered_keys,
                  std::function<void(const absl::Status&)> on_log_failed)
      : dir_(std::move(dir)), recovered_keys_(recovered_keys), on_log_failed_(std::move(on_log_failed)) {}

  // A call's byte keys as views (scratch reused).
  const std::vector<std::string_view>& key_views(const ByteKeys& keys);
  // A byte-key put's item fields, one per key (scratch reused).
  absl::Span<const byte_key::ItemMeta> item_metas(const PutOp& put);
  void start_snapshot(Store& store);
  // After a snapshot's sequence: the store's flush marks not logged yet and
  // the flushes in effect, appended at once. A snapshot may hold items a
  // flush hid (the sweep had not deleted them) and drops the records before
  // it, a pending delayed flush's among them; the record after it restates
  // both for recovery.
  absl::Status restate_flushes(Store& store);
  // One chunk of the export in progress; false when the writer had no room.
  bool export_chunk(Store& store);
  // The export is done: syncs the log, then lets the writer finish.
  void finish_export();
  void drop_export();
  // Records the log's first failure.
  void fail_log(const absl::Status& s);

  std::unique_ptr<durability::DataDir> dir_;
  const uint64_t recovered_keys_;
  std::function<void(const absl::Status&)> on_log_failed_;
  durability::WriteBatch batch_;
  std::vector<std::string_view> key_views_;
  std::vector<byte_key::ItemMeta> metas_;
  absl::Status log_error_;
  mutable std::mutex mu_;
  std::string published_log_error_;  // log_error_ for status(), under mu_

  std::optional<StoreExport> export_;
  // The last export's key list, kept for the next: its pages are mapped
  // already, so listing the keys (the snapshot's one stall) faults none in.
  std::vector<uint64_t> key_buffer_;
  std::shared_ptr<durability::SnapshotFeed> feed_;
};

}  // namespace gphkv::server
