#include "server/data_dir_metrics.h"

#include <prometheus/family.h>

namespace gphkv::server {
namespace {

prometheus::Gauge& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter& counter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

// 100 us .. ~13 s, doubling: a page-cache fdatasync to a disk that stalls.
std::vector<double> fsync_bounds() {
  std::vector<double> b;
  for (double s = 100e-6; b.size() < 18; s *= 2) b.push_back(s);
  return b;
}

}  // namespace

DataDirMetrics::DataDirMetrics(prometheus::Registry& r)
    : log_bytes_(&gauge(r, "gphkv_log_bytes", "Bytes of the log's segment files now (what the next start replays).")),
      log_segments_(&gauge(r, "gphkv_log_segments", "Log segment files now.")),
      log_written_bytes_(&counter(r, "gphkv_log_written_bytes_total",
                                  "Bytes appended to the log (records and their headers) since start.")),
      log_fsync_seconds_(&prometheus::BuildHistogram()
                              .Name("gphkv_log_fsync_seconds")
                              .Help("Time of each fdatasync of the log.")
                              .Register(r)
                              .Add({}, fsync_bounds())),
      log_fsync_behind_(&counter(r, "gphkv_log_fsync_behind_total",
                                 "--fsync=everysec: appends that synced themselves because the background sync "
                                 "had fallen more than 2 s behind (the disk is slower than the writes).")),
      snapshot_age_seconds_(&gauge(r, "gphkv_snapshot_age_seconds",
                                   "Seconds since the newest durable snapshot was started; -1 when there is none.")),
      snapshot_duration_seconds_(&gauge(r, "gphkv_snapshot_duration_seconds",
                                        "How long the last snapshot this process took ran, start to durable.")),
      snapshot_bytes_(&gauge(r, "gphkv_snapshot_bytes", "Bytes of the newest durable snapshot.")),
      recovery_seconds_(&gauge(r, "gphkv_recovery_seconds", "How long recovering the data directory took at start.")) {
  auto& snapshots = prometheus::BuildCounter()
                        .Name("gphkv_snapshots_total")
                        .Help("Snapshots this process finished, by result (ok, error).")
                        .Register(r);
  snapshots_ok_ = &snapshots.Add({{"result", "ok"}});
  snapshots_failed_ = &snapshots.Add({{"result", "error"}});
  snapshot_age_seconds_->Set(-1);
}

void DataDirMetrics::on_log_append(uint64_t bytes) { log_written_bytes_->Increment(static_cast<double>(bytes)); }

void DataDirMetrics::on_log_fsync(double seconds) { log_fsync_seconds_->Observe(seconds); }

void DataDirMetrics::on_snapshot(double, uint64_t) { snapshots_ok_->Increment(); }  // the rest: refresh()

void DataDirMetrics::on_snapshot_failed() { snapshots_failed_->Increment(); }

void DataDirMetrics::refresh(const durability::DataDirState& state) {
  log_bytes_->Set(static_cast<double>(state.log.log_bytes));
  log_segments_->Set(static_cast<double>(state.log.segments));
  snapshot_age_seconds_->Set(state.snapshot_age_seconds);
  snapshot_bytes_->Set(static_cast<double>(state.snapshot_bytes));
  if (state.snapshots_taken > 0) snapshot_duration_seconds_->Set(state.last_snapshot_seconds);
  recovery_seconds_->Set(state.recovery.seconds);
  std::lock_guard<std::mutex> lock(mu_);
  if (state.log.syncs_fell_behind > reported_behind_) {
    log_fsync_behind_->Increment(static_cast<double>(state.log.syncs_fell_behind - reported_behind_));
    reported_behind_ = state.log.syncs_fell_behind;
  }
}

}  // namespace gphkv::server
