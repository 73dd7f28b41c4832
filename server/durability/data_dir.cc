#include "server/durability/data_dir.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/durability/file_names.h"
#include "server/durability/log_reader.h"
#include "server/durability/posix_file.h"
#include "server/durability/snapshot_reader.h"
#include "server/thread_name.h"
#include "spdlog/spdlog.h"

namespace gphkv::server::durability {
namespace {

int64_t unix_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Damage that recovery may step past (an older snapshot, skip-corrupt);
// anything else (I/O, the sink, a format version from a newer build) ends it.
bool is_damage(const absl::Status& s) { return s.code() == absl::StatusCode::kDataLoss; }

}  // namespace

DataDir::DataDir(std::string dir, const DataDirOptions& options, DurabilityMetrics* metrics, DirLock lock)
    : dir_(std::move(dir)),
      options_(options),
      metrics_(metrics),
      lock_(std::move(lock)),
      opened_(std::chrono::system_clock::now()) {}

absl::StatusOr<std::unique_ptr<DataDir>> DataDir::open(const std::string& dir, const DataDirOptions& options,
                                                       RecoverySink& sink, DurabilityMetrics* metrics) {
  if (absl::Status s = make_dirs(dir); !s.ok()) return s;
  auto lock = DirLock::acquire(dir);
  if (!lock.ok()) return lock.status();
  std::unique_ptr<DataDir> d(new DataDir(dir, options, metrics, std::move(*lock)));
  if (absl::Status s = d->recover(sink); !s.ok()) return s;
  return d;
}

absl::Status DataDir::recover(RecoverySink& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  auto listing = list_data_dir(dir_);
  if (!listing.ok()) return listing.status();
  for (const std::string& tmp : listing->temps) {
    spdlog::warn("data dir: removing {}, a snapshot the server stopped while writing (the previous one stands)", tmp);
    if (absl::Status s = remove_file(tmp); !s.ok()) return s;
  }
  const std::vector<NumberedFile>& snapshots = listing->snapshots;
  RecoveryReport& report = recovery_;

  // Newest first, the first snapshot that loads whole; under skip-corrupt,
  // failing that, the newest whose header reads, less its damaged blocks.
  std::optional<size_t> chosen;
  SnapshotLoad loaded;
  std::string first_error;
  for (size_t i = snapshots.size(); i-- > 0 && !chosen;) {
    auto load = load_snapshot(snapshots[i], RecoverMode::kStrict, sink);
    if (load.ok()) {
      chosen = i;
      loaded = std::move(*load);
      break;
    }
    if (!is_damage(load.status())) return load.status();
    if (first_error.empty()) first_error = std::string(load.status().message());
    report.warnings.push_back(std::string(load.status().message()));
    spdlog::warn("data dir: {}{}", std::string(load.status().message()),
                 i > 0 ? "; trying the snapshot before it" : "");
    if (absl::Status s = sink.on_reset(); !s.ok()) return s;
  }
  if (!chosen && !snapshots.empty()) {
    if (options_.recover == RecoverMode::kStrict) {
      return absl::DataLossError(
          absl::StrCat(first_error,
                       ". No snapshot loads whole, and the server will not start without its pairs; "
                       "--recover=skip-corrupt starts with the pairs of its intact blocks"));
    }
    for (size_t i = snapshots.size(); i-- > 0 && !chosen;) {
      auto load = load_snapshot(snapshots[i], RecoverMode::kSkipCorrupt, sink);
      if (load.ok()) {
        chosen = i;
        loaded = std::move(*load);
      } else if (!is_damage(load.status())) {
        return load.status();
      } else {
        report.dropped.push_back(absl::StrCat("every pair of ", load.status().message()));
        if (absl::Status s = sink.on_reset(); !s.ok()) return s;
      }
    }
  }
  const uint64_t after = chosen ? snapshots[*chosen].sequence : 0;
  if (chosen) {
    report.snapshot_path = snapshots[*chosen].path;
    report.snapshot_sequence = after;
    report.snapshot_pairs = loaded.pairs;
    report.bytes_read += loaded.bytes_read;
    report.dropped.insert(report.dropped.end(), loaded.dropped.begin(), loaded.dropped.end());
    snapshot_sequence_ = after;
    snapshot_created_unix_ms_ = loaded.header.created_unix_ms;
    auto bytes = file_size(report.snapshot_path);
    if (!bytes.ok()) return bytes.status();
    snapshot_bytes_ = *bytes;
  }
  if (absl::Status s = sink.on_snapshot_loaded(after); !s.ok()) return s;

  auto replay = replay_log(dir_, listing->segments, after, options_.recover, sink);
  if (!replay.ok()) {
    if (first_error.empty() || !is_damage(replay.status())) return replay.status();
    return absl::Status(replay.status().code(),
                        absl::StrCat(replay.status().message(), " (replaying after ", report.snapshot_path,
                                     ", loaded because a newer snapshot failed: ", first_error, ")"));
  }
  report.log_batches = replay->batches;
  report.log_puts = replay->puts;
  report.log_deletes = replay->deletes;
  report.last_sequence = replay->last_sequence;
  report.bytes_read += replay->bytes_read;
  report.torn_bytes_cut = replay->torn_bytes_cut;
  report.dropped.insert(report.dropped.end(), replay->dropped.begin(), replay->dropped.end());

  // Snapshots before the chosen one are superseded; after it, damaged: set aside.
  for (size_t i = 0; i < snapshots.size(); ++i) {
    if (chosen && i == *chosen) continue;
    const std::string& path = snapshots[i].path;
    const absl::Status s = chosen && i < *chosen ? remove_file(path) : rename_file(path, corrupt_name(path));
    if (!s.ok()) return s;
  }
  if (absl::Status s = sync_dir(dir_); !s.ok()) return s;

  auto log = LogWriter::open(dir_, replay->last_sequence + 1, replay->segments, options_.log, metrics_);
  if (!log.ok()) return log.status();
  log_ = std::move(*log);
  if (absl::Status s = log_->remove_segments_through(after); !s.ok()) return s;

  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info(
      "data dir {}: recovered in {:.2f} s: {} ({} pairs), then {} log batches ({} puts, {} deletes); the "
      "state after batch {}, {} bytes read{}",
      dir_, report.seconds, chosen ? report.snapshot_path : std::string("no snapshot"), report.snapshot_pairs,
      report.log_batches, report.log_puts, report.log_deletes, report.last_sequence, report.bytes_read,
      report.torn_bytes_cut > 0 ? absl::StrCat(", a torn last record of ", report.torn_bytes_cut, " bytes cut")
                                : std::string());
  if (!report.dropped.empty()) {
    spdlog::warn("data dir {}: --recover=skip-corrupt dropped: {}", dir_, absl::StrJoin(report.dropped, "; "));
  }
  return absl::OkStatus();
}

DataDir::~DataDir() {
  wait_snapshot().IgnoreError();  // logged by end_snapshot
  log_.reset();                   // syncs
}

bool DataDir::snapshot_due() const {
  const uint64_t last = log_->last_sequence();
  const uint64_t log_bytes = log_->state().log_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return false;
  if (recovery_.needs_snapshot() && snapshots_taken_ == 0) return true;
  if (last == snapshot_sequence_) return false;
  if (options_.snapshot_log_bytes > 0 && log_bytes >= options_.snapshot_log_bytes) return true;
  if (options_.snapshot_interval_seconds <= 0) return false;
  const int64_t since_ms = snapshot_created_unix_ms_ > 0 ? snapshot_created_unix_ms_ : unix_ms(opened_);
  return static_cast<double>(unix_ms(std::chrono::system_clock::now()) - since_ms) / 1000.0 >=
         options_.snapshot_interval_seconds;
}

absl::StatusOr<uint64_t> DataDir::begin_snapshot() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) return absl::FailedPreconditionError("a snapshot is being written already");
    running_ = true;
  }
  const uint64_t sequence = log_->last_sequence();
  // The segments up to `sequence` close now, so they can go whole once the snapshot is durable.
  if (absl::Status s = log_->rotate(); !s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
    return s;
  }
  return sequence;
}

