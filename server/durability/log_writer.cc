#include "server/durability/log_writer.h"

#include <fcntl.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/durability/record_format.h"
#include "server/thread_name.h"
#include "spdlog/spdlog.h"

namespace gphkv::server::durability {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The lag warnings repeat at most this often, with a count of those held back.
constexpr auto kLagWarningEvery = std::chrono::seconds(10);

}  // namespace

LogWriter::LogWriter(std::string dir, uint64_t next_sequence, const LogOptions& options, DurabilityMetrics* metrics)
    : dir_(std::move(dir)),
      options_(options),
      metrics_(metrics),
      last_sequence_(next_sequence - 1),
      durable_sequence_(next_sequence - 1),
      synced_through_(Clock::now()),
      writeback_on_(options.fsync != FsyncPolicy::kAlways && options.writeback_bytes > 0) {}

absl::StatusOr<std::unique_ptr<LogWriter>> LogWriter::open(const std::string& dir, uint64_t next_sequence,
                                                           const std::vector<NumberedFile>& existing,
                                                           const LogOptions& options, DurabilityMetrics* metrics) {
  if (next_sequence == 0) return absl::InvalidArgumentError("log sequence numbers start at 1");
  std::unique_ptr<LogWriter> w(new LogWriter(dir, next_sequence, options, metrics));
  for (const NumberedFile& f : existing) {
    auto size = file_size(f.path);
    if (!size.ok()) return size.status();
    w->segments_.push_back(Segment{f.sequence, f.path, *size, nullptr});
  }
  if (options.fsync == FsyncPolicy::kEverySec || w->writeback_on_) {
    w->background_ = std::thread([p = w.get()] {
      name_this_thread("gphkv-log-sync");
      p->background_loop();
    });
  }
  return w;
}

LogWriter::~LogWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  if (background_.joinable()) background_.join();
  sync_open_segment().IgnoreError();  // a failure was logged by fail()
}

absl::Status LogWriter::fail(absl::Status s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) {
    broken_ =
        absl::Status(s.code(), absl::StrCat(s.message(), " (the log takes no more writes until the server restarts)"));
    spdlog::error("log: {}", broken_.ToString());
  }
  return broken_;
}

absl::Status LogWriter::start_segment(uint64_t first_sequence) {
  const std::string path = join_path(dir_, log_segment_name(first_sequence));
  // O_EXCL: recovery removed every segment it emptied, so a name already
  // taken means two writers, never a file to reuse.
  auto file = File::open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND);
  if (!file.ok()) return fail(file.status());
  if (absl::Status s = sync_dir(dir_); !s.ok()) return fail(s);
  std::lock_guard<std::mutex> lock(mu_);
  segments_.push_back(Segment{first_sequence, path, 0, std::make_shared<File>(std::move(*file))});
  writeback_started_ = 0;
  writeback_wanted_ = false;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> LogWriter::append(WriteBatch& batch) {
  const std::string_view payload = batch.payload();
  if (payload.size() > kMaxRecordPayloadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a log record holds less than 4 GiB; this batch has ", payload.size(), " bytes"));
  }
  const uint64_t record_bytes = kRecordHeaderBytes + payload.size();
  std::shared_ptr<File> file;
  bool rotate_first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    if (!segments_.empty() && segments_.back().file) {
      const Segment& open = segments_.back();
      rotate_first = open.bytes > 0 && open.bytes + record_bytes > options_.segment_bytes;
      file = open.file;
    }
  }
  const uint64_t sequence = last_sequence_ + 1;  // only this thread moves it
  if (rotate_first) {
    if (absl::Status s = rotate(); !s.ok()) return s;
    file = nullptr;
  }
  if (file == nullptr) {
    if (absl::Status s = start_segment(sequence); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    file = segments_.back().file;
  }
  batch.set_sequence(sequence);
  const auto header = record_header(payload);
  if (absl::Status s = file->append({std::string_view(header.data(), header.size()), payload}); !s.ok()) {
    return fail(s);
  }
  bool sync_now = options_.fsync == FsyncPolicy::kAlways;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_sequence_ = sequence;
    const uint64_t bytes = segments_.back().bytes += record_bytes;
    counters_.appended_bytes += record_bytes;
    if (writeback_on_ && !writeback_wanted_ && bytes - writeback_started_ >= options_.writeback_bytes) {
      writeback_wanted_ = wake = true;
    }
    if (options_.fsync == FsyncPolicy::kEverySec) {
      const double lag = seconds_between(synced_through_, Clock::now());
      if (lag > options_.max_sync_lag_seconds) {
        sync_now = true;
        ++counters_.syncs_fell_behind;
        const auto now = Clock::now();
        if (now - last_lag_warning_ >= kLagWarningEvery) {
          spdlog::warn(
              "log: acknowledged batches have waited {:.1f} s for the background fsync of {} (more than {} s; "
              "{} more such appends since the last warning): syncing before acknowledging",
              lag, file->path(), options_.max_sync_lag_seconds, lag_warnings_suppressed_);
          last_lag_warning_ = now;
          lag_warnings_suppressed_ = 0;
        } else {
          ++lag_warnings_suppressed_;
        }
      }
    }
  }
  if (wake) wake_cv_.notify_one();
  if (metrics_ != nullptr) metrics_->on_log_append(record_bytes);
  if (sync_now) {
    if (absl::Status s = sync_open_segment(); !s.ok()) return s;
  }
  return sequence;
}

