// Appends write batches to the log's segment files and makes them as
// durable as the fsync policy promises before append returns:
//
//   always    the record is written and fdatasync'ed (one sync per batch:
//             the executor's batch is the group commit)
//   everysec  the record is written (to the OS); a background thread
//             fdatasyncs once a second; if syncs fall behind by more than
//             LogOptions::max_sync_lag_seconds, append syncs before it returns
//   never     the record is written; the OS syncs when it likes
//
// Under everysec and never, each LogOptions::writeback_bytes appended to a
// segment wake the background thread (the one that syncs under everysec),
// which starts their writeback (sync_file_range, no wait): the pages head
// for the disk while the appends go on, so the sync that closes a segment,
// on the appending thread, and the once-a-second sync have only the last few
// MiB left to write instead of up to a whole segment. It promises nothing
// (only fdatasync does) and so changes nothing of the above.
//
// A segment is started by the first batch after open or rotate() (named
// after that batch's sequence number) and closed once it holds
// LogOptions::segment_bytes: closing syncs it under every policy, so only
// the newest segment can ever end in a torn record. Any write or sync error
// breaks the writer for good (after a failed fdatasync the kernel may have
// dropped the pages it could not write, so a retry proves nothing): every
// later append returns the first error, and the server must stop taking
// writes. append, rotate and sync are called from one thread (the
// executor's); state() and remove_segments_through() from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/durability/durability_options.h"
#include "server/durability/file_names.h"
#include "server/durability/posix_file.h"
#include "server/durability/write_batch.h"

namespace gphkv::server::durability {

struct LogWriterState {
  uint64_t last_sequence = 0;     // the last batch appended
  uint64_t durable_sequence = 0;  // the last batch known synced
  uint64_t segments = 0;          // segment files the log has now
  uint64_t log_bytes = 0;         // their bytes
  uint64_t appended_bytes = 0;    // records written since open, headers included
  uint64_t fsyncs = 0;
  // everysec: appends that synced themselves because the background sync
  // had fallen behind.
  uint64_t syncs_fell_behind = 0;
  // everysec and never: writebacks the background thread started.
  uint64_t writebacks = 0;
};

class LogWriter {
 public:
  // A writer whose first batch gets `next_sequence`. `existing`: the
  // segments already in `dir` (ascending, every batch in them before
  // next_sequence), kept until a snapshot covers them.
  static absl::StatusOr<std::unique_ptr<LogWriter>> open(const std::string& dir, uint64_t next_sequence,
                                                         const std::vector<NumberedFile>& existing,
                                                         const LogOptions& options, DurabilityMetrics* metrics);
  // Stops the background sync and syncs what was written.
  ~LogWriter();

  // Stamps the batch with the next sequence number, writes it as one record
  // and returns the number once the policy's promise holds.
  // INVALID_ARGUMENT (and nothing written) for a batch of 4 GiB or more.
  absl::StatusOr<uint64_t> append(WriteBatch& batch);
  // Closes the segment being written (synced); the next batch starts a new
  // one. A snapshot does this so the segments it covers can go whole.
  absl::Status rotate();
  // fdatasync of everything appended, now.
  absl::Status sync();
  // Removes the segments whose batches all have sequence <= `sequence`
  // (never the one being written).
  absl::Status remove_segments_through(uint64_t sequence);

  uint64_t last_sequence() const;
  LogWriterState state() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Segment {
    uint64_t first_sequence = 0;
    std::string path;
    uint64_t bytes = 0;
    std::shared_ptr<File> file;  // the one being written; null once closed
  };

  LogWriter(std::string dir, uint64_t next_sequence, const LogOptions& options, DurabilityMetrics* metrics);
  absl::Status start_segment(uint64_t first_sequence);
  // Syncs the open segment up to the batches appended so far. Any thread.
  absl::Status sync_open_segment();
  // everysec: the once-a-second sync; everysec and never: the writebacks.
  void background_loop();
  // Records the first error; every later append returns it.
  absl::Status fail(absl::Status s);

  const std::string dir_;
  const LogOptions options_;
  DurabilityMetrics* const metrics_;

  mutable std::mutex mu_;
  std::vector<Segment> segments_;  // ascending; the last may be open
  uint64_t last_sequence_;
  uint64_t durable_sequence_;
  // Every batch appended before this time is synced (everysec's lag).
  Clock::time_point synced_through_;
  absl::Status broken_;
  LogWriterState counters_;
  Clock::time_point last_lag_warning_{};
  uint64_t lag_warnings_suppressed_ = 0;

  // The open segment's bytes whose writeback was started (or asked for).
  uint64_t writeback_started_ = 0;
  bool writeback_wanted_ = false;  // append woke the background thread for it
  bool writeback_on_;              // everysec, never; off after an error

  std::mutex sync_mu_;  // one fdatasync at a time
  std::condition_variable wake_cv_;
  bool stopping_ = false;
  std::thread background_;
};

}  // namespace gphkv::server::durability