absl::Status DataDir::end_snapshot(const absl::StatusOr<SnapshotInfo>& written) {
  absl::Status s = written.status();
  if (s.ok()) {
    // Durable: what it covers can go.
    s = log_->remove_segments_through(written->header.sequence);
    if (auto listing = list_data_dir(dir_); s.ok() && listing.ok()) {
      for (const NumberedFile& old : listing->snapshots) {
        if (old.sequence < written->header.sequence && s.ok()) s = remove_file(old.path);
      }
      if (s.ok()) s = sync_dir(dir_);
    } else if (s.ok()) {
      s = listing.status();
    }
    if (metrics_ != nullptr) metrics_->on_snapshot(written->seconds, written->file_bytes);
    spdlog::info("data dir: snapshot {} written in {:.2f} s: {} pairs, {} value bytes, {} bytes", written->path,
                 written->seconds, written->header.pairs, written->header.value_bytes, written->file_bytes);
  }
  if (!s.ok()) {
    spdlog::error("data dir: snapshot failed: {}", s.ToString());
    // Counted once: a snapshot made durable whose cleanup failed counted as taken above.
    if (metrics_ != nullptr && !written.ok()) metrics_->on_snapshot_failed();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (written.ok()) {
    snapshot_sequence_ = written->header.sequence;
    snapshot_bytes_ = written->file_bytes;
    snapshot_created_unix_ms_ = written->header.created_unix_ms;
    last_snapshot_seconds_ = written->seconds;
    ++snapshots_taken_;
  }
  running_ = false;
  last_result_ = s;
  return s;
}

absl::StatusOr<uint64_t> DataDir::start_snapshot(std::shared_ptr<PairSource> source) {
  if (snapshot_running()) return absl::FailedPreconditionError("a snapshot is being written already");
  if (snapshot_thread_.joinable()) snapshot_thread_.join();  // done: only its last instructions are left
  auto sequence = begin_snapshot();
  if (!sequence.ok()) return sequence.status();
  snapshot_thread_ = std::thread([this, sequence = *sequence, source = std::move(source)] {
    name_this_thread("gphkv-snapshot");
    end_snapshot(write_snapshot(dir_, sequence, *source, options_.snapshot_block_bytes)).IgnoreError();
  });
  return *sequence;
}

absl::Status DataDir::snapshot(PairSource& source) {
  if (absl::Status s = wait_snapshot(); !s.ok())
    spdlog::warn("data dir: the previous snapshot failed: {}", s.ToString());
  auto sequence = begin_snapshot();
  if (!sequence.ok()) return sequence.status();
  return end_snapshot(write_snapshot(dir_, *sequence, source, options_.snapshot_block_bytes));
}

bool DataDir::snapshot_running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

absl::Status DataDir::wait_snapshot() {
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return last_result_;
}

DataDirState DataDir::state() const {
  DataDirState s;
  s.dir = dir_;
  s.fsync = options_.log.fsync;
  s.log = log_->state();
  s.recovery = recovery_;
  std::lock_guard<std::mutex> lock(mu_);
  s.snapshot_sequence = snapshot_sequence_;
  s.snapshot_bytes = snapshot_bytes_;
  if (snapshot_created_unix_ms_ > 0) {
    s.snapshot_age_seconds =
        static_cast<double>(unix_ms(std::chrono::system_clock::now()) - snapshot_created_unix_ms_) / 1000.0;
  }
  s.last_snapshot_seconds = last_snapshot_seconds_;
  s.snapshots_taken = snapshots_taken_;
  s.snapshot_running = running_;
  if (!last_result_.ok()) s.last_snapshot_error = std::string(last_result_.message());
  return s;
}

}  // namespace gphkv::server::durability