absl::Status LogWriter::sync_open_segment() {
  std::lock_guard<std::mutex> one_sync(sync_mu_);
  const Clock::time_point started = Clock::now();
  std::shared_ptr<File> file;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    target = last_sequence_;
    if (target == durable_sequence_) {  // nothing at risk
      synced_through_ = started;
      return absl::OkStatus();
    }
    if (!segments_.empty()) file = segments_.back().file;
  }
  if (file != nullptr) {  // else the segment holding them was synced when it closed
    const absl::Status s = file->sync_data();
    const double took = seconds_between(started, Clock::now());
    if (!s.ok()) return fail(s);
    if (metrics_ != nullptr) metrics_->on_log_fsync(took);
    if (options_.fsync == FsyncPolicy::kEverySec && took > options_.sync_interval_seconds) {
      spdlog::warn(
          "log: fdatasync of {} took {:.2f} s, longer than the {} s sync interval: acknowledged batches "
          "stayed unsynced that long",
          file->path(), took, options_.sync_interval_seconds);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  durable_sequence_ = std::max(durable_sequence_, target);
  synced_through_ = started;
  if (file != nullptr) ++counters_.fsyncs;
  return absl::OkStatus();
}

absl::Status LogWriter::rotate() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
    if (segments_.empty() || segments_.back().file == nullptr) return absl::OkStatus();
  }
  // Synced under every policy: then only the newest segment can end torn.
  if (absl::Status s = sync_open_segment(); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  segments_.back().file.reset();  // closed once the sync thread lets go of it too
  return absl::OkStatus();
}

absl::Status LogWriter::sync() { return sync_open_segment(); }

void LogWriter::background_loop() {
  const bool syncs = options_.fsync == FsyncPolicy::kEverySec;
  const auto interval =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.sync_interval_seconds));
  Clock::time_point next_sync = Clock::now() + interval;
  for (;;) {
    std::shared_ptr<File> file;
    uint64_t from = 0, to = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto woken = [this] { return stopping_ || writeback_wanted_; };
      if (syncs) {
        wake_cv_.wait_until(lock, next_sync, woken);
      } else {
        wake_cv_.wait(lock, woken);
      }
      if (stopping_ || !broken_.ok()) return;  // broken: fail() logged it, appends return it
      if (writeback_wanted_) {
        writeback_wanted_ = false;
        if (!segments_.empty() && segments_.back().file != nullptr) {
          file = segments_.back().file;
          from = writeback_started_;
          to = segments_.back().bytes;
          writeback_started_ = to;
        }
      }
    }
    if (file != nullptr && to > from) {
      // Without SYNC_FILE_RANGE_WAIT_* it reports no write error of the
      // pages (and consumes none: the next fdatasync still sees it), so a
      // failure here only means no more early writeback.
      const absl::Status s = file->start_writeback(from, to - from);
      std::lock_guard<std::mutex> lock(mu_);
      if (s.ok()) {
        ++counters_.writebacks;
      } else {
        writeback_on_ = false;
        spdlog::warn("log: {}; segments are no longer written back early (their syncs wait for more)", s.ToString());
      }
    }
    if (syncs && Clock::now() >= next_sync) {
      if (!sync_open_segment().ok()) return;  // broken: fail() logged it, appends return it
      next_sync = Clock::now() + interval;
    }
  }
}

absl::Status LogWriter::remove_segments_through(uint64_t sequence) {
  std::vector<std::string> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (; n < segments_.size() && segments_[n].file == nullptr; ++n) {
      const uint64_t last_in = n + 1 < segments_.size() ? segments_[n + 1].first_sequence - 1 : last_sequence_;
      if (last_in > sequence) break;
      doomed.push_back(segments_[n].path);
    }
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(n));
  }
  if (doomed.empty()) return absl::OkStatus();
  for (const std::string& path : doomed) {
    if (absl::Status s = remove_file(path); !s.ok()) return s;
  }
  return sync_dir(dir_);
}

uint64_t LogWriter::last_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_sequence_;
}

LogWriterState LogWriter::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  LogWriterState s = counters_;
  s.last_sequence = last_sequence_;
  s.durable_sequence = durable_sequence_;
  s.segments = segments_.size();
  s.log_bytes = 0;
  for (const Segment& seg : segments_) s.log_bytes += seg.bytes;
  return s;
}

}  // namespace gphkv::server::durability
