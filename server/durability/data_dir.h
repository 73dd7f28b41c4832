// The data directory (--data_dir) as the server uses it. open() takes the
// directory's lock, recovers -- the newest snapshot that loads whole, then
// the log after it -- into a RecoverySink, and returns a DataDir that
// appends new write batches to the log and takes snapshots on request; the
// log segments and older snapshots a new snapshot covers are removed once
// it is durable. docs/durability.md is the operator's account.
//
// Threads: append(), sync(), snapshot_due() and start_snapshot() are the
// owner's (the executor's); the snapshot is written on a thread of its own;
// state() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/durability/dir_lock.h"
#include "server/durability/durability_options.h"
#include "server/durability/log_writer.h"
#include "server/durability/pairs.h"
#include "server/durability/snapshot_writer.h"
#include "server/durability/write_batch.h"

namespace gphkv::server::durability {

// What open() found and did.
struct RecoveryReport {
  std::string snapshot_path;  // empty: none loaded
  uint64_t snapshot_sequence = 0;
  uint64_t snapshot_pairs = 0;
  uint64_t log_batches = 0;  // replayed after the snapshot
  uint64_t log_puts = 0;
  uint64_t log_deletes = 0;
  uint64_t last_sequence = 0;  // the state recovered is the one after this batch
  uint64_t bytes_read = 0;
  uint64_t torn_bytes_cut = 0;
  // Snapshots that failed to load (the newer ones, when an older one loaded
  // with a complete log after it), and what --recover=skip-corrupt dropped.
  std::vector<std::string> warnings;
  std::vector<std::string> dropped;
  double seconds = 0;
  // Something was dropped: snapshot_due() is true until a snapshot is taken,
  // so the next start does not meet the same damage.
  bool needs_snapshot() const { return !dropped.empty(); }
};

// For Stats and the metrics.
struct DataDirState {
  std::string dir;
  FsyncPolicy fsync = FsyncPolicy::kEverySec;
  LogWriterState log;
  uint64_t snapshot_sequence = 0;  // of the newest durable snapshot; 0 none
  uint64_t snapshot_bytes = 0;
  double snapshot_age_seconds = -1;  // since it was started; -1 none
  double last_snapshot_seconds = 0;  // how long the last one this process took ran
  uint64_t snapshots_taken = 0;      // by this process
  bool snapshot_running = false;
  std::string last_snapshot_error;  // empty once one succeeds
  RecoveryReport recovery;
};

class DataDir {
 public:
  // Creates `dir` if need be. Errors: FAILED_PRECONDITION when another
  // server holds it; DATA_LOSS (file and offset named) for damage that
  // options.recover = kStrict will not start past; I/O errors; the sink's.
  static absl::StatusOr<std::unique_ptr<DataDir>> open(const std::string& dir, const DataDirOptions& options,
                                                       RecoverySink& sink, DurabilityMetrics* metrics = nullptr);
  // Waits for a snapshot being written (its source must end: a SnapshotFeed
  // must be finished or failed first), syncs the log, releases the lock.
  ~DataDir();

  const RecoveryReport& recovery() const { return recovery_; }
  const std::string& dir() const { return dir_; }

  // LogWriter::append: the batch's sequence number once it is as durable as
  // the fsync policy promises.
  absl::StatusOr<uint64_t> append(WriteBatch& batch) { return log_->append(batch); }
  absl::Status sync() { return log_->sync(); }

  // None is running, and either recovery dropped something and no snapshot
  // was taken since, or a batch was appended since the newest snapshot and
  // the snapshot interval passed or the log outgrew snapshot_log_bytes.
  bool snapshot_due() const;
  // Owner's thread, between batches: starts a snapshot of the state after
  // the last batch appended, written on a background thread from `source`
  // (which may be fuzzy: snapshot_writer.h). Returns that batch's sequence
  // number. FAILED_PRECONDITION while another snapshot runs.
  absl::StatusOr<uint64_t> start_snapshot(std::shared_ptr<PairSource> source);
  bool snapshot_running() const;
  // Waits for the snapshot started last; its outcome (OK if none).
  absl::Status wait_snapshot();
  // The same on the caller's thread, start to finish (shutdown, tests).
  absl::Status snapshot(PairSource& source);

  DataDirState state() const;

 private:
  DataDir(std::string dir, const DataDirOptions& options, DurabilityMetrics* metrics, DirLock lock);
  // Recovery, then the log writer.
  absl::Status recover(RecoverySink& sink);
  // Rotates the log; the sequence the snapshot covers.
  absl::StatusOr<uint64_t> begin_snapshot();
  // After the write: on success removes what the snapshot covers.
  absl::Status end_snapshot(const absl::StatusOr<SnapshotInfo>& written);

  const std::string dir_;
  const DataDirOptions options_;
  DurabilityMetrics* const metrics_;
  DirLock lock_;
  RecoveryReport recovery_;
  std::unique_ptr<LogWriter> log_;
  const std::chrono::system_clock::time_point opened_;

  mutable std::mutex mu_;
  bool running_ = false;
  std::thread snapshot_thread_;
  absl::Status last_result_;
  uint64_t snapshot_sequence_ = 0;
  uint64_t snapshot_bytes_ = 0;
  int64_t snapshot_created_unix_ms_ = 0;  // 0: none
  double last_snapshot_seconds_ = 0;
  uint64_t snapshots_taken_ = 0;
};

}  // namespace gphkv::server::durability
