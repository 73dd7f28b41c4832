// The data directory's metrics (--data_dir), by the names deploy/ uses: the
// module's hooks (server/durability/durability_options.h) feed the counters
// and the fsync histogram as things happen; refresh() sets the gauges from
// the directory's state when /metrics is collected, so the snapshot's age is
// current even on an idle server. Registered only when --data_dir is set.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <mutex>

#include "server/durability/data_dir.h"
#include "server/durability/durability_options.h"

namespace gphkv::server {

class DataDirMetrics final : public durability::DurabilityMetrics {
 public:
  explicit DataDirMetrics(prometheus::Registry& registry);

  void on_log_append(uint64_t bytes) override;
  void on_log_fsync(double seconds) override;
  void on_snapshot(double seconds, uint64_t bytes) override;
  void on_snapshot_failed() override;

  // The gauges, and the counters kept in the state (syncs that fell behind).
  void refresh(const durability::DataDirState& state);

 private:
  prometheus::Gauge* log_bytes_;
  prometheus::Gauge* log_segments_;
  prometheus::Counter* log_written_bytes_;
  prometheus::Histogram* log_fsync_seconds_;
  prometheus::Counter* log_fsync_behind_;
  prometheus::Gauge* snapshot_age_seconds_;
  prometheus::Gauge* snapshot_duration_seconds_;
  prometheus::Gauge* snapshot_bytes_;
  prometheus::Counter* snapshots_ok_;
  prometheus::Counter* snapshots_failed_;
  prometheus::Gauge* recovery_seconds_;

  std::mutex mu_;  // refresh() may run on two scraping threads at once
  uint64_t reported_behind_ = 0;
};

}  // namespace gphkv::server
