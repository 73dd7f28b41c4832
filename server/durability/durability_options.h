// What an operator chooses about the data directory (the server's
// --fsync, --recover and snapshot flags map onto these), and the hook the
// server's metrics hang on.
#pragma once

#include <cstdint>
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gphkv::server::durability {

// When an appended batch reaches the disk; Redis's appendfsync choices,
// with the same meaning (docs/durability.md says what each one promises).
enum class FsyncPolicy {
  kAlways,    // fdatasync before append returns: one per batch (group commit)
  kEverySec,  // written before append returns; a background thread syncs every second
  kNever,     // written before append returns; the OS syncs when it likes
};
absl::StatusOr<FsyncPolicy> parse_fsync_policy(absl::string_view name);  // always, everysec, never
const char* fsync_policy_name(FsyncPolicy policy);

// What recovery does with a corrupt snapshot, a bad record before the end
// of the log or a gap in it.
enum class RecoverMode {
  kStrict,       // refuse to start, naming the file and offset
  kSkipCorrupt,  // stop at the damage, set the damaged files aside, say what was dropped, start
};
absl::StatusOr<RecoverMode> parse_recover_mode(absl::string_view name);  // strict, skip-corrupt
const char* recover_mode_name(RecoverMode mode);

struct LogOptions {
  FsyncPolicy fsync = FsyncPolicy::kEverySec;
  // A segment is closed (and synced) and a new one started once it holds
  // this many bytes; a batch never spans segments.
  uint64_t segment_bytes = uint64_t{64} << 20;
  // kEverySec: how often the background thread syncs.
  double sync_interval_seconds = 1.0;
  // kEverySec: once acknowledged batches have waited this long for a sync
  // (the disk is slower than the writes), append syncs itself before it
  // returns, so the loss window stays bounded; Redis waits 2 s likewise.
  double max_sync_lag_seconds = 2.0;
  // kEverySec and kNever: each time the open segment has grown by this many
  // bytes, a background thread starts their writeback to the disk
  // (sync_file_range, SYNC_FILE_RANGE_WRITE), so the fdatasync a segment's
  // rotation makes on the appending thread, and everysec's background sync,
  // find little left to write. Changes nothing that is promised; 0: off.
  uint64_t writeback_bytes = uint64_t{4} << 20;
};

struct DataDirOptions {
  LogOptions log;
  RecoverMode recover = RecoverMode::kStrict;
  // A snapshot block holds pairs up to about this many bytes (at least one pair).
  uint64_t snapshot_block_bytes = uint64_t{1} << 20;
  // snapshot_due() turns true this long after the last snapshot (0: never
  // for time) ...
  double snapshot_interval_seconds = 3600;
  // ... or once the log since it holds this many bytes (0: never for size),
  // which bounds the replay at the next start.
  uint64_t snapshot_log_bytes = uint64_t{1} << 30;
};

// Hooks for the server's metrics (prometheus-cpp is thread-safe; so must an
// implementation be). Called from the thread that appends, the background
// sync thread and the snapshot thread.
class DurabilityMetrics {
 public:
  virtual ~DurabilityMetrics() = default;
  // A record of `bytes` (header included) was written to the log.
  virtual void on_log_append(uint64_t bytes) { (void)bytes; }
  // One fdatasync of a log segment took `seconds`.
  virtual void on_log_fsync(double seconds) { (void)seconds; }
  // A snapshot of `bytes` was made durable in `seconds` (from its start).
  virtual void on_snapshot(double seconds, uint64_t bytes) { (void)seconds, (void)bytes; }
  // A snapshot failed (nothing of it was kept).
  virtual void on_snapshot_failed() {}
};

}  // namespace gphkv::server::durability
